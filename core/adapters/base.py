"""The one small interface every agent format implements.

An adapter answers three questions, none of them Claude-shaped:
  * where are this agent's files (`default_roots`, `discover`, `claims`),
  * what are the records of a file from a byte offset (`read`: lines for JSONL logs; one record
    per JSON document or database row for the others),
  * what does each record mean (`normalize` → `Record`, a format-neutral description that the
    ledger turns into sessions, turns, tool calls and usage).
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO, Protocol


class NotARegularFile(OSError):
    """A path that is a FIFO, a device or a socket: opening it could block forever or read
    without end, so sources are only ever regular files."""


def open_regular(path: Path | str) -> BinaryIO:
    """Open a source file for reading, refusing anything that is not a regular file.

    `O_NONBLOCK` keeps `open()` of a FIFO from waiting for a writer that never comes; the fstat
    on the open descriptor (not a stat before it) leaves no window for the path to be swapped."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFile(f"not a regular file ({file_kind(mode)}); skipped")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path | str, limit: int = -1) -> bytes:
    """The first `limit` bytes (all by default) of a regular file; see `open_regular`."""
    with open_regular(path) as f:
        return f.read(limit)


def file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "not a file"


@dataclass(slots=True)
class RawRecord:
    """Exact bytes of one record and where they came from."""

    offset: int
    line_number: int
    raw: bytes
    newline: bool = True


@dataclass(slots=True)
class ToolUse:
    id: str
    name: str
    input_json: str
    number: int = 0
    description: str | None = None  # for Task/Agent: what the subagent was asked to do
    prompt: str | None = None


@dataclass(slots=True)
class ToolResult:
    tool_use_id: str
    content_json: str
    status: str = "completed"  # completed | failed | rejected | interrupted
    child_agent_id: str | None = None  # the subagent this result reports on


@dataclass(slots=True)
class Usage:
    message_id: str
    request_id: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0


@dataclass(slots=True)
class SessionInfo:
    """What a record tells about the session it belongs to (first writer wins unless noted)."""

    source: str
    external_id: str | None = None
    kind: str = "main"
    is_subagent: int = 0
    parent_session_id: str | None = None
    agent_id: str | None = None
    agent_type: str | None = None
    task_description: str | None = None
    tool_call_id: str | None = None
    project_key: str | None = None
    spawn_key: str | None = None
    parent_message_id: str | None = None  # the message a child without a spawning call was started from


@dataclass(slots=True)
class Record:
    """A normalized record: the `entries` columns plus what the ledger derives from it."""

    entry_type: str | None = None
    subtype: str | None = None
    known: bool = True
    parse_error: str | None = None
    uuid: str | None = None
    parent_uuid: str | None = None
    logical_parent_uuid: str | None = None
    ref_uuid: str | None = None
    session_id: str | None = None  # the ledger session this record belongs to
    agent_id: str | None = None
    timestamp: int | None = None
    is_sidechain: bool = False
    is_meta: bool = False
    role: str | None = None
    content: str | None = None
    thinking: str | None = None
    tool_text: str | None = None  # plain text of tool inputs (on calls) or outputs (on results)
    model: str | None = None
    message_id: str | None = None
    request_id: str | None = None
    # derived-table facts
    is_message: bool = False  # shown as a message (agent_messages)
    is_prompt: bool = False  # a real human prompt: starts a turn
    is_compaction: bool = False
    # compaction boundary and its summary: they open the next segment rather than end a turn
    segment_marker: bool = False
    tool_uses: list[ToolUse] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    usage: Usage | None = None
    title: tuple[str, str] | None = None  # (title_source, text)
    title_target_uuid: str | None = None  # a title that belongs to the session owning this uuid
    cwd: str | None = None
    git_branch: str | None = None
    version: str | None = None
    session: SessionInfo | None = None
    forked_from_session_id: str | None = None
    # a later write of the message with this uuid (Gemini rewrites a message whole when its tool
    # calls change): the record is no message of its own, and the calls it adds are that message's
    update_of: str | None = None


