"""A first load into an empty ledger is written without a journal; it must end exactly like a
journaled load, undo a failing file, and never leave a half-written database behind."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from threadloom.core.ingest import pipeline as ingest_module
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.store import db

from tests.support import archive

TABLES = (
    "SELECT id, source_file_id, byte_offset, raw, session_id, seq, turn_id, dup_of, content FROM entries ORDER BY id",
    "SELECT id, message_count, turn_count, title, first_prompt, tool_call_count FROM agent_sessions ORDER BY id",
    "SELECT id, session_id, parent_turn_id, sequence FROM agent_turns ORDER BY id",
    "SELECT path, size, bytes_ingested, lines_ingested, status FROM source_files ORDER BY path",
)


def test_first_load_without_journal_equals_a_journaled_load(tmp_path):
    projects = archive(tmp_path)
    fast = db.connect(tmp_path / "fast.db")
    journal_modes: list[str] = []
    run_ingest(
        fast,
        [projects],
        include_defaults=False,
        progress=lambda p: journal_modes.append(fast.execute("PRAGMA journal_mode").fetchone()[0]),
    )
    slow = db.connect(tmp_path / "slow.db")
    reader = sqlite3.connect(tmp_path / "slow.db")  # a second connection keeps the journal on
    reader.execute("SELECT 1").fetchone()
    run_ingest(slow, [projects], include_defaults=False)
    assert "off" in journal_modes  # the load itself ran without a journal
    assert fast.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert slow.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert not Path(str(tmp_path / "fast.db") + db.FIRST_LOAD_SUFFIX).exists()
    for query in TABLES:
        assert fast.execute(query).fetchall() == slow.execute(query).fetchall(), query
    assert fast.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_file_failing_half_way_through_a_first_load_is_undone(tmp_path, monkeypatch):
    projects = archive(tmp_path)
    bad = sorted(projects.glob("*/*.jsonl"))[1]
    real = ingest_module.normalized
    seen = {"n": 0}

    # a record that fails is stored raw (see test_zero_loss); a failure outside that net still fails its file
    def flaky(adapter, rec, ctx):
        if ctx.path == bad:
            seen["n"] += 1
            if seen["n"] == 9:  # after two chunks of this file were written
                raise RuntimeError("ingest bug")
        return real(adapter, rec, ctx)

    monkeypatch.setattr(ingest_module, "normalized", flaky)
    monkeypatch.setattr("threadloom.core.ingest.reading.ROWS_PER_CHUNK", 4)
    conn = db.connect(tmp_path / "ledger.db")
    report = run_ingest(conn, [projects], include_defaults=False)
    assert len(report.errors) == 1 and "ingest bug" in report.errors[0]
    status = dict(conn.execute("SELECT path, status FROM source_files"))
    assert status[str(bad)] == "unread" and list(status.values()).count("ok") == 3
    # what it wrote half-way undone, then its bytes kept (each record unread): once, not twice
    bad_rows = (
        "SELECT count(*), sum(e.known) FROM entries e JOIN source_files f ON f.id = e.source_file_id "
        "WHERE f.path = ?"
    )
    assert conn.execute(bad_rows, (str(bad),)).fetchone() == (12, 0)
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 4 * 12
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    monkeypatch.setattr(ingest_module, "normalized", real)
    assert not run_ingest(conn, [projects], include_defaults=False).errors  # read again whole
    assert conn.execute(bad_rows, (str(bad),)).fetchone() == (12, 12)  # the same rows, read now
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 4 * 12


def die_mid_first_load(path: Path, projects: Path) -> subprocess.CompletedProcess:
    """A first load of `projects` into `path`, killed after two files (no cleanup runs; exit 9)."""
    code = (
        "import os, sys\n"
        "from threadloom.core.store import db\nfrom threadloom.core.ingest import pipeline as ingest\n"
        "conn = db.connect(sys.argv[2])\n"
        "def die(p):\n"
        "    if p.files_done == 2: os._exit(9)\n"
        "ingest.run_ingest(conn, [sys.argv[3]], include_defaults=False, progress=die)\n"
    )
    root = Path(__file__).resolve().parents[2]
    return subprocess.run([sys.executable, "-c", code, str(root), str(path), str(projects)], timeout=60)


@pytest.mark.parametrize("folder", ["plain", "what? #1 100%25 done"])  # a URI's characters in its path
def test_a_first_load_that_died_is_started_afresh_keeping_remembered_folders(tmp_path, monkeypatch, folder):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # default locations: nothing there
    projects = archive(tmp_path)
    (tmp_path / folder).mkdir()
    path = tmp_path / folder / "ledger.db"
    proc = die_mid_first_load(path, projects)
    assert proc.returncode == 9
    assert Path(str(path) + db.FIRST_LOAD_SUFFIX).exists()
    conn = db.connect(path)  # finds the marker of a dead process: a fresh database
    assert not Path(str(path) + db.FIRST_LOAD_SUFFIX).exists()
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 0
    assert [r[0] for r in conn.execute("SELECT path FROM source_roots")] == [str(projects)]
    report = run_ingest(conn, [], include_defaults=True)  # the remembered folder is read again
    assert report.records_added == 48 and conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_threadloom_ingest_after_a_first_load_that_died_starts_afresh(tmp_path, monkeypatch):
    """`threadloom ingest` takes the writer lock before it opens the database, so the recovery of a
    dead load's marker saw the lock held (by itself) and refused: "being filled for the first time
    by process <its own pid>", on every run, until some other command opened the database."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    projects = archive(tmp_path)
    path = tmp_path / "ledger.db"
    proc = die_mid_first_load(path, projects)
    root = Path(__file__).resolve().parents[2]
    assert proc.returncode == 9 and Path(str(path) + db.FIRST_LOAD_SUFFIX).exists()
    env = {**os.environ, "PYTHONPATH": str(root)}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "threadloom.core.cli",
            "ingest",
            "--db",
            str(path),
            "--only",
            "--json",
            "--source",
            str(projects),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=root,
    )
    assert run.returncode == 0, run.stderr
    assert '"records_added": 48' in run.stdout
    assert not Path(str(path) + db.FIRST_LOAD_SUFFIX).exists()


