"""Kimi CLI session folders: `context.jsonl`, `wire.jsonl` and the share folder's `kimi.json`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

SID = "0f9a4c1e-5b7d-4e2a-9c3b-8d1e2f3a4b5c"


CWD = "/home/dev/shop"


def kimi_session(root: Path) -> Path:
    share = root / ".kimi"
    folder = share / "sessions" / hashlib.md5(CWD.encode()).hexdigest() / SID
    folder.mkdir(parents=True)
    (share / "kimi.json").write_text(
        json.dumps({"work_dirs": [{"path": CWD, "kaos": "local", "last_session_id": SID}]})
    )
    edit = {"path": "cart.py", "edit": [{"old": "total = None", "new": "total = 0"}]}
    context = [
        {"role": "_system_prompt", "content": "You are Kimi Code CLI"},
        {"role": "_checkpoint", "id": 0},
        {"role": "user", "content": [{"type": "text", "text": "fix the cart total"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "think", "think": "look at cart.py"},
                {"type": "text", "text": "Fixing it."},
            ],
            "tool_calls": [
                {
                    "type": "function",
                    "id": "StrReplaceFile:0",
                    "function": {"name": "StrReplaceFile", "arguments": json.dumps(edit)},
                },
                {
                    "type": "function",
                    "id": "Agent:1",
                    "function": {
                        "name": "Agent",
                        "arguments": json.dumps({"description": "tests", "prompt": "run the tests"}),
                    },
                },
            ],
        },
        {
            "role": "tool",
            "content": [{"type": "text", "text": "File edited"}],
            "tool_call_id": "StrReplaceFile:0",
        },
        {"role": "tool", "content": [{"type": "text", "text": "tests pass"}], "tool_call_id": "Agent:1"},
        {"role": "_usage", "token_count": 1300},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        {"role": "something_new", "x": 1},
    ]
    (folder / "context.jsonl").write_text("".join(json.dumps(line) + "\n" for line in context))
    wire = [
        {"type": "metadata", "protocol_version": "1.9"},
        {
            "timestamp": 1781810000.0,
            "message": {"type": "TurnBegin", "payload": {"user_input": "fix the cart total"}},
        },
        {
            "timestamp": 1781810001.5,
            "message": {"type": "ContentPart", "payload": {"type": "text", "text": "Fixing it."}},
        },
        {
            "timestamp": 1781810002.0,
            "message": {
                "type": "StatusUpdate",
                "payload": {
                    "token_usage": {
                        "input_other": 200,
                        "output": 40,
                        "input_cache_read": 1000,
                        "input_cache_creation": 0,
                    },
                    "message_id": "chatcmpl-1",
                },
            },
        },
        {"timestamp": 1781810009.0, "message": {"type": "TurnEnd", "payload": {}}},
    ]
    (folder / "wire.jsonl").write_text("".join(json.dumps(line) + "\n" for line in wire))
    sub = folder / "subagents" / "a1b2c3"
    sub.mkdir(parents=True)
    (sub / "context.jsonl").write_text(
        "".join(
            json.dumps(line) + "\n"
            for line in [
                {"role": "user", "content": "run the tests"},
                {"role": "assistant", "content": [{"type": "text", "text": "tests pass"}]},
            ]
        )
    )
    return folder
