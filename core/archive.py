"""The archive side of zero loss: write sources back from `entries.raw`, and check them."""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from threadloom.core.adapters.base import disk_name, read_regular, shown_name, stored_name
from threadloom.core.db import MIRROR_LIKE
from threadloom.core.side_files import plan_files


@dataclass
class RestoredFile:
    source_path: str
    written_to: str
    bytes: int
    complete: bool  # False when some bytes of the source were never ingested (a waiting last line)
    already_there: bool = False  # the same bytes were in the folder already: left as they were


def session_files(conn: sqlite3.Connection, session_id: str) -> list[tuple[int, str, str | None]]:
    """(file id, path, project key) of every file holding records of the session or its subagents;
    the path as the file system names it (a name that is not UTF-8 in its own bytes)."""
    # its subagents' ids are "<id>:<their own>": between "<id>:" and "<id>;" (a range, not LIKE, whose
    # pattern SQLite refuses past 50,000 bytes, and an id from a log can be longer)
    # and the files a rewrite took the session's records out of (their versions say so)
    rewritten = (
        "OR id IN (SELECT v.source_file_id FROM source_versions v, json_each(v.sessions) j WHERE j.value = ?4)"
        if has_versions(conn)
        else ""
    )
    rows = conn.execute(
        "SELECT id, path, project_key FROM source_files WHERE (id IN ("
        "SELECT DISTINCT source_file_id FROM entries WHERE session_id = ?1 OR (session_id > ?2 AND session_id < ?3)) "
        f"{rewritten}) AND kind NOT IN ('decoded', 'version') "  # a decoded log is restored as its container
        "ORDER BY path",
        (session_id, session_id + ":", session_id + ";", *([session_id] if rewritten else [])),
    ).fetchall()
    # and its plans that are named by its slug rather than kept with it (Claude Code's)
    known = {file_id for file_id, _, _ in rows}
    plans = [(file_id, path) for file_id, path, _ in plan_files(conn, session_id) if file_id not in known]
    if plans:
        keys = dict(
            conn.execute(
                "SELECT id, project_key FROM source_files WHERE id IN (SELECT value FROM json_each(?))",
                (orjson.dumps([file_id for file_id, _ in plans]).decode(),),
            )
        )
        rows = sorted(
            [*rows, *((file_id, path, keys.get(file_id)) for file_id, path in plans)], key=lambda r: r[1]
        )
    return [(file_id, disk_name(path), key) for file_id, path, key in rows]  # as the file system names it


def has_versions(conn: sqlite3.Connection) -> bool:
    """Whether the database keeps rewritten files' versions (a read-only one from before may not)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'source_versions'").fetchone() is not None


@dataclass
class Version:
    """A file as it was before a rewrite (see core.ingest's _Rewrite)."""

    version_file_id: int
    superseded_at: int  # unix ms: when an ingest found the file rewritten
    records: int
    removed: int  # of its records, those the next version no longer held
    size: int


def sessions_in_versions(conn: sqlite3.Connection, ref: str) -> list[str]:
    """The sessions, by id or id prefix, that only earlier versions of files still hold (a file
    emptied or cut before them: the archive lists them no more, `restore --as-of` writes them)."""
    if not has_versions(conn):
        return []
    return [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT j.value FROM source_versions v, json_each(v.sessions) j "
            "WHERE j.value >= ? AND j.value < ? ORDER BY j.value LIMIT 6",
            (ref, ref + "\U0010ffff"),
        )
    ]


def versions(conn: sqlite3.Connection, file_id: int) -> list[Version]:
    """The file's superseded versions, oldest first."""
    if not has_versions(conn):
        return []
    return [
        Version(*row)
        for row in conn.execute(
            "SELECT v.version_file_id, v.superseded_at, v.records, v.removed, f.size FROM source_versions v "
            "JOIN source_files f ON f.id = v.version_file_id WHERE v.source_file_id = ? ORDER BY v.superseded_at",
            (file_id,),
        )
    ]


def session_rewrites(conn: sqlite3.Connection, session_id: str) -> list[Version]:
    """The superseded versions of the files the session was read from, oldest first (its agent,
    or someone, rewrote them since: an edit, a truncation, a rewind)."""
    if not has_versions(conn):
        return []
    found = [v for file_id, _, _ in session_files(conn, session_id) for v in versions(conn, file_id)]
    return sorted(found, key=lambda v: v.superseded_at)


