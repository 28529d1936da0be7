"""The archive side of zero loss: write sources back from `entries.raw`, and check them."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class RestoredFile:
    source_path: str
    written_to: str
    bytes: int
    complete: bool  # False when some bytes of the source were never ingested (a waiting last line)


def session_files(conn: sqlite3.Connection, session_id: str) -> list[tuple[int, str, str | None]]:
    """(file id, path, project key) of every file holding records of the session or its subagents."""
    like = session_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + ":%"
    return conn.execute(
        "SELECT id, path, project_key FROM source_files WHERE id IN ("
        "SELECT DISTINCT source_file_id FROM entries WHERE session_id = ? OR session_id LIKE ? ESCAPE '\\') "
        "AND kind != 'decoded' "  # a decoded log is restored as the file it was decoded from
        "ORDER BY path",
        (session_id, like),
    ).fetchall()


@contextmanager
def _stored_records() -> Iterator[None]:
    """Around code that reads records back: a NULL or a text where the schema keeps bytes and
    offsets (NOT NULL) comes only from a damaged page, and is said as such, not as a TypeError."""
    try:
        yield
    except TypeError as exc:
        raise sqlite3.DatabaseError(
            "database disk image is malformed: a stored record reads back with a field missing or of another type"
        ) from exc


def file_bytes(conn: sqlite3.Connection, file_id: int) -> tuple[bytes, bool]:
    """The source file rebuilt from its records, and whether it is contiguous from byte 0."""
    parts: list[bytes] = []
    expected = 0
    contiguous = True
    with _stored_records():
        for offset, raw, newline in conn.execute(
            "SELECT byte_offset, raw, newline FROM entries WHERE source_file_id = ? ORDER BY byte_offset", (file_id,)
        ):
            if offset != expected:
                contiguous = False
            raw = bytes(raw)
            parts.append(raw)
            expected = offset + len(raw)
            if newline:
                parts.append(b"\n")
                expected += 1
    return b"".join(parts), contiguous


def _relative(path: str, project_key: str | None) -> Path:
    parts = Path(path).parts
    if project_key and project_key in parts:
        i = len(parts) - 1 - parts[::-1].index(project_key)
        return Path(*parts[i:])
    return Path(Path(path).name)


def _is_database(conn: sqlite3.Connection, file_id: int) -> bool:
    from core.adapters import ADAPTERS

    agent = conn.execute("SELECT agent FROM source_files WHERE id = ?", (file_id,)).fetchone()[0]
    adapter = ADAPTERS.get(agent)
    return adapter is not None and adapter.mode == "database"


def restore_session(conn: sqlite3.Connection, session_id: str, dest: Path) -> list[RestoredFile]:
    """Write the session's source files under `dest`, byte for byte; never overwrite.

    A SQLite source (Cursor, OpenCode's db, …) cannot be rebuilt as a database file: its rows are
    written instead, one exact record per line, to `<name>.rows.jsonl`.
    """
    restored = []
    for file_id, path, project_key in session_files(conn, session_id):
        size = conn.execute("SELECT size FROM source_files WHERE id = ?", (file_id,)).fetchone()[0]
        target = dest / _relative(path, project_key)
        if _is_database(conn, file_id):
            with _stored_records():
                rows = [bytes(r[0]) for r in conn.execute(
                    "SELECT raw FROM entries WHERE source_file_id = ? ORDER BY byte_offset", (file_id,))]
            target = target.with_name(target.name + ".rows.jsonl")
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(b"\n".join(rows) + b"\n")
            restored.append(RestoredFile(path, str(target), sum(map(len, rows)), False))
            continue
        data, contiguous = file_bytes(conn, file_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        restored.append(RestoredFile(path, str(target), len(data), contiguous and len(data) == size))
    return restored


@dataclass
class VerifyReport:
    files_checked: int = 0
    files_missing: int = 0
    records_checked: int = 0
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches


def verify(conn: sqlite3.Connection) -> VerifyReport:
    """Re-read every source still present; report stored byte ranges that no longer match."""
    report = VerifyReport()
    for file_id, path, kind in conn.execute(
        "SELECT id, path, kind FROM source_files WHERE status != 'error' ORDER BY path"
    ).fetchall():
        if _is_database(conn, file_id):
            _verify_rows(conn, report, file_id, path)
            continue
        try:
            data = _decoded(conn, file_id, path) if kind == "decoded" else Path(path).read_bytes()
        except FileNotFoundError:
            report.files_missing += 1
            continue
        except (OSError, ValueError) as exc:  # ValueError: a stored path no file system has (a NUL in it)
            report.mismatches.append(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})")
            continue
        report.files_checked += 1
        bad = 0
        first_bad = None
        with _stored_records():
            for offset, line_number, raw, newline in conn.execute(
                "SELECT byte_offset, line_number, raw, newline FROM entries WHERE source_file_id = ? "
                "ORDER BY byte_offset",
                (file_id,),
            ):
                report.records_checked += 1
                raw = bytes(raw)
                end = offset + len(raw)
                if data[offset:end] != raw or (newline and data[end : end + 1] != b"\n"):
                    bad += 1
                    if first_bad is None:
                        first_bad = (line_number, offset, len(raw))
        if bad:
            line, offset, length = first_bad
            report.mismatches.append(
                f"{path}: {bad} record(s) differ from the stored bytes; first at line {line} "
                f"(bytes {offset}-{offset + length})"
            )
    return report


def _decoded(conn: sqlite3.Connection, file_id: int, path: str) -> bytes:
    """A decoded log as its container decodes now (a `.jsonl.zst` decompressed)."""
    from core.adapters import ADAPTERS
    from core.adapters.base import container_of

    agent = conn.execute("SELECT agent FROM source_files WHERE id = ?", (file_id,)).fetchone()[0]
    container = Path(container_of(path) or path)
    try:
        data = ADAPTERS[agent].decode(container, container.read_bytes())
    except ValueError as exc:
        raise OSError(f"cannot decode: {exc}") from exc
    if data is None:
        raise OSError("no longer decodes to a log")
    return data


def _verify_rows(conn: sqlite3.Connection, report: VerifyReport, file_id: int, path: str) -> None:
    """A database source is checked row by row against what its adapter reads now."""
    from core.adapters import ADAPTERS

    agent = conn.execute("SELECT agent FROM source_files WHERE id = ?", (file_id,)).fetchone()[0]
    if not os.path.exists(path):
        report.files_missing += 1
        return
    try:
        current = {r.offset: r.raw for r in ADAPTERS[agent].read_rows(Path(path))}
    except Exception as exc:  # the adapter's own error says what is wrong with the database
        report.mismatches.append(f"{path}: cannot read ({exc})")
        return
    report.files_checked += 1
    bad = 0
    with _stored_records():
        for offset, raw in conn.execute("SELECT byte_offset, raw FROM entries WHERE source_file_id = ?", (file_id,)):
            report.records_checked += 1
            if current.get(offset) != bytes(raw):
                bad += 1
    if bad:
        report.mismatches.append(f"{path}: {bad} stored row(s) differ from the database now")
