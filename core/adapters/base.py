"""The one base every agent implements (`Adapter`), and the plain data it reads and answers with.

An adapter answers, none of it Claude-shaped:
  * where are this agent's files (`default_roots`, `discover`, `claims`),
  * what are the records of a file from a byte offset (`mode`: lines for JSONL logs; one record
    per JSON document or database row for the others; `split`, `read_rows`, `decode`),
  * what does each record mean (`normalize` → `Record`, a format-neutral description that the
    ledger turns into sessions, turns, tool calls and usage),
  * what the agent can do with a session (capabilities: resume and fork commands, subagent tools).

Adding an agent: its module in this package (a subclass of `Adapter`), one line in `_SPECS` of
`core/adapters/__init__.py`, and its tests (`tests/unit/test_adapter_<agent>.py`).
"""

from __future__ import annotations

import errno
import glob
import io
import os
import re
import stat
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from .edits import (
    PATCH_BEGIN,
    DiffLine,
    FileEdit,
    diff_of,
    edits_of_patches,
    generic_edits,
)


class NotARegularFile(OSError):
    """A path that is a FIFO, a device or a socket: opening it could block forever or read
    without end, so sources are only ever regular files."""


# Another machine's files, pulled from a sync hub (core.ingest.sync), are named under this root (the same as
# core.store.db.MIRROR_ROOT): none of them is on this disk, and none is ever opened there. While core.ingest.sync
# places them, a read of one (a subagent's .meta.json beside its transcript, say) is answered from the
# archive; otherwise it is a file not found.
MIRROR_ROOT = "/threadloom-sync"
_mirrors = threading.local()


@contextmanager
def reading_mirrors(read: Callable[[str], bytes | None]) -> Iterator[None]:
    """Within the block (on this thread), `open_regular` of a file named under MIRROR_ROOT gives
    `read(path)`'s bytes (None: not in the archive: a file not found)."""
    before = getattr(_mirrors, "read", None)
    _mirrors.read = read
    try:
        yield
    finally:
        _mirrors.read = before


def _mirror(path: str) -> BinaryIO:
    read = getattr(_mirrors, "read", None)
    data = read(path) if read is not None else None
    if data is None:
        raise FileNotFoundError(errno.ENOENT, "another machine's file, not on this disk", path)
    return io.BytesIO(data)


def open_regular(path: Path | str) -> BinaryIO:
    """Open a source file for reading, refusing anything that is not a regular file.

    `O_NONBLOCK` keeps `open()` of a FIFO from waiting for a writer that never comes; the fstat
    on the open descriptor (not a stat before it) leaves no window for the path to be swapped."""
    if os.fspath(path).startswith(MIRROR_ROOT + "/"):
        return _mirror(os.fspath(path))
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


# ---------------------------------------------------------------------- one look at a folder


class _Look(threading.local):
    """What the discovery pass running on this thread has learned of its files (see `one_look`):
    by path, which adapters' `claims` answered it and which said yes, as bits (one per adapter's
    `claims`, in `asked`), small beside 20,000 paths' worth of dicts."""

    def __init__(self) -> None:
        self.answers: dict[str, tuple[int, int]] | None = None
        self.asked: dict[tuple[object, object], int] = {}
        self.heads: dict[str, bytes] = {}


_look = _Look()
HEADS_KEPT = 4  # the heads of the last few files read in a pass: every adapter asks of one file in turn
SNIFF_BYTES = 65536  # how much of a file is read to tell whose it is (a pass reads this much at once)


@contextmanager
def one_look() -> Iterator[None]:
    """A discovery pass: every adapter asks of each file under a root whether it is its own, most by
    reading its head, and Claude Code's asks every other adapter too. Under a folder of 4,000
    sessions that was ten reads of each file, 40% of a cold ingest. Within the pass each adapter's
    `claims` answers a file once and a file's head is read once; the pass is one look at the folder,
    as its walk's one listing is (a file changed meanwhile is seen by the next pass)."""
    if _look.answers is not None:  # inside another pass: that one holds
        yield
        return
    _look.answers = {}
    try:
        yield
    finally:
        _look.answers = None
        _look.asked.clear()
        _look.heads.clear()


def sniff(path: Path | str, limit: int) -> bytes:
    """The first `limit` bytes of a regular file (see `read_regular`), its head read once a pass."""
    if _look.answers is None or limit > SNIFF_BYTES or limit < 0:
        return read_regular(path, limit)
    key = os.fspath(path)
    head = _look.heads.get(key)
    if head is None:
        head = read_regular(path, SNIFF_BYTES)
        if len(_look.heads) >= HEADS_KEPT:
            del _look.heads[next(iter(_look.heads))]
        _look.heads[key] = head
    return head[:limit]


