"""What a log holds that a terminal would act on (bidirectional overrides and isolates, escape
sequences) is drawn as text by every command that prints it, on a terminal and piped alike:
a right-to-left override in a title reorders what follows it on the screen ("Trojan Source"), and
an escape sequence whose ESC is dropped still leaves its payload behind as if it were text."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders.claude import Transcript, tool_use
from tests.support import run

SID = "eeeeeeee-1111-4222-8333-00000000b1d1"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def db(tmp_path: Path) -> str:
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{SID}.jsonl", SID, cwd="/srv/app\u202etxt.exe")
    t.user("Fix the \u202eevil\u202c parser and \u2066isolate\u2069 it")
    t.assistant(
        "Looking at \u202egnp.exe\u202c now.",
        tools=[tool_use("tb1", "Bash\x1b[2J", command="ls \x1b]0;owned\x07 \u202eevil")],
    )
    t.tool_result("tb1", "evil\u202e output \x1b[2Jcleared")
    t.assistant("Done with the \u202eevil\u202c one.")
    t.user("coloured X\x1b[31mR\x1b[0m\rY, plain X\rZ")  # a carriage return alone: drawn, no text lost
    t.write()
    path = str(tmp_path / "t.db")
    assert run("--db", path, "ingest", "--only", "--source", str(tmp_path / "projects")).returncode == 0
    return path


def on_a_terminal(*argv: str) -> str:
    """The command's output written to a pseudo-terminal, as a user running it sees it."""
    leader, follower = pty.openpty()
    env = dict(os.environ, COLUMNS="200", LINES="50", TERM="xterm-256color")
    proc = subprocess.Popen(
        [sys.executable, "-m", "threadloom.core.cli", *argv],
        stdout=follower,
        stderr=follower,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
    )
    os.close(follower)
    out = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the command ended and closed its side
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(leader)
    # the console's own colours are the only sequences a command writes
    return re.sub(r"\x1b\[[0-9;]*m", "", out.decode())


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_show_sessions_and_search_draw_bidi_controls_and_escapes_as_text(db: str, terminal: bool) -> None:
    def printed(*argv: str) -> str:
        if terminal:
            return on_a_terminal(*argv)
        res = run(*argv)
        assert res.returncode == 0, res.stderr
        return res.stdout

    show = printed("--db", db, "show", SID[:13])
    sessions = printed("--db", db, "sessions", "--wide")
    search = printed("--db", db, "search", "evil")
    for name, out in (("show", show), ("sessions", sessions), ("search", search)):
        assert not RAW.search(out.replace("\n", "").replace("\r", "")), (name, repr(out[:400]))
    assert "Fix the \\u202eevil\\u202c parser and \\u2066isolate\\u2069 it" in sessions
    assert "/srv/app\\u202etxt.exe" in show and "\\u202egnp.exe\\u202c" in show
    # an escape sequence is drawn whole, its ESC as ␛: not dropped, nor its payload left as if text
    assert "Bash␛[2J" in show and "ls ␛]0;owned␇ \\u202eevil" in show
    assert "\\u202eevil\\u202c" in search
    # Rich kept only what followed a carriage return among colours ("Y"), and dropped one alone ("XZ")
    assert "coloured XR\u240dY, plain X\u240dZ" in show


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_the_memory_and_hide_commands_draw_what_they_print_of_the_archive_as_text(
    db: str, terminal: bool
) -> None:
    """Commands that write print what the archive holds too: a project's path from a log, a note or a
    title an agent wrote over MCP."""

    def printed(*argv: str) -> str:
        if terminal:
            return on_a_terminal(*argv)
        res = run(*argv)
        assert res.returncode == 0, res.stderr
        return res.stdout + res.stderr

    outs = {
        "tag": printed("--db", db, "tag", SID[:13], "x\u202eowned"),
        "note": printed("--db", db, "note", SID[:13], "read \x1b]0;owned\x07 this"),
        "memory add": printed(
            "--db",
            db,
            "memory",
            "add",
            "--kind",
            "fact",
            "--project",
            "/srv/app\u202etxt.exe",
            "--title",
            "T\x1b[2J",
            "body \u202e",
        ),  # fmt: skip
        "memory list": printed("--db", db, "memory", "list"),
        "hide": printed("--db", db, "hide", "--project", "/srv/app\u202etxt.exe"),
        "unhide": printed("--db", db, "unhide", "--project", "/srv/app\u202etxt.exe"),
    }
    for name, out in outs.items():
        assert not RAW.search(out.replace("\n", "").replace("\r", "")), (name, repr(out[:400]))
    assert "/srv/app\\u202etxt.exe" in outs["hide"] and "T␛[2J" in outs["memory list"]


def test_a_line_break_in_a_path_is_drawn_not_printed(tmp_path: Path) -> None:
    """restore, sources and verify print a path a line each: a folder whose name holds a line break
    (a log from elsewhere) forged a line of their output ("restored: /etc/passwd")."""
    folder = "-srv-a\nrestored: \tetc-passwd"
    t = Transcript(tmp_path / "projects" / folder / f"{SID}.jsonl", SID, cwd="/srv/app")
    t.user("hello")
    t.assistant("world")
    path = t.write()
    db_path = str(tmp_path / "t.db")
    assert run("--db", db_path, "ingest", "--only", "--source", str(tmp_path / "projects")).returncode == 0
    drawn = "-srv-a\u240arestored: \u2409etc-passwd"
    out = run("--db", db_path, "restore", SID, "--to", str(tmp_path / "out")).stdout
    assert out.count("\n") == 2 and drawn in out, out
    assert (tmp_path / "out").exists()
    out = run("--db", db_path, "sources").stdout
    assert "\nrestored:" not in out and "\tetc" not in out
    path.unlink()
    out = run("--db", db_path, "verify").stdout
    assert f"gone: {tmp_path}/projects/{drawn}/" in out and "\nrestored:" not in out, out


def test_what_fork_refuses_with_draws_the_log_s_values(tmp_path: Path) -> None:
    """A task folder named with an escape sequence: fork's refusal quoted it raw on stderr (the
    terminal cleared)."""
    from tests.builders import cline

    task = "\x1b[2Jx"
    cline.task_folder(tmp_path, task=task, ext="rooveterinaryinc.roo-cline", ui=cline.ui_stream())
    db_path = str(tmp_path / "t.db")
    assert (
        run(
            "--db",
            db_path,
            "ingest",
            "--only",
            "--source",
            str(cline.storage(tmp_path, "rooveterinaryinc.roo-cline")),
        ).returncode
        == 0
    )
    [listed] = json.loads(run("--db", db_path, "sessions", "--json").stdout)
    last = json.loads(run("--db", db_path, "show", listed["id"], "--json").stdout)["messages"][-1]["entry_id"]
    refused = run("--db", db_path, "fork", str(last))
    assert refused.returncode == 1 and "\u241b[2Jx" in refused.stderr and not RAW.search(refused.stderr)
