"""`threadloom`: the TUI with no subcommand, and scriptable subcommands.

Imports are lazy on purpose: a no-change `threadloom ingest` must not pay for Textual, Rich or
SQLModel (see PERF.md, startup).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:  # the commands import what they use when they run: a launch loads only its own
    from ..actions.fork import ForkPlan
    from ..ingest.pipeline import IngestReport
    from ..ingest.pipeline import Progress as IngestProgress
    from ..read.query import SessionSummary
    from ..store.db import LedgerError

EPILOG = """\
examples:
  threadloom                          open the browser (ingests new sessions first)
  threadloom 3f2a                     open the browser on a session (as `threadloom open 3f2a`)
  threadloom --demo                   open on a bundled demo archive in a temporary database
  threadloom ingest --source ~/old-claude-projects
  threadloom sessions --project myapp --json | jq '.[0]'
  threadloom show 3f2a                show a session by id prefix
  threadloom restore 3f2a --to /tmp/recovered
  threadloom service install          keep archiving at each login, with threadloom closed
  threadloom hooks install --agent claude
                                      archive each Claude Code session as it ends

where things are:
  database   --db, else $THREADLOOM_DB, else the platform data dir (see `threadloom sources`)
  Claude     ~/.claude/projects ($CLAUDE_CONFIG_DIR honoured)
  more       any folder given with --source is remembered and rescanned on later runs
