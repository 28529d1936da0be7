"""`threadloom fork`: write a fork of a conversation at a message; print the command to continue it; `threadloom resume`: print the command that resumes a session (or forks it at its end)."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..actions.fork import ForkPlan

from .common import Command, add_db_option, fail, open_reading, open_writing, say_waiting


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "fork",
        help="write a fork of a conversation at a message; print the command to continue it",
        description="Fork a conversation at a message. For Claude Code threadloom writes a new "
        "transcript that keeps everything up to and including that message (its whole API message, "
        "with the results of its tool calls) and no more, into Claude Code's own project folder for "
        "the session's folder ($CLAUDE_CONFIG_DIR/projects/<folder>, where `claude --resume` looks); "
        "for a Codex rollout, a new thread cut after the message's turn, in $CODEX_HOME/sessions. "
        "The source is never changed. Plain output is only the command, so `$(threadloom fork X)` "
        "works.",
    )
    add_db_option(p)
    p.add_argument("entry", help="an entry id or a message uuid (see `threadloom show SESSION --json`)")
    p.add_argument(
        "--before",
        action="store_true",
        help="ENTRY is a prompt: end the fork just before it (edit and resend, with --prompt)",
    )
    p.add_argument(
        "--prompt",
        metavar="TEXT",
        help="continue with this prompt (given for a prompt entry, it replaces that prompt: --before)",
    )
    p.add_argument(
        "--native",
        action="store_true",
        help="with --prompt: let Claude Code fork itself in print mode (costs one model turn)",
    )
    p.add_argument(
        "--restore",
        action="store_true",
        help="when the command needs the source where the agent looks and it is not there, write it "
        "back there from the archive first (never overwriting)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="write nothing: print the command, and say on stderr where the fork would be written and "
        "what it would hold (--json: the plan, with dry_run); the new session's id is chosen when the "
        "fork is written, so NEW-SESSION-ID stands for it",
    )
    p.add_argument("--copy", action="store_true", help="also copy the command to the clipboard")
    p.add_argument(
        "--json",
        action="store_true",
        help="print ok, command, new_session_id, path, source_session_id, fork_point, records, tool_calls, "
        "restore, notes, and changed_after: the files the conversation edited after the point (a refusal: "
        "ok false and its error)",
    )
    p.add_argument(
        "--undo-patch",
        metavar="PATH",
        type=Path,
        help="also write a patch (git apply) that takes the files edited after the point back to "
        "their state then, built from the records; it says which files it cannot take back",
    )

    p = sub.add_parser(
        "resume",
        help="print the command that resumes a session (or forks it at its end)",
        description="Print the command that resumes a session in its agent, run from the "
        "folder the session was started in (where the agent looks for it). When the transcript is "
        "not where the agent looks (read with --source from elsewhere, or deleted by the agent and "
        "kept in the archive), the command is refused unless --restore writes it back there first.",
    )
    add_db_option(p)
    p.add_argument("session", help="session id, unique prefix, or the agent's own id")
    p.add_argument("--fork-session", action="store_true", help="fork at the end instead of resuming in place")
    p.add_argument(
        "--restore",
        action="store_true",
        help="write the transcript (and its subagents' files) back where the agent looks, from the "
        "archive, before printing the command; nothing is overwritten",
    )
    p.add_argument("--copy", action="store_true", help="also copy the command to the clipboard")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the plan (ok, command, cwd, agent, notes) as JSON (a refusal: ok false and its error)",
    )


def _emit_plan(args: argparse.Namespace, plan: ForkPlan, written: bool) -> int:
    from ..base.text import printable

    undo, undo_said, undo_failed = (
        _fork_undo(args, plan) if getattr(args, "command", None) == "fork" else ({}, [], False)
    )
    if args.copy:
        from ..base.clipboard import copy

        how = copy(plan.command)
        print(
            f"copied to the {how}" if how else "no clipboard reachable; copy the command by hand",
            file=sys.stderr,
        )
    if args.json:
        data: dict[str, Any] = {"ok": not undo_failed, **plan.as_dict()}
        if undo_failed:
            data["error"] = printable(undo_said[0].removeprefix("threadloom: "))
        data["written"] = written
        if getattr(args, "dry_run", False):
            data["dry_run"] = True
        data.update(undo)
        print(json.dumps(data, ensure_ascii=False))
    else:
        print(plan.command)
        if written:
            print(f"wrote {plan.path}", file=sys.stderr)
        for note in plan.notes:
            print(f"note: {note}", file=sys.stderr)
        for line in undo_said:
            print(line, file=sys.stderr)
    return 1 if undo_failed else 0


def _refused(args: argparse.Namespace, why: object, code: int = 1) -> int:
    """Say a refusal on stderr and, with --json, as one object on stdout too (a script reading
    stdout got nothing): `ok` false, the `error`, and what was asked. Returns the exit code."""
    fail(why)
    if args.json:
        from ..base.text import printable

        print(json.dumps({"ok": False, "error": printable(str(why)), **_asked(args)}, ensure_ascii=False))
    return code


def _asked(args: argparse.Namespace) -> dict[str, Any]:
    """What a refused command was asked, as its --json names it."""
    if args.command == "resume":
        return {"action": "fork-end" if args.fork_session else "resume", "session": args.session}
    asked = {"action": "fork-prompt" if args.native else "fork", "entry": args.entry}
    return asked | ({"dry_run": True} if args.dry_run else {})


def cmd_fork_and_undo(args: argparse.Namespace) -> int:
    """`fork`, refusing an --undo-patch path that exists before anything is written."""
    if args.undo_patch is not None and os.path.lexists(args.undo_patch):
        return _refused(
            args,
            f"{args.undo_patch} already exists; the undo patch never overwrites a file (choose another path)",
        )
    return cmd_fork(args)


def _fork_undo(args: argparse.Namespace, plan: ForkPlan) -> tuple[dict[str, Any], list[str], bool]:
    """The files edited after the fork point, their undo patch written when asked. Returns the
    fields for --json, the lines to tell the user, and whether writing the patch failed."""
    from ..actions.fork import resolve_entry
    from ..actions.fork_session import apply_command, covered, write_patch
    from ..actions.undo import plan_undo
    from ..base.text import count_of, it_or_them, left_as_is, printable

    conn = open_reading(args)  # the undo patch only reads the archive
    undo = plan_undo(conn, plan.source_session_id, resolve_entry(conn, args.entry)[0])
    fields: dict[str, Any] = {
        "changed_after": [f.as_dict() for f in undo.files],
        "undo_patch": None,
        "undo_problems": undo.problems,
        "undo_notes": undo.notes,
    }
    target = args.undo_patch
    if target is not None and undo.patch and not args.dry_run:
        try:
            write_patch(undo, target)
        except OSError as exc:
            return fields, [f"threadloom: cannot write the undo patch {target}: {exc.strerror or exc}"], True
        fields["undo_patch"] = str(target)
    names = [printable(f.path) for f in undo.files]
    if target is None:
        if not names:
            return fields, [], False
        more = " …" if len(names) > 8 else ""
        return (
            fields,
            [
                f"note: {count_of(len(names), 'file')} edited after this point {left_as_is(len(names))}: "
                f"{', '.join(names[:8])}"
                f"{more} (--undo-patch FILE writes a patch that takes {it_or_them(len(names))} back)"
            ],
            False,
        )
    if not undo.patch:
        said = [
            "undo patch: not written, there is nothing the records can take back"
            + ("" if names else " (no file was edited after this point)")
        ]
    elif args.dry_run:
        said = [f"undo patch: would write {target}, covering {covered(undo)}"]
    else:
        apply = apply_command(undo, os.path.abspath(target))
        said = [f"undo patch: wrote {target}, covering {covered(undo)}; check and apply it with: {apply}"]
    said += [f"  not in the patch: {printable(problem)}" for problem in undo.problems]
    return fields, said + [f"note: {printable(note)}" for note in undo.notes], False


def _restored(args: argparse.Namespace, conn: sqlite3.Connection, plan: ForkPlan, command: str) -> bool:
    """Do the plan's restore step when --restore was given; otherwise refuse, saying why and how."""
    from ..actions.fork import restore_for

    step = plan.restore
    if step is None:
        return True
    if not args.restore:
        _refused(
            args,
            f"{step.question.split(' Restore it')[0]} The command would find nothing. "
            f"`threadloom {command} --restore` writes it back to {step.folder} first (nothing is overwritten), "
            "then prints the command.",
        )
        return False
    try:
        written = restore_for(conn, plan)
    except FileExistsError as exc:
        _refused(
            args,
            f"{exc.filename} appeared meanwhile; restore never overwrites, so nothing more was "
            "written. Run the command again.",
        )
        return False
    for f in written:
        print(f"restored {f.written_to}", file=sys.stderr)
    return True


