"""The one-line gist of a tool call (tree, viewer, show, export) says what the call did, for the
tools whose input has no command or path too, instead of falling back to raw JSON."""

from __future__ import annotations

import json

import pytest
from threadloom.core.query import ToolCall
from threadloom.core.render import tool_summary


def gist(name: str, params: object) -> str:
    return tool_summary(ToolCall("toolu_1", name, json.dumps(params), None, None, None, None, None))


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
        ("Unknown", {"a": 1}, '{"a": 1}'),  # nothing to go by: the input itself, on one line
        ("TaskUpdate", {"taskId": ["odd"]}, '{"taskId": ["odd"]}'),
    ],
)
def test_tool_calls_have_a_readable_gist(name: str, params: object, expected: str) -> None:
    assert gist(name, params) == expected
