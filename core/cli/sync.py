"""`threadloom sync`: share the archive with other machines through a PostgreSQL hub."""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from .common import SYNC_HELP, Command, add_db_option, fail, open_writing, say_waiting


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "sync",
        help="share the archive with other machines through a PostgreSQL hub",
        description=SYNC_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    p.add_argument(
        "url",
        nargs="?",
        help="the hub: a libpq URL (postgresql://user@host/db) or `service=NAME`; remembered, without "
        "its password (kept in ~/.pgpass, $PGPASSWORD or a service file)",
    )
    p.add_argument("--init", action="store_true", help="create (or upgrade) the hub's schema and roles")
    p.add_argument(
        "--grant",
        metavar="ROLE",
        help="make an existing login role a member of the hub (with --reader: a reader); run by its owner",
    )
    p.add_argument("--reader", action="store_true", help="with --grant: the role reads, never writes")
    p.add_argument(
        "--forget",
        metavar="MACHINE",
        help="delete the records MACHINE pushed from the hub (run by its owner): what it pushed before "
        "--redact or --exclude; its next sync pushes again under its rules then",
    )
    p.add_argument(
        "--project",
        metavar="P",
        action="append",
        default=[],
        help="with --grant: a project the role may read (repeatable; default: every project)",
    )
    p.add_argument("--push-only", action="store_true", help="send what this machine has, take nothing")
    p.add_argument("--pull-only", action="store_true", help="take what other machines sent, send nothing")
    p.add_argument("--dry-run", action="store_true", help="say what would move; move nothing")
    p.add_argument(
        "--machine",
        metavar="NAME",
        help="this machine's name on the hub (remembered; default: the host name); one archive per name",
    )
    p.add_argument(
        "--take-over",
        action="store_true",
        help="sync under a machine name another archive synced as (this one takes its place, a new "
        "laptop say): that archive is refused from then on. A copy of the same archive needs none",
    )
    p.add_argument(
        "--share",
        metavar="RULE",
        action="append",
        default=[],
        help="share `all`, `agent:NAME` or `project:PATH` (remembered; repeatable); the first sync needs one",
    )
    p.add_argument(
        "--exclude",
        metavar="RULE",
        action="append",
        default=[],
        help="never share what RULE takes, though a --share takes it (remembered; repeatable)",
    )
    p.add_argument(
        "--redact",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="mask secrets in what is pushed, as `export --redact` does (remembered); a masked record "
        "is marked so on the hub",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object with what moved")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress")


def cmd_sync(args: argparse.Namespace) -> int:
    from ..ingest import sync
    from ..store import db

    try:
        if args.init or args.grant or args.forget:
            if not args.url:
                raise sync.SyncError("give the hub's URL (or service=NAME)")
            if args.forget:
                gone = sync.forget(args.url, args.forget)
                if args.json:
                    print(json.dumps(gone))
                else:
                    print(
                        f"hub {sync.safe_url(args.url)}: forgot {args.forget}'s {gone['records']} records of "
                        f"{gone['sources']} files; its next sync pushes them again under its rules then. "
                        "Archives that pulled them keep their copies"
                    )
            if args.init:
                done = sync.init_hub(args.url)
                if args.json:
                    print(json.dumps(done.__dict__))
                else:
                    print(
                        f"hub {done.hub}: schema version {done.version} {'created' if done.created else 'up to date'}"
                    )
                    if done.member_role:
                        print(f"  roles: {done.member_role} (members), {done.reader_role} (readers)")
                    if done.note:
                        print(f"  note: {done.note}")
            if args.grant:
                for line in sync.grant(
                    args.url, args.grant, reader=args.reader, projects=args.project or ["*"]
                ):
                    print(f"  granted: {line}")
            return 0
        if args.push_only and args.pull_only:
            raise sync.SyncError("--push-only and --pull-only together would move nothing")
        for rule in [*args.share, *args.exclude]:
            sync.check_rule(rule)
        if args.machine:
            sync.check_machine(args.machine)
        db_path = Path(args.db or db.default_db_path())
        with writer_lock_for(db_path):
            conn = open_writing(args)
            try:
                return _sync(args, conn)
            finally:
                conn.close()
    except sync.SyncError as exc:
        fail(str(exc))
        return 1