"""


def _db_arg(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    # Subcommands accept --db too; SUPPRESS keeps `threadloom --db X ingest` from being reset to None.
    parser.add_argument(
        "--db",
        metavar="PATH",
        type=Path,
        default=None if top else argparse.SUPPRESS,
        help="database file (default: $THREADLOOM_DB or the platform user data dir)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="threadloom",
        description="Find, read, understand and resume AI coding-agent sessions.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _db_arg(parser, top=True)
    parser.add_argument("--demo", action="store_true", help="open the TUI on the bundled demo archive")
    parser.add_argument(
        "--source",
        metavar="DIR",
        type=Path,
        action="append",
        default=[],
        help="also read agent logs under DIR (repeatable)",
    )
    parser.add_argument("--no-ingest", action="store_true", help="open the TUI without ingesting first")
    parser.add_argument("--version", action="version", version="threadloom 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "open",
        help="open the TUI on a session (also: threadloom SESSION)",
        description="Open the TUI with a session shown: its project's sessions listed, the session "
        "revealed in the tree and read in the message viewer, so a link from the command line, a "
        "script or another tool lands on it. `threadloom SESSION` does the same.",
    )
    _db_arg(p)
    p.add_argument("session", help="session id, unique prefix, or the agent's own id")
    # SUPPRESS: given before the session (`threadloom --no-ingest 3f2a`), the top level's stand
    p.add_argument(
        "--source",
        metavar="DIR",
        type=Path,
        action="append",
        default=argparse.SUPPRESS,
        help="also read agent logs under DIR (repeatable)",
    )
    p.add_argument(
        "--no-ingest", action="store_true", default=argparse.SUPPRESS, help="open without ingesting first"
    )

    p = sub.add_parser(
        "ingest",
        help="read new and changed session logs into the database",
        description="Read new and changed session logs. Unchanged files are skipped "
        "by size and mtime; grown files are read from where the last run stopped.",
    )
    _db_arg(p)
    p.add_argument(
        "--source",
        metavar="DIR",
        type=Path,
        action="append",
        default=[],
        help="a folder or file of agent logs to read besides the default locations (repeatable)",
    )
    p.add_argument(
        "--only", action="store_true", help="read only the --source folders, not the default locations"
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="start a fresh database (the old one is moved aside) and read every source again",
    )
    p.add_argument(
        "--no-index",
        action="store_true",
        help="after a first (bulk) load, leave the search index to be built later: by the TUI "
        "in the background, by `threadloom index`, or before the next search",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object with the counts")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")

    p = sub.add_parser(
        "index",
        help="finish the search index if a first load left it behind",
        description="Index for search every record not indexed yet. A first load of a "
        "big archive makes sessions browsable first and indexes afterwards; this "
        "catches up (it is resumable: an interrupted run continues where it stopped).",
    )
    _db_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON object: indexed, seconds")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")

    p = sub.add_parser(
        "sessions",
        help="list sessions, newest first",
        description="List sessions, newest first, each subagent under the session that started "
        "it (↳; ⚙ when that session is not listed). The id column (each id as long as it must be "
        "to name one session) is what `show`, `resume`, `export` and `restore` take; --json has "
        "every id whole, and lists the sessions in the order --sort gives, each with its "
        "parent_session_id.",
    )
    _db_arg(p)
    p.add_argument("--project", metavar="P", help="project name or path (substring)")
    p.add_argument("--agent", metavar="A", help="claude-code, codex, ...")
    p.add_argument("--machine", metavar="M", help="the sessions of that machine (synced through a hub)")
    p.add_argument("--who", metavar="W", help="the sessions pushed to the hub by that person (its role)")
    p.add_argument("--main", action="store_true", help="main sessions only (no subagents)")
    p.add_argument("--all", action="store_true", help="include sessions without messages")
    p.add_argument(
        "--hidden",
        action="store_true",
        help="include the sessions hidden from the lists (`threadloom hide`), marked ⊘ (--json: hidden)",
    )
    p.add_argument(
        "--sort",
        choices=("recent", "oldest", "messages", "tokens", "duration"),
        default="recent",
        help="recent (last activity, the default), oldest (started), or largest first",
    )
    p.add_argument(
        "--wide",
        action="store_true",
        help="every column, nothing cut: full id, agent, project, branch, started, last activity, "
        "messages, the four token counts, cost, duration, model, title, file",
    )
    p.add_argument(
        "--json", action="store_true", help="print a JSON list (every field, in the order --sort gives)"
    )

    p = sub.add_parser(
        "stats",
        help="tokens, cost, tool calls and changed lines by day, week, month, project, model, agent or session",
        description="Totals over the archive: sessions, messages, tokens by kind (input, output, cache "
        "write, cache read), cost in USD, tool calls and how many failed, and the lines edits added "
        "and removed, one row per period or per project, model, agent or session. Read from sums "
        "the ingest keeps, so it is quick on any archive. Days are local days (the TZ environment "
        "variable, else the system's zone); a week is named by its Monday. A cost of '?' (null in "
        "--json) is unknown: a model the price table does not know; '$1.23 + ?' is partly known.",
        epilog="D: 2026-03-01, today, yesterday, or an age: 7d, 2w, 3m (days, weeks, 30-day months)\n\n"
        "examples:\n  threadloom stats                      cost and tokens per day\n"
        "  threadloom stats --by month --since 3m\n  threadloom stats --by model --project api --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _db_arg(p)
    p.add_argument(
        "--by",
        choices=("day", "week", "month", "project", "model", "agent", "session", "machine"),
        default="day",
        help="one row per local day (default), week, month, project, model, agent, main session "
        "(its subagents counted in it) or machine (synced through a hub)",
    )
    p.add_argument("--since", metavar="D", help="from this local day on (included)")
    p.add_argument("--until", metavar="D", help="up to this local day (included)")
    p.add_argument("--project", metavar="P", help="project name or path (substring)")
    p.add_argument("--agent", metavar="A", help="claude-code, codex, ...")
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of rows: period, sessions, messages, api_messages, input_tokens, "
        "output_tokens, cache_creation_tokens, cache_read_tokens, cost_usd (null when unknown), "
        "unpriced_messages, tool_calls, failed_tool_calls, lines_added, lines_removed, label, key",
    )

    p = sub.add_parser(
        "show",
        help="print a session as readable text, subagents indented",
        description="Print a session as readable text: messages (their Markdown rendered), thinking "
        "and tool calls, with the conversations of its subagents indented under the calls that "
        "started them.",
    )
    _db_arg(p)
    p.add_argument("session", help="session id, unique prefix, or the agent's own id")
    p.add_argument("--json", action="store_true", help="print the session and its messages as JSON")
    p.add_argument("--no-subagents", action="store_true", help="do not expand subagent conversations")
    p.add_argument(
        "--as-of",
        metavar="TIME",
        help="the session as it was then, before a rewrite of its files that came later (an edit, a "
        "truncation): 2026-05-12T14:30, or a day (its end), today, yesterday, 7d",
    )
    p.add_argument(
        "--as-written",
        action="store_true",
        help="print what users and assistants wrote as they wrote it (Markdown source, not rendered)",
    )
    p.add_argument(
        "--plan",
        action="store_true",
        help="print the session's plan as its agent saved it (Claude Code's plans/<slug>.md, Gemini "
        "CLI's <session>/plans/), kept in the archive",
    )

    p = sub.add_parser(
        "search",
        help="search every conversation by words and by meaning",
        description="Search every conversation: by words (typos forgiven) and by meaning, fused (--mode).",
        epilog="query syntax:\n" + _search_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _db_arg(p)
    p.add_argument("query", nargs="+", help='words, "phrases" and filters (see below)')
    p.add_argument("--limit", type=int, default=20, metavar="N", help="show at most N hits (default 20)")
    p.add_argument("--json", action="store_true", help="print a JSON list of hits")
    p.add_argument(
        "--mode",
        choices=("hybrid", "words", "meaning"),
        default="hybrid",
        help="hybrid (default): the words and the turns nearest in meaning, fused; words: every word "
        "must match (typos forgiven); meaning: turns by meaning only, a sentence that shares no word still finds its turn",
    )

    p = sub.add_parser(
        "similar",
        help="the turns of other sessions most like a message or turn: have I solved this before?",
        description="The turns of other sessions nearest in meaning to the turn of ENTRY (an entry id "
        "or a message uuid from `show --json` or `search --json`, or a turn id).",
    )
    _db_arg(p)
    p.add_argument("entry", help="an entry id, a message uuid, or a turn id")
    p.add_argument("--limit", type=int, default=10, metavar="N", help="at most N turns (default 10)")
    p.add_argument("--json", action="store_true", help="print a JSON list")

    p = sub.add_parser(
        "context",
        help="the past turns most relevant to a task, packed within a token budget (for a new session)",
        description="The past turns most relevant to QUERY across sessions (hybrid search), each with "
        "its session, date, project, prompt, final answer, the files and commands that mattered and a "
        "reference `threadloom show` opens, packed within --budget tokens (counted as characters / 4). "
        'Paste it as a new session\'s first message, or pipe it: `claude "$(threadloom context ...)"`.',
    )
    _db_arg(p)
    p.add_argument("query", nargs="+", help="what the new session is about, in your words")
    p.add_argument(
        "--budget", type=int, default=4000, metavar="TOKENS", help="at most this many tokens (default 4000)"
    )
    p.add_argument("--project", metavar="P", help="only turns of projects whose name or path contains P")
    p.add_argument("--since", metavar="D", help="only turns from then on: 2026-03-01, yesterday, 30d")
    p.add_argument(
        "--json", action="store_true", help="print JSON (the turns, their tokens, what was left out)"
    )

    p = sub.add_parser(
        "signals",
        help="what went wrong in sessions: retry loops, refused calls, dead ends, ...",
        description="Without SESSION, the sessions with the most signals (ties: newest first), "
        "counted by kind; with SESSION, each of its signals with the records it points at (#seq, "
        "the tool call, an excerpt).",
        epilog="signals:\n" + _signals_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _db_arg(p)
    p.add_argument("session", nargs="?", help="session id, unique prefix, or the agent's own id")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="list at most N sessions (default 20)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser(
        "export",
        help="write a session as Markdown, a self-contained HTML page, or JSON",
        description="Write a session to hand to someone else: Markdown (tool calls in <details>), "
        "one HTML file that needs no network (collapsible tool calls, diffs, highlighted code, "
        "subagents nested under the call that started them), or JSON (normalized messages plus "
        "the raw records). A session that was rewound exports the branch the agent continued "
        "unless --branch picks another.",
    )
    _db_arg(p)
    p.add_argument("session", help="session id, unique prefix, or the agent's own id")
    p.add_argument("--format", "-f", choices=("md", "html", "json"), default="md", help="default: md")
    p.add_argument(
        "-o", "--output", metavar="PATH", type=Path, help="write to PATH (default: standard output)"
    )
    p.add_argument("--force", action="store_true", help="replace PATH if it exists")
    p.add_argument("--branch", type=int, metavar="N", help="the branch to export (numbers: see the error)")
    p.add_argument(
        "--redact",
        action="store_true",
        help="mask secrets (API keys and tokens of the common providers, bearer headers, private "
        "keys, .env-style assignments) and say how many were masked",
    )

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
    _db_arg(p)
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
        "what it would hold (--json: the plan, with dry_run)",
    )
    p.add_argument("--copy", action="store_true", help="also copy the command to the clipboard")
    p.add_argument(
        "--json",
        action="store_true",
        help="print command, new_session_id, path, source_session_id, fork_point, records, tool_calls, "
        "restore, notes, and changed_after: the files the conversation edited after the point",
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
    _db_arg(p)
    p.add_argument("session", help="session id or unique prefix")
    p.add_argument("--fork-session", action="store_true", help="fork at the end instead of resuming in place")
    p.add_argument(
        "--restore",
        action="store_true",
        help="write the transcript (and its subagents' files) back where the agent looks, from the "
        "archive, before printing the command; nothing is overwritten",
    )
    p.add_argument("--copy", action="store_true", help="also copy the command to the clipboard")
    p.add_argument("--json", action="store_true", help="print the plan (command, cwd, agent, notes) as JSON")

    p = sub.add_parser(
        "verify",
        help="re-read every source and report stored bytes that no longer match",
        description="Re-read every source file still on disk and compare it with the bytes "
        "stored for it: reports files that changed in place or shrank, and names each file that "
        "disappeared with the session read from it (its stored copy is what `restore` writes back).",
    )
    _db_arg(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print the report as JSON (`missing`: every vanished file's path and sessions)",
    )

    p = sub.add_parser(
        "restore",
        help="write a session's original files back, byte for byte",
        description="Write the files a session was read from back, byte for byte, from the "
        "database: for a log its agent deleted or rewrote. Nothing is ever overwritten: a file "
        "already in DIR with the same bytes is left as it is (restoring twice is fine); one with "
        "other bytes, or a symbolic link where a file or folder goes, stops the restore before "
        "anything is written. Files go under DIR only, never through a link out of it.",
    )
    _db_arg(p)
    p.add_argument("session", help="session id or unique prefix")
    p.add_argument(
        "--to",
        metavar="DIR",
        type=Path,
        required=True,
        help="folder to write into (created if missing; files are never overwritten)",
    )
    p.add_argument(
        "--as-of",
        metavar="TIME",
        help="each file as it was then, before a rewrite (an edit, a truncation) that came later: "
        "2026-05-12T14:30, or a day (its end), today, yesterday, 7d",
    )
    p.add_argument(
        "--from",
        dest="source",
        metavar="PATH",
        type=Path,
        help="the copy to restore when the session was read from two places holding the same file "
        "(the agent's folder and a --source backup): a copy's path, or the folder it was read from",
    )
    p.add_argument("--json", action="store_true", help="print the files written as JSON")

    p = sub.add_parser(
        "watch",
        help="keep archiving with the app closed: every agent's new and changed files as they are written",
        description=WATCH_HELP,
        epilog="log: <database name>-watch.log beside the database (rotated at 1 MB, two kept), e.g.\n"
        "  tail -f ~/.local/share/threadloom/threadloom-watch.log",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _db_arg(p)
    p.add_argument(
        "--poll",
        action="store_true",
        help="poll instead of using file system events (chosen by itself on a network file system)",
    )
    p.add_argument(
        "--poll-interval",
        metavar="SECONDS",
        type=_positive_seconds,
        default=5.0,
        help="how often polling looks (default: 5)",
    )
    p.add_argument(
        "--settle",
        metavar="SECONDS",
        type=_positive_seconds,
        default=1.0,
        help="read changes once their files have been quiet this long (default: 1; at most 5 s after "
        "the first change of a batch, however busy the agent)",
    )
    p.add_argument("--log", metavar="PATH", type=Path, help="log file (default: beside the database)")
    p.add_argument(
        "--quiet", "-q", action="store_true", help="log to the file only (a terminal also gets each line)"
    )
    p.add_argument(
        "--sync",
        action="store_true",
        help="after each ingest that read something, `threadloom sync` with the hub and sharing it remembers",
    )

    p = sub.add_parser(
        "service",
        help="start `threadloom watch` at login (a systemd user unit, a launchd agent)",
        description="Set `threadloom watch` up to start at each login and keep the archive current with "
        "threadloom closed: a systemd user unit on Linux (~/.config/systemd/user/threadloom-watch.service), "
        "a launchd agent on macOS (~/Library/LaunchAgents/org.threadloom.watch.plist). The service runs "
        "this python and this threadloom, with the variables that move the agents' folders "
        "(CLAUDE_CONFIG_DIR, CODEX_HOME, …) and the database as they are set now. Installing twice "
        "changes nothing; uninstall removes only a file install wrote; status says whether it runs.",
    )
    _db_arg(p)
    p.add_argument("action", choices=["install", "uninstall", "status"], help="what to do")
    p.add_argument(
        "--dry-run", action="store_true", help="print the file and the commands, write and run nothing"
    )
    p.add_argument(
        "--no-start", action="store_true", help="install: write the file, but do not enable or start it"
    )
    p.add_argument(
        "--manager",
        choices=["systemd", "launchd"],
        help="the service manager (default: this system's: systemd on Linux, launchd on macOS)",
    )
    p.add_argument("--json", action="store_true", help="status: print it as JSON")

    p = sub.add_parser(
        "hooks",
        help="archive each Claude Code session as it ends (a hook in its settings)",
        description="Add to Claude Code's settings ($CLAUDE_CONFIG_DIR/settings.json, else "
        "~/.claude/settings.json) a SessionEnd hook (and, with --stop, a Stop hook, after each reply) "
        "that archives the session then, even with threadloom closed. The file is backed up first and "
        "merged: no key is lost or moved; installing twice changes nothing; uninstall removes only "
        "threadloom's entries. A settings file that is not valid JSON is left as it is. `run` is what "
        "the hook runs: it reads Claude Code's JSON on stdin and archives the session in the background.",
    )
    _db_arg(p)
    p.add_argument("action", choices=["install", "uninstall", "status", "run"], help="what to do")
    p.add_argument(
        "--agent", metavar="AGENT", help="the agent whose settings get the hook (the command that runs it)"
    )
    p.add_argument(
        "--stop", action="store_true", help="install: also after each reply (Stop), not only at the end"
    )
    p.add_argument("--dry-run", action="store_true", help="say what would change, write nothing")
    p.add_argument("--json", action="store_true", help="status: print it as JSON")
    p.add_argument(
        "--transcript",
        metavar="PATH",
        type=Path,
        help="run: archive this session now and wait for it (instead of reading stdin and returning)",
    )

    p = sub.add_parser(
        "sources",
        help="the locations checked on this machine and what was found",
        description="Where threadloom looks for each agent's logs on this machine, whether "
        "each place exists, and where the database is; and the sessions an agent's own cleanup will "
        "delete soon that are not archived yet (Claude Code's cleanupPeriodDays, 30 days by default).",
    )
    _db_arg(p)
    p.add_argument("--json", action="store_true", help="print the locations as JSON")
    p.add_argument(
        "--offline",
        action="store_true",
        help="do not ask the sync hub what waits there to be pulled (it is asked, for 5 s at most, otherwise)",
    )

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
        _db_arg(p)
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

    p = sub.add_parser(
        "sync",
        help="share the archive with other machines through a PostgreSQL hub",
        description=SYNC_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _db_arg(p)
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
        help="this machine's name on the hub (remembered; default: the host name)",
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

    from . import memory as memory_cli

    memory_cli.add_parsers(sub)  # tag, note, bookmark, memory

    p = sub.add_parser(
        "mcp",
        help="answer agents over the Model Context Protocol (stdio); `mcp install --agent A` registers it",
        description="Run threadloom's MCP server on stdio, for an agent to start: search, recent sessions, a "
        "session's outline, one turn in full, a file's history, signals and stats, and memory (remember, "
        "recall, tag), every answer bounded (about 2,000 tokens, a cursor to page on). It reads the archive "
        "read-only, so it answers while an ingest runs. `threadloom mcp install --agent claude` (codex, "
        "gemini, cursor, opencode) registers it in that agent's own configuration.",
        epilog="examples:\n  threadloom mcp install --agent claude\n  threadloom mcp install --agent codex --dry-run"
        "\n  threadloom mcp uninstall --agent cursor",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _db_arg(p)
    actions = p.add_subparsers(dest="mcp_action", metavar="ACTION")
    for name in ("install", "uninstall"):
        q = actions.add_parser(
            name,
            help=f"{'register the server in' if name == 'install' else 'take the server out of'} an agent's configuration",
            description="Register `threadloom mcp` in the agent's own configuration file, merged with what it "
            "holds (its other keys and servers kept), idempotent."
            if name == "install"
            else "Take `threadloom mcp` out of the agent's configuration file, leaving the rest as it is.",
        )
        _db_arg(q)
        q.add_argument(
            "--agent",
            required=True,
            metavar="AGENT",
            help="the agent, by its command (`threadloom mcp install --agent x` lists them)",
        )
        q.add_argument("--dry-run", action="store_true", help="print the change (a diff) and write nothing")
        q.add_argument("--json", action="store_true", help="print what was done as JSON")
    return parser


SYNC_HELP = """\
Share this archive with your other machines (and a team) through a PostgreSQL database, the hub.

  threadloom sync --init URL              once, by the hub's owner: its tables, roles and policies
  threadloom sync --grant ROLE URL        make a login role a member (--reader: read only)
  threadloom sync URL --share all         the first sync: say what is shared (nothing is by default)
  threadloom sync                         then: push what is new here, pull what others pushed
  threadloom sync --forget MACHINE URL    by the owner: take MACHINE's records off (pushed again next)

