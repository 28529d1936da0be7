"""Qwen Code's chat recordings (core/adapters/qwen.py): read as Qwen Code's (never as Claude Code's
or Gemini CLI's), every record stored byte for byte, calls joined to their results, tokens and
models, its edit drawn from the file before and after its result holds, and its resume command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from threadloom.core.actions.fork import resume_plan
from threadloom.core.actions.restore import restore_session
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.base import ForkError
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.archive import verify
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.builders.qwen import JSON_SID, SID, qwen_json_chat, qwen_session
from tests.support import ingest, run_printed


def test_a_qwen_session_is_read_whole_and_as_qwen_code(tmp_path):
    source = qwen_session(tmp_path)
    assert [name for name, a in ADAPTERS.items() if a.claims(source)] == ["qwen-code"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".qwen")
        refresh_pending(conn)
        raws = conn.execute("SELECT raw, newline FROM entries ORDER BY byte_offset").fetchall()
        assert raw_bytes(raws) == source.read_bytes()
        row = conn.execute(
            "SELECT id, source, title, project_path FROM agent_sessions WHERE is_subagent = 0"
        ).fetchone()
        assert row == (SID, "qwen-code", "Cart total", "/home/dev/shop")
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content] == [
            ("user", "fix the cart total"),
            ("assistant", "I will set it to zero."),
            ("assistant", "Done."),
        ]
        assert any(m.thinking == "looking at cart.py" for m in shown)
        calls = [c for m in shown for c in m.tool_calls]
        assert [(c.name, c.status, c.agent) for c in calls] == [("edit", "completed", "qwen-code")]
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?",
            (SID,),
        ).fetchone()
        assert tuple(tokens) == (200, 50, 1000)
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        # the edit counted from the file before and after its result holds
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("/home/dev/shop/cart.py", 1, 1)
        ]
    finally:
        conn.close()


def test_a_qwen_session_resumes_with_its_own_command(tmp_path, fake_agents, sandbox):
    qwen_session(tmp_path)
    (fake_agents / "qwen").write_text((fake_agents / "claude").read_text())
    (fake_agents / "qwen").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".qwen")
        plan = resume_plan(conn, SID)
    finally:
        conn.close()
    assert plan.command == "cd /home/dev/shop && qwen --resume " + SID
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["qwen", str(sandbox), "--resume", SID]
    ]


def test_a_json_era_qwen_chat_is_read_whole_as_qwen_code(tmp_path):
    """Qwen Code's chats of 2025 (Gemini CLI's JSON document, replies typed "qwen") were listed as
    unclaimed and not kept: they are Qwen Code sessions, messages, thoughts, calls with results,
    tokens and model read, the folder its hashed `tmp` folder names, and kept byte for byte."""
    source = qwen_json_chat(tmp_path)
    assert [name for name, a in ADAPTERS.items() if a.claims(source)] == ["qwen-code"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        report = ingest(conn, tmp_path / ".qwen")
        refresh_pending(conn)
        assert not report.unclaimed
        raws = conn.execute(
            "SELECT e.raw, e.newline FROM entries e JOIN source_files f ON f.id = e.source_file_id "
            "WHERE f.path = ? ORDER BY e.byte_offset",
            (str(source),),
        ).fetchall()
        assert raw_bytes(raws) == source.read_bytes()
        row = conn.execute(
            "SELECT source, project_path, model, input_tokens, output_tokens, cache_read_tokens "
            "FROM agent_sessions WHERE id = ?",
            (JSON_SID,),
        ).fetchone()
        assert tuple(row) == ("qwen-code", "/home/dev/shop", "qwen3-coder-plus", 200, 50, 1000)
        shown = messages(conn, JSON_SID)
        assert [(m.role, m.content) for m in shown] == [
            ("user", "fix the cart total"),
            ("assistant", "I will set it to zero."),
            ("assistant", "Done."),
        ]
        assert [m.thinking for m in shown] == [None, "Plan: read the file", None]
        calls = [c for m in shown for c in m.tool_calls]
        assert [(c.name, c.status, c.agent) for c in calls] == [("edit", "completed", "qwen-code")]
        assert conn.execute(
            "SELECT path, lines_added, lines_removed FROM agent_file_changes WHERE session_id = ?",
            (JSON_SID,),
        ).fetchall() == [("/home/dev/shop/cart.py", 1, 1)]
        # rewritten whole on the next message (as Qwen Code did): read again, nothing doubled
        doc = json.loads(source.read_text())
        doc["messages"].append(
            {"id": "m4", "timestamp": "2025-10-01T10:00:09Z", "type": "user", "content": "thanks"}
        )
        source.write_text(json.dumps(doc, indent=2))
        ingest(conn, tmp_path / ".qwen")
        assert [m.content for m in messages(conn, JSON_SID)] == [
            "fix the cart total",
            "I will set it to zero.",
            "Done.",
            "thanks",
        ]
        assert verify(conn).ok
        source.unlink()
        written = [f.written_to for f in restore_session(conn, JSON_SID, tmp_path / "back")]
        assert len(written) == 1 and written[0].endswith(source.name)
        assert Path(written[0]).read_bytes() == json.dumps(doc, indent=2).encode()
    finally:
        conn.close()


def raw_bytes(raws: list) -> bytes:
    return b"".join(bytes(r) + b"\n" * n for r, n in raws)


def test_a_json_era_qwen_chat_without_a_jsonl_session_of_its_folder_is_still_read(tmp_path):
    """Nothing but a JSONL session names a JSON-era chat's folder (its own folder is its hash):
    without one the chat is read all the same, its folder unknown."""
    qwen_json_chat(tmp_path, folder_named=False)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".qwen")
        row = conn.execute(
            "SELECT source, project_path FROM agent_sessions WHERE id = ?", (JSON_SID,)
        ).fetchone()
        assert tuple(row) == ("qwen-code", None)
        assert len(messages(conn, JSON_SID)) == 3
    finally:
        conn.close()


def test_a_json_era_qwen_chat_is_not_resumed_and_says_why(tmp_path):
    """`qwen --resume ID` looks for `<id>.jsonl` in the project's chats only: a JSON-era chat's
    resume is refused with the reason, while a JSONL session of the same home still resumes."""
    qwen_json_chat(tmp_path)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".qwen")
        with pytest.raises(ForkError, match="older JSON format cannot be resumed"):
            resume_plan(conn, JSON_SID)
        assert resume_plan(conn, SID).command == "cd /home/dev/shop && qwen --resume " + SID
    finally:
        conn.close()


def test_a_json_era_qwen_chat_keeps_its_folder_in_a_rebuild_after_its_sessions_are_gone(tmp_path):
    """A JSON-era chat's folder is named only by a JSONL session of the same project (its `cwd`,
    hashed to the chat's `tmp` folder): a replay (a schema upgrade's, `ingest --rebuild`) looked
    for those sessions on the disk, so once they were gone the chat came back with no folder. It
    reads them as the archive holds them."""
    import shutil

    from threadloom.core.ingest.ledger import rebuild_derived

    qwen_json_chat(tmp_path)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".qwen")
        folder = "SELECT project_path FROM agent_sessions WHERE id = ?"
        assert conn.execute(folder, (JSON_SID,)).fetchone() == ("/home/dev/shop",)
        shutil.rmtree(tmp_path / ".qwen")
        rebuild_derived(conn)
        assert conn.execute(folder, (JSON_SID,)).fetchone() == ("/home/dev/shop",)
    finally:
        conn.close()
