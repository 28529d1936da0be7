"""The archive side of zero loss: write sources back from `entries.raw`, and check them."""

from __future__ import annotations

import fnmatch
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from ..adapters.base import Adapter, disk_name, nearest_folder, read_regular, shown_name, stored_name
from ..base.text import count_of
from ..store.db import MIRROR_LIKE
from ..store.sql import record_digest


def has_versions(conn: sqlite3.Connection) -> bool:
    """Whether the database keeps rewritten files' versions (a read-only one from before may not)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'source_versions'").fetchone() is not None


@dataclass
class Version:
    """A file as it was before a rewrite (see core.ingest.pipeline's _Rewrite)."""

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
    from ..base.text import short_when

    if not found:
        return ""
    removed = sum(v.removed for v in found)
    times = "once" if len(found) == 1 else f"{len(found)} times"
    last = found[-1].superseded_at
    return (
        f"rewritten {times}, last {short_when(last)}: {removed:,} record{'s' if removed != 1 else ''} no longer "
        f"in its files are kept (`threadloom restore {session_id} --to DIR --as-of TIME` writes them as they were)"
    )


def version_as_of(conn: sqlite3.Connection, file_id: int, as_of: int) -> Version | None:
    """The version the file had at `as_of` (unix ms), when a rewrite has superseded it since
    (None: the file is as it was then, or only grew)."""
    return next((v for v in versions(conn, file_id) if v.superseded_at > as_of), None)


def bytes_read_by(conn: sqlite3.Connection, file_id: int, as_of: int) -> int | None:
    """How many bytes of the file the archive held at `as_of` (unix ms); before it was first read,
    what it first held (the earliest it knows); None where it kept no reads of it (a database from
    before `source_reads`)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'source_reads'").fetchone() is None:
        return None
    if (
        conn.execute("SELECT 1 FROM source_reads WHERE source_file_id = ? LIMIT 1", (file_id,)).fetchone()
        is None
    ):
        return None  # read before the log was kept
    row = (
        conn.execute(
            "SELECT bytes FROM source_reads WHERE source_file_id = ? AND read_at <= ? ORDER BY read_at DESC LIMIT 1",
            (file_id, as_of),
        ).fetchone()
        or conn.execute(
            "SELECT bytes FROM source_reads WHERE source_file_id = ? ORDER BY read_at LIMIT 1", (file_id,)
        ).fetchone()
    )
    return int(row[0])


def version_bytes(conn: sqlite3.Connection, version: Version) -> tuple[bytes, bool]:
    """A superseded version's bytes, rebuilt from its records in their order, and whether every
    one of them was found."""
    ids = _version_ids(conn, version)
    found: dict[int, bytes] = {}
    with stored_records():
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            for eid, raw, newline in conn.execute(
                f"SELECT id, raw, newline FROM entries WHERE id IN ({', '.join('?' * len(chunk))})", chunk
            ):
                found[eid] = bytes(raw) + (b"\n" if newline else b"")
    data = b"".join(found.get(eid, b"") for eid in ids)
    return data, len(found) == len(set(ids)) and len(data) == version.size


def _version_ids(conn: sqlite3.Connection, version: Version) -> list[int]:
    """The entries a superseded version held, in their order in it."""
    (blob,) = conn.execute(
        "SELECT entry_ids FROM source_versions WHERE version_file_id = ?", (version.version_file_id,)
    ).fetchone()
    return [int.from_bytes(blob[i : i + 8], "little") for i in range(0, len(blob), 8)]


@contextmanager
def stored_records() -> Iterator[None]:
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
    with stored_records():
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


def document_messages(conn: sqlite3.Connection, file_id: int) -> dict[str, Any]:
    """The messages (by id) of a JSON chat stored line by line (a JSON-era Gemini CLI chat), read
    from the document its stored lines make: each message's record is only the line closing it."""
    from ..adapters.shared import loads

    doc = loads(file_bytes(conn, file_id)[0])[0]
    listed = doc.get("messages") if isinstance(doc, dict) else None
    return {
        m["id"]: m
        for m in (listed if isinstance(listed, list) else [])
        if isinstance(m, dict) and isinstance(m.get("id"), str)
    }


def stored_file(conn: sqlite3.Connection, name: str) -> bytes | None:
    """A source file named `name` as the archive holds it (None: none by that name): what an adapter
    reading beside the file it places gets for another machine's file, which is on no disk here
    (core.adapters.base.reading_mirrors)."""
    row = conn.execute("SELECT id FROM source_files WHERE path = ?", (stored_name(name),)).fetchone()
    return None if row is None else file_bytes(conn, int(row[0]))[0]


def kept_with(conn: sqlite3.Connection, session_id: str, name: str) -> dict[str, bytes]:
    """The side files named `name` the archive keeps with a session, their bytes by path (as the file
    system names it): what a replay's adapter reads beside the file it places (`FileContext.kept_with`),
    whatever the disk holds now."""
    rows = conn.execute(
        "SELECT id, path FROM source_files WHERE kind = 'side' AND id IN "
        "(SELECT DISTINCT source_file_id FROM entries WHERE session_id = ?) ORDER BY path",
        (session_id,),
    ).fetchall()
    named = [(file_id, disk_name(path)) for file_id, path in rows]
    return {path: file_bytes(conn, file_id)[0] for file_id, path in named if Path(path).name == name}


def archived_records(
    conn: sqlite3.Connection, pattern: str, starting: bytes | None = b""
) -> dict[str, list[bytes]]:
    """The archive's files whose paths match the glob `pattern` (`*` within one part of a path; a
    name taken as it is escaped with `glob.escape`), each as its records' bytes in order (a line's
    with its newline), by path (as the file system names it): what a replay's adapter reads beside
    the file it places (`FileContext.archived`), whatever the disk holds now. With `starting`, only
    the first record that starts with those bytes: whether a file holds one (a large database's
    rows), not reading it all; with None, no record: which files the archive holds."""
    query = " ORDER BY byte_offset"
    extra: tuple[object, ...] = ()
    if starting:
        query, extra = " AND substr(raw, 1, ?) = ? ORDER BY byte_offset LIMIT 1", (len(starting), starting)
    coarse = pattern
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8: stored as their escaped text, a NUL and hex
        coarse = os.fsencode(pattern).decode("utf-8", "backslashreplace") + "*"
    rows = conn.execute(
        "SELECT id, path FROM source_files WHERE path GLOB ? AND kind != 'version' ORDER BY path", (coarse,)
    ).fetchall()
    found: dict[str, list[bytes]] = {}
    with stored_records():
        for file_id, stored in rows:
            path = disk_name(stored)
            if not _glob_matches(path, pattern):  # GLOB's `*` crosses a `/`, a glob's does not
                continue
            if starting is None:
                found[path] = []
                continue
            found[path] = [
                bytes(raw) + b"\n" * newline
                for raw, newline in conn.execute(
                    "SELECT raw, newline FROM entries WHERE source_file_id = ?" + query, (file_id, *extra)
                )
            ]
    return found


def _glob_matches(path: str, pattern: str) -> bool:
    """Whether `path` matches the glob `pattern` part by part: as text (`?` one character), or on the
    bytes the file system names where either holds some that are not UTF-8."""
    parts, wanted = Path(path).parts, Path(pattern).parts
    return len(parts) == len(wanted) and all(
        fnmatch.fnmatchcase(part, want)
        if _utf8(part) and _utf8(want)
        else fnmatch.fnmatchcase(os.fsencode(part), os.fsencode(want))
        for part, want in zip(parts, wanted, strict=True)
    )


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass
class VerifyReport:
    files_checked: int = 0
    files_missing: int = 0
    # (path, the sessions read from it) of each source no longer on disk: kept in the archive, and
    # what `restore` writes back
    missing: list[tuple[str, list[str]]] = field(default_factory=list)
    records_checked: int = 0
    files_rewritten: int = 0  # files whose earlier versions are kept (see core.ingest.pipeline's _Rewrite)
    records_superseded: int = 0  # the records those versions hold that the files no longer do
    mismatches: list[str] = field(default_factory=list)
    # (path, error) of the files that failed to be read in: their bytes are not (all) stored
    not_stored: list[tuple[str, str]] = field(default_factory=list)
    # (path, bytes, why) of each file holding more than is stored: a last line its writer has not
    # finished ("unfinished"), or bytes written since the last ingest ("new")
    unread: list[tuple[str, int, str]] = field(default_factory=list)
    # (path, records, first line) of each file some of whose stored records no longer hash as they
    # did when stored: damage to the archive itself (a disk or a copy), whatever the source says
    damaged: list[tuple[str, int, int | None]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.not_stored and not self.damaged


def verify(conn: sqlite3.Connection) -> VerifyReport:
    """Re-read every source still present; report stored byte ranges that no longer match, and
    the files whose reading failed (nothing of them can be checked: their bytes were never stored)."""
    report = VerifyReport()
    damage = _Damage()
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
    for file_id, stored, kind, status in conn.execute(
        "SELECT id, path, kind, status FROM source_files WHERE status != 'error' AND kind != 'version' "
        "AND path NOT LIKE ? ORDER BY path",  # another machine's files, pulled from a hub, are not here to read
        (MIRROR_LIKE,),
    ).fetchall():
        path = disk_name(stored)
        if is_database(conn, file_id):
            _verify_rows(conn, report, file_id, path, damage)
            continue
        try:
            data = _decoded(conn, file_id, path) if kind == "decoded" else read_regular(path)
        except (FileNotFoundError, NotADirectoryError):  # or a folder on its way replaced by a file
            _gone(conn, report, file_id, stored)
            continue
        except (OSError, ValueError) as exc:  # ValueError: a stored path no file system has (a NUL in it)
            report.mismatches.append(
                f"{shown_name(stored)}: cannot read ({getattr(exc, 'strerror', None) or exc})"
            )
            continue
        report.files_checked += 1
        damage.read.add(file_id)
        bad = covered = 0
        first_bad: tuple[int, int, int] | None = None
        with stored_records():
            for offset, line_number, raw, newline, digest in conn.execute(
                "SELECT byte_offset, line_number, raw, newline, hash FROM entries WHERE source_file_id = ? "
                "ORDER BY byte_offset",
                (file_id,),
            ):
                report.records_checked += 1
                raw = bytes(raw)
                end = offset + len(raw)
                if damage.found(file_id, line_number, raw, digest):  # the archive's copy, not the source
                    covered = max(covered, end + int(newline))
                    continue
                if data[offset:end] != raw or (newline and data[end : end + 1] != b"\n"):
                    bad += 1
                    if first_bad is None:
                        first_bad = (line_number, offset, len(raw))
                covered = max(covered, end + int(newline))
        if first_bad is None and len(data) > covered:
            why = "unfinished" if status == "waiting" else "new"
            report.unread.append((shown_name(stored), len(data) - covered, why))
        if first_bad is not None:
            line, offset, length = first_bad
            report.mismatches.append(
                f"{shown_name(stored)}: {count_of(bad, 'record')} {'differs' if bad == 1 else 'differ'} from the stored bytes; first at line {line} "
                f"(bytes {offset}-{offset + length})"
            )
    damage.check_the_rest(conn)
    report.damaged = damage.named(conn)
    return report


class _Damage:
    """The stored records whose bytes no longer give the hash taken when they were stored: damage
    to the archive itself. Those of the files verify reads anyway are checked as it reads them;
    every other file's (gone, superseded, another machine's) in one pass at the end, so that each
    record is read once (hashing a 100 MB archive: about 0.3 s)."""

    def __init__(self) -> None:
        self.read: set[int] = set()  # the files whose records were checked as verify read them
        self.files: dict[int, tuple[int, int | None]] = {}  # file id -> (records damaged, first line)

    def found(self, file_id: int, line_number: int | None, raw: bytes, digest: str) -> bool:
        if record_digest(raw) == digest:
            return False
        count, first = self.files.get(file_id, (0, None))
        lines = [n for n in (first, line_number) if n is not None]
        self.files[file_id] = (count + 1, min(lines) if lines else None)
        return True

    def check_the_rest(self, conn: sqlite3.Connection) -> None:
        with stored_records():
            for file_id, line_number, raw, digest in conn.execute(
                "SELECT source_file_id, line_number, raw, hash FROM entries "
                "WHERE source_file_id NOT IN (SELECT value FROM json_each(?))",
                (orjson.dumps(sorted(self.read)).decode(),),
            ):
                self.found(file_id, line_number, bytes(raw), digest)

    def named(self, conn: sqlite3.Connection) -> list[tuple[str, int, int | None]]:
        """(path, records, first line) of each damaged file."""
        named = []
        for file_id, (count, first) in sorted(self.files.items()):
            row = conn.execute("SELECT path FROM source_files WHERE id = ?", (file_id,)).fetchone()
            named.append((shown_name(row[0]) if row else f"file {file_id}", count, first))
        return named


def damaged_count(
    conn: sqlite3.Connection, file_id: int, version: Version | None = None, upto: int | None = None
) -> int:
    """How many of a file's stored records (or of its superseded `version`'s; those before byte
    `upto` only, when a restore cuts it there) no longer hash as they did when stored: what a
    restore of it wrote is not what was read."""
    rows: Iterable[tuple[bytes, str]]
    if version is None:
        rows = conn.execute(
            "SELECT raw, hash FROM entries WHERE source_file_id = ? AND byte_offset < ?",
            (file_id, upto if upto is not None else 1 << 62),
        )
    else:  # the version's records in its order, as far as `upto` reaches into them
        ids = _version_ids(conn, version)
        found = {
            eid: (bytes(raw), digest, newline)
            for eid, raw, digest, newline in conn.execute(
                "SELECT id, raw, hash, newline FROM entries WHERE id IN (SELECT value FROM json_each(?))",
                (orjson.dumps(ids).decode(),),
            )
        }
        kept: list[tuple[bytes, str]] = []
        at = 0
        for eid in ids:
            if eid in found and (upto is None or at < upto):
                raw, digest, newline = found[eid]
                kept.append((raw, digest))
                at += len(raw) + int(newline)
        rows = kept
    with stored_records():
        return sum(record_digest(bytes(raw)) != digest for raw, digest in rows)


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
    from ..adapters import ADAPTERS
    from ..adapters.base import container_of

    agent = conn.execute("SELECT agent FROM source_files WHERE id = ?", (file_id,)).fetchone()[0]
    container = Path(container_of(path) or path)
    try:
        data = ADAPTERS[agent].decode(container, read_regular(container))
    except ValueError as exc:
        raise OSError(f"cannot decode: {exc}") from exc
    if data is None:
        raise OSError("no longer decodes to a log")
    return data


def _verify_rows(
    conn: sqlite3.Connection, report: VerifyReport, file_id: int, path: str, damage: _Damage
) -> None:
    """A database source is checked row by row against what its adapter reads now."""
    from ..adapters import ADAPTERS

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
    damage.read.add(file_id)
    bad = 0
    with stored_records():
        for offset, line_number, raw, digest in conn.execute(
            "SELECT byte_offset, line_number, raw, hash FROM entries WHERE source_file_id = ?", (file_id,)
        ):
            report.records_checked += 1
            if not damage.found(file_id, line_number, bytes(raw), digest) and current.get(offset) != bytes(
                raw
            ):
                bad += 1
    if bad:
        report.mismatches.append(
            f"{path}: {count_of(bad, 'stored row')} {'differs' if bad == 1 else 'differ'} from the database now"
        )


# `below(id)`: the subagents a session (`?1`) started, theirs too, by their parents (a fork names
# its source too, and is not one of them): the head of a query that asks of `below`
SUBAGENTS_BELOW = (
    "WITH RECURSIVE below(id) AS (SELECT id FROM agent_sessions WHERE parent_session_id = ?1 AND is_subagent = 1 "
    "UNION SELECT s.id FROM agent_sessions s JOIN below b ON s.parent_session_id = b.id WHERE s.is_subagent = 1) "
)


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
    # and the files of the subagents it started (theirs too) that have ids of their own (Droid's,
    # Kiro's): named by their parent
    rows = conn.execute(
        SUBAGENTS_BELOW + "SELECT id, path, project_key FROM source_files WHERE (id IN ("
        "SELECT DISTINCT source_file_id FROM entries WHERE session_id = ?1 OR (session_id > ?2 AND session_id < ?3) "
        "OR session_id IN (SELECT id FROM below)) "
        f"{rewritten}) AND kind NOT IN ('decoded', 'version') "  # a decoded log is restored as its container
        "ORDER BY path",
        (session_id, session_id + ":", session_id + ";", *([session_id] if rewritten else [])),
    ).fetchall()
    # and the side files its agent keeps for all of its project's sessions (Gemini CLI's prompt log,
    # shell history, saved chats and /restore checkpoints): with each session of that project, those
    # of its own project folder (another home's folder of the same name is another project), and
    # those beside a folder above its files (Gemini CLI's registry of projects, beside tmp/)
    agent = session_agent(conn, session_id)
    folders = {folder for _, path, key in rows if key and (folder := _project_folder(agent, path, key))}
    if rows:
        shared = conn.execute(
            "SELECT id, path, project_key FROM source_files f WHERE kind = 'side' AND agent = ? "
            "AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.source_file_id = f.id AND e.session_id IS NOT NULL)",
            (agent,),
        ).fetchall()
        known = {file_id for file_id, _, _ in rows}
        paths = [path for _, path, _ in rows]

        def belongs(path: str) -> bool:
            if any(path.startswith(folder) for folder in folders):
                return True
            beside = path[: max(path.rfind("/"), path.rfind("\\")) + 1]
            return bool(beside) and any(p.startswith(beside) for p in paths)

        rows += [r for r in shared if r[0] not in known and belongs(r[1])]
        rows.sort(key=lambda r: r[1])
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


def session_agent(conn: sqlite3.Connection, session_id: str) -> str | None:
    """The agent whose session it is (`agent_sessions.source`), None for no such session."""
    row = conn.execute("SELECT source FROM agent_sessions WHERE id = ?", (session_id,)).fetchone()
    return row[0] if row else None


def _project_folder(agent: str | None, path: str, key: str) -> str | None:
    """The project folder (named `key`) that `path` lies in, as its agent's layout says
    (`Adapter.project_folder`), with a separator after it."""
    sep = "\\" if "\\" in path and "/" not in path else "/"
    parts = path.split(sep)
    at = project_folder_index(agent, parts, key)
    return None if at is None else sep.join(parts[: at + 1]) + sep


def project_folder_index(agent: str | None, parts: Sequence[str], key: str) -> int | None:
    """Which of a stored path's parts is its project's folder, named `key`: its agent says."""
    from ..adapters import ADAPTERS

    adapter = ADAPTERS.get(agent) if agent else None
    return adapter.project_folder(parts, key) if adapter is not None else nearest_folder(parts, key)


def is_database(conn: sqlite3.Connection, file_id: int) -> bool:
    from ..adapters import ADAPTERS

    agent, kind = conn.execute("SELECT agent, kind FROM source_files WHERE id = ?", (file_id,)).fetchone()
    adapter = ADAPTERS.get(agent)
    return adapter is not None and adapter.mode == "database" and kind != "side"


def plan_tools(conn: sqlite3.Connection, session_id: str) -> frozenset[str]:
    """The tools that end a plan in this session's agent's logs (its adapter's `plan_tools`)."""
    adapter = _adapter_of(conn, session_id)
    return adapter.plan_tools if adapter is not None else frozenset()


def _adapter_of(conn: sqlite3.Connection, session_id: str) -> Adapter | None:
    """The adapter of the session's agent (None: no such session, or an agent no longer read)."""
    from ..adapters import ADAPTERS

    agent = session_agent(conn, session_id)
    return ADAPTERS.get(agent) if agent else None


def plan_files(conn: sqlite3.Connection, session_id: str) -> list[tuple[int, str, int]]:
    """(file id, stored path, size) of the plans kept for a session: in a `plans/` folder within the
    folder its adapter names (`Adapter.plans_folder`: Gemini CLI's `<id>/plans/`, Kimi Code's
    `<id>/agents/<agent>/plans/`); Claude Code's named by the session's slug (`plans/<slug>.md`),
    which the records of its plan calls carry. Read where a session is opened or restored: the calls
    by their session's index and the side files' names, never the session's records."""
    slugs = [
        slug
        for (slug,) in conn.execute(
            "SELECT DISTINCT json_extract(CAST(e.raw AS TEXT), '$.slug') FROM agent_tool_calls c "
            "JOIN entries e ON e.id = c.entry_id WHERE c.session_id = ? "
            "AND c.tool_name IN (SELECT value FROM json_each(?))",
            (session_id, orjson.dumps(sorted(plan_tools(conn, session_id))).decode()),
        )
        if isinstance(slug, str) and slug
    ]
    ends = [f"/plans/{slug}.md" for slug in slugs]
    adapter = _adapter_of(conn, session_id)
    mine = adapter.plans_folder(session_id) if adapter is not None else f"/{session_id}/"
    found = conn.execute(
        "SELECT f.id, f.path, f.size FROM source_files f WHERE f.kind = 'side' AND ("
        "(instr(f.path, ?1) > 0 AND instr(f.path, '/plans/') > 0) "
        "OR EXISTS (SELECT 1 FROM json_each(?2) j WHERE substr(f.path, -length(j.value)) = j.value)) "
        "ORDER BY f.path",
        (mine, orjson.dumps(ends).decode()),
    ).fetchall()
    # named by its slug, or a Markdown file right in a `plans/` folder below the session's folder
    # (a background task named "plans" keeps its output in tasks/plans/: no plan)
    return [
        (file_id, path, size)
        for file_id, path, size in found
        if path.endswith(tuple(ends))
        or (
            path.endswith(".md")
            and PurePosixPath(path).parent.name == "plans"
            and "/plans/" in path[path.find(mine) + 1 :]
        )
    ]
