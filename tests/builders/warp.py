"""Warp's `warp.sqlite`: AI conversations, their task blobs (protobuf) and queries."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

CONV, CHILD, BARE = "conv-1", "conv-child", "conv-queries-only"
CWD = "/home/dev/shop"


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data


def number_field(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def message(mid: str, seconds: int, kind: int, body: bytes) -> bytes:
    stamp = number_field(1, seconds) + number_field(2, 0)
    return field(1, mid) + field(kind, body) + field(11, "task-1") + field(13, "req-1") + field(14, stamp)


def task_blob(task: str, *messages_: bytes) -> bytes:
    return (
        field(1, task)
        + field(2, "Fix the cart")
        + b"".join(field(5, m) for m in messages_)
        + field(6, "done")
    )


MAIN_TASK = task_blob(
    "task-1",
    message("m1", 1781000000, 2, field(1, "fix the cart total")),
    message("m2", 1781000001, 15, field(1, "look at cart.py")),
    message("m3", 1781000002, 3, field(1, "Fixing it.")),
    message("m4", 1781000003, 4, field(1, "call-shell") + field(2, field(1, "pytest -q"))),
    message(
        "m5", 1781000004, 5, field(1, "call-shell") + field(2, field(1, "pytest -q") + field(2, "1 failed"))
    ),
    message(
        "m6",
        1781000005,
        4,
        field(1, "call-edit")
        + field(
            6,
            field(1, "fix total")
            + field(2, field(1, f"{CWD}/cart.py") + field(2, "total = None") + field(3, "total = 0")),
        ),
    ),
    message("m7", 1781000006, 5, field(1, "call-edit") + field(6, field(1, "applied"))),
    message("m8", 1781000007, 3, field(1, "Done.")),
    message("m9", 1781000008, 99, field(1, "a message kind of a later Warp")),
)


CHILD_TASK = task_blob(
    "task-2",
    message("c1", 1781000010, 2, field(1, "run the tests")),
    message("c2", 1781000011, 3, field(1, "tests pass")),
)


def warp_db(folder: Path) -> Path:
    folder.mkdir(parents=True)
    path = folder / "warp.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE agent_conversations (id INTEGER PRIMARY KEY NOT NULL, conversation_id TEXT NOT NULL,"
        " conversation_data TEXT NOT NULL, last_modified_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP);"
        "CREATE TABLE agent_tasks (id INTEGER PRIMARY KEY, conversation_id TEXT NOT NULL, task_id TEXT NOT NULL"
        " UNIQUE, task BLOB NOT NULL, last_modified_at TEXT NOT NULL);"
        "CREATE TABLE ai_queries (id INTEGER PRIMARY KEY NOT NULL, exchange_id TEXT NOT NULL, conversation_id"
        " TEXT NOT NULL, start_ts DATETIME NOT NULL, input TEXT NOT NULL, working_directory TEXT, output_status"
        " TEXT NOT NULL, model_id TEXT NOT NULL DEFAULT '', planning_model_id TEXT NOT NULL DEFAULT '',"
        " coding_model_id TEXT NOT NULL DEFAULT '');"
        "CREATE TABLE blocks (id INTEGER PRIMARY KEY, stylized_command BLOB, ai_metadata TEXT);"
    )
    usage = {
        "conversation_usage_metadata": {
            "credits_spent": 3.5,
            "token_usage": [{"model_id": "claude-4-5-opus", "warp_tokens": 900}],
        }
    }
    conversations = [
        (CONV, usage),
        (CHILD, {"agent_name": "tester", "parent_conversation_id": CONV}),
        (BARE, {}),
    ]
    for conversation, data in conversations:
        conn.execute(
            "INSERT INTO agent_conversations (conversation_id, conversation_data, last_modified_at) VALUES (?, ?, ?)",
            (conversation, json.dumps(data), "2026-06-09 10:00:00"),
        )
    for conversation, task, blob in ((CONV, "task-1", MAIN_TASK), (CHILD, "task-2", CHILD_TASK)):
        conn.execute(
            "INSERT INTO agent_tasks (conversation_id, task_id, task, last_modified_at) VALUES (?, ?, ?, ?)",
            (conversation, task, blob, "2026-06-09 10:00:09"),
        )
    queries = [
        ("x1", CONV, "2026-06-09 10:00:00", [{"Query": {"text": "fix the cart total"}}]),
        ("x2", CONV, "2026-06-09 10:00:05", []),
        ("x3", CHILD, "2026-06-09 10:00:10", [{"Query": {"text": "run the tests"}}]),
        ("x4", BARE, "2026-06-09 11:00:00", [{"Query": {"text": "what does this error mean"}}]),
    ]
    for exchange, conversation, start, query in queries:
        conn.execute(
            "INSERT INTO ai_queries (exchange_id, conversation_id, start_ts, input, working_directory, output_status,"
            " model_id) VALUES (?, ?, ?, ?, ?, 'Completed', 'claude-4-5-opus')",
            (exchange, conversation, start, json.dumps(query), CWD),
        )
    conn.commit()
    conn.close()
    return path