def cmd_fork(args: argparse.Namespace) -> int:
    """The steps of the fork picker's Fork here and New prompt (`core.actions.fork_session`), in one go."""
    from ..actions.fork import ForkError, write_fork
    from ..actions.fork_session import next_step, plan_for
    from ..store.db import LedgerError

    try:
        conn = open_reading(args) if args.dry_run else open_writing(args)  # a dry run only reads
    except LedgerError as exc:  # no archive there, or one that cannot be used: said as any refusal
        return _refused(args, exc)
    again = f"fork {args.entry}" + (" --before" if args.before else "")
    action = "fork-prompt" if args.native else "fork"
    if args.native and not args.prompt:
        return _refused(args, "--native needs --prompt", 2)
    try:
        plan = plan_for(
            conn, action, args.entry, before=args.before, prompt=args.prompt, dry_run=args.dry_run
        )
        if args.native:
            if args.dry_run and not args.json:
                _say_dry_run(plan)
            elif not args.dry_run and not _restored(args, conn, plan, again + " --native --prompt …"):
                return 1
            return _emit_plan(args, plan, False)
        if args.dry_run:
            plan = _id_undecided(plan)
            if not args.json:
                _say_dry_run(plan)
            return _emit_plan(args, plan, False)
        if next_step(action, plan) != "write":
            # a command only: Codex and OpenCode copy the session themselves, Gemini's copy is written
            if not _restored(args, conn, plan, again):
                return 1
            return _emit_plan(args, plan, False)
        path = write_fork(plan)
    except ForkError as exc:  # it may quote the log (an id that holds an escape sequence): drawn, not printed
        return _refused(args, exc)
    try:
        _archive_fork(conn, plan, path)
    except LedgerError as exc:  # the fork is written: it is not refused, only not archived yet
        fail(f"the fork is written, but the archive could not take it in now ({exc}); the next ingest will")
    return _emit_plan(args, plan, True)


