"""What `ingest --rebuild` carries from the database it replaces into the new one: the records.

The agents delete their own logs (Claude Code after 30 days by default, a chat deleted in Cursor, a
session removed by hand): the archive is then the only place that holds them. A rebuild that read
only the agents' files again left all of that behind in the old database, moved aside, where
nothing shows it. The records (every stored file with its records, its superseded versions and its
reads) are carried instead, ids and all, and the new database replays them as a schema upgrade does;
a file still on disk whose records do not hold all of what was read of it is then read again whole
and compared with them, so a rebuild still mends an archive that lacks some of a file.

A sound database is carried whole, with the sync state that describes its records and the sync's
settings and positions (a hub is not pulled from again). A damaged one (SQLite's own check finds
damage, a read fails, a row reads back as another type, or a record's bytes do not match their
digest) is carried as far as it can be read, row by row where a page fails; what came from a hub is
pulled again, by the same machine from the same hub (the sync's settings are carried, not its
positions). What could not be read stays in the old database, kept as `<name>.<time>.bak`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..adapters.base import container_of, disk_name
from . import db
from .derived import SYNC_STATE
from .sql import record_digest, set_meta, transaction

# the records and what hangs on them, in the order they are carried (a version names two files)
FILES, ENTRIES, VERSIONS, READS = "source_files", "entries", "source_versions", "source_reads"
CHUNK = 512  # rows read at a time; a chunk that fails is read again row by row
# the sync's settings in ledger_meta (core.ingest.sync's URL_KEY and SHARE_KEY, db.MACHINE_KEY and
# WHO_KEY); its positions are `sync:cursor:…`, `sync:readable:…`, …
SYNC_SETTINGS = ("sync:url", "sync:share", "sync:machine", "sync:who")
BLIND_CHUNKS = 64  # chunks read on where the table cannot say which row comes next, before it stops


@dataclass
class Carried:
    """What a rebuild took from the old database (`as_dict` for `ingest --rebuild --json`)."""

    files: int = 0
    records: int = 0
    gone_from_disk: int = 0  # of the files carried: those no agent's file holds any more
    damaged: bool = False
    unreadable: int = 0  # rows of the records' tables that could not be read (left in the old database)
    read_again: int = 0  # of the files carried: those read again from disk, their records not whole
    left_to_hub: int = 0  # a damaged database's files pulled from a sync hub: pulled again
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "files": self.files,
            "records": self.records,
            "gone_from_disk": self.gone_from_disk,
            "read_again": self.read_again,
            "damaged": self.damaged,
            "unreadable_rows": self.unreadable,
            "pulled_again": self.left_to_hub,
            "notes": self.notes,
        }


def carry_records(old_path: Path, new: sqlite3.Connection) -> Carried:
    """Copy the records of the database at `old_path` into `new` (a database just made, holding
    nothing but what the user gave the old one) and mark its derived tables due for a replay
    (`core.ingest.pipeline.rebuild_pending`, which the next ingest runs first)."""
    carried = Carried()
    if not old_path.is_file():
        return carried
    try:
        old = db.peek(old_path)
    except sqlite3.Error as exc:
        carried.damaged = True
        carried.notes.append(f"the old database could not be opened ({exc})")
        return carried
    # the new file is this connection's alone and thrown away if the rebuild fails: a rollback journal
    # holds next to nothing for pages that are new, where the WAL held every page written once more
    # (181 MB of WAL for a 221 MB archive)
    rollback_journal = new.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    try:
        damaged = not _sound(old)
        try:
            return _carry_all(old, new, damaged)
        except _FoundDamage:  # a read failed where SQLite's check found nothing: carried as damaged
            return _carry_all(old, new, True)
    finally:
        old.close()
        if rollback_journal:
            new.execute("PRAGMA journal_mode = WAL")


def _sound(old: sqlite3.Connection) -> bool:
    """SQLite's own check of the old database (on the reading connection: nothing is left beside it)."""
    try:
        found = old.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.DatabaseError:
        return False
    return found is not None and found[0] == "ok"


class _FoundDamage(Exception):
    pass


