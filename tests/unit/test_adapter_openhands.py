"""OpenHands' conversation folders (core/adapters/openhands.py): base_state.json and every event file
read as one OpenHands session, each stored byte for byte, calls joined to their results (a rejected
and an errored one too), the folder, model and token totals from the state, edits from
`file_editor`, and its resume command."""

from __future__ import annotations

import os

from threadloom.core.actions.fork import resume_plan
from threadloom.core.adapters import ADAPTERS
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.builders.openhands import APP_CWD, APP_SID, CWD, SID, openhands_app_session, openhands_conversation
from tests.support import ingest, run_printed, stored_bytes


def test_an_openhands_conversation_is_read_whole_and_as_openhands(tmp_path):
    folder = openhands_conversation(tmp_path)
    files = [folder / "base_state.json", *sorted((folder / "events").glob("event-*.json"))]
    for path in files:
        assert [a for a, adapter in ADAPTERS.items() if adapter.claims(path)] == ["openhands"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".openhands")
        refresh_pending(conn)
        for path in files:
            assert stored_bytes(conn, path) == path.read_bytes()
        assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == len(files)
        row = conn.execute("SELECT source, project_path FROM agent_sessions WHERE id = ?", (SID,)).fetchone()
        assert row == ("openhands", CWD)
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content and m.role in ("user", "assistant")] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
        ]
        calls = {c.name + ":" + c.id: c.status for m in shown for c in m.tool_calls}
        assert calls == {
            "file_editor:toolu_1": "completed",
            "terminal:toolu_2": "rejected",
            "file_editor:toolu_3": "failed",
        }
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert tuple(tokens) == (1200, 80, 900)
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            (f"{CWD}/cart.py", 1, 1)
        ]
    finally:
        conn.close()


def test_an_openhands_conversation_resumes_with_its_own_command(tmp_path, fake_agents, sandbox):
    openhands_conversation(tmp_path)
    (fake_agents / "openhands").write_text((fake_agents / "claude").read_text())
    (fake_agents / "openhands").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".openhands")
        plan = resume_plan(conn, SID)
    finally:
        conn.close()
    assert plan.command == f"cd {CWD} && openhands --resume {SID}"
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["openhands", str(sandbox), "--resume", SID]
    ]


def test_a_conversation_of_the_app_s_file_store_is_read(tmp_path):
    """The 0.x app (its web GUI, through 2025) kept conversations as `sessions/<id>/metadata.json` and
    `events/<n>.json`: none was read (a real file store of 16 conversations, 2,472 files, was all
    'not a session document'). Its title, prompts, replies, calls joined to their results by the
    action's id, an error it met, its tokens and the edits are read as OpenHands'."""
    folder = openhands_app_session(tmp_path)
    files = [folder / "metadata.json", *sorted((folder / "events").glob("*.json"))]
    for path in files:
        assert [a for a, adapter in ADAPTERS.items() if adapter.claims(path)] == ["openhands"], path
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".openhands")
        refresh_pending(conn)
        for path in files:
            assert stored_bytes(conn, path) == path.read_bytes()
        row = conn.execute(
            "SELECT source, title, project_path, model, input_tokens, output_tokens FROM agent_sessions "
            "WHERE id = ?",
            (APP_SID,),
        ).fetchone()
        assert tuple(row) == ("openhands", "Cart total fix", APP_CWD, "deepseek/deepseek-v3.2-exp", 5000, 300)
        shown = messages(conn, APP_SID)
        assert [(m.role, m.content) for m in shown if m.content] == [
            ("user", "fix the cart total"),
            ("system", "Missing required parameters for function 'execute_bash'"),
            ("assistant", "Running the tests first."),
            ("assistant", "Fixed the total."),
        ]
        assert [(c.name, c.status) for m in shown for c in m.tool_calls] == [
            ("execute_bash", "failed"),
            ("str_replace_editor", "completed"),
        ]
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            (f"{APP_CWD}/cart.py", 1, 1)
        ]
    finally:
        conn.close()


def test_a_conversation_of_the_app_is_not_resumed_with_a_command_that_cannot_find_it(tmp_path, monkeypatch):
    """`openhands --resume ID` looks among the CLI's own conversations; one the 0.x app kept in its
    file store's `sessions/` was printed that command all the same, which finds nothing. It is
    refused, saying where it opens; one the CLI has is resumed as before."""
    import pytest
    from threadloom.core.adapters.base import ForkError

    monkeypatch.setenv("OPENHANDS_PERSISTENCE_DIR", str(tmp_path / ".openhands"))
    openhands_app_session(tmp_path)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".openhands")
        with pytest.raises(ForkError, match="OpenHands app"):
            resume_plan(conn, APP_SID)
        (tmp_path / ".openhands" / "conversations" / APP_SID).mkdir(parents=True)  # the CLI's too
        assert resume_plan(conn, APP_SID).command.endswith(f"openhands --resume {APP_SID}")
    finally:
        conn.close()