def rewrite_note(found: list[Version], session_id: str) -> str:
    """One line for a session whose files were rewritten: when, what went, how to get it back."""
    from threadloom.core.text import short_when

    if not found:
        return ""
    removed = sum(v.removed for v in found)
    times = "once" if len(found) == 1 else f"{len(found)} times"
    last = found[-1].superseded_at
    return (
        f"rewritten {times}, last {short_when(last)}: {removed:,} record{'s' if removed != 1 else ''} no longer "
        f"in its files are kept (`threadloom restore {session_id} --to DIR --as-of TIME` writes them as they were)"
    )


def as_of_archive(conn: sqlite3.Connection, session_id: str, as_of: int) -> sqlite3.Connection:
    """The session's files as they were at `as_of` (unix ms), read into a database in memory: what
    a reader of it shows is the session as it read then. Its ids are its own, not the archive's."""
    import tempfile

    from threadloom.core import db
    from threadloom.core.ingest import run_ingest

    then = db.connect(":memory:")
    with tempfile.TemporaryDirectory(prefix="threadloom-as-of-") as folder:
        root = Path(folder) / "projects"
        restore_session(conn, session_id, root, as_of=as_of)
        run_ingest(then, [root], include_defaults=False, remember=False, build_index=False)
    return then


def version_as_of(conn: sqlite3.Connection, file_id: int, as_of: int) -> Version | None:
    """The version the file had at `as_of` (unix ms), when a rewrite has superseded it since
    (None: the file is as it was then, or only grew)."""
    return next((v for v in versions(conn, file_id) if v.superseded_at > as_of), None)


def version_bytes(conn: sqlite3.Connection, version: Version) -> tuple[bytes, bool]:
    """A superseded version's bytes, rebuilt from its records in their order, and whether every
    one of them was found."""
    (blob,) = conn.execute(
        "SELECT entry_ids FROM source_versions WHERE version_file_id = ?", (version.version_file_id,)
    ).fetchone()
    ids = [int.from_bytes(blob[i : i + 8], "little") for i in range(0, len(blob), 8)]
    found: dict[int, bytes] = {}
    with _stored_records():
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            for eid, raw, newline in conn.execute(
                f"SELECT id, raw, newline FROM entries WHERE id IN ({', '.join('?' * len(chunk))})", chunk
            ):
                found[eid] = bytes(raw) + (b"\n" if newline else b"")
    data = b"".join(found.get(eid, b"") for eid in ids)
    return data, len(found) == len(set(ids)) and len(data) == version.size


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
            "SELECT byte_offset, raw, newline FROM entries WHERE source_file_id = ? ORDER BY byte_offset",
            (file_id,),
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


def stored_file(conn: sqlite3.Connection, name: str) -> bytes | None:
    """A source file named `name` as the archive holds it (None: none by that name): what an adapter
    reading beside the file it places gets for another machine's file, which is on no disk here
    (core.adapters.base.reading_mirrors)."""
    row = conn.execute("SELECT id FROM source_files WHERE path = ?", (stored_name(name),)).fetchone()
    return None if row is None else file_bytes(conn, int(row[0]))[0]


def _relative(path: str, project_key: str | None) -> tuple[str, ...]:
    """Where under the restore folder a source goes: from its project folder on (else its name).

    The path was stored from another machine's logs perhaps: `..`, `.` and a root are dropped,
    so no stored path names a place outside the folder."""
    parts = Path(path).parts
    labels = [shown_name(stored_name(p)) for p in parts]  # a project key is its folder's name escaped
    if project_key and project_key in labels:
        i = len(labels) - 1 - labels[::-1].index(project_key)
        parts = parts[i:]
    else:
        parts = parts[-1:]
    # a NUL (no file system's names have one) can only be damage: kept visible, not fatal
    return tuple(
        p.replace("\0", "\ufffd")
        for p in parts
        if p not in ("", ".", "..") and os.sep not in p and "/" not in p
    )


def _is_database(conn: sqlite3.Connection, file_id: int) -> bool:
    from threadloom.core.adapters import ADAPTERS

    agent = conn.execute("SELECT agent FROM source_files WHERE id = ?", (file_id,)).fetchone()[0]
    adapter = ADAPTERS.get(agent)
    return adapter is not None and adapter.mode == "database"


class RestoreError(Exception):
    """A restore refused before anything was written; the message says why and what to do."""


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted where a file goes must not hang the check
_BINARY = getattr(os, "O_BINARY", 0)
# each folder is opened relative to the one above it (no path is looked up twice, so a link
# swapped in between cannot redirect a write); without that (Windows) each step is checked first
_RELATIVE = os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd


def restore_session(
    conn: sqlite3.Connection,
    session_id: str,
    dest: Path,
    *,
    only: dict[str, Path] | None = None,
    as_of: int | None = None,
    source: Path | None = None,
) -> list[RestoredFile]:
    """Write the session's source files under `dest`, byte for byte.

    Nothing is ever overwritten, written through a link, or written outside `dest`. A file
    already there with the same bytes is left as it is (restoring twice into a folder is not an
    error); one with other bytes, or a link where a file or folder goes, stops the restore before
    anything is written.

    `only` (source path -> target): write just these files, each to its own target (a resume puts
    a transcript back where its agent looks, whatever folder it was read from).
    A SQLite source (Cursor, OpenCode's db, …) cannot be rebuilt as a database file: its rows are
    written instead, one exact record per line, to `<name>.rows.jsonl`.

    `as_of` (unix ms): each file as it was then, when a rewrite has changed it since.

    `source` (a file or a folder): which copy to write where the session was read from two places
    that hold the same file (the agent's folder and a `--source` backup): the one read from that
    path or from under that folder. Without it such a session is refused, the copies named.
    """
    candidates: dict[tuple[str, ...], list[tuple[int, str]]] = {}
    for file_id, path, project_key in session_files(conn, session_id):
        if only is not None and path not in only:
            continue
        if only is not None:
            if not Path(only[path]).is_relative_to(dest):
                raise RestoreError(f"{only[path]} is not inside {dest}; nothing was written")
            parts = Path(only[path]).relative_to(dest).parts
        else:
            parts = _relative(path, project_key) or (f"source-{file_id}",)
        if _is_database(conn, file_id):
            parts = (*parts[:-1], parts[-1] + ".rows.jsonl")
        candidates.setdefault(parts, []).append((file_id, path))
    chosen = _chosen_copies(candidates, source)
    planned: dict[tuple[str, ...], tuple[bytes, RestoredFile]] = {}
    for parts, (file_id, path) in chosen.items():
        size = conn.execute("SELECT size FROM source_files WHERE id = ?", (file_id,)).fetchone()[0]
        if _is_database(conn, file_id):
            with _stored_records():
                rows = [
                    bytes(r[0])
                    for r in conn.execute(
                        "SELECT raw FROM entries WHERE source_file_id = ? ORDER BY byte_offset", (file_id,)
                    )
                ]
            data, complete = b"\n".join(rows) + b"\n", False
            written = sum(map(len, rows))
        elif as_of is not None and (version := version_as_of(conn, file_id, as_of)) is not None:
            data, complete = version_bytes(conn, version)
            written = len(data)
        else:
            data, contiguous = file_bytes(conn, file_id)
            complete, written = contiguous and len(data) == size, len(data)
        planned[parts] = (data, RestoredFile(path, str(dest.joinpath(*parts)), written, complete))
    nearest = next(p for p in (dest, *dest.parents) if p.exists())
    if not nearest.is_dir():
        raise RestoreError(
            f"{nearest} is a file: --to takes a folder (created if missing); nothing was written"
        )
    if not os.access(nearest, os.W_OK | os.X_OK):  # said before anything is written
        read_only = hasattr(os, "statvfs") and os.statvfs(nearest).f_flag & os.ST_RDONLY
        raise OSError(errno.EROFS if read_only else errno.EACCES, "cannot be written", str(nearest))
    new = {parts: data for parts, (data, _) in planned.items() if not _already_there(dest, parts, data)}
    for parts, data in new.items():
        _write_new(dest, parts, data)
    for parts, (_, restored) in planned.items():
        restored.already_there = parts not in new
    return [restored for _, restored in planned.values()]


def _from_path(path: str, source: Path) -> bool:
    """Whether a stored file was read from `source` (that file, or a file under that folder)."""
    file = Path(path)
    return any(file == s or file.is_relative_to(s) for s in {source, source.resolve()})