Pushed: the exact records of each shared source file (never what was derived from them), each
stored once on the hub; a file appended to sends its new records only, one rewritten the records
the hub lacks. Pulled: other machines' records, placed here as the records of their files, so
sessions, stats, signals and search work on them as on this machine's own (`machine:NAME` and
`who:NAME` filter them). Sharing rules: `all`, `agent:NAME`, `project:PATH` (a project's path,
name or folder; wildcards), with --share and --exclude, remembered. Interrupted, a sync loses and
duplicates nothing: the next one goes on. Passwords are never stored or printed."""


WATCH_HELP = """\
Archive every agent's new and changed session files as they are written, until stopped
(SIGTERM, Ctrl+C): what `threadloom service install` starts at login.

The agents' folders are watched with the file system's events, or polled where there are none
(a network file system, the inotify limit reached): the log says which. A burst of appends is
read together once the file has been quiet a moment; an append reads just that file, a new or
removed file the folders that changed. The database is written only while an ingest runs, so
the TUI and `threadloom ingest` work beside it (each waits for the other's write). Idle, it
uses well under 1 % of a core. Stopped by a signal, it finishes the file it is writing."""


def _positive_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{value} s: give a number of seconds above 0, up to 3600")
    return seconds


def _signals_help() -> str:
    from ..base.text import SIGNALS

    return "\n".join(f"  {name:<18} {what}" for name, what in SIGNALS.items())


def _search_help() -> str:
    from ..base.text import SEARCH_HELP

    return "\n".join("  " + line for line in SEARCH_HELP.splitlines())


# the commands that only read the database: opened read-only (never written, its mode never
# changed), and what they print goes through `_PrintableStream`
READ_COMMANDS = frozenset(
    {
        "sessions",
        "stats",
        "show",
        "search",
        "verify",
        "restore",
        "sources",
        "export",
        "signals",
        "similar",
        "context",
    }
)


def main(argv: list[str] | None = None, *, run_tui: Callable[[argparse.Namespace], int] | None = None) -> int:
    """The command line. `run_tui` opens the app when no subcommand is given (or `open`); it is
    passed in by `tui.entry` (the console script) so that core never imports the TUI."""
    parser = build_parser()
    args = parser.parse_args(_session_opens(list(sys.argv[1:] if argv is None else argv), parser))
    from ..store.db import LedgerError
    from ..store.memory_tables import MemoryRefused

    streams = sys.stdout, sys.stderr
    reads = args.command in READ_COMMANDS
    if reads:
        sys.stdout, sys.stderr = _PrintableStream(sys.stdout), _PrintableStream(sys.stderr)
    try:
        if args.command is None:
            return (run_tui or _no_tui)(args)
        if args.command == "open":
            return _open_in_tui(args, run_tui or _no_tui)
        handler = {
            "ingest": cmd_ingest,
            "sessions": cmd_sessions,
            "stats": cmd_stats,
            "show": cmd_show,
            "export": cmd_export,
            "verify": cmd_verify,
            "restore": cmd_restore,
            "sources": cmd_sources,
            "search": cmd_search,
            "similar": cmd_similar,
            "context": cmd_context,
            "fork": cmd_fork_and_undo,
            "resume": cmd_resume,
            "index": cmd_index,
            "signals": cmd_signals,
            "watch": cmd_watch,
            "service": cmd_service,
            "hooks": cmd_hooks,
            "mcp": cmd_mcp,
            "hide": cmd_hide,
            "unhide": cmd_hide,
            "sync": cmd_sync,
            **_memory_handlers(),
        }[args.command]
        return handler(args)
    except (LedgerError, MemoryRefused) as exc:
        _fail(exc)
        return 1
    except sqlite3.DatabaseError as exc:  # locked, damaged or full while working
        _fail(_explain(args, exc))
        return 1
    except UnicodeDecodeError as exc:
        if not reads:  # ingest decodes the agents' files: not the database's fault
            raise
        _fail(_explain(args, exc))  # text read back from the database that is no longer UTF-8
        return 1
    except LookupError as exc:
        if reads and isinstance(exc, (KeyError, IndexError)):  # not "no session matches": unexpected
            return _unexpected(args, exc)
        _fail(exc.args[0] if exc.args else exc)
        return 1
    except KeyboardInterrupt:
        print("threadloom: interrupted; what was read so far is saved", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        from ..store.db import is_disk_full

        if is_disk_full(exc):
            _fail(_explain(args, exc))
        else:
            _fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else (exc.strerror or exc))
        return 1
    except Exception as exc:
        if not reads:
            raise
        return _unexpected(args, exc)
    finally:
        if reads:
            sys.stdout, sys.stderr = streams


def _memory_handlers() -> dict[str, Callable[[argparse.Namespace], int]]:
    from .memory import HANDLERS

    return HANDLERS


# the top level's options that take a value: what follows them is no command
TOP_OPTIONS_WITH_VALUES = frozenset({"--db", "--source"})


def _session_opens(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """`threadloom SESSION` as `threadloom open SESSION`: a first word that names no command is a
    session (a link from a script or another tool lands in the viewer)."""
    commands = {
        name
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    }
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return argv
        if word in TOP_OPTIONS_WITH_VALUES:
            i += 2
            continue
        if word.startswith("-"):
            i += 1
            continue
        return argv if word in commands else [*argv[:i], "open", *argv[i:]]
    return argv


def _open_in_tui(args: argparse.Namespace, run_tui: Callable[[argparse.Namespace], int]) -> int:
    """`open SESSION`: the session is found first (by id, prefix or its agent's own id), so a
    wrong one is said here, on the command line, and the TUI opens on the one found."""
    from ..read.query import resolve_session

    conn = _open_for_reading(args)
    try:
        args.open_session = resolve_session(conn, args.session).id
    finally:
        conn.close()
    args.demo = False
    return run_tui(args)


def _unexpected(args: argparse.Namespace, exc: Exception) -> int:
    """An error no reading code expects: the database's doing when SQLite's check finds it
    damaged (a number read back as text, say), else a bug, raised as it is to be reported."""
    from ..store.db import damage_found, damaged, default_db_path

    path = getattr(args, "db", None) or default_db_path()
    problem = damage_found(path)
    if problem is None:
        raise exc
    _fail(damaged(path, f"{problem}; reading it failed with {type(exc).__name__}"))
    return 1


def _fail(message: object) -> None:
    from ..base.text import printable

    print(f"threadloom: {printable(str(message))}", file=sys.stderr)


def _explain(args: argparse.Namespace, exc: BaseException) -> LedgerError:
    from ..store.db import default_db_path, explain

    return explain(exc, getattr(args, "db", None) or default_db_path())


class _PrintableStream:
    """stdout or stderr for the read commands: every character a terminal would act on is
    printed visibly (see core.base.text.printable), so nothing read from the database, a damaged one
    included, reaches the terminal raw. On a terminal colour sequences pass (Rich writes them;
    one in a title can only colour it): cursor moves, titles, a clear screen do not."""

    SGR = re.compile(r"(\x1b\[[0-9;:]*m)")

    def __init__(self, stream: TextIO) -> None:
        self.unfiltered = stream
        try:
            self.keep_colours = stream.isatty()
        except (AttributeError, ValueError):
            self.keep_colours = False

    def write(self, text: str) -> int:
        from ..base.text import UNPRINTABLE, printable

        if UNPRINTABLE.search(text):
            if self.keep_colours:
                parts = self.SGR.split(text)  # odd items are the colour sequences
                text = "".join(part if i % 2 else printable(part) for i, part in enumerate(parts))
            else:
                text = printable(text)
        return self.unfiltered.write(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.unfiltered, name)


def _connect(args: argparse.Namespace, *, rebuild: bool = True) -> sqlite3.Connection:
    from ..store import db

    conn = db.connect(args.db)
    _rebuild_if_due(args, conn, rebuild=rebuild)
    return conn


def _open_for_reading(args: argparse.Namespace) -> sqlite3.Connection:
    """A reading command's connection; a database that does not exist is not created for it (a
    mistyped --db would leave an empty one, and its folders, behind)."""
    from ..store import db

    path = Path(args.db) if args.db else db.default_db_path()
    if str(path) != ":memory:" and _absent_but_creatable(path):
        where = f" --db {shlex.quote(str(path))}" if args.db else ""
        raise db.LedgerError(
            f"no database at {path} yet: `threadloom ingest{where}` reads your agents' logs into it"
        )
    conn = db.open_for_reading(args.db)
    _rebuild_if_due(args, conn)
    return conn


def _absent_but_creatable(path: Path) -> bool:
    """No file at `path`, though one could be made there (its nearest existing folder can be
    written). A path that could not be used says why when it is opened, as before."""
    try:
        os.stat(path)
        return False
    except FileNotFoundError:
        pass
    except OSError:
        return False  # not a folder on the way, a name too long …: opening it explains
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


def _rebuild_if_due(args: argparse.Namespace, conn: sqlite3.Connection, *, rebuild: bool = True) -> None:
    """An older database's sessions are rebuilt from its stored records before a command reads
    them (not half-empty tables): say so before the wait. `rebuild=False`: the caller's ingest
    does it, as the first phase of its progress."""
    from ..store import db

    version = db.rebuild_due(conn)
    if version is None:
        return  # before importing ingest: a command that only reads never pays for it
    from ..ingest.pipeline import rebuild_pending

    path = Path(args.db or db.default_db_path())
    print(
        f"threadloom: {path} was written by another version of threadloom (layout {version}, now "
        f"{db.SCHEMA_VERSION}): its sessions are rebuilt from the stored records, once; on a big archive "
        "this takes a minute or two",
        file=sys.stderr,
        flush=True,
    )
    if rebuild:
        rebuild_pending(conn, on_wait=_say_waiting)


def _say_none_match(conn: sqlite3.Connection, args: argparse.Namespace) -> None:
    """Why a listing is empty: an archive with nothing in it yet, or filters nothing passes."""
    if conn.execute("SELECT 1 FROM agent_sessions LIMIT 1").fetchone() is None:
        print("no sessions yet: run `threadloom ingest` (or add --source DIR)", file=sys.stderr)
        return
    given = [
        f"--{name} {value}"
        for name in ("project", "agent", "since", "until")
        if (value := getattr(args, name, None))
    ]
    print(
        f"no sessions match {' '.join(given) or 'these options'}: leave one out to see more", file=sys.stderr
    )


# ---------------------------------------------------------------------- ingest


def cmd_ingest(args: argparse.Namespace) -> int:
    from ..store import db
    from ..store.writer_lock import writer_lock

    # one writer at a time, decided before anything is opened: a second ingest waits here, saying so
    with writer_lock(args.db or db.default_db_path(), on_wait=_say_waiting):
        return _ingest(args)


def _ingest(args: argparse.Namespace) -> int:
    from ..store import db

    if args.rebuild:
        return _rebuild(args, Path(args.db or db.default_db_path()))
    conn = _connect(args, rebuild=False)  # run_ingest rebuilds an older database's sessions first
    try:
        report = _run_ingest(args, conn)
    finally:
        conn.close()
    return _report_ingest(args, report)


def _run_ingest(args: argparse.Namespace, conn: sqlite3.Connection) -> IngestReport:
    from ..ingest.pipeline import run_ingest

    show_progress = not args.json and not args.quiet and sys.stderr.isatty()
    build_index = not args.no_index
    if show_progress:
        return _ingest_with_progress(conn, args.source, not args.only, build_index)
    return run_ingest(
        conn, args.source, include_defaults=not args.only, build_index=build_index, on_wait=_say_waiting
    )


def _report_ingest(
    args: argparse.Namespace, report: IngestReport, extra: dict[str, Any] | None = None
) -> int:
    if args.json:
        print(json.dumps({**report.as_dict(), **(extra or {})}))
    else:
        _print_ingest_summary(report)
    return 1 if report.errors and report.files_read == 0 and report.files_skipped == 0 else 0


def _rebuild(args: argparse.Namespace, path: Path) -> int:
    """`ingest --rebuild`: a new database built beside the old one, from the agents' files and the
    folders the old one remembered, put in its place only once complete; what the user gave the old
    one (those folders, the sessions and projects hidden) is kept. The old one is kept under a name
    no other rebuild takes (said, --json too); an interrupted rebuild leaves it as it was."""
    from ..store import db

    db.check_writable(path)  # a read-only database is left where it is
    if path.is_file():  # another application's database is not moved aside (a damaged one is)
        try:
            with contextlib.closing(db.peek(path)) as old:
                db.refuse_foreign(old, path)
        except sqlite3.DatabaseError:
            pass
    given = _user_data(path)
    fresh = path.with_name(f"{path.name}.rebuilding-{os.getpid()}")
    _remove_database(fresh)
    conn = db.connect(fresh)
    try:
        db.write_user_data(conn, given)
        report = _run_ingest(args, conn)
        if report.cancelled:
            raise KeyboardInterrupt
        _follow_renamed_sessions(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the new file whole in itself before the swap
    except BaseException:
        conn.close()
        _remove_database(fresh)
        raise
    conn.close()
    kept = _keep_aside(path)
    for suffix in ("", "-wal", "-shm"):
        side = Path(str(fresh) + suffix)
        if side.exists():
            os.replace(side, Path(str(path) + suffix))
    Path(str(fresh) + ".lock").unlink(missing_ok=True)
    if kept and not args.json:
        print(f"previous database kept as {kept}", file=sys.stderr)
    return _report_ingest(args, report, {"previous_database": str(kept) if kept else None})


def _follow_renamed_sessions(conn: sqlite3.Connection) -> None:
    """What the old database kept on sessions whose ids this threadloom gives otherwise (Aider's,
    read by an older one under their path) follows them into the rebuilt one."""
    from ..store import db, memory_tables

    conn.execute("BEGIN IMMEDIATE")
    try:
        for renamed in db.RENAMED_SESSIONS.values():
            memory_tables.rename_sessions(conn, renamed(conn))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _user_data(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """What the user gave the database at `path`: the --source folders it remembers, the sessions
    and projects hidden (none when it cannot be read: a damaged one is what a rebuild is for)."""
    from ..store import db

    if not path.is_file():
        return {}
    try:
        old = db.peek(path)
        try:
            return db.read_user_data(old)
        finally:
            old.close()
    except sqlite3.DatabaseError:
        print(
            f"threadloom: the --source folders, hidden sessions and memory {path} kept cannot be read from "
            "it; pass the folders again",
            file=sys.stderr,
        )
        return {}


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal", ".lock"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def _keep_aside(path: Path) -> Path | None:
    """Move the database (and its -wal and -shm) to `<name>.<time>.bak`, `<name>.<time>-2.bak`, …:
    never a name already taken, so no earlier backup is ever replaced."""

    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    n = 1
    while True:
        target = path.with_name(f"{path.name}.{stamp}{'' if n == 1 else f'-{n}'}.bak")
        try:
            os.link(path, target)  # fails when the name is taken: checked and claimed in one step
            break
        except FileExistsError:
            n += 1
        except OSError:  # a file system without hard links: the name checked, then taken
            if not target.exists():
                os.replace(path, target)
                break
            n += 1
    for suffix in ("-wal", "-shm"):
        side = Path(str(path) + suffix)
        if side.exists():
            os.replace(side, Path(str(target) + suffix))
    path.unlink(missing_ok=True)
    return target


def _ingest_with_progress(
    conn: sqlite3.Connection, sources: Iterable[Path], include_defaults: bool, build_index: bool = True
) -> IngestReport:
    from rich.markup import escape
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from ..base.text import printable
    from ..ingest.pipeline import PHASES, run_ingest

    with Progress(
        TextColumn("[bold]ingest[/]"),
        BarColumn(),
        DownloadColumn(),
        TextColumn("{task.fields[files]}"),
        TimeRemainingColumn(),
        TextColumn("[dim]{task.fields[name]}"),
        transient=True,
    ) as bar:
        task = bar.add_task("ingest", total=None, files="", name="")

        def on_progress(p: IngestProgress) -> None:
            if p.path in PHASES:
                doing = PHASES[p.path]
                bar.update(
                    task,
                    total=p.bytes_total or 1,
                    completed=p.bytes_done,
                    files="",
                    name=f"{doing} {p.phase_done / max(1, p.phase_total):.0%}",
                )
                return
            # a file's name is anyone's (a --source from a backup): shown as text, never as markup or
            # a terminal command
            name = escape(printable(Path(p.path).name[:40]))
            bar.update(
                task,
                total=p.bytes_total or 1,
                completed=p.bytes_done,
                files=f"{p.files_done}/{p.files_total} files",
                name=name,
            )

        return run_ingest(
            conn,
            sources,
            include_defaults=include_defaults,
            progress=on_progress,
            build_index=build_index,
            on_wait=_say_waiting,
        )


def _say_waiting(text: str) -> None:
    """Another threadloom holds the writer lock: say so before waiting for it."""
    print(f"threadloom: {text} (Ctrl+C to stop)", file=sys.stderr, flush=True)


def cmd_index(args: argparse.Namespace) -> int:

    from ..store import db
    from ..store.writer_lock import writer_lock

    started = time.perf_counter()
    with writer_lock(args.db or db.default_db_path(), on_wait=_say_waiting):
        behind = _catch_up_index(_connect(args), quiet=args.json or args.quiet)
    seconds = round(time.perf_counter() - started, 3)
    if args.json:
        print(json.dumps({"indexed": behind, "seconds": seconds}))
    elif behind:
        print(f"search index complete: {behind:,} records indexed in {seconds:.2f} s")
    else:
        print("the search index is already complete")
    return 0


def _catch_up_index(conn: sqlite3.Connection, *, quiet: bool, wait: bool = True) -> int:
    """Finish an index a bulk load left behind; returns how many entry ids it covered.

    Without `wait`, an index another threadloom is writing to is left to it (0 is returned)."""
    from ..store import search_index

    state = search_index.pending(conn)
    if state is None:
        return 0
    behind = state.total - state.done
    if quiet or not sys.stderr.isatty():
        return behind if search_index.build(conn, wait=wait, on_wait=_say_waiting) else 0
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    # on the terminal itself: the bar's cursor moves are not text for _PrintableStream to escape
    console = Console(file=getattr(sys.stderr, "unfiltered", sys.stderr))
    with Progress(
        TextColumn("[bold]indexing for search[/]"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeRemainingColumn(),
        transient=True,
        console=console,
    ) as bar:
        task = bar.add_task("index", total=max(1, state.total))
        done = search_index.build(
            conn,
            lambda p: bar.update(task, total=max(1, p.total), completed=p.done),
            wait=wait,
            on_wait=_say_waiting,
        )
    return behind if done else 0


def _print_ingest_summary(report: IngestReport) -> None:
    mb = report.bytes_read / 1e6
    print(
        f"{report.files_seen} files seen, {report.files_skipped} unchanged, {report.files_read} read "
        f"({mb:.1f} MB), {report.records_added} records, {report.sessions} sessions updated "
        f"({report.sessions_total} in total), {len(report.errors)} errors, {report.seconds:.2f} s"
    )
    if report.files_gone:
        print(f"{report.files_gone} source files disappeared; their sessions are kept in the archive")
    if report.unclaimed:
        print(
            f"{len(report.unclaimed)} files under your sources look like logs but no agent's reader takes "
            "them (`threadloom sources` lists them, with why)"
        )
    from ..base.text import printable

    for err in report.errors[:10]:
        print("  error: " + printable(err).replace("\n", "\\n"), file=sys.stderr)  # one line each
    if len(report.errors) > 10:
        print(f"  … and {len(report.errors) - 10} more errors", file=sys.stderr)
    if report.files_seen == 0:
        print("no agent logs found in: " + ", ".join(report.roots) + ". Add some with --source DIR.")


# ---------------------------------------------------------------------- sessions / show


def cmd_sessions(args: argparse.Namespace) -> int:
    from ..actions.hidden import read_hidden
    from ..read.query import list_sessions, short_ids, sort_sessions, under_their_sessions

    conn = _open_for_reading(args)
    rows = list_sessions(
        conn,
        project=args.project,
        agent=args.agent,
        include_subagents=not args.main,
        include_empty=args.all,
        machine=args.machine,
        who=args.who,
    )
    rows = sort_sessions(rows, args.sort)
    hidden = read_hidden(conn)
    owners = {r.id: r for r in rows}
    out_of_list = {r.id for r in rows if hidden and hidden.hides(r, owners)}
    if not args.hidden:  # hidden from the lists: `threadloom hide`, h in the TUI
        rows = [r for r in rows if r.id not in out_of_list]
    from ..ingest.sync import session_origins

    origins = session_origins(conn)
    if args.json:
        listed = [r.as_dict() for r in rows]
        for item in listed:  # another machine's session: which, and whose
            if item["id"] in origins:
                item["machine"], item["who"] = origins[item["id"]]
        if args.hidden:
            for item in listed:
                item["hidden"] = item["id"] in out_of_list
        print(json.dumps(listed, ensure_ascii=False))
        return 0
    if not rows:
        _say_none_match(conn, args)
        return 0
    grouped = under_their_sessions(rows)  # the table: each subagent under its session
    if args.wide:
        _print_wide_sessions(grouped, out_of_list)
        return 0
    from rich.console import Console
    from rich.table import Table

    from ..base.text import TableColumn, human_tokens, one_line, short_when, text_table

    # piped (to grep, a file): no terminal width to fit, so nothing is cut; on a terminal the title,
    # project and model give way, the id (what `show` takes) and the numbers never do. No markup:
    # the cells are the logs' text ("[trimmed] title" is a title, not a style)
    console = Console(width=None if sys.stdout.isatty() else 1000, markup=False)
    fixed = {
        "id": 24,
        "when": 12,
        "msgs": 5,
        "tokens": 6,
        "cost": 9,
    }  # id: a main session's 13, a subagent's own
    room = console.width - sum(fixed.values()) - 2 * 7  # the gaps between the 8 columns
    widths = {"project": max(8, room // 6), "model": max(8, room // 6)}
    widths["title"] = max(12, room - widths["project"] - widths["model"])
    columns = [
        TableColumn(
            col, right=col in ("msgs", "tokens", "cost"), min_width=fixed.get(col), max_width=widths.get(col)
        )
        for col in ("id", "when", "project", "title", "msgs", "tokens", "cost", "model")
    ]
    shown_ids = short_ids(conn)
    cells = [
        (
            shown_ids.get(r.id, r.id) if not r.is_subagent else r.id.split(":", 1)[-1],
            short_when(r.last_activity),
            # from the logs: a folder's name may hold a newline, which would break the row in two
            one_line(r.project, 10_000) + (f" @{origins[r.id][0]}" if r.id in origins else ""),
            _listed_title(r, depth, r.id in out_of_list),
            str(r.message_count),
            human_tokens(r.total_tokens),
            r.cost_text,
            one_line(r.model, 10_000),
        )
        for r, depth in grouped
    ]
    lines = text_table(columns, cells, console.width)
    if lines is not None:  # drawn as Rich would, without Rich's cost per cell
        head = f"\x1b[1m{lines[0]}\x1b[0m" if sys.stdout.isatty() else lines[0]
        sys.stdout.write("\n".join([head, *lines[1:]]) + "\n")
        return 0
    table = Table(box=None, header_style="bold", pad_edge=False)  # a terminal too narrow: Rich squeezes it
    for column in columns:
        table.add_column(
            column.name,
            overflow="ellipsis",
            no_wrap=True,
            min_width=column.min_width,
            max_width=column.max_width,
            justify="right" if column.right else "left",
        )
    for row in cells:
        table.add_row(*row)
    _print_table(console, table)
    return 0


def _print_table(console: Any, table: Any) -> None:
    """Piped, a table's lines without the spaces that pad them to its width (a row was 380
    characters for one long title elsewhere); on a terminal, as drawn."""
    if sys.stdout.isatty():
        console.print(table)
        return
    with console.capture() as captured:
        console.print(table)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def cmd_stats(args: argparse.Namespace) -> int:
    from ..insight import stats

    try:
        since = stats.parse_day(args.since) if args.since else None
        until = stats.parse_day(args.until, end=True) if args.until else None
    except ValueError as exc:
        _fail(f"{exc}")
        return 2
    if since is not None and until is not None and since >= until:
        _fail(f"--since {args.since} is after --until {args.until}: nothing lies between (swap them?)")
        return 2
    conn = _open_for_reading(args)
    rows = stats.report(conn, args.by, since=since, until=until, project=args.project, agent=args.agent)
    if args.by == "model":  # the row of what no model was recorded for is named, not blank
        from ..base.text import NO_MODEL

        for row in rows:
            row.label = row.label or NO_MODEL
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], ensure_ascii=False))
        return 0
    if not rows:
        _say_none_match(conn, args)
        return 0
    from rich.console import Console
    from rich.table import Table

    from ..base.text import human_tokens
    from ..read.query import short_ids

    console = Console(width=None if sys.stdout.isatty() else 1000, markup=False)  # labels: the logs' text
    table = Table(box=None, header_style="bold", pad_edge=False, show_footer=True, footer_style="bold")
    shown = short_ids(conn) if args.by == "session" else {}  # as `sessions` prints them: `show` takes them
    every = [
        *rows,
        *stats.report(conn, "total", since=since, until=until, project=args.project, agent=args.agent),
    ]
    columns: list[tuple[str, Callable[[stats.StatsRow], str]]] = [
        (args.by, lambda r: r.label if args.by != "session" else f"{shown.get(r.key, r.key)}  {r.label}"),
        ("sessions", lambda r: str(r.sessions)),
        ("msgs", lambda r: str(r.messages)),
        ("input", lambda r: human_tokens(r.input_tokens)),
        ("output", lambda r: human_tokens(r.output_tokens)),
        ("cache w", lambda r: human_tokens(r.cache_creation_tokens)),
        ("cache r", lambda r: human_tokens(r.cache_read_tokens)),
        ("cost", lambda r: r.cost_text),
        ("tools", lambda r: str(r.tool_calls)),
        ("failed", lambda r: str(r.failed_tool_calls)),
        ("+lines", lambda r: str(r.lines_added)),
        ("-lines", lambda r: str(r.lines_removed)),
    ]
    for i, (name, cell) in enumerate(columns):
        table.add_column(
            name,
            footer=cell(every[-1]) if i else "total",
            justify="left" if i == 0 else "right",
            overflow="ellipsis",
            no_wrap=True,
            max_width=60 if i == 0 else None,
        )
    for row in rows:
        table.add_row(*(cell(row) for _, cell in columns))
    _print_table(console, table)
    return 0


def _listed_title(r: Any, depth: int = 0, hidden: bool = False) -> str:
    """A session's title as `sessions` lists it: a subagent's task, marked as one and indented
    under the session that started it (`depth`); ⚙ for one whose session is not listed; ⊘ before
    a hidden one (listed with --hidden)."""
    from ..actions.hidden import MARK
    from ..read.query import display_title

    title = (MARK + " " if hidden else "") + display_title(r)
    if not r.is_subagent:
        return title
    return ("  " * (depth - 1) + "↳ " if depth else "⚙ ") + title


def _print_wide_sessions(rows: list[tuple[Any, int]], hidden: set[str] | None = None) -> None:
    """`sessions --wide`: every column whole (ids, paths and titles are never cut), one line a
    session however wide the terminal; the lines end where their text does."""
    from rich.console import Console
    from rich.table import Table

    from ..adapters.base import shown_name
    from ..base.text import human_duration, printable, short_when

    columns = (
        "id", "agent", "project", "branch", "started", "last activity", "msgs", "input", "output",
        "cache write", "cache read", "cost", "duration", "model", "title", "file",
    )  # fmt: skip
    numbers = {"msgs", "input", "output", "cache write", "cache read", "cost", "duration"}
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in columns:
        table.add_column(col, no_wrap=True, justify="right" if col in numbers else "left")
    for r, depth in rows:
        cells = (
            r.id,
            r.agent,
            r.project or "",
            r.git_branch or "",
            short_when(r.started_at),
            short_when(r.last_activity),
            f"{r.message_count:,}",
            f"{r.input_tokens:,}",
            f"{r.output_tokens:,}",
            f"{r.cache_creation_tokens:,}",
            f"{r.cache_read_tokens:,}",
            r.cost_text,
            human_duration(r.duration_ms),
            r.model or "",
            _listed_title(r, depth, r.id in (hidden or ())),
            shown_name(r.file_path or ""),
        )
        # names and titles come from the logs: nothing of them reaches the terminal raw, and a
        # newline or tab in a folder's name is shown as its picture rather than breaking the row
        table.add_row(*(printable(cell).replace("\n", "␊").replace("\t", "␉") for cell in cells))
    console = Console(width=100_000, highlight=False, markup=False)
    with console.capture() as captured:
        console.print(table)
    sys.stdout.writelines(line.rstrip() + "\n" for line in captured.get().splitlines())


def cmd_show(args: argparse.Namespace) -> int:
    from ..read.query import resolve_session

    usable, as_of = _as_of_arg(args)
    if not usable:
        return 2
    if as_of is not None:
        from ..actions.restore import as_of_archive
        from ..base.text import short_when

        conn = _open_for_reading(args)
        session_id = _session_or_earlier(conn, args.session, as_of)
        if session_id is None:
            return 1
        then = as_of_archive(conn, session_id, as_of)
        note = f"as it was at {short_when(as_of)}, rebuilt from the records the archive kept"
        return _show(args, then, resolve_session(then, session_id), note)
    conn = _open_for_reading(args)
    session_id = _session_or_earlier(conn, args.session, None)  # one emptied since: said, with --as-of
    if session_id is None:
        return 1
    return _show(args, conn, resolve_session(conn, session_id))


def _session_or_earlier(conn: sqlite3.Connection, ref: str, as_of: int | None) -> str | None:
    """The session `ref` names, or one only earlier versions of files hold (emptied or cut since),
    which needs a moment before that (None: said why)."""
    from ..read.archive import sessions_in_versions
    from ..read.query import resolve_session

    try:
        return resolve_session(conn, ref).id
    except LookupError:
        earlier = sessions_in_versions(conn, ref)
        if len(earlier) != 1:
            raise
        if as_of is None:
            _fail(
                f"session {earlier[0]} is only in earlier versions of its files (they were emptied or cut "
                "since): add --as-of TIME, a moment before that, to see them as they were"
            )
            return None
        return earlier[0]


def _show(args: argparse.Namespace, conn: sqlite3.Connection, session: SessionSummary, note: str = "") -> int:
    if args.json:
        from ..insight.answers import message_json
        from ..insight.changes import files_changed
        from ..read.query import messages

        data = session.as_dict()
        data["messages"] = [message_json(m) for m in messages(conn, session.id)]
        # its subagents' edits with its own (each call says which session made it), unless left out
        data["files_changed"] = files_changed(conn, session.id, subagents=not args.no_subagents)
        from dataclasses import asdict

        from ..adapters.base import shown_name
        from ..read.archive import plan_files
        from ..read.side_files import side_files

        # what its agent kept beside the log (saved tool outputs, file copies, todos), and its plans
        data["side_files"] = [asdict(f) for f in side_files(conn, session.id)]
        data["plans"] = [shown_name(path) for _, path, _ in plan_files(conn, session.id)]
        from ..read.archive import session_rewrites

        # each time its files were rewritten: when (unix ms), and how many records the rewrite took out
        data["rewrites"] = [
            {"superseded_at": v.superseded_at, "records": v.records, "removed": v.removed}
            for v in session_rewrites(conn, session.id)
        ]
        print(json.dumps(data, ensure_ascii=False))
        return 0
    if args.plan:
        return _print_plans(conn, session.id)
    from rich.console import Console

    from ..present.render import (
        PlainConsole,
        Printer,
        render_files_changed,
        render_session,
        show_workers,
    )
    from ..read.archive import rewrite_note, session_rewrites

    # its size measured once: left to Rich, every print asks the terminal again (a third of the time
    # of a long session's `show`)
    measured = Console(highlight=False).size
    console = Console(highlight=False, width=measured.width, height=measured.height)
    note = note or rewrite_note(session_rewrites(conn, session.id), session.id)
    options: dict[str, Any] = {
        "expand_subagents": not args.no_subagents,
        "markdown": not args.as_written,
        "note": note,
    }
    if sys.stdout.isatty():
        render_session(console, conn, session, **options)
        render_files_changed(console, conn, session.id, subagents=not args.no_subagents)
        return 0
    # piped (to a file, grep, a pager): Rich pads lines to the console's width; end each where its text
    # does, written as they are drawn (a long session's first lines come at once, not after all of it)
    lines = _TrimmedLines(sys.stdout)
    # a text file to Rich, which types its file as IO[str]
    console = Console(highlight=False, width=measured.width, height=measured.height, file=cast(TextIO, lines))
    # no colour will be shown (unless FORCE_COLOR says otherwise): the same lines written without
    # Rich's layout of each message, 100,000 messages in seconds rather than half a minute
    printer: Printer = (
        PlainConsole(console) if console.color_system is None and not console.is_terminal else console
    )
    # and a long session drawn on every core, a page at a time (`render_pages`)
    if isinstance(printer, PlainConsole):
        with printer.drawing():
            workers = show_workers(session.message_count)
            render_session(printer, conn, session, **options, workers=workers)
            render_files_changed(printer, conn, session.id, subagents=not args.no_subagents)
    else:
        render_session(printer, conn, session, **options)
        render_files_changed(printer, conn, session.id, subagents=not args.no_subagents)
    lines.close()
    return 0


class _TrimmedLines(io.TextIOBase):
    """A file for Rich that passes each line on without the spaces after its text, as the lines
    come: what `str.splitlines` would cut the whole output into, each ended by a newline."""

    BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # where str.splitlines cuts

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.pending = ""  # the start of a line not ended yet

    def write(self, text: str) -> int:
        pieces = (self.pending + text).splitlines(keepends=True)
        # a line is passed on once its break is written ("\r" may yet be the start of "\r\n")
        self.pending = (
            pieces.pop() if pieces and (pieces[-1][-1] not in self.BREAKS or pieces[-1][-1] == "\r") else ""
        )
        self.out.write("".join(line.rstrip() + "\n" for line in pieces))
        return len(text)

    def flush(self) -> None:
        self.out.flush()

    def close(self) -> None:
        if self.pending:
            self.out.write(self.pending.rstrip() + "\n")
            self.pending = ""
        super().close()


def _print_plans(conn: sqlite3.Connection, session_id: str) -> int:
    """`show --plan`: the session's plans as kept, each under its file's name (controls made visible)."""
    from ..base.text import printable, strip_escapes
    from ..read.side_files import session_plans

    plans = session_plans(conn, session_id)
    if not plans:
        print(
            "threadloom: no plan is kept for this session (its agent saved none, or it was not read)",
            file=sys.stderr,
        )
        return 1
    for plan in plans:
        print(f"# {printable(plan.named)}\n")
        print(printable(strip_escapes(plan.text.replace("\r\n", "\n"))))
    return 0


# ---------------------------------------------------------------------- signals


def cmd_signals(args: argparse.Namespace) -> int:
    from ..base.text import one_line, short_when
    from ..insight import signals
    from ..read.query import display_title, resolve_session, short_ids

    conn = _open_for_reading(args)
    if args.session is None:
        if args.json:
            from ..insight.answers import ranked_signals_json

            print(json.dumps(ranked_signals_json(conn, args.limit), ensure_ascii=False))
            return 0
        ranked = signals.ranked_sessions(conn, args.limit)
        shown_ids = short_ids(conn)  # the ids `sessions` prints, which `signals SESSION` takes back
        ids = [s.id.split(":", 1)[-1] if s.is_subagent else shown_ids.get(s.id, s.id) for s, _ in ranked]
        width = max((len(i) for i in ids), default=2)
        if ranked:
            print(f"{'id':<{width}}  {'when':<12}  {'n':>3}  {'title':<50}  signals")
        for sid, (s, counts) in zip(ids, ranked, strict=True):
            kinds = ", ".join(
                f"{name} {n}" for name, n in sorted(counts.items(), key=lambda i: (-i[1], i[0]))
            )
            title = one_line(display_title(s), 50)
            print(
                f"{sid:<{width}}  {short_when(s.ended_at):<12}  {sum(counts.values()):>3}  {title:<50}  {kinds}"
            )
        if not ranked:
            print("no signals: no session showed one (or nothing is ingested yet)", file=sys.stderr)
        return 0
    session = resolve_session(conn, args.session)
    if args.json:
        from ..insight.answers import session_signals_json

        print(json.dumps(session_signals_json(conn, session), ensure_ascii=False))
        return 0
    found = signals.session_signals(conn, session.id)
    texts = signals.excerpts(conn, session.id, found)
    print(f"{session.id}  {one_line(display_title(session), 80)}")
    if not found:
        print("no signals")
    for f in found:
        where = f"#{f.seq}" if f.seq is not None else "session"
        print(f"\n{f.name}  [{f.severity}]  {where}  {one_line(f.detail, 200)}")
        for e in f.evidence:
            label = f"#{e.seq}" if e.seq is not None else f"entry {e.entry_id}"
            what = f"{e.tool} " if e.tool else ""
            print(f"    {label:<7} {what}{texts.get((e.entry_id, e.tool_call_id), '')}")
    return 0


# ---------------------------------------------------------------------- hide / unhide


def cmd_hide(args: argparse.Namespace) -> int:
    """`hide` and `unhide`: sessions and projects out of the lists (or back), resolved as `show`
    resolves a session; `hide` alone says what is hidden."""
    from ..actions.hidden import PROJECT, SESSION, read_hidden, show_all, write_hidden
    from ..read.query import display_title, resolve_session, short_ids
    from ..store import db

    hide = args.command == "hide"
    conn = _open_for_reading(args)
    shown = short_ids(conn)
    if hide and not args.session and not args.project:
        return _print_hidden(args, conn, read_hidden(conn), shown)
    if not hide and getattr(args, "all", False):
        path = Path(args.db or db.default_db_path())
        from ..store.writer_lock import writer_lock

        with writer_lock(path, on_wait=_say_waiting):
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
        _fail("name a SESSION or a --project (or --all)")
        return 2
    path = Path(args.db or db.default_db_path())
    changed = 0
    if sessions:
        changed += write_hidden(path, SESSION, [s.id for s in sessions], hide, on_wait=_say_waiting)
    if projects:
        changed += write_hidden(path, PROJECT, projects, hide, on_wait=_say_waiting)
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


# ---------------------------------------------------------------------- export


def cmd_export(args: argparse.Namespace) -> int:
    from ..actions.export import ExportError, export_session
    from ..base.text import count_of
    from ..read.query import resolve_session

    conn = _open_for_reading(args)
    session = resolve_session(conn, args.session)
    try:
        done = export_session(conn, session, args.format, branch=args.branch, redact=args.redact)
    except ExportError as exc:
        print(f"threadloom: {exc}", file=sys.stderr)
        return 2
    what = count_of(done.messages, "message") + (
        f", {count_of(done.subagents, 'subagent')}" if done.subagents else ""
    )
    if done.branch is not None:
        what += f", branch {done.branch.number} of {done.branches}: --branch N exports another"
    said = [what] + ([done.redactor.summary()] if args.redact else [])
    if args.output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(done.data)  # already clean: escaped HTML/JSON, no control characters
        sys.stdout.buffer.flush()
        if args.redact or done.branch is not None:
            print(f"threadloom: {'; '.join(said)}", file=sys.stderr)
        return 0
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if args.force else os.O_EXCL)
    try:
        fd = os.open(args.output, flags, 0o644)
    except FileExistsError:
        print(
            f"threadloom: {args.output} exists; choose another path or add --force to replace it",
            file=sys.stderr,
        )
        return 1
    except OSError as exc:
        print(f"threadloom: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    with os.fdopen(fd, "wb") as f:
        f.write(done.data)
    print(f"threadloom: wrote {args.output} ({'; '.join(said)})", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------- search


def cmd_similar(args: argparse.Namespace) -> int:
    from ..insight.recall import NotEmbedded, similar

    conn = _open_for_reading(args)
    try:
        hits = similar(conn, args.entry, limit=args.limit)
    except NotEmbedded as exc:
        print(f"threadloom: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([h.as_dict() for h in hits], ensure_ascii=False))
        return 0
    from ..base.text import human_when, one_line

    if not hits:
        print("no turn of another session is like it")
    for h in hits:
        where = h.main_title or h.session_title or h.session_id
        print(
            f"{h.score:5.1f}  {human_when(h.timestamp):>12}  {one_line(where, 30):30}  {one_line(h.snippet, 80)}"
        )
        print(f"       threadloom show {h.session_id}" + (f"  #{h.seq}" if h.seq is not None else ""))
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from ..insight.recall import build_context

    if args.budget < 200:
        print("threadloom: --budget must be at least 200 tokens", file=sys.stderr)
        return 2
    conn = _open_for_reading(args)
    context = build_context(
        conn, " ".join(args.query), budget=args.budget, project=args.project, since=args.since
    )
    for problem in context.problems:
        print(f"threadloom: {problem}", file=sys.stderr)
    if args.json:
        data = asdict(context)
        data["text"] = context.as_text()
        data["tokens_counted_as"] = "characters / 4"
        print(json.dumps(data, ensure_ascii=False))
        return 0
    sys.stdout.write(context.as_text())
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from ..insight.recall import search_recall
    from ..read.search import parse_query
    from ..store import db, search_index

    unusable = parse_query(" ".join(args.query)).unusable_filters
    if unusable:
        for problem in unusable:
            print(f"threadloom: {problem}", file=sys.stderr)
        print("threadloom: nothing searched: mend the filter, or leave it out", file=sys.stderr)
        return 2
    conn = _open_for_reading(args)
    if search_index.pending(conn) is not None:
        # catching the index up writes: only into a database that can be written
        try:
            db.check_writable(args.db or db.default_db_path())
        except db.LedgerError:
            print(
                "threadloom: the database cannot be written, so the search index it left behind is not "
                "completed now: the newest records may be missing from the hits (`threadloom index` "
                "completes it once the database is writable)",
                file=sys.stderr,
            )
        else:
            conn.close()
            conn = _connect(args)
            if _catch_up_index(conn, quiet=args.json, wait=False) and not args.json:
                print(
                    "threadloom: the search index was behind the archive; it is complete now", file=sys.stderr
                )
    result = search_recall(conn, " ".join(args.query), mode=args.mode, limit=args.limit)
    if args.json:
        print(json.dumps([h.as_dict() for h in result.hits], ensure_ascii=False))
        for problem in result.problems:
            print(f"threadloom: {problem}", file=sys.stderr)
        return 0
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ..base.text import human_when, one_line
    from ..read.query import UNTITLED, short_ids

    console = Console(
        highlight=False, width=None if sys.stdout.isatty() else 160
    )  # piped: snippets not squeezed
    for problem in result.problems:
        console.print(Text(problem, style="yellow"))  # it quotes the query: never read as markup
    table = Table(box=None, header_style="bold", pad_edge=False, expand=True)
    table.add_column("session", max_width=34, overflow="fold")
    shown = short_ids(conn)
    table.add_column("who", no_wrap=True)
    table.add_column("when", no_wrap=True)
    table.add_column("snippet", ratio=1)
    for h in result.hits:
        snippet = Text(h.snippet)
        for start, end in h.highlights:
            snippet.stylize("bold reverse", start, end)
        where = Text(one_line(h.session_title or UNTITLED, 34), style="bold")
        where.append(f"\n{one_line(f'{h.agent} · {h.project or chr(63)}', 34)}", style="dim")
        # the id as `sessions` prints it (a subagent's whole), which `show` takes back: never cut
        where.append(f"\n{shown.get(h.session_id, h.session_id)}", style="dim")
        if h.main_session_id:
            where.append(f"\nsubagent of {one_line(h.main_title or h.main_session_id, 22)}", style="dim")
        if h.why != "words":
            snippet.append(
                f"  ({'by meaning' if h.why == 'meaning' else 'words and meaning'})", style="italic cyan"
            )
        table.add_row(where, h.role or "", human_when(h.timestamp), snippet)
    console.print(table)
    console.print(f"[dim]{result.count_label} hits in {result.seconds * 1000:.0f} ms[/]")
    return 0


# ---------------------------------------------------------------------- fork / resume


def _emit_plan(args: argparse.Namespace, plan: ForkPlan, written: bool) -> int:
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
        data = plan.as_dict()
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


def cmd_fork_and_undo(args: argparse.Namespace) -> int:
    """`fork`, refusing an --undo-patch path that exists before anything is written."""
    if args.undo_patch is not None and os.path.lexists(args.undo_patch):
        print(
            f"threadloom: {args.undo_patch} already exists; the undo patch never overwrites a file "
            "(choose another path)",
            file=sys.stderr,
        )
        return 1
    return cmd_fork(args)


def _fork_undo(args: argparse.Namespace, plan: ForkPlan) -> tuple[dict[str, Any], list[str], bool]:
    """The files edited after the fork point, their undo patch written when asked. Returns the
    fields for --json, the lines to tell the user, and whether writing the patch failed."""
    from ..actions.fork import resolve_entry
    from ..actions.fork_session import apply_command, covered, write_patch
    from ..actions.undo import plan_undo
    from ..base.text import count_of, left_as_is, printable

    conn = _open_for_reading(args)  # the undo patch only reads the archive
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
                f"{more} (--undo-patch FILE writes a patch that takes them back)"
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
        print(
            f"threadloom: {step.question.split(' Restore it')[0]} The command would find nothing. "
            f"`threadloom {command} --restore` writes it back to {step.folder} first (nothing is overwritten), "
            "then prints the command.",
            file=sys.stderr,
        )
        return False
    try:
        written = restore_for(conn, plan)
    except FileExistsError as exc:
        print(
            f"threadloom: {exc.filename} appeared meanwhile; restore never overwrites, so nothing more was "
            "written. Run the command again.",
            file=sys.stderr,
        )
        return False
    for f in written:
        print(f"restored {f.written_to}", file=sys.stderr)
    return True


def cmd_fork(args: argparse.Namespace) -> int:
    """The steps of the fork picker's Fork here and New prompt (`core.actions.fork_session`), in one go."""
    from ..actions.fork import ForkError, write_fork
    from ..actions.fork_session import next_step, plan_for
    from ..ingest.pipeline import run_ingest

    conn = _open_for_reading(args) if args.dry_run else _connect(args)  # a dry run only reads
    again = f"fork {args.entry}" + (" --before" if args.before else "")
    action = "fork-prompt" if args.native else "fork"
    if args.native and not args.prompt:
        print("threadloom: --native needs --prompt", file=sys.stderr)
        return 2
    try:
        plan = plan_for(conn, action, args.entry, before=args.before, prompt=args.prompt)
        if args.native:
            if args.dry_run and not args.json:
                _say_dry_run(plan)
            elif not args.dry_run and not _restored(args, conn, plan, again + " --native --prompt …"):
                return 1
            return _emit_plan(args, plan, False)
        if args.dry_run:
            if not args.json:
                _say_dry_run(plan)
            return _emit_plan(args, plan, False)
        if next_step(action, plan) != "write":
            # a command only: Codex and OpenCode copy the session themselves, Gemini's copy is written
            if not _restored(args, conn, plan, again):
                return 1
            return _emit_plan(args, plan, False)
        path = write_fork(plan)
    except ForkError as exc:
        print(f"threadloom: {exc}", file=sys.stderr)
        return 1
    run_ingest(conn, [path], include_defaults=False, remember=False)  # show the fork in the tree at once
    if plan.new_session_id:  # remembered as forked_from its source (core.insight.memory's relations)
        from ..insight.memory import record_fork
        from ..store.writer_lock import writer_lock

        with writer_lock(conn, on_wait=_say_waiting):
            record_fork(conn, plan.new_session_id, plan.source_session_id)
    return _emit_plan(args, plan, True)


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
    elif plan.path:  # Gemini imports a copy the plan wrote to a temporary file
        said = f"dry run, nothing written where the agent keeps its sessions: the command imports {printable(plan.path)}"
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

    conn = _open_for_reading(args)  # resume only reads the archive (a --restore writes the agent's files)
    session = resolve_session(conn, args.session)
    try:
        plan = plan_for(conn, "fork-end" if args.fork_session else "resume", session_id=session.id)
    except ForkError as exc:
        print(f"threadloom: {exc}", file=sys.stderr)
        return 1
    again = f"resume {session.id}" + (" --fork-session" if args.fork_session else "")
    if not _restored(args, conn, plan, again):
        return 1
    return _emit_plan(args, plan, False)


