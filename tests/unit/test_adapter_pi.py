"""pi's session logs (core/adapters/pi.py): read as pi's, every record stored byte for byte, the
entry tree (a branch made with /tree) kept, calls joined to their results, tokens and recorded cost,
the session's name as its title, edits, a fork linked to its source, and its resume command."""

from __future__ import annotations

import json

from threadloom.core.actions.fork import resume_plan
from threadloom.core.adapters import ADAPTERS
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.builders.pi import COMPACTED, FORK, SID, pi_compacted_early, pi_sessions
from tests.support import ingest, run_printed, stored_bytes


def test_a_pi_session_is_read_whole_and_as_pi_s(tmp_path):
    source = pi_sessions(tmp_path)
    assert [name for name, a in ADAPTERS.items() if a.claims(source)] == ["pi"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".pi")
        refresh_pending(conn)
        assert stored_bytes(conn, source) == source.read_bytes()
        row = conn.execute(
            "SELECT source, title, project_path, model FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert row == ("pi", "Cart total", "/home/dev/shop", "claude-sonnet-4-5")
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content and m.role in ("user", "assistant")][:4] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
            ("user", "use Decimal instead"),
        ]
        assert any(m.thinking == "look at cart.py" for m in shown)
        calls = {c.name: c.status for m in shown for c in m.tool_calls}
        assert calls == {"edit": "completed", "bash": "completed"}
        # two prompts, the second on a branch from the first: two turns, the second's parent the first's
        turns = conn.execute("SELECT count(*) FROM agent_turns WHERE session_id = ?", (SID,)).fetchone()[0]
        assert turns == 2
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert tuple(tokens) == (200, 40, 1000)
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("cart.py", 1, 1)
        ]
        assert conn.execute(
            "SELECT forked_from_session_id FROM agent_sessions WHERE id = ?", (FORK,)
        ).fetchone() == (SID,)
    finally:
        conn.close()


def test_a_pi_session_resumes_with_its_own_command(tmp_path, fake_agents, sandbox):
    pi_sessions(tmp_path)
    (fake_agents / "pi").write_text((fake_agents / "claude").read_text())
    (fake_agents / "pi").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".pi")
        plan = resume_plan(conn, SID)
    finally:
        conn.close()
    assert plan.command == "cd /home/dev/shop && pi --session " + SID
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["pi", str(sandbox), "--session", SID]
    ]


def test_pi_agent_dir_is_honoured(tmp_path, monkeypatch):
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert ADAPTERS["pi"].default_roots() == [tmp_path / "agent" / "sessions"]


def test_command_codes_transcripts_are_not_taken_for_pi_s(tmp_path):
    """Command Code writes pi's session header in `~/.commandcode/projects/`: left unread, and said to
    be Command Code's where unclaimed files are listed."""
    from threadloom.core.adapters import stranger

    folder = tmp_path / ".commandcode" / "projects" / "home-dev-shop"
    folder.mkdir(parents=True)
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-05-18T10:00:00Z", "cwd": "/w"}
    path = folder / "s1.jsonl"
    path.write_text(json.dumps(header) + "\n")
    assert [name for name, a in ADAPTERS.items() if a.claims(path)] == []
    assert "Command Code" in (stranger(path) or "")


def test_a_pi_session_compacted_early_is_pi_s_not_a_codex_rollout(tmp_path):
    """A pi session compacted in its first lines has an entry shaped like a Codex compaction item
    (`type: compaction` with a `summary`): still pi's, with its prompts."""
    source = pi_compacted_early(tmp_path)
    assert [name for name, a in ADAPTERS.items() if a.claims(source)] == ["pi"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".pi")
        assert conn.execute("SELECT id, source FROM agent_sessions").fetchall() == [(COMPACTED, "pi")]
        prompts = [m.content for m in messages(conn, COMPACTED) if m.role == "user"]
        assert prompts == ["summarize notes.md", "and the first?"]
    finally:
        conn.close()


def test_a_pi_compaction_is_drawn_where_it_happened(tmp_path):
    """pi writes a compaction as one `compaction` entry holding the summary the model goes on from:
    it was counted but drawn nowhere, the prompt after it read as if the whole conversation were
    still in context. It is a compaction line there (as other agents' are), and a new segment."""
    import io

    from rich.console import Console
    from threadloom.core.present.render import render_session
    from threadloom.core.read.browse import compaction_segments
    from threadloom.core.read.query import get_session

    pi_compacted_early(tmp_path)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".pi")
        session = get_session(conn, COMPACTED)
        assert session is not None
        out = io.StringIO()
        render_session(Console(file=out, width=120, highlight=False), conn, session)
        segments = compaction_segments(conn, COMPACTED, session.message_count)
    finally:
        conn.close()
    lines = [line.strip() for line in out.getvalue().splitlines() if line.strip()]
    line = lines.index("── ✂ conversation compacted: notes.md lists three errands")
    assert lines.index("It lists three errands.") < line < lines.index("and the first?")
    assert session.compaction_count == 1 and len(segments) == 2


def test_a_pi_compaction_s_summary_is_exported_whole(tmp_path):
    """The summary a pi compaction holds is its only copy (the messages it replaced are gone from
    the model's context): an export printed it as a system line cut at 300 characters. Both
    exports hold it whole, as the summary of a compaction, as Claude Code's are."""
    from threadloom.core.actions.export import export_session
    from threadloom.core.read.query import get_session

    path = pi_compacted_early(tmp_path)
    summary = "notes.md lists three errands: " + "; ".join(f"errand {n} is THE-{n}" for n in range(40))
    path.write_text(path.read_text().replace("notes.md lists three errands", summary))
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".pi")
        session = get_session(conn, COMPACTED)
        assert session is not None
        markdown = export_session(conn, session, "md").data.decode()
        page = export_session(conn, session, "html").data.decode()
    finally:
        conn.close()
    assert "THE-39" in markdown and "<details><summary>≡ Summary of the earlier conversation" in markdown
    assert "THE-39" in page and '<details class="summary">' in page
