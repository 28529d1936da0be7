"""The archive side of zero loss: write sources back from `entries.raw`, and check them."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from core.adapters.base import read_regular


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


def file_bytes(conn: sqlite3.Connection, file_id: int) -> tuple[bytes, bool]:
    """The source file rebuilt from its records, and whether it is contiguous from byte 0."""
    parts: list[bytes] = []
    expected = 0
    contiguous = True
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


def restore_session(conn: sqlite3.Connection, session_id: str, dest: Path, *,
                    only: dict[str, Path] | None = None) -> list[RestoredFile]:
    """Write the session's source files under `dest`, byte for byte; never overwrite.

    `only` (source path -> target): write just these files, each to its own target (a resume puts
    a transcript back where its agent looks, whatever folder it was read from).
    A SQLite source (Cursor, OpenCode's db, …) cannot be rebuilt as a database file: its rows are
    written instead, one exact record per line, to `<name>.rows.jsonl`.
    """
    restored = []
    for file_id, path, project_key in session_files(conn, session_id):
        if only is not None and path not in only:
            continue
        size = conn.execute("SELECT size FROM source_files WHERE id = ?", (file_id,)).fetchone()[0]
        target = only[path] if only is not None else dest / _relative(path, project_key)
        if _is_database(conn, file_id):
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
    # (path, error) of the files that failed to be read in: their bytes are not (all) stored
    not_stored: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.not_stored


def verify(conn: sqlite3.Connection) -> VerifyReport:
    """Re-read every source still present; report stored byte ranges that no longer match, and
    the files whose reading failed (nothing of them can be checked: their bytes were never stored)."""
    report = VerifyReport()
    report.not_stored = [
        (path, error or "unknown error")
        for path, error in conn.execute("SELECT path, error FROM source_files WHERE status = 'error' ORDER BY path")
    ]
    for file_id, path, kind in conn.execute(
        "SELECT id, path, kind FROM source_files WHERE status != 'error' ORDER BY path"
    ).fetchall():
        if _is_database(conn, file_id):
            _verify_rows(conn, report, file_id, path)
            continue
        try:
            data = _decoded(conn, file_id, path) if kind == "decoded" else read_regular(path)
        except FileNotFoundError:
            report.files_missing += 1
            continue
        except OSError as exc:
            report.mismatches.append(f"{path}: cannot read ({exc.strerror or exc})")
            continue
        report.files_checked += 1
        bad = 0
        first_bad = None
        for offset, line_number, raw, newline in conn.execute(
            "SELECT byte_offset, line_number, raw, newline FROM entries WHERE source_file_id = ? ORDER BY byte_offset",
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
        data = ADAPTERS[agent].decode(container, read_regular(container))
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
    for offset, raw in conn.execute("SELECT byte_offset, raw FROM entries WHERE source_file_id = ?", (file_id,)):
        report.records_checked += 1
        if current.get(offset) != bytes(raw):
            bad += 1
    if bad:
        report.mismatches.append(f"{path}: {bad} stored row(s) differ from the database now")
