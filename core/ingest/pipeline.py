"""Discover → stat diff → read only new bytes → normalize → one transaction per file.

A file whose (size, mtime_ns, inode, ctime_ns) is unchanged is never opened. A grown file is read
from where the last run stopped, after the hash of the already-read prefix proves it unchanged; a
shrunk or rewritten file is read again whole, in the same transaction: its records whose bytes are
unchanged stay (the same rows, placed where they now sit), and those the new version no longer
holds are kept as a superseded version of the file, never deleted. Sources are opened read-only
and never modified.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import hashlib
import io
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import orjson

from ..adapters import all_adapters, stranger, walk
from ..adapters.base import (
    Adapter,
    FileContext,
    RawRecord,
    Record,
    SourceIncomplete,
    SourceRef,
    container_of,
    decoded_path,
    disk_name,
    file_kind,
    normalized,
    one_look,
    open_regular,
    read_regular,
    shown_name,
    stored_name,
)
from ..insight import cost
from ..store import search_index
from ..store.db import FIRST_LOAD_SUFFIX, LIVE_FIRST_LOADS, MIRROR_LIKE, MIRROR_ROOT, REBUILD_KEY, rebuild_due
from ..store.sql import get_meta, record_digest, set_meta, transaction
from ..store.writer_lock import WriterBusy, writer_lock
from . import workers as ingest_workers
from .ledger import Ledger, ReplayCancelled, finish_derived, rebuild_derived, replay
from .reading import (
    STALE_TAIL_SECONDS,
    FilePlan,
    FileRead,
    KnownRow,
    ReadyChunk,
    chunks_of,
    pieces,
    read_lines,
)
from .workers import ParallelReader, WorkerLost

# source_files rows that stand for no file on disk of their own: a document's decoded log, and a
# superseded version of a rewritten file (see `_Rewrite`)
VERSION_KIND = "version"
VERSION_SUFFIX = "#version-"  # a version's row is named `<path>#version-<n>`
LEDGER_ONLY_KINDS = ("decoded", VERSION_KIND)


class Phase(Enum):
    """What an ingest is doing as its progress reports it, each named as a progress line says it."""

    FILES = "reading agent logs"  # files and bytes read; `path`: the file being read
    REBUILDING = "rebuilding sessions from stored records"  # after an upgrade: files and bytes replayed
    INDEXING = "indexing for search"  # phase_done of phase_total entry ids indexed
    SIGNALS = "finding signals"  # sessions looked at (all of them after new price data or signal pass)
    EMBEDDING = "embedding turns for search by meaning"  # episodes embedded

    @property
    def after_files(self) -> bool:
        """A phase that follows the files: the records are in and browsable while it runs."""
        return self in (Phase.INDEXING, Phase.SIGNALS, Phase.EMBEDDING)


@dataclass
class Progress:
    files_done: int
    files_total: int
    bytes_done: int
    bytes_total: int
    path: str
    elapsed: float
    phase_done: int = 0  # in a phase after the files: how far it is (see Phase)
    phase_total: int = 0
    phase: Phase = Phase.FILES


@dataclass
class IngestReport:
    files_seen: int = 0
    files_skipped: int = 0
    files_read: int = 0
    files_gone: int = 0
    bytes_read: int = 0
    records_added: int = 0
    sessions: int = 0
    sessions_total: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    workers: int = 0  # processes that read and normalized new files beside this one (core.ingest.workers)
    index_seconds: float = 0.0  # of `seconds`, building the search index after a bulk load
    index_complete: bool | None = None  # None: no index work was due; False: left behind or paused
    cancelled: bool = False
    roots: list[str] = field(default_factory=list)
    # files under a --source folder (or Claude Code's projects) that no agent's reader takes, and why
    unclaimed: list[dict[str, str]] = field(default_factory=list)
    changed_sessions: list[str] = field(default_factory=list)
    signals_seconds: float = 0.0  # of `seconds`, finding the changed sessions' signals (core.insight.signals)
    # paths `ingest_known` was given that the archive does not read (new, gone, or not a log): a
    # full ingest finds them
    unknown_paths: list[str] = field(default_factory=list)
    episodes_seconds: float = (
        0.0  # of `seconds`, building and embedding the changed turns (core.insight.episodes)
    )

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("changed_sessions")
        data.pop("signals_seconds")
        data.pop("unknown_paths")
        return data


def _zst_documents() -> tuple[str, list[str]]:
    """Compressed logs an agent's adapter decodes (`Adapter.decodes`): stored whole only at first."""
    from ..adapters import agents_where

    where = "agent IN (SELECT value FROM json_each(?)) AND kind = 'document' AND path LIKE '%.zst'"
    return where, [orjson.dumps(agents_where(lambda a: a.decodes)).decode()]


# Sources an older threadloom read less fully, read again once (the key is kept in ledger_meta); the
# condition is built only when a key is missing (it asks every adapter).
REREADS: dict[str, Callable[[], tuple[str, list[str]]]] = {
    # .jsonl.zst rollouts were stored whole only; now their decompressed lines are read too
    "reread:codex-zst-lines": _zst_documents,
}


def _apply_rereads(conn: sqlite3.Connection) -> None:
    for key, condition in REREADS.items():
        if get_meta(conn, key) is None:
            where, args = condition()
            conn.execute(f"UPDATE source_files SET size = -1, content_hash = NULL WHERE {where}", args)
            set_meta(conn, key, "done")


# what a run knows of each source file from the last one (indices are used below)
KNOWN_COLUMNS = (
    "path, id, size, mtime_ns, inode, bytes_ingested, lines_ingested, content_hash, open_tail_offset, status, "
    "agent, kind, project_key, ctime_ns"
)
# the part of it that tells an unchanged file (a launch reads it for every file; the rest is read
# only for the files that changed: 7,400 rows in ~25 ms rather than ~40)
INDEX_COLUMNS = "path, id, size, mtime_ns, status, agent, kind, project_key, inode, ctime_ns"


class IndexRow(NamedTuple):
    """What the plan of a run reads of every known file (INDEX_COLUMNS, in their order): a
    tuple, as thousands are read each run, with its columns by name."""

    path: str
    id: int
    size: int
    mtime_ns: int
    status: str
    agent: str
    kind: str
    project_key: str | None
    inode: int | None
    ctime_ns: int | None  # None: recorded before ctimes were (the inode and size still tell)


class SourceUnreadable(Exception):
    """A source database that SQLite cannot read as the adapter expects (another schema, damage)."""


def _resolved(path: Path) -> Path:
    """`path` absolute, its links followed; as given (made absolute) when they loop, for the
    reading of it to say so rather than the run to stop."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: Python before 3.13 on a loop of links
        return path.absolute()


def scan_roots(
    conn: sqlite3.Connection, sources: Iterable[Path], include_defaults: bool, remember: bool = True
) -> list[Path]:
    """Default locations, folders remembered from earlier --source runs, and the new ones."""
    roots: list[Path] = []
    if include_defaults:
        for adapter in all_adapters():
            roots += adapter.default_roots() + adapter.side_roots()
        roots += [Path(disk_name(r[0])) for r in conn.execute("SELECT path FROM source_roots ORDER BY path")]
    now = int(time.time() * 1000)
    for src in sources:
        path = _resolved(Path(src).expanduser())
        roots.append(path)
        if remember:
            conn.execute(
                "INSERT OR IGNORE INTO source_roots (path, added_at) VALUES (?, ?)", (stored_name(path), now)
            )
    seen: set[str] = set()
    unique = []
    for root in roots:
        key = str(root)
        if key not in seen:
            seen.add(key)
            unique.append(root)
    return unique


def forget_roots(conn: sqlite3.Connection, folders: Iterable[Path]) -> tuple[list[str], list[str]]:
    """Stop looking in folders remembered from --source (a typo is otherwise looked at for good):
    their source_roots rows go, with what was noted of the folder itself (its snapshot, its
    unclaimed files; both made again if it is given once more). What was read from it stays in the
    archive. Returns (the paths forgotten, the folders given that were not remembered)."""
    remembered = {r[0] for r in conn.execute("SELECT path FROM source_roots")}
    forgotten: list[str] = []
    unknown: list[str] = []
    for folder in folders:
        # as given, or as remembered: expanded and made absolute (see scan_roots)
        names = [stored_name(folder), stored_name(_resolved(Path(folder).expanduser()))]
        path = next((name for name in names if name in remembered), None)
        if path is None:  # or as `sources` shows it (a name that is not UTF-8, escaped)
            path = next((name for name in remembered if shown_name(name) == str(folder)), None)
        if path is None:
            unknown.append(str(folder))
            continue
        with transaction(conn, immediate=True):
            conn.execute("DELETE FROM source_roots WHERE path = ?", (path,))
            set_meta(conn, f"roots:{path}", None)
            set_meta(conn, UNCLAIMED_KEY + path, None)
        remembered.discard(path)
        forgotten.append(shown_name(path))
    return forgotten, unknown


def folder_snapshot(root: Path) -> dict[str, list[int]] | None:
    """Which files a root can hold, as every folder under it with its mtime (a file root: its own
    mtime and size). Adding, removing or renaming a file changes its folder's mtime, so a snapshot
    whose folders all still have their mtimes means discovery would find the same files: a launch
    then skips the adapters' walks."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return {str(root): [st.st_mtime_ns, st.st_size]}
    snapshot = {str(root): [st.st_mtime_ns, 0]}
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        snapshot[entry.path] = [entry.stat(follow_symlinks=False).st_mtime_ns, 0]
                        stack.append(entry.path)
        except OSError:
            continue
    return snapshot


