"""`threadloom watch` as a real process: a session written in a made-up home folder reaches the
archive within seconds, an append follows it, the writer lock is free between ingests, and SIGTERM
ends it cleanly with the database whole."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from threadloom.core.store.writer_lock import is_busy, writer_lock

from tests.builders.claude import Transcript
from tests.support import home_env

ROOT = Path(__file__).resolve().parents[2]
SID = "77777777-aaaa-4bbb-8ccc-000000000001"
TIMEOUT = 20.0


def wait_for(what: str, check: Callable[[], object], timeout: float = TIMEOUT) -> object:
    """Poll `check` every 50 ms until it gives something true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def query(db: Path, sql: str, *args: object) -> object:
    """One value read through a read-only connection (None while the database is not readable)."""
    if not db.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return conn.execute(sql, args).fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return None  # being created, or a first load written without a journal: look again


def records(db: Path, session_id: str = SID) -> int:
    return int(query(db, "SELECT count(*) FROM entries WHERE session_id = ?", session_id) or 0)


class Watch:
    """A `threadloom watch` process on a database of its own in a made-up home."""

    def __init__(self, tmp_path: Path, *options: str) -> None:
        self.env = home_env(tmp_path)
        self.home = Path(self.env["HOME"])
        self.projects = self.home / ".claude" / "projects"
        self.projects.mkdir(parents=True, exist_ok=True)
        self.db = tmp_path / "archive.db"
        self.log = tmp_path / "archive-watch.log"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "threadloom.core.cli",
                "watch",
                "--db",
                str(self.db),
                "--settle",
                "0.2",
                *options,
            ],
            env=self.env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def log_text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def wait_watching(self) -> str:
        """Until the watches are set up; the line that says how it watches."""
        line = wait_for(
            "the watch to start",
            lambda: next((s for s in self.log_text().splitlines() if " watching " in s), ""),
        )
        return str(line)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=TIMEOUT)
        finally:
            self.proc.communicate()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def watch(tmp_path: Path) -> Iterator[Callable[..., Watch]]:
    started: list[Watch] = []

    def start(*options: str) -> Watch:
        w = Watch(tmp_path, *options)
        started.append(w)
        return w

    yield start
    for w in started:
        w.kill()


def write_session(projects: Path, turns: int = 2) -> Transcript:
    t = Transcript(projects / "-home-dev-app" / f"{SID}.jsonl", SID)
    for n in range(turns):
        t.user(f"question {n}")
        t.assistant(f"answer {n}")
    t.write()
    return t


def append_line(t: Transcript, text: str) -> None:
    t.lines.clear()
    t.user(text)
    with t.path.open("a") as f:
        f.write(json.dumps(t.lines[-1]) + "\n")


