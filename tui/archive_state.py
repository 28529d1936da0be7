"""The app's hold on its archive as one state: the connection the panes read through, what the
archive allows now (a first load under way, an ingest running, read-only, failed to open, the demo)
and where its agent logs were looked for.

Plain Python, no Textual: `ArchiveApp` (`threadloom.tui.archive`) asks it and moves it through its
transitions, each of which sets together the fields that go together (a connection opened clears
the last open's error; a first load's reader taken away leaves no connection), so no flag is
changed without the others it implies and every question asked of the archive is answered here.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ArchiveState:
    """Which connection is open and what may be done with the archive now."""

    conn: sqlite3.Connection | None = None
    # a first load is filling an empty database as its only writer (no journal): read beside it
    # through a read-only connection, and nothing else written until it ends
    first_load: bool = False
    load_reader: bool = False  # `conn` is that read-only connection, opened during the first load
    ingesting: bool = False
    read_only: str = ""  # why the database cannot be written, when it cannot: browse only
    open_error: str = ""  # why the database could not be opened: quitting says it and exits 1
    temp_dir: Path | None = None  # the demo archive's folder, removed when threadloom ends
    # where the empty state says threadloom looked: the --source folders beside the agents' own,
    # until an ingest reports the folders it read
    sources: list[Path] = field(default_factory=list)
    roots: list[str] | None = None

    # ------------------------------------------------------------------ what it allows

    @property
    def is_demo(self) -> bool:
        """The archive is the demo's, in a temporary folder: it never changes, nor syncs."""
        return self.temp_dir is not None

    @property
    def settled(self) -> bool:
        """Open, and no ingest or first load in the way: the open session's file may be followed
        and the agents' folders watched."""
        return self.conn is not None and not self.ingesting and not self.load_reader

    @property
    def can_fork(self) -> bool:
        """Forking reads the fork into the archive: not while a first load is its only writer."""
        return self.conn is not None and not self.load_reader

    @property
    def can_sync(self) -> bool:
        """A sync writes what it pulls: an open archive of the user's own that can be written."""
        return self.conn is not None and not self.is_demo and not self.read_only

    # ------------------------------------------------------------------ transitions

    def made_read_only(self, why: str) -> None:
        """The file (or its disk) cannot be written: it is browsed as it is."""
        self.read_only = why

    def opened(self, conn: sqlite3.Connection, *, reader: bool = False) -> None:
        """A connection is open (`reader`: the read-only one of a first load); an earlier error is
        no longer the reason to quit."""
        self.conn, self.load_reader, self.open_error = conn, reader, ""

    def open_failed(self, why: str) -> None:
        self.open_error = why

    def became_demo(self, temp_dir: Path) -> None:
        """The demo's archive, in `temp_dir`: it reads none of the user's folders."""
        self.temp_dir, self.sources = temp_dir, []

    def looked_in(self, roots: list[str]) -> None:
        """An ingest read the agents' logs in `roots`: what the empty state names from now on."""
        self.roots = roots

    def ingest_started(self) -> None:
        self.ingesting = True

    def load_began(self) -> None:
        """The ingest found the database empty: a first load, read beside through a reader."""
        self.first_load = True

    def records_loaded(self) -> None:
        """The records are in (the search index may follow): the first load is over."""
        self.first_load = False

    def ingest_ended(self) -> None:
        self.ingesting, self.first_load = False, False

    def take_reader(self) -> sqlite3.Connection | None:
        """The first load's read-only connection, handed over to be replaced and closed (None when
        the open connection is not one): no connection is open after."""
        if not self.load_reader or self.conn is None:
            return None
        reader, self.conn, self.load_reader = self.conn, None, False
        return reader

    def closed(self) -> sqlite3.Connection | None:
        """Let go of the connection (the caller closes what is returned)."""
        conn, self.conn, self.load_reader = self.conn, None, False
        return conn