def _load_snapshot(stored: str | None) -> dict[str, list[int]] | None:
    if not stored:
        return None
    try:
        snapshot = orjson.loads(stored)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(snapshot, dict) or not snapshot:
        return None
    try:
        return {disk_name(key): value for key, value in snapshot.items()}
    except ValueError:  # a key of another shape
        return None


def dump_snapshot(snapshot: dict[str, list[int]]) -> str:
    """A snapshot as stored: JSON, each folder by its stored name (one not named in UTF-8 with its
    bytes, see core.adapters.base.stored_name)."""
    return orjson.dumps({stored_name(path): value for path, value in snapshot.items()}).decode()


def snapshot_unchanged(stored: str | dict[str, list[int]] | None) -> bool:
    """True when every folder of a stored snapshot still has its mtime: one stat per folder
    rather than listing every file (1,200 folders of 7,400 files: ~5 ms against ~45 ms)."""
    snapshot = stored if isinstance(stored, dict) else _load_snapshot(stored)
    if not snapshot:
        return False
    try:
        for path, (mtime_ns, size) in snapshot.items():
            st = os.stat(path)
            if st.st_mtime_ns != mtime_ns or (size and st.st_size != size):
                return False
    except (OSError, TypeError, ValueError):  # a folder gone, or a value of another shape
        return False
    return True


class RootWatch:
    """Notices a file added, removed or renamed under the roots (a session started in another
    terminal) by their folders' mtimes: every folder listed once, then one stat per folder a check.
    A file that only grows changes no folder: the viewer follows the open session's file itself."""

    def __init__(self, roots: list[str]) -> None:
        self.roots = roots  # as an IngestReport lists them
        self.snapshots: dict[str, dict[str, list[int]] | None] | None = None

    def changed(self) -> bool:
        """Whether a root changed since the last check (the first only looks), for a worker thread."""
        if self.snapshots is None:
            self.snapshots = {root: folder_snapshot(Path(root)) for root in self.roots}
            return False
        changed = False
        for root, before in self.snapshots.items():
            if before is None and not os.path.exists(root):
                continue  # still absent (an agent never used here)
            if before is None or not snapshot_unchanged(before):
                self.snapshots[root] = folder_snapshot(Path(root))
                changed = True
        return changed


# where a file was found: (agent, kind, project_key, adapter), by path
Found = dict[str, tuple[str, str, str | None, Adapter]]


def discover(
    roots: list[Path],
    conn: sqlite3.Connection | None = None,
    known: dict[str, IndexRow] | None = None,
    errors: list[str] | None = None,
) -> tuple[Found, dict[str, str]]:
    """Every source file under the roots, and the roots' new folder snapshots (JSON, by meta key).

    With `conn` and `known` (the source_files rows by path, see INDEX_COLUMNS), a root whose
    folders are unchanged since the last run reuses the files recorded then instead of asking
    every adapter to walk it again (5,000 files: ~0.8 s → ~0.1 s). Paths stay strings and no
    SourceRef is built until a file turns out to need reading: for 7,000 unchanged files that
    was a quarter of a launch."""
    from ..adapters import ADAPTERS

    found: Found = {}
    snapshots: dict[str, str] = {}
    adapters: dict[str, Adapter | None] = {}
    named: set[str] | None = None  # looked up for the first root walked (it builds every adapter)

    def take_known(path: str, row: IndexRow) -> bool:
        """Put a file recorded last time in `found` as it was found then; False when it cannot be."""
        if row.status == "gone" or row.kind in LEDGER_ONLY_KINDS:
            return False
        if path in found:
            return True
        agent = row.agent
        if agent not in adapters:  # once per agent: the registry's own lookup is slow per file
            adapters[agent] = ADAPTERS.get(agent)
        adapter = adapters[agent]
        if adapter is None:
            return False
        found[path] = (row.agent, row.kind, row.project_key, adapter)
        return True

    def add_known(root: Path, folders: set[str] | None) -> None:
        """The files recorded under `root` last time (only those in `folders`, when given)."""
        whole = str(root)
        prefix = whole if not root.is_dir() else whole.rstrip(os.sep) + os.sep
        for path, row in (known or {}).items():
            if (path == whole or path.startswith(prefix)) and (
                folders is None or os.path.dirname(path) in folders
            ):
                take_known(path, row)

    for root in roots:
        try:
            os.stat(root)
        except OSError as exc:
            if not isinstance(exc, (FileNotFoundError, NotADirectoryError)) and errors is not None:
                errors.append(f"{root}: cannot read: {exc.strerror or exc}")  # e.g. a folder made unreadable
            continue
        key = f"roots:{stored_name(root)}"
        previous = _load_snapshot(get_meta(conn, key)) if conn is not None and known is not None else None
        if snapshot_unchanged(previous):
            add_known(root, None)
            continue
        snapshot = folder_snapshot(root)  # before the walk: a file added meanwhile shows next time
        if snapshot is not None:
            snapshots[key] = dump_snapshot(snapshot)
        # one listing of each folder per root, shared by every adapter; a fresh one per root, so
        # that one root's seeds (below) never hide files from another root's walk
        walk.reset()
        unchanged: set[str] | None = None
        if previous and snapshot and root.is_dir():
            # Only the folders whose mtime moved can hold new files (a new session in a project
            # folder): the others keep the files recorded last time and offer none to the
            # adapters, whose per-file checks over 7,000 files took ~0.8 s.
            unchanged = {folder for folder, value in snapshot.items() if previous.get(folder) == value}
            subfolders: dict[str, list[str]] = {}
            for folder in snapshot:
                if folder != str(root):
                    subfolders.setdefault(os.path.dirname(folder), []).append(os.path.basename(folder))
            for folder in unchanged:
                walk.seed(folder, sorted(subfolders.get(folder, [])))
            add_known(root, unchanged)
            # A changed folder is listed again, but the files still in it that were recorded last
            # time keep what they were found to be: only its new names go to the adapters (one new
            # session in a folder of 20,000 took 3-5 s of opening every file for every adapter).
            for folder in snapshot.keys() - unchanged:
                prefix, kept = os.path.join(folder, ""), set()
                for name in walk.listed_files(folder):
                    row = (known or {}).get(prefix + name)
                    if row is not None and take_known(prefix + name, row):
                        kept.add(name)
                if kept:
                    walk.withhold(folder, kept)
        with one_look():  # each file's head read once, each adapter's answer for it asked once
            for adapter in all_adapters():
                try:
                    for ref in adapter.discover(root):
                        path_key = str(ref.path.absolute())
                        if path_key not in found:
                            found[path_key] = (ref.agent, ref.kind, ref.project_key, adapter)
                except OSError as exc:  # one agent's look at a root it cannot read; the others go on
                    if errors is not None:
                        errors.append(f"{exc.filename or root}: cannot read: {exc.strerror or exc}")
                    snapshots[key] = ""  # walked again next run
        if conn is not None and named is None:
            named = _named_roots(conn)
        if conn is not None and str(root) in (named or ()) and root.is_dir():
            _note_unclaimed(conn, root, found, unchanged)
        if _holds_empty_log(root, found):
            snapshots[key] = ""  # walked again next run: that log is offered again as it is written
        unlisted = walk.unlisted()
        if unlisted:
            if errors is not None:
                errors += [
                    f"{folder}: cannot read the folder: {why}" for folder, why in sorted(unlisted.items())
                ]
            snapshots[key] = ""  # so that once the folders can be read, the next run walks them
    return found, snapshots


def _mirrors_from(conn: sqlite3.Connection) -> Any:
    """Another machine's files (pulled from a sync hub) are read from the archive by the adapters that
    read beside the file they place, as sessions are placed again (a replay, a rebuild)."""
    from ..adapters.base import reading_mirrors

    def read(name: str) -> bytes | None:
        from ..read.archive import stored_file  # only when such a file is read

        return stored_file(conn, name)

    return reading_mirrors(read)


