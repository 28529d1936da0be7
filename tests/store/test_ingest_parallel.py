"""A cold ingest read by worker processes (core.ingest.workers) writes what an ingest in one process
writes, row for row in every table; a small one starts no worker; a worker that dies costs no record."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
from pathlib import Path

import pytest
from threadloom.core.ingest import workers as ingest_workers
from threadloom.core.ingest.pipeline import Progress, run_ingest
from threadloom.core.store import db

from tests.support import home_env

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import gen_archive  # noqa: E402  (bench/gen_archive.py: the bench's archive, made small)

# Columns that hold when a run happened, not what it read: the clock when a file was read, when a
# session's row was last written and when a source folder was first named. Nothing else may differ.
RUN_SPECIFIC = {
    "source_files": {"ingested_at"},
    "source_reads": {"read_at"},
    "agent_sessions": {"updated_at"},
    "source_roots": {"added_at"},
}
# ledger_meta keys that are a clock's reading, not data: the vectors' generation is time_ns() at the
# pass that stored them (a cache key for readers)
RUN_SPECIFIC_META = ("episodes_generation",)


def _archive(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    gen_archive.generate(root, 3 << 20, seed=7, jobs=1)
    (root / "manifest.json").unlink()
    return root


def _ingest(tmp_path: Path, name: str, source: Path, monkeypatch: pytest.MonkeyPatch, workers: int):
    monkeypatch.setattr(ingest_workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv(ingest_workers.WORKERS_ENV, str(workers))
    conn = db.connect(tmp_path / name)
    report = run_ingest(conn, [source], include_defaults=False)
    return conn, report


def _tables(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows, in rowid order where a table has one, without the run-specific columns."""
    out: dict[str, list[tuple[object, ...]]] = {}
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    for name in sorted(names):
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info('{name}')")]
        kept = [c for c in columns if c not in RUN_SPECIFIC.get(name, set())]
        if not kept:  # a virtual table's shadow tables are compared; the virtual table itself has no columns
            continue
        select = ", ".join(f'"{c}"' for c in kept)
        try:
            rows = conn.execute(f'SELECT {select} FROM "{name}" ORDER BY rowid').fetchall()
        except sqlite3.OperationalError:  # WITHOUT ROWID: by every column
            rows = sorted(conn.execute(f'SELECT {select} FROM "{name}"').fetchall(), key=repr)
        if name == "ledger_meta":
            rows = [r for r in rows if not str(r[0]).startswith(RUN_SPECIFIC_META)]
        out[name] = rows
    return out


def test_parallel_ingest_writes_what_a_serial_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in home_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    source = _archive(tmp_path)
    serial, serial_report = _ingest(tmp_path, "serial.db", source, monkeypatch, workers=0)
    parallel, parallel_report = _ingest(tmp_path, "parallel.db", source, monkeypatch, workers=2)
    assert serial_report.workers == 0 and parallel_report.workers == 2
    assert not serial_report.errors and not parallel_report.errors
    assert parallel_report.records_added == serial_report.records_added > 1000
    assert parallel_report.files_read == serial_report.files_read
    expected, got = _tables(serial), _tables(parallel)
    assert expected.keys() == got.keys()
    assert expected["entries"], "the archive was read"
    for name in expected:
        assert got[name] == expected[name], f"table {name} differs"


