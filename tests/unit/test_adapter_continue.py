"""Continue's sessions (core/adapters/continue_dev.py): a session file and sessions.json read as one
Continue session, every byte of both stored, its folder from the IDE's file:// URI, calls joined to
the results its toolCallStates (or the CLI's tool messages) hold, tokens per message or per session,
edits, and its command."""

from __future__ import annotations

import json

from threadloom.core.actions.fork import resume_plan
from threadloom.core.adapters import ADAPTERS
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.builders.continue_dev import (
    CLI_SID,
    CWD,
    SID,
    WIRE_SID,
    continue_cli_wire_usage,
    continue_sessions,
)
from tests.support import ingest, run_printed, stored_bytes


def test_continue_sessions_are_read_whole_and_as_continue_s(tmp_path):
    folder = continue_sessions(tmp_path)
    for name in (f"{SID}.json", "sessions.json"):
        assert [a for a, adapter in ADAPTERS.items() if adapter.claims(folder / name)] == ["continue"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".continue")
        refresh_pending(conn)
        for path in sorted(folder.iterdir()):
            assert stored_bytes(conn, path) == path.read_bytes()
        row = conn.execute(
            "SELECT source, project_path, created_at, title, model FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert row == ("continue", CWD, 1781810000000, "Fix the cart total", "GPT-5")
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content and m.role in ("user", "assistant")] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
        ]
        assert any(m.thinking == "look at cart.py" for m in shown)
        assert {c.name: c.status for m in shown for c in m.tool_calls} == {
            "single_find_and_replace": "completed"
        }
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert tuple(tokens) == (200, 40, 1000)  # the message's, not the session's totals again
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("cart.py", 1, 1)
        ]
        cli = messages(conn, CLI_SID)
        assert {c.name: c.status for m in cli for c in m.tool_calls} == {"Bash": "completed"}
        row = conn.execute(
            "SELECT project_path, created_at, input_tokens, cache_creation_tokens, cache_read_tokens "
            "FROM agent_sessions WHERE id = ?",
            (CLI_SID,),
        ).fetchone()
        assert tuple(row) == ("/home/dev/api", 1781820000000, 300, 50, 100)
    finally:
        conn.close()


def test_a_continue_session_opens_with_its_own_command(tmp_path, fake_agents, sandbox):
    continue_sessions(tmp_path)
    (fake_agents / "cn").write_text((fake_agents / "claude").read_text())
    (fake_agents / "cn").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".continue")
        plan = resume_plan(conn, SID)
    finally:
        conn.close()
    assert plan.command == f"cd {CWD} && cn --fork {SID}"
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["cn", str(sandbox), "--fork", SID]
    ]


def test_the_model_of_a_session_saved_without_chat_model_title(tmp_path):
    """Sessions saved without `chatModelTitle` name their model only in each reply's prompt log:
    the session and its replies had none (real sessions of 2025)."""
    folder = tmp_path / ".continue" / "sessions"
    folder.mkdir(parents=True)
    sid = "5d62d5ca-b7c8-48a9-864b-e5ad08cbacc4"
    log = {"modelTitle": "Qwen3 235b", "completionOptions": {"model": "qwen/qwen3-235b-a22b"}}
    by_id = {"completion": "Use a <button>.", "completionOptions": {"model": "qwen/qwen3-235b-a22b"}}
    history = [
        {"message": {"role": "user", "content": "How do I fix it?"}, "contextItems": []},
        {
            "message": {"role": "assistant", "content": "Use a <button>."},
            "contextItems": [],
            "promptLogs": [{"prompt": "How do I fix it?", "completion": "Use a <button>.", **log}],
        },
        {"message": {"role": "user", "content": "And the label?"}, "contextItems": []},
        {
            "message": {"role": "assistant", "content": "aria-label."},
            "contextItems": [],
            "promptLogs": [by_id],
        },
    ]
    session = {"sessionId": sid, "title": "Fix a11y warning", "workspaceDirectory": CWD, "history": history}
    (folder / f"{sid}.json").write_text(json.dumps(session, indent=2))
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".continue")
        model = conn.execute("SELECT model FROM agent_sessions WHERE id = ?", (sid,)).fetchone()[0]
        replies = [m.model for m in messages(conn, sid) if m.role == "assistant"]
    finally:
        conn.close()
    assert model == "qwen/qwen3-235b-a22b"  # the latest reply's
    assert replies == ["Qwen3 235b", "qwen/qwen3-235b-a22b"]


def test_replies_keeping_the_provider_s_usage_are_counted(tmp_path):
    """`cn` of 2026 keeps each reply's usage as the provider sent it (prompt_tokens, completion_tokens,
    its model): a real session of 7.3 M tokens and $7.34 read 0 tokens, no model and no cost."""
    continue_cli_wire_usage(tmp_path)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".continue")
        row = conn.execute(
            "SELECT input_tokens, output_tokens, model FROM agent_sessions WHERE id = ?", (WIRE_SID,)
        ).fetchone()
        replies = [m.model for m in messages(conn, WIRE_SID) if m.role == "assistant"]
    finally:
        conn.close()
    assert tuple(row) == (4500, 45, "gemini-2.5-pro")  # the replies', not the totals again
    assert replies == ["gemini-2.5-pro", "gemini-2.5-pro"]