def run_ingest(
    conn: sqlite3.Connection,
    sources: Iterable[Path] = (),
    *,
    include_defaults: bool = True,
    progress: Callable[[Progress], None] | None = None,
    cancel: threading.Event | None = None,
    remember: bool = True,
    build_index: bool = True,
    on_wait: Callable[[str], None] | None = None,
) -> IngestReport:
    """Bring the ledger up to date with every source file; safe to interrupt between files.

    With `build_index=False` a search index left behind by a bulk load stays behind, for the
    caller to catch up with `core.store.search_index.build` (the TUI does it while the user browses).
    One ingest writes at a time: while another holds the writer lock this one waits for it, after
    telling `on_wait` who it waits for (a `cancel` set meanwhile ends the wait: a cancelled report)."""
    try:
        with writer_lock(conn, on_wait=on_wait, cancel=cancel), _mirrors_from(conn), _ingest_cache(conn):
            return _run_ingest(conn, sources, include_defaults, progress, cancel, remember, build_index)
    except WriterBusy:
        return IngestReport(cancelled=True)


# SQLite's page cache while ingesting, in KiB (a connection's is 64 MB otherwise, for readers): a
# cold ingest filled all 64 MB with pages it had written or would not read again, the largest part
# of its peak memory besides the embedding model. 100 MB archive, cold, peak RSS: 64 MB 238 MiB,
# 16 MB 189, 8 MB 148 (with the embedding's smaller batches), 4 MB 143; CPU time the same (1.00x,
# interleaved pairs against the 64 MB cache)
INGEST_CACHE_KIB = 4096


@contextlib.contextmanager
def _ingest_cache(conn: sqlite3.Connection) -> Iterator[None]:
    """The connection's page cache at INGEST_CACHE_KIB while it ingests, as it was after."""
    before = conn.execute("PRAGMA cache_size").fetchone()[0]
    conn.execute(f"PRAGMA cache_size = -{INGEST_CACHE_KIB}")
    try:
        yield
    finally:
        with contextlib.suppress(sqlite3.Error):  # a connection the ingest's failure broke stays so
            conn.execute(f"PRAGMA cache_size = {int(before)}")


def ingest_known(
    conn: sqlite3.Connection,
    paths: Iterable[str],
    *,
    progress: Callable[[Progress], None] | None = None,
    cancel: threading.Event | None = None,
    on_wait: Callable[[str], None] | None = None,
    build_index: bool = True,
) -> IngestReport:
    """Read what changed in these files, already in the archive, as their last ingest found them
    (agent, kind, project): no folder is walked and no adapter asked whose a file is, so an agent
    appending to its session costs a stat and the new bytes (`threadloom watch`, the hooks). A path
    the archive does not know, or knows as gone, is left out (`IngestReport.unknown_paths`): a full
    `run_ingest` finds it."""
    try:
        with writer_lock(conn, on_wait=on_wait, cancel=cancel), _mirrors_from(conn), _ingest_cache(conn):
            return _run_ingest(conn, (), False, progress, cancel, False, build_index, known=list(paths))
    except WriterBusy:
        return IngestReport(cancelled=True)


class KnownSource(NamedTuple):
    """A source file as the archive last recorded it (see `known_sources`)."""

    agent: str
    size: int
    mtime_ns: int


def known_sources(conn: sqlite3.Connection) -> dict[str, KnownSource]:
    """Every source file the archive reads (not gone, not a ledger-only row), by its path on disk,
    with its agent and the size and mtime last recorded: what `ingest_known` can read again
    without a walk, and how a watcher tells that one changed since (see `source_stat`)."""
    kinds = ", ".join(f"'{kind}'" for kind in LEDGER_ONLY_KINDS)
    return {
        disk_name(path): KnownSource(agent, size, mtime_ns)
        for path, agent, size, mtime_ns in conn.execute(
            f"SELECT path, agent, size, mtime_ns FROM source_files WHERE status != 'gone' AND kind NOT IN ({kinds}) "
            "AND path NOT LIKE ?",
            (MIRROR_LIKE,),
        )
    }


def source_stat(agent: str, path: str) -> os.stat_result:
    """A source file's stat as an ingest records it (a database's size and mtime count its WAL's)."""
    from ..adapters import ADAPTERS

    adapter = ADAPTERS.get(agent)
    return os.stat(path) if adapter is None else _stat(adapter, path)


def _plan_known(conn: sqlite3.Connection, paths: list[str], report: IngestReport) -> list[FilePlan]:
    """The plans of `ingest_known`: each known file whose stat moved, with what was recorded of it."""
    from ..adapters import ADAPTERS

    plans: list[FilePlan] = []
    for path in dict.fromkeys(paths):
        row = _known_row(conn, path)
        if row is None or row.status == "gone" or row.kind in LEDGER_ONLY_KINDS or row.agent not in ADAPTERS:
            report.unknown_paths.append(path)
            continue
        adapter = ADAPTERS[row.agent]
        report.files_seen += 1
        try:
            st = _stat(adapter, path)
        except OSError as exc:
            report.errors.append(f"{path}: {exc.strerror or exc}")
            continue
        if not stat.S_ISREG(st.st_mode):
            report.errors.append(f"{path}: not a regular file ({file_kind(st.st_mode)}); skipped")
            continue
        if _unchanged(row, st) and row.status == "ok":
            report.files_skipped += 1
            continue
        label = None if row.project_key is None else shown_name(stored_name(row.project_key))
        plans.append(FilePlan(SourceRef(Path(path), row.agent, row.kind, label), adapter, st, row))
    return plans