@dataclass
class SourceRef:
    """A file an adapter will read, with what discovery already knows about it."""

    path: Path
    agent: str
    kind: str = "transcript"
    project_key: str | None = None


@dataclass
class FileContext:
    """Per-file state an adapter keeps while normalizing that file's records in order."""

    path: Path
    kind: str
    project_key: str | None
    state: dict[str, Any] = field(default_factory=dict)
    # Asks the ledger which session an earlier record (by uuid) was put in; used to keep
    # appended records in the session their parents are in.
    session_of_uuid: Any = None


DECODED_SUFFIX = "#decoded"


def decoded_path(path: Path | str) -> str:
    """The ledger-only path under which a document's decoded log is stored."""
    return f"{path}{DECODED_SUFFIX}"


def container_of(path: str) -> str | None:
    """The real file a decoded log came from (None for a real file)."""
    return path[: -len(DECODED_SUFFIX)] if path.endswith(DECODED_SUFFIX) else None


class SourceIncomplete(Exception):
    """A document caught mid-write: read it again on a later run rather than failing."""


class Adapter(Protocol):
    """What every agent format implements. Optional hooks, looked up with getattr:

    * ``split(data: bytes) -> list[RawRecord]`` for "document" files: cut the whole file into
      records that tile it exactly (each message's exact JSON, plus the bytes between them), so
      the file stays restorable; raise SourceIncomplete for a file caught mid-write.
    * ``read_rows(path: Path) -> list[RawRecord]`` for "database" sources: one record per row,
      `raw` the row's exact JSON value, `offset` a stable row number.
    * ``stat_paths(path: Path) -> list[Path]`` extra files whose change means the source changed
      (a SQLite database's -wal file).
    * ``decode(path: Path, data: bytes) -> bytes | None`` for a "document" that is an encoding of a
      log (a `.jsonl.zst`): the decoded log. The document is stored whole (its exact bytes stay
      restorable) and the decoded log is read like any log, as a source of kind "decoded" at
      `decoded_path(path)` that exists only in the ledger. Raise ValueError for a damaged file.
    * ``tool_io_in_record = True`` when a tool call's input and its result can be read again from
      their own records alone (`normalize` of that record with a fresh FileContext gives them back):
      the ledger then keeps no copy in `agent_tool_calls.params_json` / `result_json` (but for the
      inputs it reads itself, `ledger.PARAMS_KEPT`) and readers re-derive them
      (`core.query.fill_tool_io`). Tool output and input are the bulk of a log: the copies were
      ~20% of the database.
    """

    name: str
    mode: str  # "lines" (append-only JSONL) | "document" (rewritten whole) | "database"

    def default_roots(self) -> list[Path]: ...

    def discover(self, root: Path) -> Iterator[SourceRef]: ...

    def claims(self, path: Path) -> bool: ...

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record: ...


# a UTF-8 byte order mark: some editors and Windows tools start a file with one. Parsers look past
# it; the stored bytes keep it, so the file is restored as it was
BOM = b"\xef\xbb\xbf"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)

# What the normalized columns hold. A number beyond these stays in the record's raw bytes only:
# SQLite's INTEGER is 64 bits, a time past year 9999 cannot be shown as a date, and counts within
# 2**53 stay exact when the ledger totals them as floats.
LATEST_MS = 253402214400000  # 9999-12-31T00:00Z: a day short of the end, for any time zone
COUNT_LIMIT = 2**53


class _DroppedValues(threading.local):
    """Notes on values the record being normalized could not use, per thread.

    The converters below have no record at hand: they leave a note here, and `normalized` adds it
    to that record's `parse_error`."""

    def __init__(self) -> None:
        self.notes: list[str] = []


DROPPED = _DroppedValues()