def _carry_all(old: sqlite3.Connection, new: sqlite3.Connection, damaged: bool) -> Carried:
    carried = Carried(damaged=damaged)
    with transaction(new, immediate=True):
        _carry(old, new, carried)
        if carried.files:
            set_meta(new, db.REBUILD_KEY, str(db.SCHEMA_VERSION))
    return carried


def _carry(old: sqlite3.Connection, new: sqlite3.Connection, carried: Carried) -> None:
    names = _columns(old, new, FILES)
    entry_names = _columns(old, new, ENTRIES)
    if not {"id", "path", "kind"} <= set(names) or "source_file_id" not in entry_names:
        _failed(carried)
        carried.notes.append("its stored files could not be read")
        return
    by_id, paths, kinds = _stored_files(old, new, names, carried)
    versions = {file_id for file_id, kind in kinds.items() if kind == "version"}
    mirrored = {file_id for file_id, path in paths.items() if path.startswith(db.MIRROR_ROOT + "/")}
    # a decoded log is there while the file it came from is (it is read again from that file)
    present = {file_id for file_id, path in paths.items() if _on_disk(container_of(path) or path)}
    on_disk = {file_id for file_id in present if container_of(paths[file_id]) is None}
    gone = set(paths) - present - versions - mirrored
    # a damaged database's files pulled from a hub are pulled again (its sync state is not carried)
    keep = set(by_id) - mirrored if carried.damaged else set(by_id)
    carried.left_to_hub = len(mirrored - keep)
    _insert(new, FILES, names, [by_id[file_id] for file_id in sorted(keep)])
    _carry_entries(old, new, entry_names, keep, carried)
    links = list(_rows(old, new, VERSIONS, carried))  # (version, the file it superseded, …)
    version_names = _columns(old, new, VERSIONS)
    linked = [
        (row[version_names.index("version_file_id")], row[version_names.index("source_file_id")])
        for row in links
    ]
    lost_decoded: set[int] = set()  # decoded logs none of whose records could be read
    if carried.damaged:  # a file gone from disk none of whose records could be read stays in the old database
        # (a version whose records all live on in its file holds none of its own: it is kept, and so is
        # the file it superseded, which its link and the next version's number need)
        bases = {base for version, base in linked if version in keep}
        empty = (keep - on_disk - versions - bases) - {
            r[0] for r in new.execute("SELECT DISTINCT source_file_id FROM entries")
        }
        new.executemany("DELETE FROM source_files WHERE id = ?", [(file_id,) for file_id in empty])
        keep -= empty
        lost_decoded = {file_id for file_id in empty if container_of(paths[file_id]) is not None}
    carried.files, carried.gone_from_disk = len(keep), len(gone & keep)
    again = _to_read_again(new, keep - versions, paths, kinds, lost_decoded, carried.damaged) - mirrored
    new.executemany(
        "UPDATE source_files SET size = -1, content_hash = NULL WHERE id = ?",
        [(file_id,) for file_id in sorted(again)],
    )
    carried.read_again = len(again & on_disk)
    # a version carried with the file it superseded, a file's reads with it
    _insert(
        new,
        VERSIONS,
        version_names,
        [row for row, pair in zip(links, linked, strict=True) if set(pair) <= keep],
    )
    tables: list[tuple[str, tuple[str, ...]]] = [(READS, ("source_file_id",))]
    if not carried.damaged:
        tables += [(table, ()) for table in SYNC_STATE]
    # a damaged one's sync positions are not carried (nor the state they go with): its files are
    # pushed and pulled again, by the same machine to the same hub
    _carry_meta(old, new, ("reread:%", *SYNC_SETTINGS) if carried.damaged else ("reread:%", "sync:%"))
    for table, file_columns in tables:
        names = _columns(old, new, table)
        if not names:
            continue
        spots = [names.index(c) for c in file_columns]
        rows = [row for row in _rows(old, new, table, carried) if all(row[i] in keep for i in spots)]
        _insert(new, table, names, rows)