def _run_ingest(
    conn: sqlite3.Connection,
    sources: Iterable[Path],
    include_defaults: bool,
    progress: Callable[[Progress], None] | None,
    cancel: threading.Event | None,
    remember: bool,
    build_index: bool,
    known: list[str] | None = None,
) -> IngestReport:
    started = time.perf_counter()
    report = IngestReport()
    # an upgrade's rebuild first: the files read next are placed in sessions that are whole
    if not rebuild_pending(conn, progress, cancel, started=started):
        report.cancelled = True
        report.seconds = round(time.perf_counter() - started, 3)
        return report
    if known is None:
        roots = scan_roots(conn, list(sources), include_defaults, remember)
        report.roots = [str(r) for r in roots]
        plans, snapshots = _plan(conn, roots, report)
    else:
        plans, snapshots = _plan_known(conn, known, report), {}
    ledger = Ledger(conn)
    # Into an empty ledger, building the search index once after the load is much cheaper than
    # keeping it up to date file by file.
    bulk = bool(plans) and conn.execute("SELECT NOT EXISTS (SELECT 1 FROM entries)").fetchone()[0] == 1
    fast_marker = None
    if bulk:
        search_index.mark_behind(conn)  # survives a crash: the next run catches the index up
        fast_marker = _enter_fast_load(conn)
    live_marker = fast_marker
    bytes_total = sum(max(0, p.stat.st_size - (p.row.bytes_ingested if p.row else 0)) for p in plans)
    if bulk or bytes_total >= ingest_workers.PARALLEL_MIN_BYTES:
        cost.prefetch()  # the price table loads in a process of its own, on another core, meanwhile
    bytes_done = 0
    batch = _Batch(conn)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # parsed records are short-lived; the cyclic GC costs 2.6x here (PERF.md)
    reader: ParallelReader | None = None
    try:
        reader = ingest_workers.start(plans)  # None: too little to read for workers to pay off
        report.workers = 0 if reader is None else reader.workers
        for i, plan in enumerate(plans):
            if cancel is not None and cancel.is_set():
                report.cancelled = True
                break
            if progress is not None:
                progress(
                    Progress(
                        i,
                        len(plans),
                        bytes_done,
                        bytes_total,
                        str(plan.ref.path),
                        time.perf_counter() - started,
                    )
                )
            try:
                ready = reader.take(i) if reader is not None else None
                added, nbytes = _ingest_file(
                    conn, ledger, plan, undo_by_delete=fast_marker is not None, ready=ready
                )
                if added and plan.ref.kind == "document" and plan.adapter.decodes:
                    added += _ingest_decoded(conn, ledger, plan, fast_marker is not None)
                report.records_added += added
                report.bytes_read += nbytes
                report.files_read += 1
            except OSError as exc:
                _record_error(conn, plan, f"cannot read: {exc.strerror or exc}")
                report.errors.append(f"{plan.ref.path}: cannot read: {exc.strerror or exc}")
            except sqlite3.OperationalError:
                if fast_marker is None:
                    batch.abandon()
                else:  # no rollback without a journal: the marker stays, the next run starts over
                    fast_marker = None
                raise
            except Exception as exc:  # a bug or an unforeseen shape: reported, and a new file's bytes kept
                ledger.rollback()
                why = f"{type(exc).__name__}: {exc}"
                # a file with records read before keeps them as they are (a whole re-read, raw only,
                # would make them unread too): what is new waits in the file for the next run
                kept = plan.row is None or plan.row.status == "unread"
                try:
                    if kept:
                        _keep_raw_only(conn, ledger, plan, why, report, fast=fast_marker is not None)
                        why = f"kept raw only, its records unread: {why}"
                except sqlite3.OperationalError:
                    if fast_marker is None:
                        batch.abandon()
                    else:
                        fast_marker = None
                    raise
                except Exception:  # not even as bytes: left for the next run, which tries it again
                    ledger.rollback()
                    kept = False
                if not kept:
                    _record_error(conn, plan, why)
                report.errors.append(f"{plan.ref.path}: {why}")
            planned = max(0, plan.stat.st_size - (plan.row.bytes_ingested if plan.row else 0))
            bytes_done += planned
            batch.file_done(planned)
        batch.commit()
        if fast_marker is not None:
            _leave_fast_load(conn, fast_marker)
            fast_marker = None
        changed = ledger.finalize()
        if not report.cancelled:
            for key, snapshot in snapshots.items():
                set_meta(conn, key, snapshot)
        if search_index.indexed_upto(conn) is not None:
            report.index_complete = False
        if build_index and not report.cancelled and report.index_complete is False:
            index_started = time.perf_counter()

            def index_progress(p: search_index.IndexProgress) -> None:
                if progress is not None:
                    progress(
                        Progress(
                            len(plans),
                            len(plans),
                            bytes_done,
                            bytes_total,
                            "",
                            time.perf_counter() - started,
                            p.done,
                            p.total,
                            Phase.INDEXING,
                        )
                    )

            report.index_complete = search_index.build(conn, index_progress, cancel)
            report.cancelled = not report.index_complete
            report.index_seconds = round(time.perf_counter() - index_started, 3)
    finally:
        if reader is not None:
            reader.close()
        batch.commit()
        if fast_marker is not None:  # interrupted (Ctrl+C): what was read is whole and kept
            _leave_fast_load(conn, fast_marker)
        if live_marker is not None:  # over, whichever way: a marker left behind is a dead load's now
            LIVE_FIRST_LOADS.discard(os.path.realpath(live_marker))
        if gc_was_enabled:
            gc.enable()

    def signals_progress(done: int, total: int) -> None:
        if progress is not None:
            elapsed = time.perf_counter() - started
            progress(
                Progress(
                    len(plans), len(plans), bytes_done, bytes_total, "", elapsed, done, total, Phase.SIGNALS
                )
            )

    def embed_progress(done: int, total: int) -> None:
        if progress is not None:
            elapsed = time.perf_counter() - started
            progress(
                Progress(
                    len(plans), len(plans), bytes_done, bytes_total, "", elapsed, done, total, Phase.EMBEDDING
                )
            )

    # costs, the stats' sums, the episodes, the signals: of this run's sessions and any a killed writer left
    timings: dict[str, float] = {}
    try:
        changed = finish_derived(
            conn, changed, on_signals=signals_progress, on_embed=embed_progress, timings=timings
        )
    finally:
        cost.drop_prefetch()  # started ahead and not needed: every price was in the ledger
    report.signals_seconds = round(timings["signals"], 3)
    report.episodes_seconds = round(timings.get("episodes", 0.0), 3)
    if progress is not None:
        progress(Progress(len(plans), len(plans), bytes_done, bytes_total, "", time.perf_counter() - started))
    report.changed_sessions = sorted(changed)
    report.sessions = len(changed)
    report.sessions_total = conn.execute("SELECT count(*) FROM agent_sessions").fetchone()[0]
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def rebuild_pending(
    conn: sqlite3.Connection,
    progress: Callable[[Progress], None] | None = None,
    cancel: threading.Event | None = None,
    *,
    on_wait: Callable[[str], None] | None = None,
    started: float | None = None,
) -> bool:
    """Rebuild the sessions, turns, tool calls and usage a schema upgrade emptied (see
    `core.store.db.rebuild_due`) by replaying every stored record: a minute at 1 GB, which is why
    opening a database leaves it to this. Returns True when the derived tables are current
    (nothing was due, or the rebuild is done); False when `cancel` stopped it (nothing changed:
    it is still due) or it was cancelled while waiting for another writer.

    `progress` gets the phase as ingest Progress of Phase.REBUILDING (files and bytes
    replayed). The search index is indexed again afterwards (`core.store.search_index.build`): the
    replay re-derives the text it covers."""
    if rebuild_due(conn) is None:
        return True
    try:
        with writer_lock(conn, on_wait=on_wait, cancel=cancel), _mirrors_from(conn):
            return _rebuild(conn, progress, cancel, time.perf_counter() if started is None else started)
    except WriterBusy:
        return False


def _rebuild(
    conn: sqlite3.Connection,
    progress: Callable[[Progress], None] | None,
    cancel: threading.Event | None,
    started: float,
) -> bool:
    if rebuild_due(conn) is None:  # another writer did it while this one waited
        return True
    on_step = None
    if progress is not None:

        def on_step(files_done: int, files_total: int, bytes_done: int, bytes_total: int) -> None:
            elapsed = time.perf_counter() - started
            progress(
                Progress(
                    files_done, files_total, bytes_done, bytes_total, Phase.REBUILDING.value, elapsed,
                    phase=Phase.REBUILDING,
                )
            )  # fmt: skip

    try:
        rebuild_derived(conn, progress=on_step, cancel=cancel)
    except ReplayCancelled:
        return False
    from ..insight.memory import follow_rebuild  # a rebuild's alone: not loaded by every ingest

    with transaction(conn, immediate=True):
        search_index.reset(conn)
        follow_rebuild(conn)  # marks on messages numbered anew: back on their message
        set_meta(conn, REBUILD_KEY, None)
    # every session was replayed: what follows from its records (costs, the stats' sums, episodes,
    # signals) is finished as any writer finishes the sessions it changed, its marks cleared with it
    # (a whole rebuild of the signals here had left every session marked unfinished)
    finish_derived(conn, {r[0] for r in conn.execute("SELECT id FROM agent_sessions")})
    return True


def _enter_fast_load(conn: sqlite3.Connection) -> Path | None:
    """Write a first load into an empty ledger without a journal (~35% faster at 1 GB: every
    page is written once instead of to the WAL and again at checkpoints).

    Only when this is the database's one connection. A marker file beside the database says a
    first load is under way while the writer lock is held; a marker found with the lock free is a
    load that died, and `core.store.db.connect` starts the database afresh (it held nothing but that load)."""
    row = conn.execute("PRAGMA database_list").fetchone()
    if not row or not row[2] or conn.in_transaction:
        return None
    marker = Path(row[2] + FIRST_LOAD_SUFFIX)
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        mode = conn.execute("PRAGMA journal_mode = OFF").fetchone()[0]
    except (OSError, sqlite3.OperationalError):
        mode = None
    if mode != "off":  # another connection has the database open: stay in WAL mode
        marker.unlink(missing_ok=True)
        return None
    conn.execute("PRAGMA synchronous = OFF")
    LIVE_FIRST_LOADS.add(os.path.realpath(marker))
    return marker


def _leave_fast_load(conn: sqlite3.Connection, marker: Path) -> None:
    if conn.in_transaction:
        conn.execute("COMMIT")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    marker.unlink(missing_ok=True)


