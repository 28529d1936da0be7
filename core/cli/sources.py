"""`threadloom sources`: the locations checked on this machine and what was found."""

from __future__ import annotations

import argparse
import json
import os
import shlex
from pathlib import Path
from typing import Any

from .common import Command, absent_but_creatable, add_db_option, fail, open_reading, say_waiting


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "sources",
        help="the locations checked on this machine and what was found",
        description="Where threadloom looks for each agent's logs on this machine, whether "
        "each place exists, and where the database is; and the sessions an agent's own cleanup will "
        "delete soon that are not archived yet (Claude Code's cleanupPeriodDays, 30 days by default).",
    )
    add_db_option(p)
    p.add_argument("--json", action="store_true", help="print the locations as JSON")
    p.add_argument(
        "--forget",
        metavar="DIR",
        type=Path,
        action="append",
        default=[],
        help="stop looking in DIR, a folder remembered from --source (a typo, say); what was read "
        "from it stays in the archive (repeatable)",
    )
    p.add_argument(
        "--offline",
        action="store_true",
        help="do not ask the sync hub what waits there to be pulled (it is asked, for 5 s at most, otherwise)",
    )


def cmd_sources(args: argparse.Namespace) -> int:
    """Where the logs are looked for and what is there, also before the first ingest (when it
    is most useful): with no database yet none is made, and what only the archive knows (what was
    read, sync) is said as not archived yet."""
    from ..adapters import all_adapters
    from ..adapters.base import disk_name, shown_name
    from ..store import db
    from ..store.rows import fetch, values

    if args.forget:
        return _forget(args)
    path = Path(args.db or db.default_db_path())
    conn = None if str(path) != ":memory:" and absent_but_creatable(path) else open_reading(args)
    found = []
    for adapter in all_adapters():
        for root in adapter.default_roots():
            count = sum(1 for _ in adapter.discover(root)) if root.exists() else 0
            found.append({"agent": adapter.name, "path": str(root), "exists": root.exists(), "files": count})
    remembered = values(conn, "SELECT path FROM source_roots ORDER BY path") if conn is not None else []
    stats = (
        fetch(
            conn,
            # a file to be read whole (size -1: a rebuild's, a re-read's) counts what was read of it
            "SELECT agent, status, count(*) AS files, "
            "COALESCE(sum(CASE WHEN size >= 0 THEN size ELSE bytes_ingested END), 0) AS bytes "
            "FROM source_files GROUP BY agent, status",
        )
        if conn is not None
        else []
    )
    from ..ingest.pipeline import unclaimed as recorded_unclaimed

    unclaimed = recorded_unclaimed(conn) if conn is not None else []
    from dataclasses import asdict

    from ..actions.cleanup import cleanup_risk
    from ..read.side_files import side_file_counts

    side = side_file_counts(conn) if conn is not None else []
    risk = cleanup_risk(conn)  # with no archive: every session is not archived yet
    from ..ingest.sync import status as sync_status

    hub = sync_status(conn) if conn is not None else None
    if hub is not None and conn is not None:
        from ..ingest.sync import waiting_on_hub

        hub["waiting_on_hub"] = {"error": "not asked (--offline)"} if args.offline else waiting_on_hub(conn)
    if args.json:
        print(
            json.dumps(
                {
                    "database": str(path),
                    "database_exists": conn is not None,  # False: nothing archived yet
                    "default_locations": found,
                    "remembered_sources": [shown_name(r) for r in remembered],
                    "ingested": [dict(row) for row in stats],  # agent, status, files, bytes
                    "unclaimed": unclaimed,  # path, why: under a source, shaped like a log, read by none
                    # agent, what, files, bytes, without_session: what sessions keep beside their logs
                    "side_files": [asdict(kept) for kept in side],
                    # per agent with a cleanup of its own: its sessions it will delete, not archived yet
                    "cleanup": [risk.as_dict()] if risk is not None else [],
                    # the sync hub: hub, machine, who, last_sync_ms, sharing, waiting_files (to push),
                    # waiting_items (memory to push), waiting_on_hub (files, records, items to pull; or
                    # error), pulled
                    "sync": hub,
                }
            )
        )
        return 0
    from ..base.text import count_of, one_line_name, printable

    print(f"database: {one_line_name(str(path))}")
    if conn is None:
        where = f" --db {shlex.quote(str(path))}" if args.db else ""
        print(
            f"  not created yet: nothing is archived; `threadloom ingest{where}` reads the logs found below into it"
        )
    for f in found:
        files = f["files"]
        state = count_of(files, "file") if f["exists"] and isinstance(files, int) else "not present"
        print(f"  {f['agent']:<12} {one_line_name(str(f['path']))}  ({state})")
    for r in remembered:
        # a typo, or a drive not mounted now (a name that is not UTF-8 is stored with its bytes)
        forget = f"`threadloom sources --forget {shlex.quote(shown_name(r))}` if mistyped"  # taken as shown
        there = "" if os.path.exists(disk_name(r)) else f"  (not present; {one_line_name(forget)})"
        print(f"  {'--source':<12} {one_line_name(shown_name(r))}{there}")
    for row in stats:
        print(
            f"  ingested: {row['agent']} {row['status']}: {count_of(row['files'], 'file')}, {row['bytes'] / 1e6:.1f} MB"
        )
    for kept in side:
        loose = f", {kept.without_session} of no session in the archive" if kept.without_session else ""
        print(
            f"  side files: {kept.agent} {kept.what}: {count_of(kept.files, 'file')}, {kept.bytes / 1e6:.1f} MB{loose}"
        )
    for file in unclaimed:
        print(f"  not read: {one_line_name(file['path'])}: {file['why']}")
    if hub is not None:
        from ..base.text import human_when

        print(
            f"  sync: hub {printable(hub['hub'])} as {hub['machine']}, last synced {human_when(hub['last_sync_ms'])}"
        )
        print(
            f"  sync: waiting to be pushed: {hub['waiting_files']} files, {hub['waiting_items']} memory items"
        )
        there = hub["waiting_on_hub"]
        if "error" in there:
            print(f"  sync: waiting on the hub: not known ({printable(there['error'])})")
        else:
            print(
                f"  sync: waiting on the hub to be pulled: {there['records']} records of {there['files']} files, "
                f"{there['items']} memory items"
            )
        for m in hub["pulled"]:
            print(f"  sync: from {m['machine']} ({m['who']}): {m['files']} files, {m['records']} records")
    if risk is not None and risk.at_risk:
        print(f"warning: {risk.message()}")
    elif risk is not None:
        print(
            f"  cleanup: {risk.rule}; of its {risk.sessions} sessions here, {risk.unarchived} "
            f"are not archived yet, none within {risk.margin_days} days of that"
        )
    return 0


def _forget(args: argparse.Namespace) -> int:
    """`sources --forget DIR`: the folders no longer looked in, as the database's one writer. No
    database is made for it: none means nothing is remembered."""
    from ..ingest.pipeline import forget_roots
    from ..store import db
    from ..store.writer_lock import writer_lock

    path = Path(args.db or db.default_db_path())
    if absent_but_creatable(path):
        forgotten: list[str] = []
        unknown = [str(folder) for folder in args.forget]
    else:
        with writer_lock(path, on_wait=say_waiting):
            conn = db.connect(path)
            try:
                forgotten, unknown = forget_roots(conn, args.forget)
            finally:
                conn.close()
    if args.json:
        print(json.dumps({"forgotten": forgotten, "not_remembered": unknown}))
    from ..base.text import one_line_name

    for folder in [] if args.json else forgotten:
        print(
            f"forgotten: {one_line_name(folder)} (not looked in again; what was read from it stays in the archive)"
        )
    for folder in unknown:
        fail(
            f"{one_line_name(folder)} is not a folder remembered from --source; `threadloom sources` lists them"
        )
    return 1 if unknown else 0


COMMANDS = (Command("sources", cmd_sources, reads=True),)