def _answered_once(claims: Callable[..., bool]) -> Callable[..., bool]:
    """`claims` asked once a file within a discovery pass (`one_look`); as written elsewhere."""

    def once(self: Adapter, path: Path, *args: Any, **kwargs: Any) -> bool:
        answers = _look.answers
        if answers is None or args or kwargs:
            return claims(self, path, *args, **kwargs)
        bit = _look.asked.setdefault((self, claims), 1 << len(_look.asked))
        key = os.fspath(path)
        asked, said = answers.get(key, (0, 0))
        if asked & bit:
            return bool(said & bit)
        found = claims(self, path)
        asked, said = answers.get(key, (0, 0))  # again: Claude Code's asks the others meanwhile
        answers[key] = (asked | bit, said | bit if found else said)
        return found

    once.__doc__, once.__name__, once.__qualname__ = claims.__doc__, claims.__name__, claims.__qualname__
    once.__wrapped__ = claims  # type: ignore[attr-defined]
    return once


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
    # a line too long for one record is stored in pieces: the last carries the line with its longest
    # strings shortened (core.ingest.reading's LineSkeleton), which is read for its meaning; the
    # earlier ones carry b"" (a piece, read with its last one)
    whole: bytes | None = None


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
    cost_usd: float | None = None  # what the agent itself recorded the message cost (old Claude Code)
    # of cache_creation_tokens, those written to a cache kept an hour (Anthropic's, priced higher
    # than the five minutes' cache)
    cache_write_1h_tokens: int = 0
    web_searches: int = 0  # searches the provider ran for the message (billed apiece, beside tokens)
    model: str | None = None  # the model its tokens are priced at, when not its record's


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
    # another record this one is about: a summary's leaf, a snapshot's message; on a system message
    # of subtype `undo`, the first message it withdrew from the model's context (`browse.withdrawn_seqs`)
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
    # a piece of a session's side file (a tool's full output, a file's copy before an edit): kept with
    # the session, restored with it, but not one of its records (the ledger does not place it)
    side_file: bool = False
    is_prompt: bool = False  # a real human prompt: starts a turn
    is_compaction: bool = False
    # compaction boundary and its summary: they open the next segment rather than end a turn
    segment_marker: bool = False
    tool_uses: list[ToolUse] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    usage: Usage | None = None
    # usage beside `usage`, each priced at its own `model`: a session's totals a record gives per model
    more_usage: list[Usage] = field(default_factory=list)
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
    # read from its line with the longest strings shortened (RawRecord.whole): its raw record alone
    # does not give its tool calls' inputs and results back, so the ledger keeps them
    shortened: bool = False


@dataclass(slots=True)
class ImageRef:
    """An image a message's record embeds, without its bytes (a page keeps no base64): its media
    type as written, its decoded size, where it sits (in the "prompt" or in a "tool result", with
    that call's id), and its `index` among the record's images, which `Adapter.image_data` takes
    to read it again from the record."""

    media_type: str
    size: int
    place: str = "prompt"  # prompt | tool result
    index: int = 0
    tool_use_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Where the image sits, never its bytes (`index` reads it again from its entry): the form
        `show --json` and the JSON export give."""
        return {
            "media_type": self.media_type,
            "bytes": self.size,
            "place": self.place,
            "tool_use_id": self.tool_use_id,
            "index": self.index,
        }


def base64_size(data: str) -> int:
    """The bytes a base64 text decodes to, from its length alone (nothing is decoded)."""
    data = data.strip()
    return max(0, len(data) * 3 // 4 - (len(data) - len(data.rstrip("="))))


def data_url(url: object) -> tuple[str, str] | None:
    """The media type and base64 text of a `data:<type>;base64,<text>` URL; None for any other URL
    (a path or a web address: nothing stored to show)."""
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head[: -len(";base64")] or "image", data


def extras_of_images(
    raw: bytes, walk: Callable[[Any], Iterator[tuple[ImageRef, str]]]
) -> MessageExtras | None:
    """MessageExtras holding the images `walk` finds in a parsed record; None for none (or a record
    that does not parse)."""
    try:
        images = [ref for ref, _ in walk(orjson.loads(raw))]
    except orjson.JSONDecodeError:
        return None
    return MessageExtras(images=images) if images else None


def image_of(
    raw: bytes, index: int, walk: Callable[[Any], Iterator[tuple[ImageRef, str]]]
) -> tuple[str, str] | None:
    """Image `index` that `walk` finds in a record, as (media type, base64 text)."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return next(((ref.media_type, data) for ref, data in walk(obj) if ref.index == index), None)