def test_a_small_ingest_starts_no_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below PARALLEL_MIN_BYTES (and on every launch with little new) nothing is started."""
    monkeypatch.delenv(ingest_workers.WORKERS_ENV, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # idle: only the size decides
    started: list[int] = []
    monkeypatch.setattr(ingest_workers.ParallelReader, "__init__", lambda *a: started.append(1))
    source = _archive(tmp_path)
    conn = db.connect(tmp_path / "small.db")
    report = run_ingest(conn, [source], include_defaults=False)
    assert report.files_read > 10 and report.workers == 0 and not started


def test_a_worker_killed_mid_ingest_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kill -9 of a worker: the writer reads its files itself; the archive equals a serial one.

    The worker is held (SIGSTOP) from its start until it is killed: left to run, it could read
    every file of its share of this small archive before the kill, and the loss go unnoticed."""
    source = _archive(tmp_path)
    serial, _ = _ingest(tmp_path, "serial.db", source, monkeypatch, workers=0)
    readers: list[ingest_workers.ParallelReader] = []
    original = ingest_workers.ParallelReader.__init__

    def remember(self: ingest_workers.ParallelReader, *args: object) -> None:
        original(self, *args)  # type: ignore[arg-type]
        os.kill(self.processes[1].pid, signal.SIGSTOP)
        readers.append(self)

    monkeypatch.setattr(ingest_workers.ParallelReader, "__init__", remember)
    killed: list[int] = []

    def kill_one(p: Progress) -> None:
        if p.files_done == 5 and not killed and readers:
            victim = readers[0].processes[1]
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait()
            killed.append(victim.pid)

    monkeypatch.setattr(ingest_workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv(ingest_workers.WORKERS_ENV, "2")
    parallel = db.connect(tmp_path / "parallel.db")
    report = run_ingest(parallel, [source], include_defaults=False, progress=kill_one)
    assert killed and report.workers == 2 and not report.errors
    assert 1 in readers[0].lost
    assert _tables(parallel) == _tables(serial)


def test_workers_stop_when_the_ingest_is_cancelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    source = _archive(tmp_path)
    readers: list[ingest_workers.ParallelReader] = []
    original = ingest_workers.ParallelReader.__init__

    def remember(self: ingest_workers.ParallelReader, *args: object) -> None:
        original(self, *args)  # type: ignore[arg-type]
        readers.append(self)

    monkeypatch.setattr(ingest_workers.ParallelReader, "__init__", remember)
    monkeypatch.setattr(ingest_workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv(ingest_workers.WORKERS_ENV, "2")
    cancel = threading.Event()

    def cancel_soon(p: Progress) -> None:
        if p.files_done == 3:
            cancel.set()

    conn = db.connect(tmp_path / "cancelled.db")
    report = run_ingest(conn, [source], include_defaults=False, progress=cancel_soon, cancel=cancel)
    assert report.cancelled and readers
    assert all(p.poll() is not None for p in readers[0].processes)  # none left running
    # what was read is whole: the next run finishes the rest
    again = run_ingest(db.connect(tmp_path / "cancelled.db"), [source], include_defaults=False)
    assert not again.errors and again.files_read > 0


def test_records_cross_between_processes_unchanged() -> None:
    from threadloom.core.adapters.base import Record, SessionInfo, ToolResult, ToolUse, Usage

    rec = Record(
        entry_type="assistant",
        uuid="u1",
        content="hi",
        tool_uses=[ToolUse("t1", "Bash", '{"command": "ls"}', 1, "d", "p")],
        tool_results=[ToolResult("t0", '"ok"', "failed", "a1")],
        usage=Usage("m1", "r1", 1, 2, 3, 4, 0.5),
        more_usage=[Usage("s1:shutdown:m", None, 5, cache_read_tokens=6, model="m")],
        title=("summary", "A title"),
        session=SessionInfo("claude-code", "s1", kind="subagent", is_subagent=1),
    )
    assert ingest_workers.decode(ingest_workers.encode(rec)) == rec
    assert ingest_workers.decode(ingest_workers.encode(Record())) == Record()


def test_workers_start_only_with_a_core_to_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    """One a core but the writer's when the last minute left a core idle (one on 2 cores, none on
    one); none on a machine busy with others, where they only added CPU; the variable's count
    whatever the cores and the load."""
    monkeypatch.delenv(ingest_workers.WORKERS_ENV, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.3, 0.3, 0.3))
    monkeypatch.setattr(ingest_workers, "_cores", lambda: 1)
    assert ingest_workers.worker_count(100) == 0
    monkeypatch.setattr(ingest_workers, "_cores", lambda: 2)
    assert ingest_workers.worker_count(100) == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (1.2, 1.0, 1.0))
    assert ingest_workers.worker_count(100) == 0  # the other core taken
    monkeypatch.setattr(os, "getloadavg", lambda: (0.3, 0.3, 0.3))
    monkeypatch.setattr(ingest_workers, "_cores", lambda: 4)
    assert ingest_workers.worker_count(100) == 3
    assert ingest_workers.worker_count(1) == 1  # never more than files
    monkeypatch.setattr(os, "getloadavg", lambda: (6.5, 6.0, 5.0))
    assert ingest_workers.worker_count(100) == 0
    monkeypatch.setenv(ingest_workers.WORKERS_ENV, "3")
    assert ingest_workers.worker_count(100) == 3
    monkeypatch.setattr(ingest_workers, "_cores", lambda: 32)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    monkeypatch.delenv(ingest_workers.WORKERS_ENV)
    assert ingest_workers.worker_count(100) == ingest_workers.MAX_WORKERS