@contextlib.contextmanager
def _sync_progress() -> Iterator[Callable[[Any], None]]:
    """A progress bar on stderr for a sync: files pushed, then layouts pulled, with the file's name."""
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ..base.text import printable

    with Progress(
        TextColumn("[bold]{task.fields[phase]}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("[dim]{task.fields[name]}"),
        transient=True,
    ) as bar:
        task = bar.add_task("sync", total=None, phase="sync", name="")

        def on_progress(p: Any) -> None:
            # a name from the hub is anyone's: shown as text, never as markup or a terminal command
            name = escape(printable(p.what.rsplit("/", 1)[-1][:40]))
            bar.update(task, total=p.total or 1, completed=p.done, phase=p.phase, name=name)

        yield on_progress


def writer_lock_for(db_path: Path) -> Any:
    from ..store.writer_lock import writer_lock

    return writer_lock(db_path, on_wait=say_waiting)


def _sync(args: argparse.Namespace, conn: sqlite3.Connection) -> int:
    from ..ingest import sync
    from ..store.db import MACHINE_KEY
    from ..store.sql import get_meta

    url = args.url or get_meta(conn, sync.URL_KEY)
    if not url:
        raise sync.SyncError(
            "no hub yet: `threadloom sync URL --share RULE` (the hub's owner runs --init first)"
        )
    changed = bool(args.share or args.exclude or args.redact is not None)
    sharing = sync.apply_rules(sync.load_sharing(conn), args.share, args.exclude, args.redact)
    push = not args.pull_only
    if push and sharing is None:
        raise sync.SyncError(
            "nothing is shared yet, and no project leaves this machine until you say so: pass --share all, "
            "--share project:PATH or --share agent:NAME (remembered), or sync with --pull-only"
        )
    if (args.exclude or args.redact) and not args.dry_run and sync.pushed_before(conn):
        machine = args.machine or get_meta(conn, MACHINE_KEY) or sync.default_machine()
        print(
            "threadloom: what was pushed before stays on the hub as it was (nothing there is changed or "
            "deleted, and it is not pushed again masked: a masked copy would take nothing off the hub); "
            "--exclude and --redact apply to what is pushed from now on. To take it off, the hub's owner "
            f"runs `threadloom sync --forget {machine} URL`, and this machine's next sync pushes its files "
            "again under these rules; archives that pulled them keep their copies",
            file=sys.stderr,
        )
    show = not args.json and not args.quiet and sys.stderr.isatty()
    with contextlib.ExitStack() as stack:
        progress = stack.enter_context(_sync_progress()) if show else None
        report = sync.sync(
            conn,
            url,
            push=push,
            pull=not args.push_only,
            dry_run=args.dry_run,
            machine=args.machine,
            sharing=sharing,
            progress=progress,
            reached=partial(sync.remember, conn, url, sharing, sharing_changed=changed, done=False),
            take_over=args.take_over,
        )
    if not args.dry_run:
        sync.remember(conn, url, sharing, sharing_changed=changed)
        if args.url and sync.safe_url(args.url) != args.url:
            print(
                "threadloom: the password is not kept (the hub's URL is remembered without it); for the next "
                f"`threadloom sync`, {sync.password_help(args.url)}",
                file=sys.stderr,
            )
    if args.json:
        print(json.dumps(report.as_dict()))
        return 0
    verb = "would move" if args.dry_run else "moved"
    from ..base.text import count_of

    print(f"hub {report.hub} as {report.machine}: {verb} in {report.seconds:.2f} s")
    if push:
        masked = f", {report.redacted_records} masked" if report.redacted_records else ""
        print(
            f"  push: {count_of(report.pushed_records, 'record')} of {count_of(report.pushed_sources, 'file')} "
            f"({report.pushed_bytes / 1e6:.1f} MB{masked}); {count_of(report.not_shared, 'file')} not shared"
        )
    if not args.push_only:
        print(
            f"  pull: {count_of(report.pulled_records, 'record')} of {count_of(report.pulled_sources, 'file')} "
            f"({report.pulled_bytes / 1e6:.1f} MB), {count_of(report.sessions, 'session')} updated"
        )
    memory = [
        f"{label} {', '.join(count_of(n, what) for what, n in sorted(moved.items()))}"
        for label, moved in (("pushed", report.memory_pushed), ("pulled", report.memory_pulled))
        if moved
    ]
    if memory:
        print(f"  memory: {'; '.join(memory)}")
    if report.memory_conflicts:
        it = "it" if report.memory_conflicts == 1 else "them"
        print(
            f"  {count_of(report.memory_conflicts, 'memory conflict')} (an entry edited here and on another "
            f"machine at once): `threadloom memory list --conflicts` shows {it}, "
            "`threadloom memory resolve ENTRY` settles one"
        )
    from ..base.text import printable

    for why in report.refused[:20]:
        print(f"  refused from the hub: {printable(why)}")
    return 0


COMMANDS = (Command("sync", cmd_sync),)
