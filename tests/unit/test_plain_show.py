"""`show` piped draws its lines itself (`core.present.render.PlainConsole`, `core.present.markdown.wrap_plain`)
rather than through Rich's layout of each message, and a long session's pages in worker processes
too (`core.present.render.render_pages`). What it writes must be what Rich wrote, character for character:
these tests draw the same sessions both ways (and with workers) and compare, for a variety of
messages (tool calls, diffs, Markdown, wide and combining characters, a hostile log's controls and
escape sequences) at several widths, and for every session of the shared corpus when it is there."""

from __future__ import annotations

import io
import random
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text
from threadloom.core.cli.show import _TrimmedLines
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.present.markdown import fold_line, wrap_plain
from threadloom.core.present.render import PlainConsole, render_files_changed, render_pages, render_session
from threadloom.core.read.query import list_sessions, resolve_session

from tests.builders.claude import Transcript, tool_use
from tests.support import CORPUS, ingest, run

SID = "5e5e5e5e-0000-4000-8000-00000000e5e5"
WIDTHS = (80, 37, 120, 12)
CONSOLE = Console(width=80, file=io.StringIO(), highlight=False)


def drawn(conn: sqlite3.Connection, session_id: str, width: int, *, plain: bool, **options: object) -> str:
    """What `show` writes piped: Rich's console (as before) or the plain one, through the same
    trimming of lines."""
    out = io.StringIO()
    lines = _TrimmedLines(out)
    rich = Console(highlight=False, width=width, height=25, file=lines)  # type: ignore[arg-type]
    assert rich.color_system is None and not rich.is_terminal
    console = PlainConsole(rich) if plain else rich
    session = resolve_session(conn, session_id)
    render_session(console, conn, session, **options)  # type: ignore[arg-type]
    render_files_changed(console, conn, session_id)
    if isinstance(console, PlainConsole):
        console.flush()
    lines.close()
    return out.getvalue()


class BothConsoles:
    """Prints each renderable to a Rich console and to a plain one: a session's renderables are
    built once and laid out both ways (the corpus's thousands of sessions: half the time)."""

    no_color = True
    color_system = None

    def __init__(self, rich: Console, plain: PlainConsole) -> None:
        self.rich, self.plain = rich, plain
        self.width = rich.width

    def print(self, renderable: object = None) -> None:
        if renderable is None:  # a blank line, as `print()` is to each
            self.rich.print()
        else:
            self.rich.print(renderable)
        self.plain.print(renderable)  # type: ignore[arg-type]


def drawn_both(conn: sqlite3.Connection, session_id: str, width: int) -> tuple[str, str]:
    """What `show` writes piped, through Rich's console and through the plain one, from one drawing."""
    outs = [io.StringIO(), io.StringIO()]
    files = [_TrimmedLines(out) for out in outs]
    rich, behind = (Console(highlight=False, width=width, height=25, file=f) for f in files)  # type: ignore[arg-type]
    plain = PlainConsole(behind)
    console = BothConsoles(rich, plain)
    session = resolve_session(conn, session_id)
    render_session(console, conn, session)  # type: ignore[arg-type]
    render_files_changed(console, conn, session_id)  # type: ignore[arg-type]
    plain.flush()
    for f in files:
        f.close()
    return outs[0].getvalue(), outs[1].getvalue()


def rich_rows(text: str, width: int) -> list[str]:
    return [line.plain.rstrip(" ") for line in Text(text).wrap(CONSOLE, width)]


# ---------------------------------------------------------------------- wrapping


def test_lines_are_cut_where_rich_cuts_them() -> None:
    """Words, runs of spaces, words longer than a row (folded), spaces before the first word,
    spaces at the end, one-cell letters beyond ASCII: every width from 1."""
    rng = random.Random(33)
    pieces = ["a", "bc", "def", "word", " ", "  ", "     ", "x" * 17, "é", "—", "→", "▸ ", "ünïcødé", "…"]
    for _ in range(3000):
        line = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
        for width in (1, 2, 3, 5, 8, 13, 40):
            ours = [row.rstrip(" ") for row in fold_line(line, width)]
            assert ours == rich_rows(line, width), (line, width)


def test_any_text_wraps_as_rich_wraps_it() -> None:
    """Beyond the one-cell lines: tabs, wide and combining characters, emoji joined by ZWJ, other
    spaces (no-break, ideographic), line and paragraph separators, blank lines."""
    rng = random.Random(34)
    pieces = [
        "a", "word", " ", "   ", "\n", "\n\n", "\t", "x\ty", "漢字", "かな", "🙂", "👩‍💻", "e\u0301", "\u00a0",
        "\u3000", "\u2028", "\u2029", "\x85", "é", "—", "y" * 11, "全角テキスト", "Ａ",
    ]  # fmt: skip
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        for width in (1, 2, 4, 7, 16, 33):
            ours = [row.rstrip(" ") for row in wrap_plain(Text(text), width, CONSOLE)]
            assert ours == rich_rows(text, width), (text, width)


