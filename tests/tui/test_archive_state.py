"""The app's archive state on its own (no Textual): each transition sets the fields that go together,
and what the archive allows follows from them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from threadloom.tui.archive_state import ArchiveState


def test_a_first_load_is_read_beside_then_its_reader_is_handed_over() -> None:
    state = ArchiveState()
    assert not state.settled and not state.can_fork and not state.can_sync
    state.ingest_started()
    state.load_began()
    reader = sqlite3.connect(":memory:")
    state.opened(reader, reader=True)
    assert state.first_load and state.load_reader and state.conn is reader
    assert not state.can_fork and not state.settled  # the load is the database's only writer
    state.records_loaded()
    assert not state.first_load and state.load_reader  # the reader stays until it is replaced
    assert state.take_reader() is reader
    assert state.conn is None and not state.load_reader
    assert state.take_reader() is None  # nothing more to hand over
    conn = sqlite3.connect(":memory:")
    state.opened(conn)
    assert state.can_fork and not state.settled  # the ingest (its index) still runs
    state.ingest_ended()
    assert state.settled and state.can_sync and not state.ingesting and not state.first_load


def test_an_ordinary_connection_is_never_taken_as_the_reader() -> None:
    state = ArchiveState()
    conn = sqlite3.connect(":memory:")
    state.opened(conn)
    assert state.take_reader() is None and state.conn is conn


def test_an_open_that_failed_is_forgotten_once_one_succeeds() -> None:
    state = ArchiveState()
    state.open_failed("the database is locked")
    assert state.open_error and state.conn is None
    state.opened(sqlite3.connect(":memory:"))
    assert state.open_error == ""


def test_closing_lets_go_of_the_connection_and_of_the_readers_mark() -> None:
    state = ArchiveState()
    reader = sqlite3.connect(":memory:")
    state.opened(reader, reader=True)
    assert state.closed() is reader
    assert state.conn is None and not state.load_reader
    assert state.closed() is None


def test_neither_the_demo_nor_a_read_only_archive_syncs(tmp_path: Path) -> None:
    demo = ArchiveState()
    demo.opened(sqlite3.connect(":memory:"))
    demo.became_demo(tmp_path)
    assert demo.is_demo and not demo.can_sync and demo.can_fork
    read_only = ArchiveState()
    read_only.made_read_only("the file is read-only")
    read_only.opened(sqlite3.connect(":memory:"))
    assert not read_only.can_sync and read_only.settled and read_only.read_only


def test_where_the_logs_were_looked_for_is_the_sources_until_an_ingest_says(tmp_path: Path) -> None:
    state = ArchiveState(sources=[tmp_path / "backup"])
    assert state.sources == [tmp_path / "backup"] and state.roots is None
    state.looked_in(["/home/dev/.claude/projects"])
    assert state.roots == ["/home/dev/.claude/projects"]
    demo = ArchiveState(sources=[tmp_path / "backup"])
    demo.became_demo(tmp_path / "demo")
    assert demo.sources == []  # the demo reads none of the user's folders