@dataclass
class MessageExtras:
    """What the viewer draws from a message's record beyond its normalized columns: event fields
    (a system record's level, error, retries, hooks, compaction metadata) and images."""

    event: dict[str, Any] = field(default_factory=dict)
    images: list[ImageRef] = field(default_factory=list)


@dataclass
class SourceRef:
    """A file an adapter will read, with what discovery already knows about it."""

    path: Path
    agent: str
    kind: str = "transcript"
    project_key: str | None = None


@dataclass(frozen=True)
class StoredFile:
    """A file of the archive that a replay reads again: its id, the path it was read from, and its
    bytes as the archive holds them (`stored()`: read only when called; the disk is never read, the
    file may be gone from it)."""

    id: int
    path: Path
    kind: str
    stored: Callable[[], bytes | None]


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
    # The file as the archive holds it, for an adapter that reads the whole file beside its records
    # (Aider): set by a replay, whose records are the archive's, whatever the disk holds now (the
    # file appended to, rewritten or gone since)
    stored: Callable[[], bytes | None] | None = None
    # (session id, file name) → the side files of that name the archive keeps with the session, by
    # path: set by a replay, for an adapter that reads a file beside the one it places (cursor-agent's
    # chat meta.json), which then reads what the archive kept, the disk's copy gone perhaps
    kept_with: Callable[[str, str], dict[str, bytes]] | None = None
    # (a glob of paths (`*` within one part of a path), bytes) → the archive's files whose paths
    # match it, each as its records' bytes in order (a line's with its newline), by path; given
    # bytes, only the first record that starts with them (whether a file holds one, read no
    # further); given None, no record (which files it holds). Set by a replay, for an adapter that
    # reads a file beside the one it places (a Claude Code subagent's .meta.json, a Cursor
    # workspace's workspace.json): what the archive holds (`read_beside`), whatever the disk holds now
    archived: Callable[[str, bytes | None], dict[str, list[bytes]]] | None = None

    def read_beside(self, path: Path, limit: int = -1) -> bytes:
        """A file (its first `limit` bytes) read beside the one being read: in a replay as the
        archive holds it, so a replay gives what the first read gave after the agent deleted the
        file; otherwise, or where the archive holds none (it was not read, or not kept then), the
        disk's. OSError: neither has it."""
        if self.archived is not None:
            for records in self.archived(glob.escape(os.fspath(path)), b"").values():
                data = b"".join(records)
                return data if limit < 0 else data[:limit]
        return read_regular(path, limit)


DECODED_SUFFIX = "#decoded"
# A name whose bytes are not UTF-8 (they decode to surrogates, which no database text holds) is
# stored as its text escaped (`\xff`, what is shown), then this mark and its bytes in hex (what is
# read and restored): no real path holds a NUL, so every other name is stored as it is.
NAME_BYTES = "\0"


def stored_name(path: str | Path) -> str:
    """A path as the archive stores it (see NAME_BYTES)."""
    text = str(path)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        raw = os.fsencode(text)
        return raw.decode("utf-8", "backslashreplace") + NAME_BYTES + raw.hex()


def disk_name(stored: str) -> str:
    """The path a stored name stands for, as the file system takes it (bytes that are not UTF-8 as
    surrogates, which os functions turn back into those bytes)."""
    if NAME_BYTES not in stored:
        return stored
    shown, _, hexed = stored.partition(NAME_BYTES)
    try:
        return os.fsdecode(bytes.fromhex(hexed))
    except ValueError:
        return shown


def shown_name(stored: str) -> str:
    """A stored name as it is shown: escaped, never its hex."""
    return stored.partition(NAME_BYTES)[0]


def decoded_path(path: Path | str) -> str:
    """The ledger-only path under which a document's decoded log is stored."""
    return f"{path}{DECODED_SUFFIX}"


def container_of(path: str) -> str | None:
    """The real file a decoded log came from (None for a real file)."""
    return path[: -len(DECODED_SUFFIX)] if path.endswith(DECODED_SUFFIX) else None


class SourceIncomplete(Exception):
    """A document caught mid-write: read it again on a later run rather than failing."""


class ForkError(RuntimeError):
    """A fork or resume that cannot be made as asked; the message says why and what can be done."""


