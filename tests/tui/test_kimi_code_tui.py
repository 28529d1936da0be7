"""What the message viewer draws of Kimi Code's sessions (core/adapters/kimi_code.py): lines that
say where the context was undone or cleared."""

from __future__ import annotations

from pathlib import Path

from textual.widget import Widget
from threadloom.core.store import db
from threadloom.tui.messages import MessageView
from threadloom.tui.render import subagent_hint
from threadloom.tui.subagents import SubagentList, SubagentsScreen

from tests.builders import kimi_code
from tests.support import ingest
from tests.tui_support import cursor_to_tool, ingested_db, make_app, run_test, until, viewer_lines


def drawn(tmp_path: Path, sid: str, width: int = 100) -> list[str]:
    """Every message of the session as the viewer draws it, its lines' right margins trimmed."""
    conn = db.connect(tmp_path / "t.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        return viewer_lines(conn, sid, width)
    finally:
        conn.close()


def test_the_viewer_marks_an_undo_and_a_cleared_context_where_they_happened(tmp_path: Path) -> None:
    kimi_code.rewound_session(tmp_path)
    lines = [line.strip() for line in drawn(tmp_path, kimi_code.REWOUND) if line.strip()]
    undo = next(
        n for n, line in enumerate(lines) if line.startswith("── undo: the last prompt and its replies")
    )
    clear = next(n for n, line in enumerate(lines) if line.startswith("── clear: context cleared"))
    assert lines.index("Summed in floats.") < undo < lines.index("sum the carts in Decimal")
    assert lines.index("Summed in Decimal.") < clear < lines.index("what is left to do?")


def test_a_swarm_s_call_says_how_many_subagents_it_started(tmp_path: Path) -> None:
    """An `AgentSwarm` call that started two subagents said "↳ subagent", as a call that starts
    one does: it says how many it started. `Agent`'s call, which starts one, says what it said."""
    kimi_code.swarm_session(tmp_path)
    kimi_code.kimi_code_session(tmp_path)
    swarm = [line for line in drawn(tmp_path, kimi_code.SWARM) if "▸ AgentSwarm" in line]
    assert len(swarm) == 1 and swarm[0].endswith("↳ 2 subagents explore (Enter)"), swarm
    one = [line for line in drawn(tmp_path, kimi_code.SID) if "▸ Agent " in line]
    assert len(one) == 1 and one[0].endswith("↳ subagent coder (Enter)"), one
    # narrower, the count is what stays: its description tells calls apart, the hint gives way
    assert [subagent_hint("explore", room, 12) for room in (40, 28, 20, 8, 3)] == [
        "  ↳ 12 subagents explore (Enter)",
        "  ↳ 12 subagents explore",
        "  ↳ 12 subagents",
        "  ↳ 12",
        "  ↳",
    ]


def screen_lines(widget: Widget) -> list[str]:
    return [widget.render_line(y).text.rstrip() for y in range(widget.scrollable_content_region.height)]


async def test_enter_on_a_swarm_s_call_offers_its_subagents_and_esc_comes_back_to_it(tmp_path: Path) -> None:
    """Enter on an `AgentSwarm` call opened its first subagent only: the second was nowhere but in
    the session tree. Enter lists them, each named by its item as the tree names it; the one chosen
    opens, and Esc there comes back to the call. Esc in the list opens none; `Agent`'s call, which
    started one, opens it at once, as before."""
    kimi_code.swarm_session(tmp_path)
    kimi_code.kimi_code_session(tmp_path)
    app = make_app(ingested_db(tmp_path, tmp_path / ".kimi-code"))
    swarm = kimi_code.SWARM
    async with run_test(app, size=(120, 36)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(swarm)
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == swarm)
        view.focus()
        await cursor_to_tool(pilot, "AgentSwarm")
        call_seq = view.current_row().seq
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SubagentsScreen))
        listing = app.screen.query_one(SubagentList)
        await pilot.pause()
        rows = [line.strip(" │╭╮╰╯─") for line in screen_lines(listing)]
        assert [row.split()[:3] for row in rows if row] == [
            ["⚙", item, "explore"] for item in kimi_code.ITEMS
        ]
        assert "AgentSwarm · review modules · 2 subagents" in str(listing.border_title)
        await pilot.press("escape")  # none chosen: the viewer stays on the call
        await until(pilot, lambda: not isinstance(app.screen, SubagentsScreen))
        assert view.session_id == swarm and not app.browser.trail
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SubagentsScreen))
        await pilot.press("down", "enter")  # the second: tax.py's
        await until(pilot, lambda: view.session_id == f"{swarm}:agent-1")
        await pilot.press("escape")
        await until(pilot, lambda: view.session_id == swarm)
        await until(pilot, lambda: view.current_row().seq == call_seq)
        app.browser.jump_to_session(kimi_code.SID)
        await until(pilot, lambda: view.session_id == kimi_code.SID)
        view.focus()
        await cursor_to_tool(pilot, "Agent")
        await pilot.press("enter")
        await until(pilot, lambda: view.session_id == f"{kimi_code.SID}:agent-0")
        assert not isinstance(app.screen, SubagentsScreen)