class _Batch:
    """Groups files into one transaction (each file in its own savepoint).

    A commit per file rewrites the same index pages into the WAL thousands of times on a first
    load of small files; committing every second or 64 MB keeps a crash's loss to files that are
    simply read again, and lets a reader (the TUI) see progress about once a second.
    """

    MAX_BYTES = 64 << 20
    MAX_SECONDS = 1.0
    FIRST_SECONDS = 0.25  # the first transaction ends sooner: the TUI shows its sessions meanwhile

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.bytes = 0
        self.started = time.monotonic()
        self.limit = min(self.FIRST_SECONDS, self.MAX_SECONDS)

    def file_done(self, nbytes: int) -> None:
        self.bytes += nbytes
        if self.bytes >= self.MAX_BYTES or time.monotonic() - self.started >= self.limit:
            self.commit()

    def commit(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")
        self.bytes = 0
        self.started = time.monotonic()
        self.limit = self.MAX_SECONDS

    def abandon(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")


def _plan(
    conn: sqlite3.Connection, roots: list[Path], report: IngestReport
) -> tuple[list[FilePlan], dict[str, str]]:
    """What this run must read: every discovered file whose size or mtime changed (or is new).
    Also marks files that disappeared as gone. Returns (plans, root snapshots to store)."""
    _apply_rereads(conn)
    known = {  # by the path as the file system names it (see core.adapters.base.stored_name)
        disk_name(row.path): row
        for row in map(IndexRow._make, conn.execute(f"SELECT {INDEX_COLUMNS} FROM source_files"))
    }
    found, snapshots = discover(roots, conn, known, report.errors)
    report.files_seen = len(found)
    report.unclaimed = unclaimed(conn, roots)
    plans: list[FilePlan] = []
    for path, (agent, kind, project_key, adapter) in found.items():
        try:
            st = _stat(adapter, path)
        except OSError as exc:
            report.errors.append(f"{path}: {exc.strerror or exc}")
            continue
        if not stat.S_ISREG(st.st_mode):  # a FIFO named *.jsonl would block the read forever
            report.errors.append(f"{path}: not a regular file ({file_kind(st.st_mode)}); skipped")
            continue
        row = known.get(path)
        if row is not None and _unchanged(row, st) and row.status in ("ok", "gone"):
            if row.status == "gone":
                conn.execute("UPDATE source_files SET status = 'ok', error = NULL WHERE id = ?", (row.id,))
            report.files_skipped += 1
            continue
        # a project folder named in bytes that are not UTF-8 is known by its name escaped (a label)
        label = None if project_key is None else shown_name(stored_name(project_key))
        ref = SourceRef(Path(path), agent, kind, label)
        plans.append(FilePlan(ref, adapter, st, _known_row(conn, path) if row is not None else None))
    root_prefixes = tuple(str(r) for r in roots)
    for path, row in known.items():
        if row.kind == VERSION_KIND or path.startswith(MIRROR_ROOT + "/"):
            continue  # a superseded version, or another machine's file pulled from a hub: no file of its own
        on_disk = container_of(path) or path  # a decoded log is gone when the file it came from is
        if (
            path not in found
            and path.startswith(root_prefixes)
            and row.status != "gone"
            and _missing(on_disk)
        ):
            conn.execute("UPDATE source_files SET status = 'gone' WHERE id = ?", (row.id,))
            report.files_gone += 1
    return plans, snapshots


# The files a reader of agents' logs would take for one (by their ends): what none takes is said
LOG_SHAPES = {
    ".jsonl": "no agent's records found in its first lines",
    ".json": "not a session document of an agent threadloom reads",
    ".zst": "not a compressed log of an agent threadloom reads",
    ".db": "not the database of an agent threadloom reads",
    ".sqlite": "not the database of an agent threadloom reads",
    ".sqlite3": "not the database of an agent threadloom reads",
    ".vscdb": "not the database of an agent threadloom reads",
}
UNCLAIMED_KEY = "unclaimed:"  # + a root: its unclaimed files when last walked (JSON), in ledger_meta
UNCLAIMED_LIMIT = 1000


def _named_roots(conn: sqlite3.Connection) -> set[str]:
    """The folders whose unclaimed files are said: those the user named (--source, remembered) and
    the default folders of the agents whose adapter `says_unclaimed` (Claude Code's projects; other
    agents' folders hold much besides their logs)."""
    from ..adapters import ADAPTERS

    own = {str(root) for a in ADAPTERS.values() if a.says_unclaimed for root in a.default_roots()}
    return {disk_name(r[0]) for r in conn.execute("SELECT path FROM source_roots")} | own


def _holds_empty_log(root: Path, found: Found) -> bool:
    """Whether a `.jsonl` under `root` that no adapter took is empty: an agent makes its log, then
    writes it, and one seen in between says nothing of whose it is; as it grows its folder keeps
    its mtime, so a snapshot taken now would never offer it again."""
    if not root.is_dir():
        return False
    for dirpath, _, filenames in walk.walk(root):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if name.endswith(".jsonl") and path not in found:
                with contextlib.suppress(OSError):
                    if os.stat(path).st_size == 0:
                        return True
    return False


def _note_unclaimed(conn: sqlite3.Connection, root: Path, found: Found, unchanged: set[str] | None) -> None:
    """Record the files under `root` shaped like logs that no adapter claimed, with why. From the
    listing the adapters' walk made (no folder is listed twice); a folder unchanged since the last
    run offers no files to it, so what was recorded there then is kept."""
    key = UNCLAIMED_KEY + stored_name(root)
    own = conn.execute("PRAGMA database_list").fetchone()[2] or ""  # the archive itself, if it sits there
    files = [
        f
        for f in _recorded_unclaimed(conn, key)
        if unchanged and os.path.dirname(disk_name(f["path"])) in unchanged
    ]
    mine = _own_folders()
    for dirpath, _, filenames in walk.walk(root):
        if any(dirpath == folder or dirpath.startswith(folder + os.sep) for folder in mine):
            continue  # threadloom's own (its cache of prices, its archive): no agent's logs
        for name in filenames:
            path = os.path.join(dirpath, name)
            why = next((w for end, w in LOG_SHAPES.items() if name.endswith(end)), None)
            if why is not None and path not in found and path != own:
                # another agent's file an adapter recognises (a Qwen Code transcript) says so
                why = stranger(Path(path)) or why
                files.append({"path": stored_name(path), "why": why})
    files.sort(key=lambda f: f["path"])
    set_meta(conn, key, orjson.dumps(files[:UNCLAIMED_LIMIT]).decode())


def _own_folders() -> list[str]:
    """threadloom's own folders (its cache, its data, its settings): a source that holds them (a
    home folder given whole) holds no agent's logs there."""
    from platformdirs import user_cache_dir, user_config_dir, user_data_dir

    return [
        d("threadloom", appauthor=False).rstrip(os.sep)
        for d in (user_cache_dir, user_data_dir, user_config_dir)
    ]


def _recorded_unclaimed(conn: sqlite3.Connection, key: str) -> list[dict[str, str]]:
    try:
        files = orjson.loads(get_meta(conn, key) or "[]")
    except orjson.JSONDecodeError:
        return []
    return files if isinstance(files, list) else []


def unclaimed(conn: sqlite3.Connection, roots: Iterable[Path] | None = None) -> list[dict[str, str]]:
    """The unclaimed files last recorded under `roots` (None: every root), their paths as shown."""
    keys = None if roots is None else {UNCLAIMED_KEY + stored_name(root) for root in roots}
    out = []
    for (key,) in conn.execute("SELECT key FROM ledger_meta WHERE key LIKE 'unclaimed:%' ORDER BY key"):
        if keys is None or key in keys:
            out += [{"path": shown_name(f["path"]), "why": f["why"]} for f in _recorded_unclaimed(conn, key)]
    return out


def _unchanged(row: IndexRow | KnownRow, st: os.stat_result) -> bool:
    """Whether a file is as the last run left it, from its stat alone: the same size and mtime, and
    the same inode and ctime (a rewrite that puts the mtime back, `touch -r`, still moves the ctime;
    a file replaced by another, the inode)."""
    return (
        row.size == st.st_size
        and row.mtime_ns == st.st_mtime_ns
        and (row.inode is None or row.inode == st.st_ino)
        and (row.ctime_ns is None or row.ctime_ns == st.st_ctime_ns)
    )


def _missing(path: str) -> bool:
    """Whether a file is no longer there (os.path.exists() also says False for a file in a folder
    that may not be read: that one is still there, and the run says the folder cannot be read)."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def _known_row(conn: sqlite3.Connection, path: str) -> KnownRow | None:
    """What the last run recorded of one file (KNOWN_COLUMNS), for a file that must be read."""
    row = conn.execute(
        f"SELECT {KNOWN_COLUMNS} FROM source_files WHERE path = ?", (stored_name(path),)
    ).fetchone()
    return None if row is None else KnownRow._make(row)


def _stat(adapter: Adapter, path: str) -> os.stat_result:
    """The file's stat; for sources with side files (a database's WAL) their change counts too."""
    st = os.stat(path)
    if not adapter.side_files:
        return st
    extra = adapter.stat_paths(Path(path))
    size, mtime = st.st_size, st.st_mtime_ns
    for side in extra:
        try:
            side_st = os.stat(side)
        except OSError:
            continue
        size += side_st.st_size
        mtime = max(mtime, side_st.st_mtime_ns)
    fields = list(st)
    fields[6] = size
    fields[8] = mtime // 1_000_000_000
    result = os.stat_result(fields, {"st_mtime_ns": mtime, "st_mtime": mtime / 1e9})
    return result


def _keep_raw_only(
    conn: sqlite3.Connection, ledger: Ledger, plan: FilePlan, why: str, report: IngestReport, *, fast: bool
) -> None:
    """A file never stored (or stored raw only) whose storing failed: its bytes stored, each record
    unread and saying why (`_raw_only`), and the file left for the next run to read again whole (no
    hash to skip it by), as the run after a fix does."""
    if fast and plan.row is None:  # no journal: the row its failed storing made is left (with no
        # record: a document stored whole whose decoding failed after keeps its row and its records)
        conn.execute(
            "DELETE FROM source_files WHERE path = ? AND NOT EXISTS "
            "(SELECT 1 FROM entries e WHERE e.source_file_id = source_files.id)",
            (stored_name(plan.ref.path),),
        )
    added, nbytes = _ingest_file(conn, ledger, _raw_only(plan, why), undo_by_delete=fast)
    report.records_added += added
    report.bytes_read += nbytes
    report.files_read += 1
    conn.execute(
        "UPDATE source_files SET status = 'unread', error = ?, content_hash = NULL WHERE path = ?",
        (f"kept raw only, its records unread: {why}", stored_name(plan.ref.path)),
    )


def _raw_only(plan: FilePlan, why: str) -> FilePlan:
    """`plan` for a file whose storing failed past each record's own guard (`normalized`): a value
    the database refuses (a lone surrogate, as a title once held), a fault in what is derived from
    its records. Each record is kept byte for byte as one its reader failed on, the failure in its
    note: a file dropped whole would be lost with the agent's cleanup. (A rebuild reads them again.)"""
    note = f"kept raw only: storing its file as read failed ({why})"[:500]
    adapter = copy.copy(plan.adapter)

    def unread(rec: RawRecord, ctx: FileContext) -> Record:
        return Record(entry_type="unreadable", known=False, parse_error=note)

    setattr(adapter, "normalize", unread)  # this copy's alone  # noqa: B010
    return FilePlan(plan.ref, adapter, plan.stat, plan.row)


def _record_error(conn: sqlite3.Connection, plan: FilePlan, message: str) -> None:
    path = str(plan.ref.path)
    if plan.row is None:
        conn.execute(
            "INSERT INTO source_files (path, agent, kind, size, mtime_ns, bytes_ingested, lines_ingested, "
            "status, error, project_key, ends_with_newline) VALUES (?, ?, ?, 0, 0, 0, 0, 'error', ?, ?, 1) "
            "ON CONFLICT(path) DO UPDATE SET status = 'error', error = excluded.error",
            (stored_name(path), plan.ref.agent, plan.ref.kind, message, plan.ref.project_key),
        )
    else:
        conn.execute(
            "UPDATE source_files SET status = 'error', error = ? WHERE id = ?", (message, plan.row.id)
        )


def _ingest_decoded(
    conn: sqlite3.Connection, ledger: Ledger, plan: FilePlan, undo_by_delete: bool = False
) -> int:
    """The log inside an encoded document (a `.jsonl.zst`), read like a log file of its own.

    The document itself is stored whole, so its exact bytes stay restorable; its decoded lines go
    to a ledger-only source (`<path>#decoded`) so each message is searchable and browsable."""
    try:
        data = plan.adapter.decode(plan.ref.path, read_regular(plan.ref.path))
    except (OSError, ValueError):
        return 0  # the document's own record says what is wrong with it
    if data is None:
        return 0
    path = decoded_path(plan.ref.path)
    row = _known_row(conn, path)
    st = os.stat_result(
        (0o100400, 0, 0, 1, 0, 0, len(data), 0, int(plan.stat.st_mtime), int(plan.stat.st_mtime)),
        {"st_mtime_ns": plan.stat.st_mtime_ns},
    )
    ref = SourceRef(Path(path), plan.ref.agent, "decoded", plan.ref.project_key)
    added, _ = _ingest_file(
        conn, ledger, FilePlan(ref, plan.adapter, st, row), source_bytes=data, undo_by_delete=undo_by_delete
    )
    return added


def _ingest_file(
    conn: sqlite3.Connection,
    ledger: Ledger,
    plan: FilePlan,
    source_bytes: bytes | None = None,
    undo_by_delete: bool = False,
    ready: FileRead | None = None,
) -> tuple[int, int]:
    """One source file (or `source_bytes` standing for it), in a savepoint of the batch's
    transaction. Returns (records added, bytes read).

    `undo_by_delete`: the database has no journal (a first load), so a file that fails half-way
    is undone by deleting its records rather than by a rollback. `ready`: the file as a worker
    process reads it (core.ingest.workers); should the worker fail or die, it is read here."""
    adapter, ref = plan.adapter, plan.ref
    if ready is not None:
        try:
            return _store_read(conn, ledger, plan, ready, undo_by_delete)
        except WorkerLost:
            # the savepoint is undone; without a journal the new file's row is left: gone too, so
            # the file is read here as the new file it is
            conn.execute("DELETE FROM source_files WHERE path = ?", (stored_name(ref.path),))
    if adapter.mode == "database" and ref.kind != "side":  # a database's side file is a document
        return _store_read(conn, ledger, plan, _read_database(conn, plan), undo_by_delete)
    # stored with the file still open: a large log's records are read as they are written
    with io.BytesIO(source_bytes) if source_bytes is not None else open_regular(ref.path) as f:
        if adapter.mode == "document" or ref.kind in ("document", "side"):
            read = _read_document(conn, plan, f)
        else:
            read = read_lines(plan, f)
            if read is None and plan.row is not None:
                _touch(conn, plan.row.id, plan.stat)
        return _store_read(conn, ledger, plan, read, undo_by_delete)


def _store_read(
    conn: sqlite3.Connection, ledger: Ledger, plan: FilePlan, read: FileRead | None, undo_by_delete: bool
) -> tuple[int, int]:
    if read is None:  # unchanged, or waiting for its writer: nothing to store
        return 0, 0
    return _store(conn, ledger, plan, read, undo_by_delete), read.nbytes


def _read_database(conn: sqlite3.Connection, plan: FilePlan) -> FileRead | None:
    """The rows of a SQLite source (opened read-only by the adapter), read again whole, and stored
    only when they changed."""
    ref, adapter, st, row = plan.ref, plan.adapter, plan.stat, plan.row
    try:
        records = list(adapter.read_rows(ref.path))
    except SourceIncomplete:
        _mark_waiting(conn, plan)
        return None
    except sqlite3.Error as exc:
        # the agent's database, not ours: an error of this file only (an OperationalError
        # raised on would stop the run and be reported as threadloom's database failing)
        raise SourceUnreadable(f"its database cannot be read ({exc})") from None
    digest = hashlib.sha256()
    for r in records:
        digest.update(r.offset.to_bytes(8, "little", signed=True))
        digest.update(r.raw)
    new_hash = digest.hexdigest()[:32]
    if row is not None and row.content_hash == new_hash:
        _touch(conn, row.id, st)
        return None
    return FileRead(records, True, 0, 0, st.st_size, new_hash, st.st_size)


def _read_document(conn: sqlite3.Connection, plan: FilePlan, f: BinaryIO) -> FileRead | None:
    """A file its agent rewrites whole (a JSON document): read whole, and stored again only when
    its bytes changed, not merely its mtime."""
    adapter, st, row = plan.adapter, plan.stat, plan.row
    data = f.read(max(0, st.st_size))
    new_hash = hashlib.sha256(data).hexdigest()[:32]
    if row is not None and row.content_hash == new_hash:
        _touch(conn, row.id, st)
        return None
    if plan.ref.kind == "side":  # a session's side file, kept as it is in pieces a row holds (an empty
        records = list(pieces(data, 0, len(data), 0, 1, newline=False))  # one is one empty record)
        return FileRead(records, True, 0, 0, len(data), new_hash, len(data))
    try:
        try:
            records = adapter.split(data)
        except SourceIncomplete:
            if time.time() - st.st_mtime < STALE_TAIL_SECONDS:
                _mark_waiting(conn, plan)
                return None
            records = adapter.split_unfinished(data)  # keep the bytes even if never finished
    except Exception:  # an adapter failing on these bytes (a bug, a shape nobody foresaw) loses none
        # of them: kept as they are, in pieces a row holds, each read as it can be (unread, if not)
        records = list(pieces(data, 0, len(data), 0, 1, newline=False))
    return FileRead(records, True, 0, 0, len(data), new_hash, len(data))


def _store(
    conn: sqlite3.Connection, ledger: Ledger, plan: FilePlan, read: FileRead, undo_by_delete: bool
) -> int:
    """Write what was read, in a savepoint of the batch's transaction: the file's row, its
    entries, the sessions they change, the search index. Returns the records added."""
    ref, adapter, row = plan.ref, plan.adapter, plan.row
    if not conn.in_transaction:
        conn.execute("BEGIN IMMEDIATE")
    conn.execute("SAVEPOINT source_file")
    file_id = None
    try:
        now = int(time.time() * 1000)
        # read under the write lock: while the index is behind, new entries are left to its builder
        index_upto = search_index.indexed_upto(conn)
        file_id, affected, rewrite = _prepare_source_file(conn, plan, read, index_upto)
        ctx = FileContext(ref.path, ref.kind, ref.project_key)
        ctx.session_of_uuid = lambda uuid: _session_of_uuid(conn, file_id, uuid)
        ledger.begin_file(
            file_id, keep_tool_io=not adapter.tool_io_in_record, kept_inputs=adapter.kept_inputs
        )
        # records of a file read again whole are placed by the replay of their sessions below
        replace = read.rewrite and row is not None
        writer = EntryWriter(
            conn, ledger, file_id, place=not replace, reuse=rewrite.reuse if rewrite else None
        )
        first_new_id = writer.next_id
        if read.normalized is not None:
            count = writer.write_normalized(read.normalized, affected)
        else:
            count = writer.write(adapter, ctx, read.records, affected)
        version_id = rewrite.keep_superseded(now) if rewrite is not None else None
        ledger.flush()
        if replace:
            replay(conn, ledger, affected)
        if rewrite is not None:
            # every record the index covered was taken out of it: the file's records go back in, and
            # the superseded ones too (the index covers every stored record; search shows only those
            # in a session); past a behind index's position they are left to its builder
            search_index.add_file(conn, file_id, 0, index_upto)
            if version_id is not None:
                search_index.add_file(conn, version_id, 0, index_upto)
        elif index_upto is None and count:
            # the search index follows in the same transaction (a cold bulk load builds it once at the end)
            search_index.add_file(conn, file_id, first_new_id)
        _record_read(conn, plan, read, file_id, count, now)
        conn.execute("RELEASE source_file")
    except BaseException:
        if undo_by_delete:
            conn.execute("RELEASE source_file")
            if file_id is not None:
                conn.execute("DELETE FROM entries WHERE source_file_id = ?", (file_id,))
                conn.execute(
                    "DELETE FROM source_reads WHERE source_file_id = ? AND read_at = ?", (file_id, now)
                )
        else:
            conn.execute("ROLLBACK TO source_file")
            conn.execute("RELEASE source_file")
        ledger.rollback()
        raise
    return count


def _prepare_source_file(
    conn: sqlite3.Connection, plan: FilePlan, read: FileRead, index_upto: int | None
) -> tuple[int, set[str], _Rewrite | None]:
    """The file's source_files id (a new row for a new file) with its stored records made ready
    for the new ones: set aside when it is read again whole (`_Rewrite`; with the sessions they
    were in, to be replayed), or the open last line marked complete when an append follows it."""
    ref, st, row = plan.ref, plan.stat, plan.row
    if row is None:
        cur = conn.execute(
            "INSERT INTO source_files (path, agent, kind, size, mtime_ns, inode, bytes_ingested, lines_ingested, "
            "content_hash, open_tail_offset, ends_with_newline, status, project_key) "
            "VALUES (?, ?, ?, 0, 0, ?, 0, 0, NULL, NULL, 1, 'ok', ?)",
            (stored_name(ref.path), ref.agent, ref.kind, st.st_ino, ref.project_key),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid, set(), None
    file_id = row.id
    affected: set[str] = set()
    rewrite = None
    if read.rewrite:
        rewrite = _Rewrite(conn, row)
        affected = set(rewrite.sessions)
        search_index.forget_file(conn, file_id, index_upto)
        rewrite.set_aside()
    elif read.start > 0 and row.open_tail_offset is not None and read.start == row.bytes_ingested + 1:
        conn.execute(
            "UPDATE entries SET newline = 1 WHERE source_file_id = ? AND byte_offset = ?",
            (file_id, row.open_tail_offset),
        )
    return file_id, affected, rewrite


class _Rewrite:
    """A file read again whole, whose stored records are never deleted.

    Its records are set aside first (their offsets made negative, out of the new version's way).
    Each new record whose bytes equal a set-aside one takes that row back (`reuse`: the same id,
    placed where it now sits), so unchanged records are stored once and ids people copied stay
    valid. What is left aside then is what the new version no longer holds: it moves, out of every
    session, to a source_files row of kind 'version' for this file, and `source_versions` keeps the
    old version's records in order (restore --as-of writes the file as it was)."""

    def __init__(self, conn: sqlite3.Connection, row: KnownRow) -> None:
        self.conn, self.row = conn, row
        old = conn.execute(
            "SELECT id, hash, newline, session_id, byte_offset FROM entries WHERE source_file_id = ? "
            "ORDER BY byte_offset",
            (row.id,),
        ).fetchall()
        self.old_ids = [eid for eid, _, _, _, _ in old]
        self.old_places = [(offset, digest, bool(newline)) for _, digest, newline, _, offset in old]
        self.sessions = sorted({sid for _, _, _, sid, _ in old if sid is not None})
        # by bytes and newline: a row taken back is placed anew, newline included, and the old
        # version is rebuilt from the same rows (a line that gained or lost its newline is not the
        # same record, or the version would come back a byte short or long)
        self.reuse: dict[tuple[str, bool], list[int]] = {}
        for eid, digest, newline, _, _ in reversed(old):  # popped from the end: the first one first
            self.reuse.setdefault((digest, bool(newline)), []).append(eid)

    def set_aside(self) -> None:
        self.conn.execute(
            "UPDATE entries SET byte_offset = -1 - byte_offset WHERE source_file_id = ? AND byte_offset >= 0",
            (self.row.id,),
        )

    def _in_place(self) -> bool:
        """Whether every old record's bytes sit where they sat (by bytes, not by row: a row taken
        back may be an equal line elsewhere)."""
        now = {
            offset: (digest, bool(newline))
            for offset, digest, newline in self.conn.execute(
                "SELECT byte_offset, hash, newline FROM entries WHERE source_file_id = ? AND byte_offset >= 0",
                (self.row.id,),
            )
        }
        return all(now.get(offset) == (digest, newline) for offset, digest, newline in self.old_places)

    def keep_superseded(self, now: int) -> int | None:
        """Once the new version is written: keep what it no longer holds as a version of the file
        (the id of its row; None when the old version is all in the new one)."""
        conn, row = self.conn, self.row
        current = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM entries WHERE source_file_id = ? AND byte_offset >= 0 ORDER BY byte_offset",
                (row.id,),
            )
        ]
        still = set(current)
        removed = sum(1 for eid in self.old_ids if eid not in still)
        if current[: len(self.old_ids)] == self.old_ids:
            return None  # the old version is the new one's start: nothing of it is lost
        if removed == 0 and self.row.size == -1 and self._in_place():
            return None  # a read asked for to mend the records (a rebuild's, a re-read's): no rewrite
        number = (
            1
            + conn.execute(
                "SELECT count(*) FROM source_versions WHERE source_file_id = ?", (row.id,)
            ).fetchone()[0]
        )
        while conn.execute(  # a version whose link was lost (a damaged archive's) keeps its name
            "SELECT 1 FROM source_files WHERE path = ?", (f"{row.path}{VERSION_SUFFIX}{number}",)
        ).fetchone():
            number += 1
        cur = conn.execute(
            "INSERT INTO source_files (path, agent, kind, size, mtime_ns, inode, bytes_ingested, lines_ingested, "
            "content_hash, open_tail_offset, ends_with_newline, status, ingested_at, project_key) "
            "SELECT path || ?, agent, ?, size, mtime_ns, inode, bytes_ingested, lines_ingested, content_hash, "
            "open_tail_offset, ends_with_newline, 'superseded', ingested_at, project_key FROM source_files "
            "WHERE id = ?",
            (f"{VERSION_SUFFIX}{number}", VERSION_KIND, row.id),
        )
        version_id = cur.lastrowid
        assert version_id is not None
        conn.execute(
            "UPDATE entries SET source_file_id = ?, byte_offset = -1 - byte_offset, session_id = NULL, seq = NULL, "
            "turn_id = NULL, dup_of = NULL WHERE source_file_id = ? AND byte_offset < 0",
            (version_id, row.id),
        )
        conn.execute(
            "INSERT INTO source_versions (version_file_id, source_file_id, superseded_at, records, removed, "
            "entry_ids, sessions) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                version_id,
                row.id,
                now,
                len(self.old_ids),
                removed,
                b"".join(eid.to_bytes(8, "little") for eid in self.old_ids),
                orjson.dumps(self.sessions).decode(),
            ),
        )
        return version_id


