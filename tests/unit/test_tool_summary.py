"""The one-line gist of a tool call (tree, viewer, show, export) says what the call did, for the
tools whose input has no command or path too, instead of falling back to raw JSON."""

from __future__ import annotations

import json

import pytest
from threadloom.core.read.calls import tool_summary
from threadloom.core.read.query import ToolCall


def gist(name: str, params: object, agent: str | None = "claude-code") -> str:
    call = ToolCall("toolu_1", name, json.dumps(params), None, None, None, None, None)
    call.agent = agent  # the session's agent, whose adapter says what its tools' inputs mean
    return tool_summary(call)


@pytest.mark.parametrize(
    ("name", "params", "expected"),
    [
        ("shell", {"command": ["bash", "-lc", "npm test && echo ok"]}, "npm test && echo ok"),
        ("shell", {"command": ["ls", "-la", "my dir"]}, "ls -la 'my dir'"),
        (
            "TaskUpdate",
            {"taskId": "1", "status": "in_progress", "owner": "alice"},
            "#1 → in_progress (alice)",
        ),
        ("TaskUpdate", {"taskId": "2", "status": "completed"}, "#2 → completed"),
        ("TaskOutput", {"task_id": "a1agnt", "block": True, "timeout": 60000}, "#a1agnt"),
        ("TaskGet", {"taskId": "2"}, "#2"),
        ("BashOutput", {"bash_id": "bash_1"}, "#bash_1"),
        ("TaskCreate", {"subject": "Draft fixture", "description": "Write the JSONL"}, "Draft fixture"),
        (
            "Workflow",
            {
                "script": "export const meta = {\n  name: 'demo-review',\n  description: 'Review changed files',\n}"
            },
            "demo-review: Review changed files",
        ),
        ("Bash", {"command": "npm test", "description": "run tests"}, "npm test"),
        (
            "AskUserQuestion",
            {
                "questions": [
                    {"question": "Which backend?", "header": "Build", "options": [{"label": "Hatch"}]}
                ]
            },
            "Which backend?",
        ),
        ("ExitPlanMode", {"plan": "\n## Plan: Ship it\n\n1. Test"}, "## Plan: Ship it"),
        ("Unknown", {"notes": "First line\nsecond"}, "First line"),  # one field of text: its first line
        ("Unknown", {"a": 1}, '{"a": 1}'),  # nothing to go by: the input itself, on one line
        ("TaskUpdate", {"taskId": ["odd"]}, '{"taskId": ["odd"]}'),
    ],
)
def test_tool_calls_have_a_readable_gist(name: str, params: object, expected: str) -> None:
    assert gist(name, params) == expected


def test_a_tool_s_gist_is_its_own_agent_s():
    """Claude Code's TaskUpdate is summarized by its adapter; another agent's tool of that name is not."""
    params = {"taskId": "1", "status": "in_progress"}
    assert gist("TaskUpdate", params) == "#1 → in_progress"
    assert gist("TaskUpdate", params, agent="goose") == gist("TaskUpdate", params, agent=None)
    assert gist("TaskUpdate", params, agent=None) == '{"taskId": "1", "status": "in_progress"}'
