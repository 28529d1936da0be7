"""One writer, and nothing but SQLite touches the database file.

POSIX record locks belong to a process: closing any descriptor of the database file drops every
lock this process's connections hold on it, and another process then checkpoints or writes under
them (the page-1 overwrite that destroyed archives when the TUI followed a session while a CLI
ingest ran). These tests hold a lock in this process, do what threadloom does on the side (read the
version, open a reader, check for an upgrade), and ask another process whether the lock still holds.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from threadloom.core.store import db

from tests.support import make_archive

PROBE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
try:
    conn.execute(sys.argv[2])
    print("free")
except sqlite3.OperationalError as exc:
    print("held" if "locked" in str(exc) else f"error: {exc}")
"""


def other_process(path: Path, statement: str) -> str:
    """What another process finds when it runs `statement` without waiting: 'held' or 'free'."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), statement], capture_output=True, text=True, timeout=60
    )
    return done.stdout.strip() or done.stderr.strip()


SHARED_RANGE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    # SQLite's shared locks are read locks on these 510 bytes; its exclusive lock, a write lock on them
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 510, 0x40000002)
    print("free")
except OSError:
    print("held")
"""


def readers_seen(path: Path) -> bool:
    """Whether another process sees a connection holding the database file open (every connection
    in WAL mode keeps a shared lock on it: the last one to close checkpoints and removes the WAL)."""
    done = subprocess.run([sys.executable, "-c", SHARED_RANGE, str(path)], capture_output=True, text=True)
    assert done.stdout.strip() in ("held", "free"), done.stderr
    return done.stdout.strip() == "held"


def a_database(folder: Path) -> Path:
    from threadloom.core.ingest.pipeline import run_ingest

    path = folder / "a.db"
    conn = db.connect(path)
    run_ingest(conn, [make_archive(folder)], include_defaults=False)
    conn.close()
    return path


SIDE_READS: dict[str, Callable[[Path], object]] = {
    "stored_version": db.stored_version,
    "upgrade_due": db.upgrade_due,
    "open_for_reading": lambda p: db.open_for_reading(p).close(),
    "connect_readonly": lambda p: db.connect(p, readonly=True).close(),
}


@pytest.mark.parametrize("read", ["stored_version", "upgrade_due"])
def test_reading_the_version_keeps_this_process_s_write_lock(tmp_path, read):
    path = a_database(tmp_path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode = DELETE")  # the lock sits on the database file itself
    holder.execute("BEGIN EXCLUSIVE")
    try:
        assert other_process(path, "BEGIN IMMEDIATE") == "held"
        SIDE_READS[read](path)
        assert other_process(path, "BEGIN IMMEDIATE") == "held"
    finally:
        holder.close()


@pytest.mark.parametrize("read", sorted(SIDE_READS))
def test_reading_on_the_side_keeps_this_process_s_read_lock(tmp_path, read):
    """A reader's shared lock keeps writers from replacing pages it reads (rollback journal) and,
    in WAL mode, tells the last connection to close that it is not the last."""
    path = a_database(tmp_path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode = DELETE")
    holder.execute("BEGIN")
    holder.execute("SELECT count(*) FROM entries").fetchone()  # a shared lock, held to the end
    try:
        assert other_process(path, "BEGIN EXCLUSIVE") == "held"
        SIDE_READS[read](path)
        assert other_process(path, "BEGIN EXCLUSIVE") == "held"
    finally:
        holder.close()


def test_opening_the_database_writes_only_as_its_one_writer(tmp_path):
    """What a newer threadloom adds on opening (its mark, a late table) is written by the holder
    of the writer lock: a connection opened while another process ingests leaves it to that one."""
    path = a_database(tmp_path)
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE derived_pending")
    conn.execute("PRAGMA application_id = 0")
    conn.commit()
    conn.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)], stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        before = path.read_bytes()
        db.connect(path).close()
        assert path.read_bytes() == before  # nothing written while another writes
    finally:
        holder.communicate("")
    conn = db.connect(path)
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'derived_pending'").fetchone()
    assert conn.execute("PRAGMA application_id").fetchone()[0] == db.APPLICATION_ID
    conn.close()


HOLD_LOCK = """
import sys
from threadloom.core.store.writer_lock import writer_lock
with writer_lock(sys.argv[1]):
    print("holding", flush=True)
    sys.stdin.read()
"""
