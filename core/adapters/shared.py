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
from threadloom.core.adapters.base import BOM, RawRecord, SourceIncomplete, SourceRef, read_regular

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
    try:
        return orjson.loads(data.removeprefix(BOM))  # the mark stays in the stored bytes (a gap record)
    except orjson.JSONDecodeError as exc:
        raise SourceIncomplete(str(exc)) from None


def element_spans(data: bytes, specs: frozenset[Spec]) -> list[tuple[int, int]]:
    """(start, end) of every object, array or string value found at one of `specs`.

    The data must be valid JSON (check with `parse_document` first). Strings are matched whole by
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


def loads(raw: bytes) -> tuple[Any, str | None]:
    """A record's JSON value, or (None, error)."""
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError as exc:
        return None, str(exc)


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
        return as_bytes(value).decode("utf-8", "replace")
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
        try:
            return value.encode("utf-8", "surrogateescape")  # the bytes of a TEXT that was not UTF-8
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass")
    return orjson.dumps(value)


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
        self._pos += len(raw)


class SqliteSource:
    """Discovery and change detection shared by adapters whose source is one SQLite file.

    Subclasses set `db_name` (the file name looked for in a folder) and implement `claims(path,
    explicit)` and `read_rows`.
    """

    name: str
    db_name: str

    def claims(self, path: Path, explicit: bool = False) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def discover(self, root: Path) -> Iterator[SourceRef]:
        path = root if root.is_file() else root / self.db_name
        if path.is_file() and self.claims(path, explicit=root.is_file()):
            yield SourceRef(path, self.name, "database", path.parent.name)

    def stat_paths(self, path: Path) -> list[Path]:
        """A change that is still in the write-ahead log counts as a change too."""
        return [Path(str(path) + "-wal")]
