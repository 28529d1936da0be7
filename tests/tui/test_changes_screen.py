"""The files a session changed, on the demo archive: `c` (and the palette) lists them with the
lines added and removed, Enter lists a file's calls, and Enter on a call puts the message viewer's
cursor on that call, opened on its diff."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Static
from threadloom.core.insight import stats
from threadloom.tui.app import ThreadloomApp
from threadloom.tui.changes import ChangesScreen
from threadloom.tui.messages import MessageView
from threadloom.tui.panes import SessionTree
from threadloom.tui.screens import HelpScreen

from tests.tui_support import CHECKOUT, fixed_now, make_app, run_test, session_id, table_rows

DEMO_LONG_TURNS = 12


async def test_files_changed_lists_the_edits_and_goes_to_a_call(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        assert app.conn is not None
        checkout = session_id(app, CHECKOUT)
        app.browser.jump_to_session(checkout)
        await pilot.pause()
        view = app.browser.query_one(MessageView)
        assert view.session_id == checkout and view.cursor[0] == 0
        await pilot.press("c")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ChangesScreen)
        table = screen.query_one(DataTable)
        # the demo's fix: an Edit of tax.ts (two lines become three) and a new six-line test file
        assert table_rows(table) == [
            ["src/checkout/__tests__/zero-rated.test.ts", "+6", "−0", "1"],
            ["src/checkout/tax.ts", "+3", "−2", "1"],
        ]
        assert str(screen.query_one("#changes-total", Static).render()) == "2 files · +9 −2 · 2 calls"

        await pilot.press("s")  # by path: "__tests__" sorts before "tax.ts" too, so compare the heading
        assert "path" in str(screen.query_one("#changes-heading", Static).render())
        assert [r[0] for r in table_rows(table)] == sorted(r[0] for r in table_rows(table))

        await pilot.press("down", "enter")  # tax.ts: its one Edit
        rows = table_rows(table)
        assert len(rows) == 1 and rows[0][0] == "Edit" and rows[0][2:] == ["+3", "−2", "this session"]
        assert rows[0][1].startswith("2025-06-12 ")
        await pilot.press("escape")  # back to the files, the cursor still on tax.ts
        assert table_rows(table)[table.cursor_row][0] == "src/checkout/tax.ts"
        await pilot.press("enter", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, ChangesScreen)

        (edit,) = stats.change_calls(app.conn, checkout, "src/checkout/tax.ts")
        block, row = view.current_block(), view.current_row()
        assert block is not None and block.call is not None and row is not None
        assert block.call.id == edit.call_id and row.seq == edit.seq and edit.seq > 0
        assert block.key is not None and view.is_expanded(block.key)
        drawn = [s.text for s in view.ensure(view.cursor[0]).strips[block.start : block.end]]
        assert any("+  const tax = Math.round" in line for line in drawn)  # its diff, opened
        assert view.has_focus


async def test_help_and_palette_name_it(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert any(
            key == "c" and binding == "messages.files-changed" for key, _, binding in app.screen.pane_keys
        )
        await pilot.press("escape")
        await pilot.press("ctrl+p", *"files this session changed")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ChangesScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, ChangesScreen)


async def test_every_key_of_the_list_has_an_id(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ChangesScreen)
        assert [k for k, a in app.screen.active_bindings.items() if not a.binding.id] == []
        await pilot.press("f1")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        assert {row[2] for row in help_screen.pane_keys} >= {"changes.open", "changes.up", "changes.left"}
        assert {row[2] for row in help_screen.global_keys} >= {"changes.sort", "changes.back", "changes.help"}
        await pilot.press("escape")
        assert isinstance(app.screen, ChangesScreen)
        table = app.screen.query_one(DataTable)
        await pilot.press("G", "right")  # the last file's calls, then back to the files on it
        assert table_rows(table)[0][0] in {"Edit", "Write"}
        await pilot.press("left")
        assert table.cursor_row == 1 and len(table_rows(table)[0]) == 4
        await pilot.press("left")
        assert not isinstance(app.screen, ChangesScreen)


async def test_a_call_outside_the_branch_shown_opens_the_whole_session(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        assert app.conn is not None
        checkout = session_id(app, CHECKOUT)
        (write,) = stats.change_calls(app.conn, checkout, "src/checkout/__tests__/zero-rated.test.ts")
        tree = app.query_one(SessionTree)
        tree.focus()
        await pilot.press("l")  # the checkout session's branches
        await pilot.pause()
        view = app.browser.query_one(MessageView)
        branches = [
            n for n in tree.root.children[0].children if n.data is not None and n.data.kind == "branch"
        ]
        tree.select_node(branches[0])  # branch 1: the rewound one, before the test was written
        await pilot.pause()
        assert view.count < 22 and write.seq is not None and write.seq not in view.seqs
        view.focus()
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ChangesScreen)  # the whole session's files, not the branch's
        assert len(table_rows(app.screen.query_one(DataTable))) == 2
        await pilot.press("enter", "enter")  # the most changed: the test file, written in branch 2
        await pilot.pause()
        block, row = view.current_block(), view.current_row()
        assert view.count == 22 and view.session_id == checkout
        assert block is not None and block.call is not None and block.call.id == write.call_id
        assert row is not None and row.seq == write.seq
        assert block.key is not None and view.is_expanded(block.key)


async def test_an_aider_edit_goes_to_the_reply_that_made_it(tmp_path: Path) -> None:
    from threadloom.core.store import db

    from tests.builders.aider import AIDER_EDITS
    from tests.support import ingest

    folder = tmp_path / "parser-project"
    folder.mkdir()
    (folder / ".aider.chat.history.md").write_text(AIDER_EDITS)
    path = tmp_path / "aider.db"
    conn = db.connect(path)
    ingest(conn, folder)
    conn.close()
    app = make_app(path)
    async with run_test(app, size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.conn is not None
        (sid,) = app.conn.execute("SELECT DISTINCT session_id FROM agent_file_changes").fetchone()
        app.browser.jump_to_session(sid)
        await pilot.pause()
        view = app.browser.query_one(MessageView)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ChangesScreen)
        # only the edit an "Applied edit to" line confirms: parser.py, one line for one
        assert table_rows(app.screen.query_one(DataTable)) == [["parser.py", "+1", "−1", "1"]]
        await pilot.press("enter")
        assert table_rows(app.screen.query_one(DataTable))[0][0] == "SEARCH/REPLACE"
        await pilot.press("enter")
        await pilot.pause()
        (edit,) = stats.change_calls(app.conn, sid)
        row, block = view.current_row(), view.current_block()
        assert row is not None and row.seq == edit.seq and row.role == "assistant"
        assert block is not None and block.kind == "text"
        drawn = "\n".join(s.text for s in view.ensure(view.cursor[0]).strips)
        assert "+    for i in range(len(out)):" in drawn and "Both edits are small." in drawn


async def test_a_sessions_files_changed_count_its_subagents_edits_and_go_to_them(tmp_path: Path) -> None:
    """An orchestrating session showed "1 file · +1" while its subagent wrote the rest: `c` counts
    the subagents' edits in, says which subagent made each call, and Enter on one opens the
    subagent's conversation at it (Esc goes back)."""
    from tests.builders.claude import tool_use
    from tests.support import orchestrating_session

    sid = "c4a9e000-0000-4000-8000-0000000000c1"
    sub = orchestrating_session(tmp_path / "projects" / "-srv-app", sid)
    sub.assistant(
        tools=[tool_use("e1", "Edit", file_path="/srv/app/README.md", old_string="b", new_string="c\nd")]
    )
    sub.tool_result("e1", "ok")
    sub.write()
    from threadloom.core.ingest.pipeline import run_ingest
    from threadloom.core.store import db

    conn = db.connect(tmp_path / "t.db")
    run_ingest(conn, [tmp_path / "projects"], include_defaults=False)
    conn.close()
    app = ThreadloomApp(db_path=tmp_path / "t.db", ingest=False, now=fixed_now)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(sid)
        await pilot.pause()
        view = app.browser.query_one(MessageView)
        await pilot.press("c")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ChangesScreen)
        table = screen.query_one(DataTable)
        assert table_rows(table) == [
            ["/srv/app/README.md", "+3", "−2", "2"],
            ["/srv/app/importer.py", "+4", "−0", "1"],
        ]
        total = str(screen.query_one("#changes-total", Static).render())
        assert total == "2 files · +7 −2 · 3 calls (2 calls by 1 subagent: +6 −1)", total
        await pilot.press("enter")  # README.md: the session's own Edit, then the subagent's
        assert [r[4] for r in table_rows(table)] == ["this session", "⚙ write the importer"]
        await pilot.press("down", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, ChangesScreen)
        subagent = f"{sid}:agent-imp1"
        assert view.session_id == subagent
        await pilot.pause()
        block = view.current_block()
        assert block is not None and block.call is not None and block.call.id == "e1"
        await pilot.press("escape")  # back to the session `c` was pressed in
        await pilot.pause()
        assert view.session_id == sid


