"""Reading one source file: what is planned for it (FilePlan), its new lines found and hashed from
where the last run stopped, cut into chunks (FileRead). The same in the writer and in the workers
that read new files on other cores, which is why it is a module of its own."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, NamedTuple, Protocol

import orjson
import xxhash

from ..adapters.base import Adapter, RawRecord, Record, SourceRef

ReadyChunk = tuple[list[RawRecord], list[Record], list[str]]

# A last line that is JSON cut short waits for its writer; after this long unchanged it is kept as
# an invalid record instead, so a crashed writer's bytes are not lost. A line writer finishes a line
# in one write (milliseconds), so a minute unchanged is a writer that stopped.
STALE_TAIL_SECONDS = 60


ROWS_PER_CHUNK = 2000


class KnownRow(NamedTuple):
    """What the last run recorded of a file that must be read (KNOWN_COLUMNS, in their order)."""

    path: str
    id: int
    size: int
    mtime_ns: int
    inode: int | None
    bytes_ingested: int
    lines_ingested: int
    content_hash: str | None
    open_tail_offset: int | None  # where the unfinished last line starts, when there is one
    status: str
    agent: str
    kind: str
    project_key: str | None
    ctime_ns: int | None


@dataclass
class FilePlan:
    ref: SourceRef
    adapter: Adapter
    stat: os.stat_result
    row: KnownRow | None


HASH_CHUNK = 1 << 20


# `source_files.content_hash` of a log: this prefix and the xxh3_128 of the bytes ingested. Any hash
# of a grown log's whole prefix is read and computed at each append (an edit anywhere in it must be
# seen), and sha256 took 0.09 s of a 143 MB session's 0.76 s append where xxh3 takes ~0.01 s (the
# read from the page cache is then most of it). It guards against edits, not against an adversary:
# 128 bits leave no accidental collision. A value without the prefix is the sha256 (first 32 hex
# digits) an older threadloom stored: it is checked as sha256, and the hash stored next is xxh3.
FAST_HASH = "x3:"


class Hasher(Protocol):
    """What reading a log needs of a hash object (hashlib's and xxhash's alike)."""

    def update(self, data: bytes | memoryview, /) -> None: ...

    def hexdigest(self) -> str: ...


def new_hasher(stored: str | None = None) -> Hasher:
    """The hash a log's bytes are hashed with: xxh3_128, or sha256 to check a `stored` value an
    older threadloom wrote."""
    if stored is not None and not stored.startswith(FAST_HASH):
        return hashlib.sha256()
    return xxhash.xxh3_128()


def prefix_hash(f: BinaryIO, end: int, stored: str | None = None) -> Hasher:
    """The hash (`new_hasher`) of bytes [0, end) of `f`, read in chunks into one buffer (the object,
    so the caller can go on hashing what follows).

    The whole ingested prefix of a grown file is hashed, not a sample of it: an edit anywhere in it
    (11 bytes in the middle of a 2 MB session) must make the file be read again whole.
    """
    h = new_hasher(stored)
    f.seek(0)
    buf = bytearray(min(max(end, 1), HASH_CHUNK))
    view = memoryview(buf)
    remaining = end
    while remaining > 0:
        n = f.readinto(view[: min(remaining, len(buf))])  # type: ignore[attr-defined]
        if not n:
            break
        h.update(view[:n])
        remaining -= n
    return h


def _digest(h: Hasher) -> str:
    if isinstance(h, xxhash.xxh3_128):
        return FAST_HASH + h.hexdigest()
    return h.hexdigest()[:32]


@dataclass
class FileRead:
    """What one reading strategy took from a source file, for `_store` to write."""

    records: Iterable[RawRecord]  # a list, or records read as they are stored (`_stream_lines`)
    rewrite: bool  # read whole: the file's stored records are replaced
    start: int  # byte offset the records begin at (0, or where an append goes on)
    line_number: int  # lines before them
    end: int  # bytes of the file ingested once these are stored
    new_hash: (
        str | None
    )  # the hash of those bytes (FAST_HASH), or sha256 (truncated) of a document or a database's rows
    nbytes: int  # bytes read, for the report
    open_tail_offset: int | None = None  # a last line stored without its newline (yet)
    waiting: bool = False  # an unfinished last line left for its writer
    lines_after: int | None = None  # lines once stored, when records are not one a line (pieces)
    # the records normalized already, chunk by chunk, by a worker process (core.ingest.workers)
    normalized: Iterator[ReadyChunk] | None = None


def read_lines(plan: FilePlan, f: BinaryIO) -> FileRead | None:
    """A log its agent appends lines to: only the bytes after what the last run read, when the
    part read then is unchanged (`_resume_point`); else the whole file again."""
    ref, adapter, st, row = plan.ref, plan.adapter, plan.stat, plan.row
    if (
        row is not None
        and row.open_tail_offset is None
        and st.st_size == row.bytes_ingested > 0
        and _digest(prefix_hash(f, st.st_size, row.content_hash)) == row.content_hash
    ):
        return None  # the same bytes under a new stat (a chmod, a `touch`): nothing to read
    start, line_number, hasher = _resume_point(plan, f)
    rewrite = hasher is None
    if hasher is None:
        hasher = new_hasher()
    f.seek(start)
    if st.st_size - start > WINDOW:  # read as it is stored, a window at a time
        read = FileRead([], rewrite, start, line_number, start, None, st.st_size - start)
        read.records = _stream_lines(f, read, hasher, st, has_json_lines(ref))
        return read
    data = f.read(max(0, st.st_size - start))

    def prefix() -> bytes:
        f.seek(0)
        return f.read(start)

    records, consumed, open_tail_offset, waiting = _split(data, start, line_number, ref, adapter, st, prefix)
    end = start + consumed
    hasher.update(memoryview(data)[:consumed])
    new_hash = _digest(hasher) if end > 0 else None
    return FileRead(records, rewrite, start, line_number, end, new_hash, len(data), open_tail_offset, waiting)


# A log larger than a window is read a window at a time, its records stored as they come (memory
# follows the window, not the file); a line longer than LONGEST_RECORD (a crash's preallocated NULs,
# a pasted dump) is stored in pieces of that size, the last one with its newline, so that a row
# stays well under SQLite's limit and the file is restored byte for byte.
WINDOW = 16 << 20


LONGEST_RECORD = 32 << 20


def _stream_lines(
    f: BinaryIO, read: FileRead, hasher: Hasher, st: os.stat_result, json_lines: bool
) -> Iterator[RawRecord]:
    """The records of a large log from `read.start` on; fills in `read` (end, hash, open tail,
    waiting, lines) once the last one is taken. A last line without a newline waits for its writer
    as in `_split`, unless it was long enough to be cut into pieces already."""
    base = read.start  # the file offset of buf[0]
    line_number = read.line_number
    left = st.st_size - read.start
    buf = b""
    skeleton: LineSkeleton | None = None  # the line at buf[0] was cut into pieces already
    while True:
        chunk = f.read(min(WINDOW, left)) if left > 0 else b""
        left -= len(chunk)
        buf = buf + chunk if buf else chunk
        at_end = left <= 0 or not chunk
        pos = 0
        while True:
            nl = buf.find(b"\n", pos)
            if nl < 0:
                break
            line_number += 1
            yield from _line_records(buf, pos, nl, base, line_number, True, skeleton)
            pos, skeleton = nl + 1, None
        if not at_end:
            while len(buf) - pos > LONGEST_RECORD:  # a line past the longest record: a piece now
                skeleton = skeleton or LineSkeleton()
                piece = buf[pos : pos + LONGEST_RECORD]
                skeleton.feed(piece)
                yield RawRecord(base + pos, line_number + 1, piece, False, b"")
                pos += LONGEST_RECORD
            hasher.update(memoryview(buf)[:pos])
            buf, base = buf[pos:], base + pos
            continue
        tail = buf[pos:]
        if tail and (
            skeleton is not None
            or _tail_is_final(tail, json_lines)
            or time.time() - st.st_mtime > STALE_TAIL_SECONDS
        ):
            line_number += 1
            last = base + pos + max(0, (len(tail) - 1) // LONGEST_RECORD * LONGEST_RECORD)
            yield from _line_records(buf, pos, len(buf), base, line_number, False, skeleton)
            read.open_tail_offset, pos = last, len(buf)
        elif tail:
            read.waiting = True
        hasher.update(memoryview(buf)[:pos])
        read.end = base + pos
        read.new_hash = _digest(hasher) if read.end > 0 else None
        read.lines_after = line_number
        return


def _line_records(
    buf: bytes,
    start: int,
    end: int,
    base: int,
    line_number: int,
    newline: bool,
    skeleton: LineSkeleton | None,
) -> Iterator[RawRecord]:
    """buf[start:end], the rest of a line, as one record, or as pieces of LONGEST_RECORD bytes (the
    newline on the last) that the last reads for all (`RawRecord.whole`, from `skeleton`: the line's
    pieces cut already)."""
    if skeleton is None and end - start <= LONGEST_RECORD:
        yield RawRecord(base + start, line_number, buf[start:end], newline)
        return
    skeleton = skeleton or LineSkeleton()
    while end - start > LONGEST_RECORD:
        piece = buf[start : start + LONGEST_RECORD]
        skeleton.feed(piece)
        yield RawRecord(base + start, line_number, piece, False, b"")
        start += LONGEST_RECORD
    piece = buf[start:end]
    skeleton.feed(piece)
    yield RawRecord(base + start, line_number, piece, newline, skeleton.result())


# A line cut into pieces is still read for its meaning (a pasted file, or a PDF's or an image's
# base64 past LONGEST_RECORD): its pieces are fed to a LineSkeleton as they are cut, which keeps the
# line with each string shortened to KEPT_STRING bytes and a note of what was left out, so that the
# line parses in bounded memory. A line whose skeleton passes SKELETON_LIMIT (mostly numbers and
# brackets) is given up on: its pieces stay records with no meaning.
KEPT_STRING = 256 << 10
SKELETON_LIMIT = 16 << 20


class LineSkeleton:
    """A JSON line fed in pieces, kept with its long strings shortened (see KEPT_STRING)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.in_string = False
        self.escaped = False  # a piece ended in a string's backslash: the next byte is escaped
        self.string = bytearray()  # the kept bytes of the string being read
        self.dropped = 0  # the bytes of that string left out
        self.given_up = False

    def feed(self, data: bytes) -> None:
        pos, n = 0, len(data)
        while pos < n and not self.given_up:
            if not self.in_string:
                quote = data.find(b'"', pos)
                end = n if quote < 0 else quote + 1
                if self.size + end - pos > SKELETON_LIMIT:
                    self.given_up, self.parts = True, []  # before slicing the piece's bytes
                    return
                self._keep(data[pos:end])
                self.in_string = quote >= 0
                pos = end
                continue
            start = pos
            if self.escaped:
                pos, self.escaped = pos + 1, False
            quote = data.find(
                b'"', pos
            )  # the closing quote: the first not escaped by an odd run of backslashes
            while quote >= 0 and _backslashes_before(data, quote, pos) % 2:
                quote = data.find(b'"', quote + 1)
            end = n if quote < 0 else quote
            if quote < 0:  # the string goes on in the next piece, perhaps from inside an escape
                self.escaped = _backslashes_before(data, n, pos) % 2 == 1
            self._string_bytes(data, start, end)
            pos = end
            if quote >= 0:
                self._close_string()
                pos += 1

    def result(self) -> bytes | None:
        """The line's skeleton, or None when it was given up on or does not end a JSON text."""
        if self.given_up or self.in_string:
            return None
        return b"".join(self.parts)

    def _keep(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > SKELETON_LIMIT:  # given up before the bytes are copied (a line of NULs)
            self.given_up, self.parts = True, []
            return
        self.parts.append(data)

    def _string_bytes(self, data: bytes, start: int, end: int) -> None:
        """data[start:end], more of the string being read: kept up to KEPT_STRING, the rest counted
        (not copied: a 200 MB string costs no copy of it)."""
        room = KEPT_STRING - len(self.string)
        if self.dropped or end - start > room:
            if not self.dropped:
                self.string += data[start : start + room]
                start += room
                cut = _whole_characters(self.string)
                self.dropped += len(self.string) - cut
                del self.string[cut:]
            self.dropped += end - start
        else:
            self.string += data[start:end]

    def _close_string(self) -> None:
        if self.dropped:
            self.string += f" [… {self.dropped:,} more bytes in the stored line]".encode()
        self._keep(bytes(self.string) + b'"')
        self.string, self.dropped, self.in_string = bytearray(), 0, False


def _backslashes_before(data: bytes, at: int, floor: int) -> int:
    """How many backslashes run up to data[at] (not before `floor`)."""
    k = at
    while k > floor and data[k - 1] == 0x5C:
        k -= 1
    return at - k


def _cut_escape(escape: bytes) -> bool:
    """Whether a string's bytes may not end in this escape: cut short, or a high surrogate
    (`\\uD800`-`\\uDBFF`) whose low half was cut away."""
    if len(escape) < 2 or (escape[1:2] == b"u" and len(escape) < 6):
        return True
    return len(escape) == 6 and escape[1:2] == b"u" and escape[2:4].upper() in (b"D8", b"D9", b"DA", b"DB")


def _whole_characters(data: bytearray) -> int:
    """Where a JSON string's bytes cut at their end may end: before an escape or a UTF-8 character
    cut in half, and before a high surrogate whose low half was cut away."""
    end = len(data)
    for _ in range(2):
        slash = data.rfind(b"\\", max(0, end - 12), end)
        if slash >= 0:
            run = slash - len(data[:slash].rstrip(b"\\")) + 1  # backslashes ending at `slash`
            if run % 2 and _cut_escape(bytes(data[slash:end])):  # an odd run: `slash` opens an escape
                end = slash
    start = end  # the last character's first byte: back over (at most 3) continuation bytes
    while start > 0 and 0x80 <= data[start - 1] < 0xC0 and end - start < 3:
        start -= 1
    if start > 0 and data[start - 1] >= 0xC0:
        lead = data[start - 1]
        if end - (start - 1) < (2 if lead < 0xE0 else 3 if lead < 0xF0 else 4):
            end = start - 1
    return end


def pieces(
    buf: bytes, start: int, end: int, base: int, line_number: int, *, newline: bool
) -> Iterator[RawRecord]:
    """buf[start:end] as one record, or as pieces of LONGEST_RECORD bytes (the newline on the last)."""
    while end - start > LONGEST_RECORD:
        yield RawRecord(base + start, line_number, buf[start : start + LONGEST_RECORD], False)
        start += LONGEST_RECORD
    yield RawRecord(base + start, line_number, buf[start:end], newline)


def _resume_point(plan: FilePlan, f: BinaryIO) -> tuple[int, int, Hasher | None]:
    """Where reading a grown log goes on: (byte offset, lines before it, the hash of the bytes
    before it, to go on hashing), or (0, 0, None) when it must be read again whole.

    Appended to means larger, the same inode, and every byte read last time unchanged (a file
    of the same size under a new mtime was edited in place). A last line stored without its
    newline is carried on from only when its newline has since been written after it."""
    row, st = plan.row, plan.stat
    if row is None:
        return 0, 0, None
    inode, done, lines_done, content_hash, open_tail = row[4:9]
    if not (st.st_size > done and (inode is None or inode == st.st_ino) and done > 0):
        return 0, 0, None
    hasher = prefix_hash(f, done, content_hash)
    if _digest(hasher) != content_hash:
        return 0, 0, None
    if not content_hash.startswith(FAST_HASH):  # an older threadloom's sha256, proven: hashed on in xxh3
        hasher = prefix_hash(f, done)
    start = done
    if open_tail is not None:
        f.seek(done)
        if f.read(1) != b"\n":
            return 0, 0, None
        start += 1  # the open last record was complete after all: carry on after it
        hasher.update(b"\n")
    return start, lines_done, hasher


CHUNK_BYTES = 32 << 20


def chunks_of(records: Iterable[RawRecord]) -> Iterator[list[RawRecord]]:
    """Records in chunks of at most ROWS_PER_CHUNK records and about CHUNK_BYTES bytes; a list is
    emptied as it goes, so that what is written is dropped."""
    if isinstance(records, list):
        while records:
            n, size = 0, 0
            while n < len(records) and n < ROWS_PER_CHUNK and size < CHUNK_BYTES:
                size += len(records[n].raw)
                n += 1
            chunk = records[:n]
            del records[:n]
            yield chunk
        return
    chunk, size = [], 0
    for raw in records:
        chunk.append(raw)
        size += len(raw.raw)
        if len(chunk) >= ROWS_PER_CHUNK or size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _split(
    data: bytes,
    start: int,
    line_number: int,
    ref: SourceRef,
    adapter: Adapter,
    st: os.stat_result,
    read_prefix: Callable[[], bytes] | None = None,
) -> tuple[list[RawRecord], int, int | None, bool]:
    """Cut `data` into records. Returns (records, bytes consumed, open tail offset, waiting).

    A last line without a newline is a record when it is final (`_tail_is_final`: complete JSON, a
    JSONL writer that has not written its newline yet, or bytes no writer could finish), or when it
    closes a JSON document written over many lines that now parses whole (Gemini CLI's chats end in
    `}` with no newline; `read_prefix` gives the bytes before `data`); else it waits for its writer."""
    if adapter.mode != "lines" or ref.kind == "document":
        if not data:
            return [], 0, None, False
        return [RawRecord(0, 1, data, newline=False)], len(data), None, False
    records: list[RawRecord] = []
    pos = 0
    find = data.find
    while True:
        nl = find(b"\n", pos)
        if nl < 0:
            break
        line_number += 1
        records.append(RawRecord(start + pos, line_number, data[pos:nl], True))
        pos = nl + 1
    tail = data[pos:]
    if not tail:
        return records, pos, None, False
    if (
        _tail_is_final(tail, has_json_lines(ref))
        or (read_prefix is not None and _closes_document(tail, data, start, read_prefix))
        or time.time() - st.st_mtime > STALE_TAIL_SECONDS
    ):
        line_number += 1
        records.append(RawRecord(start + pos, line_number, tail, False))
        return records, len(data), start + pos, False
    return records, pos, None, True


def has_json_lines(ref: SourceRef) -> bool:
    """Whether each of a log's lines is JSON on its own (a `.jsonl`), not a document printed over
    many lines (Gemini CLI's and old Codex's `.json`) or markdown (Aider's history)."""
    return ref.path.name.lower().endswith(".jsonl")


def _tail_is_final(tail: bytes, json_lines: bool) -> bool:
    """Whether a last line without its newline is kept as a record now rather than left for its
    writer: complete JSON, or (in a log of JSON lines) bytes that no bytes appended could make JSON
    (text that is not JSON, a record followed by more on the same line as in a file whose lines end
    in a bare CR), which no writer is still writing. JSON cut short (at its end, or in the middle of
    a character's UTF-8 bytes) may be a writer's line half written: it waits."""
    data = tail.lstrip(b"\x00")  # a crash's preallocated NULs before the record
    try:
        orjson.loads(data)
        return True
    except orjson.JSONDecodeError as exc:
        if not json_lines:
            return False
        if exc.msg.startswith("unexpected end of data") or not data.strip():
            return False  # cut short at its end (or nothing yet but blanks); exc.pos counts characters
    try:
        data.decode()
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data":  # a character cut in half: the JSON before it decides
            return _tail_is_final(data[: exc.start], json_lines) if exc.start else False
    return True


def _closes_document(tail: bytes, data: bytes, start: int, read_prefix: Callable[[], bytes]) -> bool:
    """Whether `tail` is the closing line of a JSON document and the file now parses whole."""
    if not tail.strip().startswith((b"}", b"]")):
        return False
    whole = read_prefix() + data if start else data
    if whole[:256].lstrip()[:1] not in (b"{", b"["):
        return False
    try:
        orjson.loads(whole)
        return True
    except orjson.JSONDecodeError:
        return False
