"""Crush's `crush.db`: sessions, messages whose parts are JSON, file versions."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SID = "6f1d2c3b-4a5e-4f60-8172-93a4b5c6d7e8"


CHILD = "msg-2$$call_agent"


SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0.0,
    updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL, summary_message_id TEXT, todos TEXT);
CREATE TABLE files (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, path TEXT NOT NULL, content TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
    parts TEXT NOT NULL default '[]', model TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    finished_at INTEGER, provider TEXT, is_summary_message INTEGER DEFAULT 0 NOT NULL);
CREATE TABLE read_files (session_id TEXT NOT NULL, path TEXT NOT NULL, read_at INTEGER NOT NULL);
"""


def part(kind: str, **data) -> dict:
    return {"type": kind, "data": data}


def crush_db(root: Path, folder: str = ".crush", name: str = "crush.db") -> Path:
    """A Crush project database (`<root>/shop/.crush/crush.db`), or the Go OpenCode's it began as
    (`folder` ".opencode", `name` "opencode.db": the same tables)."""
    project = root / "shop"
    path = project / folder / name
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute(
        "INSERT INTO sessions (id, title, prompt_tokens, completion_tokens, cost, updated_at, created_at) "
        "VALUES (?, 'Fix the cart total', 9000, 80, 0.42, 1772359300, 1772359200)",
        (SID,),
    )
    conn.execute(
        "INSERT INTO sessions (id, parent_session_id, title, cost, updated_at, created_at) "
        "VALUES (?, ?, 'run the tests', 0.1, 1772359260, 1772359230)",
        (CHILD, SID),
    )
    edit = {"file_path": "cart.py", "old_string": "total = None", "new_string": "total = 0"}
    rows = [
        ("msg-1", SID, "user", [part("text", text="fix the cart total")]),
        (
            "msg-2",
            SID,
            "assistant",
            [
                part("reasoning", thinking="look at cart.py", signature=""),
                part("text", text="Fixing it."),
                part("tool_call", id="call_edit", name="edit", input=json.dumps(edit), finished=True),
                part(
                    "tool_call",
                    id="call_agent",
                    name="agent",
                    input=json.dumps({"prompt": "run the tests"}),
                    finished=True,
                ),
                part("finish", reason="tool_use", time=1772359210),
            ],
        ),
        ("msg-c1", CHILD, "user", [part("text", text="run the tests")]),
        ("msg-c2", CHILD, "assistant", [part("text", text="3 passed")]),
        (
            "msg-3",
            SID,
            "tool",
            [
                part("tool_result", tool_call_id="call_edit", name="edit", content="edited", is_error=False),
                part(
                    "tool_result", tool_call_id="call_agent", name="agent", content="3 passed", is_error=False
                ),
            ],
        ),
        ("msg-4", SID, "user", [part("shell_command", command="git status", output="clean", exit_code=0)]),
        ("msg-5", SID, "assistant", [part("text", text="Done."), part("something_new", x=1)]),
    ]
    for n, (mid, sid, role, parts) in enumerate(rows):
        conn.execute(
            "INSERT INTO messages (id, session_id, role, parts, model, created_at, updated_at, provider) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 'anthropic')",
            (
                mid,
                sid,
                role,
                json.dumps(parts),
                "claude-sonnet-4-5" if role == "assistant" else None,
                1772359200 + 10 * n,
                1772359200 + 10 * n,
            ),
        )
    conn.execute(
        "INSERT INTO files VALUES ('f1', ?, 'cart.py', 'total = 0\n', 1, 1772359215, 1772359215)", (SID,)
    )
    conn.execute("INSERT INTO read_files VALUES (?, 'cart.py', 1772359205)", (SID,))
    conn.commit()
    conn.close()
    return path
