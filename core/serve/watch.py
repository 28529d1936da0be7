"""`threadloom watch`: archive every agent's new and changed files as they are written, with the app closed.

Claude Code deletes transcripts after `cleanupPeriodDays`; an archive that is only brought up to date
when someone opens threadloom loses every session that aged out in between. This process keeps it
current in the background, at next to no cost when nothing happens.

How it notices: the agents' folders are watched with the file system's events (inotify, FSEvents,
through watchfiles), or, where there are none to be had (a network file system, whose events from
other machines never arrive; the inotify limit reached), polled: one stat per folder (a file added,
removed or renamed moves its folder's mtime: `core.ingest.pipeline.RootWatch`, as the TUI does) and one per
file the archive knows. Roots that are single files (Codex's session index, Aider's histories, an
agent's database) are stat'ed once a tick in either mode. The log says which mode is in use and why.

What it does with a change: the one ingest path, `core.ingest.pipeline`. A batch of changes waits until its
files have been quiet for a moment (an agent appends many lines a second) or, however busy the
agent, a few seconds; then an append to a file the archive knows reads just that file
(`ingest_known`: a stat and the new bytes), and a file added or removed runs the incremental ingest
(`run_ingest`, which lists again only folders whose mtime moved). Each ingest takes the writer lock
for its own run only, so the TUI or a `threadloom ingest` in another process works as before (this
one waits for theirs, saying so in its log). A full incremental ingest also runs every ten minutes:
events a full queue dropped are caught up.

Stopping: SIGTERM or SIGINT sets one event; the loop ends, and an ingest under way stops between two
files (each file is its own transaction, so nothing is left half-written) or stops waiting for the
lock. It logs to a file beside the database (`<name>-watch.log`, rotated at 1 MB, two kept).
"""

from __future__ import annotations

import contextlib
import io
import logging
import logging.handlers
import os
import signal
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from ..base.text import count_of

if TYPE_CHECKING:
    from watchfiles import Change as WatchChange

    from ..ingest.pipeline import IngestReport, KnownSource

try:
    import fcntl
except ImportError:  # Windows: no second-instance guard (SQLite's locking still applies)
    fcntl = None  # type: ignore[assignment]

TICK_SECONDS = 1.0  # how often an idle loop wakes: single-file roots stat'ed, a due batch ingested
STEP_MS = 200  # how long the event watcher sleeps between looks at its queue (0.05 % of a core idle)
SETTLE_SECONDS = 1.0  # a batch is read once its files have been quiet this long
MAX_DELAY_SECONDS = 5.0  # or this long after its first change, however busy the agent is
RECHECK_SECONDS = 30.0  # the roots are computed again (an agent used for the first time appears)
SAFETY_SECONDS = 600.0  # a full incremental ingest now and then: events the kernel dropped are caught up
POLL_SECONDS = 5.0  # polling mode: how often the folders and known files are stat'ed
# after an ingest failed (a damaged database, a full disk): the first wait, doubled up to the second
RETRY_SECONDS, MAX_RETRY_SECONDS = 30.0, 600.0
LOG_BYTES = 1_000_000
LOG_BACKUPS = 2

# File systems whose changes made elsewhere raise no local events (or none at all): polled.
# drvfs and 9p: WSL's Windows drives; virtiofs, vboxsf, vmhgfs: a virtual machine's host folders.
_NETWORK = """nfs nfs4 cifs smb3 smbfs ncpfs 9p afs coda ceph glusterfs lustre gpfs beegfs davfs drvfs virtiofs
vboxsf vmhgfs fuse.sshfs fuse.rclone fuse.s3fs fuse.gcsfuse fuse.glusterfs fuse.vmhgfs-fuse fuse.davfs"""
NETWORK_FILESYSTEMS = frozenset(_NETWORK.split())

SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
ADDED, MODIFIED, DELETED = "added", "modified", "deleted"
Change = tuple[str, str]  # (ADDED | MODIFIED | DELETED, path)


def log_path_for(db_path: Path) -> Path:
    """The watch's log beside its database: `threadloom.db` → `threadloom-watch.log`."""
    return db_path.with_name(f"{db_path.stem}-watch.log")


