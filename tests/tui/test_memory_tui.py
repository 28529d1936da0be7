"""Memory in the TUI, and the round trip people and agents share: tagged and noted on the command line,
read and written by an agent over MCP, seen (and added to) in the TUI, all of it kept by
`ingest --rebuild`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from textual.widgets import Input, OptionList, Static
from threadloom.core.insight import memory
from threadloom.core.store import db
from threadloom.tui.memory import BookmarksScreen, MarkScreen, MemoryScreen
from threadloom.tui.messages import MessageView
from threadloom.tui.panes import SessionTree

from tests.builders.memory import API, WEB, write_archive
from tests.support import run
from tests.tui_support import make_app, run_test, settle, until

ROOT = Path(__file__).resolve().parents[2]


def read(path: Path, kind: str, session: str) -> list[str]:
    conn = db.connect(path, readonly=True)
    try:
        return sorted(m.value for m in memory.marks(conn, kind=kind, session_id=session))
    finally:
        conn.close()


async def mcp_calls(path: Path, calls: list[tuple[str, dict]]) -> list[dict]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "threadloom.core.cli", "mcp", "--db", str(path)],
        env={
            "HOME": str(path.parent / "home"),
            "CLAUDE_CONFIG_DIR": str(path.parent / "claude"),
            "PYTHONPATH": str(ROOT),
        },
        cwd=str(ROOT),
    )
    out = []
    async with Client(params, read_timeout_seconds=60) as client:
        for tool, args in calls:
            result = await client.call_tool(tool, args)
            assert not result.is_error, result.content
            out.append(json.loads(result.content[0].text))  # type: ignore[union-attr]
    return out


@pytest.mark.long(5)
async def test_memory_round_trip_cli_mcp_tui_and_rebuild(tmp_path: Path) -> None:
    path, root = write_archive(tmp_path)
    # a person tags and notes on the command line
    assert run("tag", "--db", str(path), API[:8], "timezone").returncode == 0
    assert run("note", "--db", str(path), API[:8], "UTC everywhere, decided with Ada").returncode == 0

    # an agent reads them over MCP, then writes its own
    recent, noted, remembered, tagged = await mcp_calls(
        path,
        [
            ("recent_sessions", {"project": "api"}),
            ("search", {"query": "note:ada"}),
            (
                "remember",
                {
                    "title": "Dates",
                    "content": "Store UTC",
                    "kind": "decision",
                    "project": "/srv/api",
                    "author_session": API,
                },
            ),  # fmt: skip
            ("tag", {"target": f"{API}#1", "tags": ["answer"], "author_session": API}),
        ],
    )
    assert recent["sessions"][0]["tags"] == ["timezone"]
    assert {h["session_id"] for h in noted["hits"]} == {API}
    assert remembered["updated_by"] == f"agent:{API}" and tagged["target"] == f"{API}#1"

    # the TUI shows what both wrote, and adds its own
    app = make_app(path)
    async with run_test(app, size=(150, 44)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(API)
        await pilot.pause()
        tree = app.query_one(SessionTree)
        tree.focus()
        await pilot.pause()
        await pilot.press("M")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MemoryScreen)
        assert [e.title for e in screen.entries] == ["Dates"]
        assert screen.query_one("#memory-box").border_title == "Memory · 1 entry"  # not "1 entries"
        assert screen.tags == [("answer", 1), ("timezone", 1)]
        detail = str(screen.query_one("#memory-detail", Static).render())
        assert "Store UTC" in detail and f"agent:{API}" in detail  # the entry's history, by its author
        await pilot.press("escape")
        await pilot.pause()

        await pilot.press("t")  # tag the session under the cursor
        await pilot.pause()
        assert isinstance(app.screen, MarkScreen) and app.screen.present == ["timezone"]
        app.screen.query_one(Input).value = "dates, Flaky Test"
        await pilot.press("enter")
        await until(pilot, lambda: read(path, "tag", API) == ["answer", "dates", "flaky-test", "timezone"])
        # the toast and the box list the tags alike: in order, a comma between two
        await until(pilot, lambda: any(n.message.startswith("Tags: ") for n in app._notifications))
        said = next(n.message for n in app._notifications if n.message.startswith("Tags: "))
        assert said.startswith("Tags: dates, flaky-test, timezone"), said
        await pilot.press("t")
        await pilot.pause()
        assert str(app.screen.query_one("#mark-now", Static).render()) == "now: dates, flaky-test, timezone"
        await pilot.press("escape")
        await pilot.pause()

        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, MarkScreen)
        app.screen.query_one(Input).value = "looked at in the TUI"
        await pilot.press("enter")
        await until(pilot, lambda: len(read(path, "note", API)) == 2)

        view = app.query_one(MessageView)
        view.focus()
        await pilot.pause()
        await pilot.press("b")  # bookmark the message under the viewer's cursor
        await until(pilot, lambda: read(path, "bookmark", API) == [""])
        await pilot.press("B")
        await settle(pilot)
        assert isinstance(app.screen, BookmarksScreen) and len(app.screen.found) == 1
        listing = app.screen.query_one(OptionList)
        listing.highlighted = 0
        await pilot.press("enter")
        await settle(pilot)
        assert view.session_id == API

    # a rebuild starts the database afresh from the agents' files: the memory is all there
    res = run("ingest", "--db", str(path), "--rebuild", "-q", "--only", "--source", str(root))
    assert res.returncode == 0, res.stderr
    assert read(path, "tag", API) == ["answer", "dates", "flaky-test", "timezone"]
    assert len(read(path, "note", API)) == 2 and read(path, "bookmark", API) == [""]
    (recalled,) = await mcp_calls(path, [("recall", {"session": API})])
    assert [(e["title"], e["content"]) for e in recalled["entries"]] == [("Dates", "Store UTC")]


def header_lines(view: MessageView) -> list[str]:
    return [s.text.strip() for p in range(len(view.seqs)) for s in view.ensure(p).strips]


async def test_a_messages_tags_show_in_its_header_and_a_notes_it(tmp_path: Path) -> None:
    """`t` on a message kept the tag (tag:x found it) but its header never showed it; and the
    viewer had no way to note a message (its n is the next match)."""
    path, _ = write_archive(tmp_path)
    assert run("tag", "--db", str(path), f"{API}#1", "[red]loud").returncode == 0  # user text, not markup
    app = make_app(path)
    async with run_test(app, size=(200, 44)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(API)
        await pilot.pause()
        view = app.query_one(MessageView)
        view.focus()
        await pilot.pause()
        assert any(
            line.startswith("◆ assistant") and line.endswith("#[red]loud") for line in header_lines(view)
        )
        prompt = next(line for line in header_lines(view) if line.startswith("● user"))
        assert "#" not in prompt

        view.action_first()
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, MarkScreen)
        app.screen.query_one(Input).value = "dates"
        await pilot.press("enter")
        await until(pilot, lambda: any(line.endswith("#dates") for line in header_lines(view)))
        prompt = next(line for line in header_lines(view) if line.startswith("● user"))
        assert prompt.endswith("#dates")
        app.browser.jump_to_session(WEB)  # opened again: read from the archive
        await pilot.pause()
        app.browser.jump_to_session(API)
        await pilot.pause()
        assert any(line.startswith("● user") and line.endswith("#dates") for line in header_lines(view))

        # a: a note on the message under the cursor (the palette names it too)
        view.focus()
        view.action_first()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Messages: note this message" in titles and "Messages: tag this message" in titles
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, MarkScreen) and app.screen.target.seq == 0
        assert str(app.screen.query_one("#mark-now", Static).render()) == "now: none"  # not "0 note(s)"
        app.screen.query_one(Input).value = "asked on Monday"
        await pilot.press("enter")
        conn = db.connect(path, readonly=True)
        try:
            target = memory.parse_target(conn, f"{API}#0")
            await until(
                pilot, lambda: [m.value for m in memory.marks(conn, kind="note", target=target)] != []
            )
            assert [m.value for m in memory.marks(conn, kind="note", target=target)] == ["asked on Monday"]
        finally:
            conn.close()
