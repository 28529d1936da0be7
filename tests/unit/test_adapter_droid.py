"""Factory Droid's session logs (core/adapters/droid.py): read as Droid's, every record stored byte
for byte, calls joined to their results, a Task subagent's own session linked to its call, tokens
from the settings sidecar, edits, and its resume and fork commands."""

from __future__ import annotations

from threadloom.core.actions.fork import resume_plan
from threadloom.core.adapters import ADAPTERS
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.builders.droid import CHILD, SID, droid_sessions
from tests.support import ingest, run_printed, stored_bytes


def test_a_droid_session_is_read_whole_and_as_droid_s(tmp_path):
    source = droid_sessions(tmp_path)
    assert [name for name, a in ADAPTERS.items() if a.claims(source)] == ["factory-droid"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".factory")
        refresh_pending(conn)
        for path in source.parent.iterdir():
            assert stored_bytes(conn, path) == path.read_bytes(), path
        row = conn.execute(
            "SELECT id, source, title, project_path, model FROM agent_sessions WHERE is_subagent = 0"
        ).fetchone()
        assert row == (SID, "factory-droid", "Cart total fix", "/home/dev/shop", "glm-5.2")
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
        ]
        assert any(m.thinking == "look at cart.py" for m in shown)
        calls = {c.name: c.status for m in shown for c in m.tool_calls}
        assert calls == {"MultiEdit": "completed", "Task": "completed"}
        child = conn.execute(
            "SELECT id, parent_session_id, tool_call_id FROM agent_sessions WHERE is_subagent = 1"
        ).fetchone()
        assert child == (CHILD, SID, "call_task")
        assert conn.execute(
            "SELECT child_session_id FROM agent_tool_calls WHERE id = 'call_task'"
        ).fetchone() == (CHILD,)
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert tuple(tokens) == (200, 50, 1000)
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("/home/dev/shop/cart.py", 2, 2)
        ]
    finally:
        conn.close()


def test_a_droid_session_resumes_and_forks_with_its_own_commands(tmp_path, fake_agents, sandbox):
    droid_sessions(tmp_path)
    (fake_agents / "droid").write_text((fake_agents / "claude").read_text())
    (fake_agents / "droid").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".factory")
        plan = resume_plan(conn, SID)
        forked = resume_plan(conn, SID, fork_at_end=True)
    finally:
        conn.close()
    assert plan.command == "cd /home/dev/shop && droid --resume " + SID
    assert forked.command == "cd /home/dev/shop && droid --fork " + SID
    for command, flag in ((plan.command, "--resume"), (forked.command, "--fork")):
        assert run_printed(command.split(" && ", 1)[1], fake_agents, sandbox) == [
            ["droid", str(sandbox), flag, SID]
        ]