def pid_path_for(db_path: Path) -> Path:
    """The file a running watch holds locked, with its pid: one watch per database."""
    return db_path.with_name(f"{db_path.stem}-watch.pid")


# ---------------------------------------------------------------------- the log


class _PrivateRotatingHandler(logging.handlers.RotatingFileHandler):
    """A rotating log created with mode 0600: it names the projects and files of your sessions."""

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)  # noqa: SIM115


class _PrintableFormatter(logging.Formatter):
    """Log lines with what a terminal would act on made visible: they name files agents named, and
    are read with `tail -f`."""

    def format(self, record: logging.LogRecord) -> str:
        from ..base.text import printable

        return printable(super().format(record))


def open_log(path: Path, *, echo: bool = False) -> logging.Logger:
    """The watch's logger: to `path` (rotated at LOG_BYTES, LOG_BACKUPS kept), and to stderr when
    `echo` (run by hand in a terminal)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    logger = logging.getLogger(f"threadloom.watch.{path}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    file_handler = _PrivateRotatingHandler(
        path, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
    )
    file_handler.setFormatter(_PrintableFormatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(file_handler)
    if echo:
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(_PrintableFormatter("threadloom watch: %(message)s"))
        logger.addHandler(stream)
    return logger


def close_log(logger: logging.Logger) -> None:
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()


# ---------------------------------------------------------------------- where to look


def filesystem_type(path: str, mountinfo: str | None = None) -> str | None:
    """The type of the file system `path` is on (Linux: the longest mount point above it in
    /proc/self/mountinfo); None where that cannot be told."""
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text(errors="replace")
        except OSError:
            return None
    real = os.path.realpath(path)
    best, best_type = "", None
    for line in mountinfo.splitlines():
        fields = line.split()
        if "-" not in fields or len(fields) < 5:
            continue
        point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        fstype = fields[fields.index("-") + 1] if fields.index("-") + 1 < len(fields) else None
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, best_type = point, fstype
    return best_type


@dataclass
class Roots:
    """The places watched: folders (recursively, each once: one inside another is left to it),
    single files, and folders not there yet (looked for each tick)."""

    folders: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # a folder's real path, when a link leads to it

    @classmethod
    def of(cls, paths: Iterable[str]) -> Roots:
        roots = cls()
        for path in dict.fromkeys(str(p) for p in paths):
            try:
                st = os.stat(path)
            except OSError:
                roots.missing.append(path)  # looked for each tick; once there, watched
                continue
            (roots.folders if stat.S_ISDIR(st.st_mode) else roots.files).append(path)
        folders = sorted(roots.folders, key=len)
        roots.folders = [f for i, f in enumerate(folders) if not any(_under(f, g) for g in folders[:i])]
        roots.aliases = {real: f for f in roots.folders if (real := os.path.realpath(f)) != f}
        return roots

    def as_named(self, path: str) -> str:
        """A path an event names, under the folder as the roots name it: FSEvents reports real
        paths (`/private/var/…` for `/var/…`), and the archive knows files by their root's name."""
        for real, folder in self.aliases.items():
            if _under(path, real) and not _under(path, folder):
                return folder + path[len(real.rstrip(os.sep)) :]
        return path

    def key(self) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        return tuple(self.folders), tuple(self.files), tuple(self.missing)

    def holds(self, path: str) -> bool:
        return path in self.files or any(_under(path, folder) for folder in self.folders)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def default_roots() -> list[str]:
    """Every agent's default locations as they are now (an editor installed since shows up), and
    where they keep their sessions' side files (Claude Code's file history, todos, plans)."""
    from ..adapters import all_adapters

    return [
        str(root) for adapter in all_adapters() for root in adapter.default_roots() + adapter.side_roots()
    ]


# ---------------------------------------------------------------------- what changed


