"""Qwen Code chats: Claude-like JSONL records with Gemini-like message parts."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

SID = "7d1f7c8e-3b7a-4c1e-9a55-0c2f4e6b8a10"


def record(n: int, kind: str, parent: int | None, **more: object) -> dict:
    return {
        "uuid": f"00000000-0000-4000-8000-{n:012d}",
        "parentUuid": f"00000000-0000-4000-8000-{parent:012d}" if parent else None,
        "sessionId": SID,
        "timestamp": f"2026-05-02T09:00:{n:02d}.000Z",
        "type": kind,
        "cwd": "/home/dev/shop",
        "version": "0.9.1",
        **more,
    }


def qwen_session(root: Path) -> Path:
    chats = root / ".qwen" / "projects" / "-home-dev-shop" / "chats"
    chats.mkdir(parents=True)
    edit = {"file_path": "/home/dev/shop/cart.py", "old_string": "total = None", "new_string": "total = 0"}
    lines = [
        record(1, "user", None, message={"role": "user", "parts": [{"text": "fix the cart total"}]}),
        record(
            2,
            "assistant",
            1,
            model="qwen3-coder-plus",
            message={
                "role": "model",
                "parts": [
                    {"text": "looking at cart.py", "thought": True},
                    {"text": "I will set it to zero."},
                    {"functionCall": {"id": "call_1", "name": "edit", "args": edit}},
                ],
            },
            usageMetadata={
                "promptTokenCount": 1200,
                "cachedContentTokenCount": 1000,
                "candidatesTokenCount": 40,
                "thoughtsTokenCount": 10,
            },
        ),
        record(
            3,
            "tool_result",
            2,
            message={
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "call_1", "name": "edit", "response": {"output": "ok"}}}
                ],
            },
            toolCallResult={
                "callId": "call_1",
                "status": "success",
                "resultDisplay": {
                    "fileName": "cart.py",
                    "fileDiff": "",
                    "originalContent": "items = []\ntotal = None\n",
                    "newContent": "items = []\ntotal = 0\n",
                },
            },
        ),
        record(
            4,
            "assistant",
            3,
            model="qwen3-coder-plus",
            message={"role": "model", "parts": [{"text": "Done."}]},
        ),
        record(5, "system", 4, subtype="ui_telemetry", systemPayload={"uiEvent": {"event.name": "x"}}),
        record(6, "system", 5, subtype="custom_title", systemPayload={"customTitle": "Cart total"}),
        {"type": "some_future_record", "sessionId": SID},
    ]
    path = chats / f"{SID}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


JSON_SID = "9ac9a7c3-5b1e-4f2a-8c3d-2e4f6a8b0c1d"
PROJECT = "/home/dev/shop"


def qwen_json_chat(root: Path, *, folder_named: bool = True) -> Path:
    """A chat of Qwen Code's JSON era (before its JSONL): Gemini CLI's indented document under
    `.qwen/tmp/<sha256 of its folder>/chats/`, its replies typed "qwen". With `folder_named`, a
    JSONL session of the same folder beside it (`qwen_session`), the one place that names it."""
    from tests.builders.gemini import reply, user

    if folder_named:
        qwen_session(root)
    edit = {"file_path": f"{PROJECT}/cart.py", "old_string": "total = None", "new_string": "total = 0"}
    call = {
        "id": "edit-1",
        "name": "edit",
        "args": edit,
        "status": "success",
        "timestamp": "2025-10-01T10:00:03.000Z",
        "result": [{"functionResponse": {"id": "edit-1", "name": "edit", "response": {"output": "ok"}}}],
        "resultDisplay": {
            "fileName": "cart.py",
            "fileDiff": "",
            "originalContent": "items = []\ntotal = None\n",
            "newContent": "items = []\ntotal = 0\n",
        },
        "displayName": "Edit",
        "description": "cart.py",
    }
    tokens = {"input": 1200, "output": 40, "cached": 1000, "thoughts": 10, "tool": 0, "total": 1250}
    doc = {
        "sessionId": JSON_SID,
        "projectHash": hashlib.sha256(PROJECT.encode()).hexdigest(),
        "startTime": "2025-10-01T10:00:00.000Z",
        "lastUpdated": "2025-10-01T10:01:00.000Z",
        "messages": [
            user("m1", "fix the cart total", ts="2025-10-01T10:00:01.000Z"),
            dict(
                reply("m2", "I will set it to zero.", tools=[call], tokens=tokens),
                type="qwen",
                model="qwen3-coder-plus",
            ),
            dict(reply("m3", "Done."), type="qwen", model="qwen3-coder-plus", thoughts=[]),
        ],
    }
    path = root / ".qwen" / "tmp" / doc["projectHash"] / "chats" / "session-2025-10-01T10-00-9ac9a7c3.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc, indent=2))  # as Qwen Code wrote it: indented, no final newline
    old = time.time() - 7200  # settled: not a chat being written
    os.utime(path, (old, old))
    return path