def drop(what: str, value: Any) -> None:
    """Note that `value` was left out of the normalized columns (it stays in the raw bytes)."""
    notes = DROPPED.notes
    if len(notes) < 4:  # a reader that normalizes without taking the notes keeps only a few
        notes.append(f"{what} {_shown(value)} unusable: kept in the raw record only")


def take_dropped() -> str | None:
    """The notes left since the last call, as one line (None when there are none)."""
    notes = DROPPED.notes
    if not notes:
        return None
    text = "; ".join(dict.fromkeys(notes))
    notes.clear()
    return text


def normalized(adapter: Adapter, rec: RawRecord, ctx: FileContext) -> Record:
    """`adapter.normalize(rec, ctx)`, never raising, with the values it left out noted.

    A record the adapter fails on (a bug, or a shape nobody foresaw) comes back unread, with what
    failed in its `parse_error`: it is still stored byte for byte, and the file's other records
    are read as usual."""
    notes = DROPPED.notes
    if notes:  # left by a reader that normalized without taking them
        notes.clear()
    try:
        out = adapter.normalize(rec, ctx)
    except Exception as exc:
        out = Record(
            entry_type="unreadable",
            known=False,
            parse_error=f"kept raw only: reading it failed ({type(exc).__name__}: {exc})"[:500],
        )
    if notes:
        out.parse_error = "; ".join(t for t in (out.parse_error, take_dropped()) if t)
    return out


def _shown(value: Any) -> str:
    if isinstance(value, int) and not -COUNT_LIMIT <= value <= COUNT_LIMIT:
        return f"{value.bit_length()}-bit integer"  # str() of a long one is long, or refused
    return repr(value)[:40]


def safe_int(value: Any) -> int:
    """A count (tokens, turns) as stored: 0 when absent, not a number, or not a finite number
    within ±2**53 (that last case noted with `drop`)."""
    if isinstance(value, int):
        if isinstance(value, bool):
            return 0
        if -COUNT_LIMIT <= value <= COUNT_LIMIT:
            return value
    elif isinstance(value, float):
        if -COUNT_LIMIT <= value <= COUNT_LIMIT:  # False for NaN and infinities
            return int(value)
    else:
        return 0
    drop("number", value)
    return 0


def epoch_ms(value: Any) -> int | None:
    """A number of milliseconds since 1970 as stored: None when absent, zero or not a number, or
    not a time between 1970 and 9999 (that last case noted with `drop`)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value:
        return None
    if 0 < value <= LATEST_MS:  # False for NaN
        return int(value)
    drop("timestamp", value)
    return None


def parse_iso_ms(value: Any) -> int | None:
    """ISO-8601 (with Z, ms or µs) or epoch seconds/ms → unix ms; None when unparseable, or not a
    time between 1970 and 9999 (noted with `drop`: the value stays in the raw record).

    The common `2025-11-17T23:50:06.046Z` shape goes straight to `datetime.fromisoformat`, which
    reads the Z itself since Python 3.11 (in C: 0.5 µs, a third of slicing the fields in Python);
    the difference from the epoch in whole milliseconds is exact, with no float in between.
    """
    if value is None:
        return None
    if isinstance(value, (int, float)):
        if isinstance(value, bool):
            return None
        if 0 <= value <= LATEST_MS:  # False for NaN and infinities
            return int(value if value > 1e11 else value * 1000)
        drop("timestamp", value)
        return None
    if not isinstance(value, str) or len(value) < 10:
        return None
    if value[-1] == "Z" and len(value) >= 20 and value[10] == "T":
        try:
            ms = (datetime.fromisoformat(value) - _EPOCH) // _ONE_MS
        except ValueError:
            pass
        else:
            if 0 <= ms <= LATEST_MS:
                return ms
            drop("timestamp", value)
            return None
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        drop("timestamp", value)
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    ms = int(dt.timestamp() * 1000)
    if 0 <= ms <= LATEST_MS:
        return ms
    drop("timestamp", value)
    return None