class Known:
    """The files the archive reads, by path (and their side files: a database's -wal), to tell an
    append to one of them (read just it) from anything else (a full incremental ingest)."""

    def __init__(self, sources: dict[str, KnownSource] | None = None) -> None:
        self.sources: dict[str, KnownSource] = sources or {}
        self.side: dict[str, str] = {}
        from ..adapters import ADAPTERS

        for path, source in self.sources.items():
            adapter = ADAPTERS.get(source.agent)
            if adapter is not None and adapter.side_files:
                for extra in adapter.stat_paths(Path(path)):
                    self.side[str(extra)] = path

    def source_of(self, path: str) -> str | None:
        """The known source a changed path stands for (itself, or the database of a -wal)."""
        if path in self.sources:
            return path
        found = self.side.get(path)
        if found is None and path.endswith(SIDE_SUFFIXES):
            base = path.rsplit("-", 1)[0]
            found = base if base in self.sources else None
        return found


@dataclass
class Batch:
    """Changes waiting to be read: the known files that changed, and whether something else did."""

    files: set[str] = field(default_factory=set)
    full: str = ""  # why a full incremental ingest is due ("" when none)
    first: float | None = None
    last: float | None = None

    def add_file(self, path: str, now: float) -> None:
        self.files.add(path)
        self._touched(now)

    def add_full(self, why: str, now: float) -> None:
        self.full = self.full or why
        self._touched(now)

    def _touched(self, now: float) -> None:
        self.first = now if self.first is None else self.first
        self.last = now

    def due(self, now: float, settle: float, max_delay: float) -> bool:
        if self.first is None or self.last is None:
            return False
        return now - self.last >= settle or now - self.first >= max_delay

    def __bool__(self) -> bool:
        return self.first is not None


# ---------------------------------------------------------------------- the two ways of noticing


class EventsUnavailable(Exception):
    """The file system's events cannot be had here (the reason is the message): poll instead."""


class Source:
    """Yields, about every TICK_SECONDS, the changes seen since the last yield (often none)."""

    mode = ""
    detail = ""

    def changes(self) -> Iterator[set[Change]]:
        raise NotImplementedError

    def close(self) -> None:
        """Stop watching (a generator left behind would keep its watcher's thread)."""


class EventSource(Source):
    """The file system's own events, through watchfiles (inotify, FSEvents, ReadDirectoryChangesW)."""

    mode = "events"

    def __init__(self, folders: list[str], stop: threading.Event) -> None:
        self.folders = folders
        self.stop = stop
        self._gen: Generator[set[tuple[WatchChange, str]], None, None] | None = None
        self._first: set[tuple[WatchChange, str]] | None = None
        self.detail = "file system events"

    def start(self) -> None:
        """Set the watches up now, so that a refusal (the inotify limit) turns into polling at once."""
        try:
            from watchfiles import watch
        except ImportError as exc:
            raise EventsUnavailable(f"watchfiles is not installed ({exc})") from exc
        if not self.folders:
            return
        gen = watch(
            *self.folders,
            watch_filter=None,
            step=STEP_MS,
            rust_timeout=int(TICK_SECONDS * 1000),
            yield_on_timeout=True,
            stop_event=self.stop,
            raise_interrupt=False,
            force_polling=False,
            ignore_permission_denied=True,
        )
        try:
            first = next(gen)
        except StopIteration:
            first = set()
        except FileNotFoundError:
            gen.close()
            raise
        except (OSError, RuntimeError) as exc:  # e.g. "OS file watch limit reached"
            gen.close()
            raise EventsUnavailable(str(exc) or type(exc).__name__) from exc
        self._first = first
        self._gen = gen

    def changes(self) -> Iterator[set[Change]]:
        names = {1: ADDED, 2: MODIFIED, 3: DELETED}
        if self._gen is None:  # nothing to watch with events: tick only
            while not self.stop.wait(TICK_SECONDS):
                yield set()
            return
        if self._first:
            yield {(names.get(int(kind), MODIFIED), path) for kind, path in self._first}
        self._first = None
        for raw in self._gen:
            yield {(names.get(int(kind), MODIFIED), path) for kind, path in raw}

    def close(self) -> None:
        if self._gen is not None:
            with contextlib.suppress(Exception):
                self._gen.close()
            self._gen = None