# Every value of a printed command that comes from a log (ids, folders) is untrusted: logs arrive
# from backups and from other people. Ids must have the shape their agent writes (`Adapter.id_shape`).
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# one word, never an option (OpenCode `ses_…`, Cline's ms-epoch or UUID, cursor-agent's UUID)
PLAIN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._:-]*")
IdShape = tuple[re.Pattern[str], str]  # the pattern an agent's ids match, and how a message describes it
ANY_ID: IdShape = (PLAIN_ID, "made of letters, digits and . _ : -")


def checked_id(agent: str, value: object, what: str = "session id", shape: IdShape = ANY_ID) -> str:
    """`value` if it has the `shape` (pattern, description) `agent` gives its ids; else ForkError,
    so that no command carries it."""
    pattern, described = shape
    if isinstance(value, str) and pattern.fullmatch(value):
        return value
    raise ForkError(
        f"the {what} {repr(value)[:80]} in this {agent} log is not {described}, as {agent} writes it; "
        "threadloom puts no such value in a command (the log may be damaged or crafted)"
    )


@dataclass(frozen=True, slots=True)
class ResumeTarget:
    """The session a command resumes, as the store knows it: plain data, so an adapter can say how
    its agent resumes a session without reading the database."""

    agent: str
    session_id: str  # threadloom's id (Claude Code's own; "<root>:<agent>" for its subagents)
    external_id: str  # the agent's own id for the session (the session id when it has none)
    cwd: str | None  # the folder it was started in, where its agent looks for it
    git_branch: str | None = None
    is_subagent: bool = False
    # the file the session was read from: an agent that finds only some of its files (not those of an
    # older format) can say which it cannot resume
    source_path: str | None = None


@dataclass(slots=True)
class CleanupPolicy:
    """An agent's own deletion of its old sessions: after `period_days` (None: it keeps them), as set
    by `setting` (a file and key, said in the warning), read from the agent's settings now."""

    period_days: float | None
    setting: str
    # the files it deletes: its transcripts directly under a project folder of `root`
    root: Path
    suffix: str = ".jsonl"
    key: str = ""  # the setting's name in the agent's settings, said in the warning


@dataclass(frozen=True, slots=True)
class SpawnFacts:
    """A spawn call's input as its agent spells it: the subagent's first prompt (matched against
    the subagent's own when no id links them), what it was asked to do, its type, whether it is a
    named teammate rather than a one-off subagent, and whether it is a fork of the caller's
    conversation (handed it whole) rather than started from its prompt alone."""

    prompt: str | None = None
    description: str | None = None
    agent_type: str | None = None
    teammate: bool = False
    fork: bool = False


@dataclass(frozen=True, slots=True)
class SessionHooks:
    """An agent that runs a command on its own events, set in a JSON settings file under `hooks`
    (`{event: [{"hooks": [{"type": "command", "command": …}]}]}`): where that file is, the event
    at a session's end and the one after each reply, and the key of the JSON object the command is
    given on stdin that names the session's transcript."""

    settings: Path
    session_end: str
    reply_end: str | None
    transcript_key: str


@dataclass(frozen=True, slots=True)
class McpConfig:
    """Where an agent reads the MCP servers it starts (`threadloom mcp install`): its file, written
    as JSON (servers in an object under `key`) or TOML (a table per server under `key`), and the
    keys a new file starts with."""

    path: Path
    key: str = "mcpServers"
    toml: bool = False
    new_file: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class Command:
    """The words that resume a session, before threadloom quotes them and runs them in its folder."""

    argv: list[str]
    # the agent takes the session's folder as this option (`codex resume ID -C DIR`) rather than a `cd`
    folder_option: str | None = None
    notes: list[str] = field(default_factory=list)  # said first, before the notes on the folder


def nearest_folder(parts: Sequence[str], name: str) -> int | None:
    """The index of the folder named `name` nearest the end of `parts` (a path's folders, then its name)."""
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == name:
            return i
    return None


