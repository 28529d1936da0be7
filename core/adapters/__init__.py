"""Agent format adapters, one module per format behind `core.adapters.base.Adapter`."""

from __future__ import annotations

from pathlib import Path

from core.adapters.aider import AiderAdapter
from core.adapters.amazon_q import AmazonQAdapter, AmazonQDbAdapter
from core.adapters.base import Adapter
from core.adapters.claude import ClaudeAdapter
from core.adapters.claude_store import ClaudeStoreAdapter
from core.adapters.cline import ClineAdapter
from core.adapters.codex import CodexAdapter
from core.adapters.cursor import CursorAdapter, CursorAgentAdapter
from core.adapters.gemini import GeminiAdapter
from core.adapters.opencode import OpenCodeDbAdapter, OpenCodeStorageAdapter

# Order matters when a file is named on the command line: the first adapter that recognises it
# reads it, so the formats recognised by name and place come before Gemini's looser JSON sniffing.
ADAPTERS: dict[str, Adapter] = {
    "claude-code": ClaudeAdapter(),
    "claude-store": ClaudeStoreAdapter(),
    "codex": CodexAdapter(),
    "cline": ClineAdapter("cline", ("saoudrizwan.claude-dev",), sdk=True),
    "roo-code": ClineAdapter("roo-code", ("rooveterinaryinc.roo-cline",)),
    "kilo-code": ClineAdapter("kilo-code", ("kilocode.kilo-code",)),
    "cursor": CursorAdapter(),
    "cursor-agent": CursorAgentAdapter(),
    "opencode": OpenCodeStorageAdapter(),
    "opencode-db": OpenCodeDbAdapter(),
    "aider": AiderAdapter(),
    "amazon-q": AmazonQAdapter(),
    "amazon-q-db": AmazonQDbAdapter(),
    "gemini": GeminiAdapter(),
}


def adapter_for(agent: str) -> Adapter:
    try:
        return ADAPTERS[agent]
    except KeyError:
        raise KeyError(f"no adapter for agent {agent!r}; known: {', '.join(ADAPTERS)}") from None


def all_adapters() -> list[Adapter]:
    return list(ADAPTERS.values())


def claimed_elsewhere(agent: str, path: Path) -> bool:
    """Whether another adapter recognises the file, so that `agent` leaves it alone."""
    return any(name != agent and adapter.claims(path) for name, adapter in ADAPTERS.items())
