"""Agent format adapters, one module per format behind `core.adapters.base.Adapter`."""

from __future__ import annotations

from core.adapters.base import Adapter
from core.adapters.claude import ClaudeAdapter

ADAPTERS: dict[str, Adapter] = {"claude-code": ClaudeAdapter()}


def adapter_for(agent: str) -> Adapter:
    try:
        return ADAPTERS[agent]
    except KeyError:
        raise KeyError(f"no adapter for agent {agent!r}; known: {', '.join(ADAPTERS)}") from None


def all_adapters() -> list[Adapter]:
    return list(ADAPTERS.values())
