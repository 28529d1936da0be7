"""pi session logs: the header line, then entries in a tree; a fork of one."""

from __future__ import annotations

import json
from pathlib import Path

SID = "5b1c7f7e-2a4d-4c1e-9b55-0c2f4e6b8a10"


FORK = "6c2d8a8f-3b5e-4d2f-8c66-1d3a5f7c9b21"


def entry(n: int, parent: int | None, kind: str, **more: object) -> dict:
    return {
        "type": kind,
        "id": f"{n:08x}",
        "parentId": f"{parent:08x}" if parent else None,
        "timestamp": f"2026-03-02T09:00:{n:02d}.000Z",
        **more,
    }


def pi_sessions(root: Path) -> Path:
    folder = root / ".pi" / "agent" / "sessions" / "--home-dev-shop--"
    folder.mkdir(parents=True)
    edit = {"path": "cart.py", "oldText": "total = None", "newText": "total = 0"}
    usage = {
        "input": 200,
        "output": 40,
        "cacheRead": 1000,
        "cacheWrite": 0,
        "totalTokens": 1240,
        "cost": {"total": 0.01},
    }
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": SID,
            "timestamp": "2026-03-02T09:00:00.000Z",
            "cwd": "/home/dev/shop",
        },
        entry(1, None, "model_change", provider="anthropic", modelId="claude-sonnet-4-5"),
        entry(2, 1, "message", message={"role": "user", "content": "fix the cart total", "timestamp": 1}),
        entry(
            3,
            2,
            "message",
            message={
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "look at cart.py"},
                    {"type": "text", "text": "Fixing it."},
                    {"type": "toolCall", "id": "call_1", "name": "edit", "arguments": edit},
                ],
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage,
                "stopReason": "toolUse",
            },
        ),
        entry(
            4,
            3,
            "message",
            message={
                "role": "toolResult",
                "toolCallId": "call_1",
                "toolName": "edit",
                "content": [{"type": "text", "text": "Successfully replaced text in cart.py."}],
                "isError": False,
            },
        ),
        entry(
            5,
            4,
            "message",
            message={
                "role": "assistant",
                "content": [{"type": "text", "text": "Done."}],
                "model": "claude-sonnet-4-5",
            },
        ),
        # a branch from the first prompt, made with /tree
        entry(6, 2, "branch_summary", fromId="00000005", summary="set total to zero"),
        entry(
            7,
            6,
            "message",
            message={"role": "user", "content": [{"type": "text", "text": "use Decimal instead"}]},
        ),
        entry(
            8,
            7,
            "message",
            message={
                "role": "bashExecution",
                "command": "pytest",
                "output": "ok",
                "exitCode": 0,
                "cancelled": False,
                "truncated": False,
            },
        ),
        entry(9, 8, "session_info", name="Cart total"),
        entry(10, 9, "some_future_entry", x=1),
    ]
    path = folder / f"2026-03-02T09-00-00-000Z_{SID}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    fork = [
        {
            "type": "session",
            "version": 3,
            "id": FORK,
            "timestamp": "2026-03-03T09:00:00.000Z",
            "cwd": "/home/dev/shop",
            "parentSession": str(path),
        },
        entry(1, None, "message", message={"role": "user", "content": "fix the cart total"}),
    ]
    (folder / f"2026-03-03T09-00-00-000Z_{FORK}.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in fork)
    )
    return path


COMPACTED = "7d3e9b90-4c6f-4e30-9d77-2e4b6a8d0c32"


def pi_compacted_early(root: Path) -> Path:
    """A short pi session compacted (`/compact`) within its first lines: the compaction entry
    carries a `summary`, as a Codex compaction item does."""
    folder = root / ".pi" / "agent" / "sessions" / "--home-dev-notes--"
    folder.mkdir(parents=True)
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": COMPACTED,
            "timestamp": "2026-05-12T01:02:27.657Z",
            "cwd": "/home/dev/notes",
        },
        entry(1, None, "model_change", provider="openai", modelId="gpt-5.5"),
        entry(
            2,
            1,
            "message",
            message={"role": "user", "content": [{"type": "text", "text": "summarize notes.md"}]},
        ),
        entry(
            3,
            2,
            "message",
            message={
                "role": "assistant",
                "content": [{"type": "text", "text": "It lists three errands."}],
                "provider": "openai",
                "model": "gpt-5.5",
                "usage": {"input": 12, "output": 7, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 19},
            },
        ),
        entry(
            4,
            3,
            "compaction",
            summary="notes.md lists three errands",
            firstKeptEntryId="00000001",
            tokensBefore=19,
        ),
        entry(
            5, 4, "message", message={"role": "user", "content": [{"type": "text", "text": "and the first?"}]}
        ),
    ]
    path = folder / f"2026-05-12T01-02-27-657Z_{COMPACTED}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
