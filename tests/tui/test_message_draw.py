"""How the message viewer draws one message, on its own (no App, a Rich console of the test's):
tool calls closed and opened, text as Markdown or as written, the lines at another width."""

from __future__ import annotations

import io
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from threadloom.core.read.browse import MessageRow
from threadloom.core.read.query import get_session
from threadloom.core.store import db
from threadloom.tui.message_blocks import Rendered
from threadloom.tui.message_draw import TEXT_PREVIEW, Canvas, MessageDrawer
from threadloom.tui.message_state import PAGE, MessageState

from tests.builders.claude import Transcript, tool_use
from tests.support import ingest

SID = "dddddddd-1111-4222-8333-000000000d01"
REPLY = (
    "The **linker** runs `before` the compiler, so every object it needs is missing when it starts."
    "\n\n# Plan\n\n- reorder the steps"
)
LONG = "\n".join(f"line {n} of the log" for n in range(1, 41))


@pytest.fixture
def archive(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A prompt, a reply in Markdown with a Bash call and its result, and a long prompt."""
    t = Transcript(tmp_path / "projects" / "-srv-draw" / f"{SID}.jsonl", SID, cwd="/srv/draw")
    t.user("why does the build fail?")
    t.assistant(REPLY, tools=[tool_use("tb1", "Bash", command="make build")])
    t.tool_result("tb1", "error: undefined reference to main")
    t.user(LONG)
    t.write()
    conn = db.connect(tmp_path / "t.db")
    ingest(conn, tmp_path / "projects")
    yield conn
    conn.close()


@pytest.fixture
def drawer(archive: sqlite3.Connection) -> MessageDrawer:
    """The session opened in a drawer, its rows read a page at a time as the viewer reads them."""
    session = get_session(archive, SID)
    assert session is not None
    state = MessageState()
    state.open(SID, range(session.message_count))

    def row(pos: int) -> MessageRow | None:
        if state.needs_page(pos):
            state.read_page(archive, pos // PAGE)
        return state.rows.get(pos)

    drawer = MessageDrawer(state, row)
    drawer.conn = archive
    return drawer


def draw(drawer: MessageDrawer, pos: int, width: int = 80) -> Rendered:
    return drawer.draw(pos, Canvas(Console(width=width, color_system=None), width))


def text(rendered: Rendered, kind: str | None = None) -> str:
    """The drawn lines (of the blocks of `kind`), their right margins trimmed."""
    spans = [(b.start, b.end) for b in rendered.blocks if kind is None or b.kind == kind]
    return "\n".join(rendered.strips[i].text.rstrip() for start, end in spans for i in range(start, end))


def position(drawer: MessageDrawer, needle: str) -> int:
    return next(pos for pos in range(drawer.state.count) if needle in text(draw(drawer, pos)))


def test_a_tool_call_is_one_line_until_opened_then_its_input_and_output(drawer: MessageDrawer) -> None:
    reply = position(drawer, "◆ assistant")
    closed = draw(drawer, reply)
    tool = next(b for b in closed.blocks if b.kind == "tool")
    assert (tool.key, tool.end - tool.start, tool.target) == ("tool:tb1", 1, True)
    assert tool.call is not None and tool.call.name == "Bash"
    assert "▸ Bash  make build" in text(closed, "tool") and "undefined reference" not in text(closed)
    drawer.state.toggle("tool:tb1")
    opened = draw(drawer, reply)
    assert "▾ Bash  make build" in text(opened, "tool")
    assert "error: undefined reference to main" in text(opened, "tool")
    assert len(opened.strips) > len(closed.strips) and text(opened, "text") == text(closed, "text")
    drawer.state.toggle_all()  # every call open (what was toggled forgotten), then every one closed
    assert text(draw(drawer, reply)) == text(opened)
    drawer.state.toggle_all()
    assert text(draw(drawer, reply)) == text(closed)
    # the tool's result has no lines of its own: it is drawn under its call
    assert draw(drawer, reply + 1).strips == []


def test_text_is_rendered_as_markdown_or_shown_as_written(drawer: MessageDrawer) -> None:
    reply = position(drawer, "◆ assistant")
    rendered = text(draw(drawer, reply), "text")
    assert "The linker runs before the compiler" in rendered and "**" not in rendered
    assert "\n  Plan" in rendered and "# Plan" not in rendered and "• reorder the steps" in rendered
    drawer.state.toggle_markdown()
    written = text(draw(drawer, reply), "text")
    assert "The **linker** runs `before` the compiler" in written
    assert "# Plan" in written and "- reorder the steps" in written


def test_a_narrower_width_wraps_the_same_message_onto_more_lines(drawer: MessageDrawer) -> None:
    reply = position(drawer, "◆ assistant")
    wide, narrow = draw(drawer, reply, 100), draw(drawer, reply, 40)
    assert {s.cell_length for s in wide.strips} == {100} and {s.cell_length for s in narrow.strips} == {40}
    assert len(narrow.strips) > len(wide.strips)
    assert [b.kind for b in narrow.blocks] == [b.kind for b in wide.blocks]
    assert " ".join(text(narrow, "text").split()).endswith(
        "so every object it needs is missing when it starts. Plan • reorder the steps"
    )
    assert all(len(line) <= 40 for line in text(narrow).splitlines())


def test_a_long_text_shows_its_first_lines_until_opened(drawer: MessageDrawer) -> None:
    prompt = position(drawer, "line 1 of the log")
    clipped = draw(drawer, prompt)
    block = next(b for b in clipped.blocks if b.kind == "text")
    # the header, the text's first lines and a note of the rest, in as many lines as a preview
    assert block.clipped and block.end - block.start == TEXT_PREVIEW + 1
    shown = text(clipped)
    assert "line 13 of the log" in shown and "line 14 of the log" not in shown
    assert "… 27 more lines · Enter shows all" in shown
    drawer.state.toggle(block.key or "")
    whole = draw(drawer, prompt)
    assert (
        not whole.blocks[1].clipped
        and "line 40 of the log" in text(whole)
        and "more lines" not in text(whole)
    )
    # its estimate before it was drawn was its preview's height, as the viewer lays it out
    assert drawer.estimate(prompt, 80) == len(clipped.strips)


def test_a_system_line_with_no_time_ends_without_an_empty_one() -> None:
    """A record with no time drew `── system: … ·  ──`, a separator before nothing."""
    from threadloom.tui.render import event_line

    def line(timestamp: int | None) -> str:
        row = MessageRow(1, 1, None, None, "system", "informational", None, "note", None, None, timestamp,
                         False, False, None, None)  # fmt: skip
        return event_line(row).plain

    assert line(None) == "── informational: note ──"
    assert re.fullmatch(r"── informational: note · \d\d:\d\d ──", line(1_700_000_000_000))


def test_an_opened_call_draws_a_bounded_part_of_a_huge_input_or_output(tmp_path: Path) -> None:
    """A tool that printed 1 MB on one line, a Write of 20,000 lines, a command of 1 MB: opened,
    each drew every wrapped row (tens of thousands, seconds of each redraw: Expand all, Markdown,
    End froze the pane). Each now draws its first part and says how much is left out."""
    sid = "dddddddd-1111-4222-8333-000000000d02"
    t = Transcript(tmp_path / "projects" / "-srv-huge" / f"{sid}.jsonl", sid, cwd="/srv/huge")
    t.user("print it all")
    t.assistant(None, tools=[tool_use("th1", "Bash", command="cat one-line.min.js")])
    t.tool_result("th1", "Q" * 1_000_000)
    t.assistant(None, tools=[tool_use("th2", "Write", file_path="/srv/huge/big.py", content=LONG * 500)])
    t.tool_result("th2", "File created successfully")
    t.assistant(None, tools=[tool_use("th3", "Bash", command="echo " + "a" * 1_000_000)])
    t.tool_result("th3", "ok")
    t.write()
    conn = db.connect(tmp_path / "t.db")
    ingest(conn, tmp_path / "projects")
    state = MessageState()
    session = get_session(conn, sid)
    assert session is not None
    state.open(sid, range(session.message_count))
    state.read_page(conn, 0)
    drawer = MessageDrawer(state, state.rows.get)
    drawer.conn = conn
    state.toggle_all()
    for needle, note in (
        ("one-line.min.js", "more characters (r shows the raw record)"),
        ("big.py", "more lines (r shows the raw record)"),
        ("echo aaa", "more characters (r shows the raw record)"),
    ):
        drawn = draw(drawer, position(drawer, needle), 100)
        assert len(drawn.strips) < 1_200, needle
        assert note in text(drawn, "tool"), needle
    conn.close()


def test_a_prompt_is_drawn_with_its_backslashes_and_a_reply_as_markdown() -> None:
    """The viewer drew a prompt's Windows path `C:\\Users\\me\\.config` as `C:\\Users\\me.config`
    (Markdown's escape) where the prompt was typed, not written as Markdown."""
    from threadloom.tui.render import message_text

    def drawn(role: str) -> str:
        row = MessageRow(1, 1, None, None, role, None, role, "open C:\\Users\\me\\.config **now**", None,
                         None, None, False, False, None, None)  # fmt: skip
        console = Console(width=80, file=io.StringIO(), color_system=None)
        console.print(message_text(row))
        return console.file.getvalue().strip()  # type: ignore[attr-defined]

    assert drawn("user") == "open C:\\Users\\me\\.config now"
    assert drawn("assistant") == "open C:\\Users\\me.config now"
