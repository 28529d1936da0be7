"""`threadloom open SESSION` (or `threadloom SESSION`) opens the TUI on that session, found by id,
prefix or the agent's own id; a wrong one is said on the command line, before any TUI."""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path

import pytest
from threadloom.core import cli

from tests.support import SID, make_archive, run


@pytest.fixture
def dbfile(tmp_path: Path) -> str:
    path = str(tmp_path / "t.db")
    assert (
        run("ingest", "--db", path, "--only", "--source", str(make_archive(tmp_path)), "-q").returncode == 0
    )
    return path


def opened(*argv: str) -> tuple[int, argparse.Namespace | None, str]:
    """What `threadloom ARGV` asks of the TUI (the console script's `run_tui`), and stderr."""
    asked: list[argparse.Namespace] = []

    def tui(args: argparse.Namespace) -> int:
        asked.append(args)
        return 0

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(list(argv), run_tui=tui)
    return code, asked[0] if asked else None, err.getvalue()


def test_open_and_a_bare_session_id_open_the_tui_on_that_session(dbfile: str) -> None:
    for argv in (
        ("open", SID[:8], "--db", dbfile),
        ("--db", dbfile, SID[:8]),  # `threadloom SESSION`
        ("--db", dbfile, "--no-ingest", SID),
        ("--source", "/nowhere", "--db", dbfile, SID[:13]),
    ):
        code, args, err = opened(*argv)
        assert code == 0 and args is not None, (argv, err)
        assert args.open_session == SID and args.command == "open", argv
    assert opened("--db", dbfile, "--no-ingest", SID)[1].no_ingest is True  # type: ignore[union-attr]
    # no session named: the TUI as before; a command is a command
    code, args, _ = opened("--db", dbfile)
    assert code == 0 and args is not None and args.command is None
    assert run("--db", dbfile, "sessions").returncode == 0


def test_a_session_that_is_not_there_is_said_without_opening_the_tui(dbfile: str) -> None:
    code, args, err = opened("--db", dbfile, "nosuchsession")
    assert code == 1 and args is None and "no session matches 'nosuchsession'" in err
    code, args, err = opened("open", "--db", str(Path(dbfile).with_name("none.db")), SID)
    assert code == 1 and args is None and "no database" in err


def test_a_mistyped_command_is_said_as_one_not_taken_for_a_session(dbfile: str, tmp_path: Path) -> None:
    fresh = str(tmp_path / "none" / "t.db")  # no database yet: no session either
    for db in (dbfile, fresh):
        for argv, meant in ((("serach", "foo"), "search"), (("stat",), "stats"), (("opne", "x"), "open")):
            code, args, err = opened("--db", db, *argv)
            assert code == 2 and args is None, (argv, err)
            assert (
                f"unknown command {argv[0]!r}; did you mean {meant!r}? (threadloom --help lists them)" in err
            )
    assert not Path(fresh).parent.exists()  # nothing created for it
    # a real session (or its prefix) still opens; a word close to no command is still a session
    code, args, _ = opened("--db", dbfile, SID[:8])
    assert code == 0 and args is not None and args.open_session == SID
    code, args, err = opened("--db", dbfile, "nosuchsession")
    assert code == 1 and "no session matches 'nosuchsession'" in err
    # `open WORD` typed in full is a session, whatever it looks like
    code, args, err = opened("open", "--db", dbfile, "stat")
    assert code == 1 and "no session matches 'stat'" in err