# ---------------------------------------------------------------------- whole sessions


def varied_session(root: Path) -> Path:
    """A session holding a little of everything `show` draws."""
    t = Transcript(root / "projects" / "-srv-app" / f"{SID}.jsonl", SID, cwd="/srv/app")
    t.user("Fix the parser: it fails on `wide` input — see 漢字テキスト and emoji 👩‍💻 too")
    t.assistant(
        "# Plan\n\n1. read the **parser**\n2. fix _it_\n   - nested `item`\n   - [a link](https://x.dev/a)\n\n"
        "> quoted *text*\n> over two lines\n\n---\n\n| name | size |\n|:-----|-----:|\n| a | 1 |\n"
        "| long cell with words | 22 |\n\n```python\ndef f(x):\n\treturn x  # a tab\n```\n\n"
        "    indented code\n\n![diagram](img.png) and <https://auto.link> done",
        tools=[tool_use("t1", "Bash", command="pytest -q tests/test_parser.py " + "-k x " * 30)],
        thinking="Let me think about the parser " * 20,
    )
    t.tool_result("t1", "1 failed")
    t.assistant(
        None,
        tools=[
            tool_use(
                "t2", "Edit", file_path="/srv/app/parser.py", old_string="a\nb\n", new_string="a\nc\nd\n"
            ),
            tool_use(
                "t3",
                "TodoWrite",
                todos=[
                    {"content": "Fix the parser", "status": "in_progress", "activeForm": "Fixing"},
                    {"content": "Write tests", "status": "pending", "activeForm": "Writing"},
                ],
            ),
        ],  # fmt: skip
    )
    t.tool_result("t2", "ok")
    t.tool_result("t3", "ok")
    # a hostile log: escape sequences, C0 and C1 controls, bidi overrides, a terminal's colours
    t.user("evil \x1b[2J\x1b]0;title\x07 \u202eevil\u202c \x00\x08\x0b\x0c\r\x7f\x9b end")
    t.assistant(
        "coloured \x1b[31mred\x1b[0m and \x1b[1mbold\x1b[0m, then \x1b[2Jclear\n\nplain \u2066iso\u2069",
        tools=[tool_use("t4", "Bash\x1b[2J", command="ls \x1b]0;owned\x07 \u202eevil")],
    )
    t.tool_result("t4", "evil\u202e output \x1b[2Jcleared")
    t.assistant(
        "**markdown** with controls \u202eevil\u202c, \x9b, \x07 and `\x00 code`\n\n- \u2066item\u2069"
    )
    t.assistant("**markdown** with escapes \x1b[2J and `code \x1b[31m` in it, and a\tTab")
    # Aider-style edit blocks: drawn as diffs under their file's name
    t.assistant(
        "Changing it:\n\nparser.py\n```python\n<<<<<<< SEARCH\nold line\n=======\nnew line\nanother\n"
        ">>>>>>> REPLACE\n```\n\nDone."
    )
    # Claude Code's markup: a slash command, a `!` command and its output, a caveat
    t.user(
        "<command-name>/review</command-name>\n<command-message>review</command-message>\n<command-args></command-args>"
    )
    t.user("<bash-input>ls -la</bash-input>")
    t.user("<bash-stdout>total 0\n\x1b[34mdir\x1b[0m</bash-stdout><bash-stderr>warn \x1b[2J</bash-stderr>")
    t.user("<local-command-stdout>compacted \x1b[1mok\x1b[0m</local-command-stdout>")
    t.user(
        "<task-notification><task-id>b1</task-id><status>completed</status>"
        "<summary>Background command done</summary><result>line one\nline two</result></task-notification>"
    )
    t.add({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted \x1b[2J"})
    t.add(
        {
            "type": "user",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "Summary:\n- *one*"},
        }
    )
    t.user("a very long line " + "abcdefghij" * 40 + " then words " * 40)
    t.user("   leading spaces, trailing spaces   \n\n\n  and blank lines   ")
    t.user("x" * 120_000)  # past the characters a message draws: a note says how many more
    path = t.write()  # the compaction's flag as Claude Code writes it, which the viewer reads
    path.write_text(path.read_text().replace('"isCompactSummary": true', '"isCompactSummary":true'))
    return root / "projects"


@pytest.mark.parametrize("markdown", [True, False], ids=["markdown", "as-written"])
def test_the_plain_console_writes_what_rich_wrote(
    conn: sqlite3.Connection, tmp_path: Path, markdown: bool
) -> None:
    ingest(conn, varied_session(tmp_path))
    for width in WIDTHS:
        rich = drawn(conn, SID, width, plain=False, markdown=markdown)
        assert drawn(conn, SID, width, plain=True, markdown=markdown) == rich, width
    rich = drawn(conn, SID, 80, plain=False, markdown=markdown)
    assert "␛[2J" in rich and "\\u202eevil" in rich and "\x1b" not in rich and "\u202e" not in rich
    assert "more characters" in rich


@pytest.mark.long(10)
@pytest.mark.corpus
@pytest.mark.skipif(not CORPUS.is_dir(), reason="corpus absent")
def test_every_corpus_session_is_drawn_as_rich_drew_it(tmp_path: Path) -> None:
    from threadloom.core.store import db

    conn = db.connect(tmp_path / "corpus.db")
    run_ingest(conn, sorted(p for p in CORPUS.iterdir() if p.is_dir()), include_defaults=False)
    sessions = list_sessions(conn)
    assert len(sessions) >= 50
    for i, session in enumerate(sessions):
        for width in (80, 33) if i % 4 == 0 else (80,):  # narrower for a quarter of them (time)
            rich, plain = drawn_both(conn, session.id, width)
            assert plain == rich, (session.id, session.file_path, width)


# ---------------------------------------------------------------------- pages drawn by workers


def long_session(root: Path) -> Path:
    t = Transcript(root / "projects" / "-srv-app" / f"{SID}.jsonl", SID, cwd="/srv/app")
    replies = []
    for i in range(60):
        # step 40 goes back to step 10's answer: a rewind, marked on whichever page it falls
        t.user(f"step {i}: **fix** the `thing` — 漢字 {i}", **({"parent": replies[10]} if i == 40 else {}))
        if i % 2:  # a response over two lines, one a page may begin on: its calls go on under its header
            t.assistant(f"Testing {i}.", msg_id=f"msg_step{i}")
        t.assistant(None, msg_id=f"msg_step{i}", tools=[tool_use(f"b{i}", "Bash", command=f"make test{i}")])
        t.tool_result(f"b{i}", "ok")
        replies.append(t.assistant(f"Done with step {i}.\n\n```python\nprint({i})\n```\n\n- a\n- b \x1b[2J"))
    t.write()
    return root / "projects"


def paged(conn: sqlite3.Connection, path: Path, workers: int, width: int = 80) -> str:
    out = io.StringIO()
    lines = _TrimmedLines(out)
    printer = PlainConsole(Console(highlight=False, width=width, height=25, file=lines))  # type: ignore[arg-type]
    render_pages(printer, conn, str(path), SID, workers=workers, page=7, lead=2)
    printer.flush()
    lines.close()
    return out.getvalue()


def test_pages_drawn_by_workers_are_those_drawn_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from threadloom.core.present import render
    from threadloom.core.store import db

    path = tmp_path / "t.db"
    conn = db.connect(path)
    ingest(conn, long_session(tmp_path))
    whole = drawn(conn, SID, 80, plain=True)
    body = whole[whole.index("\n\n") + 2 :]  # what follows the header
    body = body[: body.rindex("Files changed")] if "Files changed" in body else body
    here: list[int] = []  # the pages this process drew (the workers drew the others)
    draw = render.render_messages
    monkeypatch.setattr(render, "render_messages", lambda *a, **kw: here.append(1) or draw(*a, **kw))
    assert paged(conn, path, workers=0) == body and "print(59)" in body and body.count("↶ rewound") == 1
    pages = len(here)
    assert pages > 20
    for workers in (1, 2):
        here.clear()
        assert paged(conn, path, workers=workers) == body
        assert len(here) == 2 + -(-(pages - 2) // (workers + 1)), workers  # its share, no more
    # the whole command: the header, the pages the workers drew, the summary
    assert drawn(conn, SID, 80, plain=True, workers=2) == whole
    piped = run("--db", str(path), "show", SID, env_extra={"THREADLOOM_SHOW_WORKERS": "2", "COLUMNS": "80"})
    assert piped.returncode == 0 and piped.stdout == whole
    # a worker that cannot draw (it fails at once) leaves its pages to this process
    monkeypatch.setattr(render, "WORKER_MAIN", "raise SystemExit(3)")
    here.clear()
    assert paged(conn, path, workers=2) == body and len(here) == pages


def test_a_call_answered_days_later_says_how_long_in_days(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """A call whose answer came days later (a Cline task resumed after a weekend) read
    `✓ · 271672.0 s` in `show`, where the viewer said hours; both say days and hours now."""
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{SID}.jsonl", SID, cwd="/srv/app")
    t.user("run it")
    t.assistant(None, tools=[tool_use("b1", "Bash", command="make")])
    t.tool_result("b1", "done")
    t.lines[-1]["timestamp"] = "2026-03-04T13:27:52.000Z"  # 3 days, 3 hours and some after the call
    t.write()
    ingest(conn, tmp_path / "projects")
    shown = drawn(conn, SID, 80, plain=True)
    assert "✓ · 3d 3h" in shown and "2716" not in shown
