"""Warp's `warp.sqlite` (core/adapters/warp.py): found at its default place and under a `--source`
folder at any depth, read only, each task's protobuf blob kept as its fields (which put together are
the blob), prompts, replies, reasoning, tool calls joined to their results, a subagent's
conversation under its parent, a conversation whose tasks are not kept read from its queries, and
`sources --json` listing it."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.base import ForkError, ResumeTarget
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.conftest import ingest
from tests.support import home_env

ROOT = Path(__file__).resolve().parents[2]
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


def test_warp_conversations_are_read_whole_and_as_warp_s(tmp_path):
    path = warp_db(tmp_path / "backup" / ".local" / "state" / "warp-terminal")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert [a for a, adapter in ADAPTERS.items() if adapter.claims(path)] == ["warp"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / "backup")  # found at any depth
        refresh_pending(conn)
        raws = [
            bytes(r)
            for (r,) in conn.execute(
                "SELECT raw FROM entries WHERE session_id = ? ORDER BY byte_offset", (CONV,)
            )
        ]
        # the conversation's row, its task's row, the task's fields (the blob exactly), its queries
        assert b"".join(raws[2:-2]) == MAIN_TASK
        row = conn.execute(
            "SELECT source, project_path, model, is_subagent FROM agent_sessions WHERE id = ?", (CONV,)
        ).fetchone()
        assert tuple(row) == ("warp", CWD, "claude-4-5-opus", 0)
        shown = messages(conn, CONV)
        assert [(m.role, m.content) for m in shown if m.content] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
        ]
        assert shown[0].timestamp == 1781000000000
        assert any(m.thinking == "look at cart.py" for m in shown)
        calls = {c.name: (c.status, json.loads(c.params_json or "{}")) for m in shown for c in m.tool_calls}
        assert calls["run_shell_command"] == ("completed", {"command": "pytest -q"})
        assert calls["apply_file_diffs"][0] == "completed"
        result = conn.execute("SELECT result_json FROM agent_tool_calls WHERE id = 'call-shell'").fetchone()[
            0
        ]
        assert "1 failed" in result
        child = conn.execute(
            "SELECT parent_session_id, is_subagent FROM agent_sessions WHERE id = ?", (CHILD,)
        )
        assert tuple(child.fetchone()) == (CONV, 1)
        bare = messages(conn, BARE)
        assert [(m.role, m.content) for m in bare if m.content] == [("user", "what does this error mean")]
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            (f"{CWD}/cart.py", 1, 1)
        ]
    finally:
        conn.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest  # never written


def test_a_warp_conversation_has_no_resume_command():
    with pytest.raises(ForkError):
        ADAPTERS["warp"].resume_command(ResumeTarget("warp", CONV, CONV, CWD))
    assert not ADAPTERS["warp"].starts_with_prompt


def test_warp_s_default_place_is_listed_and_read(tmp_path):
    env = home_env(tmp_path, XDG_STATE_HOME=str(tmp_path / "state"))
    warp_db(tmp_path / "state" / "warp-terminal")
    dbfile = str(tmp_path / "a.db")
    run = [sys.executable, "-m", "threadloom.core.cli"]
    done = subprocess.run(
        [*run, "ingest", "--db", dbfile, "-q"], env=env, cwd=ROOT, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    shown = subprocess.run(
        [*run, "sources", "--db", dbfile, "--json"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    data = json.loads(shown.stdout)
    places = [p for p in data["default_locations"] if p["agent"] == "warp"]
    assert places[0] == {
        "agent": "warp",
        "path": str(tmp_path / "state" / "warp-terminal" / "warp.sqlite"),
        "exists": True,
        "files": 1,
    }
    assert [i["files"] for i in data["ingested"] if i["agent"] == "warp"] == [1]
