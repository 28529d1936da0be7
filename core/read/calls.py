"""A tool call's input and output as plain values, for every front end (viewer, show, export)."""

from __future__ import annotations

import shlex
from typing import Any

import orjson

from ..adapters import tool_group, tool_owner
from ..adapters.base import prose_field
from ..base.markup import todo_summary, todos
from ..base.text import one_line
from .query import ToolCall


def call_params(call: ToolCall) -> dict[str, Any]:
    """The call's input as a dict (a non-object input under "input"; unreadable JSON as {})."""
    try:
        value = orjson.loads(call.params_json or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {"input": value}


def result_text(call: ToolCall) -> str:
    """The tool_result content as text (a string, or the text of its blocks)."""
    if not call.result_json:
        return ""
    try:
        value = orjson.loads(call.result_json)
    except orjson.JSONDecodeError:
        return call.result_json
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for block in value:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "image":
                    parts.append("[image]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() if value is not None else ""


def tool_summary(call: ToolCall) -> str:
    """The one-line gist of a tool call: its command, path or pattern."""
    try:
        params = orjson.loads(call.params_json or "{}")
    except orjson.JSONDecodeError:
        params = {}
    if not isinstance(params, dict):
        return ""
    adapter = tool_owner(call.agent, call.name)
    gist = adapter.call_gist(call.name, params) if adapter is not None else None
    if gist is None and tool_group(call.agent, call.name) == "todo":
        gist = _todos(params)
    if gist is None:
        gist = _shell_words(params.get("command"))
    if gist is None:
        for key in SUMMARY_KEYS:
            value = params.get(key)
            if isinstance(value, str) and value:
                gist = value
                break
    if gist is None and (prose := call_prose(call, params)) is not None:
        gist = first_line(prose[1])  # a plan's title, not its JSON string of escapes
    return one_line(gist if gist is not None else call.params_json, 70)


def call_prose(call: ToolCall, params: dict[str, Any]) -> tuple[str, str] | None:
    """The call's input when it is text to read (a plan, a question): (what it is, its text), as
    its agent's adapter says (`Adapter.call_prose`), or one field of several lines for an agent
    threadloom has no adapter for."""
    adapter = tool_owner(call.agent, call.name)
    return adapter.call_prose(call.name, params) if adapter is not None else prose_field(params)


def first_line(text: str) -> str:
    """The first line of `text` that is not blank."""
    return next((line for line in text.splitlines() if line.strip()), "")


# the input fields that say what a call is about, in the order they are looked for (`filePath`:
# OpenCode's write, read and edit; `absolutePath`: Cline 3.x's native file tools; `target_file`,
# `targetFile`: Cursor's)
SUMMARY_KEYS = (
    "command",
    "file_path",
    "filePath",
    "path",
    "absolutePath",
    "target_file",
    "targetFile",
    "pattern",
    "url",
    "query",
    "subject",
    "description",
    "prompt",
)


def _shell_words(command: object) -> str | None:
    """A command given as its words (Codex's `shell`: ["bash", "-lc", "npm test"]) as one would type it."""
    if not isinstance(command, list) or not command or not all(isinstance(w, str) for w in command):
        return None
    words: list[str] = command  # every word was checked to be a str just above
    if len(words) == 3 and words[1] in ("-c", "-lc"):
        return words[2]  # the script a shell was asked to run
    return shlex.join(words)


def _todos(params: dict[str, Any]) -> str | None:
    """A todo list call by where its list stands (`1 of 4 done · ◐ Fixing the bound`), not its JSON."""
    items = todos(params)
    return todo_summary(items) if items is not None else None
