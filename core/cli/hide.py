"""`threadloom hide`: hide sessions or projects you are done with from the lists (not from the archive); `threadloom unhide`: hide sessions or projects you are done with from the lists (not from the archive)."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from .common import Command, add_db_option, fail, open_reading, say_waiting


def add_parsers(sub: Any) -> None:
    for name in ("hide", "unhide"):
        hide = name == "hide"
        p = sub.add_parser(
            name,
            help="hide sessions or projects you are done with from the lists (not from the archive)"
            if hide
            else "list hidden sessions or projects again",
            description="Hide sessions or projects from the lists (the TUI's projects and sessions, "
            "`threadloom sessions`); they stay in the archive: search, stats, `show` and the jump palette "
            "still find them, `sessions --hidden` and H in the TUI list them again, marked. Remembered "
            "in the database, kept by `ingest --rebuild`. Without SESSION or --project: what is hidden."
            if hide
            else "Show hidden sessions or projects in the lists again.",
        )
        add_db_option(p)
        p.add_argument("session", nargs="*", help="session id, unique prefix, or the agent's own id")
        p.add_argument(
            "--project",
            metavar="P",
            action="append",
            default=[],
            help="a project: its path, or its name or part of its path when that names one (repeatable)",
        )
        if not hide:
            p.add_argument("--all", action="store_true", help="every hidden session and project")
        p.add_argument("--json", action="store_true", help="print what changed (or is hidden) as JSON")


def cmd_hide(args: argparse.Namespace) -> int:
    """`hide` and `unhide`: sessions and projects out of the lists (or back), resolved as `show`
    resolves a session; `hide` alone says what is hidden."""
    from ..actions.hidden import PROJECT, SESSION, read_hidden, show_all, write_hidden
    from ..read.query import display_title, resolve_session, short_ids
    from ..store import db

    hide = args.command == "hide"
    conn = open_reading(args)
    shown = short_ids(conn)
    if hide and not args.session and not args.project:
        return _print_hidden(args, conn, read_hidden(conn), shown)
    if not hide and getattr(args, "all", False):
        path = Path(args.db or db.default_db_path())
        from ..store.writer_lock import writer_lock

        with writer_lock(path, on_wait=say_waiting):
            writer = db.connect(path)
            try:
                changed = show_all(writer)
            finally:
                writer.close()
        said = f"every hidden session and project is in the lists again ({changed})"
        print(json.dumps({"shown": changed}) if args.json else said)
        return 0
    sessions = [resolve_session(conn, ref) for ref in args.session]
    projects = [_resolve_project(conn, ref, read_hidden(conn)) for ref in args.project]
    if not sessions and not projects:
        fail("name a SESSION or a --project (or --all)")
        return 2
    path = Path(args.db or db.default_db_path())
    changed = 0
    if sessions:
        changed += write_hidden(path, SESSION, [s.id for s in sessions], hide, on_wait=say_waiting)
    if projects:
        changed += write_hidden(path, PROJECT, projects, hide, on_wait=say_waiting)
    if args.json:
        done = [{"kind": SESSION, "key": s.id, "title": display_title(s)} for s in sessions]
        done += [{"kind": PROJECT, "key": p, "title": p} for p in projects]
        print(json.dumps({"hidden" if hide else "shown": done, "changed": changed}, ensure_ascii=False))
        return 0
    verb = "hidden" if hide else "shown again"
    for s in sessions:
        ident = shown.get(s.id, s.id.split(":", 1)[-1])
        print(f"{verb}: session {ident}  {display_title(s)}")
    for p in projects:
        print(f"{verb}: project {p}")
    if hide:
        print("threadloom sessions --hidden lists them; threadloom unhide brings them back", file=sys.stderr)
    return 0


def _resolve_project(conn: sqlite3.Connection, ref: str, hidden: Any) -> str:
    """The project path `ref` names: a path (or a hidden project's key) as it is, else the one
    project whose name is `ref` or whose path holds it; LookupError with the candidates otherwise."""
    from ..read.browse import list_projects

    projects = list_projects(conn)
    paths = [p.path for p in projects]
    if ref in paths or ref in hidden.projects:
        return ref
    named = [p.path for p in projects if p.name == ref] or [p.path for p in projects if ref in p.path]
    if len(named) == 1:
        return named[0]
    if not named:
        raise LookupError(f"no project matches {ref!r}; `threadloom sessions` lists the projects' sessions")
    raise LookupError(f"{ref!r} names several projects: {', '.join(named[:5])}; give its whole path")


def _print_hidden(
    args: argparse.Namespace, conn: sqlite3.Connection, hidden: Any, shown: dict[str, str]
) -> int:
    from ..actions.hidden import PROJECT, SESSION
    from ..read.query import display_title, get_session

    items: list[dict[str, Any]] = []
    for sid in sorted(hidden.sessions):
        found = get_session(conn, sid)
        items.append({"kind": SESSION, "key": sid, "title": display_title(found) if found else ""})
    items += [{"kind": PROJECT, "key": p, "title": p} for p in sorted(hidden.projects)]
    if args.json:
        print(json.dumps(items, ensure_ascii=False))
        return 0
    if not items:
        print("nothing is hidden", file=sys.stderr)
        return 0
    for item in items:
        if item["kind"] == SESSION:
            sid = item["key"]
            print(
                f"session  {shown.get(sid, sid.split(':', 1)[-1])}  {item['title'] or '(no longer in the archive)'}"
            )
        else:
            print(f"project  {item['key']}")
    return 0


COMMANDS = (
    Command("hide", cmd_hide, prints_archive=True),
    Command("unhide", cmd_hide, prints_archive=True),
)
