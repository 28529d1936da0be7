"""Cline-family task folders (Cline, Roo Code, Kilo Code): `ui_messages.json` and the API history."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

TASK = "1770858773985"


def storage(root: Path, ext: str = "saoudrizwan.claude-dev") -> Path:
    return root / ".config" / "Code" / "User" / "globalStorage" / ext


def say(ts: int, name: str, text: str = "", **extra) -> dict:
    return {"ts": ts, "type": "say", "say": name, "text": text, **extra}


def write(path: Path, value, *, old: bool = True) -> Path:
    """Cline writes JSON.stringify(value) with no whitespace and no final newline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, separators=(",", ":")))
    if old:
        stamp = time.time() - 7200
        os.utime(path, (stamp, stamp))
    return path


def task_folder(
    root: Path,
    task: str = TASK,
    ext: str = "saoudrizwan.claude-dev",
    ui: list[dict] | None = None,
    api: list[dict] | None = None,
) -> Path:
    folder = storage(root, ext) / "tasks" / task
    if api is not None:
        write(folder / "api_conversation_history.json", api)
    if ui is not None:
        write(folder / "ui_messages.json", ui)
    return folder


CWD = "/home/dev/shop"


def ask(ts: int, name: str, text: str = "", **extra) -> dict:
    return {"ts": ts, "type": "ask", "ask": name, "text": text, **extra}


def api_req(ts: int, tokens_in: int, tokens_out: int, reads: int = 0, writes: int = 0, **extra) -> dict:
    request = f"<task>\nfix the cart\n</task>\n<environment_details>\n# Current Working Directory ({CWD}) Files\na.py\n</environment_details>"
    data = {
        "request": request,
        "tokensIn": tokens_in,
        "tokensOut": tokens_out,
        "cacheWrites": writes,
        "cacheReads": reads,
        "cost": 0.01,
        **extra,
    }
    return say(ts, "api_req_started", json.dumps(data))


def ui_stream() -> list[dict]:
    model = {"providerId": "anthropic", "modelId": "claude-sonnet-4-5", "mode": "act"}
    return [
        say(1000, "task", "fix the cart"),
        api_req(1001, 12, 300, reads=0, writes=9000),
        say(1002, "reasoning", "look at cart.py first"),
        say(1003, "text", "Reading the cart.", modelInfo=model, partial=False),
        say(1004, "tool", json.dumps({"tool": "readFile", "path": "cart.py", "content": "def total(): ..."})),
        api_req(1005, 20, 150, reads=9000),
        ask(1006, "command", "pytest -q"),
        say(1007, "command_output", "3 passed"),
        say(1008, "completion_result", "Fixed the total."),
        ask(1009, "completion_result", ""),
        say(1010, "user_feedback", "also add a test"),
        api_req(1011, 30, 80, reads=9100),
        ask(
            1012,
            "followup",
            json.dumps({"question": "Which file?", "options": ["tests/test_cart.py", "new file"]}),
        ),
        say(1013, "user_feedback", "tests/test_cart.py"),
        say(1014, "checkpoint_created"),
        say(1015, "error", "Cline tried to use write_to_file without value for required parameter"),
        say(1016, "brand_new_kind", "something new"),
        say(
            1017,
            "deleted_api_reqs",
            json.dumps({"tokensIn": 5, "tokensOut": 6, "cacheWrites": 0, "cacheReads": 0, "cost": 0}),
        ),
    ]


def api_history() -> list[dict]:
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<task>\nfix the cart\n</task>"},
                {
                    "type": "text",
                    "text": f"<environment_details>\n# Current Working Directory ({CWD}) Files\n</environment_details>",
                },
            ],
            "ts": 1000,
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading the cart.\n<read_file><path>cart.py</path></read_file>"}
            ],
            "ts": 1003,
            "modelInfo": {"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"},
            "metrics": {"tokens": {"prompt": 9012, "completion": 300, "cached": 0}},
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[read_file for 'cart.py'] Result:"},
                {"type": "text", "text": "def total(): ..."},
            ],
            "ts": 1004,
        },
    ]


def native_tools_history() -> list[dict]:
    """A Cline 3.x API history of native tool calls (spring 2026): `tool_use` blocks, their results
    sent back as `[tool for 'x'] Result:` text blocks of the next user message, in call order."""
    model = {"modelId": "claude_4_5_opus", "providerId": "openai", "mode": "act"}

    def call(call_id: str, name: str, params: dict) -> dict:
        return {"type": "tool_use", "id": call_id, "name": name, "input": params, "call_id": call_id}

    def text(value: str) -> dict:
        return {"type": "text", "text": value}

    env = text("<environment_details>\n# Current Time\n4/24/2026\n</environment_details>")
    return [
        {"role": "user", "ts": 3000, "content": [text("<task>\nCreate hello.ts\n</task>"), env]},
        {
            "role": "assistant",
            "ts": 3001,
            "modelInfo": model,
            "content": [
                call("t1", "read_file", {"path": "README.md"}),
                call("t2", "read_file", {"path": "missing.md"}),
                call("t3", "execute_command", {"command": "npm test"}),
            ],
        },
        {
            "role": "user",
            "ts": 3002,
            "content": [
                text("[read_file for 'README.md'] Result:\n1 | hello readme"),
                text(
                    "[read_file for 'missing.md'] Result:\nThe tool execution failed with the "
                    "following error:\n<error>\nFile not found\n</error>"
                ),
                text("[execute_command for 'npm test'] Result:\nThe user denied this operation."),
                env,
            ],
        },
        {"role": "assistant", "ts": 3003, "modelInfo": model, "content": [text("Done.")]},
    ]