class Adapter(ABC):
    """What an agent is to threadloom: how to find and read its logs, and what it can do with them.

    Reading (every adapter): `default_roots`, `discover` and `claims` find its files; `mode` says how
    they are read, "lines" (append-only JSONL), "document" (rewritten whole: `split` cuts it) or
    "database" (`read_rows`); `normalize` says what each record means. `stat_paths`, `decode` and
    `tool_io_in_record` refine that. Capabilities (declared here with the answer of an agent that has
    none of them): which tools spawn subagents, how a session is resumed (`resume_command`) or forked
    (`fork_style`, `forks_before_prompt`, `native_fork_commands`), how its edits are undone
    (`undo_style`), what a tool's structured result is (`tool_result_extra`). `core.actions.fork`,
    `core.actions.undo`, the ledger, the viewer and the TUI ask these, never an agent's name.

    Adding an agent: its module here (a subclass of this, overriding what its agent has), one line
    in `_SPECS` of `core/adapters/__init__.py`, and its tests in `tests/unit/test_adapter_<agent>.py`.
    Adapters never import the store, ingest, ledger or fork modules (pyproject's import contract):
    what they need from a session comes to them as plain data (`RawRecord`, `ResumeTarget`).
    """

    name: str  # the agent, as `source` in the store
    mode: str  # "lines" | "document" | "database"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """An adapter's `claims` answers each file once within a discovery pass (`one_look`): every
        adapter asks it of the files under every root, and Claude Code's asks it of every other's."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("claims")
        if own is not None and not getattr(own, "__isabstractmethod__", False):
            cls.claims = _answered_once(own)  # type: ignore[method-assign]

    # ------------------------------------------------------------------ reading

    # A tool call's input and result can be read again from their own records alone (`normalize` of
    # that record with a fresh FileContext gives them back): the ledger then keeps no copy in
    # `agent_tool_calls.params_json` / `result_json` (but for `kept_inputs`) and readers re-derive
    # them (`core.read.query.fill_tool_io`). Tool output and input are the bulk of a log: the copies were
    # ~20% of the database.
    tool_io_in_record: bool = False
    # the files under its default folders that no adapter takes are listed as unclaimed (a folder
    # that holds the agent's logs alone)
    says_unclaimed: bool = False
    # its logs hold undo records (a system record of subtype `undo`, `Record.ref_uuid`): only its
    # sessions are read for them (`core.read.browse.withdrawn_seqs`), each open of any other a scan less
    writes_undos: bool = False
    # its logs mark a turn the user stopped with a record of its own (Codex's `turn_aborted`): only its
    # sessions are read for them by the signals (`core.insight.signals`)
    writes_aborts: bool = False
    # `decode` turns this agent's "document" files into logs (a `.jsonl.zst`)
    decodes: bool = False
    # `stat_paths` names side files (a database's -wal): a run with nothing new stats every source,
    # so the others skip the call (and the Path it takes)
    side_files: bool = False
    # the environment variables that move where this agent keeps its files (the background service
    # carries them, and the tests clear them)
    env_vars: tuple[str, ...] = ()

    @abstractmethod
    def default_roots(self) -> list[Path]:
        """Where the agent keeps its logs on this machine."""

    def side_roots(self) -> list[Path]:
        """Where the agent keeps its sessions' side files apart from their logs (Claude Code's
        file history, todos, plans): read with the default locations, not listed as places logs are."""
        return []

    def project_folder(self, parts: Sequence[str], key: str) -> int | None:
        """Which of a stored path's parts (its folders, then its name) is its project's folder,
        the one `key` names: where a restore puts the file from, and which side files are the
        project's. By default the nearest folder of that name (`nearest_folder`)."""
        return nearest_folder(parts, key)

    def plans_folder(self, session_id: str) -> str:
        """The part of a stored path (`/<folder>/`) that a session's plans lie below, in a `plans/`
        folder (`core.read.archive.plan_files`): by default the session's own folder, named by its id."""
        return f"/{session_id}/"

    @abstractmethod
    def discover(self, root: Path) -> Iterator[SourceRef]:
        """The agent's files under `root` (or `root` itself, a file named on the command line)."""

    @abstractmethod
    def claims(self, path: Path) -> bool:
        """Whether `path` is one of the agent's files."""

    @abstractmethod
    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        """What one record means; `ctx` carries what earlier records of the file said."""

    def stranger(self, path: Path) -> str | None:
        """What a file no adapter claims is, when this agent knows it for another agent's that
        threadloom does not read (a Qwen Code transcript looks like Claude Code's): the reason
        `sources` and `ingest --json` give for leaving it unread. None: nothing to say."""
        return None

    def replay_order(self, files: list[StoredFile]) -> list[StoredFile]:
        """The order in which a replay reads this agent's files again (all of them in the replay,
        in the order they were first stored), as `discover` would hand them today: a replay then
        gives what a fresh ingest of the same files gives, whatever order an older release stored
        them in. By default the order they were stored in, nothing read."""
        return files

    def split(self, data: bytes) -> list[RawRecord]:
        """A "document" file cut into records that tile it exactly (each message's exact JSON, plus
        the bytes between them), so the file stays restorable; raise SourceIncomplete for a file
        caught mid-write. By default the whole document is one record."""
        return [RawRecord(0, 1, data, newline=False)] if data else []

    def split_unfinished(self, data: bytes) -> list[RawRecord]:
        """A "document" its writer left unfinished (`split` found it cut short, and no write has
        come for long): its bytes kept all the same, by default as one record."""
        return [RawRecord(0, 1, data, newline=False)] if data else []

    def read_rows(self, path: Path) -> list[RawRecord]:
        """A "database" source: one record per row, `raw` the row's exact JSON value, `offset` a
        stable row number."""
        raise NotImplementedError(f"the {self.name} adapter reads no database")

    def stat_paths(self, path: Path) -> list[Path]:
        """With `side_files`: other files whose change means the source changed (a SQLite
        database's -wal file)."""
        return []

    def decode(self, path: Path, data: bytes) -> bytes | None:
        """With `decodes`: the log a "document" encodes (a `.jsonl.zst`), or None when it holds none.
        The document is stored whole (its exact bytes stay restorable) and the decoded log is read
        like any log, as a source of kind "decoded" at `decoded_path(path)` that exists only in the
        ledger. Raise ValueError for a damaged file."""
        return None

    # bytes in the first 2 KB of a user record that holds an image: the viewer reads the raw record
    # of system entries, user entries with text and those holding this, never other tool results
    image_marker: bytes = b'"type":"image"'
    # whether an assistant's record can hold images too (Gemini's tool results are in its replies):
    # the marker is looked for in user records only otherwise (reading a blob's start reads it whole)
    images_in_replies: bool = False

    def message_extras(self, raw: bytes, entry_type: str | None) -> MessageExtras | None:
        """Event fields and images in a message's raw record, for the viewer; None when it holds
        none. Called for a page's system and user entries: it checks the bytes before parsing."""
        return None

    def image_data(self, raw: bytes, index: int) -> tuple[str, str] | None:
        """The media type and base64 text of image `index` (an `ImageRef.index`) in a record, read
        only when the image is drawn, opened or saved; None when there is no such image."""
        return None

    def tool_result_extra(self, record: dict[str, Any]) -> Any:
        """The tool's own structured result that a tool result record carries beside its text
        (patches, exit codes, agent stats), for the viewer; None when the agent writes none."""
        return None

    def tool_input(self, record: dict[str, Any], tool_id: str) -> dict[str, Any] | None:
        """The input of call `tool_id` read straight from its parsed record, when this agent can do
        it cheaper than `normalize` (the stats read every edit's input); None: normalize it."""
        return None

    # ------------------------------------------------------------------ tools

    # The agent's tools by what they do: the viewer, the exports, the stats and undo read these,
    # never a tool's name. `edit_tools` change part of a file, `write_tools` write a whole file,
    # `patch_tools` apply a `*** Begin Patch` text (a shell call running apply_patch is read as one
    # too), `shell_tools` run a command, `read_tools` read a file, `todo_tools` write the agent's
    # todo list.
    edit_tools: frozenset[str] = frozenset()
    write_tools: frozenset[str] = frozenset()
    patch_tools: frozenset[str] = frozenset()
    read_tools: frozenset[str] = frozenset()
    shell_tools: frozenset[str] = frozenset()
    todo_tools: frozenset[str] = frozenset()
    # tools that start a subagent whose first prompt is the tool's prompt parameter (`spawn_facts`)
    spawn_tools: frozenset[str] = frozenset()
    # spawn tools that start several subagents at once, each named in the result (`spawned_agents`)
    swarm_tools: frozenset[str] = frozenset()
    # tools whose call ends planning: opening one opens the session's saved plan (`core.read.side_files`)
    plan_tools: frozenset[str] = frozenset()
    # the agent's edits are blocks in its replies' text (Aider's SEARCH/REPLACE), not tool calls
    edits_in_replies: bool = False

    @property
    def tool_names(self) -> frozenset[str]:
        """Every tool this adapter names in one of its groups."""
        return (
            self.edit_tools
            | self.write_tools
            | self.patch_tools
            | self.read_tools
            | self.shell_tools
            | self.todo_tools
            | self.spawn_tools
            | self.plan_tools
        )

    def call_gist(self, name: str, params: dict[str, Any]) -> str | None:
        """A call's one-line gist when this agent's tool says it better than its command, path or
        pattern (a task id, a workflow's name); None: the generic reading."""
        return None

    def call_prose(self, name: str, params: dict[str, Any]) -> tuple[str, str] | None:
        """An input that is text to read (a plan, a question) as (what it is, its text): drawn as
        Markdown, its first line the call's gist, never as a JSON string of escapes. By default an
        input whose one field is a text of several lines; None: none is."""
        return prose_field(params)

    def is_edit(self, name: str, params: dict[str, Any]) -> bool:
        """Whether the call changes files in a way a diff shows."""
        if name in self.edit_tools or name in self.write_tools or name in self.patch_tools:
            return True
        return name in self.shell_tools and any(PATCH_BEGIN in text for text in _strings(params))

    def edit_result(self, record: dict[str, Any], tool_id: str) -> Any:
        """What a call's result record says of its edit, as `file_edits` takes it (by default the
        tool's structured result, `tool_result_extra`)."""
        return self.tool_result_extra(record)

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """What an edit call did to each file it changed (`core.adapters.edits`), from its input and
        `result` (what `edit_result` read from its result record, when there is one): the one reading
        the viewer, the exports, the stats and undo share. By default: a patch tool's (or a shell
        call's) `*** Begin Patch` texts, and an edit or write tool's parameters."""
        if name in self.patch_tools or name in self.shell_tools:
            return edits_of_patches(params, name if name in self.patch_tools else "apply_patch")
        if name in self.edit_tools or name in self.write_tools:
            return generic_edits(name, params, writes=self.write_tools)
        return []

    def edit_diff(self, name: str, params: dict[str, Any], result: Any = None) -> list[DiffLine]:
        """The diff lines of an edit call (empty for any other call)."""
        return diff_of(self.file_edits(name, params, result))

    def tool_inputs(self, raw: bytes) -> dict[str, Any] | None:
        """The inputs of the tool calls one record makes, by call id, read straight from its bytes
        where the format allows (a fast path for readers that want inputs alone, such as the
        episodes' facets); None: normalize the record instead (core.read.query.fill_tool_io)."""
        return None

    # ------------------------------------------------------------------ subagents

    def spawn_facts(self, params: dict[str, Any]) -> SpawnFacts:
        """What a spawn call's input says of the subagent it starts, for linking it to its call when
        no id does: by default its `prompt` and `description`."""
        prompt, description = params.get("prompt"), params.get("description")
        return SpawnFacts(
            prompt if isinstance(prompt, str) else None,
            description if isinstance(description, str) else None,
        )

    def spawned_agents(self, result: str | None) -> list[str]:
        """The subagents (their agent ids) a call of one of `swarm_tools` reports on in its result
        (`result_json` as stored), for linking each to the call (a call that starts one names it in
        its `ToolResult.child_agent_id`)."""
        return []

    @property
    def kept_inputs(self) -> frozenset[str]:
        """Tools whose input the ledger reads itself (to link and describe subagents): stored even
        when `tool_io_in_record` lets readers re-read the others."""
        return self.spawn_tools

    # ------------------------------------------------------------------ resume and fork

    @property
    def display_name(self) -> str:
        """The agent's name in sentences."""
        return self.name

    @property
    def program(self) -> str:
        """The command that runs the agent."""
        return self.name

    id_shape: IdShape = ANY_ID  # (pattern, description) of the agent's session ids
    # How threadloom forks a session at a point: the name of the machinery in `core.actions.fork` that writes
    # or finds the fork (None: it cannot). Kept there because it reads the store.
    fork_style: str | None = None
    forks_before_prompt: bool = False  # a fork can end just before a prompt, to send another instead
    forks_natively: bool = False  # the agent forks itself at a message, with a new prompt
    resumes_subagents: bool = False  # a subagent's session resumes on its own
    # its sessions are shown as another agent's (`SessionInfo.source`: cursor-agent's as Cursor's)
    # but resumed and forked by this reader's own commands, which that agent's reader cannot give
    resumes_own_sessions: bool = False
    # How a fork's records copied from its source are told from its own (the stats count them once,
    # in the source): "marked" (each copy carries a `forkedFrom` object), "before-second-meta"
    # (every record up to the fork's second session header's time); None: the agent writes no forks
    fork_copies: str | None = None
    # How `core.actions.undo` reads the outcome of this agent's edits (None: from the calls' parameters alone)
    undo_style: str | None = None

    def checked_id(self, value: object, what: str = "session id") -> str:
        """`value` if it has the shape of this agent's ids, else ForkError."""
        return checked_id(self.name, value, what, self.id_shape)

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """The command that resumes `target` (with `fork`: a copy of it, left as it is); ForkError
        when there is none."""
        raise ForkError(f"threadloom has no resume command for {self.name} sessions")

    # the record types a fork written as a session file keeps (its conversation's messages)
    message_types: frozenset[str] = frozenset()

    # `launch_command` starts an interactive session with its words as the first prompt (Aider takes
    # its words for files to add: a context cannot be its first message)
    starts_with_prompt: bool = True

    def launch_command(self, prompt_words: list[str]) -> Command:
        """The command that starts a new session in the current folder, sending `prompt_words`
        (already guarded with "--" when the prompt starts with "-") as its first prompt."""
        return Command([self.program, *prompt_words])

    def fork_file_command(self, path: str) -> Command:
        """With a `fork_style` that writes a copy for the agent to open (Aider's history copy,
        Gemini's session file): the command that opens the copy at `path`."""
        raise ForkError(f"threadloom writes no fork file for {self.name} sessions")

    def resume_root(self) -> Path | None:
        """Where the agent looks for the sessions it resumes (a fork written for it goes there, and
        a transcript read from elsewhere is restored there first); None: no one place."""
        return None

    def misread(self, head: bytes) -> str | None:
        """What a session stored as this agent's really is, when its first records (`head`) show an
        earlier threadloom took another agent's transcript for this one's; None: it is this agent's."""
        return None

    def mcp_config(self) -> McpConfig | None:
        """Where this agent is told of an MCP server; None: threadloom does not register itself."""
        return None

    def mcp_entry(self, command: list[str]) -> dict[str, Any]:
        """A stdio MCP server running `command`, as the agent's configuration spells it."""
        return {"command": command[0], "args": command[1:]}

    def session_hooks(self) -> SessionHooks | None:
        """Where threadloom can ask the agent to archive each session as it ends (`threadloom
        hooks`); None: the agent runs no commands on its events."""
        return None

    def cleanup_policy(self) -> CleanupPolicy | None:
        """How the agent deletes its own old sessions, when it does (the warning before it does)."""
        return None

    def native_fork_commands(
        self, target: ResumeTarget, point: str, prompt_words: list[str]
    ) -> tuple[list[str], list[str]]:
        """With `forks_natively`: the command that forks `target` at the message `point` and sends
        `prompt_words`, printing JSON with the new `session_id`, and the command that opens a session
        given that id as its last word."""
        raise NotImplementedError(f"{self.name} does not fork itself")


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


