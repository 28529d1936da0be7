"""Agent format adapters, one module per format, each a subclass of `core.adapters.base.Adapter`.

Adding an agent: its module, one line in `_SPECS` below, its tests (see `base.Adapter`).

The registry imports an adapter's module the first time it is asked for: a launch with nothing
new to read meets only the agents whose files it already knows (importing all fourteen cost a
no-change launch ~25 ms of its ~250 ms).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

from .base import Adapter, SpawnFacts

# name -> (module, class, constructor arguments). Order matters when a file is named on the
# command line: the first adapter that recognises it reads it, so the formats recognised by name
# and place come before Gemini's looser JSON sniffing.
_SPECS: dict[str, tuple[str, str, tuple[Any, ...], dict[str, Any]]] = {
    "claude-code": ("claude", "ClaudeAdapter", (), {}),
    "claude-store": ("claude_store", "ClaudeStoreAdapter", (), {}),
    "codex": ("codex", "CodexAdapter", (), {}),
    "cline": ("cline", "ClineAdapter", ("cline", ("saoudrizwan.claude-dev",)), {"sdk": True}),
    "roo-code": ("cline", "ClineAdapter", ("roo-code", ("rooveterinaryinc.roo-cline",)), {}),
    "kilo-code": ("cline", "ClineAdapter", ("kilo-code", ("kilocode.kilo-code",)), {}),
    "cursor": ("cursor", "CursorAdapter", (), {}),
    "cursor-agent": ("cursor", "CursorAgentAdapter", (), {}),
    "opencode": ("opencode", "OpenCodeStorageAdapter", (), {}),
    "opencode-db": ("opencode", "OpenCodeDbAdapter", (), {}),
    "aider": ("aider", "AiderAdapter", (), {}),
    "amazon-q": ("amazon_q", "AmazonQAdapter", (), {}),
    "amazon-q-db": ("amazon_q", "AmazonQDbAdapter", (), {}),
    "kiro-cli": ("kiro", "KiroAdapter", (), {}),
    "gemini": ("gemini", "GeminiAdapter", (), {}),
    "qwen-code": ("qwen", "QwenAdapter", (), {}),
    "copilot-cli": ("copilot", "CopilotAdapter", (), {}),
    "factory-droid": ("droid", "DroidAdapter", (), {}),
    "pi": ("pi", "PiAdapter", (), {}),
    "kimi-cli": ("kimi", "KimiAdapter", (), {}),
    "kimi-code": ("kimi_code", "KimiCodeAdapter", (), {}),
    "continue": ("continue_dev", "ContinueAdapter", (), {}),
    "goose": ("goose", "GooseAdapter", (), {}),
    "crush": ("crush", "CrushAdapter", (), {}),
    "opencode-go": ("crush", "OpenCodeGoAdapter", (), {}),
    "openhands": ("openhands", "OpenHandsAdapter", (), {}),
    "zed": ("zed", "ZedAdapter", (), {}),
    "warp": ("warp", "WarpAdapter", (), {}),
}


class _Registry(MutableMapping[str, Adapter]):
    """Every adapter by agent name, each built on first use (tests may add or replace one)."""

    def __init__(self) -> None:
        self._names = list(_SPECS)
        self._built: dict[str, Adapter] = {}

    def __getitem__(self, name: str) -> Adapter:
        adapter = self._built.get(name)
        if adapter is None:
            if name not in self._names:
                raise KeyError(name)
            module, cls, args, kwargs = _SPECS[name]
            adapter = getattr(importlib.import_module(f"threadloom.core.adapters.{module}"), cls)(
                *args, **kwargs
            )
            self._built[name] = adapter
        return adapter

    def __setitem__(self, name: str, adapter: Adapter) -> None:
        if not isinstance(adapter, Adapter):  # what the registry holds answers every capability
            raise TypeError(
                f"{type(adapter).__name__} is not an Adapter: subclass core.adapters.base.Adapter"
            )
        if name not in self._names:
            self._names.append(name)
        self._built[name] = adapter

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)


ADAPTERS: MutableMapping[str, Adapter] = _Registry()

# what people also call an agent (its command, its product's name) -> the name the archive keeps
# (not `kimi`: the command of Kimi CLI and of Kimi Code alike)
ALIASES = {
    "claude": "claude-code",
    "gemini-cli": "gemini",
    "qwen": "qwen-code",
    "copilot": "copilot-cli",
    "kiro": "kiro-cli",
    "droid": "factory-droid",
}


def agent_named(name: str) -> str | None:
    """The agent `name` names: its own name, or one it is also called (ALIASES); None: none.
    Read from the names alone: no adapter is built."""
    wanted = name.strip().lower()
    if wanted in list(ADAPTERS):
        return wanted
    return ALIASES.get(wanted)


class UnknownAgent(ValueError):
    """An agent filter that names no agent; its text says which names there are."""


def archive_agent(name: str, stored: Iterable[str] = (), *, prefix: bool = False) -> str:
    """The agent filter `name` as the archive names its agents: an adapter's name or one the archive
    holds (`stored`, its sessions' agents) as given, else the agent it is also called (ALIASES:
    gemini-cli is gemini). `prefix`: the filter takes the start of a name (search's agent:claude
    finds claude-code and claude-store), so such a start is kept as given. Raises UnknownAgent,
    saying which names there are, when `name` names none (a filter nothing passes, never silent)."""
    wanted = name.strip()
    names = list(ADAPTERS)
    known = [*names, *(s for s in stored if s and s not in names)]
    lowered = [n.lower() for n in known]
    if wanted.lower() in lowered:
        return known[lowered.index(wanted.lower())]
    if prefix and wanted and any(n.startswith(wanted.lower()) for n in lowered):
        return wanted
    named = agent_named(wanted)
    if named is not None and named in names:
        return named
    raise UnknownAgent(
        f"no agent is called {name!r}: give one of {', '.join(known)} (or of their other names: "
        f"{', '.join(ALIASES)})"
    )


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


def stranger(path: Path) -> str | None:
    """What an unclaimed file is, when an adapter knows it for an agent threadloom does not read."""
    return next((why for why in (a.stranger(path) for a in ADAPTERS.values()) if why), None)


def tool_owner(agent: str | None, tool: str) -> Adapter | None:
    """The adapter that says what a call of `tool` is: its session's agent's. None when the agent is
    not known: one agent's tool name can be another's (Kimi's `Agent`, Claude Code's `Agent`; Goose's
    `edit`, Qwen's `edit`), so a tool's name alone never says what it does."""
    return ADAPTERS.get(agent) if agent is not None else None


def spawned(agent: str | None, tool: str, params: dict[str, Any]) -> SpawnFacts | None:
    """What a call of `tool` says of the subagent it starts, when it is one of its agent's spawn
    tools (None otherwise)."""
    adapter = tool_owner(agent, tool)
    return adapter.spawn_facts(params) if adapter is not None and tool in adapter.spawn_tools else None


def carried_env() -> tuple[str, ...]:
    """Every environment variable that moves an agent's files (builds every adapter)."""
    return tuple(dict.fromkeys(var for adapter in ADAPTERS.values() for var in adapter.env_vars))


def edit_tool_names(agents: Iterable[str]) -> frozenset[str]:
    """Every tool name that edits or writes files in these agents' logs (an agent with no adapter
    has none: `tool_owner`), building no other agent's adapter."""
    chosen = [adapter for name in agents if (adapter := ADAPTERS.get(name)) is not None]
    return frozenset().union(*(a.edit_tools | a.write_tools | a.patch_tools for a in chosen))


def agents_where(test: Callable[[Adapter], bool], among: Iterable[str] | None = None) -> list[str]:
    """The agents whose adapter passes `test` (a capability), by name, as the store names them;
    `among`: of those agents only (an agent with no adapter passes none), building no other."""
    if among is None:
        return [name for name, adapter in ADAPTERS.items() if test(adapter)]
    return [name for name in among if (adapter := ADAPTERS.get(name)) is not None and test(adapter)]


def agents_said(test: Callable[[Adapter], bool]) -> str:
    """The agents whose adapter passes `test`, by their names in sentences ("Claude Code and Codex")."""
    names = list(dict.fromkeys(a.display_name for a in ADAPTERS.values() if test(a)))
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names) or "no agent"


GROUPS = ("edit", "write", "patch", "shell", "read", "todo", "spawn", "plan")


def tool_group(agent: str | None, tool: str) -> str | None:
    """What a call of `tool` does in its agent's logs (one of GROUPS), as its adapter (`tool_owner`)
    groups it; None: nothing threadloom draws apart."""
    adapter = tool_owner(agent, tool)
    if adapter is None:
        return None
    groups = (
        adapter.edit_tools,
        adapter.write_tools,
        adapter.patch_tools,
        adapter.shell_tools,
        adapter.read_tools,
        adapter.todo_tools,
        adapter.spawn_tools,
        adapter.plan_tools,
    )
    return next((g for g, tools in zip(GROUPS, groups, strict=True) if tool in tools), None)