def _stored_files(
    old: sqlite3.Connection, new: sqlite3.Connection, names: list[str], carried: Carried
) -> tuple[dict[int, tuple[object, ...]], dict[int, str], dict[int, str]]:
    """The old database's source_files rows that read back as such, with their paths and kinds, by id."""
    at = {name: i for i, name in enumerate(names)}
    by_id: dict[int, tuple[object, ...]] = {}
    paths: dict[int, str] = {}
    kinds: dict[int, str] = {}
    for row in _rows(old, new, FILES, carried):
        file_id, path, kind = row[at["id"]], row[at["path"]], row[at["kind"]]
        if not isinstance(file_id, int) or not isinstance(path, str) or not isinstance(kind, str):
            _failed(carried)
            carried.unreadable += 1  # a damaged row, read back as another type
            continue
        by_id[file_id], paths[file_id], kinds[file_id] = row, path, kind
    return by_id, paths, kinds


def _carry_entries(
    old: sqlite3.Connection, new: sqlite3.Connection, names: list[str], keep: set[int], carried: Carried
) -> None:
    """The records of the files kept, each only when its bytes match the digest stored with them."""
    file_at, raw_at, hash_at = names.index("source_file_id"), names.index("raw"), names.index("hash")
    for chunk in _chunks(_rows(old, new, ENTRIES, carried), CHUNK):
        rows = []
        for row in chunk:
            if row[file_at] not in keep:
                continue
            raw = row[raw_at]
            if not isinstance(raw, bytes | str) or record_digest(_as_bytes(raw)) != row[hash_at]:
                _failed(carried)  # a record whose bytes are not what was stored: a page damaged unseen
                carried.unreadable += 1
                continue
            rows.append(row)
        _insert(new, ENTRIES, names, rows)
        carried.records += len(rows)


def _to_read_again(
    new: sqlite3.Connection,
    files: set[int],
    paths: dict[int, str],
    kinds: dict[int, str],
    lost_decoded: set[int],
    damaged: bool,
) -> set[int]:
    """Of the files kept (versions aside), those the next ingest reads whole and compares with their
    records, as a re-read does (core.ingest.pipeline.REREADS): whose records do not hold all that was
    read of them (rows a damaged page lost, or lost another way), on disk now or when they come back;
    a damaged database's rows of an agent's database (no stretch of bytes to check them by); and the
    file a decoded log came from, for the log (its own row is never read). The others are left as they
    are: each record's bytes matched its digest, and read again, a file whose records another file
    repeats would be placed anew after the replay, which differs from a clean run's order."""
    again = _untiled(new, files) | lost_decoded
    if damaged:
        again |= {file_id for file_id in files if kinds[file_id] == "database"}
    ids = {path: file_id for file_id, path in paths.items() if file_id in files}
    again |= {ids[c] for file_id in again if (c := container_of(paths[file_id])) is not None and c in ids}
    return again & files


def _untiled(new: sqlite3.Connection, file_ids: set[int]) -> set[int]:
    """Of `file_ids`, the files whose records do not lie end to end from byte 0 to the bytes they were
    read for (a row of an agent's database is no stretch of bytes: left out)."""
    if not file_ids:
        return set()
    new.execute("CREATE TEMP TABLE IF NOT EXISTS carried_ids (id INTEGER PRIMARY KEY)")
    new.execute("DELETE FROM carried_ids")
    new.executemany("INSERT INTO carried_ids (id) VALUES (?)", [(file_id,) for file_id in file_ids])
    rows = new.execute(
        """SELECT f.id FROM source_files f JOIN carried_ids c ON c.id = f.id
           WHERE f.kind != 'database' AND f.bytes_ingested != COALESCE(
               (SELECT max(byte_offset + length(raw) + newline) FROM entries WHERE source_file_id = f.id), 0)
           UNION
           SELECT source_file_id FROM (
               SELECT source_file_id, byte_offset, lag(byte_offset + length(raw) + newline, 1, 0)
                   OVER (PARTITION BY source_file_id ORDER BY byte_offset) AS expected
               FROM entries WHERE source_file_id IN (SELECT id FROM carried_ids)
           ) WHERE byte_offset != expected AND source_file_id IN (
               SELECT id FROM source_files WHERE kind != 'database')"""
    ).fetchall()
    new.execute("DROP TABLE carried_ids")
    return {r[0] for r in rows}