PIECE_TYPE = "piece"  # the entry type of a line's pieces before its last (RawRecord.whole)
PIECE_NOTE = "a piece of a line too long for one record; the line is read at its last piece"


def normalized(adapter: Adapter, rec: RawRecord, ctx: FileContext) -> Record:
    """`adapter.normalize(rec, ctx)`, never raising, with the values it left out noted.

    A record the adapter fails on (a bug, or a shape nobody foresaw) comes back unread, with what
    failed in its `parse_error`: it is still stored byte for byte, and the file's other records
    are read as usual."""
    notes = DROPPED.notes
    if notes:  # left by a reader that normalized without taking them
        notes.clear()
    if rec.whole is not None:
        if not rec.whole:  # an earlier piece: in its file's session (as the adapter reads bytes that
            # are no record), with no place in its conversation (the last piece has the line's)
            # (asked of an empty record: reading 32 MB that are no JSON would only fail, slowly)
            session = normalized(adapter, RawRecord(rec.offset, rec.line_number, b"", False), ctx).session_id
            return Record(entry_type=PIECE_TYPE, known=False, parse_error=PIECE_NOTE, session_id=session)
        out = normalized(adapter, RawRecord(rec.offset, rec.line_number, rec.whole, rec.newline), ctx)
        out.shortened = True
        return out
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
    from 0 to 2**53 (that last case noted with `drop`): a negative count is none (summed, -100
    tokens took 100 off a session's and priced it below nothing)."""
    if isinstance(value, int):
        if isinstance(value, bool):
            return 0
        if 0 <= value <= COUNT_LIMIT:
            return value
    elif isinstance(value, float):
        if 0 <= value <= COUNT_LIMIT:  # False for NaN and infinities
            return int(value)
    else:
        return 0
    drop("number", value)
    return 0


def recorded_cost(value: Any) -> float | None:
    """A cost in USD an agent wrote itself: None when absent, and when not a finite number from 0
    to a million (that case noted with `drop`)."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1e6:
        return float(value)
    drop("cost", value)
    return None


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


def prose_field(params: dict[str, Any]) -> tuple[str, str] | None:
    """An input made of one field, a text of several lines, as (the field's name, its text)."""
    if len(params) != 1:
        return None
    ((key, text),) = params.items()
    return (key, text) if isinstance(text, str) and "\n" in text.strip() else None


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a call's parameters."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
