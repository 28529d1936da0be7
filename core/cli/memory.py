"""The memory commands: `tag`, `note`, `bookmark` and `memory list|show|add|edit|history|resolve|
relate|export|import` (core.insight.memory keeps what they write). Kept apart from core.cli, which registers
them (`add_parsers`) and runs them (`COMMANDS`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store.memory_tables import ENTRY_KINDS, RELATIONS, SCOPES, MemoryRefused
from .common import Command, open_reading

# core.insight.memory is imported where it is used: every command imports this module to list its
# commands, and its import (uuid, hashlib, six dataclasses) was 8 ms of each `threadloom` run
if TYPE_CHECKING:
    from ..insight import memory


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        metavar="PATH",
        type=Path,
        default=argparse.SUPPRESS,
        help="database file (default: $THREADLOOM_DB or the platform user data dir)",
    )


TARGET_HELP = (
    "what to mark: a session (id, prefix or its agent's id), SESSION#12 for its message #12 (as `show` "
    "numbers them), or a knowledge entry (k-…)"
)


def _place_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--turn", type=int, metavar="N", help="the turn of the session's message #N")
    p.add_argument("--message", type=int, metavar="N", help="the session's message #N")


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "tag",
        help="tag a session, a turn, a message or a memory entry (`tag:NAME` in search finds them)",
        description="Put tags on a session (or one of its turns or messages, or a knowledge entry); "
        "without TAG, list the target's tags; without TARGET, every tag with how many things carry it. "
        "Kept in the archive as your own data: `ingest --rebuild` keeps it.",
    )
    add_db_option(p)
    p.add_argument("target", nargs="?", help=TARGET_HELP)
    p.add_argument("tags", nargs="*", metavar="TAG", help="a word or two: stored lower case")
    _place_args(p)
    p.add_argument("--remove", action="store_true", help="take these tags off (all of them without TAG)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser(
        "note",
        help="write a note on a session, a turn or a message (`note:WORD` in search finds them)",
        description="Write a note on a session (or one of its turns or messages, or an entry); without "
        "TEXT, list the target's notes; without TARGET, the newest notes. Kept by `ingest --rebuild`.",
    )
    add_db_option(p)
    p.add_argument("target", nargs="?", help=TARGET_HELP)
    p.add_argument("text", nargs="*", help="the note")
    _place_args(p)
    p.add_argument("--remove", action="store_true", help="take the target's notes off")
    p.add_argument("--limit", type=int, default=50, metavar="N", help="list at most N notes (default 50)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser(
        "bookmark",
        help="bookmark a session, a turn or a message; alone, list the bookmarks",
        description="Bookmark a place to come back to (B in the TUI lists them); alone, list them.",
    )
    add_db_option(p)
    p.add_argument("target", nargs="?", help=TARGET_HELP)
    _place_args(p)
    p.add_argument("--label", default="", help="a few words saying why")
    p.add_argument("--remove", action="store_true", help="take the bookmark off")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser(
        "memory",
        help="knowledge entries (decisions, facts, guidelines, references) scoped global, project or session",
        description="Knowledge people and agents keep: entries of a kind (decision, fact, guideline, "
        "reference) in a scope (global, a project, a session), each change a new version with its reason "
        "and author (never overwritten). Read for a session, the entries inherit down the scopes: the "
        "session's, its project's (and the folders above it), the global ones; of one title the more "
        "specific wins. Two writers changing one entry within seconds are flagged a conflict, listed "
        "until resolved. Kept by `ingest --rebuild`; export and import move it as JSON.",
        epilog="examples:\n"
        "  threadloom memory add --kind decision --project /srv/api --title 'Time zones' "
        "'Store UTC; convert at the edge'\n"
        "  threadloom memory list --recall --session 3f2a\n"
        "  threadloom memory edit k-1a2b3c 'Store UTC, ISO 8601' --reason 'format agreed'\n"
        "  threadloom memory export -o memory.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(p)
    msub = p.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    q = msub.add_parser("list", help="entries, by scope (or those that hold for a session: --recall)")
    add_db_option(q)
    q.add_argument("--scope", choices=SCOPES)
    q.add_argument("--project", metavar="PATH", help="a project's path (its entries; with --recall, for it)")
    q.add_argument("--session", metavar="S", help="a session (its entries; with --recall, for it)")
    q.add_argument("--kind", choices=ENTRY_KINDS)
    q.add_argument("--grep", metavar="TEXT", help="title or content holds TEXT")
    q.add_argument(
        "--recall", action="store_true", help="what holds for --session / --project: inherited, specific wins"
    )
    q.add_argument("--conflicts", action="store_true", help="the open conflicts")
    q.add_argument("--json", action="store_true", help="print JSON")

    q = msub.add_parser("show", help="an entry: its content, tags and relations")
    add_db_option(q)
    q.add_argument("entry", help="an entry id (k-…) or a unique prefix")
    q.add_argument("--json", action="store_true", help="print JSON")

    q = msub.add_parser("add", help="a new entry (a new version of one of that title in that scope)")
    add_db_option(q)
    q.add_argument("content", nargs="+", help="what it says")
    q.add_argument("--kind", choices=ENTRY_KINDS, required=True)
    q.add_argument("--title", required=True, help="a few words naming it (unique in its scope)")
    q.add_argument("--scope", choices=SCOPES, help="default: session with --session, project with "
                   "--project, else global")  # fmt: skip
    q.add_argument(
        "--project", metavar="PATH", help="the project it holds for: its path, its name or part of its path"
    )
    q.add_argument("--session", metavar="S", help="the session it holds for")
    q.add_argument("--reason", help="why it is written")
    q.add_argument("--json", action="store_true", help="print JSON")

    q = msub.add_parser("edit", help="a new version of an entry (the earlier ones stay)")
    add_db_option(q)
    q.add_argument("entry", help="an entry id (k-…) or a unique prefix")
    q.add_argument("content", nargs="+", help="what it says now")
    q.add_argument("--reason", help="why it changed")
    q.add_argument("--base", type=int, metavar="V", help="the version you read: a newer one makes a conflict")
    q.add_argument("--json", action="store_true", help="print JSON")

    q = msub.add_parser("history", help="every version of an entry, oldest first")
    add_db_option(q)
    q.add_argument("entry", help="an entry id (k-…) or a unique prefix")
    q.add_argument("--json", action="store_true", help="print JSON")

    q = msub.add_parser("resolve", help="close an entry's conflicts: its latest version stands")
    add_db_option(q)
    q.add_argument("entry", help="an entry id (k-…) or a unique prefix")
    q.add_argument("--note", default="kept the latest version", help="how it was settled")
    q.add_argument("--json", action="store_true", help="print JSON")

    q = msub.add_parser("relate", help="relate sessions, turns, messages and entries")
    add_db_option(q)
    q.add_argument("source", help=TARGET_HELP)
    q.add_argument("relation", choices=RELATIONS)
    q.add_argument("target", help=TARGET_HELP)
    q.add_argument("--json", action="store_true", help="print JSON")

    q = msub.add_parser("export", help="everything in memory as JSON")
    add_db_option(q)
    q.add_argument("-o", "--output", type=Path, metavar="PATH", help="write to PATH (default: stdout)")

    q = msub.add_parser("import", help="merge an export in (what is here is kept)")
    add_db_option(q)
    q.add_argument("file", type=Path, help="a file `memory export` wrote (- for stdin)")
    q.add_argument("--json", action="store_true", help="print what was added as JSON")


# ---------------------------------------------------------------------- running


def _db_path(args: argparse.Namespace) -> Path:
    from ..store import db

    return Path(getattr(args, "db", None) or db.default_db_path())


def say_waiting(text: str) -> None:
    print(f"threadloom: {text}", file=sys.stderr, flush=True)


def _reader(args: argparse.Namespace) -> Any:

    if not hasattr(args, "db"):
        args.db = None
    return open_reading(args)


def _emit(args: argparse.Namespace, data: Any, text: str | list[str]) -> int:
    if args.json:
        print(json.dumps(data, ensure_ascii=False))
    else:
        for line in [text] if isinstance(text, str) else text:
            print(line)
    return 0


def _target(conn: Any, args: argparse.Namespace, ref: str | None = None) -> memory.Target:
    from ..insight import memory

    return memory.parse_target(
        conn, ref or args.target, turn=getattr(args, "turn", None), message=getattr(args, "message", None)
    )


def cmd_tag(args: argparse.Namespace) -> int:
    from ..insight import memory

    if args.target is None:
        conn = _reader(args)
        counts = memory.tag_counts(conn)
        if not counts and not args.json:
            print("no tags yet: `threadloom tag SESSION NAME` puts one on", file=sys.stderr)
        return _emit(args, [{"tag": t, "count": n} for t, n in counts], [f"{n:>5}  {t}" for t, n in counts])
    if not args.tags and not args.remove:
        conn = _reader(args)
        target = _target(conn, args)
        tags = [m.value for m in memory.marks(conn, kind="tag", target=target)]
        return _emit(args, {"target": target.id, "tags": sorted(tags)}, " ".join(sorted(tags)) or "(no tags)")
    with memory.writing(_db_path(args), on_wait=say_waiting) as conn:
        target = _target(conn, args)
        if args.remove:
            if args.tags:
                changed = sum(memory.remove_mark(conn, "tag", target, t) for t in args.tags)
            else:
                changed = memory.remove_mark(conn, "tag", target)
        else:
            changed = sum(memory.add_mark(conn, "tag", target, t, memory.person()) for t in args.tags)
        tags = sorted(m.value for m in memory.marks(conn, kind="tag", target=target))
    return _emit(
        args,
        {"target": target.id, "tags": tags, "changed": changed},
        f"{target.id}: {' '.join(tags) or '(no tags)'}",
    )


def cmd_note(args: argparse.Namespace) -> int:
    from ..insight import memory

    if args.target is None or (not args.text and not args.remove):
        conn = _reader(args)
        target = _target(conn, args) if args.target else None
        found = memory.marks(conn, kind="note", target=target, limit=args.limit)
        if not found and not args.json:
            print("no notes yet: `threadloom note SESSION TEXT` writes one", file=sys.stderr)
        return _emit(
            args,
            [m.as_dict() for m in found],
            [f"{m.target_id}  {m.author}  {m.value}" for m in found],
        )
    with memory.writing(_db_path(args), on_wait=say_waiting) as conn:
        target = _target(conn, args)
        if args.remove:
            changed = memory.remove_mark(conn, "note", target)
        else:
            changed = int(memory.add_mark(conn, "note", target, " ".join(args.text), memory.person()))
        notes = [m.as_dict() for m in memory.marks(conn, kind="note", target=target)]
    return _emit(
        args,
        {"target": target.id, "notes": notes, "changed": changed},
        f"{target.id}: {len(notes)} note{'s' * (len(notes) != 1)}",
    )


def cmd_bookmark(args: argparse.Namespace) -> int:
    from ..insight import memory

    if args.target is None:
        conn = _reader(args)
        found = memory.marks(conn, kind="bookmark")
        if not found and not args.json:
            print("no bookmarks yet: `threadloom bookmark SESSION` adds one", file=sys.stderr)
        return _emit(
            args,
            [m.as_dict() for m in found],
            [f"{m.target_id}  {m.value}".rstrip() for m in found],
        )
    with memory.writing(_db_path(args), on_wait=say_waiting) as conn:
        target = _target(conn, args)
        if args.remove:
            changed = memory.remove_mark(conn, "bookmark", target)
        else:
            memory.remove_mark(conn, "bookmark", target)  # one bookmark a place: its label replaced
            changed = int(memory.add_mark(conn, "bookmark", target, args.label, memory.person()))
    verb = "removed" if args.remove else "bookmarked"
    return _emit(
        args, {"target": target.id, "bookmarked": not args.remove, "changed": changed}, f"{verb}: {target.id}"
    )


def _entry_lines(entry: memory.Entry) -> list[str]:
    from ..base.text import count_of, human_when

    current = entry.current
    lines = [
        f"{entry.id}  {entry.kind}  {entry.scope_label}",
        f"  {entry.title}",
        f"  v{current.version if current else 0} by {current.author if current else entry.created_by}, "
        f"{human_when(current.created_at if current else entry.created_at)}"
        + (f"  ⚠ {count_of(entry.open_conflicts, 'open conflict')}" if entry.open_conflicts else ""),
    ]
    if entry.tags:
        lines.append("  tags: " + " ".join(entry.tags))
    return lines


def cmd_memory(args: argparse.Namespace) -> int:
    action = args.memory_command
    if action in ("list", "show", "history", "export"):
        conn = _reader(args)
        return {"list": _list, "show": _show, "history": _history, "export": _export}[action](args, conn)
    return {"add": _add, "edit": _edit, "resolve": _resolve, "relate": _relate, "import": _import}[action](
        args
    )


def _list(args: argparse.Namespace, conn: Any) -> int:
    from ..insight import memory

    if args.conflicts:
        found_c = memory.conflicts(conn)
        return _emit(
            args,
            [c.as_dict() for c in found_c],
            [
                f"{c.entry_id}  v{c.version_a} ({c.author_a}) / v{c.version_b} ({c.author_b})  {c.title}"
                for c in found_c
            ]
            or ["no open conflicts"],
        )
    session = None
    if args.session:
        from ..read.query import resolve_session

        session = resolve_session(conn, args.session).id
    if args.recall:
        found = memory.recall(conn, project=args.project, session=session, kind=args.kind, text=args.grep)
    else:
        scope = args.scope or ("session" if session else "project" if args.project else None)
        key = session if scope == "session" else args.project
        found = memory.list_entries(conn, scope=scope, scope_key=key, kind=args.kind, text=args.grep)
    if not found and not args.json:
        print("no memory entries match: `threadloom memory add` writes one", file=sys.stderr)
    lines: list[str] = []
    for entry in found:
        lines += _entry_lines(entry)
    return _emit(args, [e.as_dict() for e in found], lines)


def _show(args: argparse.Namespace, conn: Any) -> int:
    from ..insight import memory

    entry = memory.resolve_entry(conn, args.entry)
    related = memory.relations(conn, memory.Target("entry", entry.id))
    data = {**entry.as_dict(), "relations": [r.as_dict() for r in related]}
    lines = _entry_lines(entry) + ["", entry.current.content if entry.current else ""]
    lines += [f"  {r.source_id} {r.relation} {r.target_id}" for r in related]
    return _emit(args, data, lines)


def _history(args: argparse.Namespace, conn: Any) -> int:
    from ..base.text import human_when
    from ..insight import memory

    entry, versions = memory.history(conn, args.entry)
    lines = [f"{entry.id}  {entry.title}  ({entry.scope_label})"]
    for v in versions:
        flag = "  ⚠ conflict" if v.conflict else ""
        lines.append(f"\nv{v.version}  {v.author}  {human_when(v.created_at)}{flag}")
        if v.reason:
            lines.append(f"  why: {v.reason}")
        lines += ["  " + line for line in v.content.splitlines()]
    return _emit(args, {**entry.as_dict(), "history": [v.as_dict() for v in versions]}, lines)


def _export(args: argparse.Namespace, conn: Any) -> int:
    from ..insight import memory

    text = json.dumps(memory.export_memory(conn), ensure_ascii=False, indent=1)
    if args.output is None:
        print(text)
        return 0
    args.output.write_text(text + "\n", encoding="utf-8")
    print(f"threadloom: wrote {args.output}", file=sys.stderr)
    return 0


def _add(args: argparse.Namespace) -> int:
    from ..insight import memory

    scope = args.scope or ("session" if args.session else "project" if args.project else "global")
    with memory.writing(_db_path(args), on_wait=say_waiting) as conn:
        key = args.project
        if scope == "session":
            from ..read.query import resolve_session

            if not args.session:
                raise MemoryRefused("a session entry needs --session")
            key = resolve_session(conn, args.session).id
        entry, new = memory.add_entry(
            conn,
            kind=args.kind,
            scope=scope,
            scope_key=key,
            title=args.title,
            content=" ".join(args.content),
            author=memory.person(),
            reason=args.reason,
        )
    said = (
        "added"
        if new
        else f"an entry of that title was there: version {entry.current.version if entry.current else 0} written"
    )
    return _emit(args, {**entry.as_dict(), "new": new}, [f"{said}: {entry.id}", *_entry_lines(entry)[1:]])


def _edit(args: argparse.Namespace) -> int:
    from ..insight import memory

    with memory.writing(_db_path(args), on_wait=say_waiting) as conn:
        entry = memory.edit_entry(
            conn, args.entry, content=" ".join(args.content), author=memory.person(), reason=args.reason,
            base_version=args.base,
        )  # fmt: skip
    lines = [f"{entry.id}: version {entry.current.version if entry.current else 0} written"]
    if entry.current and entry.current.conflict:
        lines.append(
            f"⚠ another writer changed it moments before (or after the version you read): both are kept; "
            f"`threadloom memory history {entry.id}` shows them, `memory resolve {entry.id}` closes it"
        )
    return _emit(args, entry.as_dict(), lines)


def _resolve(args: argparse.Namespace) -> int:
    from ..insight import memory

    with memory.writing(_db_path(args), on_wait=say_waiting) as conn:
        closed = memory.resolve_conflicts(conn, args.entry, author=memory.person(), resolution=args.note)
        entry = memory.resolve_entry(conn, args.entry)
    from ..base.text import count_of

    return _emit(
        args, {"id": entry.id, "resolved": closed}, f"{entry.id}: {count_of(closed, 'conflict')} resolved"
    )


def _relate(args: argparse.Namespace) -> int:
    from ..insight import memory

    with memory.writing(_db_path(args), on_wait=say_waiting) as conn:
        source = memory.parse_target(conn, args.source)
        target = memory.parse_target(conn, args.target)
        new = memory.relate(conn, source, args.relation, target, memory.person())
    said = f"{source.id} {args.relation} {target.id}" + ("" if new else " (already)")
    return _emit(
        args, {"source": source.id, "relation": args.relation, "target": target.id, "new": new}, said
    )


def _import(args: argparse.Namespace) -> int:
    from ..insight import memory

    try:
        text = sys.stdin.read() if str(args.file) == "-" else args.file.read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MemoryRefused(f"cannot read {args.file}: {exc}") from exc
    with memory.writing(_db_path(args), on_wait=say_waiting) as conn:
        added = memory.import_memory(conn, data)
    return _emit(args, added, "added: " + ", ".join(f"{n} {table}" for table, n in added.items()))


COMMANDS = (
    Command("tag", cmd_tag, prints_archive=True),
    Command("note", cmd_note, prints_archive=True),
    Command("bookmark", cmd_bookmark, prints_archive=True),
    Command("memory", cmd_memory, prints_archive=True),
)