def _carry_meta(old: sqlite3.Connection, new: sqlite3.Connection, patterns: tuple[str, ...]) -> None:
    """Named values that go with the records: the re-reads done on them already (`reread:`), and
    with the sync state the hub, what is shared, the machine's name and how far each pull got
    (`sync:`), without which the next sync is told the hub again and pulls from the start."""
    for pattern in patterns:
        try:
            rows = old.execute("SELECT key, value FROM ledger_meta WHERE key LIKE ?", (pattern,)).fetchall()
        except sqlite3.DatabaseError:
            continue
        new.executemany("INSERT OR IGNORE INTO ledger_meta (key, value) VALUES (?, ?)", rows)


def _as_bytes(raw: bytes | str) -> bytes:
    """A record's bytes as stored (a text where an older version kept one, UTF-8 as it was read)."""
    return raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogateescape")


def _on_disk(stored: str) -> bool:
    """Whether an agent's file (or database) is still where it was read."""
    try:
        return os.path.lexists(disk_name(stored))
    except (OSError, ValueError):  # a name no file system takes
        return False


def _columns(old: sqlite3.Connection, new: sqlite3.Connection, table: str) -> list[str]:
    """The columns both databases have, in the new one's order (an older database lacks the ones
    added since: they take their defaults; a table it lacks carries nothing)."""
    try:
        have = {r[1] for r in old.execute(f"PRAGMA table_info({table})")}
    except sqlite3.DatabaseError:
        return []
    return [r[1] for r in new.execute(f"PRAGMA table_info({table})") if r[1] in have]


def _rows(
    old: sqlite3.Connection, new: sqlite3.Connection, table: str, carried: Carried
) -> Iterator[tuple[object, ...]]:
    """Every row of `table` the old database lets be read, in rowid order (a table without rowids:
    all or, when it fails, none); the rows that fail are counted in `carried.unreadable`."""
    names = _columns(old, new, table)
    if not names:
        return
    listed = ", ".join(f'"{name}"' for name in names)
    try:
        without_rowid = old.execute(
            "SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()[0]
        if without_rowid:
            try:
                rows = old.execute(f"SELECT {listed} FROM {table}").fetchall()
            except sqlite3.DatabaseError:
                _failed(carried)
                carried.unreadable += 1
                carried.notes.append(f"{table} could not be read")
                return
            yield from rows
            return
        low, high = old.execute(f"SELECT min(rowid), max(rowid) FROM {table}").fetchone()
    except sqlite3.DatabaseError:
        _failed(carried)
        carried.unreadable += 1
        carried.notes.append(f"{table} could not be read")
        return
    start, blind = low, 0
    while start is not None and start <= high:
        end = start + CHUNK - 1
        try:
            rows = old.execute(
                f"SELECT {listed} FROM {table} WHERE rowid BETWEEN ? AND ? ORDER BY rowid", (start, end)
            ).fetchall()
        except sqlite3.DatabaseError:
            _failed(carried)
            rows = []
            for rowid in range(start, end + 1):
                try:
                    rows += old.execute(f"SELECT {listed} FROM {table} WHERE rowid = ?", (rowid,)).fetchall()
                except sqlite3.DatabaseError:
                    carried.unreadable += 1
        yield from rows
        try:  # the next rowid there is: ids freed by a rewrite leave gaps
            start, blind = (
                old.execute(f"SELECT min(rowid) FROM {table} WHERE rowid > ?", (end,)).fetchone()[0],
                0,
            )
        except sqlite3.DatabaseError:
            start, blind = end + 1, blind + 1
            if blind > BLIND_CHUNKS:  # a damaged tree that cannot say where its rows go on
                carried.notes.append(f"{table} was read up to row {end}")
                return


def _failed(carried: Carried) -> None:
    """A read failed: a database taken for sound is carried again as a damaged one."""
    if not carried.damaged:
        raise _FoundDamage


def _chunks(rows: Iterator[tuple[object, ...]], size: int) -> Iterator[list[tuple[object, ...]]]:
    chunk: list[tuple[object, ...]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _insert(new: sqlite3.Connection, table: str, names: list[str], rows: list[tuple[object, ...]]) -> None:
    if not rows:
        return
    listed = ", ".join(f'"{name}"' for name in names)
    marks = ", ".join("?" * len(names))
    new.executemany(f"INSERT OR IGNORE INTO {table} ({listed}) VALUES ({marks})", rows)