def _archive_fork(conn: sqlite3.Connection, plan: ForkPlan, path: Path) -> None:
    """The fork written at `path` ingested (shown in the tree at once) and remembered as forked
    from its source (core.insight.memory's relations)."""
    from ..ingest.update import Listener, update
    from ..insight.memory import record_fork
    from ..store.writer_lock import database_file, writer_lock

    db_path = database_file(conn)
    if db_path is not None:
        update(
            Path(db_path),
            [path],
            include_defaults=False,
            remember=False,
            listener=Listener(waiting=say_waiting),
        )
    if plan.new_session_id:
        with writer_lock(conn, on_wait=say_waiting):
            record_fork(conn, plan.new_session_id, plan.source_session_id)


NEW_ID = "NEW-SESSION-ID"  # what a dry run shows for the new session's id (inert in a shell)


def _id_undecided(plan: ForkPlan) -> ForkPlan:
    """A dry run's plan with the new session's id shown as not chosen yet: the plan draws one at
    random, and the real fork draws another, so the one printed was never the fork's."""
    if not plan.new_session_id:
        return plan
    new = plan.new_session_id
    return replace(
        plan,
        command=plan.command.replace(new, NEW_ID),
        path=plan.path.replace(new, NEW_ID) if plan.path else None,
        new_session_id=None,
        notes=[
            *(note.replace(new, NEW_ID) for note in plan.notes),
            f"The new session's id is chosen when the fork is written: {NEW_ID} stands for it here.",
        ],
    )


def _say_dry_run(plan: ForkPlan) -> None:
    """What `fork --dry-run` would do, on stderr (the command alone goes to stdout): the file it
    would write and what that file would hold, or that only a command is made; a restore it needs."""
    from ..base.text import count_of, printable

    if plan.lines and plan.path:
        calls = f", {count_of(plan.tool_calls, 'tool call')} with {'its result' if plan.tool_calls == 1 else 'their results'}"
        title = f", titled “{printable(plan.title)}”" if plan.title else ""
        said = (
            f"dry run, nothing written: would write {printable(plan.path)} (a new file, mode 0600, never "
            f"over one): {count_of(plan.records, 'record')}{calls}"
            + (f", new session {plan.new_session_id}" if plan.new_session_id else "")
            + f"{title}; the source stays as it is"
        )
    elif plan.path:  # Gemini imports a copy the real plan writes to a temporary file
        said = f"dry run, nothing written: the command would import a new file {printable(plan.path)}"
    else:
        said = "dry run, nothing written: this fork is only a command; the agent makes the copy when it runs"
    print(f"threadloom: {said}", file=sys.stderr)
    if plan.restore is not None:
        print(
            f"threadloom: the command would find nothing until the transcript is restored to "
            f"{printable(plan.restore.folder)}: --restore writes it back first (nothing is overwritten)",
            file=sys.stderr,
        )


def cmd_resume(args: argparse.Namespace) -> int:
    """The fork picker's Resume and Fork at end (`core.actions.fork_session`), for a session named here."""
    from ..actions.fork import ForkError
    from ..actions.fork_session import plan_for
    from ..read.query import resolve_session
    from ..store.db import LedgerError

    try:
        conn = open_reading(args)  # resume only reads the archive (a --restore writes the agent's files)
        session = resolve_session(conn, args.session)
    except (LedgerError, LookupError) as exc:  # no archive there; no session, or several, match
        return _refused(args, exc.args[0] if exc.args else exc)
    try:
        plan = plan_for(conn, "fork-end" if args.fork_session else "resume", session_id=session.id)
    except ForkError as exc:  # it may quote the log (an id that holds an escape sequence): drawn, not printed
        return _refused(args, exc)
    again = f"resume {session.id}" + (" --fork-session" if args.fork_session else "")
    if not _restored(args, conn, plan, again):
        return 1
    return _emit_plan(args, plan, False)


COMMANDS = (
    Command("fork", cmd_fork_and_undo),
    Command("resume", cmd_resume),
)