# ---------------------------------------------------------------------- verify / restore / sources


def cmd_verify(args: argparse.Namespace) -> int:
    from ..read.archive import verify

    conn = _open_for_reading(args)
    report = verify(conn)
    if args.json:
        print(
            json.dumps(
                {
                    "files_checked": report.files_checked,
                    "files_missing": report.files_missing,
                    "missing": [{"path": path, "sessions": sessions} for path, sessions in report.missing],
                    "records_checked": report.records_checked,
                    "files_rewritten": report.files_rewritten,
                    "records_superseded": report.records_superseded,
                    "mismatches": report.mismatches,
                    "not_stored": [{"path": path, "error": error} for path, error in report.not_stored],
                }
            )
        )
    else:
        print(
            f"{report.files_checked} files, {report.records_checked} records checked; "
            f"{report.files_missing} sources no longer on disk (kept in the archive)"
            + (":" if report.missing else "")
        )
        _print_missing(conn, report.missing)
        if report.files_rewritten:
            print(
                f"{report.files_rewritten} files were rewritten by their agents (or by hand): their earlier "
                f"versions are kept ({report.records_superseded:,} records no longer in the files); "
                "`threadloom restore SESSION --as-of TIME` writes a file as it was"
            )
        for line in report.mismatches:
            print("  changed: " + line)
        for path, error in report.not_stored:
            print(f"  not stored: {path}: {error}")
        if report.ok:
            print("all stored bytes match their sources")
        if report.mismatches:
            print(f"{len(report.mismatches)} files differ")
        if report.not_stored:
            print(
                f"{len(report.not_stored)} files could not be read into the archive, so their bytes are not "
                "stored: mend what the error names (a file's permissions, say) and run `threadloom ingest` "
                "again; an error that stays is a threadloom bug, please report it"
            )
    return 0 if report.ok else 1


