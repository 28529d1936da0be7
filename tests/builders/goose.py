"""Goose's `sessions.db`: a session and its messages."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SID = "20260301_4"


CWD = "/home/dev/shop"


SCHEMA = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user',
    working_dir TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, extension_data TEXT DEFAULT '{}',
    total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER,
    schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT, provider_name TEXT,
    model_config_json TEXT, tenant_id TEXT, user_id TEXT);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT);
"""


def goose_db(root: Path) -> Path:
    path = root / ".local" / "share" / "goose" / "sessions" / "sessions.db"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO schema_version (version) VALUES (9)")
    conn.execute(
        "INSERT INTO sessions (id, name, user_set_name, working_dir, created_at, updated_at, "
        "accumulated_input_tokens, accumulated_output_tokens, provider_name, model_config_json) "
        "VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?, ?)",
        (
            SID,
            "Fix the cart total",
            CWD,
            "2026-03-01T10:00:00Z",
            "2026-03-01T10:05:00Z",
            1500,
            90,
            "anthropic",
            json.dumps({"model_name": "claude-sonnet-4-5", "context_limit": 200000}),
        ),
    )
    edit = {"path": "cart.py", "before": "total = None", "after": "total = 0"}
    rows = [
        ("user", [{"type": "text", "text": "fix the cart total"}], None),
        (
            "assistant",
            [
                {"type": "thinking", "thinking": "look at cart.py", "signature": "sig"},
                {"type": "text", "text": "Fixing it."},
                {
                    "type": "toolRequest",
                    "id": "toolu_1",
                    "toolCall": {"status": "success", "value": {"name": "edit", "arguments": edit}},
                },
                {
                    "type": "toolRequest",
                    "id": "toolu_2",
                    "toolCall": {
                        "status": "success",
                        "value": {"name": "shell", "arguments": {"command": "pytest"}},
                    },
                },
            ],
            None,
        ),
        (
            "user",
            [
                {
                    "type": "toolResponse",
                    "id": "toolu_1",
                    "toolResult": {
                        "status": "success",
                        "value": {"content": [{"type": "text", "text": "edited"}], "isError": False},
                    },
                },
                {
                    "type": "toolResponse",
                    "id": "toolu_2",
                    "toolResult": {"status": "error", "error": "pytest: not found"},
                },
            ],
            None,
        ),
        ("assistant", [{"type": "text", "text": "Done."}], None),
        (
            "user",
            [{"type": "text", "text": "summary of earlier turns"}],
            {"userVisible": False, "agentVisible": True},
        ),
        ("assistant", [{"type": "somethingNew", "x": 1}], None),
    ]
    for n, (role, content, meta) in enumerate(rows):
        conn.execute(
            "INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (f"msg_{n}", SID, role, json.dumps(content), 1772359200 + n, json.dumps(meta) if meta else None),
        )
    conn.commit()
    conn.close()
    return path
