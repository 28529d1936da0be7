"""Amazon Q Developer CLI conversations (its saved JSON state: history pairs of prompt and response)."""

from __future__ import annotations

import json
from pathlib import Path

CONV = "4e83977c-0000-4000-8000-0000000000aa"


CWD = "/home/dev/thing"


def user(content: dict, **extra) -> dict:
    return {
        "additional_context": "",
        "env_context": {
            "env_state": {
                "operating_system": "linux",
                "current_working_directory": CWD,
                "environment_variables": [],
            }
        },
        "content": content,
        "images": None,
        **extra,
    }


def prompt(text: str, **extra) -> dict:
    return user({"Prompt": {"prompt": text}}, **extra)


def results(*items: tuple[str, str, str], cancelled: bool = False) -> dict:
    body = {
        "tool_use_results": [
            {"tool_use_id": i, "content": [{"Text": out}], "status": status} for i, out, status in items
        ]
    }
    return user({"CancelledToolUses" if cancelled else "ToolUseResults": body})


def tool_use(mid: str, text: str, *calls: tuple[str, str, dict]) -> dict:
    return {
        "ToolUse": {
            "message_id": mid,
            "content": text,
            "tool_uses": [
                {"id": i, "name": n, "orig_name": n, "args": a, "orig_args": a} for i, n, a in calls
            ],
        }
    }


def response(mid: str, text: str) -> dict:
    return {"Response": {"message_id": mid, "content": text}}


def pairs() -> list[list[dict]]:
    return [
        [
            prompt("deploy the stack"),
            tool_use("m1", "Building first.", ("t1", "execute_bash", {"command": "sam build"})),
        ],
        [
            results(("t1", "Build Succeeded", "Success")),
            tool_use("m2", "Now deploying.", ("t2", "execute_bash", {"command": "sam deploy"})),
        ],
        [results(("t2", "Error: no changes", "Error")), response("m3", "Nothing to deploy.")],
        [prompt("thanks"), response("m4", "You're welcome.")],
    ]


def state(history: list, **extra) -> dict:
    return {
        "conversation_id": CONV,
        "next_message": None,
        "history": history,
        "valid_history_range": [0, len(history)],
        "transcript": ["> deploy the stack", "Building first."],
        "tools": {},
        "context_manager": None,
        "context_message_length": None,
        "latest_summary": None,
        "model": "CLAUDE_SONNET_4_20250514_V1_0",
        **extra,
    }


def save(path: Path, value: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2))  # serde_json's pretty printer: two spaces
    return path