def assert_stopped_cleanly(w: Watch, rc: int) -> None:
    assert rc == 0, w.proc.stderr
    log = w.log_text()
    assert "stopped cleanly" in log
    # the ingests it says it ran are those it logged and those it says found nothing new (it said
    # "after 2 ingests" having logged one)
    stop = re.search(r"stopped cleanly after (\d+) ingests?(?: \((\d+) with nothing new, not logged\))?", log)
    assert stop is not None and "after 1 ingests" not in log, log
    logged = len(re.findall(r"(?:full ingest \([^)]*\)|\d+ changed files?): \d+ read", log))
    assert int(stop.group(1)) == logged + int(stop.group(2) or 0), log
    assert not is_busy(w.db)  # the writer lock is free
    with writer_lock(w.db, wait=False):  # and can be taken at once
        pass
    conn = sqlite3.connect(f"file:{w.db}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


@pytest.mark.parametrize("mode", ["events", "polling"])
def test_a_new_session_and_an_append_reach_the_archive(watch: Callable[..., Watch], mode: str) -> None:
    w = watch(*(["--poll", "--poll-interval", "0.3"] if mode == "polling" else []))
    line = w.wait_watching()
    assert ("file system events" in line) == (mode == "events"), line
    if mode == "polling":
        assert "polling every 0.3 s (asked for with --poll)" in line
    t = write_session(w.projects)
    wait_for("the new session in the archive", lambda: records(w.db) == 4)
    append_line(t, "one more question")
    wait_for("the appended line in the archive", lambda: records(w.db) == 5)
    # the append read that file alone, without a walk (its line is written once the records are in)
    wait_for("the append's line in the log", lambda: "1 changed file: 1 read" in w.log_text())
    assert_stopped_cleanly(w, w.stop())


@pytest.mark.long(5)
def test_sigterm_during_an_ingest_leaves_whole_files_and_the_next_run_reads_the_rest(
    watch: Callable[..., Watch], tmp_path: Path
) -> None:
    """Stopped in the middle of a first load: exit 0, the database whole, each file read whole or
    not at all; a later ingest reads what was left and no more."""
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    for n in range(300):
        sid = f"77777777-bbbb-4bbb-8ccc-{n:012d}"
        t = Transcript(projects / f"-home-dev-p{n % 10}" / f"{sid}.jsonl", sid)
        for turn in range(40):
            t.user(f"question {turn} " + "words " * 40)
            t.assistant(f"answer {turn} " + "more words " * 40)
        t.write()
    w = watch()
    wait_for("the first records", lambda: records_all(w.db) > 0)
    assert_stopped_cleanly(w, w.stop())
    conn = sqlite3.connect(f"file:{w.db}?mode=ro", uri=True)
    try:
        per_file = conn.execute(
            "SELECT f.lines_ingested, count(e.id) FROM source_files f LEFT JOIN entries e ON e.source_file_id = f.id "
            "GROUP BY f.id"
        ).fetchall()
    finally:
        conn.close()
    assert all(lines == 80 and stored == 80 for lines, stored in per_file), per_file  # none half-read
    rest = subprocess.run(
        [sys.executable, "-m", "threadloom.core.cli", "ingest", "--db", str(w.db), "--json"],
        env=w.env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rest.returncode == 0, rest.stderr
    assert json.loads(rest.stdout)["files_read"] == 300 - len(per_file)
    assert records_all(w.db) == 300 * 80


def records_all(db: Path) -> int:
    return int(query(db, "SELECT count(*) FROM entries") or 0)


def test_sigint_stops_it_cleanly_too(watch: Callable[..., Watch]) -> None:
    w = watch()
    w.wait_watching()
    assert_stopped_cleanly(w, w.stop(signal.SIGINT))
    assert "SIGINT received: stopping" in w.log_text()


def test_the_lock_is_held_only_while_writing(watch: Callable[..., Watch], tmp_path: Path) -> None:
    """Between ingests another writer gets the lock at once; while another holds it the watch
    waits, says so in its log, and reads the session once it is free."""
    w = watch()
    w.wait_watching()
    with writer_lock(w.db, wait=False):  # idle: not the watch's
        write_session(w.projects)
        wait_for("the watch to wait for the lock", lambda: "waiting for it to finish" in w.log_text())
        assert records(w.db) == 0
    wait_for("the session once the lock is free", lambda: records(w.db) == 4)
    # a CLI ingest beside it, on the same database and home: works, and finds nothing left to read
    done = subprocess.run(
        [sys.executable, "-m", "threadloom.core.cli", "ingest", "--db", str(w.db), "--json"],
        env=w.env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files_read"] == 0
    assert_stopped_cleanly(w, w.stop())


def test_one_watch_per_database(watch: Callable[..., Watch]) -> None:
    first = watch()
    first.wait_watching()
    second = watch()
    assert second.proc.wait(timeout=TIMEOUT) == 1
    _, err = second.proc.communicate()
    assert f"process {first.proc.pid} is watching for {first.db} already" in err
    assert_stopped_cleanly(first, first.stop())


def test_a_database_it_cannot_write_is_refused_at_start(tmp_path: Path) -> None:
    """A read-only archive, or another application's SQLite file: one line, exit 1, untouched."""
    read_only = tmp_path / "ro.db"
    sqlite3.connect(read_only).close()
    os.chmod(read_only, 0o400)
    foreign = tmp_path / "foreign.db"
    other = sqlite3.connect(foreign)
    other.execute("CREATE TABLE notes (body TEXT)")
    other.commit()
    other.close()
    before = foreign.read_bytes()
    for db, says in ((read_only, "is read-only"), (foreign, "is not a threadloom database")):
        done = subprocess.run(
            [sys.executable, "-m", "threadloom.core.cli", "watch", "--db", str(db)],
            env=home_env(tmp_path),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith("threadloom watch: ") and says in done.stderr, done.stderr
    assert foreign.read_bytes() == before
