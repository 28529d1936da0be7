"""Bringing the archive up to date, one way for every front end: the writer lock taken once, the
database opened under it, an older archive's sessions rebuilt, the logs read (with the data derived
from them), then what a first load leaves until its sessions are browsable (the search index, the
episodes for search by meaning). The command line and the TUI both call `update`; what each shows
as it goes, it says through a `Listener`. The watch and the hooks call it too, with the files an
agent just wrote (`known`): what the archive already reads is read again without a walk."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..insight import refresh
from ..store import db, search_index
from ..store.writer_lock import WriterBusy, writer_lock
from . import pipeline
from .pipeline import IngestReport, Phase, Progress, rebuild_pending


@dataclass
class Listener:
    """What an update says as it goes; each is optional."""

    waiting: Callable[[str], None] | None = None  # another writer holds the lock: whom this waits for
    locked: Callable[[], object] | None = None  # the lock is this update's: nothing is waited for now
    upgrading: Callable[[int], object] | None = None  # an older archive (of this layout) is rebuilt first
    progress: Callable[[Progress], None] | None = None  # every phase (Progress.phase says which)
    reading: Callable[[sqlite3.Connection], object] | None = None  # the logs are read next
    loaded: Callable[[IngestReport], object] | None = None  # the records are in and browsable
    indexing: Callable[[], object] | None = None  # what a first load left (index, episodes) is next


def update(
    db_path: Path,
    sources: Iterable[Path] = (),
    *,
    include_defaults: bool = True,
    remember: bool = True,
    index: bool = True,
    known: Sequence[str] | None = None,
    listener: Listener | None = None,
    cancel: threading.Event | None = None,
) -> IngestReport:
    """Read new and changed logs into the database at `db_path` as its one writer (waiting for
    another while it holds the lock; a `cancel` set meanwhile ends the wait with a cancelled
    report). `index=False` leaves what a first load left behind (the search index, the episodes) for later.
    `known`: only these files, as the archive last read them (no folder walked, no source
    remembered); those it does not read are `IngestReport.unknown_paths`, for a full update."""
    said = listener or Listener()
    try:
        with writer_lock(db_path, on_wait=said.waiting, cancel=cancel):
            if said.locked is not None:
                said.locked()
            conn = db.connect(
                db_path
            )  # refuses another application's database, upgrades an older one's layout
            try:
                older = db.rebuild_due(conn)  # and its sessions, rebuilt next: the layout it had, said first
                if older is not None and said.upgrading is not None:
                    said.upgrading(older)
                return _update(conn, list(sources), include_defaults, remember, index, known, said, cancel)
            finally:
                conn.close()
    except WriterBusy:
        return IngestReport(cancelled=True)


def _update(
    conn: sqlite3.Connection,
    sources: list[Path],
    include_defaults: bool,
    remember: bool,
    index: bool,
    known: Sequence[str] | None,
    said: Listener,
    cancel: threading.Event | None,
) -> IngestReport:
    # an older archive's sessions are rebuilt before anything reads them
    if not rebuild_pending(conn, said.progress, cancel):
        return IngestReport(cancelled=True)
    if said.reading is not None:
        said.reading(conn)
    if known is not None:
        report = pipeline.ingest_known(conn, known, progress=said.progress, cancel=cancel, build_index=False)
    else:
        report = pipeline.run_ingest(  # through the module: the seam tests replace
            conn,
            sources,
            include_defaults=include_defaults,
            remember=remember,
            progress=said.progress,
            cancel=cancel,
            build_index=False,
        )
    if report.cancelled:
        return report
    if said.loaded is not None:
        said.loaded(report)
    if not index or not refresh.left_behind(conn):
        return report
    if said.indexing is not None:
        said.indexing()
    started = time.perf_counter()

    def phase_progress(phase: Phase) -> Callable[[int, int], None]:
        def report_progress(done: int, total: int) -> None:
            if said.progress is not None:
                elapsed = time.perf_counter() - started
                files, nbytes = report.files_read, report.bytes_read
                said.progress(Progress(files, files, nbytes, nbytes, "", elapsed, done, total, phase))

        return report_progress

    on_index, on_embed = phase_progress(Phase.INDEXING), phase_progress(Phase.EMBEDDING)

    def index_progress(p: search_index.IndexProgress) -> None:
        on_index(p.done, p.total)

    timings: dict[str, float] = {}
    report.index_complete = refresh.catch_up(conn, index_progress, on_embed, cancel, timings=timings)
    report.episodes_seconds = round(report.episodes_seconds + timings.get("episodes", 0.0), 3)
    report.cancelled = not report.index_complete
    report.index_seconds = round(time.perf_counter() - started, 3)
    report.seconds = round(report.seconds + report.index_seconds, 3)
    return report
