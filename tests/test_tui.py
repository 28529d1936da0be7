"""Pilot tests: the real app on a real SQLite file built by ingesting the demo archive."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Tree
from textual.worker import WorkerFailed

from core import browse
from core.demo import write_demo_archive
from core.ingest import IngestReport
from tui.app import ThreadloomApp
from tui.messages import MessageView
from tui.panes import ProjectList, SessionTree
from tui.screens import ErrorScreen, HelpScreen, RawJsonScreen
from tui.testing import (
    CHECKOUT,
    LONG,
    build_demo_db,
    cursor_to_tool,
    fixed_now,
    restore_tz,
    session_id,
    use_utc,
)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo_db(tmp_path_factory.mktemp("tui"))


@pytest.fixture(autouse=True)
def no_real_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Never read the developer's own ~/.claude or keymap during a test; times in UTC."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "no-claude"))
    monkeypatch.setenv("THREADLOOM_KEYMAP", str(tmp_path / "no-keymap.toml"))
    previous = use_utc()
    yield
    restore_tz(previous)


def make_app(db: Path, **kw) -> ThreadloomApp:
    return ThreadloomApp(db_path=db, ingest=kw.pop("ingest", False), now=fixed_now, **kw)


def block_text(view: MessageView) -> str:
    """The text of the lines under the message cursor."""
    pos, index = view.cursor
    rendered = view.ensure(pos)
    block = rendered.blocks[index]
    return "\n".join(s.text for s in rendered.strips[block.start : block.end])


async def test_opens_on_what_the_database_holds(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        projects = app.query_one(ProjectList)
        assert projects.border_title == "Projects (4)"
        assert [p.name for p in projects.projects] == ["acme-shop", "ledger-api", "dotfiles", "blog"]
        tree = app.query_one(SessionTree)
        assert tree.border_title == "Sessions (2)"
        assert not app.screen.has_class("-empty")
        assert app.focused is projects


async def test_navigate_project_session_subagent_nested(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("enter")  # project → sessions pane
        tree = app.query_one(SessionTree)
        assert app.focused is tree
        await pilot.press("enter")  # open the newest session
        await pilot.pause()
        view = app.query_one(MessageView)
        assert app.focused is view
        assert view.session_id == session_id(app, CHECKOUT)
        await cursor_to_tool(pilot, "Task")
        await pilot.press("enter")  # into the subagent
        await pilot.pause()
        explore = browse.get_node(app.conn, view.session_id)
        assert explore is not None and explore.agent_type == "Explore"
        await cursor_to_tool(pilot, "Task")
        await pilot.press("enter")  # into the subagent's own subagent
        await pilot.pause()
        nested = browse.get_node(app.conn, view.session_id)
        assert nested is not None and nested.parent_session_id == explore.id
        assert nested.task_description == "Check how Stripe webhooks apply tax"
        cursor = tree.cursor_node
        assert cursor is not None and cursor.data.session.id == nested.id


async def test_session_tree_children_branches_segments(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.query_one(SessionTree)
        tree.focus()
        await pilot.press("l")  # expand the checkout session
        await pilot.pause()
        kinds = [child.data.kind for child in tree.root.children[0].children]
        assert kinds == ["branch", "branch", "session"]
        await pilot.press("down", "enter")
        await pilot.pause()
        view = app.query_one(MessageView)
        assert view.count == 15 and "branch 1" in str(view.border_subtitle)
        # the long session has two compactions: three segments
        app.query_one(ProjectList).highlighted = 1
        await pilot.pause()
        tree.focus()
        long_node = next(n for n in tree.root.children if n.data.session.title.startswith(LONG))
        tree.load_children(long_node)
        assert [c.data.kind for c in long_node.children].count("segment") == 3
        tree.select_node(long_node.children[1])
        await pilot.pause()
        segment = long_node.children[1].data.segment
        assert view.row(view.cursor[0]).seq >= segment.start_seq


async def test_expand_tool_call_shows_diff_and_output(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        app.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        view = app.query_one(MessageView)
        await cursor_to_tool(pilot, "Bash")
        assert "✗ exit 1 · 2.3 s" in block_text(view)
        await pilot.press("enter")
        assert "Tests:       1 failed, 23 passed, 24 total" in block_text(view)
        await cursor_to_tool(pilot, "Edit")
        await pilot.press("enter")
        text = block_text(view)
        assert "-  const tax = subtotal.amount * rule.rate;" in text
        assert "+  const tax = Math.round(subtotal.amount" in text
        await pilot.press("left")
        assert "Math.round" not in block_text(view)
        await pilot.press("e")  # expand every tool call
        assert "Math.round" in block_text(view)
        await pilot.press("e")
        assert "Math.round" not in block_text(view)


async def test_raw_json_of_a_message(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        app.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, RawJsonScreen)
        assert b'"The checkout tests started failing' in app.screen.raw
        await pilot.press("c")
        assert app.clipboard == app.screen.raw.decode()
        await pilot.press("escape")
        assert not isinstance(app.screen, RawJsonScreen)


async def test_long_session_is_virtualized(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        app.jump_to_session(session_id(app, LONG))
        await pilot.pause()
        view = app.query_one(MessageView)
        node = browse.get_node(app.conn, view.session_id)
        assert node is not None and view.count == node.message_count > 4000
        assert len(view.rows) <= 2 * 64  # only the pages on screen were read
        assert len(view.cache) < 40
        await pilot.press("G")
        await pilot.pause()
        assert view.row(view.cursor[0]).seq == node.message_count - 1
        assert "pull/214" in block_text(view)
        assert view.scroll_y == view.max_scroll_y
        await pilot.press("g")
        await pilot.pause()
        assert view.cursor[0] == 0 and view.scroll_y == 0
        await pilot.press("pagedown", "pagedown", "j", "k")
        assert view.scroll_y > 0


async def test_resize_to_80x24_collapses_panes(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        projects, tree, view = app.query_one(ProjectList), app.query_one(SessionTree), app.query_one(MessageView)
        assert projects.display and tree.display and not view.display  # focus on projects
        await pilot.press("tab")
        await pilot.pause()
        assert not projects.display and tree.display and view.display
        await pilot.press("enter")
        await pilot.pause()
        assert app.focused is view and not tree.display and view.region.width == 80
        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is projects and projects.display
        await pilot.resize_terminal(140, 40)
        await pilot.pause()
        assert projects.display and tree.display and view.display


async def test_help_lists_keys_of_focused_pane(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        app.query_one(MessageView).focus()
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert app.screen.pane == "Messages"
        ids = {row[2] for row in app.screen.pane_keys}
        assert {"messages.raw", "messages.expand-all", "messages.activate", "messages.down"} <= ids
        assert {"app.quit", "app.help", "app.next-pane", "app.search"} <= {row[2] for row in app.screen.global_keys}
        await pilot.press("escape")
        app.query_one(SessionTree).focus()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen) and app.screen.pane == "Sessions"
        assert "sessions.warmup" in {row[2] for row in app.screen.pane_keys}


async def test_keymap_file_remaps_by_id(demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keymap = tmp_path / "keymap.toml"
    keymap.write_text('[keys]\n"messages.raw" = "R"\n"app.quit" = "ctrl+q,x"\n', encoding="utf-8")
    monkeypatch.setenv("THREADLOOM_KEYMAP", str(keymap))
    app = make_app(demo_db)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        app.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        await pilot.press("r")
        assert not isinstance(app.screen, RawJsonScreen)
        await pilot.press("R")
        await pilot.pause()
        assert isinstance(app.screen, RawJsonScreen)


async def test_reserved_keys_notify(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("slash", "f")
        titles = [n.title for n in app._notifications]
        assert "/ search" in titles and "f fork" in titles


async def test_warmup_agents_hidden_until_asked(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.query_one(SessionTree)
        header = next(n for n in tree.root.children if n.data.session.title.startswith("The header"))
        assert not header.allow_expand
        tree.focus()
        await pilot.press("w")
        header = next(n for n in tree.root.children if n.data.session.title.startswith("The header"))
        tree.load_children(header)
        assert [c.data.session.is_warmup for c in header.children] == [True]


async def test_jump_to_session_from_palette(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        await pilot.press(*"stripe webhooks")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        view = app.query_one(MessageView)
        node = browse.get_node(app.conn, view.session_id or "")
        assert node is not None and node.task_description == "Check how Stripe webhooks apply tax"


def small_archive(tmp_path: Path) -> Path:
    return write_demo_archive(tmp_path / "archive", long_turns=3)


async def test_ingest_worker_fills_panes_and_notifies(tmp_path: Path) -> None:
    root = small_archive(tmp_path)
    app = make_app(tmp_path / "fresh.db", ingest=True, sources=[root])
    async with app.run_test(size=(140, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one(ProjectList).border_title == "Projects (4)"
        assert any(n.title == "Ingest done" for n in app._notifications)
        assert not app.screen.has_class("-ingesting")


async def test_empty_state_then_demo(tmp_path: Path) -> None:
    app = make_app(tmp_path / "empty.db", ingest=True, demo_long_turns=3)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen.has_class("-empty")
        text = str(app.query_one("#empty").render())
        assert "--source" in text and str(tmp_path / "no-claude") in text
        await pilot.press("d")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.screen.has_class("-empty")
        assert app.query_one(ProjectList).border_title == "Projects (4)"
        assert app.temp_dir is not None and app.db_path.parent == app.temp_dir


async def test_worker_error_opens_dialog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("core.ingest.run_ingest", broken)
    app = make_app(tmp_path / "x.db", ingest=True)
    async with app.run_test(size=(100, 30)) as pilot:
        with contextlib.suppress(WorkerFailed):
            await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        assert "disk on fire" in app.screen.message
        await pilot.press("escape")
        assert not isinstance(app.screen, ErrorScreen)


async def test_escape_cancels_ingest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = threading.Event()

    def slow(conn, sources, *, include_defaults, progress, cancel):
        started.set()
        assert cancel.wait(10)
        return IngestReport(cancelled=True)

    monkeypatch.setattr("core.ingest.run_ingest", slow)
    app = make_app(tmp_path / "x.db", ingest=True)
    async with app.run_test(size=(100, 30)) as pilot:
        assert started.wait(10)
        await pilot.pause()
        assert app.screen.has_class("-ingesting")
        await pilot.press("escape")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert any("cancelled" in n.message for n in app._notifications)


async def test_tree_node_highlight_previews_session(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.query_one(SessionTree)
        tree.focus()
        await pilot.press("down")
        await pilot.pause(0.3)
        view = app.query_one(MessageView)
        assert view.session_id == tree.cursor_node.data.session.id
        assert app.focused is tree
        assert isinstance(tree, Tree)


async def test_every_binding_has_an_id(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        for pane in ("projects", "sessions", "messages"):
            app.query_one(f"#{pane}").focus()
            await pilot.pause()
            missing = [key for key, active in app.screen.active_bindings.items() if not active.binding.id]
            assert missing == [], pane


def test_core_never_imports_textual() -> None:
    import subprocess
    import sys

    code = "import sys, core.browse, core.demo, core.query; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_rewind_is_marked_in_the_whole_session(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        app.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        view = app.query_one(MessageView)
        assert view.rewinds == {15} and "2 branches" in str(view.border_subtitle)
        rendered = view.ensure(view.position_of_seq(15))
        assert [b.kind for b in rendered.blocks][:3] == ["gap", "rewind", "gap"]
        assert "rewound" in rendered.strips[rendered.blocks[1].start].text


async def test_palette_offers_pane_actions_and_finds_sessions(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        app.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Messages: expand or collapse all tool calls" in titles
        app.query_one(ProjectList).focus()
        await pilot.pause()
        assert not any(t.startswith("Messages:") for t in (c.title for c in app.get_system_commands(app.screen)))
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"tmux config")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        node = browse.get_node(app.conn, app.query_one(MessageView).session_id or "")
        assert node is not None and node.title.startswith("Add a tmux config")
