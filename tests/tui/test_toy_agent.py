"""An agent added as its module and one registry line is in every screen: read by ingest, listed,
shown in the viewer (its own edit tool drawn as a diff), found by search, resumed and forked by
its own command, exported, counted in the stats and undone, with nothing else changed: each of
those asks its adapter (tests/toy_agent.py) what its tools are and what its edits changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from threadloom.core.actions.export import export_session
from threadloom.core.actions.fork import plan_fork, resume_plan
from threadloom.core.actions.undo import plan_undo
from threadloom.core.adapters import ADAPTERS
from threadloom.core.cli import main
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import get_session, messages
from threadloom.core.store import db
from threadloom.tui.app import ThreadloomApp
from threadloom.tui.messages import MessageView
from threadloom.tui.render import call_body, call_line

from tests.conftest import ingest
from tests.support import run_printed
from tests.toy_agent import ToyAdapter, write_toy_session
from tests.tui_support import fixed_now, until


@pytest.fixture
def toy_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setitem(ADAPTERS, "toy", ToyAdapter())  # the registry line
    work = tmp_path / "work"
    work.mkdir()
    source = write_toy_session(tmp_path / "toylogs" / "proj", "toy-42", str(work))
    dbfile = tmp_path / "ledger.db"
    conn = db.connect(dbfile)
    try:
        ingest(conn, tmp_path / "toylogs")
        refresh_pending(conn)
    finally:
        conn.close()
    return dbfile, source


def test_ingest_keeps_every_record_and_joins_its_calls(toy_db):
    dbfile, source = toy_db
    conn = db.connect(dbfile, readonly=True)
    try:
        raws = conn.execute("SELECT raw, newline FROM entries ORDER BY byte_offset").fetchall()
        assert b"".join(bytes(r) + b"\n" * n for r, n in raws) == source.read_bytes()
        calls = conn.execute(
            "SELECT tool_name, status FROM agent_tool_calls WHERE session_id = 'toy-42' ORDER BY tool_number"
        ).fetchall()
        assert calls == [("toy.edit", "completed"), ("toy.run", "completed")]
        # the stats count its edit, read by its own adapter (`file_edits`)
        changes = conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall()
        assert changes == [(str(source.parents[2] / "work" / "app.py"), 1, 1)]
    finally:
        conn.close()


def test_listed_searched_resumed_and_exported(toy_db, capsys, fake_agents, sandbox):
    dbfile, _ = toy_db
    assert main(["sessions", "--db", str(dbfile)]) == 0
    listed = capsys.readouterr().out
    assert "toy" in listed and "make y three" in listed

    assert main(["search", "--db", str(dbfile), "toyneedle"]) == 0
    assert "toy-42" in capsys.readouterr().out

    (fake_agents / "toyagent").write_text((fake_agents / "claude").read_text())
    (fake_agents / "toyagent").chmod(0o755)
    conn = db.connect(dbfile, readonly=True)
    try:
        plan = resume_plan(conn, "toy-42")
        ran = run_printed(plan.command, fake_agents, sandbox)
        assert ran == [["toyagent", str(dbfile.parent / "work"), "--continue", "toy-42"]]
        entry = conn.execute("SELECT id FROM entries WHERE content = 'y is three now'").fetchone()[0]
        assert plan_fork(conn, str(entry)).command == plan.command  # its fork style: the whole session

        session = get_session(conn, "toy-42")
        assert session is not None
        html = export_session(conn, session, "html").data.decode()
        markdown = export_session(conn, session, "md").data.decode()
        for page in (html, markdown):
            assert "-y = 2" in page and "+y = 3" in page  # its edit as a diff, not as JSON
            assert '"was"' not in page

        undo = plan_undo(conn, "toy-42", conn.execute("SELECT min(id) FROM entries").fetchone()[0])
        assert [(f.path, f.revertible) for f in undo.files] == [("app.py", True)]
        assert "-y = 3\n+y = 2" in undo.patch
    finally:
        conn.close()


async def test_the_viewer_draws_its_tools_as_their_adapter_says(toy_db):
    dbfile, _ = toy_db
    conn = db.connect(dbfile, readonly=True)
    try:
        calls = [c for m in messages(conn, "toy-42") for c in m.tool_calls]
    finally:
        conn.close()
    assert [c.agent for c in calls] == ["toy", "toy"]
    console = Console(width=100, record=True, color_system=None)
    console.print(call_body(calls[0], None))
    drawn = console.export_text()
    assert "app.py" in drawn and "-y = 2" in drawn and "+y = 3" in drawn and '"was"' not in drawn
    console.print(call_body(calls[1], None))
    assert "pytest -q" in console.export_text() and "command" not in console.export_text()
    assert "toy.run" in call_line(calls[1], False).plain

    app = ThreadloomApp(db_path=dbfile, ingest=False, now=fixed_now, open_session="toy-42")
    async with app.run_test(size=(120, 36)) as pilot:
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == "toy-42" and view.seqs)