class PollSource(Source):
    """Polling: every `interval`, one stat per folder under the roots (a file added, removed or
    renamed moves its folder's mtime) and one per file the archive knows under them."""

    mode = "polling"

    def __init__(
        self, folders: list[str], stop: threading.Event, known: Callable[[], Known], interval: float, why: str
    ) -> None:
        from ..ingest.pipeline import RootWatch

        self.folders = folders
        self.stop = stop
        self.known = known  # the watcher's latest list, read at each poll
        self.interval = interval
        self.detail = f"polling every {interval:g} s ({why})"
        self.root_watch = RootWatch(folders)
        self.root_watch.changed()  # the first look only records
        self.seen: dict[str, tuple[int, int, int]] = {}
        self._listed: list[tuple[str, KnownSource, Callable[[str], os.stat_result]]] = []
        self._listed_for: Known | None = None

    def changes(self) -> Iterator[set[Change]]:
        next_poll = time.monotonic() + self.interval
        while not self.stop.wait(TICK_SECONDS):
            if time.monotonic() < next_poll:
                yield set()
                continue
            next_poll = time.monotonic() + self.interval
            yield self.poll()

    def poll(self) -> set[Change]:
        found: set[Change] = set()
        if self.root_watch.changed():
            found.add((ADDED, self.folders[0]))  # a folder changed: what is new is found by a walk
        for path, source, stat_of in self._files():
            try:
                st = stat_of(path)
            except OSError:
                found.add((DELETED, path))
                continue
            now = (st.st_size, st.st_mtime_ns, st.st_ino)
            before = self.seen.get(path)
            self.seen[path] = now
            if before is None:  # first look at it: against what the archive recorded
                if (source.size, source.mtime_ns) != now[:2]:
                    found.add((MODIFIED, path))
            elif before != now:
                found.add((MODIFIED, path))
        return found

    def _files(self) -> list[tuple[str, KnownSource, Callable[[str], os.stat_result]]]:
        """The known files under the polled folders, each with how to stat it (a plain stat, or one
        that counts a database's -wal): worked out once per list the watcher hands over."""
        known = self.known()
        if known is not self._listed_for:
            from ..adapters import ADAPTERS
            from ..ingest.pipeline import source_stat

            def side_stat(agent: str) -> Callable[[str], os.stat_result]:
                return lambda path: source_stat(agent, path)

            files = []
            for path, source in known.sources.items():
                if any(_under(path, folder) for folder in self.folders):
                    adapter = ADAPTERS.get(source.agent)
                    files.append(
                        (path, source, side_stat(source.agent) if adapter and adapter.side_files else os.stat)
                    )
            self._listed, self._listed_for = files, known
        return self._listed


def choose_source(
    folders: list[str],
    stop: threading.Event,
    known: Callable[[], Known],
    *,
    poll: bool,
    why: str = "asked for with --poll",
    interval: float = POLL_SECONDS,
) -> Source:
    """Events where they work, else polling (its `detail` says why)."""
    if poll:
        return PollSource(folders, stop, known, interval, why)
    remote = sorted({t for t in (filesystem_type(f) for f in folders) if t in NETWORK_FILESYSTEMS})
    if remote:
        why = f"a network file system ({', '.join(remote)}): changes made elsewhere raise no events here"
        return PollSource(folders, stop, known, interval, why)
    source = EventSource(folders, stop)
    try:
        source.start()
    except EventsUnavailable as exc:
        return PollSource(folders, stop, known, interval, f"file system events unavailable: {exc}")
    return source


# ---------------------------------------------------------------------- the watcher


@dataclass
class WatchOptions:
    db_path: Path
    log_path: Path
    poll: bool = False
    poll_seconds: float = POLL_SECONDS
    settle: float = SETTLE_SECONDS
    max_delay: float = MAX_DELAY_SECONDS
    echo: bool = False
    sync: bool = False  # after each ingest that read something (and each full one): `threadloom sync`


class AlreadyWatching(RuntimeError):
    """Another `threadloom watch` archives into this database already."""


