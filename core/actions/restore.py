"""Restoring a session's files from the archive: the stored bytes written back, never over a
file that differs, as they were at any time (`--as-of`)."""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path

from ..adapters.base import shown_name, stored_name
from ..read.archive import (
    bytes_read_by,
    damaged_count,
    file_bytes,
    is_database,
    project_folder_index,
    session_agent,
    session_files,
    stored_records,
    version_as_of,
    version_bytes,
)


@dataclass
class RestoredFile:
    source_path: str
    written_to: str
    bytes: int
    complete: bool  # False when some bytes of the source were never ingested (a waiting last line)
    already_there: bool = False  # the same bytes were in the folder already: left as they were
    damaged: int = 0  # records the archive's copy of which no longer hashes as stored (written as they are)


def as_of_archive(conn: sqlite3.Connection, session_id: str, as_of: int) -> sqlite3.Connection:
    """The session's files as they were at `as_of` (unix ms), read into a database in memory: what
    a reader of it shows is the session as it read then. Its ids are its own, not the archive's."""
    import tempfile

    from ..ingest.pipeline import run_ingest
    from ..store import db

    then = db.connect(":memory:")
    with tempfile.TemporaryDirectory(prefix="threadloom-as-of-") as folder:
        root = Path(folder) / "projects"
        # every copy it was read from (its agent's folder and a backup), each in a folder of its
        # own, as the archive read them all then: no copy has to be chosen
        restore_session(conn, session_id, root, as_of=as_of, every_copy=True)
        run_ingest(then, [root], include_defaults=False, remember=False, build_index=False)
    return then


def _relative(path: str, project_key: str | None, agent: str | None) -> tuple[str, ...]:
    """Where under the restore folder a source goes: from its project folder on (as its agent's
    layout places it), else its name.

    The path was stored from another machine's logs perhaps: `..`, `.` and a root are dropped,
    so no stored path names a place outside the folder."""
    parts = Path(path).parts
    labels = [shown_name(stored_name(p)) for p in parts]  # a project key is its folder's name escaped
    at = project_folder_index(agent, labels, project_key) if project_key else None
    parts = parts[at:] if at is not None else parts[-1:]
    # a NUL (no file system's names have one) can only be damage: kept visible, not fatal
    return tuple(
        p.replace("\0", "\ufffd")
        for p in parts
        if p not in ("", ".", "..") and os.sep not in p and "/" not in p
    )


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
    every_copy: bool = False,
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

    `as_of` (unix ms): each file as the archive held it then: as it was before a rewrite since,
    cut where it stood when it grew since (`source_reads`; as first read, when that came later).

    `source` (a file or a folder): which copy to write where the session was read from two places
    that hold the same file (the agent's folder and a `--source` backup): the one read from that
    path or from under that folder. Without it such a session is refused, the copies named;
    `every_copy` writes each of them instead, the second and later under `copy-<n>/`.
    """
    candidates: dict[tuple[str, ...], list[tuple[int, str]]] = {}
    agent = session_agent(conn, session_id)
    for file_id, path, project_key in session_files(conn, session_id):
        if only is not None and path not in only:
            continue
        if only is not None:
            if not Path(only[path]).is_relative_to(dest):
                raise RestoreError(f"{only[path]} is not inside {dest}; nothing was written")
            parts = Path(only[path]).relative_to(dest).parts
        else:
            parts = _relative(path, project_key, agent) or (f"source-{file_id}",)
        if is_database(conn, file_id):
            parts = (*parts[:-1], parts[-1] + ".rows.jsonl")
        candidates.setdefault(parts, []).append((file_id, path))
    if every_copy:
        candidates = {
            ((f"copy-{n}", *parts) if n else parts): [copy]
            for parts, copies in candidates.items()
            for n, copy in enumerate(copies)
        }
    chosen = _chosen_copies(candidates, source)
    planned: dict[tuple[str, ...], tuple[bytes, RestoredFile]] = {}
    for parts, (file_id, path) in chosen.items():
        size = conn.execute(  # a file to be read whole (size -1: a rebuild's) is as long as what was read
            "SELECT CASE WHEN size >= 0 THEN size ELSE bytes_ingested END FROM source_files WHERE id = ?",
            (file_id,),
        ).fetchone()[0]
        if is_database(conn, file_id):
            with stored_records():
                rows = [
                    bytes(r[0])
                    for r in conn.execute(
                        "SELECT raw FROM entries WHERE source_file_id = ? ORDER BY byte_offset", (file_id,)
                    )
                ]
            data, complete = b"\n".join(rows) + b"\n", False
            written = sum(map(len, rows))
            damaged = damaged_count(conn, file_id)
        else:
            version = version_as_of(conn, file_id, as_of) if as_of is not None else None
            if version is not None:
                data, complete = version_bytes(conn, version)
            else:
                data, contiguous = file_bytes(conn, file_id)
                complete = contiguous and len(data) == size
            held = bytes_read_by(conn, file_id, as_of) if as_of is not None else None
            if held is not None and held < len(data):  # grown since: as far as the archive held it then
                data = data[:held]
            written = len(data)
            damaged = damaged_count(conn, file_id, version, upto=held)  # of what is written only
        restored = RestoredFile(path, str(dest.joinpath(*parts)), written, complete, damaged=damaged)
        planned[parts] = (data, restored)
    if (
        planned
        and not any(data for data, _ in planned.values())
        and any(_expected(conn, f) for f, _ in chosen.values())
    ):
        raise RestoreError(
            f"none of the records of {session_id}'s files could be read (a rebuild of a damaged database "
            "left them in the backup it kept beside it, `<database>.<time>.bak`: restore from that one with "
            "--db); nothing was written"
        )
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


def _expected(conn: sqlite3.Connection, file_id: int) -> bool:
    """Whether anything was read of the file (an empty one restores as empty)."""
    row = conn.execute("SELECT bytes_ingested FROM source_files WHERE id = ?", (file_id,)).fetchone()
    return bool(row and row[0])


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