MISSING_SHOWN = 20  # vanished files named one a line; --json lists every one


def _print_missing(conn: sqlite3.Connection, missing: list[tuple[str, list[str]]]) -> None:
    """Each source no longer on disk, with the session read from it (as `sessions` prints its id)
    and the command that writes it back."""
    from ..read.query import short_ids

    shown = short_ids(conn) if missing else {}
    for path, sessions in missing[:MISSING_SHOWN]:
        ids = [shown.get(s, s.split(":", 1)[-1]) for s in sessions]
        if not ids:
            print(f"  gone: {path}")
            continue
        more = f" (and {len(ids) - 1} more)" if len(ids) > 1 else ""
        print(f"  gone: {path}  session {ids[0]}{more}: threadloom restore {ids[0]} --to DIR")
    if len(missing) > MISSING_SHOWN:
        print(f"  … and {len(missing) - MISSING_SHOWN:,} more (--json lists every one)")


def parse_moment(value: str) -> int:
    """A moment as unix ms: a local date and time ('2026-05-12T14:30', '2026-05-12 14:30'), or a
    day as `stats` takes it (its end: how the files stood that day)."""
    from datetime import datetime

    from ..insight import stats

    try:
        return int(datetime.fromisoformat(value.strip()).timestamp() * 1000)
    except ValueError:
        pass
    try:
        return stats.parse_day(value, end=True) - 1
    except ValueError:
        raise ValueError(
            f"{value!r} is not a time (2026-05-12T14:30, 2026-05-12, today, yesterday, 7d)"
        ) from None