@contextlib.contextmanager
def one_watch(db_path: Path) -> Iterator[None]:
    """Hold `<name>-watch.pid` locked for the run: a second watch on the same database refuses."""
    if fcntl is None:
        yield
        return
    path = pid_path_for(db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(fd, 32, 0).decode(errors="replace").strip()
            who = f"process {pid}" if pid.isdigit() else "another process"
            raise AlreadyWatching(f"{who} is watching for {db_path} already") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)


class Watcher:
    """The watch loop; `run` returns when `stop` is set (by a signal, or a test)."""

    def __init__(self, options: WatchOptions, stop: threading.Event, log: logging.Logger) -> None:
        self.options = options
        self.stop = stop
        self.log = log
        self.known = Known()
        self.report_roots: list[str] = []
        self.roots = Roots()
        self.batch = Batch()
        self.file_stats: dict[str, tuple[int, int, int] | None] = {}
        self.retry_at = 0.0
        self.retry_wait = RETRY_SECONDS
        self.last_full = self.last_recheck = time.monotonic()
        self.ignored = self._own_files()
        self.ingests = 0  # ingests that ran (said when it stops)
        self.unsaid = 0  # of them, those that found nothing new (not logged one by one)

    def _own_files(self) -> set[str]:
        """The database's own files and the log: never a reason to ingest (one in a watched folder
        would otherwise wake the watch with every write it makes)."""
        db = str(self.options.db_path)
        log = str(self.options.log_path)
        own = {db + s for s in ("", "-wal", "-shm", "-journal", ".lock", ".first-load")}
        own |= {log, str(pid_path_for(self.options.db_path))}
        own |= {f"{log}.{n}" for n in range(1, LOG_BACKUPS + 1)}
        return own | {os.path.realpath(p) for p in own}

    # -------------------------------------------------------------- the loop

    def run(self) -> int:
        opts = self.options
        self.log.info("started (process %d): archiving into %s", os.getpid(), opts.db_path)
        self.ingest_all("start")
        failures = 0
        while not self.stop.is_set():
            self.roots = self._current_roots()
            poll, why = opts.poll, "asked for with --poll"
            if failures >= 3:
                poll, why = True, "the file system events failed three times"
            try:
                source = choose_source(
                    self.roots.folders,
                    self.stop,
                    lambda: self.known,
                    poll=poll,
                    why=why,
                    interval=opts.poll_seconds,
                )
            except FileNotFoundError:  # a folder went between listing the roots and watching them
                self.stop.wait(TICK_SECONDS)
                continue
            self.log.info(
                "watching %s by %s; %s and %s stat'ed each second",
                _count(len(self.roots.folders), "folder"),
                source.detail,
                _count(len(self.roots.files), "single file"),
                _count(len(self.roots.missing), "absent place"),
            )
            for folder in self.roots.folders:
                self.log.info("  %s", folder)
            try:
                self._watch(source)
                failures = 0  # it ran until the places to watch changed
            except Exception as exc:  # the watcher's own failure (its queue overflowed): start again
                if self.stop.is_set():
                    break
                failures += 1
                self.log.warning("the watch failed (%s: %s); starting it again", type(exc).__name__, exc)
                self.stop.wait(TICK_SECONDS)
            finally:
                source.close()
        quiet = f" ({self.unsaid} with nothing new, not logged)" if self.unsaid else ""
        self.log.info("stopped cleanly after %s%s", count_of(self.ingests, "ingest"), quiet)
        return 0

    def _watch(self, source: Source) -> None:
        """Until `stop` is set or the places to watch change (then the caller watches anew)."""
        opts = self.options
        self._stat_files(record_only=True)
        # what changed between the last ingest and the watches being set up
        self.batch.add_full("the watch started", time.monotonic())
        for changes in source.changes():
            now = time.monotonic()
            self._absorb(changes, now)
            self._stat_files()
            if any(os.path.exists(p) for p in self.roots.missing):
                self.batch.add_full("a place to watch appeared", now)
            if now - self.last_full >= SAFETY_SECONDS and not self.batch:
                self.batch.add_full("the periodic check", now)
            due = self.batch.due(now, opts.settle, opts.max_delay) and now >= self.retry_at
            if due and self._ingest_batch() and self._roots_moved():
                return
            if now - self.last_recheck >= RECHECK_SECONDS:
                self.last_recheck = now
                if self._roots_moved():
                    return
            if self.stop.is_set():
                return

    def _current_roots(self) -> Roots:
        return Roots.of(default_roots() + self.report_roots)

    def _roots_moved(self) -> bool:
        moved = self._current_roots().key() != self.roots.key()
        if moved:
            self.log.info("the places to watch changed; watching them anew")
        return moved

    def _absorb(self, changes: set[Change], now: float) -> None:
        for kind, reported in changes:
            path = self.roots.as_named(reported)
            if path in self.ignored:
                continue
            source = self.known.source_of(path)
            if source is not None:
                self.batch.add_file(source, now)
            elif kind in (ADDED, DELETED):
                self.batch.add_full(f"{kind} {path}", now)
            # else a change to a file no agent's reader took when it appeared: nothing to read

    def _stat_files(self, *, record_only: bool = False) -> None:
        """Single-file roots: a stat each (an inotify watch on a file is lost when its agent
        replaces it, and a database's changes land in its -wal)."""
        from ..ingest.pipeline import source_stat

        now = time.monotonic()
        for path in self.roots.files:
            known = self.known.sources.get(path)
            try:
                st = source_stat(known.agent, path) if known else os.stat(path)
                seen: tuple[int, int, int] | None = (st.st_size, st.st_mtime_ns, st.st_ino)
            except OSError:
                seen = None
            before = self.file_stats.get(path, seen)
            self.file_stats[path] = seen
            if record_only or before == seen:
                continue
            if known is not None and seen is not None:
                self.batch.add_file(path, now)
            else:
                self.batch.add_full(f"{'changed' if seen else 'removed'} {path}", now)

    # -------------------------------------------------------------- ingesting

    def ingest_all(self, why: str) -> None:
        """The incremental ingest of every root (what `threadloom ingest` does)."""
        self.batch.add_full(why, time.monotonic())
        self._ingest_batch()

    def _ingest_batch(self) -> bool:
        """Read the batch; True when it was a full ingest that ran (the roots may have moved)."""
        batch, self.batch = self.batch, Batch()
        files = [p for p in sorted(batch.files) if os.path.exists(p)]
        full = batch.full or ("a known file disappeared" if len(files) < len(batch.files) else "")
        try:
            report = self._ingest(full, files)
        except Exception as exc:
            from ..store.db import LedgerError

            if isinstance(exc, (LedgerError, sqlite3.Error, OSError)):
                self.log.error("ingest failed: %s; trying again in %.0f s", exc, self.retry_wait)
            else:
                self.log.exception("ingest failed; trying again in %.0f s", self.retry_wait)
            now = time.monotonic()
            self.retry_at = now + self.retry_wait
            self.retry_wait = min(MAX_RETRY_SECONDS, self.retry_wait * 2)
            self.batch = Batch(batch.files | self.batch.files, batch.full or self.batch.full, now, now)
            return False
        self.retry_wait = RETRY_SECONDS
        if report is None:  # stopped while waiting for the lock
            return False
        self.ingests += 1
        if full:
            self.last_full = time.monotonic()
        self._say(
            report, f"full ingest ({full})" if full else f"{len(files)} changed file{'s' * (len(files) != 1)}"
        )
        return bool(full)

    def _say(self, report: IngestReport, what: str) -> None:
        line = (
            f"{what}: {report.files_read} read ({report.bytes_read / 1e6:.2f} MB), "
            f"{count_of(report.records_added, 'record')}, {count_of(report.sessions, 'session')} updated"
            + (f", {report.files_gone} gone" if report.files_gone else "")
            + (f", {count_of(len(report.errors), 'error')}" if report.errors else "")
            + (" (stopped between two files: the rest is read next time)" if report.cancelled else "")
            + f", {report.seconds:.2f} s"
        )
        if report.files_read or report.files_gone or report.errors or self.ingests == 1:
            self.log.info("%s", line)
        else:
            self.unsaid += 1  # nothing new: not logged, but counted when it stops
        for error in report.errors[:10]:
            self.log.warning("  %s", error)

    def _ingest(self, full: str, files: list[str]) -> IngestReport | None:
        """One update as the database's one writer, the lock held for it only (None: `stop` was set
        while another process held it), then a sync when one is set up."""
        from ..ingest.pipeline import known_sources
        from ..ingest.update import Listener, update
        from ..store.db import open_for_reading

        db_path = self.options.db_path
        said = Listener(waiting=lambda text: self.log.info("%s", text))
        if full:
            report = update(db_path, remember=False, listener=said, cancel=self.stop)
        else:
            report = update(db_path, known=files, listener=said, cancel=self.stop)
        if report.cancelled and not (report.files_seen or report.files_gone):
            return None  # the wait for another writer was ended by `stop`
        if full:
            if not report.cancelled:
                self.report_roots = report.roots
            with contextlib.closing(open_for_reading(db_path)) as conn:
                self.known = Known(known_sources(conn))
        if self.options.sync and (full or report.records_added) and not self.stop.is_set():
            self._sync()
        return report

    def _sync(self) -> None:
        """Push what the ingest read and pull what other machines pushed, with the hub and sharing rules
        the last `threadloom sync` remembered (as the one writer again); a hub out of reach is said
        and tried again next time."""
        from ..store.db import connect
        from ..store.writer_lock import WriterBusy, writer_lock

        db_path = self.options.db_path
        try:
            with writer_lock(db_path, on_wait=lambda text: self.log.info("%s", text), cancel=self.stop):
                conn = connect(db_path)
                try:
                    self._sync_with(conn)
                finally:
                    conn.close()
        except WriterBusy:
            pass  # `stop` was set while another process held the lock

    def _sync_with(self, conn: sqlite3.Connection) -> None:
        from ..ingest import sync
        from ..store.sql import get_meta

        url = get_meta(conn, sync.URL_KEY)
        if not url:
            self.log.warning("sync: no hub yet (run `threadloom sync URL --share RULE` once)")
            return
        sharing = sync.load_sharing(conn)
        try:
            report = sync.sync(conn, url, push=sharing is not None, sharing=sharing)
        except sync.SyncError as exc:
            self.log.warning("sync: %s; tried again after the next ingest", exc)
            return
        if report.pushed_records or report.pulled_records or report.refused:
            self.log.info(
                "sync: pushed %d records, pulled %d (%d sessions), %.2f s",
                report.pushed_records,
                report.pulled_records,
                report.sessions,
                report.seconds,
            )


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