def hold_writer_lock(path: Path) -> subprocess.Popen:
    """Another process holding the database's writer lock until its stdin closes."""
    code = (
        "import sys\n"
        "from threadloom.core.store.writer_lock import writer_lock\n"
        "with writer_lock(sys.argv[2]):\n"
        "    print('holding', flush=True); sys.stdin.read()\n"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(root), str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "holding\n"
    return proc


def test_a_first_load_still_running_elsewhere_is_not_disturbed(tmp_path):
    path = tmp_path / "ledger.db"
    db.connect(path).close()
    elsewhere = hold_writer_lock(path)
    try:
        Path(str(path) + db.FIRST_LOAD_SUFFIX).write_text(str(elsewhere.pid))
        with pytest.raises(
            db.LedgerError, match=f"being filled for the first time by process {elsewhere.pid}"
        ):
            db.connect(path)
        assert path.exists()
        assert db.connect(path, readonly=True).execute("SELECT count(*) FROM entries").fetchone() == (0,)
    finally:
        elsewhere.communicate("")


def test_a_marker_whose_pid_was_reused_by_another_program_does_not_lock_anyone_out(tmp_path, monkeypatch):
    """The load died and its pid now belongs to some other live program: the lock tells, not the pid."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = tmp_path / "ledger.db"
    conn = db.connect(path)
    run_ingest(conn, [archive(tmp_path)], include_defaults=False)
    conn.close()
    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        Path(str(path) + db.FIRST_LOAD_SUFFIX).write_text(str(other.pid))  # a live pid, not a loader
        conn = db.connect(path)
        assert not Path(str(path) + db.FIRST_LOAD_SUFFIX).exists()
        assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 0  # the dead load's half is gone
    finally:
        other.communicate(b"")


def test_the_first_load_marker_is_readable_by_its_owner_only(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    projects = archive(tmp_path)
    path = tmp_path / "ledger.db"
    modes = []

    def look(p):  # type: ignore[no-untyped-def]
        marker = Path(str(path) + db.FIRST_LOAD_SUFFIX)
        if marker.exists():
            modes.append(marker.stat().st_mode & 0o777)

    run_ingest(db.connect(path), [projects], include_defaults=False, progress=look)
    assert modes and set(modes) == {0o600}


def test_a_first_load_running_in_this_process_is_not_disturbed(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    projects = archive(tmp_path)
    path = tmp_path / "ledger.db"
    conn = db.connect(path)
    refused = []

    def another_writer(p):  # type: ignore[no-untyped-def]
        if p.files_done == 2 and not refused:
            with pytest.raises(db.LedgerError, match="being filled for the first time"):
                db.connect(path)
            refused.append(True)

    report = run_ingest(conn, [projects], include_defaults=False, progress=another_writer)
    assert refused and report.records_added == 48
    assert not Path(str(path) + db.FIRST_LOAD_SUFFIX).exists()


def test_a_first_load_that_failed_in_this_process_is_started_afresh(tmp_path, monkeypatch):
    """A first load that stopped on a database error (a full disk) leaves its marker with this
    process's id; the same process (the TUI retrying) must not be told the load is still running."""
    import threadloom.core.ingest.pipeline

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    projects = archive(tmp_path)
    path = tmp_path / "ledger.db"
    real, calls = threadloom.core.ingest.pipeline._ingest_file, []

    def full_disk(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 3:
            raise sqlite3.OperationalError("database or disk is full")
        return real(*args, **kwargs)

    monkeypatch.setattr(threadloom.core.ingest.pipeline, "_ingest_file", full_disk)
    conn = db.connect(path)
    with pytest.raises(sqlite3.OperationalError):
        run_ingest(conn, [projects], include_defaults=False)
    conn.close()
    assert Path(str(path) + db.FIRST_LOAD_SUFFIX).read_text() == str(os.getpid())
    monkeypatch.setattr(threadloom.core.ingest.pipeline, "_ingest_file", real)
    conn = db.connect(path)  # not "being filled": that load is over; its half is discarded
    assert not Path(str(path) + db.FIRST_LOAD_SUFFIX).exists()
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 0
    report = run_ingest(conn, [projects], include_defaults=False)
    assert report.records_added == 48 and conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_new_database_uses_large_pages_and_an_old_one_keeps_its_own(tmp_path):
    fresh = db.connect(tmp_path / "new.db")
    assert fresh.execute("PRAGMA page_size").fetchone()[0] == db.PAGE_SIZE
    old_path = tmp_path / "old.db"
    old = sqlite3.connect(old_path)
    old.execute("PRAGMA page_size = 4096")
    old.execute("PRAGMA user_version = 11")  # a threadloom archive from before large pages (and the mark)
    old.executescript(db.fresh_schema())
    old.close()
    reopened = db.connect(old_path)  # an existing file is never rebuilt just for its page size
    assert reopened.execute("PRAGMA page_size").fetchone()[0] == 4096
    assert reopened.execute("SELECT count(*) FROM entries").fetchone()[0] == 0
