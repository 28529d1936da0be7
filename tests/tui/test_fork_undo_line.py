"""The fork picker's line about the files a fork leaves as they are, as it reads."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static
from threadloom.tui.app import ThreadloomApp
from threadloom.tui.fork import ForkPicker
from threadloom.tui.messages import MessageView

from tests.builders.claude import Transcript, tool_use
from tests.tui_support import CHECKOUT, build_demo_db, make_app, run_test, session_id, settle, shown


async def picker_undo_line(pilot) -> str:
    """`f` on the message under the cursor: the picker's line about the files left as they are."""
    await pilot.press("f")
    await settle(pilot)
    picker = pilot.app.screen
    assert isinstance(picker, ForkPicker)
    return shown(picker.query_one("#fork-undo", Static)).replace("\n", " ")


async def test_one_file_left_as_it_is_is_taken_back_as_it(tmp_path: Path) -> None:
    """One file edited after the point: the patch "takes it back", not "them"."""
    db_path = build_demo_db(tmp_path / "demo", long_turns=3)
    async with run_test(make_app(db_path), size=(140, 40)) as pilot:
        await pilot.pause()
        app: ThreadloomApp = pilot.app
        sid = session_id(app, CHECKOUT)
        app.browser.jump_to_session(sid)
        await pilot.pause()
        await pilot.press("3", "G", "{")  # the last prompt: "Instead, add a test …"
        said = await picker_undo_line(pilot)
        assert "1 file edited after this point stays as it is" in said, said
        assert "zero-rated.test.ts (Write, new) · u writes a patch that takes it back" in said, said
        await pilot.press("f")  # Fork here: what it writes, asked before it does
        await settle(pilot)
        asked = shown(pilot.app.screen.query_one("#fork-confirm-text", Static))
        assert "1 file edited after this point stays as it is (u writes a patch that takes it back)" in asked


async def test_files_a_shell_command_changed_are_said_once_for_all(tmp_path: Path) -> None:
    """Files one shell command removed were each followed by the same "(shell; the records cannot
    take it back)": the files are named, then what they share, once."""
    from threadloom.core.store import db

    from tests.support import ingest

    sid = "abcdef00-0000-4000-8000-00000000f0c1"
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{sid}.jsonl", sid)
    t.user("Clean the build and fix the note")
    t.assistant("Looking.")
    t.assistant(None, tools=[tool_use("b1", "Bash", command="rm -rf .venv build dist")])
    t.tool_result("b1", "")
    t.assistant(None, tools=[tool_use("w1", "Write", file_path="/home/dev/app/NOTE.md", content="hi\n")])
    note = {"type": "create", "filePath": "/home/dev/app/NOTE.md", "content": "hi\n", "structuredPatch": []}
    t.tool_result("w1", "File created successfully at: /home/dev/app/NOTE.md", tool_use_result=note)
    t.assistant("Done.")
    t.write()
    db_path = tmp_path / "t.db"
    conn = db.connect(db_path)
    ingest(conn, tmp_path / "projects")
    conn.close()
    async with run_test(make_app(db_path), size=(140, 40)) as pilot:
        await pilot.pause()
        app: ThreadloomApp = pilot.app
        app.browser.jump_to_session(sid)
        await pilot.pause()
        app.query_one(MessageView).go_to_seq(1)  # "Looking.": before both calls
        said = await picker_undo_line(pilot)
        assert "4 files edited after this point stay as they are" in said, said
        assert ".venv, build, dist (shell; the records cannot take them back)" in said, said
        assert said.count("cannot take") == 1, said
        assert "NOTE.md (Write, new)" in said and "takes 1 of them back" in said, said
        await pilot.press("f")  # Fork here: the question says as much, not that all four are taken back
        await settle(pilot)
        asked = " ".join(shown(pilot.app.screen.query_one("#fork-confirm-text", Static)).split())
        assert (
            "4 files edited after this point stay as they are (u writes a patch that takes 1 of them back)"
            in asked
        )
        assert "holds 2 records: this branch up to" in asked and "0 tool calls" not in asked, asked