# ---------------------------------------------------------------------- the command


def run_watch(options: WatchOptions, stop: threading.Event | None = None) -> int:
    """`threadloom watch`: set the log, the signals and the one-watch guard up, then watch until
    SIGTERM or SIGINT. Returns the exit code."""
    from ..store.db import LedgerError, check_writable, connect

    stop = stop or threading.Event()
    try:
        check_writable(options.db_path)
        if options.db_path.exists():  # another application's database, or a damaged one: refused now
            connect(options.db_path, readonly=True).close()
    except LedgerError as exc:
        print(f"threadloom watch: {exc}", file=sys.stderr)
        return 1
    try:
        log = open_log(options.log_path, echo=options.echo)
    except OSError as exc:
        print(
            f"threadloom watch: cannot write the log {options.log_path}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 1
    previous = _on_signals(stop, log)
    try:
        with one_watch(options.db_path):
            return Watcher(options, stop, log).run()
    except AlreadyWatching as exc:
        print(f"threadloom watch: {exc}", file=sys.stderr)
        log.info("not started: %s", exc)
        return 1
    finally:
        _restore_signals(previous)
        close_log(log)


def _on_signals(stop: threading.Event, log: logging.Logger) -> dict[int, Any]:
    """SIGTERM and SIGINT set `stop` (only in the main thread, where Python runs handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum: int, frame: FrameType | None) -> None:
        if not stop.is_set():
            log.info("%s received: stopping", signal.Signals(signum).name)
        stop.set()

    previous: dict[int, Any] = {}
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous[signum] = signal.signal(signum, handler)
    return previous


def _restore_signals(previous: dict[int, Any]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)