def _chosen_copies(
    candidates: dict[tuple[str, ...], list[tuple[int, str]]], source: Path | None
) -> dict[tuple[str, ...], tuple[int, str]]:
    """The one file to restore at each place: the only one, or of several copies (the session was
    read from two folders) the one `source` names; a RestoreError when that cannot be told."""
    if source is not None:
        source = source.expanduser().absolute()
        if not any(_from_path(path, source) for copies in candidates.values() for _, path in copies):
            read = sorted({path for copies in candidates.values() for _, path in copies})
            raise RestoreError(
                f"--from {source}: no file of the session was read from there (it was read from "
                f"{_listed(read)}); nothing was written"
            )
    chosen: dict[tuple[str, ...], tuple[int, str]] = {}
    for parts, copies in candidates.items():
        if len(copies) > 1 and source is not None:
            copies = [c for c in copies if _from_path(c[1], source)] or copies
        if len(copies) > 1:
            named = _listed([path for _, path in copies])
            how = (
                f"--from {source} names more than one of them, or none"
                if source is not None
                else "`--from PATH` chooses which to restore (a copy's path, or the folder it was read from)"
            )
            raise RestoreError(
                f"the session was read from {len(copies)} copies of {Path(*parts)}: {named}; {how}; "
                "nothing was written"
            )
        chosen[parts] = copies[0]
    return chosen


def _listed(paths: list[str]) -> str:
    return ", ".join(shown_name(stored_name(p)) for p in paths[:6]) + (
        f" and {len(paths) - 6} more" if len(paths) > 6 else ""
    )


def _refused(
    dest: Path, parts: tuple[str, ...], exc: OSError, *, done: str = "nothing was written"
) -> RestoreError:
    where = dest.joinpath(*parts)
    if exc.errno == errno.ELOOP or os.path.islink(where):
        why = "is a symbolic link, and restore never writes through one"
    elif exc.errno in (errno.ENOTDIR, errno.EEXIST):
        why = "is in the way (a file where a folder goes, or a link)"
    else:
        why = f"cannot be used ({exc.strerror or exc})"
    return RestoreError(f"{where} {why}: choose another --to folder (or move it away); {done}")