async def test_a_path_with_a_line_break_is_listed_whole_on_one_line(tmp_path: Path) -> None:
    """An edit of "/srv/app/new\\nline.py" was listed as "/srv/app/new": a table cell draws its
    first line only, so the list named another file. The break is drawn as ␊, as the Projects
    pane draws one in a folder's name."""
    from tests.builders.claude import Transcript, tool_use
    from tests.tui_support import ingested_db

    sid = "cccccccc-0000-4000-8000-00000000a11e"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    t.user("fix both files")
    t.assistant(
        None,
        tools=[tool_use("te1", "Edit", file_path="/srv/app/new\nline.py", old_string="a", new_string="b")],
    )
    t.tool_result("te1", "ok")
    t.write()
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(120, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(sid)
        await pilot.pause()
        await pilot.press("3", "c")
        await pilot.pause()
        assert isinstance(app.screen, ChangesScreen)
        assert table_rows(app.screen.query_one(DataTable)) == [["/srv/app/new\u240aline.py", "+1", "−1", "1"]]


async def test_a_session_that_changed_no_file_says_so_alone(tmp_path: Path) -> None:
    """A session that changed no file listed an empty table under "Most changed first", its
    columns' header and no row, above "No file changes recorded …", and offered Enter and s for
    rows there were none of. It says that it changed none, and Esc."""
    from tests.builders.claude import Transcript
    from tests.tui_support import ingested_db

    sid = "abcdef00-0000-4000-8000-00000000c4a6"
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{sid}.jsonl", sid)
    t.user("What does the parser do?")
    t.assistant("It reads the config.")
    t.write()
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(120, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(sid)
        await pilot.pause()
        await pilot.press("3", "c")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ChangesScreen)
        box = screen.query_one("#changes-box")
        assert not screen.query_one(DataTable).display and "Most changed" not in str(
            screen.query_one("#changes-heading", Static).render()
        )
        assert "No file changes recorded" in str(screen.query_one("#changes-total", Static).render())
        assert box.border_subtitle == "Esc closes"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ChangesScreen)
