"""Factory Droid session logs (`<id>.jsonl` beside `<id>.settings.json`), a Task subagent's too."""

from __future__ import annotations

import json
from pathlib import Path

SID = "2c179b50-6f1e-4c53-9a0e-3d8f1b2c4a55"


CHILD = "9a1f3c2e-0b4d-4e8a-8c6f-1d2e3f4a5b6c"


def message(n: int, parent: int | None, role: str, content: list, **more: object) -> dict:
    return {
        "type": "message",
        "id": f"00000000-0000-4000-8000-{n:012d}",
        "timestamp": f"2026-06-18T20:11:{n:02d}.000Z",
        **({"parentId": f"00000000-0000-4000-8000-{parent:012d}"} if parent else {}),
        "message": {"role": role, "content": content, **more},
    }


def droid_sessions(root: Path) -> Path:
    folder = root / ".factory" / "sessions" / "-home-dev-shop"
    folder.mkdir(parents=True)
    header = {
        "type": "session_start",
        "id": SID,
        "title": "fix the cart total",
        "sessionTitle": "Cart total fix",
        "owner": "dev",
        "version": 2,
        "cwd": "/home/dev/shop",
        "isSessionTitleManuallySet": False,
        "sessionTitleAutoStage": "first_message",
    }
    multi = {
        "file_path": "/home/dev/shop/cart.py",
        "edits": [
            {"old_str": "total = None", "new_str": "total = 0"},
            {"old_str": "a = 1", "new_str": "a = 2"},
        ],
    }
    lines = [
        header,
        message(
            1,
            None,
            "user",
            [
                {"type": "text", "text": "<system-reminder>cwd is /home/dev/shop</system-reminder>"},
                {"type": "text", "text": "fix the cart total"},
            ],
        ),
        message(
            2,
            1,
            "assistant",
            [
                {"type": "thinking", "thinking": "look at cart.py", "signature": "s", "durationMs": 5},
                {"type": "text", "text": "Fixing it."},
                {"type": "tool_use", "id": "call_edit", "name": "MultiEdit", "input": multi},
                {"type": "tool_use", "id": "call_task", "name": "Task", "input": {"prompt": "run the tests"}},
            ],
            modelId="glm-5.2",
        ),
        message(
            3,
            2,
            "user",
            [
                {"type": "tool_result", "tool_use_id": "call_edit", "is_error": False, "content": "edited"},
                {
                    "type": "tool_result",
                    "tool_use_id": "call_task",
                    "is_error": False,
                    "content": "tests pass",
                },
            ],
        ),
        message(4, 3, "assistant", [{"type": "text", "text": "Done."}], modelId="glm-5.2"),
        {
            "type": "todo_state",
            "id": "t1",
            "timestamp": "2026-06-18T20:11:05.000Z",
            "todos": {"todos": "1. [x] fix"},
        },
        {"type": "some_future_state", "id": "f1"},
    ]
    path = folder / f"{SID}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (folder / f"{SID}.settings.json").write_text(
        json.dumps(
            {
                "model": "glm-5.2",
                "tokenUsage": {
                    "inputTokens": 200,
                    "outputTokens": 40,
                    "cacheCreationTokens": 0,
                    "cacheReadTokens": 1000,
                    "thinkingTokens": 10,
                },
            },
            indent=2,
        )
    )
    child = [
        {
            **header,
            "id": CHILD,
            "callingSessionId": SID,
            "callingToolUseId": "call_task",
            "sessionTitle": "tests",
        },
        message(11, None, "user", [{"type": "text", "text": "run the tests"}]),
        message(12, 11, "assistant", [{"type": "text", "text": "tests pass"}], modelId="glm-5.2"),
    ]
    (folder / f"{CHILD}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in child))
    return path