def test_an_event_file_that_says_nothing_of_itself_is_kept_with_its_conversation(tmp_path):
    """An event file of the app's that is empty, cut short or a list failed the look at its head and
    was listed as a file no reader takes: never archived, lost with the conversation. In a folder
    whose metadata.json is the app's it is the conversation's, kept byte for byte; elsewhere not."""
    folder = openhands_app_session(tmp_path)
    odd = {"900.json": b"", "901.json": b'{"id": 901, "timest', "902.json": b"[1, 2]"}
    for name, data in odd.items():
        (folder / "events" / name).write_bytes(data)
        os.utime(folder / "events" / name, (1_700_000_000, 1_700_000_000))  # no writer left to finish it
    stray = tmp_path / "elsewhere" / "events"
    stray.mkdir(parents=True)
    (stray / "7.json").write_bytes(b"[1, 2]")
    adapter = ADAPTERS["openhands"]
    assert all(adapter.claims(folder / "events" / name) for name in odd)
    assert not adapter.claims(stray / "7.json")
    from threadloom.core.adapters.openhands import app_event_index

    assert app_event_index(folder / "events" / "12.json") == 12
    assert app_event_index(folder / "events" / "\u0663.json") is None  # an Arabic-Indic three: no event name
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".openhands")
        for name, data in odd.items():
            assert stored_bytes(conn, folder / "events" / name) == data, name
        assert messages(conn, APP_SID)  # the conversation read as before
    finally:
        conn.close()


def test_every_file_of_an_app_conversation_s_folder_is_kept_with_it(tmp_path):
    """The app's folder holds more than its events: `event_cache/<n>.json`, `agent_state.pkl`,
    `conversation_stats.pkl`. They were never archived (the cache listed as unread, the pickles not
    even that), nor was a folder whose metadata.json is no JSON object (its events that said nothing
    of themselves with it). Each is kept byte for byte with its conversation, and written back with it."""
    from pathlib import Path

    from threadloom.core.actions.restore import restore_session
    from threadloom.core.read.archive import verify
    from threadloom.core.read.side_files import side_files

    folder = openhands_app_session(tmp_path)
    aside = {
        "agent_state.pkl": b"\x80\x04\x95\x10\x00state",
        "conversation_stats.pkl": b"\x80\x04\x95\x10\x00stats",
        "event_cache/0-25.json": (folder / "event_cache" / "0-25.json").read_bytes(),
        "notes/later.txt": b"what a later release put here\n",
    }
    for name, data in aside.items():
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_bytes(data)
    odd_sid = "0" * 31 + "1"
    odd = tmp_path / ".openhands" / "sessions" / odd_sid
    (odd / "events").mkdir(parents=True)
    odd_files = {"metadata.json": b"[1, 2]", "events/0.json": b"", "agent_state.pkl": b"\x80\x04."}
    for name, data in odd_files.items():
        (odd / name).write_bytes(data)
        os.utime(odd / name, (1_700_000_000, 1_700_000_000))  # no writer left to finish it
    conn = db.connect(tmp_path / "ledger.db")
    try:
        report = ingest(conn, tmp_path / ".openhands")
        assert report.unclaimed == []
        for name, data in aside.items():
            assert stored_bytes(conn, folder / name) == data, name
        for name, data in odd_files.items():
            assert stored_bytes(conn, odd / name) == data, name
        assert sorted((Path(f.path).name, f.what) for f in side_files(conn, APP_SID)) == [
            ("0-25.json", "event-cache"),
            ("agent_state.pkl", "agent-state"),
            ("conversation_stats.pkl", "conversation-stats"),
            ("later.txt", "file"),
        ]
        assert [(m.role, m.content) for m in messages(conn, APP_SID) if m.content][0] == (
            "user",
            "fix the cart total",
        )
        assert verify(conn).ok
        restored = restore_session(conn, APP_SID, tmp_path / "back")
        back = tmp_path / "back" / APP_SID
        written = {
            Path(f.written_to).relative_to(back).as_posix(): Path(f.written_to).read_bytes() for f in restored
        }
        assert {name: written.get(name) for name in aside} == aside
    finally:
        conn.close()
