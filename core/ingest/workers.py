"""New log files read and normalized in worker processes while this process writes them.

A cold or large ingest spends most of its CPU cutting, hashing and normalizing records, and SQLite
takes one writer. So the files an ingest reads new are dealt out in turn (file i to worker i % n);
each worker reads its files in order exactly as the in-process path does (`read_lines`,
`chunks_of`, `normalized`) and sends each chunk of records, normalized and hashed, through a pipe of
its own. The writer (the process holding the writer lock) takes the files in the plan's order, so
ids, sessions and every derived row come out as a serial ingest writes them. A pipe holds about
one chunk: a worker waits while the writer is behind, so memory stays flat however large the
archive.

Workers are fresh interpreters (as under `spawn`; never a `fork` of the TUI, which ingests from a
thread) and stop when their pipe closes: a writer that is cancelled, interrupted or killed leaves
none behind. A file
whose worker fails or dies is read again by the writer itself (`WorkerLost`).

Records cross as tuples: a slotted dataclass pickled as it is took longer than normalizing it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, fields
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..adapters.base import (
    MIRROR_ROOT,
    FileContext,
    RawRecord,
    Record,
    SessionInfo,
    SourceRef,
    ToolResult,
    ToolUse,
    Usage,
    normalized,
    open_regular,
)
from ..store.sql import record_digest
from .reading import FilePlan, FileRead, ReadyChunk, chunks_of, read_lines

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from ..adapters.base import Adapter

# Below this many bytes of new files an ingest reads in process: starting workers (~0.3 s, fresh
# interpreters) would cost more than they save.
PARALLEL_MIN_BYTES = 32 << 20
# The one writer is the limit past a few workers; more would only add their memory.
MAX_WORKERS = 8
WORKERS_ENV = "THREADLOOM_INGEST_WORKERS"  # a number of workers; 0 reads in process
WORKER_MAIN = "from threadloom.core.ingest.workers import main; main()"
POLL_SECONDS = 0.5  # how often a writer waiting on a worker looks up (Ctrl+C is seen meanwhile)
# How long the writer waits for a worker to start on the next file before reading it itself.
TAKE_OVER_SECONDS = 0.01
# Workers yield to the writer, which sets the pace (see `main`).
WORKER_NICENESS = 10
# Bytes of messages the writer holds read ahead of it, shared by the workers: a chunk or two each
# while the writer is busy (the writer reads a file itself rather than wait: more bought nothing),
# little enough for memory to stay flat.
FEED_BYTES = 16 << 20

# one chunk of records as sent: (offset, line number, raw bytes, newline, sha256 prefix, record)
Chunk = list[tuple[int, int, bytes, bool, str, list[Any]]]
# a normalized chunk as the writer takes it: raw records, their records, their hashes


class WorkerLost(Exception):
    """A worker failed on a file or died: the writer reads that file itself."""


@dataclass(frozen=True)
class FileTask:
    """A new log file for a worker: what `read_lines` needs of its plan."""

    index: int  # its place in the plan
    path: str
    agent: str
    kind: str
    project_key: str | None
    stat: os.stat_result


# Below this many cores an ingest reads in process unless $THREADLOOM_INGEST_WORKERS says otherwise.
# On an idle 2-core machine the one worker it gets pays: the cold ingest of the 100 MB bench archive
# to browsable took 3.94 s against 4.23 s in process (0.919x the wall time, 1.27x the CPU, 10
# interleaved pairs, every pair faster); a second worker bought nothing (1.00x) for 9 MB more.
# (Two workers there, measured on an earlier version, were slower: 9.26 s against 8.63 s.)
MIN_CORES = 2


def worker_count(files: int) -> int:
    """Workers for an ingest of `files` new files: one a core but the writer's, at most
    MAX_WORKERS (or $THREADLOOM_INGEST_WORKERS); none on fewer than MIN_CORES cores, nor while
    the machine has no core to spare (`spare_cores`)."""
    wanted = os.environ.get(WORKERS_ENV, "").strip()
    if wanted.isdigit():
        count = int(wanted)
    else:
        cores = _cores()
        count = min(MAX_WORKERS, cores - 1) if cores >= MIN_CORES and spare_cores(cores) >= 1 else 0
    return max(0, min(count, files))


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def spare_cores(cores: int) -> float:
    """Cores the last minute left idle (the load average's reading). Workers pay only with one:
    with every core taken by others, they added their CPU (pickling, their own start) to the
    ingest's share of the machine and made it slower, 1.22x on the 100 MB bench archive at a load
    of 7 on 2 cores (the writer, not the parsing, sets the pace)."""
    try:
        return cores - os.getloadavg()[0]
    except OSError:  # no load average here: as if idle
        return float(cores)


def eligible(plan: FilePlan) -> bool:
    """Whether a worker can read this file as the writer would: a log new to the archive (no
    stored records its reading depends on), read by its agent's adapter as the registry builds it,
    on this disk (another machine's files are read from the archive)."""
    from ..adapters import _SPECS

    spec = _SPECS.get(plan.ref.agent)
    adapter = plan.adapter
    return (
        plan.row is None
        and spec is not None
        and type(adapter).__name__ == spec[1]
        and type(adapter).__module__ == f"threadloom.core.adapters.{spec[0]}"
        and adapter.mode == "lines"
        and plan.ref.kind not in ("document", "side")
        and not str(plan.ref.path).startswith(MIRROR_ROOT + "/")
    )


def tasks_of(plans: list[FilePlan]) -> list[FileTask]:
    return [
        FileTask(i, str(p.ref.path), p.ref.agent, p.ref.kind, p.ref.project_key, p.stat)
        for i, p in enumerate(plans)
        if eligible(p)
    ]


def start(plans: list[FilePlan]) -> ParallelReader | None:
    """Workers for the plan's new log files, when there are enough bytes for them to pay off."""
    tasks = tasks_of(plans)
    if sum(t.stat.st_size for t in tasks) < PARALLEL_MIN_BYTES:
        return None
    workers = worker_count(len(tasks))
    if workers == 0:
        return None
    try:
        return ParallelReader(tasks, workers)
    except OSError:  # no process could be started (a limit reached, no pipes): read in process
        return None


# ---------------------------------------------------------------------- records as tuples

_RECORD_FIELDS = attrgetter(*(f.name for f in fields(Record)))
_NESTED = {
    cls: attrgetter(*(f.name for f in fields(cls))) for cls in (ToolUse, ToolResult, Usage, SessionInfo)
}
_NAMES = [f.name for f in fields(Record)]
_TOOL_USES, _TOOL_RESULTS = _NAMES.index("tool_uses"), _NAMES.index("tool_results")
_USAGE, _MORE_USAGE, _SESSION = _NAMES.index("usage"), _NAMES.index("more_usage"), _NAMES.index("session")


def encode(rec: Record) -> list[Any]:
    """A record as plain values, in its fields' order (its nested dataclasses as tuples)."""
    values = list(_RECORD_FIELDS(rec))
    if values[_TOOL_USES]:
        values[_TOOL_USES] = [_NESTED[ToolUse](u) for u in values[_TOOL_USES]]
    if values[_TOOL_RESULTS]:
        values[_TOOL_RESULTS] = [_NESTED[ToolResult](r) for r in values[_TOOL_RESULTS]]
    if values[_USAGE] is not None:
        values[_USAGE] = _NESTED[Usage](values[_USAGE])
    if values[_MORE_USAGE]:
        values[_MORE_USAGE] = [_NESTED[Usage](u) for u in values[_MORE_USAGE]]
    if values[_SESSION] is not None:
        values[_SESSION] = _NESTED[SessionInfo](values[_SESSION])
    return values


def decode(values: list[Any]) -> Record:
    if values[_TOOL_USES]:
        values[_TOOL_USES] = [ToolUse(*u) for u in values[_TOOL_USES]]
    if values[_TOOL_RESULTS]:
        values[_TOOL_RESULTS] = [ToolResult(*r) for r in values[_TOOL_RESULTS]]
    if values[_USAGE] is not None:
        values[_USAGE] = Usage(*values[_USAGE])
    if values[_MORE_USAGE]:
        values[_MORE_USAGE] = [Usage(*u) for u in values[_MORE_USAGE]]
    if values[_SESSION] is not None:
        values[_SESSION] = SessionInfo(*values[_SESSION])
    return Record(*values)


def _ready(chunk: Chunk) -> ReadyChunk:
    raws = [RawRecord(offset, line, raw, newline) for offset, line, raw, newline, _, _ in chunk]
    return raws, [decode(item[5]) for item in chunk], [item[4] for item in chunk]


# ---------------------------------------------------------------------- the worker


def main() -> None:
    """A worker (WORKER_MAIN FD): its tasks, then the files the writer took over, from stdin; its
    messages to the pipe FD."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C reaches the writer, which stops its workers
    gc.disable()  # parsed records are short-lived (PERF.md: the cyclic GC costs 2.6x here)
    # The one writer sets the pace: on a machine busier than its cores, workers that ran ahead at
    # its priority took the writer's turns (the files' phase took 1.4x as long as in process).
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    from multiprocessing.connection import Connection

    control = Connection(0, writable=False)
    work(control.recv(), control, Connection(int(sys.argv[1]), readable=False))


def work(tasks: list[FileTask], control: Connection, out: Connection) -> None:
    """Each file in order, as chunks then ("done", summary), or ("failed", why) when reading it
    raised, but those the writer took over (their indexes arrive on `control`); ends when its
    files are done or the writer is gone."""
    from ..adapters import ADAPTERS

    taken: set[int] = set()
    try:
        for task in tasks:
            while control.poll(0):
                taken.add(control.recv())
            if task.index in taken:
                continue
            try:
                _send_file(task, ADAPTERS[task.agent], out)
            except (BrokenPipeError, ConnectionResetError):
                raise
            except Exception as exc:  # the writer reads it itself and reports what it finds
                _send(out, task.index, ("failed", f"{type(exc).__name__}: {exc}"))
        out.close()
    except (BrokenPipeError, ConnectionResetError, EOFError):
        pass  # the writer stopped (cancelled, interrupted, killed): nothing is left to send to


def _send(out: Connection, index: int, message: tuple[str, Any]) -> None:
    """A message about file `index`, the index first (8 bytes) so that the writer's side can tell
    which file it is about without loading it."""
    out.send_bytes(index.to_bytes(8, "little") + pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def _send_file(task: FileTask, adapter: Adapter, out: Connection) -> None:

    ref = SourceRef(Path(task.path), task.agent, task.kind, task.project_key)
    ctx = FileContext(ref.path, ref.kind, ref.project_key)
    # no `ctx.session_of_uuid`: it asks for records stored earlier from this file, and a new file has none
    with open_regular(ref.path) as f:
        read = read_lines(FilePlan(ref, adapter, task.stat, None), f)
        assert read is not None  # a new file is always read
        for chunk in chunks_of(read.records):
            recs = [normalized(adapter, raw, ctx) for raw in chunk]
            sent = [
                (raw.offset, raw.line_number, raw.raw, raw.newline, record_digest(raw.raw), encode(rec))
                for raw, rec in zip(chunk, recs, strict=True)
            ]
            _send(out, task.index, ("chunk", sent))
    summary = (read.end, read.new_hash, read.nbytes, read.open_tail_offset, read.waiting, read.lines_after)
    _send(out, task.index, ("done", summary))


# ---------------------------------------------------------------------- the writer's side


class _Feed(threading.Thread):
    """Drains one worker's pipe into memory, up to `budget` bytes of messages not yet taken, so
    that the worker runs ahead of the writer instead of waiting on it turn by turn (on a busy
    machine each turn waits to be scheduled: a pipe of one chunk left the writer idle half the time)."""

    def __init__(self, pipe: Connection, budget: int) -> None:
        super().__init__(name="threadloom-ingest-feed", daemon=True)
        self.pipe, self.budget = pipe, budget
        # (file index, message) as sent (see `_send`); None: the worker is gone (its pipe closed)
        self.messages: deque[tuple[int, bytes] | None] = deque()
        self.queued = 0
        self.changed = threading.Condition()
        self.stopping = False

    def run(self) -> None:
        try:
            while True:
                data = self.pipe.recv_bytes()
                with self.changed:
                    while self.queued >= self.budget and not self.stopping:
                        self.changed.wait()
                    if self.stopping:
                        return
                    self.messages.append((int.from_bytes(data[:8], "little"), data))
                    self.queued += len(data)
                    self.changed.notify_all()
        except (EOFError, OSError):
            with self.changed:
                self.messages.append(None)
                self.changed.notify_all()

    def next(self, index: int) -> tuple[str, Any] | None:
        """The next message about file `index` (those left of earlier files are dropped); None
        when the worker is gone."""
        with self.changed:
            while True:
                while not self.messages:
                    self.changed.wait(POLL_SECONDS)  # with a timeout: Ctrl+C is seen meanwhile
                item = self.messages[0]
                if item is None:
                    return None
                self.messages.popleft()
                self.queued -= len(item[1])
                self.changed.notify_all()
                if item[0] == index:
                    break
                if item[0] > index:  # cannot be: a worker's files come in order
                    return None
        message: tuple[str, Any] = pickle.loads(memoryview(item[1])[8:])
        return message

    def started(self, index: int, wait: float) -> bool:
        """Whether the worker has sent anything about file `index` (or is gone), waiting up to `wait` s."""
        deadline = time.monotonic() + wait
        with self.changed:
            while True:
                while self.messages and self.messages[0] is not None and self.messages[0][0] < index:
                    self.queued -= len(self.messages.popleft()[1])  # type: ignore[index]
                    self.changed.notify_all()
                if self.messages:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(left)

    def stop(self) -> None:
        with self.changed:
            self.stopping = True
            self.changed.notify_all()


class ParallelReader:
    """The workers of one ingest, and the files they read, taken in the plan's order.

    Each worker is a fresh interpreter (WORKER_MAIN), as under the `spawn` start method, without
    re-running the caller's main script as multiprocessing does (an unguarded script would ingest
    again in every worker)."""

    def __init__(self, tasks: list[FileTask], workers: int) -> None:
        from multiprocessing.connection import Connection

        self.processes: list[subprocess.Popen[bytes]] = []
        self.feeds: list[_Feed] = []
        self.controls: list[Connection] = []
        self.worker_of: dict[int, int] = {}
        self.lost: set[int] = set()
        self.taken_over = 0  # files the writer read itself rather than wait for their worker
        try:
            for _ in range(workers):
                receive, send = os.pipe()
                control_read, control_write = os.pipe()
                _widen(send)
                _widen(control_write)
                try:
                    self.processes.append(
                        subprocess.Popen(
                            # -P: the current folder (anyone's: a backup, a clone) is not on its import path
                            [sys.executable, "-P", "-c", WORKER_MAIN, str(send)],
                            stdin=control_read,
                            pass_fds=(send,),
                        )
                    )
                finally:  # the worker's ends only: a worker gone is then an EOF, never a wait
                    os.close(send)
                    os.close(control_read)
                self.controls.append(Connection(control_write, readable=False))
                self.feeds.append(_Feed(Connection(receive, writable=False), FEED_BYTES // workers))
                self.feeds[-1].start()
            # the tasks once every worker is starting (a write may wait for its worker to read it)
            for w, control in enumerate(self.controls):
                mine = tasks[w::workers]
                self.worker_of.update((t.index, w) for t in mine)
                control.send(mine)
        except BaseException:
            self.close()
            raise

    @property
    def workers(self) -> int:
        return len(self.processes)

    def take(self, index: int) -> FileRead | None:
        """What a worker reads of plan file `index`, as a `FileRead` whose records arrive as they are
        written (its end, hash and tail are filled in once they have); None for a file the writer
        reads itself: not a new log, its worker lost, or its worker not started on it yet (the
        writer then reads it rather than wait, and tells the worker to leave it: workers starting
        up, or starved on a busy machine, never leave the writer idle)."""

        worker = self.worker_of.get(index)
        if worker is None or worker in self.lost:
            return None
        if not self.feeds[worker].started(index, TAKE_OVER_SECONDS):
            try:
                self.controls[worker].send(index)
            except OSError:
                self.lost.add(worker)
            self.taken_over += 1
            return None
        read = FileRead([], True, 0, 0, 0, None, 0)
        read.normalized = self._chunks(worker, index, read)
        return read

    def _chunks(self, worker: int, index: int, read: FileRead) -> Iterator[ReadyChunk]:
        while True:
            message = self.feeds[worker].next(index)
            if message is None:
                self.lost.add(worker)
                code = self.processes[worker].poll()
                raise WorkerLost(f"its reading process stopped (exit code {code})")
            kind, payload = message
            if kind == "chunk":
                yield _ready(payload)
            elif kind == "done":
                end, new_hash, nbytes, open_tail_offset, waiting, lines_after = payload
                read.end, read.new_hash, read.nbytes = end, new_hash, nbytes
                read.open_tail_offset, read.waiting, read.lines_after = open_tail_offset, waiting, lines_after
                return
            else:
                raise WorkerLost(payload)

    def close(self) -> None:
        """Stop the workers (one still sending finds its pipe closed), and the threads reading them."""
        for feed in self.feeds:
            feed.stop()
        for control in self.controls:
            control.close()
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for feed in self.feeds:
            feed.join()
            feed.pipe.close()


def _widen(fd: int) -> None:
    """A pipe of 1 MB rather than 64 KB (Linux): a chunk of a few MB crosses in a few turns of the
    two processes rather than a hundred."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (ImportError, OSError):
        pass
