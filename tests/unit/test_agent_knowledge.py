"""What is particular to one agent lives in its adapter (core/adapters/<agent>.py): outside that
package nothing spells an agent's name, its command, the variables that move its folders or its
tools' names; the code there asks the adapter of the session's agent instead. The registry
(core/adapters/__init__.py) is inside the package, so it is the one place that names every agent."""

from __future__ import annotations

import ast
from pathlib import Path

from threadloom.core.adapters import ADAPTERS, tool_group

ROOT = Path(__file__).resolve().parents[2]
# threadloom's own words that an agent happens to use too: "agent" is the store's column (and
# cursor-agent's command), "Agent" its label (and Claude Code's and Kimi's spawn tool)
ORDINARY = {"agent", "Agent"}


def _identifiers() -> dict[str, str]:
    """Every literal that names one agent's own thing, with the agent it belongs to. A tool name
    counts when it cannot be an ordinary word ("TodoWrite", "exit_plan_mode", not "edit")."""
    found: dict[str, str] = {}
    for name, adapter in ADAPTERS.items():
        tools = {t for t in adapter.tool_names if t != t.lower() or "_" in t or "." in t}
        for word in (name, adapter.program, adapter.display_name, *adapter.env_vars, *tools):
            if word not in ORDINARY:
                found.setdefault(word, name)
    return found


def _literals(path: Path) -> list[tuple[int, str]]:
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_no_agent_is_named_outside_its_adapter():
    words = _identifiers()
    assert {"claude-code", "claude", "codex", "ExitPlanMode", "TodoWrite", "CODEX_HOME"} <= set(words)
    sources = sorted((ROOT / "core").glob("*.py")) + sorted((ROOT / "tui").rglob("*.py"))
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {value!r} ({words[value]}'s)"
        for path in sources
        for line, value in _literals(path)
        if value in words
    ]
    assert offenders == []


def test_the_scan_sees_a_literal_outside_the_adapters(tmp_path: Path):
    """The guard is live: a module that tests a tool by its name is caught."""
    module = tmp_path / "leak.py"
    module.write_text('def plans(call):\n    return call.name == "ExitPlanMode"\n')
    assert [value for _, value in _literals(module) if value in _identifiers()] == ["ExitPlanMode"]


def test_a_call_is_read_by_its_own_agents_adapter_alone():
    """One agent's tool name can be another's spawn, plan or edit tool: never guessed from the name."""
    assert tool_group("claude-code", "Agent") == tool_group("kimi-cli", "Agent") == "spawn"
    assert tool_group("goose", "Agent") is None
    assert tool_group(None, "Task") is None and tool_group("no-such-agent", "Task") is None
    assert (
        tool_group("claude-code", "ExitPlanMode") == "plan" and tool_group("gemini", "ExitPlanMode") is None
    )
    assert tool_group("gemini", "exit_plan_mode") == "plan"
