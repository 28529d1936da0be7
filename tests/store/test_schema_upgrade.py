"""A database of an older schema: opening it only upgrades the tables; the replay of its stored
records into sessions, turns and tool calls happens where it can be shown and waited for (an
ingest's first phase, a command that reads, the TUI's worker), never inside `connect`."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from pathlib import Path

import pytest
from threadloom.core.ingest.pipeline import Phase, Progress, rebuild_pending, run_ingest
from threadloom.core.read import search
from threadloom.core.store import db, search_index
from threadloom.core.store.derived import unfinished

from tests.builders.claude import Transcript, tool_use
from tests.support import ingest

SID = "5e551011-0000-4000-8000-0000000000aa"
DERIVED = ("agent_sessions", "agent_turns", "agent_tool_calls", "agent_usage")


def archive(tmp_path: Path) -> Path:
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{SID}.jsonl", SID, cwd="/srv/app")
    t.user("find the flaky test")
    t.assistant(
        "Looking.",
        tools=[tool_use("tu_1", "Bash", command="pytest -x")],
        usage={"input_tokens": 7, "output_tokens": 3},
    )
    t.tool_result("tu_1", "1 failed: test_clock_skew")
    t.assistant("test_clock_skew depends on the wall clock.")
    t.user("fix it")
    t.assistant("Done.")
    t.write()
    return tmp_path / "projects"


def derived(conn: sqlite3.Connection) -> dict[str, list[tuple]]:
    """Every derived row but the time it was written."""
    out = {}
    for table in DERIVED:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[1] != "updated_at"]
        out[table] = sorted(conn.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall(), key=repr)
    out["entries"] = conn.execute(
        "SELECT id, session_id, seq, turn_id, dup_of FROM entries ORDER BY id"
    ).fetchall()
    return out


def aged(tmp_path: Path) -> tuple[Path, Path, dict[str, list[tuple]]]:
    """A database ingested at this version, then marked as written by the one before."""
    root = archive(tmp_path)
    path = tmp_path / "old.db"
    conn = db.connect(path)
    ingest(conn, root)
    fresh = derived(conn)
    assert fresh["agent_tool_calls"] and fresh["agent_turns"]
    conn.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION - 1}")
    conn.close()
    return root, path, fresh


def test_connect_upgrades_the_tables_without_replaying_and_the_next_ingest_rebuilds(tmp_path):
    root, path, fresh = aged(tmp_path)
    conn = db.connect(path)
    # opened at once: the version is current, the derived tables wait empty and say so
    assert db.user_version(conn) == db.SCHEMA_VERSION
    assert db.rebuild_due(conn) == db.SCHEMA_VERSION - 1
    assert all(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] == 0 for t in DERIVED)
    assert db.upgrade_due(path) == db.SCHEMA_VERSION - 1
    seen: list[Progress] = []
    report = run_ingest(conn, [root], include_defaults=False, progress=seen.append)
    assert not report.errors and report.files_read == 0  # nothing new: the rebuild alone
    phase = [p for p in seen if p.phase is Phase.REBUILDING]
    assert phase and phase[0].files_done == 0 and phase[-1].files_done == phase[-1].files_total == 1
    assert phase[-1].bytes_done == phase[-1].bytes_total > 0
    assert seen.index(phase[-1]) < len(seen) - 1  # before the files are looked at
    assert db.rebuild_due(conn) is None and db.upgrade_due(path) is None
    assert derived(conn) == fresh
    # the index was made again over the re-derived text, and ingest built it
    assert search_index.pending(conn) is None
    assert search.search(conn, "clock_skew").hits
    conn.close()


def test_rebuild_pending_does_the_replay_once(tmp_path):
    _, path, fresh = aged(tmp_path)
    conn = db.connect(path)
    steps: list[Progress] = []
    assert rebuild_pending(conn, steps.append)
    assert derived(conn) == fresh and {p.phase for p in steps} == {Phase.REBUILDING}
    # and finished whole, as any writer finishes: a command that upgraded an archive then said the
    # costs, stats and signals of every session were not computed yet, until the next ingest
    assert unfinished(conn) == 0
    assert (
        conn.execute("SELECT count(*) FROM agent_usage WHERE cost_usd IS NULL AND priced = 0").fetchone()[0]
        == 0
    )
    steps.clear()
    assert rebuild_pending(conn, steps.append) and not steps  # nothing was due the second time
    conn.close()


def test_a_cancelled_rebuild_changes_nothing_and_stays_due(tmp_path):
    root, path, fresh = aged(tmp_path)
    conn = db.connect(path)
    cancel = threading.Event()
    cancel.set()
    assert not rebuild_pending(conn, cancel=cancel)
    assert db.rebuild_due(conn) == db.SCHEMA_VERSION - 1
    assert conn.execute("SELECT count(*) FROM agent_sessions").fetchone()[0] == 0
    report = run_ingest(conn, [root], include_defaults=False, cancel=cancel)
    assert report.cancelled and db.rebuild_due(conn) is not None
    assert rebuild_pending(conn) and derived(conn) == fresh
    conn.close()


def test_a_rebuild_interrupted_after_the_upgrade_is_done_by_the_next_open(tmp_path):
    """The version alone would say the tables are current: the mark kept beside it says not."""
    _, path, fresh = aged(tmp_path)
    db.connect(path).close()  # upgraded, then the process ended before any rebuild
    assert db.stored_version(path) == db.SCHEMA_VERSION and db.upgrade_due(path) is not None
    conn = db.open_for_reading(path)  # not the read-only fast path: the rebuild writes
    assert db.rebuild_due(conn) is not None
    assert rebuild_pending(conn) and derived(conn) == fresh
    conn.close()
    reader = db.open_for_reading(path)  # current now: read-only as usual
    with pytest.raises(sqlite3.OperationalError):
        reader.execute("DELETE FROM ledger_meta")
    reader.close()


def test_a_read_only_database_waiting_for_its_rebuild_says_so(tmp_path):
    _, path, _ = aged(tmp_path)
    db.connect(path).close()
    os.chmod(path, 0o444)
    try:
        with pytest.raises(db.LedgerError, match="still to be rebuilt"):
            db.open_for_reading(path)
    finally:
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)


def test_open_for_reading_a_current_database_stays_read_only(tmp_path):
    root = archive(tmp_path)
    path = tmp_path / "t.db"
    conn = db.connect(path)
    ingest(conn, root)
    conn.close()
    assert db.upgrade_due(path) is None
    reader = db.open_for_reading(path)
    assert db.rebuild_due(reader) is None
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.execute("DELETE FROM ledger_meta")
    reader.close()


def test_a_new_database_has_nothing_to_rebuild(tmp_path):
    conn = db.connect(tmp_path / "new.db")
    assert db.rebuild_due(conn) is None and db.upgrade_due(tmp_path / "new.db") is None
    assert rebuild_pending(conn)
    conn.close()


def test_an_older_archive_shows_what_the_adapters_read_now_once_replayed(tmp_path):
    """A bump replays every stored record through today's adapters: what a record is, not only its
    text, is what they say now (a Claude Code record they came to know, a Copilot CLI workspace they
    now read a title from), as a fresh ingest of the same files gives."""
    from tests.builders.copilot import SID as COPILOT
    from tests.builders.copilot import copilot_session

    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{SID}.jsonl", SID, cwd="/srv/app")
    t.raw({"type": "teleported-from", "remoteSessionId": "session_01", "branch": "claude/fix"})
    t.user("find the flaky test")
    t.write()
    copilot_session(tmp_path)
    path = tmp_path / "old.db"
    conn = db.connect(path)
    ingest(conn, tmp_path / "projects", tmp_path / ".copilot")
    fresh = derived(conn)
    what = "SELECT id, entry_type, subtype, known, content FROM entries ORDER BY id"
    read_now = conn.execute(what).fetchall()
    # as the last schema's adapters stored them: the record unknown, the workspace unread
    conn.execute("UPDATE entries SET known = 0 WHERE entry_type = 'teleported-from'")
    conn.execute("UPDATE entries SET entry_type = 'side-file', content = NULL WHERE subtype = 'workspace'")
    conn.execute(
        "UPDATE agent_sessions SET title = 'fix the cart total', title_source = 'prompt', git_branch = NULL"
    )
    conn.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION - 1}")
    conn.close()
    conn = db.connect(path)
    try:
        assert rebuild_pending(conn)
        assert conn.execute(what).fetchall() == read_now
        assert derived(conn) == fresh
        titles = dict(conn.execute("SELECT id, title FROM agent_sessions WHERE id IN (?, ?)", (SID, COPILOT)))
        assert titles[COPILOT] == "Cart total"
    finally:
        conn.close()


def test_marks_on_messages_follow_them_when_a_rebuild_numbers_them_anew(tmp_path, monkeypatch):
    """A newer reader may take a record for a message no more (Codex's developer messages) or
    newly (a turn it stopped): the rebuild numbers the session's messages anew, and the tags and
    notes on `SESSION#n` stayed on n, another message now. Each goes back on its message."""
    from threadloom.core.adapters.claude import ClaudeAdapter
    from threadloom.core.insight import memory

    read = ClaudeAdapter.normalize

    def older(self, rec, ctx):  # the older reader: "Looking." was no message of its own
        out = read(self, rec, ctx)
        if out.content == "Looking.":
            out.is_message = False
        return out

    root = archive(tmp_path)
    path = tmp_path / "old.db"
    conn = db.connect(path)
    with monkeypatch.context() as m:
        m.setattr(ClaudeAdapter, "normalize", older)
        ingest(conn, root)

    def seq_of(text: str) -> int:
        return conn.execute(
            "SELECT seq FROM entries WHERE content = ? AND seq IS NOT NULL", (text,)
        ).fetchone()[0]

    answer, prompt = "test_clock_skew depends on the wall clock.", "fix it"
    places = {"cause": ("message", seq_of(answer)), "fix": ("turn", seq_of(prompt))}
    conn.close()
    with memory.writing(path) as w:
        for value, (kind, seq) in places.items():
            memory.add_mark(w, "tag", memory.place_target(w, kind, SID, seq), value, "me")
    conn = db.connect(path)
    conn.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION - 1}")
    conn.close()
    conn = db.connect(path)
    assert rebuild_pending(conn)
    assert seq_of(answer) == seq_of("Looking.") + 2  # numbered anew: one message more before it
    where = {m.value: m.target_id for m in memory.marks(conn)}
    assert where == {"cause": f"{SID}#{seq_of(answer)}", "fix": f"{SID}#{seq_of(prompt)}"}
    conn.close()


def test_files_an_older_version_passed_over_are_read_after_the_upgrade(tmp_path):
    """A folder unchanged since its last walk offers only the files read before; a newer version
    that reads more (an agent's side files, a format it did not know) walks every root once more
    after an upgrade, so what the older one passed over, still in an unchanged folder, is kept."""
    root = archive(tmp_path)
    other = "5e551011-0000-4000-8000-0000000000bb"
    t = Transcript(root / "-srv-app" / f"{other}.jsonl", other, cwd="/srv/app")
    t.user("a session the older version did not read")
    t.assistant("Read now.")
    t.write()
    path = tmp_path / "old.db"
    conn = db.connect(path)
    ingest(conn, root)
    assert conn.execute("SELECT count(*) FROM ledger_meta WHERE key LIKE 'roots:%'").fetchone()[0] >= 1
    # as an older version left it: the file never read (its folder's snapshot as taken then)
    gone = conn.execute("SELECT id FROM source_files WHERE path LIKE ?", (f"%{other}.jsonl",)).fetchone()[0]
    conn.execute("DELETE FROM entries WHERE source_file_id = ?", (gone,))
    conn.execute("DELETE FROM source_files WHERE id = ?", (gone,))
    conn.commit()
    report = run_ingest(conn, [root], include_defaults=False)
    assert report.files_read == 0  # unchanged folders: not offered again by this version
    conn.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION - 1}")
    conn.close()
    conn = db.connect(path)
    report = run_ingest(conn, [root], include_defaults=False)
    assert not report.errors and report.files_read == 1
    assert conn.execute("SELECT message_count FROM agent_sessions WHERE id = ?", (other,)).fetchone() == (2,)


def test_an_upgrade_marks_what_an_undo_an_older_version_read_took_back(tmp_path, monkeypatch):
    """A Codex rollback of every turn, read by a version that kept it as no undo (no message named as
    the first it took back): the upgrade's replay reads it again, and what it took back is withdrawn."""
    from threadloom.core.read.browse import withdrawn_seqs

    from tests.support import THREAD, Rollout

    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    r = Rollout(home, THREAD)
    r.meta()
    r.prompt("first")
    r.say("one")
    r.add("event_msg", {"type": "thread_rolled_back", "num_turns": 1})
    r.prompt("again")
    r.say("two")
    r.write()
    path = tmp_path / "old.db"
    conn = db.connect(path)
    ingest(conn, home)
    gone = withdrawn_seqs(conn, THREAD)
    assert gone
    conn.execute("UPDATE entries SET ref_uuid = NULL, subtype = 'thread_rolled_back' WHERE subtype = 'undo'")
    conn.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION - 1}")
    conn.commit()
    assert withdrawn_seqs(conn, THREAD) == frozenset()  # as the older version left it
    conn.close()
    conn = db.connect(path)
    ingest(conn, home)
    assert withdrawn_seqs(conn, THREAD) == gone