def _record_read(
    conn: sqlite3.Connection, plan: FilePlan, read: FileRead, file_id: int, count: int, now: int
) -> None:
    """Where the file now stands, so that the next run reads only what follows (or nothing)."""
    ref, st = plan.ref, plan.stat
    status = "waiting" if read.waiting else "ok"
    error = (
        "the last line is incomplete; it will be read once its writer finishes it" if read.waiting else None
    )
    # a file an archive from before `source_reads` had read: where it stood then comes first
    conn.execute(
        "INSERT OR IGNORE INTO source_reads SELECT id, COALESCE(ingested_at, 0), bytes_ingested FROM source_files "
        "WHERE id = ?1 AND bytes_ingested > 0 AND NOT EXISTS (SELECT 1 FROM source_reads WHERE source_file_id = ?1)",
        (file_id,),
    )
    conn.execute(
        "UPDATE source_files SET size = ?, mtime_ns = ?, inode = ?, bytes_ingested = ?, lines_ingested = ?, "
        "content_hash = ?, open_tail_offset = ?, ends_with_newline = ?, status = ?, error = ?, ingested_at = ?, "
        "kind = ?, project_key = ?, ctime_ns = ? WHERE id = ?",
        (
            st.st_size,
            st.st_mtime_ns,
            st.st_ino,
            read.end,
            read.lines_after if read.lines_after is not None else read.line_number + count,
            read.new_hash,
            read.open_tail_offset,
            int(read.open_tail_offset is None),
            status,
            error,
            now,
            ref.kind,
            ref.project_key,
            st.st_ctime_ns,
            file_id,
        ),
    )
    conn.execute("INSERT OR REPLACE INTO source_reads VALUES (?, ?, ?)", (file_id, now, read.end))


