"""`threadloom`: the TUI with no subcommand, and scriptable subcommands.

Imports are lazy on purpose: a no-change `threadloom ingest` must not pay for Textual, Rich or
SQLModel (see PERF.md, startup).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sqlite3
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

if TYPE_CHECKING:
    from ..store.db import LedgerError

from . import (
    context,
    export,
    fork,
    hide,
    hooks,
    index,
    ingest,
    mcp,
    memory,
    restore,
    search,
    service,
    sessions,
    show,
    signals,
    similar,
    sources,
    stats,
    sync,
    verify,
    watch,
)
from .common import Command, absent_but_creatable, add_db_option, fail, open_reading

# Every subcommand, in the order `threadloom --help` lists them: each module adds its parser and
# says what runs it (`COMMANDS`); a new command is a module here and a name in this tuple.
COMMAND_MODULES = (
    ingest,
    index,
    sessions,
    stats,
    show,
    search,
    similar,
    context,
    signals,
    export,
    fork,
    verify,
    restore,
    watch,
    service,
    hooks,
    sources,
    hide,
    sync,
    memory,
    mcp,
)


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
             (`threadloom sources --forget DIR` stops that)
"""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or (`only`) with one command's options in full and the others by
    name and help line: argparse takes 20 ms to build every command's options (a help formatter
    for each option, a gettext lookup for each parser), a tenth of a no-change `threadloom ingest`,
    for the one command that runs. `only=""` builds none in full (`threadloom --help`)."""
    parser = argparse.ArgumentParser(
        prog="threadloom",
        description="Find, read, understand and resume AI coding-agent sessions.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_option(parser, top=True)
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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser)

    p = sub.add_parser(
        "open",
        help="open the TUI on a session (also: threadloom SESSION)",
        description="Open the TUI with a session shown: its project's sessions listed, the session "
        "revealed in the tree and read in the message viewer, so a link from the command line, a "
        "script or another tool lands on it. `threadloom SESSION` does the same.",
    )
    add_db_option(p)
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

    parser.subcommands = sub  # type: ignore[attr-defined]  # each command's own parser, for its errors
    commands = sub if only is None else _OneInFull(sub, only)
    for module in COMMAND_MODULES:
        module.add_parsers(commands)
    return parser


class _CommandParser(argparse.ArgumentParser):
    """A command's parser: where it takes a run of words (`tag TARGET TAG...`, `note TARGET
    TEXT...`), options may come among them (`tag ID --turn 3 some words` left "some words" over
    as unrecognized); argparse's intermixed parsing, which a parser with subcommands cannot use."""

    _intermixing = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        words = any(a.nargs in ("*", "+") for a in self._get_positional_actions())
        if self._intermixing or not words or self._subparsers is not None:
            return super().parse_known_args(args, namespace)
        self._intermixing = True  # argparse's intermixed parse calls this again, twice
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


class _OneInFull:
    """The subcommands' table as a command module sees it, where one command is built in full and
    each other is only listed (its name and help line, for --help and the choices argparse names)."""

    def __init__(self, sub: Any, command: str) -> None:
        self.sub = sub
        self.command = command

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if name == self.command:
            return self.sub.add_parser(name, **kwargs)
        self.sub.add_parser(name, help=kwargs.get("help"), add_help=False)
        return _Unbuilt()


class _Unbuilt:
    """A parser not built: every option, group or subcommand added to it is dropped."""

    def __getattr__(self, name: str) -> Callable[..., _Unbuilt]:
        return lambda *args, **kwargs: self


# the commands that only read the database: opened read-only (never written, its mode never
# changed), and what they print goes through `_PrintableStream`
COMMANDS: dict[str, Command] = {c.name: c for module in COMMAND_MODULES for c in module.COMMANDS}
READ_COMMANDS = frozenset(name for name, c in COMMANDS.items() if c.reads)
# what they print goes through `_PrintableStream`: theirs, and what commands that write print of the
# archive (titles, paths, notes: an agent's or a log's words)
ESCAPED_COMMANDS = frozenset(name for name, c in COMMANDS.items() if c.reads or c.prints_archive)


def main(argv: list[str] | None = None, *, run_tui: Callable[[argparse.Namespace], int] | None = None) -> int:
    """The command line. `run_tui` opens the app when no subcommand is given (or `open`); it is
    passed in by `tui.entry` (the console script) so that core never imports the TUI."""
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=_first_word(words))
    args, extra = parser.parse_known_args(_session_opens(words, parser))
    bare = args.command == "open" and _first_word(words) != "open"  # `threadloom WORD`
    if extra:
        if bare and (said := _mistyped_command(args, parser)) is not None:
            fail(said)
            return 2
        _refuse_extra(parser, args, extra)
    _as_text(args)
    from ..store.db import LedgerError
    from ..store.memory_tables import MemoryRefused

    streams = sys.stdout, sys.stderr
    reads = args.command in READ_COMMANDS
    escaped = args.command in ESCAPED_COMMANDS
    if escaped:
        sys.stdout, sys.stderr = _PrintableStream(sys.stdout), _PrintableStream(sys.stderr)
    try:
        if args.command is None:
            return (run_tui or _no_tui)(args)
        if args.command == "open":
            return _open_in_tui(args, run_tui or _no_tui, parser if bare else None)
        handler = COMMANDS[args.command].run
        return handler(args)
    except (LedgerError, MemoryRefused) as exc:
        fail(exc)
        return 1
    except sqlite3.DatabaseError as exc:  # locked, damaged or full while working
        fail(_explain(args, exc))
        return 1
    except UnicodeDecodeError as exc:
        if not reads:  # ingest decodes the agents' files: not the database's fault
            raise
        fail(_explain(args, exc))  # text read back from the database that is no longer UTF-8
        return 1
    except LookupError as exc:
        if reads and isinstance(exc, (KeyError, IndexError)):  # not "no session matches": unexpected
            return _unexpected(args, exc)
        fail(exc.args[0] if exc.args else exc)
        return 1
    except KeyboardInterrupt:
        print("threadloom: interrupted; what was read so far is saved", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        from ..store.db import is_disk_full

        if is_disk_full(exc):
            fail(_explain(args, exc))
        else:
            fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else (exc.strerror or exc))
        return 1
    except Exception as exc:
        if not reads:
            raise
        return _unexpected(args, exc)
    finally:
        if escaped:
            sys.stdout, sys.stderr = streams


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
    i = _first_word_at(argv)
    if i is None or argv[i] in commands:
        return argv
    return [*argv[:i], "open", *argv[i:]]


def _first_word(argv: list[str]) -> str:
    """The command named (or a session, or "" for none)."""
    at = _first_word_at(argv)
    return "" if at is None else argv[at]


def _first_word_at(argv: list[str]) -> int | None:
    """Where the first word that is no top-level option or its value is."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return None
        if word in TOP_OPTIONS_WITH_VALUES:
            i += 2
            continue
        if word.startswith("-"):
            i += 1
            continue
        return i
    return None


# what is typed as text (ids, queries, tags, notes, filters), never a path
TEXT_ARGUMENTS = frozenset(
    {"session", "entry", "target", "query", "text", "tags", "ref", "title", "body", "prompt", "project",
     "agent", "machine", "who", "name", "value", "kind", "relation"}
)  # fmt: skip


def _as_text(args: argparse.Namespace) -> None:
    """Bytes of the command line that are not UTF-8 come as lone surrogates, which no id matches and
    SQLite cannot hold (a traceback): in what is typed as text each such byte becomes U+FFFD, so a
    session "\xff" is one no session matches, said as such. Paths keep their bytes."""
    for name in TEXT_ARGUMENTS & set(vars(args)):
        value = getattr(args, name)
        if isinstance(value, str):
            setattr(args, name, _text(value))
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            setattr(args, name, [_text(v) for v in value])


def _text(value: str) -> str:
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _refuse_extra(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> NoReturn:
    """Words no option took, said with the usage of the command they were given to (argparse says
    them with the top level's), and where a folder was given as a word to a command that reads
    folders, how to give it."""
    command = parser.subcommands.choices.get(args.command) if args.command else None  # type: ignore[attr-defined]
    target = command if isinstance(command, argparse.ArgumentParser) else parser
    from ..base.text import one_line_name

    # said as they read, not as a terminal would act on them (an escape, a line break of their own)
    message = f"unrecognized arguments: {one_line_name(' '.join(extra))}"
    words = [w for w in extra if not w.startswith("-")]
    if words and "--source" in target.format_usage():
        message += f" (a folder of logs to read is given as --source {one_line_name(shlex.quote(words[0]))})"
    target.error(message)


def _open_in_tui(
    args: argparse.Namespace,
    run_tui: Callable[[argparse.Namespace], int],
    bare: argparse.ArgumentParser | None = None,
) -> int:
    """`open SESSION`: the session is found first (by id, prefix or its agent's own id), so a
    wrong one is said here, on the command line, and the TUI opens on the one found. Given as
    `threadloom WORD` (`bare`, the parser), a WORD that names no session but is close to a
    command's name is said as a mistyped command."""
    from ..store.db import LedgerError

    try:
        args.open_session = _find_session(args)
    except (LookupError, LedgerError):
        if bare is not None and (said := _mistyped_command(args, bare)) is not None:
            fail(said)
            return 2
        raise
    args.demo = False
    return run_tui(args)


def _find_session(args: argparse.Namespace) -> str:
    """The id of the session `args.session` names; LookupError when none or several do."""
    from ..read.query import resolve_session

    conn = open_reading(args)
    try:
        return resolve_session(conn, args.session).id
    finally:
        conn.close()


def _mistyped_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str | None:
    """What to say when `threadloom WORD` was meant as a command (`threadloom serach foo`,
    `threadloom stat`): WORD names no session and is close to a command's name. difflib is
    imported here only, on the way to an error (a run that changes nothing never pays for it)."""
    from ..read.query import AmbiguousSession
    from ..store.db import default_db_path

    word = args.session
    path = Path(args.db) if args.db else default_db_path()
    if str(path) == ":memory:" or not absent_but_creatable(path):  # else no database, so no session
        try:
            _find_session(args)
            return None
        except AmbiguousSession:
            return None
        except LookupError:
            pass  # no session matches: a command, perhaps
        except Exception:  # a database that cannot be read says so itself, as before
            return None
    import difflib

    names = list(parser.subcommands.choices)  # type: ignore[attr-defined]
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.75)
    if not close:
        return None
    return f"unknown command {word!r}; did you mean {close[0]!r}? (threadloom --help lists them)"


def _unexpected(args: argparse.Namespace, exc: Exception) -> int:
    """An error no reading code expects: the database's doing when SQLite's check finds it
    damaged (a number read back as text, say), else a bug, raised as it is to be reported."""
    from ..store.db import damage_found, damaged, default_db_path

    path = getattr(args, "db", None) or default_db_path()
    problem = damage_found(path)
    if problem is None:
        raise exc
    fail(damaged(path, f"{problem}; reading it failed with {type(exc).__name__}"))
    return 1


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


def _no_tui(args: argparse.Namespace) -> int:
    print(
        "threadloom: the TUI starts from the `threadloom` command; use a subcommand here, see --help",
        file=sys.stderr,
    )
    return 2
