"""Warp's `warp.sqlite` (core/adapters/warp.py): found at its default place and under a `--source`
folder at any depth, read only, each task's protobuf blob kept as its fields (which put together are
the blob), prompts, replies, reasoning, tool calls joined to their results, a subagent's
conversation under its parent, a conversation whose tasks are not kept read from its queries, and
`sources --json` listing it."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.base import ForkError, ResumeTarget
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.builders.warp import BARE, CHILD, CONV, CWD, MAIN_TASK, warp_db
from tests.support import home_env, ingest

ROOT = Path(__file__).resolve().parents[2]


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