def _as_of_arg(args: argparse.Namespace) -> tuple[bool, int | None]:
    """(whether --as-of can be used, its moment in unix ms or None when it is not given); a time
    that is none is said."""
    if not args.as_of:
        return True, None
    try:
        return True, parse_moment(args.as_of)
    except ValueError as exc:
        _fail(f"--as-of: {exc}")
        return False, None


def cmd_restore(args: argparse.Namespace) -> int:
    from ..actions.restore import RestoreError, restore_session
    from ..store.db import cannot_use

    usable, as_of = _as_of_arg(args)
    if not usable:
        return 2
    conn = _open_for_reading(args)
    # a session whose file was emptied or cut before it is listed no more; its records are kept
    session_id = _session_or_earlier(conn, args.session, as_of)
    if session_id is None:
        return 1
    try:
        files = restore_session(conn, session_id, args.to, as_of=as_of, source=args.source)
    except RestoreError as exc:
        _fail(exc)
        return 1
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        _fail(cannot_use(args.to, exc, what="the restored files into", fix="choose another --to folder"))
        return 1
    if args.json:
        print(json.dumps([f.__dict__ for f in files]))
    else:
        for f in files:
            note = "" if f.complete else "  (incomplete: part of the source was never read)"
            there = "  (already there, the same bytes: left as it was)" if f.already_there else ""
            print(f"{f.written_to}  {f.bytes} bytes{note}{there}")
        print(f"{len(files)} files restored for session {session_id}")
    return 0


