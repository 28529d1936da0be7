"""The viewer shows the whole output Claude Code saved to a side file (the transcript keeps a
2 KB preview), and `o` opens all of it; `o` on the call that ended a plan opens the plan file."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import TextArea
from threadloom.core.store import db
from threadloom.tui.app import ThreadloomApp
from threadloom.tui.messages import MessageView
from threadloom.tui.screens import OutputScreen

from tests.builders.side_files import SID, claude_home
from tests.support import ingest
from tests.tui_support import cursor_to_tool, fixed_now, run_test, until


def shown(view: MessageView) -> str:
    return "\n".join(
        "".join(s.text for s in view.render_line(y)) for y in range(view.scrollable_content_region.height)
    )


@pytest.mark.long(6)
async def test_a_saved_output_is_shown_whole_and_opens(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    claude_home(root)
    conn = db.connect(tmp_path / "side.db")
    ingest(conn, root)
    conn.close()
    app = ThreadloomApp(db_path=tmp_path / "side.db", ingest=False, now=fixed_now)
    async with run_test(app, size=(140, 40)) as pilot:
        app.browser.jump_to_session(SID)
        await pilot.pause()
        view = app.query_one(MessageView)
        await pilot.press("e")  # every call expanded
        await until(pilot, lambda: "kept from tool-results/toolu_big.txt" in shown(view))
        # the preview in the transcript stops at line 0: these lines come from the kept file
        assert "line 10 of the build log" in shown(view)
        assert "the plan is kept as plans/brave-dancing-otter.md" in shown(view)
        await cursor_to_tool(pilot, "ExitPlanMode")  # the call that ended the plan
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, OutputScreen))
        assert app.screen.query_one(TextArea).text == "# Plan\n\n1. build\n2. ship\n"
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, OutputScreen))
        await cursor_to_tool(pilot, "Bash")  # the call that ran the build
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, OutputScreen))
        area = app.screen.query_one(TextArea)
        lines = area.text.split("\n")
        # no escape sequence reaches the terminal: colours dropped, a window title drawn as text
        assert lines[0] == "FAILED first try␛]0;owned␇"
        assert lines[1:] == [f"line {i} of the build log \ufffd\ufffd" for i in range(60_000)] + [""]
        assert "\x1b" not in area.text and "\r" not in area.text
        assert "toolu_big.txt" in str(area.border_title)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, OutputScreen))


async def test_o_where_nothing_was_kept_says_what_o_opens(tmp_path: Path) -> None:
    """`o` on a tool call whose output the agent saved nowhere said "No image here": the key opens
    a side file as well, and the note says none was kept for this call."""
    from tests.tui_support import CHECKOUT, build_demo_db, make_app, session_id

    app = make_app(build_demo_db(tmp_path, long_turns=3))
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        await cursor_to_tool(pilot, "Bash")
        await pilot.press("o")
        said = [n.message for n in app._notifications]
        assert said and "No image here" not in said, said
        assert said[-1].startswith(
            "Nothing to open here: no image, and no side file kept for this Bash call"
        ), said