def test_a_module_in_the_current_folder_is_never_imported_by_a_worker(tmp_path, monkeypatch):
    """A worker is started from whatever folder threadloom runs in (a cloned repository, a backup):
    a module planted there under the name of one it imports is not what it runs."""
    source = _archive(tmp_path)
    planted = tmp_path / "cwd"
    planted.mkdir()
    marker = tmp_path / "imported"
    for name in ("orjson", "sqlite3", "threadloom"):
        (planted / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\n")
    monkeypatch.chdir(planted)
    conn, report = _ingest(tmp_path, "planted.db", source, monkeypatch, 2)
    assert report.workers == 2 and not report.errors
    assert report.records_added > 0 and not marker.exists()


def test_turns_read_beside_the_search_index_are_those_read_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first load's turns read and embedded on a thread while its search index is built are
    written as the pass after the index writes them: every table the same, vectors included. A
    catch-up cancelled during the index leaves no thread behind, and the next one ends the same."""
    import shutil
    import threading

    from threadloom.core.insight import episodes, refresh

    for key, value in home_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    source = _archive(tmp_path)
    loaded = db.connect(tmp_path / "loaded.db")
    assert not run_ingest(loaded, [source], include_defaults=False, build_index=False).errors
    sessions = len(episodes.left_for_index(loaded))  # a first load's: every session, after the index
    loaded.close()
    assert sessions > 8
    monkeypatch.setattr(episodes, "SESSIONS_PER_BATCH", 3)  # several batches, more than the queue holds
    monkeypatch.setattr(episodes, "READ_AHEAD_BATCHES", 2)
    started: list[int] = []
    monkeypatch.setattr(episodes.ReadAhead, "_run", lambda self, path, run=episodes.ReadAhead._run: (
        started.append(1), run(self, path)))  # fmt: skip

    def caught_up(name: str, ahead_from: int, cancel: threading.Event | None = None) -> sqlite3.Connection:
        monkeypatch.setattr(episodes, "READ_AHEAD_MIN_SESSIONS", ahead_from)
        if not (tmp_path / name).exists():
            shutil.copy(tmp_path / "loaded.db", tmp_path / name)
        conn = db.connect(tmp_path / name)
        stop = (lambda _: cancel.set()) if cancel is not None else None
        assert refresh.catch_up(conn, stop, cancel=cancel) is (cancel is None)
        return conn

    expected = _tables(caught_up("after.db", ahead_from=10**9))
    assert not started and len(expected["episodes"]) >= sessions
    assert all(row[-1] for row in expected["episodes"])  # each one embedded
    assert _tables(caught_up("beside.db", ahead_from=1)) == expected
    assert started == [1]

    # a session whose stored turns moved on between its reading and its writing is read again
    stored_from, again = (
        episodes._start_of,
        sorted(episodes.left_for_index(db.connect(tmp_path / "loaded.db")))[4],
    )

    def moved_on(conn: sqlite3.Connection, session_id: str) -> int:
        here = threading.current_thread() is threading.main_thread()
        return -2 if here and session_id == again else stored_from(conn, session_id)

    monkeypatch.setattr(episodes, "_start_of", moved_on)
    assert _tables(caught_up("read-again.db", ahead_from=1)) == expected
    monkeypatch.setattr(episodes, "_start_of", stored_from)

    # turns that share a turn id (a fork's copies): a session read again as its batch is written
    # (its stored turns moved on: another session's write took one away) beside one that is not
    shutil.copyfile(tmp_path / "loaded.db", tmp_path / "shared.db")
    shared = db.connect(tmp_path / "shared.db")
    first_x, first_b, first_a = sorted(episodes.left_for_index(shared))[:3]

    def first_turn(session: str) -> str:
        return shared.execute(
            "SELECT turn_id FROM entries WHERE session_id = ? AND turn_id IS NOT NULL ORDER BY seq",
            (session,),
        ).fetchone()[0]

    turn_x, turn_b, turn_a = first_turn(first_x), first_turn(first_b), first_turn(first_a)
    for table in ("entries", "agent_tool_calls"):
        shared.execute(
            f"UPDATE {table} SET turn_id = ? WHERE session_id = ? AND turn_id = ?", (turn_b, first_a, turn_a)
        )
    shared.execute(
        "INSERT INTO episodes (turn_id, session_id, first_seq, last_seq, files, commands, errors, tools, "
        "subagents) VALUES (?, ?, 0, 0, '', '', '', '', '')",
        (turn_x, first_b),
    )
    shared.commit()
    shared.close()
    shutil.copyfile(tmp_path / "shared.db", tmp_path / "shared-after.db")
    assert _tables(caught_up("shared.db", ahead_from=1)) == _tables(
        caught_up("shared-after.db", ahead_from=10**9)
    )

    caught_up(
        "cancelled.db", ahead_from=1, cancel=threading.Event()
    ).close()  # stopped at the index's first chunk
    assert started == [1, 1, 1, 1]
    assert not [t for t in threading.enumerate() if t.name == "threadloom-episodes-ahead"]
    assert _tables(caught_up("cancelled.db", ahead_from=1)) == expected
