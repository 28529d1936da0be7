"""Kiro CLI sessions (`<id>.jsonl` beside `<id>.json`), a subagent's too."""

from __future__ import annotations

import json
from pathlib import Path

SID = "4f1b2c3d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"


CHILD = "7a8b9c0d-1e2f-4a3b-9c4d-5e6f7a8b9c0d"


def envelope(kind: str, message: str, content: list, **data: object) -> dict:
    return {"version": "v1", "kind": kind, "data": {"message_id": message, "content": content, **data}}


def text(value: str) -> dict:
    return {"kind": "text", "data": value}


def metadata(sid: str, parent: str | None, title: str) -> dict:
    return {
        "session_id": sid,
        "cwd": "/home/dev/shop",
        "created_at": "2026-06-07T14:14:27.290365Z",
        "updated_at": "2026-06-07T14:20:36.404077Z",
        "title": title,
        "parent_session_id": parent,
        "session_created_reason": "subagent",
        "session_state": {
            "version": "v1",
            "rts_model_state": {
                "conversation_id": sid,
                "model_info": {"model_id": "claude-sonnet-4.6", "context_window_tokens": 200000},
                "context_usage_percentage": 3.5,
            },
            "agent_name": None,
        },
    }


def kiro_sessions(folder: Path) -> Path:
    folder.mkdir(parents=True)
    edit = {
        "command": "str_replace",
        "path": "/home/dev/shop/cart.py",
        "old_str": "total = None",
        "new_str": "total = 0",
    }
    lines = [
        envelope("Prompt", "m1", [text("fix the cart total")], meta={"timestamp": 1780841667}),
        envelope(
            "AssistantMessage",
            "m2",
            [
                {
                    "kind": "thinking",
                    "data": {"text": "look at cart.py", "signature": "c2ln", "modelId": "claude-opus-4.8"},
                },
                text("Fixing it."),
                {
                    "kind": "toolUse",
                    "data": {
                        "toolUseId": "tooluse_edit",
                        "name": "write",
                        "input": {**edit, "__tool_use_purpose": "fix"},
                    },
                },
                {
                    "kind": "toolUse",
                    "data": {"toolUseId": "tooluse_ls", "name": "shell", "input": {"command": "pytest -q"}},
                },
                {
                    "kind": "toolUse",
                    "data": {
                        "toolUseId": "tooluse_rd",
                        "name": "read",
                        "input": {"operations": [{"mode": "Line", "path": "/home/dev/shop/cart.py"}]},
                    },
                },
            ],
        ),
        envelope(
            "ToolResults",
            "m3",
            [
                {
                    "kind": "toolResult",
                    "data": {"toolUseId": "tooluse_edit", "content": [text("edited")], "status": "success"},
                },
                {
                    "kind": "toolResult",
                    "data": {
                        "toolUseId": "tooluse_ls",
                        "content": [
                            {
                                "kind": "json",
                                "data": {"exit_status": "exit status: 1", "stdout": "1 failed", "stderr": ""},
                            }
                        ],
                        "status": "error",
                    },
                },
            ],
            results={
                "tooluse_ls": {"tool": {}, "result": {"Error": {"items": [{"Text": "1 failed"}]}}},
                # a result given under `results` alone
                "tooluse_rd": {"tool": {}, "result": {"Success": {"items": [{"Text": "total = 0"}]}}},
            },
        ),
        envelope("AssistantMessage", "m4", [text("Done.")]),
        {"version": "v1", "kind": "SomeFutureKind", "data": {}},
    ]
    path = folder / f"{SID}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (folder / f"{SID}.json").write_text(json.dumps(metadata(SID, None, "fix the cart total"), indent=2))
    (folder / f"{SID}.history").write_text("/model\nfix the cart total\n")
    child = [
        envelope("Prompt", "c1", [text("run the tests")], meta={"timestamp": 1780841700}),
        envelope("AssistantMessage", "c2", [text("tests pass")]),
    ]
    (folder / f"{CHILD}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in child))
    (folder / f"{CHILD}.json").write_text(json.dumps(metadata(CHILD, SID, "run the tests"), indent=2))
    return path