class _Folder:
    """A folder inside the restore folder, reached without following a link."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path, self.fd = path, fd

    def open(self, name: str, flags: int, mode: int = 0o600) -> int:
        if self.fd is not None:
            return os.open(name, flags | _NOFOLLOW, mode, dir_fd=self.fd)
        if os.path.islink(self.path / name):
            raise OSError(errno.ELOOP, "is a symbolic link", str(self.path / name))
        return os.open(self.path / name, flags | _NOFOLLOW, mode)

    def mkdir(self, name: str) -> None:
        try:
            if self.fd is not None:
                os.mkdir(name, 0o700, dir_fd=self.fd)
            else:
                os.mkdir(self.path / name, 0o700)
        except FileExistsError:
            pass

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)


def _walk(dest: Path, folders: tuple[str, ...], *, create: bool) -> _Folder | None:
    """dest/folders, reached one folder at a time without following a link (so nothing planted
    in `dest` leads outside it); None when a folder is missing and not to be created."""
    folder = _Folder(dest, os.open(dest, os.O_RDONLY | _DIRECTORY) if _RELATIVE else None)
    try:
        for i, name in enumerate(folders):
            if create:
                folder.mkdir(name)
            fd: int | None
            try:
                fd = folder.open(name, os.O_RDONLY | _DIRECTORY)
            except FileNotFoundError:
                if create:
                    raise
                folder.close()
                return None
            except OSError as exc:
                raise _refused(dest, folders[: i + 1], exc) from exc
            if not _RELATIVE:
                os.close(fd)
                fd = None
            folder.close()
            folder = _Folder(folder.path / name, fd)
    except BaseException:
        folder.close()
        raise
    return folder


def _already_there(dest: Path, parts: tuple[str, ...], data: bytes) -> bool:
    """Whether dest/parts holds `data` already. Nothing there: False. Anything else there
    (other bytes, a link, a folder) refuses the restore."""
    if not dest.exists():
        return False
    folder = _walk(dest, parts[:-1], create=False)
    if folder is None:
        return False
    try:
        fd = folder.open(parts[-1], os.O_RDONLY | _NONBLOCK | _BINARY)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _refused(dest, parts, exc) from exc
    finally:
        folder.close()
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RestoreError(
                f"{dest.joinpath(*parts)} is in the way (not a file): choose another --to "
                "folder (or move it away); nothing was written"
            )
        if f.read() != data:
            raise RestoreError(
                f"{dest.joinpath(*parts)} already exists with other bytes; restore never overwrites: "
                "choose another --to folder (or move that file away); nothing was written"
            )
    return True


def _write_new(dest: Path, parts: tuple[str, ...], data: bytes) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    folder = _walk(dest, parts[:-1], create=True)
    assert folder is not None  # with create=True every folder on the way is made
    try:
        fd = folder.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY)
    except OSError as exc:  # something appeared there since it was checked
        raise _refused(dest, parts, exc, done="files of the session before it may have been written") from exc
    finally:
        folder.close()
    with os.fdopen(fd, "wb") as f:
        f.write(data)


@dataclass
class VerifyReport:
    files_checked: int = 0
    files_missing: int = 0
    # (path, the sessions read from it) of each source no longer on disk: kept in the archive, and
    # what `restore` writes back
    missing: list[tuple[str, list[str]]] = field(default_factory=list)
    records_checked: int = 0
    files_rewritten: int = 0  # files whose earlier versions are kept (see core.ingest's _Rewrite)
    records_superseded: int = 0  # the records those versions hold that the files no longer do
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
        (shown_name(path), error or "unknown error")
        for path, error in conn.execute(
            "SELECT path, error FROM source_files WHERE status = 'error' ORDER BY path"
        )
    ]
    if has_versions(conn):
        report.files_rewritten, report.records_superseded = conn.execute(
            "SELECT count(DISTINCT source_file_id), COALESCE(sum(removed), 0) FROM source_versions"
        ).fetchone()
    for file_id, stored, kind in conn.execute(
        "SELECT id, path, kind FROM source_files WHERE status != 'error' AND kind != 'version' "
        "AND path NOT LIKE ? ORDER BY path",  # another machine's files, pulled from a hub, are not here to read
        (MIRROR_LIKE,),
    ).fetchall():
        path = disk_name(stored)
        if _is_database(conn, file_id):
            _verify_rows(conn, report, file_id, path)
            continue
        try:
            data = _decoded(conn, file_id, path) if kind == "decoded" else read_regular(path)
        except FileNotFoundError:
            _gone(conn, report, file_id, stored)
            continue
        except (OSError, ValueError) as exc:  # ValueError: a stored path no file system has (a NUL in it)
            report.mismatches.append(
                f"{shown_name(stored)}: cannot read ({getattr(exc, 'strerror', None) or exc})"
            )
            continue
        report.files_checked += 1
        bad = 0
        first_bad: tuple[int, int, int] | None = None
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
        if first_bad is not None:
            line, offset, length = first_bad
            report.mismatches.append(
                f"{shown_name(stored)}: {bad} record(s) differ from the stored bytes; first at line {line} "
                f"(bytes {offset}-{offset + length})"
            )
    return report


def _gone(conn: sqlite3.Connection, report: VerifyReport, file_id: int, stored: str) -> None:
    """A source no longer on disk: counted, and named with the sessions read from it (those whose
    file it was; else the first session its records belong to)."""
    report.files_missing += 1
    sessions = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM agent_sessions WHERE source_file_id = ? ORDER BY is_subagent, id", (file_id,)
        )
    ]
    if not sessions:
        first = conn.execute(
            "SELECT session_id FROM entries WHERE source_file_id = ? AND session_id IS NOT NULL LIMIT 1",
            (file_id,),
        ).fetchone()
        sessions = [first[0]] if first else []
    report.missing.append((shown_name(stored), sessions))


def _decoded(conn: sqlite3.Connection, file_id: int, path: str) -> bytes:
    """A decoded log as its container decodes now (a `.jsonl.zst` decompressed)."""
    from threadloom.core.adapters import ADAPTERS
    from threadloom.core.adapters.base import container_of

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
    from threadloom.core.adapters import ADAPTERS

    agent = conn.execute("SELECT agent FROM source_files WHERE id = ?", (file_id,)).fetchone()[0]
    if not os.path.exists(path):
        _gone(conn, report, file_id, path)
        return
    try:
        current = {r.offset: r.raw for r in ADAPTERS[agent].read_rows(Path(path))}
    except Exception as exc:  # the adapter's own error says what is wrong with the database
        report.mismatches.append(f"{path}: cannot read ({exc})")
        return
    report.files_checked += 1
    bad = 0
    with _stored_records():
        for offset, raw in conn.execute(
            "SELECT byte_offset, raw FROM entries WHERE source_file_id = ?", (file_id,)
        ):
            report.records_checked += 1
            if current.get(offset) != bytes(raw):
                bad += 1
    if bad:
        report.mismatches.append(f"{path}: {bad} stored row(s) differ from the database now")