# The entries columns an EntryWriter fills, by where their values come from: the raw record, the
# normalized record's flags (stored as 0/1) and its fields of the same names, and the ledger.
RAW_COLUMNS = ("byte_offset", "line_number", "raw", "newline", "hash")
FLAG_COLUMNS = ("known", "is_sidechain", "is_meta")
RECORD_COLUMNS = (
    "entry_type",
    "subtype",
    "parse_error",
    "uuid",
    "parent_uuid",
    "logical_parent_uuid",
    "ref_uuid",
    "session_id",
    "agent_id",
    "timestamp",
    "role",
    "content",
    "thinking",
    "tool_text",
    "model",
    "message_id",
    "request_id",
)
PLACE_COLUMNS = ("seq", "turn_id", "dup_of")
ENTRY_COLUMNS = ("id", "source_file_id", *RAW_COLUMNS, *FLAG_COLUMNS, *RECORD_COLUMNS, *PLACE_COLUMNS)
INSERT_ENTRY = (
    f"INSERT INTO entries ({', '.join(ENTRY_COLUMNS)}) VALUES ({', '.join('?' * len(ENTRY_COLUMNS))})"
)
# a stored row taken back by a rewritten file (its raw bytes, and so its hash, are the same)
UPDATE_ENTRY = f"UPDATE entries SET {', '.join(f'{c} = ?' for c in ENTRY_COLUMNS[1:])} WHERE id = ?"
HASH_INDEX = ENTRY_COLUMNS.index("hash")


