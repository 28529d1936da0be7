"""One writer at a time: the lock every ingest and index build holds for its whole run.

SQLite serializes transactions, but an ingest is many of them, planned from one look at the
database: two ingests at once both plan the same new files and the second fails on each of them
("UNIQUE constraint failed"), and two index builders index the same chunk twice. So the decision
is taken once, up front: the first writer takes an advisory lock on `<db>.lock` and the second
waits for it (saying so) or, when it only meant to tidy up (a search catching up the index),
goes on without writing.

The lock is `flock` on an open file: the kernel drops it when its process dies, however it dies,
so a crashed writer never locks anyone out (a pid in a file can be reused; a lock cannot be).
Within a process the lock is held per thread and re-entered by the thread holding it (an ingest
that goes on to build the index), while another thread waits like another process would.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no advisory locks here; SQLite's own locking still applies
    fcntl = None  # type: ignore[assignment]

LOCK_SUFFIX = ".lock"
POLL_SECONDS = 0.1

_held = threading.local()


class WriterBusy(RuntimeError):
    """Another process (or thread) is writing the database and the caller chose not to wait."""


def database_file(conn: sqlite3.Connection) -> str | None:
    """The main database file of `conn` (None for an in-memory or temporary database)."""
    row = conn.execute("PRAGMA database_list").fetchone()
    return row[2] if row and row[2] else None


def holder(db_file: str | os.PathLike[str]) -> str:
    """Who holds the lock, for messages: "process 1234" when it is known."""
    try:
        pid = Path(str(db_file) + LOCK_SUFFIX).read_text().strip()
    except OSError:
        pid = ""
    return f"process {pid}" if pid.isdigit() else "another process"


def is_busy(db_file: str | os.PathLike[str]) -> bool:
    """Whether another writer (another process, or another thread of this one) holds the lock of
    `db_file` now; this thread's own hold does not count."""
    if fcntl is None or os.path.realpath(db_file) in _paths():
        return False
    try:
        fd = os.open(str(db_file) + LOCK_SUFFIX, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False  # no lock file: nobody has ever written here, or we cannot tell
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's own lock
    return False


def _paths() -> set[str]:
    """The databases (real paths) whose lock this thread holds."""
    paths = getattr(_held, "paths", None)
    if paths is None:
        paths = _held.paths = set()
    return paths


@contextmanager
def writer_lock(
    target: sqlite3.Connection | str | os.PathLike[str],
    *,
    wait: bool = True,
    on_wait: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> Iterator[None]:
    """Hold the database's writer lock for the block.

    Busy: with `wait`, call `on_wait` once with who holds it and wait for it (until `cancel` is
    set, which raises WriterBusy); without, raise WriterBusy at once."""
    db_file = database_file(target) if isinstance(target, sqlite3.Connection) else str(target)
    db_file = os.path.realpath(db_file) if db_file is not None else None
    held = _paths()
    if fcntl is None or db_file is None or db_file in held:  # held already by this thread: re-entered
        yield
        return
    try:
        Path(db_file).parent.mkdir(parents=True, exist_ok=True)  # a first run: nothing there yet
        fd = os.open(db_file + LOCK_SUFFIX, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        # a folder we cannot create files in: nothing can be written there either, and opening the
        # database says why; a reader never gets here
        yield
        return
    try:
        _acquire(fd, db_file, wait=wait, on_wait=on_wait, cancel=cancel)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        held.add(db_file)
        try:
            yield
        finally:
            held.discard(db_file)
    finally:
        os.close(fd)


def _acquire(
    fd: int,
    db_file: str,
    *,
    wait: bool,
    on_wait: Callable[[str], None] | None,
    cancel: threading.Event | None,
) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    who = holder(db_file)
    if not wait:
        raise WriterBusy(f"{who} is updating {db_file}")
    if on_wait is not None:
        on_wait(f"{who} is updating {db_file}; waiting for it to finish")
    if cancel is None:
        fcntl.flock(fd, fcntl.LOCK_EX)  # Ctrl+C interrupts the wait
        return
    while True:  # a worker thread: poll, so that cancelling it is prompt
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if cancel.is_set():
                raise WriterBusy(f"{who} is updating {db_file}; stopped waiting") from None
            time.sleep(POLL_SECONDS)