def cmd_sources(args: argparse.Namespace) -> int:
    from ..adapters import all_adapters
    from ..store import db
    from ..store.rows import fetch, values

    conn = _open_for_reading(args)
    found = []
    for adapter in all_adapters():
        for root in adapter.default_roots():
            count = sum(1 for _ in adapter.discover(root)) if root.exists() else 0
            found.append({"agent": adapter.name, "path": str(root), "exists": root.exists(), "files": count})
    remembered = values(conn, "SELECT path FROM source_roots ORDER BY path")
    stats = fetch(
        conn,
        "SELECT agent, status, count(*) AS files, COALESCE(sum(size), 0) AS bytes FROM source_files "
        "GROUP BY agent, status",
    )
    from ..ingest.pipeline import unclaimed as recorded_unclaimed

    unclaimed = recorded_unclaimed(conn)
    from dataclasses import asdict

    from ..actions.cleanup import cleanup_risk
    from ..read.side_files import side_file_counts

    side = side_file_counts(conn)
    risk = cleanup_risk(conn)
    from ..ingest.sync import status as sync_status

    hub = sync_status(conn)
    if hub is not None:
        from ..ingest.sync import waiting_on_hub

        hub["waiting_on_hub"] = {"error": "not asked (--offline)"} if args.offline else waiting_on_hub(conn)
    if args.json:
        print(
            json.dumps(
                {
                    "database": str(args.db or db.default_db_path()),
                    "default_locations": found,
                    "remembered_sources": remembered,
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
    print(f"database: {args.db or db.default_db_path()}")
    for f in found:
        state = f"{f['files']} files" if f["exists"] else "not present"
        print(f"  {f['agent']:<12} {f['path']}  ({state})")
    for r in remembered:
        print(f"  {'--source':<12} {r}")
    for row in stats:
        print(
            f"  ingested: {row['agent']} {row['status']}: {row['files']} files, {row['bytes'] / 1e6:.1f} MB"
        )
    for kept in side:
        loose = f", {kept.without_session} of no session in the archive" if kept.without_session else ""
        print(f"  side files: {kept.agent} {kept.what}: {kept.files} files, {kept.bytes / 1e6:.1f} MB{loose}")
    from ..base.text import printable

    for file in unclaimed:
        print(f"  not read: {printable(file['path'])}: {file['why']}")
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


# ---------------------------------------------------------------------- sync through a hub


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
            conn = _connect(args)
            try:
                return _sync(args, conn)
            finally:
                conn.close()
    except sync.SyncError as exc:
        _fail(str(exc))
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

    return writer_lock(db_path, on_wait=_say_waiting)


def _sync(args: argparse.Namespace, conn: sqlite3.Connection) -> int:
    from ..ingest import sync
    from ..store.db import MACHINE_KEY
    from ..store.meta import get_meta

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
        )
    if not args.dry_run:
        sync.remember(conn, url, sharing, sharing_changed=changed)
    if args.json:
        print(json.dumps(report.as_dict()))
        return 0
    verb = "would move" if args.dry_run else "moved"
    print(f"hub {report.hub} as {report.machine}: {verb} in {report.seconds:.2f} s")
    if push:
        masked = f", {report.redacted_records} masked" if report.redacted_records else ""
        print(
            f"  push: {report.pushed_records} records of {report.pushed_sources} files "
            f"({report.pushed_bytes / 1e6:.1f} MB{masked}); {report.not_shared} files not shared"
        )
    if not args.push_only:
        print(
            f"  pull: {report.pulled_records} records of {report.pulled_sources} files "
            f"({report.pulled_bytes / 1e6:.1f} MB), {report.sessions} sessions updated"
        )
    from ..base.text import printable

    for why in report.refused[:20]:
        print(f"  refused from the hub: {printable(why)}")
    return 0


# ---------------------------------------------------------------------- archiving in the background


def cmd_watch(args: argparse.Namespace) -> int:
    from ..serve.watch import WatchOptions, log_path_for, run_watch
    from ..store import db

    db_path = Path(args.db or db.default_db_path()).expanduser().absolute()
    options = WatchOptions(
        db_path=db_path,
        log_path=Path(args.log).expanduser().absolute() if args.log else log_path_for(db_path),
        poll=args.poll,
        poll_seconds=args.poll_interval,
        settle=args.settle,
        echo=not args.quiet and sys.stderr.isatty(),
        sync=args.sync,
    )
    return run_watch(options)


def _explicit_db(args: argparse.Namespace) -> Path | None:
    """--db as an absolute path, for a command another process runs later (a service, a hook)."""
    db = getattr(args, "db", None)
    return Path(db).expanduser().absolute() if db else None


def cmd_service(args: argparse.Namespace) -> int:
    from ..serve import service
    from ..serve.watch import log_path_for
    from ..store import db

    manager = args.manager or service.this_manager()
    if manager is None:
        _fail(
            f"no service manager threadloom can set up on {sys.platform} (systemd, launchd): start "
            "`threadloom watch` from your login's startup instead"
        )
        return 1
    explicit = _explicit_db(args)
    plan = service.plan(manager, explicit)
    try:
        if args.action == "install":
            outcome = service.install(plan, dry_run=args.dry_run, start=not args.no_start)
        elif args.action == "uninstall":
            outcome = service.uninstall(plan, dry_run=args.dry_run)
        else:
            outcome = service.status(plan, log_path_for(explicit or db.default_db_path()))
    except (service.ServiceError, OSError) as exc:
        _fail(exc)
        return 1
    if args.json and args.action == "status":
        print(json.dumps(outcome.data))
    else:
        print("\n".join(outcome.lines))
    return 0 if outcome.ok else 1


def cmd_hooks(args: argparse.Namespace) -> int:
    from ..adapters import all_adapters
    from ..serve import hooks

    if args.action == "run":
        return _hook_run(args)
    if args.action != "status" and args.agent is None:
        programs = ", ".join(a.program for a in all_adapters() if a.session_hooks() is not None)
        _fail(f"which agent's settings: --agent {programs} (the agents with hooks so far)")
        return 2
    try:
        if args.action == "install":
            outcome = hooks.install(
                _explicit_db(args), agent=args.agent, stop=args.stop, dry_run=args.dry_run
            )
        elif args.action == "uninstall":
            outcome = hooks.uninstall(agent=args.agent, dry_run=args.dry_run)
        else:
            outcome = hooks.status(agent=args.agent)
    except (hooks.HooksError, OSError) as exc:
        _fail(exc)
        return 1
    if args.json and args.action == "status":
        print(json.dumps(outcome.data))
    else:
        print("\n".join(outcome.lines))
    return 0


def _hook_run(args: argparse.Namespace) -> int:
    """What the hook runs. From the agent (stdin): start the ingest in the background and return
    at once, 0 whatever happens (a hook must never get in the session's way). With --transcript:
    the ingest itself."""
    from ..serve import hooks
    from ..serve.watch import log_path_for
    from ..store import db

    if args.transcript is not None:
        db_path = _explicit_db(args) or db.default_db_path()
        return hooks.archive_session(db_path, Path(args.transcript).absolute(), log_path_for(db_path))
    try:
        transcript = hooks.transcript_of(sys.stdin.buffer.read(hooks.MAX_INPUT), args.agent)
    except hooks.HooksError as exc:
        print(f"threadloom hooks run: {exc}; nothing archived", file=sys.stderr)
        return 0
    if transcript is None:
        key = hooks.hooks_of(hooks.hooked_agent(args.agent)).transcript_key
        print(f"threadloom hooks run: no {key} in the hook's input; nothing archived", file=sys.stderr)
        return 0
    try:
        hooks.start_detached(transcript, _explicit_db(args), args.agent)
    except OSError as exc:
        print(f"threadloom hooks run: could not start the ingest: {exc}", file=sys.stderr)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    """`mcp`: serve on stdio; `mcp install|uninstall --agent A`: the agent's configuration."""
    from ..store import db

    if args.mcp_action is None:
        from ..serve.mcp_server import serve

        serve(Path(args.db or db.default_db_path()).expanduser())
        return 0
    from ..actions.mcp_install import InstallError, apply, plan

    try:
        change = plan(args.agent, remove=args.mcp_action == "uninstall", db=getattr(args, "db", None))
        if not args.dry_run:
            apply(change)
    except InstallError as exc:
        _fail(exc)
        return 1
    if args.json:
        print(json.dumps({**change.as_dict(), "dry_run": args.dry_run}))
        return 0
    if args.dry_run:
        sys.stdout.write(change.diff() or f"{change.path}: nothing to change ({change.action})\n")
        print("threadloom: dry run: nothing written", file=sys.stderr)
        return 0
    said = {
        "added": f"registered threadloom's MCP server in {change.path}",
        "updated": f"updated threadloom's MCP server in {change.path}",
        "unchanged": f"threadloom's MCP server is already registered in {change.path}: nothing changed",
        "removed": f"took threadloom's MCP server out of {change.path}",
        "absent": f"threadloom's MCP server is not in {change.path}: nothing changed",
    }[change.action]
    print(said)
    if change.action in ("added", "updated"):
        print(f"threadloom: restart {args.agent} to load it", file=sys.stderr)
    return 0


def _no_tui(args: argparse.Namespace) -> int:
    print(
        "threadloom: the TUI starts from the `threadloom` command; use a subcommand here, see --help",
        file=sys.stderr,
    )
    return 2
