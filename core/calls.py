"""A tool call's input and output as plain values, for every front end (viewer, show, export)."""

from __future__ import annotations

from typing import Any

import orjson
from threadloom.core.query import ToolCall


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
