"""Claude Code's legacy `__store.db` (SQLite, spring 2025): its migrations and a session's messages."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.builders.claude import tool_use

SID = "6a1f3c2e-0000-4000-8000-00000000aaaa"


MIGRATIONS = """
CREATE TABLE base_messages (uuid text PRIMARY KEY NOT NULL, parent_uuid text REFERENCES base_messages(uuid),
  session_id text NOT NULL, timestamp integer NOT NULL, message_type text NOT NULL, cwd text NOT NULL,
  user_type text NOT NULL, version text NOT NULL, isSidechain integer NOT NULL, original_cwd text NOT NULL DEFAULT '');
CREATE TABLE user_messages (uuid text PRIMARY KEY NOT NULL REFERENCES base_messages(uuid), message text NOT NULL,
  tool_use_result text, timestamp integer NOT NULL, is_at_mention_read integer, is_meta integer);
CREATE TABLE assistant_messages (uuid text PRIMARY KEY NOT NULL REFERENCES base_messages(uuid), cost_usd real NOT NULL,
  duration_ms integer NOT NULL, message text NOT NULL, is_api_error_message integer DEFAULT false NOT NULL,
  timestamp integer NOT NULL, model text DEFAULT '' NOT NULL);
CREATE TABLE conversation_summaries (leaf_uuid text PRIMARY KEY NOT NULL REFERENCES base_messages(uuid),
  summary text NOT NULL, updated_at integer NOT NULL);
CREATE TABLE __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric);
"""


def uid(n: int) -> str:
    return f"6a1f3c2e-{n:04d}-4000-8000-00000000bbbb"


def messages() -> list[tuple]:
    """(uuid, parent, type, timestamp, message, tool_use_result, sidechain)"""
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 0,
    }
    return [
        (uid(1), None, "user", 1743500000, {"role": "user", "content": "list the files"}, None, 0),
        (
            uid(2),
            uid(1),
            "assistant",
            1743500002,
            {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-3-7-sonnet-20250219",
                "content": [{"type": "text", "text": "Listing."}, tool_use("toolu_1", "LS", path="/srv/app")],
                "stop_reason": "tool_use",
                "usage": usage,
            },
            None,
            0,
        ),
        (
            uid(3),
            uid(2),
            "user",
            1743500003000,
            {  # milliseconds in the later rows
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py\nb.py"}],
            },
            "a.py\nb.py",
            0,
        ),
        (
            uid(4),
            uid(3),
            "assistant",
            1743500004000,
            {
                "id": "msg_02",
                "type": "message",
                "role": "assistant",
                "model": "claude-3-7-sonnet-20250219",
                "content": [{"type": "text", "text": "Two files."}],
                "usage": usage,
            },
            None,
            0,
        ),
        (uid(5), uid(4), "user", 1743500005000, {"role": "user", "content": "thanks"}, None, 0),
    ]


def make_store(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS)
    for uuid, parent, mtype, ts, message, result, side in messages():
        conn.execute(
            "INSERT INTO base_messages VALUES (?, ?, ?, ?, ?, '/srv/app', 'external', '0.2.93', ?, '/srv/app')",
            (uuid, parent, SID, ts, mtype, side),
        )
        body = json.dumps(message)
        if mtype == "user":
            conn.execute(
                "INSERT INTO user_messages VALUES (?, ?, ?, ?, NULL, NULL)",
                (uuid, body, json.dumps(result) if result is not None else None, ts),
            )
        else:
            conn.execute(
                "INSERT INTO assistant_messages VALUES (?, 0.01, 1200, ?, 0, ?, 'claude-3-7-sonnet-20250219')",
                (uuid, body, ts),
            )
    conn.execute(
        "INSERT INTO conversation_summaries VALUES (?, 'Listing the app files', 1743500006)", (uid(4),)
    )
    conn.commit()
    return conn
