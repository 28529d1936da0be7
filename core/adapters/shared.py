"""Helpers the document and database adapters share (Cline, Cursor, OpenCode, Amazon Q, …).

* `tile`: cuts a whole JSON document into records that concatenate back to it byte for byte —
  each element at the named places is one record with its exact bytes, and the bytes between
  elements are records too — so a rewritten document stays restorable and every message keeps its
  own exact JSON.
* `open_sqlite`: opens another program's SQLite database without ever writing to it.
* `editor_user_dirs`: the VS Code-family `User` folders on Linux, macOS and Windows.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from .base import (
    BOM,
    SNIFF_BYTES,
    Adapter,
    RawRecord,
    Record,
    SourceIncomplete,
    SourceRef,
    read_regular,
    sniff,
)

_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:,]')  # strings unrolled: 5x faster
_OPEN = frozenset(b"{[")
_CLOSE = frozenset(b"}]")
_SCALAR_MEMBER = re.compile(
    rb'"([^"\\]*(?:\\.[^"\\]*)*)"\s*:\s*("[^"\\]*(?:\\.[^"\\]*)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)'
)

Spec = tuple[str, ...]  # a place in a document: object keys and "[]" for "each element of this array"


def parse_document(data: bytes) -> Any:
    """The whole document parsed; a document that does not parse is one caught mid-write."""
    if not data.strip():
        raise SourceIncomplete("empty document")
    doc, error = loads(data.removeprefix(BOM))  # the mark stays in the stored bytes (a gap record)
    if doc is None and error is not None:
        raise SourceIncomplete(error)
    return doc


def element_spans(data: bytes, specs: frozenset[Spec]) -> list[tuple[int, int]]:
    """(start, end) of every object, array or string value found at one of `specs`.

    The data should be valid JSON (check with `parse_document` first); a document its writer never
    finished is read as far as it goes (`split_unfinished`), whatever brackets it holds. Strings are matched whole by
    the token pattern, so braces inside them never count; values outside the wanted places are
    skipped without descending into them.
    """
    prefixes = {spec[:i] for spec in specs for i in range(len(spec) + 1)}
    spans: list[tuple[int, int]] = []
    # a frame per open container on the way to a wanted place: [path, is_object, key, after_colon]
    stack: list[list[Any]] = []
    skip_depth = 0  # > 0 while inside a value that is captured or skipped whole
    capture_start = -1
    for m in _TOKEN.finditer(data):
        c = data[m.start()]
        if skip_depth:
            if c in _OPEN:
                skip_depth += 1
            elif c in _CLOSE:
                skip_depth -= 1
                if skip_depth == 0 and capture_start >= 0:
                    spans.append((capture_start, m.end()))
                    capture_start = -1
            continue
        top = stack[-1] if stack else None
        if c == 0x3A:  # ':'
            if top is not None:
                top[3] = True
            continue
        if c == 0x2C:  # ','
            if top is not None and top[1]:
                top[2], top[3] = None, False
            continue
        if c in _CLOSE:
            if stack:  # a close with nothing open: the bytes of a document never finished, or cut
                stack.pop()
            continue
        if c == 0x22 and top is not None and top[1] and not top[3]:  # an object's key
            try:
                top[2] = orjson.loads(m.group())
            except orjson.JSONDecodeError:
                top[2] = None
            continue
        # a value starts here
        if top is None:
            path: Spec = ()
        elif top[1]:
            path = (*top[0], top[2] if isinstance(top[2], str) else "")
        else:
            path = (*top[0], "[]")
        if c == 0x22:
            if path in specs:
                spans.append((m.start(), m.end()))
            continue
        if path in specs:
            skip_depth, capture_start = 1, m.start()
        elif path in prefixes:
            stack.append([path, c == 0x7B, None, False])
        else:
            skip_depth, capture_start = 1, -1
    return spans


def tile(data: bytes, specs: frozenset[Spec], base: int = 0, first_line: int = 1) -> list[RawRecord]:
    """Records that tile `data` exactly: the elements at `specs` and the bytes between them."""
    records: list[RawRecord] = []
    pos = 0
    for start, end in element_spans(data, specs):
        if start > pos:
            records.append(RawRecord(base + pos, first_line + len(records), data[pos:start], newline=False))
        records.append(RawRecord(base + start, first_line + len(records), data[start:end], newline=False))
        pos = end
    if pos < len(data):
        records.append(RawRecord(base + pos, first_line + len(records), data[pos:], newline=False))
    return records


def scalar_members(raw: bytes) -> dict[str, Any]:
    """`"key": scalar` pairs found in the bytes between elements (a document's header fields)."""
    out: dict[str, Any] = {}
    for m in _SCALAR_MEMBER.finditer(raw):
        try:
            key = orjson.loads(b'"' + m.group(1) + b'"')
            out.setdefault(key, orjson.loads(m.group(2)))
        except orjson.JSONDecodeError:
            continue
    return out


def lines_of(data: bytes) -> Iterator[RawRecord]:
    """`data`'s lines as records (offset, line number, bytes): what an append read replays of the
    lines before it, to rebuild the state a read of the whole file would have reached there."""
    pos, line_number = 0, 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        line_number += 1
        yield RawRecord(pos, line_number, data[pos:end])
        pos = end + 1


def head_lines(head: bytes, count: int = 5) -> list[Any]:
    """The first `count` lines of a file's head read leniently (`loads`; None for a line that is
    no JSON, one the head cut included): what a reader that knows its files by their first record
    looks at beyond it when that one is damaged (cut short by a crash, a byte no UTF-8 has)."""
    lines = head.lstrip(b"\x00").removeprefix(BOM).split(b"\n", count)[:count]
    return [loads(line)[0] if line.strip() else None for line in lines]


def call_params(value: Any, key: str = "arguments") -> dict[str, Any]:
    """A tool call's arguments as an object: an object as it is, a JSON text read (Codex, Kimi and
    the OpenAI-style logs keep them as one), anything else (raw text, a list) under `key`."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {key: value}
    return value if isinstance(value, dict) else {key: value}


def loads(raw: bytes) -> tuple[Any, str | None]:
    """A record's JSON value, or (None, error). JSON that orjson refuses and the standard library
    reads (a lone surrogate escape as Node writes a string cut through an emoji, invalid UTF-8, a
    number past a double's range) is read leniently, said in the error (`_lenient`)."""
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError as exc:
        return _lenient(raw, str(exc))


def _lenient(data: bytes, first_error: str) -> tuple[Any, str | None]:
    """`data` read by the standard library, invalid UTF-8 replaced and lone surrogates scrubbed,
    with orjson's refusal noted; (None, that refusal) when it is no JSON either. A value nested past
    what either parser takes (a tool input 10,000 deep) is read with what lies past NESTED_KEPT
    levels replaced by a note: the record's other fields, its message among them, are still read."""
    try:
        return _scrub(json.loads(data.decode("utf-8", "replace"))), f"decoded leniently: {first_error}"
    except ValueError:
        return None, first_error
    except RecursionError:
        shallow = _cut_deep(data)
        if shallow is None:
            return None, first_error
        value, error = loads(shallow)
        return value, f"nested past {NESTED_KEPT} levels: what lies deeper is kept in the raw record only" + (
            f"; {error}" if error else ""
        )


NESTED_KEPT = 200  # levels of nesting read of a value too deep for the parsers (see `_lenient`)


def _cut_deep(data: bytes) -> bytes | None:
    """`data` with every array or object that opens past NESTED_KEPT levels replaced by a string
    saying so (None when nothing is that deep)."""
    note = b'"[nested past %d levels]"' % NESTED_KEPT
    out: list[bytes] = []
    last = depth = 0
    cut_from = -1
    for m in _TOKEN.finditer(data):
        c = data[m.start()]
        if c in _OPEN:
            depth += 1
            if depth == NESTED_KEPT + 1:
                cut_from = m.start()
        elif c in _CLOSE:
            if depth == NESTED_KEPT + 1 and cut_from >= 0:
                out += (data[last:cut_from], note)
                last, cut_from = m.end(), -1
            depth -= 1
    if not out:
        return None
    out.append(data[last:])
    return b"".join(out)


# ---------------------------------------------------------------------- SQLite sources


@contextlib.contextmanager
def open_sqlite(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to another program's database, which is never written to.

    Without a `-wal` file (or with an empty one) the database is opened in place with
    `mode=ro&immutable=1`. With a WAL — the program may be running — the database and its WAL are
    copied to a private temporary folder and the copy is opened, so the newest committed rows are
    seen and no `-shm` or lock file is ever created beside the original.
    """
    wal = Path(str(path) + "-wal")
    try:
        wal_size = wal.stat().st_size
    except OSError:
        wal_size = 0
    if wal_size == 0:
        uri = "file:" + _uri_path(path) + "?mode=ro&immutable=1"
        conn = sqlite3.connect(uri, uri=True)
        conn.text_factory = _text
        try:
            yield conn
        finally:
            conn.close()
        return
    with tempfile.TemporaryDirectory(prefix="threadloom-") as tmp:
        copy = Path(tmp) / "copy.db"
        for _ in range(3):  # a writer may commit while we copy: copy again until both are stable
            before = (path.stat().st_mtime_ns, wal.stat().st_mtime_ns, wal.stat().st_size)
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, Path(str(copy) + "-wal"))
            after = (path.stat().st_mtime_ns, wal.stat().st_mtime_ns, wal.stat().st_size)
            if before == after:
                break
        conn = sqlite3.connect(copy)
        conn.text_factory = _text
        try:
            yield conn
        finally:
            conn.close()


def _text(data: bytes) -> str:
    """A TEXT value as str. SQLite never checks that TEXT is UTF-8, and the default decoding
    raised on the first row that is not, which stopped the whole ingest: bytes that do not decode
    are kept as surrogate escapes, which `as_bytes` turns back into the very same bytes."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        return data.decode("utf-8", "surrogateescape")


def plain_json(values: dict[str, Any]) -> bytes:
    """A row's columns as JSON (a key record: the columns that are not stored byte for byte). A BLOB
    or a TEXT that is not UTF-8 (see `_text`) cannot be JSON: those are written with U+FFFD."""
    try:
        return orjson.dumps(values)
    except TypeError:  # orjson.JSONEncodeError is one
        return orjson.dumps({k: _plain_value(v) for k, v in values.items()})


def _plain_value(value: Any) -> Any:
    if isinstance(value, str):
        return text_bytes(value).decode("utf-8", "replace")
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, dict):
        return {str(_plain_value(k)): _plain_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_value(v) for v in value]
    return value


def _uri_path(path: Path) -> str:
    from urllib.parse import quote

    text = str(path.absolute())
    if os.name == "nt":
        text = "/" + text.replace("\\", "/")
    return quote(text)


def sqlite_header(path: Path) -> bool:
    try:
        return read_regular(path, 16) == b"SQLite format 3\x00"
    except OSError:
        return False


def sqlite_tables(path: Path) -> set[str]:
    """The table names of a SQLite file (empty when it is not one, or cannot be read)."""
    if not sqlite_header(path):
        return set()
    try:
        with open_sqlite(path) as conn:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return set()


def table_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]


def as_bytes(value: Any) -> bytes | None:
    """A column's value as bytes: TEXT as UTF-8, BLOB as is, numbers as JSON, NULL as None."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return text_bytes(value)
    return orjson.dumps(value)


def text_bytes(value: str) -> bytes:
    """A TEXT column's bytes: UTF-8, with what `_text` kept as surrogate escapes turned back."""
    try:
        return value.encode("utf-8", "surrogateescape")  # the bytes of a TEXT that was not UTF-8
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")


# ---------------------------------------------------------------------- editor folders

EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf", "Trae", "Kiro")


def app_config_dirs() -> list[Path]:
    """Where this platform keeps applications' settings (`~/.config`, Application Support, APPDATA)."""
    home = Path.home()
    if sys.platform == "darwin":
        return [home / "Library" / "Application Support"]
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        return [Path(appdata)] if appdata else [home / "AppData" / "Roaming"]
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return [Path(xdg).expanduser() if xdg else home / ".config"]


def editor_user_dirs(editors: tuple[str, ...] = EDITORS) -> list[Path]:
    """`<config>/<Editor>/User` for every VS Code-family editor, present or not."""
    return [base / editor / "User" for base in app_config_dirs() for editor in editors]


def text_of_blocks(content: Any) -> str | None:
    """Plain text of a string or a list of `{type: text, text}` blocks (Anthropic-style content)."""
    if isinstance(content, str):
        return content or None
    if isinstance(content, list):
        parts = [
            b["text"]
            for b in content
            if isinstance(b, dict) and isinstance(b.get("text"), str) and b.get("type", "text") == "text"
        ]
        return "\n".join(p for p in parts if p) or None
    return None


class RowSink:
    """Collects a database source's rows as records at consecutive offsets (see Adapter.read_rows)."""

    def __init__(self) -> None:
        self.records: list[RawRecord] = []
        self._pos = 0

    def add(self, raw: bytes) -> None:
        self.records.append(RawRecord(self._pos, len(self.records) + 1, raw, newline=False))
        # an empty value (Crush keeps a new file's first version empty) still takes a place of its
        # own: the next record at the same offset was refused, and the whole database with it
        self._pos += len(raw) or 1


class SqliteSource(Adapter):
    """Discovery and change detection shared by adapters whose source is one SQLite file.

    Subclasses set `db_name` (the file name looked for in a folder) and implement `claims(path,
    explicit)` and `read_rows`.
    """

    name: str
    db_name: str

    def claims(self, path: Path, explicit: bool = False) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    # `db_name` anywhere under a folder given (Goose's, Zed's, Crush's project databases), not only
    # in the folder itself
    finds_at_any_depth: bool = False

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if self.finds_at_any_depth and not root.is_file():
            from .walk import walk

            for dirpath, dirnames, filenames in walk(root):
                dirnames.sort()
                if self.db_name in filenames:
                    path = Path(dirpath) / self.db_name
                    if self.claims(path):
                        yield SourceRef(path, self.name, "database", self.project_key_of(path))
            return
        path = root if root.is_file() else root / self.db_name
        if path.is_file() and self.claims(path, explicit=root.is_file()):
            yield SourceRef(path, self.name, "database", self.project_key_of(path))

    def project_key_of(self, path: Path) -> str:
        """The project a database found at `path` is filed under: its folder's name."""
        return path.parent.name

    side_files = True

    def stat_paths(self, path: Path) -> list[Path]:
        """A change that is still in the write-ahead log counts as a change too."""
        return [Path(str(path) + "-wal")]


# ---------------------------------------------------------------------- values of records (every adapter)

# how deep a value is written out when it is too deep for the JSON writers (its record keeps it whole)
DUMP_DEPTH = 100


def as_str(value: Any) -> str | None:
    """`value` when it is a string: logs put anything anywhere."""
    return value if isinstance(value, str) else None


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """`value` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def wrapped_params(value: Any, key: str) -> dict[str, Any]:
    """A tool's input as an object: `value` when it is one, else `{key: value}`."""
    return value if isinstance(value, dict) else {key: value}


def parse_record(raw: bytes) -> tuple[Any, str | None]:
    """Parse one JSON record; invalid UTF-8 still parses (replaced) with the problem noted."""
    data = raw.lstrip(b"\x00")
    if data.startswith(BOM):  # a file's first line, written by a tool that marks UTF-8
        data = data[len(BOM) :]
    if not data.strip():
        return None, None
    return loads(data)


def _scrub(value: Any) -> Any:
    """Replace lone surrogates (valid JSON escapes, invalid UTF-8) so text can be stored."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    return value


def json_text(value: Any) -> str:
    """`value` as JSON text that orjson reads and writes back (the viewer pretty-prints it)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # nested deeper than orjson writes (254), an integer beyond 64 bits, another type
        return json.dumps(_clipped(value, DUMP_DEPTH), default=str)


def _clipped(value: Any, depth: int) -> Any:
    """`value` with what is nested deeper than `depth` levels replaced by a note."""
    if isinstance(value, (dict, list)) and depth <= 0:
        return f"[nested deeper than {DUMP_DEPTH} levels: see the raw record]"
    if isinstance(value, dict):
        return {k: _clipped(v, depth - 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_clipped(v, depth - 1) for v in value]
    return value


def input_text(input_json: str) -> str:
    """`strings_of` a tool input given as JSON text."""
    try:
        return strings_of(orjson.loads(input_json))
    except orjson.JSONDecodeError:
        return input_json


def strings_of(params: Any) -> str:
    """The string values of a tool's input, for search (`npm test`, a path, an edit's new text)."""
    # depth first with a stack rather than a recursive inner function: that function referred to
    # itself, a cycle per call that ingest (which runs with the cyclic GC off) never freed
    parts: list[str] = []
    stack = [params]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, dict):
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return " ".join(parts)


def head_of(path: Path, limit: int = SNIFF_BYTES) -> bytes:
    """The first `limit` bytes of a file, to tell its format by; nothing when it cannot be read."""
    try:
        return sniff(path, limit)
    except OSError:
        return b""


def merge_records(into: Record, other: Record) -> Record:
    """Items that close on one line (a minified snapshot) share that line's record."""
    into.content = "\n".join(t for t in (into.content, other.content) if t) or None
    into.thinking = "\n".join(t for t in (into.thinking, other.thinking) if t) or None
    into.tool_text = "\n".join(t for t in (into.tool_text, other.tool_text) if t) or None
    into.tool_uses += other.tool_uses
    into.tool_results += other.tool_results
    into.is_message = into.is_message or other.is_message
    return into


# ---------------------------------------------------------------------- pretty-printed JSON documents

_LINE_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')


class JsonDocumentLines:
    """Follows a pretty-printed JSON document fed one line at a time.

    Writers of "one JSON document" session files (Codex's TypeScript CLI, Gemini CLI ≤ v0.38) indent
    with JSON.stringify(…, null, 2); the ingest stores such a file line by line, and this puts the
    document's parts back together: each element of the named top-level arrays, and every other
    top-level member, is returned as soon as the line that closes it is fed. JSON strings cannot hold
    a raw newline, so a line never ends inside a string.
    """

    def __init__(self, array_keys: frozenset[str]) -> None:
        self.array_keys = array_keys
        self.depth = 0
        self.key: str | None = None  # the top-level member being read
        self.after_colon = False
        self.in_array: str | None = None
        self.capture: str | None = None  # "item" | "member"
        self.buf: list[bytes] = []

    def feed(self, line: bytes) -> list[tuple[str, str | None, Any, str | None]]:
        """(kind, key, value, parse error) for each element or member that ends on this line."""
        done: list[tuple[str, str | None, Any, str | None]] = []
        start: int | None = None  # where a capture began on this line
        for m in _LINE_TOKEN.finditer(line):
            tok = m.group()
            if tok[:1] == b'"':
                if self.depth == 1 and not self.after_colon:
                    self.key = _decode_key(tok)
                continue
            if tok == b":":
                if self.depth == 1 and not self.after_colon:
                    self.after_colon = True
                    if self.key not in self.array_keys:
                        self.capture, start = "member", m.end()
                continue
            if tok in (b"{", b"["):
                if self.depth == 1 and self.capture is None and tok == b"[" and self.key in self.array_keys:
                    self.in_array = self.key
                elif self.depth == 2 and self.in_array and self.capture is None:
                    self.capture, start = "item", m.start()
                self.depth += 1
                continue
            if tok in (b"}", b"]"):
                self.depth -= 1
                if self.capture == "item" and self.depth == 2:
                    done.append(self._finish(line[start or 0 : m.end()]))
                    start = None
                elif self.in_array and self.depth == 1:
                    self.in_array = None
                elif self.capture == "member" and self.depth == 0:
                    done.append(self._finish(line[start or 0 : m.start()]))
                    start = None
                continue
            if tok == b"," and self.depth == 1:
                if self.capture == "member":
                    done.append(self._finish(line[start or 0 : m.start()]))
                    start = None
                self.after_colon = False
        if self.capture is not None:
            self.buf.append(line[start:] if start is not None else line)
        return done

    def _finish(self, piece: bytes) -> tuple[str, str | None, Any, str | None]:
        text = b"\n".join([*self.buf, piece]) if self.buf else piece
        kind, self.capture, self.buf = self.capture or "member", None, []
        key = self.in_array if kind == "item" else self.key
        value, error = loads(text)
        return kind, key, value, None if value is not None else error


def _decode_key(tok: bytes) -> str | None:
    try:
        value = orjson.loads(tok)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None
