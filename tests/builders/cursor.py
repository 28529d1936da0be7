"""Cursor's `state.vscdb` databases: composers, bubbles and the workspace that names them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

COMPOSER = "8c1f0e2a-1111-4222-8333-444455556666"


CHILD = "8c1f0e2a-2222-4222-8333-444455556666"


LEGACY = "8c1f0e2a-3333-4222-8333-444455556666"


GONE = "8c1f0e2a-9999-4222-8333-444455556666"


WORKSPACE = "5d41402abc4b2a76b9719d911017c592"


def user_dir(root: Path) -> Path:
    return root / ".config" / "Cursor" / "User"


def make_db(
    path: Path,
    *,
    kv: list[tuple[str, str | bytes | None]] = (),
    items: list[tuple[str, str]] = (),
    wal: bool = False,
) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE IF NOT EXISTS ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("CREATE TABLE IF NOT EXISTS cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)", kv)
    conn.executemany("INSERT INTO ItemTable VALUES (?, ?)", items)
    conn.commit()
    return conn


def dumps(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def bubble(bid: str, btype: int, text: str = "", **extra) -> tuple[str, str]:
    return f"bubbleId:{COMPOSER}:{bid}", dumps(
        {"_v": 3, "type": btype, "bubbleId": bid, "text": text, **extra}
    )


def global_rows() -> list[tuple[str, str | None]]:
    headers = [
        {"bubbleId": b, "type": t}
        for b, t in (("u1", 1), ("a1", 2), ("t1", 2), ("srv-9", 2), ("nul", 2), ("u2", 1))
    ]
    composer = {
        "_v": 10,
        "composerId": COMPOSER,
        "name": "Fix the checkout",
        "createdAt": 1760000000000,
        "lastUpdatedAt": 1760000500000,
        "status": "completed",
        "unifiedMode": "agent",
        "modelConfig": {"modelName": "claude-4.5-sonnet", "maxMode": False},
        "fullConversationHeadersOnly": headers,
        "conversationMap": {},
        "subComposerIds": [CHILD],
    }
    rows: list[tuple[str, str | None]] = [
        # inserted out of order on purpose: the headers decide the order
        bubble("u2", 1, "and add a test", createdAt="2025-10-09T09:00:05.000Z"),
        bubble(
            "t1",
            2,
            "",
            toolFormerData={
                "name": "run_terminal_cmd",
                "toolCallId": "toolu_1",
                "rawArgs": dumps({"command": "pytest -q", "explanation": "run tests"}),
                "result": dumps({"output": "3 passed"}),
                "status": "completed",
            },
        ),
        bubble("u1", 1, "fix the checkout total", createdAt="2025-10-09T09:00:00.000Z"),
        bubble(
            "a1",
            2,
            "Looking at cart.py",
            thinking={"text": "the rounding is off"},
            tokenCount={"inputTokens": 1200, "outputTokens": 80},
            modelInfo={"modelName": "claude-4.5-sonnet"},
        ),
        (f"bubbleId:{COMPOSER}:row-key-differs", dumps({"type": 2, "bubbleId": "srv-9", "text": "Fixed."})),
        (f"bubbleId:{COMPOSER}:nul", None),
        (
            f"bubbleId:{COMPOSER}:orphan",
            dumps({"type": 2, "bubbleId": "orphan", "text": "an unreferenced bubble"}),
        ),
        (f"composerData:{COMPOSER}", dumps(composer)),
        (
            f"composerData:{CHILD}",
            dumps(
                {
                    "_v": 10,
                    "composerId": CHILD,
                    "name": "Explore tests",
                    "createdAt": 1760000100000,
                    "fullConversationHeadersOnly": [{"bubbleId": "c1", "type": 1}],
                }
            ),
        ),
        (f"bubbleId:{CHILD}:c1", dumps({"type": 1, "bubbleId": "c1", "text": "find the tests"})),
        (f"bubbleId:{GONE}:x1", dumps({"type": 1, "bubbleId": "x1", "text": "from a deleted composer"})),
        (
            f"composerData:{LEGACY}",
            dumps(
                {
                    "composerId": LEGACY,
                    "createdAt": 1700000000000,
                    "conversation": [
                        {"type": 1, "bubbleId": "l1", "text": "old style question"},
                        {"type": 2, "bubbleId": "l2", "text": "old style answer"},
                    ],
                    "name": "Inline era",
                }
            ),
        ),
        ("checkpointId:abc", dumps({"not": "read"})),
    ]
    return rows


def install(root: Path, *, wal: bool = False) -> tuple[Path, sqlite3.Connection]:
    user = user_dir(root)
    heads = {
        "allComposers": [
            {"composerId": COMPOSER, "workspaceId": WORKSPACE, "isSubagent": False},
            {
                "composerId": CHILD,
                "workspaceId": WORKSPACE,
                "isSubagent": True,
                "subagentTypeName": "explore",
            },
        ]
    }
    conn = make_db(
        user / "globalStorage" / "state.vscdb",
        kv=global_rows(),
        items=[("composer.composerHeaders", dumps(heads)), ("some.other.setting", "1")],
        wal=wal,
    )
    ws = user / "workspaceStorage" / WORKSPACE
    ws.mkdir(parents=True)
    (ws / "workspace.json").write_text(dumps({"folder": "file:///home/dev/shop%20app"}))
    return user, conn


def transcript_lines() -> list[dict]:
    return [
        {
            "role": "user",
            "message": {"content": [{"type": "text", "text": "<user_query>\nrun the tests\n</user_query>"}]},
        },
        {
            "role": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": "Running."},
                    {"type": "tool_use", "name": "Shell", "input": {"command": "pytest"}},
                ]
            },
        },
        {
            "role": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "x", "content": "3 passed"}]},
        },
        {"type": "error", "error": "Provider Error: upstream timeout"},
        {"role": "assistant", "message": {"content": [{"type": "text", "text": "All green."}]}},
    ]


INLINE_A = "07210ecf-1d64-4f1c-8a61-5b4c5c974f1d"
INLINE_B = "07210ecf-2222-4f1c-8a61-5b4c5c974f1d"


def inline_era_workspace(root: Path) -> Path:
    """A workspace database of the inline era (late 2024, composerDataVersion 0): its composer list
    holds each composer's messages in `conversation`, and there is no global database. The second
    composer's own fields are written after its messages; the third has none (a head only)."""
    composers = {
        "allComposers": [
            {
                "composerId": INLINE_A,
                "name": "create settings page",
                "createdAt": 1731815068736,
                "lastUpdatedAt": 1731815328693,
                "status": "completed",
                "conversation": [
                    {"type": 1, "bubbleId": "a-u1", "text": "create a settings page", "context": {}},
                    {"type": 2, "bubbleId": "a-a1", "text": "I'll create settings.page.ts", "codeBlocks": []},
                    {"type": 1, "bubbleId": "a-u2", "text": "add an API key field"},
                ],
                "codeBlockData": {},
                "tabs": [{"type": "composer"}],
            },
            {
                "composerId": INLINE_B,
                "conversation": [
                    {"type": 1, "bubbleId": "b-u1", "text": "rename the route"},
                    {"type": 2, "bubbleId": "b-a1", "text": "Renamed."},
                ],
                "name": "rename route",
                "createdAt": 1731900000000,
            },
            {"composerId": "head-only", "name": "empty", "createdAt": 1731950000000, "conversation": []},
        ],
        "selectedComposerId": INLINE_A,
        "composerDataVersion": 0,
    }
    ws = user_dir(root) / "workspaceStorage" / WORKSPACE
    make_db(
        ws / "state.vscdb",
        items=[
            ("composer.composerData", json.dumps(composers)),
            ("aiService.prompts", dumps([{"text": "create a settings page", "commandType": 4}])),
        ],
    ).close()
    (ws / "workspace.json").write_text(dumps({"folder": "file:///home/dev/shop%20app"}))
    return ws / "state.vscdb"