def entry_row(
    entry_id: int,
    file_id: int,
    raw: RawRecord,
    rec: Record,
    seq: int | None,
    turn_id: str | None,
    dup_of: int | None,
    digest: str | None = None,
) -> tuple[Any, ...]:
    """One entries row, its values in ENTRY_COLUMNS order (a test holds each to its column's
    name). Written out rather than read off by name: this runs for every record, and an
    attrgetter over the record's fields cost twice as much."""
    return (
        entry_id,
        file_id,
        # RAW_COLUMNS
        raw.offset,
        raw.line_number,
        raw.raw,
        int(raw.newline),
        record_digest(raw.raw) if digest is None else digest,
        # FLAG_COLUMNS
        int(rec.known),
        int(rec.is_sidechain),
        int(rec.is_meta),
        # RECORD_COLUMNS: the record's fields of the same names
        rec.entry_type,
        rec.subtype,
        rec.parse_error,
        rec.uuid,
        rec.parent_uuid,
        rec.logical_parent_uuid,
        rec.ref_uuid,
        rec.session_id,
        rec.agent_id,
        rec.timestamp,
        rec.role,
        rec.content,
        rec.thinking,
        rec.tool_text,
        rec.model,
        rec.message_id,
        rec.request_id,
        # PLACE_COLUMNS
        seq,
        turn_id,
        dup_of,
    )


class EntryWriter:
    """Writes one file's records to `entries` (ENTRY_COLUMNS), each next to its raw bytes, with
    ids from the next free one, placing each in its session as it goes (`place`) or leaving that
    to a replay of the sessions they fall in."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        ledger: Ledger,
        file_id: int,
        *,
        place: bool,
        reuse: dict[tuple[str, bool], list[int]] | None = None,
    ) -> None:
        self.conn = conn
        self.ledger = ledger
        self.file_id = file_id
        self.place = place
        self.reuse = (
            reuse  # a rewritten file's set-aside rows by their bytes' hash and newline (see _Rewrite)
        )
        self.next_id: int = conn.execute("SELECT COALESCE(max(id), 0) + 1 FROM entries").fetchone()[0]

    def write(
        self, adapter: Adapter, ctx: FileContext, records: Iterable[RawRecord], sessions: set[str]
    ) -> int:
        """Normalize and insert `records` (emptied as they are written); the sessions of records
        not placed are added to `sessions`. Returns how many were written.

        In chunks, each dropped once written: a 40 MB file then never holds all its parsed
        records, rows and raw copies at once (peak memory follows the chunk, not the file)."""
        count = 0
        for chunk in chunks_of(records):
            recs = [normalized(adapter, raw, ctx) for raw in chunk]  # a record it fails on is kept raw
            count += self._write_chunk(chunk, recs, None, sessions)
        return count

    def write_normalized(self, chunks: Iterable[ReadyChunk], sessions: set[str]) -> int:
        """`write` of records a worker process normalized and hashed already, in the same chunks."""
        return sum(self._write_chunk(raws, recs, digests, sessions) for raws, recs, digests in chunks)

    def _write_chunk(
        self, chunk: list[RawRecord], recs: list[Record], digests: list[str] | None, sessions: set[str]
    ) -> int:
        file_id, ledger, place = self.file_id, self.ledger, self.place
        eid = self.next_id
        rows = []
        ledger.begin_chunk([r.uuid for r in recs if r.uuid])
        kept = []
        for i, (raw, rec) in enumerate(zip(chunk, recs, strict=True)):
            if place:
                seq, turn_id, dup_of = ledger.place(eid, rec)
            else:
                seq, turn_id, dup_of = None, None, None
                if rec.session_id is not None:
                    sessions.add(rec.session_id)
            row = entry_row(eid, file_id, raw, rec, seq, turn_id, dup_of, digests[i] if digests else None)
            same = self.reuse.get((row[HASH_INDEX], bool(raw.newline))) if self.reuse else None
            if same:  # these bytes are stored already: that row is this record
                kept.append((*row[1:], same.pop()))
                continue
            rows.append(row)
            eid += 1
        self.conn.executemany(INSERT_ENTRY, rows)
        if kept:
            self.conn.executemany(UPDATE_ENTRY, kept)
        self.next_id = eid
        return len(chunk)


def _touch(conn: sqlite3.Connection, file_id: int, st: os.stat_result) -> None:
    """The file's bytes are what was stored: only its stat moved."""
    conn.execute(
        "UPDATE source_files SET size = ?, mtime_ns = ?, inode = ?, ctime_ns = ?, status = 'ok', error = NULL "
        "WHERE id = ?",
        (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns, file_id),
    )


def _mark_waiting(conn: sqlite3.Connection, plan: FilePlan) -> None:
    message = "the file is being written; it will be read again on the next run"
    if plan.row is None:
        conn.execute(
            "INSERT INTO source_files (path, agent, kind, size, mtime_ns, bytes_ingested, lines_ingested, status, "
            "error, project_key, ends_with_newline) VALUES (?, ?, ?, 0, 0, 0, 0, 'waiting', ?, ?, 1)",
            (stored_name(plan.ref.path), plan.ref.agent, plan.ref.kind, message, plan.ref.project_key),
        )
    else:
        conn.execute(
            "UPDATE source_files SET status = 'waiting', error = ? WHERE id = ?", (message, plan.row.id)
        )


def _session_of_uuid(conn: sqlite3.Connection, file_id: int, uuid: str) -> str | None:
    row = conn.execute(
        "SELECT session_id FROM entries WHERE uuid = ? AND source_file_id = ? LIMIT 1", (uuid, file_id)
    ).fetchone()
    return row[0] if row else None
