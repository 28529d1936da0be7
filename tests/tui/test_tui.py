"""Pilot tests: the real app on a real SQLite file built by ingesting the demo archive."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import threading
from itertools import accumulate
from pathlib import Path
from typing import TypeVar, cast

import pytest
from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Static, Tree
from textual.worker import WorkerFailed
from threadloom.core.adapters.claude_demo import write_demo_archive
from threadloom.core.ingest.pipeline import IngestReport
from threadloom.core.read import browse
from threadloom.tui import workers
from threadloom.tui.app import ThreadloomApp
from threadloom.tui.events import OpenForkPicker, OpenSession, SearchClosed, SearchHitChosen
from threadloom.tui.fork import ForkPicker, PointList
from threadloom.tui.messages import MessageView
from threadloom.tui.panes import ProjectList, SessionTree
from threadloom.tui.screens import ErrorScreen, HelpScreen, RawJsonScreen
from threadloom.tui.search import ResultsList, SearchScreen

from tests.tui_support import (
    CHECKOUT,
    HEALTH,
    LONG,
    Seen,
    build_demo_db,
    cursor_to_tool,
    fixed_now,
    ingested_db,
    make_app,
    open_checkout,
    run_test,
    session_id,
    settle,
    shown,
    until,
    wait_for_search,
)

M = TypeVar("M", bound=Message)


def block_text(view: MessageView) -> str:
    """The text of the lines under the message cursor."""
    pos, index = view.cursor
    rendered = view.ensure(pos)
    block = rendered.blocks[index]
    return "\n".join(s.text for s in rendered.strips[block.start : block.end])


async def test_opens_on_what_the_database_holds(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
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
    async with run_test(app, size=(140, 40)) as pilot:
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
        # the tree follows as its nodes load
        await until(
            pilot, lambda: tree.cursor_node is not None and tree.cursor_node.data.session.id == nested.id
        )


async def test_escape_goes_back_from_a_subagent_to_its_task_call(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("enter", "enter")  # the newest session of the first project
        await pilot.pause()
        view = app.query_one(MessageView)
        checkout = session_id(app, CHECKOUT)
        await cursor_to_tool(pilot, "Task")
        task_seq = view.current_row().seq
        await pilot.press("enter")  # into the subagent
        await pilot.pause()
        explore = view.session_id
        await cursor_to_tool(pilot, "Task")
        await pilot.press("enter")  # and into its own subagent
        await pilot.pause()
        assert view.session_id not in (checkout, explore)
        await pilot.press("backspace")
        await pilot.pause()
        assert view.session_id == explore
        await pilot.press("escape")
        await pilot.pause()
        assert view.session_id == checkout and view.current_row().seq == task_seq
        assert app.focused is view and not app.browser.trail
        await pilot.press("escape")  # nothing more to go back to
        await pilot.pause()
        assert view.session_id == checkout
        # a trail ends when another session is opened some other way
        await cursor_to_tool(pilot, "Task")
        await pilot.press("enter")
        await pilot.pause()
        app.browser.jump_to_session(checkout)
        await pilot.pause()
        assert not app.browser.trail


async def test_escape_goes_back_from_a_subagent_jumped_to_with_p(demo_db: Path) -> None:
    """A subagent chosen in the jump list (p) had no way back: Esc did nothing there. It goes back
    to the session and the message where p was pressed, as from a Task call."""
    from textual.command import CommandList, CommandPalette

    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("enter", "enter")  # the newest session of the first project
        await pilot.pause()
        view = app.query_one(MessageView)
        checkout = session_id(app, CHECKOUT)
        await cursor_to_tool(pilot, "Edit")
        edit_seq = view.current_row().seq
        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"Map the checkout")
        await until(pilot, lambda: app.screen.query_one(CommandList).option_count > 0)
        await pilot.press("enter")
        await until(pilot, lambda: view.session_id not in (None, checkout))
        assert browse.get_node(app.conn, view.session_id).is_subagent
        await pilot.press("escape")
        await settle(pilot)
        assert view.session_id == checkout and view.current_row().seq == edit_seq


async def test_session_tree_children_branches_segments(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
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
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
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
    async with run_test(app, size=(120, 36)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
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
    async with run_test(app, size=(120, 36)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, LONG))
        await pilot.pause()
        view = app.query_one(MessageView)
        node = browse.get_node(app.conn, view.session_id)
        assert node is not None and view.count == node.message_count > 4000
        assert len(view.state.rows) <= 2 * 64  # only the pages on screen were read
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
        await pilot.press("pagedown")
        await pilot.pause()
        # the page below the one on screen is drawn ahead (exact heights), and the scrollable
        # height follows the heights without a screen layout
        height = view.scrollable_content_region.height
        below = view.index_at(round(view.scroll_y) + height + height // 2)
        assert below in view.state.exact and below in view.cache
        assert view.virtual_size.height == view.state.offsets[-1]
        assert view.max_scroll_y == view.state.offsets[-1] - height


async def test_the_end_of_a_long_session_at_80x24_has_no_blank_gaps(demo_db: Path) -> None:
    """Heights that became exact before a frame (a page read, a message drawn) are laid out before
    it is painted: stale offsets showed blank rows where tool results had been guessed to be."""
    app = make_app(demo_db)
    async with run_test(app, size=(80, 24)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, LONG))
        await pilot.pause()
        await pilot.press("G")
        await pilot.pause()
        view = app.query_one(MessageView)
        assert view.state.offsets == list(accumulate(view.state.heights, initial=0))
        screen = [view.render_line(y).text.strip() for y in range(view.scrollable_content_region.height)]
        assert not any(not (screen[y] or screen[y - 1]) for y in range(1, len(screen))), screen


async def test_a_frame_of_the_message_view_asks_its_style_once_not_once_a_line(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each line asked for the view's style, a walk up the DOM, which was most of what a line cost
    to paint (a cursor move repaints every line): a frame asks once, and paints the same lines."""
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, LONG))
        await settle(pilot)
        view = app.query_one(MessageView)
        height = view.scrollable_content_region.height
        one_by_one = [view.render_line(y).text for y in range(height)]
        asked = 0
        style_of = MessageView.rich_style.fget
        assert style_of is not None

        def counted(widget: MessageView) -> Style:
            nonlocal asked
            asked += 1
            return style_of(widget)

        monkeypatch.setattr(MessageView, "rich_style", property(counted))
        view.refresh()  # every line painted anew
        painted = view.render_lines(Region(0, 0, *view.outer_size))
        assert len(painted) == view.outer_size.height > 30 and asked <= 2, asked
        top = view.styles.gutter.top  # the lines are painted inside the pane's border
        inside = painted[top : top + height]
        assert all(line in strip.text for line, strip in zip(one_by_one, inside, strict=True))


def view_text(view: MessageView, pos: int) -> str:
    return "\n".join(strip.text.rstrip() for strip in view.ensure(pos).strips)


async def test_the_viewer_renders_markdown_and_m_shows_it_as_written(demo_db: Path) -> None:
    """What users and assistants wrote is rendered as Markdown; `m` shows it as written and back,
    the message under the cursor kept in place; F1 lists the key."""
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, HEALTH))
        await pilot.pause()
        await pilot.press("3", "G", "enter")  # the answer, opened whole
        await pilot.pause()
        view = app.query_one(MessageView)
        last = len(view.seqs) - 1
        assert view.cursor[0] == last
        rendered = view_text(view, last)
        for shown in ("Why /health returns 503", "1. Look at the database pod:", "▏ kubectl get pods"):
            assert shown in rendered, rendered
        assert "##" not in rendered and "```" not in rendered and "|:--|" not in rendered
        assert "staging runbook (https://wiki.acme.dev/ledger/staging)" in rendered
        heading = next(
            seg for strip in view.ensure(last).strips for seg in strip if "Why /health" in seg.text
        )
        assert heading.style is not None and heading.style.bold
        code = [seg for strip in view.ensure(last).strips for seg in strip if seg.text == "function"]
        assert code and code[0].style is not None and code[0].style.color is not None  # highlighted ts

        await pilot.press("m")
        await pilot.pause()
        assert not view.markdown and view.cursor[0] == last
        written = view_text(view, last)
        assert (
            "## Why /health returns 503" in written
            and "```bash" in written
            and "| check | result |" in written
        )
        screen = [view.render_line(y).text for y in range(view.scrollable_content_region.height)]
        assert any("## Why /health" in line or "```" in line for line in screen)  # on screen now

        await pilot.press("m")
        await pilot.pause()
        assert view.markdown and view_text(view, last) == rendered

        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert (
            "m",
            "Show text as rendered Markdown or as written",
            "messages.markdown",
        ) in app.screen.pane_keys


async def test_resize_to_80x24_collapses_panes(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        projects, tree, view = (
            app.query_one(ProjectList),
            app.query_one("#sessions-box"),  # the sessions pane: the list and its filter box
            app.query_one(MessageView),
        )
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


@pytest.mark.parametrize("size", [(140, 40), (80, 24)])
async def test_a_dialog_closed_gives_back_the_layout_it_covered(demo_db: Path, size: tuple[int, int]) -> None:
    """Help, the raw record and the fork picker take the focus while open; the panes behind them
    keep the layout of the pane that had it, and get it back."""
    app = make_app(demo_db)
    async with run_test(app, size=size) as pilot:
        await pilot.pause()
        view = app.query_one(MessageView)
        view.focus()
        await until(pilot, lambda: app.browser.has_class("-focus-messages"))  # set on the focus's event
        before = set(app.browser.classes)
        for key in ("question_mark", "r", "f"):
            await pilot.press(key)
            await until(pilot, lambda: app.screen is not app.browser)
            await settle(pilot)  # the fork picker reads its turns in workers
            assert app.screen is not app.browser, key
            assert set(app.browser.classes) == before, key
            await pilot.press("escape")
            await until(pilot, lambda: app.screen is app.browser and app.focused is view)
            assert app.screen is app.browser and app.focused is view, key
            assert set(app.browser.classes) == before, key
            assert view.display and view.region.width > 0


@pytest.mark.parametrize("size", [(140, 40), (140, 12), (160, 40)])
async def test_first_load_draws_the_project_list_once(
    demo_db: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first frame is drawn with the layout classes and the prompts' final width: restyling or
    refilling the panes after it cost a whole-screen layout each. At 12 rows the list scrolls."""
    fills: list[int] = []
    original = ProjectList.set_projects

    def counted(self: ProjectList, projects: list, *hidden: frozenset, **how: object) -> None:
        original(self, projects, *hidden, **how)
        fills.append(self._width)

    monkeypatch.setattr(ProjectList, "set_projects", counted)
    born_with: list[set[str]] = []
    make_screen = ThreadloomApp.get_default_screen

    def recorded(self: ThreadloomApp):  # type: ignore[no-untyped-def]
        screen = make_screen(self)
        born_with.append(set(screen.classes))
        return screen

    monkeypatch.setattr(ThreadloomApp, "get_default_screen", recorded)
    app = make_app(demo_db)
    layout = "-wide" if size[0] >= 150 else "-medium"
    async with run_test(app, size=size) as pilot:
        await pilot.pause()
        projects = app.query_one(ProjectList)
        assert projects.show_vertical_scrollbar == (size[1] == 12)
        assert fills == [projects._prompt_width()]
        assert app.browser.has_class(layout)
    # the focus classes are the ones app.tcss reads: none on a wide screen, the messages' on a
    # medium one (the projects pane focused at the start: none)
    assert born_with == [{layout}]


def test_a_tab_restyles_the_screen_only_where_the_layout_follows_the_focus() -> None:
    """Each class the screen changes restyles every widget on it; a Tab between the projects and
    the sessions at a medium width swapped two classes no rule reads (74 ms a Tab at 140 columns,
    47 at 160). The focus classes are those app.tcss reads, at the widths it reads them."""
    from threadloom.tui.browser import NARROW, WIDE, layout_classes

    def on(width: int, focused: str) -> set[str]:
        return {name for name, set_ in layout_classes(width, focused).items() if set_}

    widths = {"narrow": NARROW - 1, "medium": (NARROW + WIDE) // 2, "wide": WIDE}
    assert on(widths["medium"], "projects") == on(widths["medium"], "sessions") == {"-medium"}
    assert on(widths["medium"], "messages") == {"-medium", "-focus-messages"}
    assert on(widths["narrow"], "sessions") == {"-narrow"}
    assert on(widths["wide"], "messages") == {"-wide"}
    rules = (Path(__file__).parents[2] / "tui" / "app.tcss").read_text()
    for pane in ("projects", "sessions", "messages"):  # what the stylesheet reads, and only that
        read_at = set(re.findall(rf"\.-(narrow|medium|wide)\.-focus-{pane}\b", rules))
        assert read_at == {w for w, width in widths.items() if f"-focus-{pane}" in on(width, pane)}, pane


async def test_rows_that_start_the_scrollbar_are_drawn_at_the_width_it_leaves(demo_db: Path) -> None:
    """A first load adds projects as it reads them: the refill that makes the list overflow draws
    its rows before the scrollbar appears, and no resize follows, so they must already leave room
    for it (they wrapped, each date on a line of its own)."""
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        projects = app.query_one(ProjectList)
        few = projects.projects[:1]
        projects.set_projects(few)
        await pilot.pause()
        assert not projects.show_vertical_scrollbar
        many = [
            browse.ProjectRow(
                f"/work/project-{i:02}", f"project-{i:02}", ["claude-code"], 3, 0, fixed_now() - 60
            )
            for i in range(20)
        ]
        projects.set_projects(many)
        await pilot.pause()
        assert projects.show_vertical_scrollbar
        room = projects.scrollable_content_region.width
        for option in range(len(many)):
            prompt = projects.get_option_at_index(option).prompt
            assert max(line.cell_len for line in prompt.split()) <= room - 2


async def test_the_footer_is_rebuilt_only_when_its_keys_change(demo_db: Path) -> None:
    from threadloom.tui.footer import KeyFooter

    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        footer = app.browser.query_one(KeyFooter)
        app.query_one(SessionTree).focus()
        keys: list[Widget] = []

        def settled() -> bool:  # the same widgets as at the last look: no rebuild under way
            nonlocal keys
            now, keys = keys, list(footer.query("FooterKey"))
            return bool(now) and now == keys

        await until(pilot, settled)
        assert "Raw JSON" not in {k.description for k in keys}
        footer.fit_keys()  # all fit at 140 columns: each key left as the stylesheet shows it, not
        assert not any(k.styles.inline.has_rule("display") for k in keys)  # laid out again as "block"
        app.refresh_bindings()  # the same keys: the same widgets, not new ones
        await pilot.pause()
        assert list(footer.query("FooterKey")) == keys
        # a key the footer does not show (Sync) gone: nothing it shows changed, nor its widgets
        assert "U" in app.browser.active_bindings
        app.archive.read_only = "read-only for the test"
        app.refresh_bindings()
        await until(pilot, lambda: "U" not in app.browser.active_bindings)
        await pilot.pause()
        assert list(footer.query("FooterKey")) == keys
        app.query_one(MessageView).focus()  # other keys: rebuilt, showing the viewer's

        def descriptions() -> set[str]:
            return {k.description for k in footer.query("FooterKey")}

        await until(pilot, lambda: "Raw JSON" in descriptions())  # the rebuild is one refresh away
        shown = list(footer.query("FooterKey"))
        assert shown != keys and "Raw JSON" in {k.description for k in shown}
        assert not any(k.has_class("-compact") for k in shown if not k.has_class("-command-palette"))
        app.query_one(SessionTree).focus()
        tree_keys = [k.description for k in keys]
        # An empty footer mid-rebuild also lacks "Raw JSON": wait for the tree's keys themselves.
        await until(pilot, lambda: [k.description for k in footer.query("FooterKey")] == tree_keys)


async def test_help_lists_keys_of_focused_pane(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.query_one(MessageView).focus()
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert app.screen.pane == "Messages"
        ids = {row[2] for row in app.screen.pane_keys}
        assert {"messages.raw", "messages.expand-all", "messages.activate", "messages.down"} <= ids
        assert {"app.quit", "app.help", "app.next-pane", "app.search", "app.fork"} <= {
            row[2] for row in app.screen.global_keys
        }
        await pilot.press("escape")
        app.query_one(SessionTree).focus()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen) and app.screen.pane == "Sessions"
        assert "sessions.warmup" in {row[2] for row in app.screen.pane_keys}


async def test_help_on_a_small_terminal_fits_its_lines_and_scrolls_to_the_rest(demo_db: Path) -> None:
    from textual.containers import VerticalScroll

    app = make_app(demo_db)
    async with run_test(app, size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("f1")
        await pilot.pause()
        box = app.screen.query_one("#help-box", VerticalScroll)
        tables = [static.content for static in app.screen.query(".help-section").results(Static)]
        assert [len(t.columns) for t in tables] == [2, 2]  # no binding ids squeezing the descriptions
        assert box.has_focus and box.max_scroll_y > 0 and "↑↓ scrolls" in str(box.border_subtitle)
        await pilot.press("end")
        await pilot.pause()
        assert box.scroll_y == box.max_scroll_y  # "Everywhere" is reached from the keyboard
        await pilot.press("escape")
    async with run_test(make_app(demo_db), size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("f1")
        await pilot.pause()
        tables = [static.content for static in pilot.app.screen.query(".help-section").results(Static)]
        assert [len(t.columns) for t in tables] == [3, 3]
        console = Console(width=90, file=io.StringIO())
        starts = set()
        for table, prefix in zip(tables, ("projects.", "app."), strict=True):
            lines = [
                "".join(seg.text for seg in line) for line in console.render_lines(table, console.options)
            ]
            starts |= {line.index(prefix) for line in lines if prefix in line}
        assert len(starts) == 1, starts  # the ids of both tables line up


async def test_footer_on_a_narrow_terminal_keeps_search_and_fork_in_sight(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(80, 24)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        app.query_one(MessageView).focus()
        await pilot.pause()
        palette = next(k for k in app.screen.query("FooterKey") if k.description == "Palette")
        shown = {
            k.description
            for k in app.screen.query("FooterKey")
            if k.region.width and k.region.right <= palette.region.x
        }
        assert {"Expand all", "Search", "Fork", "Jump", "Help"} <= shown, shown


def footer_keys_in_sight(app: ThreadloomApp) -> list[str]:
    """The footer keys drawn whole, left of the palette's key (or the screen's edge); a key that runs
    under it, cut mid-word, fails the test."""
    keys = [k for k in app.screen.query("FooterKey") if k.display and k.region.width]
    palette = [k for k in keys if k.has_class("-command-palette")]
    edge = palette[0].region.x if palette else app.size.width
    shown = [k for k in keys if k not in palette]
    cut = [k.description for k in shown if k.region.right > edge]
    assert not cut, f"cut at the footer's edge: {cut}"
    return [k.description for k in shown]


async def test_the_footer_at_80_columns_drops_whole_keys_and_keeps_help_and_quit(demo_db: Path) -> None:
    """The viewer's keys ran past the palette's key at 80 columns, Quit cut to "q Qu"; the fork
    picker's last key to "^n New sessio". Whole keys give way now: Raw JSON first, then from the
    end, Help and Quit last."""
    app = make_app(demo_db)
    async with run_test(app, size=(80, 24)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        app.query_one(MessageView).focus()
        await until(pilot, lambda: "Expand all" in [k.description for k in app.screen.query("FooterKey")])
        await pilot.pause()
        shown = footer_keys_in_sight(app)
        assert {"Expand all", "Search", "Fork", "Jump", "Help", "Quit"} <= set(shown), shown
        assert "Raw JSON" not in shown
        await pilot.resize_terminal(140, 40)  # room again: every key back
        await pilot.pause()
        assert "Raw JSON" in footer_keys_in_sight(app)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        app.query_one(MessageView).go_to_seq(11)
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(app.screen, ForkPicker)
        await pilot.pause()
        shown = footer_keys_in_sight(app)
        assert shown[:3] == ["Close", "Fork here", "Fork before"] and "New session" not in shown, shown


async def test_keymap_file_remaps_by_id(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keymap = tmp_path / "keymap.toml"
    keymap.write_text('[keys]\n"messages.raw" = "R"\n"app.quit" = "ctrl+q,x"\n', encoding="utf-8")
    monkeypatch.setenv("THREADLOOM_KEYMAP", str(keymap))
    app = make_app(demo_db)
    async with run_test(app, size=(120, 36)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        await pilot.press("r")
        assert not isinstance(app.screen, RawJsonScreen)
        await pilot.press("R")
        await pilot.pause()
        assert isinstance(app.screen, RawJsonScreen)


async def test_keymap_ids_that_name_no_key_are_warned_and_search_shows_its_own_key(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keymap = tmp_path / "keymap.toml"
    keymap.write_text('[keys]\n"app.search" = "ctrl+k"\n"messages.rawjson" = "R"\n', encoding="utf-8")
    monkeypatch.setenv("THREADLOOM_KEYMAP", str(keymap))
    app = make_app(demo_db)
    async with run_test(app, size=(120, 36)) as pilot:
        await pilot.pause()
        warnings = [n.message for n in app._notifications if n.title == "Keymap not applied"]
        assert warnings == [
            f"{keymap}: no key has the id 'messages.rawjson' (F1 lists the ids of the focused pane's keys)"
        ]
        await pilot.press("slash")
        await pilot.pause()
        assert not isinstance(app.screen, SearchScreen)
        await pilot.press("ctrl+k")
        await pilot.pause()
        assert isinstance(app.screen, SearchScreen)
        assert shown(app.screen.query_one("#search-prompt", Static)).strip() == app.get_key_display(
            Binding("ctrl+k", "search")
        )


async def test_a_database_that_cannot_be_opened_quits_on_q_with_status_1(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"SQLite format 3\0" + b"\x07not a database page" * 4000)
    app = make_app(damaged)
    async with run_test(app, size=(100, 30)) as pilot:
        await pilot.pause()
        # said as the database's damage, with the fix, once (not as a failure to read the agents' logs)
        assert isinstance(app.screen, ErrorScreen) and app.screen.title_text == "Cannot open the database"
        assert "threadloom ingest --rebuild" in app.screen.message
        assert "q quits" in shown(app.screen.query_one("#error-hint", Static))
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 1
    # closing the dialog first browses the empty panes; quitting still says it failed
    app = make_app(damaged)
    async with run_test(app, size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ErrorScreen)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 1


async def test_a_database_that_opens_quits_with_status_0(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_warmup_agents_hidden_until_asked(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.query_one(SessionTree)
        header = next(n for n in tree.root.children if n.data.session.title.startswith("The header"))
        assert not header.allow_expand
        tree.focus()
        await pilot.press("w")
        header = next(n for n in tree.root.children if n.data.session.title.startswith("The header"))
        tree.load_children(header)
        assert [c.data.session.is_warmup for c in header.children] == [True]
        await pilot.press("down")
        await until(pilot, lambda: app.query_one(MessageView).session_id == tree.cursor_node.data.session.id)
        on = tree.cursor_node
        assert on is not None and on.data.session.title.startswith("The header")

        # hidden again: the cursor stays on the session it was on, at once (a key pressed before the
        # next refresh moves from there) and after the refresh
        def under_cursor() -> str | None:
            node = tree.get_node_at_line(tree.cursor_line)
            return None if node is None else node.data.session.id

        tree.action_toggle_warmup()
        assert under_cursor() == on.data.session.id
        await pilot.pause()
        assert under_cursor() == on.data.session.id


async def test_jump_to_session_from_palette(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threadloom.core.read.search

    asked: list[str] = []
    real = threadloom.core.read.search.find_sessions

    def spy(conn, text, limit=20):
        asked.append(text)
        return real(conn, text, limit)

    monkeypatch.setattr(threadloom.core.read.search, "find_sessions", spy)
    app = make_app(demo_db)
    seen = Seen(OpenSession)
    async with run_test(app, size=(140, 40), message_hook=seen) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        await pilot.press(*"stripe webhooks")
        await settle(pilot)  # the palette's search worker
        await pilot.press("enter")
        await pilot.pause()
        assert "stripe webhooks" in asked  # the engine ranks first; the palette's matcher finds the rest
        view = app.query_one(MessageView)
        node = browse.get_node(app.conn, view.session_id or "")
        assert node is not None and node.task_description == "Check how Stripe webhooks apply tax"
        assert [m.session_id for m in seen.of(OpenSession)] == [node.id]  # the palette asks the app
        await pilot.press("p")
        await pilot.pause()
        await pilot.press(*"tmux")
        await settle(pilot)
        await pilot.press("enter")
        await pilot.pause()
        node = browse.get_node(app.conn, view.session_id or "")
        assert node is not None and node.title.startswith("Add a tmux config")


def test_a_session_without_a_project_has_no_empty_field_in_the_jump_list() -> None:
    """It read "Say hello and list files. ·  · gemini_stage0": an empty field between two dots."""
    from threadloom.tui.commands import SessionJumpProvider

    def text(project: str) -> str:
        target = browse.JumpTarget("gemini_stage0", "Say hello and list files.", project, None, False)
        return SessionJumpProvider._text(cast(SessionJumpProvider, None), target)

    assert text("") == "Say hello and list files. · gemini_stage0"
    assert text("/srv/app") == "Say hello and list files. · /srv/app · gemini_stage0"


async def event_set(pilot, event: threading.Event, timeout: float = 10.0) -> bool:
    """Wait for a worker thread's event while the app keeps running (the ingest starts after the
    first frame, so blocking the loop would keep it from ever starting)."""
    await until(pilot, event.is_set, timeout)
    return True


def small_archive(tmp_path: Path) -> Path:
    return write_demo_archive(tmp_path / "archive", long_turns=3)


async def test_ingest_worker_fills_panes_and_notifies(tmp_path: Path) -> None:
    root = small_archive(tmp_path)
    app = make_app(tmp_path / "fresh.db", ingest=True, sources=[root])
    async with run_test(app, size=(140, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one(ProjectList).border_title == "Projects (4)"
        assert any(n.title == "Ingest done" for n in app._notifications)
        assert not app.browser.query_one("#ingest-bar").display


async def test_a_session_started_elsewhere_shows_up_without_ctrl_r(tmp_path: Path) -> None:
    from tests.builders.claude import Transcript

    root = small_archive(tmp_path)
    app = make_app(tmp_path / "fresh.db", ingest=True, sources=[root])
    async with run_test(app, size=(140, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one(ProjectList).border_title == "Projects (4)"
        app.watch_roots()  # the first look (each WATCH_SECONDS; called here rather than waited for)
        await app.workers.wait_for_complete()
        app.watch_roots()  # nothing new: no ingest
        await app.workers.wait_for_complete()
        assert not app.archive.ingesting and app.query_one(ProjectList).border_title == "Projects (4)"
        sid = "5e55e55e-0000-4000-8000-00000000beef"
        t = Transcript(root / "-home-dev-src-newthing" / f"{sid}.jsonl", sid, cwd="/home/dev/src/newthing")
        t.user("Started in another terminal")
        t.assistant("Hello from there")
        t.write()
        app.watch_roots()
        await until(pilot, lambda: app.query_one(ProjectList).border_title == "Projects (5)")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.archive.ingesting


async def test_a_subagent_working_in_a_worktree_opens_under_its_parents_project(tmp_path: Path) -> None:
    """A subagent started with an isolated worktree records the worktree as its folder: Enter on its
    call lists it under the project of the session that started it (it listed `Sessions (0)`)."""
    from threadloom.core.store import db

    from tests.builders.claude import Transcript, tool_use
    from tests.support import ingest

    sid = "aaaaaaaa-1111-4222-8333-0000000000a1"
    folder = tmp_path / "projects" / "-home-dev-app"
    main = Transcript(folder / f"{sid}.jsonl", sid, cwd="/home/dev/app")
    main.user("Try the refactor in a worktree")
    main.assistant(tools=[tool_use("toolu_wt", "Task", description="Refactor", prompt="Refactor it")])
    main.tool_result("toolu_wt", "done", tool_use_result={"agentId": "a1b2c3d4e5f6a7b8c"})
    main.assistant("The worktree has the refactor.")
    main.write()
    sub = Transcript(
        folder / sid / "subagents" / "agent-a1b2c3d4e5f6a7b8c.jsonl",
        sid,
        cwd="/home/dev/app/.claude/worktrees/agent-a1b2c3d4",
        isSidechain=True,
        agentId="a1b2c3d4e5f6a7b8c",
    )
    sub.user("Refactor it", parent=False)
    sub.assistant("Refactored in the worktree.")
    sub.write()
    conn = db.connect(tmp_path / "t.db")
    ingest(conn, tmp_path / "projects")
    conn.close()
    app = make_app(tmp_path / "t.db")
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(sid)
        await pilot.pause()
        await cursor_to_tool(pilot, "Task")
        await pilot.press("enter")  # into the subagent
        await pilot.pause()
        view, tree = app.query_one(MessageView), app.query_one(SessionTree)
        assert view.session_id == f"{sid}:agent-a1b2c3d4e5f6a7b8c"
        assert tree.project == "/home/dev/app" and tree.border_title == "Sessions (1)"
        assert app.query_one(ProjectList).current.path == "/home/dev/app"
        assert tree.cursor_node is not None and tree.cursor_node.data.session.id == view.session_id


async def test_archive_is_browsable_while_the_search_index_builds(tmp_path: Path, monkeypatch) -> None:
    from threadloom.core.store import search_index

    root = small_archive(tmp_path)
    real_build = search_index.build
    indexing, release = threading.Event(), threading.Event()

    def held_build(conn, progress=None, cancel=None, chunk_rows=search_index.CHUNK_ROWS):
        indexing.set()
        assert release.wait(10)
        return real_build(conn, progress, cancel, chunk_rows)

    monkeypatch.setattr(search_index, "build", held_build)
    app = make_app(tmp_path / "fresh.db", ingest=True, sources=[root])
    async with run_test(app, size=(140, 40)) as pilot:
        assert await event_set(pilot, indexing)
        label = app.browser.query_one("#ingest-label", Static)
        await until(pilot, lambda: "Indexing for search" in shown(label))  # posted after the records' news
        # the records are in: panes are filled and the user was told, while the index is pending
        assert app.query_one(ProjectList).border_title == "Projects (4)"
        assert any(n.title == "Ingest done" for n in app._notifications)
        assert app.browser.query_one("#ingest-bar").display
        # shown by the bar's own display: a class of the screen restyled every widget on it, twice
        # an ingest
        classes = set(app.browser.classes)
        assert not any("ingest" in name for name in classes)
        assert "Indexing for search" in shown(app.browser.query_one("#ingest-label", Static))
        await pilot.press("slash")
        await pilot.pause()
        search = app.screen
        assert isinstance(search, SearchScreen)
        await pilot.press(*"tmux")
        await wait_for_search(pilot)
        assert any("still being built" in p for p in search.result.problems)
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert any("Search index complete" in n.message for n in app._notifications)
        assert not app.browser.query_one("#ingest-bar").display
        assert set(app.browser.classes) == classes  # the screen's classes as while it ran


def hold_first_load(
    monkeypatch: pytest.MonkeyPatch, *, at_file: int
) -> tuple[threading.Event, threading.Event]:
    """A first load that commits each file on its own, posts every file's progress, and stops
    before file `at_file` until released: (it has stopped, release it)."""
    import threadloom.core.ingest.pipeline

    real_ingest_file = threadloom.core.ingest.pipeline._ingest_file
    halfway, release = threading.Event(), threading.Event()
    calls = []

    def held(conn, ledger, plan, **options):  # type: ignore[no-untyped-def]
        calls.append(plan.ref.path)
        if len(calls) == at_file:
            halfway.set()
            assert release.wait(10)
        return real_ingest_file(conn, ledger, plan, **options)

    monkeypatch.setattr(threadloom.core.ingest.pipeline, "_ingest_file", held)
    monkeypatch.setattr(threadloom.core.ingest.pipeline._Batch, "MAX_SECONDS", 0.0)  # a transaction per file
    monkeypatch.setattr(workers, "PROGRESS_SECONDS", 0.0)  # every file's progress is posted
    return halfway, release


async def test_first_load_is_browsable_while_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first load runs without a journal as the database's writer; the panes read what its
    committed transactions hold through a read-only connection, long before the load ends."""
    root = small_archive(tmp_path)
    halfway, release = hold_first_load(monkeypatch, at_file=4)
    app = make_app(tmp_path / "fresh.db", ingest=True, sources=[root])
    async with run_test(app, size=(140, 40)) as pilot:
        assert await event_set(pilot, halfway)
        await until(pilot, lambda: app.conn is not None and app.query_one(SessionTree).sessions)
        assert app.archive.ingesting and app.archive.load_reader and app.conn is not None
        assert app.conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal"  # still the fast load
        projects = app.query_one(ProjectList)
        loaded = {p.name for p in projects.projects}
        assert 1 <= len(loaded) < 4
        assert app.query_one(SessionTree).sessions
        assert not app.browser.check_action("fork", ())
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.archive.load_reader
        assert app.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert projects.border_title == "Projects (4)"
        assert any(n.title == "Ingest done" for n in app._notifications)


async def test_stats_opened_during_a_first_load_read_the_whole_archive_when_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stats screen reads through the app's connection: opened while a first load is read
    through a read-only one, it keeps working when that connection is closed at the load's end,
    and shows what the load added."""
    from textual.widgets import DataTable
    from threadloom.core.insight import stats
    from threadloom.tui.stats import StatsScreen

    root = small_archive(tmp_path)
    halfway, release = hold_first_load(monkeypatch, at_file=3)
    app = make_app(tmp_path / "fresh.db", ingest=True, sources=[root])
    async with run_test(app, size=(140, 40)) as pilot:
        assert await event_set(pilot, halfway)
        await until(pilot, lambda: app.conn is not None and app.archive.load_reader)
        await pilot.press("S")
        await until(pilot, lambda: isinstance(app.screen, StatsScreen))
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        during = screen.query_one("#stats-title", Static).render()
        release.set()
        await app.workers.wait_for_complete()
        await until(pilot, lambda: not app.archive.load_reader)
        assert app.conn is not None
        whole = stats.report(app.conn, "total")[0]
        assert screen.conn is app.conn
        title = str(screen.query_one("#stats-title", Static).render())
        assert f"{whole.sessions} session" in title and str(during) != title
        await pilot.press("p")  # grouped again: read through the open connection, not the closed one
        await pilot.pause()
        projects = {r.period for r in stats.report(app.conn, "project")}
        table = screen.query_one(DataTable)
        assert len(projects) == 4 and table.row_count == len(projects)


def append_claude_messages(app: ThreadloomApp, sid: str, messages: list[tuple[str, str]]) -> None:
    """Write (role, text) messages at the end of a Claude Code session's file, each the child of the
    one before, as its agent still at work would."""
    assert app.conn is not None
    source = browse.session_source(app.conn, sid)
    assert source is not None
    path = Path(source[0])
    last = json.loads(path.read_bytes().splitlines()[-1])
    added: list[dict] = []
    for n, (kind, text) in enumerate(messages):
        added.append(
            {
                "type": kind,
                "uuid": f"follow-{n}",
                "parentUuid": added[-1]["uuid"] if added else last["uuid"],
                "sessionId": last["sessionId"],
                "timestamp": f"2026-06-12T15:00:0{n}Z",
                "cwd": last.get("cwd"),
                "isSidechain": False,
                "message": {"role": kind, "content": text}
                if kind == "user"
                else {
                    "role": "assistant",
                    "id": "msg_follow",
                    "model": "claude-opus-4-1",
                    "content": [{"type": "text", "text": text}],
                },
            }
        )
    with path.open("ab") as f:
        f.write(b"".join(json.dumps(r).encode() + b"\n" for r in added))


async def test_open_session_follows_its_growing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent still writing the session being read: the new messages appear at the end, and a
    reader resting on the last message is carried to them."""
    db = build_demo_db(tmp_path, long_turns=3)
    monkeypatch.setattr(ThreadloomApp, "FOLLOW_SECONDS", 0.1)
    launches: list[tuple] = []
    follow = workers.follow

    def counted(*args):  # type: ignore[no-untyped-def]
        launches.append(args)
        return follow(*args)

    monkeypatch.setattr(workers, "follow", counted)
    checks: list[None] = []
    check = ThreadloomApp._follow_open_session

    def checked(self: ThreadloomApp) -> None:
        checks.append(None)
        check(self)

    monkeypatch.setattr(ThreadloomApp, "_follow_open_session", checked)
    app = make_app(db)
    seen = Seen(workers.Followed)
    async with run_test(app, size=(140, 40), message_hook=seen) as pilot:
        sid = await open_checkout(pilot, app)
        view = app.query_one(MessageView)
        before = view.count
        view.action_last()
        await pilot.pause()
        append_claude_messages(
            app,
            sid,
            [
                ("user", "And the refund flow too?"),
                ("assistant", "Checked: refunds reuse the same tax call."),
            ],
        )
        await until(pilot, lambda: view.count > before)
        assert [(m.session_id, m.report.records_added) for m in seen.of(workers.Followed)] == [(sid, 2)]
        assert view.count == before + 2
        assert view.cursor[0] == view.count - 1  # the reader was at the end: carried to the new one
        assert "refunds reuse the same tax call" in (view.row(view.count - 1).content or "")
        assert view.border_subtitle.startswith(f"{before + 2:,} messages")
        # nothing more written: the file is not read again, however often it is looked at
        await app.workers.wait_for_complete()
        looked = len(checks)
        await until(pilot, lambda: len(checks) >= looked + 3)
        assert len(launches) == 1


async def test_what_another_writer_archived_first_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watch (or a CLI ingest) read the growing session before the app looked: its file then
    matched the archive, and the app never showed what came; the screens follow the archive."""
    from threadloom.core.ingest.update import update

    db = build_demo_db(tmp_path, long_turns=3)
    monkeypatch.setattr(ThreadloomApp, "FOLLOW_SECONDS", 0.1)
    app = make_app(db)
    async with run_test(app, size=(140, 40)) as pilot:
        sid = await open_checkout(pilot, app)
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == sid and view.count > 0)
        before = view.count
        # written and archived by another process at once (nothing runs in the app meanwhile)
        append_claude_messages(app, sid, [("user", "And the refund flow too?")])
        path = Path(browse.session_source(app.conn, sid)[0])
        assert update(db, [path], include_defaults=False, remember=False).records_added == 1
        await until(pilot, lambda: view.count == before + 1)
        assert "refund flow" in (view.row(view.count - 1).content or "")
        assert view.border_subtitle.startswith(f"{before + 1:,} messages")


async def test_a_message_completed_in_place_and_a_rewritten_file_are_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Gemini CLI message is written again with its call's result (as many messages as before):
    it stayed "still running"; a file rewritten shorter left the old messages on screen. Both are
    shown as the archive holds them, written by another process (a watch) the moment they were."""
    from threadloom.core.ingest.update import update

    from tests.builders.gemini import SID, chats, meta, reply, shell, user, write_jsonl

    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "ghome"))
    project = tmp_path / "ghome" / ".gemini" / "tmp" / "webshop"
    project.mkdir(parents=True)
    (project / ".project_root").write_text("/home/dev/webshop\n")
    lines = [meta(), user("u1", "list the files"), reply("g1", "Looking.", tools=[shell("t1", "ls")])]
    path = write_jsonl(chats(project.parent.parent) / f"session-2026-04-29T21-39-{SID[:8]}.jsonl", lines)
    database = tmp_path / "g.db"
    update(database, [path], include_defaults=False, remember=False)
    monkeypatch.setattr(ThreadloomApp, "FOLLOW_SECONDS", 0.1)
    app = make_app(database)
    async with run_test(app, size=(140, 40)) as pilot:
        await until(pilot, lambda: app.conn is not None)
        app.browser.jump_to_session(SID)
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == SID and view.count == 2)
        assert [t.status for t in view.row(1).tool_calls] == ["pending"]
        done = shell("t1", "ls", result="a.py", status="success")
        write_jsonl(path, [*lines, reply("g1", "Looking.", tools=[done])])  # the same message, completed
        update(database, [path], include_defaults=False, remember=False)
        await until(pilot, lambda: [t.status for t in view.row(1).tool_calls] == ["completed"])
        assert view.count == 2
        write_jsonl(path, [meta(), user("u9", "another question")])  # rewritten, shorter
        update(database, [path], include_defaults=False, remember=False)
        await until(pilot, lambda: view.count == 1 and (view.row(0).content or "") == "another question")


async def test_an_open_stats_screen_counts_what_a_followed_session_adds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from threadloom.tui.stats import StatsScreen

    db = build_demo_db(tmp_path, long_turns=3)
    monkeypatch.setattr(ThreadloomApp, "FOLLOW_SECONDS", 0.1)
    app = make_app(db)
    seen = Seen(workers.Followed)
    async with run_test(app, size=(140, 40), message_hook=seen) as pilot:
        sid = await open_checkout(pilot, app)
        await pilot.press("S")
        await until(pilot, lambda: isinstance(app.screen, StatsScreen))
        title = app.screen.query_one("#stats-title", Static)
        before = str(title.render())
        append_claude_messages(app, sid, [("user", "One more question")])
        await until(pilot, lambda: bool(seen.of(workers.Followed)) and str(title.render()) != before)
        count = re.search(r"([\d,]+) messages?", before)
        assert count is not None
        assert f"{int(count.group(1).replace(',', '')) + 1:,} message" in str(title.render())


async def test_empty_state_then_demo(tmp_path: Path) -> None:
    """A first run with no logs says what to do in a 24-row terminal: the demo key, the --source
    hint and where it looked (the forty places the agents keep their logs, listed one a line,
    pushed the demo key past the bottom, where it could not be scrolled to)."""
    app = make_app(tmp_path / "empty.db", ingest=True, demo_long_turns=3)
    async with run_test(app, size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen.has_class("-empty")
        panel = app.query_one("#empty", Static)
        text = shown(panel)
        assert "--source" in text and "where the agents keep their logs, none on this machine" in text
        drawn = [strip.text for strip in panel.render_lines(panel.region.reset_offset)]
        assert any("Press d to open the demo archive" in line for line in drawn)
        assert any("`threadloom sources` lists them" in line for line in drawn), drawn  # its end is on screen
        # as many as `threadloom sources` lists (the folders of side files are read, not listed)
        from threadloom.core.adapters import all_adapters

        absent = sum(not root.exists() for a in all_adapters() for root in a.default_roots())
        assert f"{absent} places where the agents keep their logs" in text, text
        await pilot.press("d")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.screen.has_class("-empty")
        assert app.query_one(ProjectList).border_title == "Projects (4)"
        assert app.archive.temp_dir is not None and app.db_path.parent == app.archive.temp_dir


async def test_the_places_looked_in_wrap_under_their_own_indent(tmp_path: Path) -> None:
    """On a first run in 80 columns, a place looked in that wraps went on at the left margin, under
    the heading rather than under itself; a wrapped place keeps its indent."""
    app = make_app(tmp_path / "empty.db", ingest=True, demo_long_turns=3)
    async with run_test(app, size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        panel = app.query_one("#empty", Static)
        drawn = [strip.text.strip("│").rstrip() for strip in panel.render_lines(panel.region.reset_offset)]
        heading = next(i for i, line in enumerate(drawn) if "looked for agent logs in:" in line)
        places = drawn[heading + 1 :]
        assert "places where the agents keep" in places[0] and "lists them)" not in places[0], drawn
        indent = len(places[0]) - len(places[0].lstrip())
        below = len(drawn[heading]) - len(drawn[heading].lstrip())
        assert indent == below + 2, drawn
        assert places[1].strip().endswith("lists them)"), drawn
        assert len(places[1]) - len(places[1].lstrip()) == indent, drawn


async def test_demo_starts_with_the_project_list_focused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # the demo's folder goes here
    app = ThreadloomApp(demo=True, now=fixed_now, demo_long_turns=3)
    async with run_test(app, size=(100, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        projects = app.query_one(ProjectList)
        assert projects.option_count == 4 and app.focused is projects
        await pilot.press("down")  # keys work at once, without Tab first
        await pilot.pause()
        assert projects.highlighted == 1
        assert app.archive.temp_dir is not None and app.archive.temp_dir.parent == tmp_path


async def test_rescan_says_so_when_nothing_was_new(tmp_path: Path) -> None:
    from threadloom.core.store import db

    from tests.support import ingest

    root = small_archive(tmp_path)
    conn = db.connect(tmp_path / "t.db")
    ingest(conn, root)  # the folder is remembered: a rescan reads it again
    conn.close()
    app = make_app(tmp_path / "t.db")
    told: list[tuple[str, str]] = []  # every toast, kept past its timeout (a loaded machine outlives 3 s)
    real_notify = app.notify

    def notify(message: str, *, title: str = "", **kw) -> None:
        told.append((title, message))
        real_notify(message, title=title, **kw)

    app.notify = notify  # type: ignore[method-assign]
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+r")
        await until(pilot, lambda: not app.archive.ingesting)  # the worker's end, as the app heard it
        said = [message for title, message in told if title == "Rescan"]
        assert len(said) == 1 and "No new or changed agent logs" in said[0]
        first = sorted(root.rglob("*.jsonl"))[0]
        with open(first, "ab") as f:
            f.write(b'{"type":"custom-title","customTitle":"renamed","sessionId":"x"}\n')
        await pilot.press("ctrl+r")
        await until(pilot, lambda: not app.archive.ingesting)
        assert [title for title, _ in told if title in ("Rescan", "Ingest done")] == ["Rescan", "Ingest done"]


async def test_a_new_project_read_by_ctrl_r_leaves_the_highlight_and_its_sessions_together(
    tmp_path: Path,
) -> None:
    from threadloom.core.store import db

    from tests.builders.claude import Transcript
    from tests.support import ingest

    root = small_archive(tmp_path)
    conn = db.connect(tmp_path / "t.db")
    ingest(conn, root)
    conn.close()
    app = make_app(tmp_path / "t.db")
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        projects, tree = app.query_one(ProjectList), app.query_one(SessionTree)
        await pilot.press("down")  # the second project
        await pilot.pause()
        chosen = projects.current.path
        assert tree.project == chosen and projects.highlighted == 1
        sid = "5e55e55e-0000-4000-8000-00000000beef"
        t = Transcript(root / "-home-dev-src-newthing" / f"{sid}.jsonl", sid, cwd="/home/dev/src/newthing")
        t.user("Started in another terminal")
        t.assistant("Hello")
        t.write()
        await pilot.press("ctrl+r")
        await until(pilot, lambda: not app.archive.ingesting)
        await pilot.pause()
        # the newest project comes first; the highlight stays on the project whose sessions are listed
        assert projects.projects[0].path == "/home/dev/src/newthing"
        assert projects.current.path == chosen == tree.project and projects.highlighted == 2
        assert tree.border_title == f"Sessions ({len(tree.sessions)})" and tree.sessions


async def test_worker_error_opens_dialog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("threadloom.core.ingest.pipeline.run_ingest", broken)
    app = make_app(tmp_path / "x.db", ingest=True)
    async with run_test(app, size=(100, 30)) as pilot:
        with contextlib.suppress(WorkerFailed):
            await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        assert "disk on fire" in app.screen.message
        await pilot.press("escape")
        assert not isinstance(app.screen, ErrorScreen)


async def test_escape_cancels_ingest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = threading.Event()

    def slow(conn, sources, *, cancel, **_):
        started.set()
        assert cancel.wait(10)
        return IngestReport(cancelled=True)

    monkeypatch.setattr("threadloom.core.ingest.pipeline.run_ingest", slow)
    app = make_app(tmp_path / "x.db", ingest=True)
    async with run_test(app, size=(100, 30)) as pilot:
        assert await event_set(pilot, started)
        await pilot.pause()
        assert app.browser.query_one("#ingest-bar").display
        await pilot.press("escape")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert any("cancelled" in n.message for n in app._notifications)


async def test_tree_node_highlight_previews_session(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.query_one(SessionTree)
        tree.focus()
        await pilot.press("down")
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == tree.cursor_node.data.session.id)  # the preview
        assert view.session_id == tree.cursor_node.data.session.id
        assert app.focused is tree
        assert isinstance(tree, Tree)


async def test_moving_to_another_project_shows_its_newest_session(demo_db: Path) -> None:
    """The message pane never shows a conversation of a project that is no longer listed."""
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id is not None)
        view, tree = app.query_one(MessageView), app.query_one(SessionTree)
        projects = app.query_one(ProjectList)
        first = view.session_id
        assert first == session_id(app, CHECKOUT) and app.focused is projects
        await pilot.press("down")  # to ledger-api
        await until(pilot, lambda: view.session_id != first)
        node = tree.cursor_node
        assert node is not None and projects.current is not None
        assert tree.project == projects.current.path == node.data.session.project_path
        assert view.session_id == node.data.session.id != first
        assert view.border_title == _clip_title(node.data.session.title)
        assert tree.border_subtitle == tree.facts(node, tree.facts_room)
        assert app.focused is projects  # the preview does not take the focus
        await pilot.press("up")
        await until(pilot, lambda: view.session_id == first)
        assert view.session_id == first


def _clip_title(title: str | None) -> str:
    from threadloom.tui.render import plain_title

    return plain_title(title, 70).markup


def test_session_rows_show_when_they_were_last_written_with_the_year_when_not_this_one() -> None:
    from datetime import datetime

    from threadloom.core.base.text import short_when
    from threadloom.tui.panes import session_label

    now = datetime(2026, 3, 1, 12, 0).timestamp()
    june_2025 = int(datetime(2025, 6, 12, 14, 5).timestamp() * 1000)
    feb_2026 = int(datetime(2026, 2, 3, 9, 30).timestamp() * 1000)
    assert short_when(june_2025, now) == "12 Jun 2025"
    assert short_when(feb_2026, now) == "03 Feb 09:30"
    node = browse.SessionSummary(
        id="s1",
        agent="claude-code",
        title="Fix the build",
        project=None,
        project_path=None,
        started_at=june_2025,
        ended_at=feb_2026,
        message_count=1,
        is_subagent=False,
        input_tokens=0,
        output_tokens=0,
        cache_creation_tokens=0,
        cache_read_tokens=0,
        model=None,
        kind="main",
        agent_type=None,
        task_description=None,
        task_status=None,
        is_warmup=False,
        branch_count=0,
        compaction_count=0,
        parent_session_id=None,
        tool_call_id=None,
    )
    row = session_label(node, 90, now).plain
    assert "03 Feb 09:30" in row and "2025" not in row and "1 msg " in row
    from threadloom.tui.browser import subtitle as _subtitle

    assert _subtitle(node, 1, 0) == "1 message · 0 tokens"  # no model: no dangling separator


async def test_every_binding_has_an_id(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        for pane in ("projects", "sessions", "messages"):
            app.query_one(f"#{pane}").focus()
            await pilot.pause()
            missing = [key for key, active in app.screen.active_bindings.items() if not active.binding.id]
            assert missing == [], pane
        await pilot.press("f")  # the fork picker, on the message under the cursor
        await settle(pilot)
        assert isinstance(app.screen, ForkPicker)
        for widget in ("#fork-points", "#fork-here"):
            app.screen.query_one(widget).focus()
            await pilot.pause()
            assert [k for k, a in app.screen.active_bindings.items() if not a.binding.id] == [], widget
        await pilot.press("escape", "slash", *"tax")
        await wait_for_search(pilot)
        for widget in ("#search-input", "#search-results"):
            app.screen.query_one(widget).focus()
            await pilot.pause()
            missing = [
                k
                for k, a in app.screen.active_bindings.items()
                if not a.binding.id and not isinstance(a.node, Input)
            ]  # Input's own editing keys
            assert missing == [], widget


def test_screens_import_the_events_not_the_app() -> None:
    """Only the entry point imports the app: search, the fork picker, the palette and the browser
    post messages from `tui.events`, so nothing they import can come back round to the app."""
    import ast

    import threadloom.tui

    folder = Path(threadloom.tui.__file__).parent
    importers = set()
    for module in folder.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = "threadloom.tui." * (node.level == 1) + (node.module or "")
                names = [base.rstrip("."), *(f"{base.rstrip('.')}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                names = []
            if "threadloom.tui.app" in names:
                importers.add(module.name)
    assert importers == {"entry.py"}


def test_core_never_imports_textual() -> None:
    import subprocess
    import sys

    code = "import sys, core.read.browse, core.adapters.claude_demo, core.read.query; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_rewind_is_marked_in_the_whole_session(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        view = app.query_one(MessageView)
        assert view.rewinds == {15} and "2 branches" in str(view.border_subtitle)
        rendered = view.ensure(view.position_of_seq(15))
        assert [b.kind for b in rendered.blocks][:3] == ["gap", "rewind", "gap"]
        assert "rewound" in rendered.strips[rendered.blocks[1].start].text


async def test_a_branch_rewound_away_from_is_marked_withdrawn(demo_db: Path) -> None:
    """The prompt the user rewound away from and its replies were drawn as ordinary messages, as if
    the model still had them: a line opens them and each header bears its mark; the branch the
    rewind started, and what came before the branch point, are not."""
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        view = app.query_one(MessageView)
        assert view.withdrawn and max(view.withdrawn) < 15 and 15 in view.rewinds
        first = min(view.withdrawn)
        rendered = view.ensure(view.position_of_seq(first))
        kinds = [b.kind for b in rendered.blocks]
        assert kinds[:3] == ["gap", "withdrawn", "gap"]
        texts = [strip.text for strip in rendered.strips]
        assert "── ⤺ withdrawn by an undo or a rewind below ──" in texts[rendered.blocks[1].start]
        assert any("Also round to cents" in t for t in texts)
        assert any(t.strip().startswith("● user ⤺  12 Jun") for t in texts)
        for seq in (first - 1, 15):  # before the branch point, and the branch the rewind started
            drawn = view.ensure(view.position_of_seq(seq))
            assert "withdrawn" not in [b.kind for b in drawn.blocks]
            assert not any("⤺" in strip.text for strip in drawn.strips)
        # marked anew while it is followed (an undo, a rewind come since): drawn again, not as cached
        marks = view.withdrawn
        view.withdrawn = frozenset()
        assert "withdrawn" not in [b.kind for b in view.ensure(view.position_of_seq(first)).blocks]
        view.withdrawn = marks
        assert "withdrawn" in [b.kind for b in view.ensure(view.position_of_seq(first)).blocks]


async def test_palette_offers_pane_actions_and_finds_sessions(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Messages: expand or collapse all tool calls" in titles
        # the pane's first, then the browser's and the ingest's in one order, help last
        order = ["Jump to session", "Stats: tokens and cost", "Ingest: rescan now", "Signals of the session"]
        assert [t for t in titles if t in order] == order
        assert titles.index("Messages: expand or collapse all tool calls") < titles.index(order[0])
        assert titles.index(order[-1]) < titles.index("Help: keys of the focused pane")
        app.query_one(ProjectList).focus()
        await pilot.pause()
        assert not any(
            t.startswith("Messages:") for t in (c.title for c in app.get_system_commands(app.screen))
        )
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"tmux config")
        await settle(pilot)  # the palette's search worker
        await pilot.press("enter")
        await pilot.pause()
        node = browse.get_node(app.conn, app.query_one(MessageView).session_id or "")
        assert node is not None and node.title.startswith("Add a tmux config")
        # "keys" names the help action (the tmux session's "vim keys" comes after it); Textual's
        # own keys panel is not offered beside our help
        assert "Keys" not in [c.title for c in app.get_system_commands(app.screen)]
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"keys")
        await settle(pilot)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


# ---------------------------------------------------------------------------- search


def visible(view: MessageView, pos: int) -> bool:
    height = view.scrollable_content_region.height
    return view.scroll_y <= view.state.offsets[pos] < view.scroll_y + height


async def test_a_session_opened_from_the_stats_does_not_lead_back_to_an_old_search(demo_db: Path) -> None:
    """Search, open a hit, then the stats, Enter on a session: Esc in that session must not bring
    the old search back (the next letters typed landed in its query)."""
    from threadloom.tui.stats import StatsScreen

    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"invoice")
        await wait_for_search(pilot)
        await pilot.press("enter")
        await until(pilot, lambda: app.screen is app.browser and app.browser.search_return)
        await pilot.press("S")
        await until(pilot, lambda: isinstance(app.screen, StatsScreen))
        await pilot.press("s", "enter")
        await until(pilot, lambda: app.screen is app.browser)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, SearchScreen)


async def test_search_as_you_type_then_enter_opens_the_message(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("slash")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        assert screen.query_one("#search-help").display  # the filters, until something is typed
        await pilot.press(*"invoise")  # misspelt
        await wait_for_search(pilot)
        # the two messages of the checkout session, and its subagent's (subagents are searched too)
        assert screen.result_query == "invoise" and len(screen.hits) == 3
        assert screen.result is not None and screen.result.terms["invoise"][0] == "invoice"
        results = screen.query_one(ResultsList)
        assert results.option_count == 3 and results.highlighted == 0
        status = shown(screen.query_one("#search-status", Static))
        assert "3 of 3 hits" in status and " ms" in status and "invoise → invoice" in status
        assert "words + meaning" in status  # the mode
        sub = next(h for h in screen.hits if h.main_session_id)
        assert "subagent of The checkout" in results.get_option_at_index(screen.hits.index(sub)).prompt.plain
        for hit in screen.hits:
            assert {hit.snippet[a:b].lower()[:7] for a, b in hit.highlights} == {"invoice"}
        main = next(i for i, h in enumerate(screen.hits) if not h.main_session_id)
        prompt = results.get_option_at_index(main).prompt
        assert isinstance(prompt, Text)
        marked = [
            prompt.plain[span.start : span.end] for span in prompt.spans if "on #d7af5f" in str(span.style)
        ]
        assert marked and marked[0].lower().startswith("invoice")
        assert "claude-code · acme-shop · The checkout tests" in prompt.plain and "19h ago" in prompt.plain

        await pilot.press("down")
        hit = screen.current_hit()
        assert hit is not None and results.highlighted == 1
        await pilot.press("enter")
        await pilot.pause()
        await pilot.pause()
        view = app.query_one(MessageView)
        assert app.screen is app.browser and app.focused is view
        assert view.session_id == hit.session_id
        pos = view.cursor[0]
        assert view.row(pos).seq == hit.seq and view.row(pos).entry_id == hit.entry_id
        assert view.found == pos and visible(view, pos)
        assert view.state.offsets[pos] - view.scroll_y >= 3  # what came before it is on screen too

        await pilot.press("escape")  # back to the results, as they were
        await pilot.pause()
        assert app.screen is screen
        assert screen.query_one("#search-input", Input).value == "invoise"
        assert results.highlighted == 1 and screen.current_hit() == hit
        await pilot.press("escape")  # closes search
        await pilot.pause()
        assert app.screen is app.browser
        await pilot.press("escape")  # nothing to go back to now
        await pilot.pause()
        assert app.screen is app.browser
        await pilot.press("slash")  # the same search again, its query selected to be typed over
        await pilot.pause()
        assert app.screen is screen and screen.query_one("#search-input", Input).selected_text == "invoise"


async def test_search_newest_query_wins_and_problems_show(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"tax")  # and on at once, before the debounce fires
        await pilot.press("backspace", "backspace", "backspace", *"zzqxv")
        await wait_for_search(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        assert screen.result_query == "zzqxv" and screen.hits == []
        assert "nothing like 'zzqxv'" in shown(screen.query_one("#search-status", Static))
        # an unknown signal: searched without it, and the whole list of known ones shown (wrapped)
        await pilot.press(*(["backspace"] * 5), *"signal:retry checkout")
        await wait_for_search(pilot)
        status = screen.query_one("#search-status", Static)
        assert screen.hits and status.size.height >= 2
        assert "repeated-prompt)" in " ".join(shown(status).split())
        await pilot.press(*(["backspace"] * len("signal:retry checkout")), *"role:user checkout")
        await wait_for_search(pilot)
        assert screen.hits and {h.role for h in screen.hits} == {"user"}
        await pilot.press("f1")  # the filters and keys
        assert screen.query_one("#search-help").display and not screen.query_one(ResultsList).display
        help_text = shown(screen.query_one("#search-help", Static))
        assert "in:main" in help_text and "after:" in help_text and "Fork" in help_text
        assert "file:" in help_text and "words only, or meaning only" in help_text
        await pilot.press("escape")  # closes the filters first
        assert screen.query_one(ResultsList).display and app.screen is screen
        screen.query_one(ResultsList).focus()
        await pilot.press("x")  # a letter in the results goes to the query
        assert app.focused is screen.query_one("#search-input")
        assert screen.query_one("#search-input", Input).value == "role:user checkoutx"


async def test_search_during_ingest_keeps_the_browser_fed(tmp_path: Path) -> None:
    root = small_archive(tmp_path)
    app = make_app(tmp_path / "fresh.db", ingest=True, sources=[root])
    async with run_test(app, size=(140, 40)) as pilot:
        await until(pilot, lambda: app.conn is not None)  # search needs the database the ingest creates
        await pilot.press("slash")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, SearchScreen)  # progress and refreshes went to the browser
        await pilot.press("escape")
        await pilot.pause()
        assert app.query_one(ProjectList).border_title == "Projects (4)"


async def test_search_says_what_was_chosen_and_the_app_acts_on_it(demo_db: Path) -> None:
    """Search never calls into the app: Enter, Ctrl+F and Esc are messages the app handles."""
    app = make_app(demo_db)
    seen = Seen(SearchHitChosen, OpenForkPicker, SearchClosed)
    async with run_test(app, size=(140, 40), message_hook=seen) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"invoise")
        await wait_for_search(pilot)
        search = app.screen
        assert isinstance(search, SearchScreen)
        await pilot.press("down")
        hit = search.current_hit()
        assert hit is not None and seen.messages == []
        await pilot.press("enter")
        await until(pilot, lambda: app.screen is app.browser)
        assert [m.hit for m in seen.of(SearchHitChosen)] == [hit]
        assert app.query_one(MessageView).session_id == hit.session_id and app.browser.search_return
        await pilot.press("escape")  # back to the results: the app's own key, no message
        await until(pilot, lambda: app.screen is search)
        await pilot.press("ctrl+f")
        await settle(pilot)
        (asked,) = seen.of(OpenForkPicker)
        assert (asked.session_id, asked.entry_id, asked.seq) == (hit.session_id, hit.entry_id, hit.seq)
        assert isinstance(app.screen, ForkPicker) and app.screen.model.entry_id == hit.entry_id
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is search)
        assert not seen.of(SearchClosed)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.browser)
        assert len(seen.of(SearchClosed)) == 1 and not app.browser.search_return


async def test_ingest_says_records_first_then_the_index_then_its_end(tmp_path: Path) -> None:
    """A first load: the records' news, then the search index (core's own index phase, its
    progress as the index's alone), then one Ingested carrying the same report, completed."""
    from threadloom.core.ingest.pipeline import Phase

    root = small_archive(tmp_path)
    app = make_app(tmp_path / "fresh.db", ingest=True, sources=[root])
    seen = Seen(workers.IngestStatus, workers.IngestProgressed, workers.RecordsLoaded, workers.Ingested)
    async with run_test(app, size=(140, 40), message_hook=seen) as pilot:
        await until(pilot, lambda: seen.of(workers.Ingested) and not app.archive.ingesting)
        kinds = [type(m) for m in seen.messages]
        assert kinds[0] is workers.IngestStatus and kinds[-1] is workers.Ingested
        assert kinds.count(workers.RecordsLoaded) == 1 and kinds.count(workers.Ingested) == 1
        statuses = [m.text for m in seen.of(workers.IngestStatus)]
        assert statuses == ["Reading agent logs", "Indexing for search"]
        assert seen.of(workers.IngestStatus)[0].first_load
        loaded = kinds.index(workers.RecordsLoaded)
        indexing = next(
            i for i, m in enumerate(seen.messages) if isinstance(m, workers.IngestStatus) and i > loaded
        )
        after = [m.progress for m in seen.messages[indexing:] if isinstance(m, workers.IngestProgressed)]
        # the index, then the turns read for search by meaning, each to its end
        phases = [p.phase for p in after]
        assert phases and set(phases) == {Phase.INDEXING, Phase.EMBEDDING}
        assert phases == sorted(phases, key=[Phase.INDEXING, Phase.EMBEDDING].index)
        for phase in (Phase.INDEXING, Phase.EMBEDDING):
            last = [p for p in after if p.phase is phase][-1]
            assert last.phase_done == last.phase_total > 0
        (records,) = seen.of(workers.RecordsLoaded)
        (ended,) = seen.of(workers.Ingested)
        assert ended.error is None and ended.report is records.report
        assert ended.report.index_complete and not ended.report.cancelled
        assert app.last_report is ended.report
        assert any("Search index complete" in n.message for n in app._notifications)


async def test_finding_every_sessions_signals_again_shows_in_the_bar(tmp_path: Path, monkeypatch) -> None:
    """After an update whose signal pass is newer, the first ingest looks at every session again
    (seconds on a large archive, with every file already read): the bar says so as it goes."""
    from threadloom.core.base.text import SIGNALS_VERSION_KEY
    from threadloom.core.ingest.pipeline import run_ingest
    from threadloom.core.insight import signals
    from threadloom.core.store import db
    from threadloom.core.store.sql import set_meta

    root = small_archive(tmp_path)
    conn = db.connect(tmp_path / "older.db")
    run_ingest(conn, [root], include_defaults=False)
    set_meta(conn, SIGNALS_VERSION_KEY, "1")
    conn.close()
    monkeypatch.setattr(signals, "PROGRESS_SECONDS", 0.0)
    real_pass = signals.session_pass
    finding, release = threading.Event(), threading.Event()

    def held_pass(conn, session_id, *, whole=False):
        finding.set()
        assert release.wait(10)
        return real_pass(conn, session_id, whole=whole)

    monkeypatch.setattr(signals, "session_pass", held_pass)
    app = make_app(tmp_path / "older.db", ingest=True, sources=[root])
    async with run_test(app, size=(140, 40)) as pilot:
        assert await event_set(pilot, finding)
        label = app.browser.query_one("#ingest-label", Static)
        await until(pilot, lambda: "Finding signals in every session: 0%" in shown(label))
        release.set()
        await until(pilot, lambda: not app.archive.ingesting)


# ---------------------------------------------------------------------------- fork picker


@pytest.fixture
def fork_db(tmp_path: Path) -> Path:
    """Forks write beside the demo archive and into the database: a fresh one per test."""
    return build_demo_db(tmp_path / "fork", long_turns=3)


async def open_picker_at(pilot, seq: int) -> ForkPicker:
    app: ThreadloomApp = pilot.app
    app.browser.jump_to_session(session_id(app, CHECKOUT))
    await pilot.pause()
    app.query_one(MessageView).go_to_seq(seq)
    await pilot.press("f")
    await settle(pilot)
    assert isinstance(app.screen, ForkPicker)
    return app.screen


async def test_titles_with_brackets_are_shown_as_written(tmp_path: Path) -> None:
    """A border reads a str as markup: "[Image #1]" and "[red]" vanished from titles."""
    from threadloom.core.store import db

    from tests.builders.claude import Transcript
    from tests.support import ingest

    sid = "abcdef00-0000-4000-8000-000000000001"
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{sid}.jsonl", sid)
    title = "[Image #1] why is the [red] header misaligned?"
    t.user(title)
    t.assistant("Looking.")
    t.write()
    conn = db.connect(tmp_path / "t.db")
    ingest(conn, tmp_path / "projects")
    conn.close()
    app = make_app(tmp_path / "t.db")
    async with run_test(app, size=(140, 40)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id is not None)
        view = app.query_one(MessageView)
        assert view.session_id == sid
        assert view._border_title is not None and view._border_title.plain == title
        view.focus()
        await pilot.press("f")
        await settle(pilot)
        box = app.screen.query_one("#fork-box")
        assert box._border_title is not None and box._border_title.plain == f"Fork or resume · {title}"


async def test_escape_sequences_in_a_log_become_styles_not_terminal_commands(tmp_path: Path) -> None:
    """Written to the terminal as they are, a tool's escape sequences would move the cursor or
    retitle the window; the viewer shows their colours and bold as styles instead."""
    from tests.builders.claude import ansi_session

    t = ansi_session(tmp_path)
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(140, 40)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id is not None)
        view = app.query_one(MessageView)
        assert view.session_id == t.session_id
        view.focus()
        view.action_toggle_all()
        await pilot.pause()
        strips = [strip for pos in range(len(view.seqs)) for strip in view.ensure(pos).strips]
        text = "\n".join(strip.text for strip in strips)
        assert "\x1b" not in text and "\x07" not in text
        assert "␛]0;pytest␇12 passed in 0.4s" in text  # a window title's sequence is drawn as text
        assert "PostToolUse:Edit" in text and "12 passed in 0.4s" in text and "Cost: $0.12" in text
        bold = [
            seg
            for strip in strips
            for seg in strip
            if "12 passed" in seg.text and seg.style and seg.style.bold
        ]
        green = [
            seg
            for strip in strips
            for seg in strip
            if "12 passed" in seg.text and seg.style and seg.style.color
        ]
        assert bold and green, [seg for strip in strips for seg in strip if "passed" in seg.text]


async def test_a_background_tasks_notification_is_shown_as_a_notice_not_as_the_users_words(
    tmp_path: Path,
) -> None:
    from tests.builders.claude import notice_session

    t = notice_session(tmp_path)
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(140, 40)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id is not None)
        view = app.query_one(MessageView)
        assert view.session_id == t.session_id
        text = "\n".join(strip.text for pos in range(len(view.seqs)) for strip in view.ensure(pos).strips)
        assert "<task-notification>" not in text and "<result>" not in text
        assert "⚑ background task" in text and 'Agent "Coverage analysis" completed  ✓' in text
        assert "Coverage is now 96%." in text and "total_tokens: 23099" in text
        assert text.count("● user") == 1  # only the prompt the user typed
        view.focus()
        view.go_to_seq(len(view.seqs) - 1)
        await pilot.press("f")  # the fork picker lists the notification's turn by its summary
        await settle(pilot)
        points = app.screen.query_one(PointList)
        prompts = [str(points.get_option_at_index(i).prompt) for i in range(points.option_count)]
        assert any('› ⚑ Agent "Coverage analysis" completed: Coverage is now 96%.' in p for p in prompts), (
            prompts
        )
        assert not any("<task-" in p for p in prompts)


def option_texts(picker: ForkPicker) -> list[str]:
    points = picker.query_one(PointList)
    return [str(points.get_option_at_index(i).prompt) for i in range(points.option_count)]


async def test_fork_picker_preselects_the_message_then_resume_copies(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        picker = await open_picker_at(pilot, 11)  # "Also round to cents in the invoice summary email."
        row = app.query_one(MessageView).current_row()
        assert (
            row is not None and picker.model.turn_id == row.turn_id and picker.model.entry_id == row.entry_id
        )
        assert [p.prompt[:24] for p in picker.model.points] == [
            "The checkout tests start",
            "Also round to cents in t",
        ]
        # the chosen turn is open on its messages, the other one folded to its prompt and reply
        texts = option_texts(picker)
        assert texts[0].startswith("  ▸ turn 1") and "› The checkout tests started failing" in texts[0]
        assert texts[1].startswith("  ▾ turn 2") and "\n" not in texts[1]
        kinds = [
            (r.message.kind, r.message.label[:20]) if r.message else ("turn", r.turn)
            for r in picker.model.rows
        ]
        assert kinds == [
            ("turn", 0),
            ("turn", 1),
            ("prompt", "Also round to cents "),
            ("tool call", "Read: src/email/invo"),
            ("reply", "The email formats am"),
        ], kinds
        points = picker.query_one(PointList)
        assert points.highlighted == 2 and picker.model.rows[2].message is not None
        assert (
            picker.model.rows[2].message.entry_id == row.entry_id
            and picker.model.marked is picker.model.rows[2].message
        )
        assert texts[2].startswith("▶ ") and "your message" in texts[2]
        hint = shown(picker.query_one("#fork-hint", Static))
        assert "ends on this prompt" in hint and "b forks just before it" in hint
        await pilot.press("escape")
        assert not isinstance(app.screen, ForkPicker)


async def test_resume_asks_to_restore_the_transcript_before_the_command_is_offered(
    fork_db: Path, tmp_path: Path
) -> None:
    """The demo's transcripts are not where Claude Code looks: resume asks first, and the command is
    copied (and can be run) only once the transcript is back there."""
    app = make_app(fork_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        picker = await open_picker_at(pilot, 11)
        await pilot.press("r")
        await settle(pilot)
        plan = picker.model.pending
        assert plan is not None and plan.restore is not None and picker.model.asking == "restore"
        question = shown(picker.query_one("#fork-confirm-text", Static)).replace("\n", " ")
        assert "The transcript is not where claude looks for it" in question and "Restore it to" in question
        assert picker.query_one("#fork-confirm").display and not app.clipboard and picker.model.plan is None
        expected = list(plan.restore.files.values())
        await pilot.press("escape")  # no: the command is shown, said not to work, not copied, not runnable
        await pilot.pause()
        assert picker.model.plan is plan and not app.clipboard
        assert "finds nothing until the transcript is restored" in shown(
            picker.query_one("#fork-command", Static)
        )
        assert picker.check_action("run", ()) is None and picker.query_one("#fork-run").disabled
        await pilot.press("y")  # yes after all
        await settle(pilot)
        assert plan.restore is None and picker.model.plan is plan
        main = next(p for p in expected if p.endswith(f"/{picker.model.session_id}.jsonl"))
        assert main.startswith(str(tmp_path / "no-claude" / "projects") + "/")
        assert (
            all(Path(p).stat().st_size > 0 for p in expected) and len(expected) == 5
        )  # its subagents' files too
        assert app.clipboard == plan.command and plan.command.startswith(
            "cd /home/dev/src/acme-shop && claude --resume"
        )
        # no system clipboard (autouse fixture): the status says where the command went, and no toast
        # says it again over the command
        assert "sent to the terminal's clipboard (OSC 52)" in shown(picker.query_one("#fork-status", Static))
        assert not any("clipboard" in n.message for n in app._notifications)
        assert "Restored 5 files to" in shown(picker.query_one("#fork-notes", Static))
        await pilot.press("e")  # fork at the end: the transcript is in place now, so no question
        await settle(pilot)
        assert (
            picker.model.pending is None
            and picker.model.plan is not None
            and picker.model.plan.command.endswith("--fork-session")
        )
        assert app.clipboard == picker.model.plan.command
        await pilot.press("x")  # its cd would fail: the demo's folder is on no machine
        await settle(pilot)
        status = " ".join(shown(picker.query_one("#fork-status", Static)).split())
        assert "The session's folder /home/dev/src/acme-shop is not on this machine" in status, status
        assert "Not run" not in status and "recreate the folder, or copy the command (c)" in status


async def test_x_hands_the_terminal_over_where_the_session_s_folder_is(tmp_path: Path) -> None:
    """`x` runs the command when its folder is here (no terminal to hand over under Pilot: said,
    and the command copied)."""
    from tests.builders.claude import Transcript

    work = tmp_path / "work"
    work.mkdir()
    sid = "abcdef00-0000-4000-8000-0000000f01de"
    t = Transcript(tmp_path / "projects" / "-work" / f"{sid}.jsonl", sid, cwd=str(work))
    t.user("Rename the config loader")
    t.assistant("Renamed.")
    t.write()
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(sid)
        await pilot.pause()
        await pilot.press("3", "f")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ForkPicker)
        await pilot.press("r", "y")  # resume; yes, restore the transcript where Claude Code looks
        await settle(pilot)
        assert picker.model.plan is not None and picker.model.plan.command.startswith(f"cd {work} && claude")
        await pilot.press("x")
        await settle(pilot)
        status = shown(picker.query_one("#fork-status", Static))
        assert "Not run: this terminal cannot be handed over from here" in status and "copied" in status


async def test_fork_rows_keep_their_time_on_their_line_after_the_restore_question(demo_db: Path) -> None:
    """Esc on the restore question gives the dialog a scrollbar; with the list's own one the rows have
    two cells fewer than when the picker opened. Drawn for the terminal's width, they wrapped their
    time (or model, or the end of a prompt) onto a line of its own; drawn for the list's, they fit."""
    from threadloom.tui.render import when

    app = make_app(demo_db)
    async with run_test(app, size=(120, 35)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, LONG))
        await pilot.pause()
        app.query_one(MessageView).go_to_seq(5)
        await pilot.press("f")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ForkPicker)
        points = picker.query_one(PointList)
        await pilot.press("r")
        await settle(pilot)
        assert picker.model.asking == "restore"
        await pilot.press("escape")  # no: the command is shown under the list, and the dialog scrolls
        await settle(pilot)
        assert points.show_vertical_scrollbar and picker.query_one("#fork-box").show_vertical_scrollbar
        lines = [points.render_line(y).text for y in range(points.scrollable_content_region.height)]
        assert not [line for line in lines if len(line.split()) == 1], lines  # no word left on its own line
        checked = 0
        for row in picker.model.rows:
            message = row.message
            if message is None:
                continue
            gist = message.label.removeprefix(message.tool_name or "").removeprefix(":").strip()
            start = (f"{message.tool_name}  {gist}" if message.tool_name else message.label)[:30]
            holding = [line for line in lines if start in line]
            if holding:
                assert holding[0].rstrip().endswith(when(message.timestamp)[-8:]), (holding[0], lines)
                checked += 1
        assert checked >= 5, lines


async def test_every_message_is_a_fork_point_and_one_api_message_forks_whole(fork_db: Path) -> None:
    """`f` on the failed Bash call: the call is chosen, bracketed with the thinking of its API
    message; Fork here on the thinking writes both blocks and the call's result, nothing after."""
    app = make_app(fork_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        await cursor_to_tool(pilot, "Bash")
        await pilot.press("f")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ForkPicker)
        rows = picker.model.rows
        chosen = picker.current_row()
        assert chosen is not None and chosen.message is not None and chosen.message is picker.model.marked
        assert (chosen.message.kind, chosen.message.tool_name, chosen.message.tool_status) == (
            "tool call",
            "Bash",
            "failed",
        )
        thinking = rows[rows.index(chosen) - 1]
        assert thinking.message is not None and thinking.message.kind == "thinking"
        assert (thinking.bracket, chosen.bracket, thinking.blocks) == ("┌", "└", 2)
        texts = option_texts(picker)
        assert "┌ ✻ The failure is probably floating point" in texts[rows.index(thinking)]
        assert (
            "└ Bash  npm test -- checkout" in texts[rows.index(chosen)] and "✗" in texts[rows.index(chosen)]
        )
        assert "2 blocks of its API message (┌…└) fork as one" in shown(
            picker.query_one("#fork-hint", Static)
        )
        assert not picker.query_one("#fork-before").display or picker.query_one("#fork-before").disabled
        await pilot.press("k")  # the thinking block: the same API message
        await pilot.press("f")
        await settle(pilot)
        plan = picker.model.pending
        assert plan is not None and plan.path is not None and plan.tool_calls == 1
        confirm = " ".join(shown(picker.query_one("#fork-confirm-text", Static)).split())
        assert "up to the chosen thinking of turn 1 (with its whole API message)" in confirm
        assert (
            "2 files edited after this point stay as they are (u writes a patch that takes them back)"
            in confirm
        )
        await pilot.press("y")
        await settle(pilot)
        records = [json.loads(line) for line in Path(plan.path).read_text().splitlines()]
        conversation = [r for r in records if r.get("type") in ("user", "assistant")]
        blocks = [b for r in conversation for b in r["message"]["content"] if isinstance(b, dict)]
        assert [b["type"] for b in blocks if b["type"] != "text"] == ["thinking", "tool_use", "tool_result"]
        assert conversation[-1]["type"] == "user" and blocks[-1]["type"] == "tool_result"
        assert "Task" not in Path(plan.path).read_text()  # the next API message stays out


async def test_parallel_calls_are_bracketed_with_their_message_and_fork_with_it(tmp_path: Path) -> None:
    """Three parallel calls of one API message (a record per block, results in the order the calls
    ended): bracketed with its thinking, and Fork here on the thinking writes all three calls with
    their results, and nothing of the next message; on a text, its message's call comes with it."""
    from tests.builders.fork_points import SID, parallel_session

    work = tmp_path / "work"
    work.mkdir()
    parallel_session(tmp_path / "backup", str(work))
    app = make_app(ingested_db(tmp_path, tmp_path / "backup"))
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(SID)
        await pilot.pause()
        app.query_one(MessageView).go_to_seq(1)  # the thinking
        await pilot.press("f")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ForkPicker)
        shape = [
            (r.bracket, r.message.kind, r.message.label[:18])
            for r in picker.model.rows
            if r.message is not None
        ]
        assert shape[:5] == [
            ("", "prompt", "research three thi"),
            ("┌", "thinking", "three agents at on"),
            ("├", "tool call", "Agent: topic 1"),
            ("├", "tool call", "Agent: topic 2"),
            ("└", "tool call", "Agent: topic 3"),
        ], shape
        text = next(
            i for i, r in enumerate(picker.model.rows) if r.message and r.message.label == "Checking the log."
        )
        assert (picker.model.rows[text].bracket, picker.model.rows[text + 1].bracket) == ("┌", "└")
        assert picker.current_row() is picker.model.rows[2] and picker.model.rows[2].blocks == 4
        assert "The 4 blocks of its API message (┌…└) fork as one" in shown(
            picker.query_one("#fork-hint", Static)
        )
        await pilot.press("f")
        await settle(pilot)
        plan = picker.model.pending
        assert plan is not None and plan.tool_calls == 3
        await pilot.press("y")
        await settle(pilot)
        written = Path(plan.path or "").read_text()
        assert (
            all(f'"tool_use_id":"t{n}"' in written for n in (1, 2, 3)) and "All three are done" not in written
        )
        picker.query_one(PointList).highlighted = text  # the text of a message that also calls Bash
        await pilot.press("f")
        await settle(pilot)
        plan = picker.model.pending
        assert plan is not None and plan.tool_calls == 4
        await pilot.press("y")
        await settle(pilot)
        written = Path(plan.path or "").read_text()
        assert "3 commits" in written and "Here is the log" not in written


async def test_the_picker_says_what_a_fork_does_not_undo_and_writes_the_patch(
    fork_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under the list, the files edited after the point under the cursor; `u` writes the patch that
    takes them back (proposed beside where threadloom was started, never over a file)."""
    from threadloom.core.actions.undo import plan_undo
    from threadloom.core.store import db

    monkeypatch.chdir(tmp_path)
    app = make_app(fork_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        await cursor_to_tool(pilot, "Bash")
        await pilot.press("f")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ForkPicker) and picker.model.marked is not None
        said = shown(picker.query_one("#fork-undo", Static)).replace("\n", " ")
        assert "Not undone by a fork here: 2 files edited after this point stay as they are" in said
        assert "src/checkout/tax.ts (Edit)" in said and "zero-rated.test.ts (Write, new)" in said
        assert "u writes a patch that takes them back" in said
        await pilot.press("u")
        await pilot.pause()
        box = picker.query_one("#fork-prompt-input", Input)
        proposed = (
            tmp_path
            / f"threadloom-undo-{picker.model.session_id[:8]}-at-{picker.model.marked.entry_id}.patch"
        )
        assert box.display and box.value == str(proposed)
        await pilot.press("enter")
        await pilot.pause()
        conn = db.connect(fork_db, readonly=True)
        expected = plan_undo(conn, picker.model.session_id, picker.model.marked.entry_id).patch
        conn.close()
        assert proposed.read_text() == expected and "+++ b/src/checkout/tax.ts" in expected
        assert proposed.stat().st_mode & 0o777 == 0o600
        status = shown(picker.query_one("#fork-status", Static)).replace("\n", " ")
        assert f"Wrote the undo patch to {proposed}" in status and "covering src/checkout/tax.ts" in status
        assert f"cd /home/dev/src/acme-shop && git apply --check {proposed} && git apply {proposed}" in status
        proposed.write_text("mine")
        await pilot.press("u", "enter")  # the same path again: never overwritten
        await pilot.pause()
        assert proposed.read_text() == "mine"
        assert "already exists; the undo patch never overwrites a file" in shown(
            picker.query_one("#fork-status", Static)
        )
        await pilot.press("G")  # the last message of the branch: nothing is edited after it
        await settle(pilot)
        assert (
            shown(picker.query_one("#fork-undo", Static)).strip()
            == "No file edits recorded after this point."
        )
        assert picker.check_action("undo_patch", ()) is True
        await pilot.press("u")
        await pilot.pause()
        assert not picker.query_one("#fork-prompt-input").display
        assert "No undo patch: no file was edited after this point." in shown(
            picker.query_one("#fork-status", Static)
        )


async def test_turns_open_and_close_and_keep_the_cursor(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        picker = await open_picker_at(pilot, 11)
        assert len(picker.model.rows) == 5
        await pilot.press("g", "right")  # turn 1 opens: its messages are read in a worker
        await settle(pilot)
        turn1 = [r for r in picker.model.rows if r.turn == 0]
        assert [r.message.kind for r in turn1[1:]] == [
            "prompt",
            "thinking",
            "tool call",
            "tool call",
            "tool call",
            "tool call",
            "reply",
        ]
        assert picker.current_row() is turn1[0] and option_texts(picker)[0].startswith("  ▾ turn 1")
        assert "Fork here keeps turn 1 whole" in shown(picker.query_one("#fork-hint", Static))
        await pilot.press("down", "down", "left")  # closing from a message goes back to its turn
        await pilot.pause()
        assert picker.current_row() is picker.model.rows[0] and len(picker.model.rows) == 5
        await pilot.press("space")
        await pilot.pause()
        assert len(picker.model.rows) == 12
        await pilot.press("space")
        await pilot.pause()
        assert len(picker.model.rows) == 5
        await pilot.press("f1")  # the picker's own keys, with their ids
        await pilot.pause()
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen) and help_screen.pane == "Fork picker · the list"
        assert {"fork.expand", "fork.collapse", "fork.toggle", "fork.select"} <= {
            r[2] for r in help_screen.pane_keys
        }
        everywhere = {r[2] for r in help_screen.global_keys}
        assert {
            "fork.here",
            "fork.prompt",
            "fork.resume",
            "fork.run",
            "fork.copy",
            "fork.close",
        } <= everywhere
        assert (
            not {"fork.before", "fork.yes"} & everywhere
        )  # what applies now: not on a turn, no question asked
        assert help_screen.everywhere_title == "Anywhere in the picker"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is picker


async def test_fork_before_a_prompt_asks_for_the_prompt_to_send_instead(fork_db: Path) -> None:
    copied: list[str] = []
    app = make_app(fork_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        picker = await open_picker_at(
            pilot, 11
        )  # the prompt "Also round to cents in the invoice summary email."
        import threadloom.core.base.clipboard

        threadloom.core.base.clipboard.copy_with = copied.append
        await pilot.press("b")
        await pilot.pause()
        box = picker.query_one("#fork-prompt-input", Input)
        assert box.display and box.has_focus and "instead" in str(box.placeholder)
        # the box starts with the prompt to edit (it was empty: edit and resend meant retyping it)
        assert box.value == "Also round to cents in the invoice summary email."
        assert box.cursor_position == len(box.value)
        box.value = ""
        await pilot.press(*"Round the PDF too", "enter")
        await settle(pilot)
        plan = picker.model.pending
        assert plan is not None and plan.path is not None and plan.command.endswith("'Round the PDF too'")
        confirm = shown(picker.query_one("#fork-confirm-text", Static))
        assert "just before the prompt of turn 2" in confirm
        await pilot.press("y")
        await settle(pilot)
        text = Path(plan.path).read_text()
        assert "Also round to cents" not in text and "All 24 checkout tests pass" in text
        assert copied == [plan.command] and picker.model.plan is plan
        assert "ends just before the chosen prompt, and yours is sent instead" in shown(
            picker.query_one("#fork-notes", Static)
        )
        await pilot.press("j")  # not a prompt: no fork before
        await pilot.pause()
        assert picker.query_one("#fork-before").disabled
        assert not picker.check_action("fork_before", ())


async def test_the_fork_picker_at_80_by_24_shows_the_command_the_edits_and_what_a_fork_keeps(
    tmp_path: Path,
) -> None:
    """On an 80×24 terminal the picker showed the turn list alone: what Fork here keeps, the files
    edited after the point and the command's box were below it, seen only once f had been pressed."""
    app = make_app(build_demo_db(tmp_path / "small", long_turns=30))
    async with run_test(app, size=(80, 24)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, LONG))
        await pilot.pause()
        view = app.query_one(MessageView)
        view.focus()
        view.go_to_seq(20)
        await pilot.press("f")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ForkPicker) and len(picker.model.rows) > 20
        box = picker.query_one("#fork-box")
        seen = box.content_region
        for part in ("#fork-points", "#fork-hint", "#fork-undo", "#fork-actions", "#fork-command"):
            region = picker.query_one(part).region
            assert region.height and seen.contains_region(region), (part, region, seen)
        assert box.scroll_y == 0


async def test_edit_and_resend_starts_from_the_prompt_line_breaks_and_all(tmp_path: Path) -> None:
    """`b` opened an empty box: the prompt to edit had to be typed again from memory. It starts with
    the prompt as it was sent; its line breaks show as ⏎ on the box's one line and are sent as such."""
    from tests.builders.claude import Transcript

    sid = "abcdef00-0000-4000-8000-00000000b0b0"
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{sid}.jsonl", sid)
    t.user("Fix the parser")
    t.assistant("Fixed.")
    t.user("Now add tests:\n  - empty input\n  - unicode")
    t.assistant("Added.")
    t.write()
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(140, 40)) as pilot:
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == sid)
        view.focus()
        view.go_to_seq(2)
        await pilot.press("f")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ForkPicker)
        await pilot.press("b")
        await pilot.pause()
        box = picker.query_one("#fork-prompt-input", Input)
        assert box.value == "Now add tests: ⏎   - empty input ⏎   - unicode"
        await pilot.press(*"!!")  # typed keys go after the prompt (none of it is selected to be replaced)
        box.insert_text_at_cursor(" ⏎   - a very long line")  # pasted: the ⏎ is no key to press
        await pilot.press("enter")
        await settle(pilot)
        plan = picker.model.pending
        assert plan is not None
        sent = [w for w in shlex.split(plan.command.split("&& ", 1)[1]) if w.startswith("Now add")]
        assert sent == ["Now add tests:\n  - empty input\n  - unicode!!\n  - a very long line"]


async def test_fork_here_confirms_writes_copies_and_shows_in_tree(
    fork_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from threadloom.tui.events import ForkWritten
    from threadloom.tui.workers import ForkIngested

    copied: list[str] = []
    monkeypatch.setattr("threadloom.core.base.clipboard.copy_with", copied.append)
    app = make_app(fork_db)
    seen = Seen(ForkWritten, ForkIngested)
    async with run_test(app, size=(140, 40), message_hook=seen) as pilot:
        await pilot.pause()
        picker = await open_picker_at(pilot, 11)
        await pilot.press("f")  # Fork here: asks first, writes nothing yet
        await settle(pilot)
        plan = picker.model.pending
        assert plan is not None and plan.path is not None and plan.new_session_id is not None
        assert picker.query_one("#fork-confirm").display
        confirm = shown(picker.query_one("#fork-confirm-text", Static))
        assert plan.path in confirm.replace("\n", "") and "0600" in confirm and plan.command in confirm
        assert not Path(plan.path).exists() and copied == []
        assert "copied once the file is written" in confirm
        assert plan.title is not None and plan.title.endswith(" (fork)")
        from threadloom.core.base.text import one_line

        said = " ".join(confirm.split())
        assert (
            f"titled “{one_line(plan.title.removesuffix(' (fork)'), 53)} (fork)”" in said
            and "“… (fork)”" not in said
        )  # the title it gets
        assert "Working out" not in shown(picker.query_one("#fork-status", Static))
        await pilot.press("enter")  # "Write the fork" has the focus
        await settle(pilot)
        path = Path(plan.path)
        assert path.exists() and (path.stat().st_mode & 0o777) == 0o600
        assert copied == [plan.command] and plan.command.endswith(f"claude --resume {plan.new_session_id}")
        assert picker.model.written == path and picker.model.plan is plan
        assert plan.command in shown(picker.query_one("#fork-command", Static))
        assert "fix/checkout-tax" in shown(picker.query_one("#fork-notes", Static))
        assert "system clipboard" in shown(picker.query_one("#fork-status", Static))
        assert not any("clipboard" in n.message for n in app._notifications)  # said once, not over it
        # the picker says what it wrote; the app reads it back in a worker, which says it did
        assert [m.path for m in seen.of(ForkWritten)] == [path]
        await until(pilot, lambda: seen.of(ForkIngested))
        (read,) = seen.of(ForkIngested)
        assert read.error is None and read.report is not None
        assert plan.new_session_id in read.report.changed_sessions
        # said in the picker's status, under "Wrote …", not in a toast drawn over that status
        await until(pilot, lambda: "in the session tree" in shown(picker.query_one("#fork-status", Static)))
        assert not any(n.title == "Fork" for n in app._notifications)
        fork = browse.get_node(app.conn, plan.new_session_id)
        assert fork is not None and fork.parent_session_id == picker.model.session_id and fork.kind == "fork"
        await pilot.press("escape")
        await pilot.pause()
        tree = app.query_one(SessionTree)
        assert plan.new_session_id in {s.id for s in tree.sessions}


async def test_fork_errors_stay_in_the_dialog(fork_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(fork_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        picker = await open_picker_at(pilot, 11)
        await pilot.press("f")
        await settle(pilot)
        plan = picker.model.pending
        assert plan is not None and plan.path is not None
        Path(plan.path).parent.mkdir(parents=True, exist_ok=True)
        Path(plan.path).write_text("someone else's file")  # appears between planning and writing
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ForkPicker)
        assert "already exists" in shown(picker.query_one("#fork-status", Static))
        assert Path(plan.path).read_text() == "someone else's file"
        await pilot.press("escape")
        await pilot.pause()
        # a subagent cannot be resumed on its own: said in the dialog
        explore = next(t for t in browse.jump_targets(app.conn) if t.is_subagent)
        app.open_fork_picker(explore.id, None)
        await settle(pilot)
        assert isinstance(app.screen, ForkPicker)
        await pilot.press("r")
        await settle(pilot)
        assert "subagent cannot be resumed" in shown(app.screen.query_one("#fork-status", Static))


async def test_fork_with_a_new_prompt_from_a_search_hit(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copied: list[str] = []
    monkeypatch.setattr("threadloom.core.base.clipboard.copy_with", copied.append)
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"summary email")
        await wait_for_search(pilot)
        search = app.screen
        assert isinstance(search, SearchScreen)
        hit = search.current_hit()
        assert hit is not None
        await pilot.press("ctrl+f")  # f while typing would be a letter
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ForkPicker) and picker.model.entry_id == hit.entry_id
        point = picker.current_point()
        assert point is not None and point.prompt.startswith("Also round to cents")
        await pilot.press("n", *"Round the PDF too")
        await pilot.press("enter")
        await settle(pilot)
        assert (
            picker.model.pending is not None and picker.model.asking == "restore" and copied == []
        )  # source not where claude looks
        await pilot.press("y")
        await settle(pilot)
        assert picker.model.plan is not None and picker.model.plan.action == "fork-prompt"
        assert (
            "--fork-session" in picker.model.plan.command
            and "'Round the PDF too'" in picker.model.plan.command
        )
        assert copied == [picker.model.plan.command]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is search  # the picker closes onto the search it came from


async def test_fork_picker_for_codex_says_what_it_can(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from threadloom.core.ingest.pipeline import run_ingest
    from threadloom.core.store import db

    from tests.support import full_session

    copied: list[str] = []
    monkeypatch.setattr("threadloom.core.base.clipboard.copy_with", copied.append)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    full_session(tmp_path / "codex").write()
    conn = db.connect(tmp_path / "codex.db")
    run_ingest(conn, [tmp_path / "codex"], include_defaults=False)
    sid = conn.execute("SELECT id FROM agent_sessions WHERE source = 'codex'").fetchone()[0]
    conn.close()
    app = make_app(tmp_path / "codex.db")
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(sid)
        await pilot.pause()
        await pilot.press("f")
        await settle(pilot)
        picker = app.screen
        assert (
            isinstance(picker, ForkPicker) and picker.model.agent == "codex" and len(picker.model.points) == 2
        )
        row = picker.current_row()  # the message under the cursor, said to snap to its turn's end
        assert (
            row is not None
            and row.message is not None
            and row.message is picker.model.marked
            and not row.message.exact
        )
        assert "Codex forks at the end of a turn: Fork here keeps turn 1 whole" in shown(
            picker.query_one("#fork-hint", Static)
        )
        await pilot.press(
            "f"
        )  # a legacy rollout is cut at the turn into a new thread: asked first, then written
        await settle(pilot)
        plan = picker.model.pending
        assert plan is not None and plan.path is not None and copied == []
        assert "up to the end of turn 1" in shown(picker.query_one("#fork-confirm-text", Static))
        await pilot.press("enter")
        await settle(pilot)
        assert picker.model.written == Path(plan.path) and Path(plan.path).is_file()
        assert picker.model.plan is plan and plan.command.startswith(
            f"codex resume {plan.new_session_id} -C "
        )
        assert copied == [plan.command] and "whole chosen turn" in shown(
            picker.query_one("#fork-notes", Static)
        )
        await pilot.press("n")
        await settle(pilot)
        assert "Only Claude Code" in shown(picker.query_one("#fork-status", Static))
        await pilot.press("r")
        await settle(pilot)
        assert picker.model.plan is not None and picker.model.plan.command.startswith(
            f"codex resume {sid} -C "
        )


def test_a_collapsed_tool_call_stays_on_one_line_its_path_giving_way() -> None:
    from threadloom.core.read.query import ToolCall
    from threadloom.tui.render import call_line

    path = "/Users/dev/workspace/claude-code-log/claude_code_log/renderer.py"
    call = ToolCall("t1", "Read", json.dumps({"file_path": path}), '"ok"', "completed", None, 0, 8400)
    wide = call_line(call, False, 200).plain
    assert path in wide and wide.endswith("✓ · 8.4 s")
    narrow = call_line(call, False, 60)
    assert narrow.cell_len <= 60 and narrow.plain.endswith("✓ · 8.4 s") and "…" in narrow.plain
    assert narrow.plain.startswith("▸ Read  /Users/dev/")
    tiny = call_line(call, False, 20).plain  # too narrow to cut: it wraps whole
    assert path in tiny


def test_codex_patch_calls_render_as_diffs() -> None:
    from threadloom.core.read.browse import ToolCall
    from threadloom.tui import render as tui_render

    patch = (
        "*** Begin Patch\n*** Update File: cart.py\n@@ def total\n-total = None\n+total = 0\n*** End Patch"
    )
    calls = [
        ToolCall(
            "c1", "apply_patch", json.dumps({"input": patch}), '"Success."', "completed", None, None, None
        ),
        ToolCall(
            "c2",
            "shell",
            json.dumps({"command": ["apply_patch", patch]}),
            '"Done!"',
            "completed",
            None,
            None,
            None,
        ),
    ]
    for call in calls:
        call.agent = "codex"  # the session's agent, whose adapter reads its patches
        console = Console(width=80, record=True, color_system="truecolor")
        console.print(tui_render.call_body(call, None))
        text = console.export_text(clear=False)
        assert "Update File: cart.py" in text and "-total = None" in text and "+total = 0" in text
        assert "Begin Patch" not in text and '"input"' not in text
        styles = console.export_html(inline_styles=True)
        assert "#87d787" in styles and "#ff8787" in styles  # added green, removed red


def test_a_wrapped_diff_row_continues_beside_its_marker_column() -> None:
    from threadloom.core.read.diffs import DiffLine
    from threadloom.tui.render import diff_lines

    rows = [
        DiffLine(
            "removed", "-  const tax = subtotal.amount * rule.rate; // rounded later, in the invoice email"
        ),
        DiffLine("added", "+  const tax = round(subtotal.amount * rule.rate)"),
    ]
    console = Console(width=40, color_system="truecolor")
    lines = console.render_lines(diff_lines(rows), console.options, pad=False)
    texts = ["".join(seg.text for seg in line) for line in lines]
    assert texts[0].startswith("-  const tax") and all(len(t) == 40 for t in texts)
    removed = [
        t for t, line in zip(texts, lines, strict=True) if line[0].style.bgcolor.triplet == (58, 23, 23)
    ]
    assert len(removed) == 3 and all(t[0] == " " and t[1] != " " for t in removed[1:])  # hang under the text
    assert all(
        seg.style.bgcolor is not None for line in lines for seg in line
    )  # the row colour reaches the edge
    assert texts[3].startswith("+  const tax = round(")


async def test_aider_search_replace_blocks_are_shown_as_diffs(tmp_path: Path) -> None:
    from threadloom.tui.render import EditBlock, edit_blocks

    from tests.builders.aider import AIDER_EDITS

    folder = tmp_path / "parser-project"
    folder.mkdir()
    (folder / ".aider.chat.history.md").write_text(AIDER_EDITS)
    app = make_app(ingested_db(tmp_path, folder))
    async with run_test(app, size=(120, 40)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id is not None)
        view = app.query_one(MessageView)  # the session opens first (the file's empty preamble is not listed)
        assert view.session_id is not None
        reply = next(
            pos
            for pos in range(len(view.seqs))
            if "stops one short" in "\n".join(s.text for s in view.ensure(pos).strips)
        )
        view.state.toggled.add(f"text:{view.row(reply).entry_id}")  # the whole text, not its preview
        view._rerender(reply)
        text = "\n".join(s.text.rstrip() for s in view.ensure(reply).strips)
        assert "<<<<<<< SEARCH" not in text and "=======" not in text and "```" not in text
        assert "-    for i in range(len(out) - 1):" in text and "+    for i in range(len(out)):" in text
        assert "     out = text.split()" in text  # context, unmarked
        assert "README.md" in text and "+# Tokenizer" in text  # an empty SEARCH: a new file
        assert text.index("stops one short") < text.index("parser.py") < text.index("Both edits are small.")
        assert "◆ assistant  anthropic/" in text  # no time written for a reply: no gap where it would be
    # a block the reply never finished (a stream cut short) stays as it was written
    assert edit_blocks("try this:\n<<<<<<< SEARCH\nold line") == ["try this:\n<<<<<<< SEARCH\nold line"]
    assert edit_blocks("a.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE") == [
        EditBlock("a.py", ["x"], ["y"])
    ]


async def test_opened_while_another_threadloom_ingests_it_waits_browsing_what_is_stored(
    tmp_path: Path,
) -> None:
    """Another writer holds the database (a CLI ingest): the app says so, browses read-only, and
    catches up once the other is done; no error, no second writer."""
    from threadloom.core.store.writer_lock import writer_lock

    root = small_archive(tmp_path)
    path = ingested_db(tmp_path, root)
    holding, release, released = threading.Event(), threading.Event(), threading.Event()

    def other_writer() -> None:
        with writer_lock(path):
            holding.set()
            release.wait(10)
        released.set()

    threading.Thread(target=other_writer, daemon=True).start()
    assert holding.wait(10)
    app = make_app(path, ingest=True, sources=[root])
    async with run_test(app, size=(140, 40)) as pilot:
        label = app.browser.query_one("#ingest-label", Static)
        await until(pilot, lambda: "waiting" in shown(label))
        assert "is updating" in shown(label) and "Esc stops waiting" in shown(label)
        assert not isinstance(app.screen, ErrorScreen)
        assert app.query_one(ProjectList).border_title == "Projects (4)"  # what is stored, read meanwhile
        release.set()
        assert await event_set(pilot, released)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.browser.query_one("#ingest-bar").display and not isinstance(app.screen, ErrorScreen)
        assert (
            app.last_report is not None and app.last_report.files_skipped > 0 and not app.last_report.errors
        )


async def test_a_read_only_database_is_browsed_as_it_is(tmp_path: Path) -> None:
    import os
    import stat

    root = small_archive(tmp_path)
    path = ingested_db(tmp_path, root)
    os.chmod(path, 0o444)
    app = make_app(path, ingest=True, sources=[root])
    async with run_test(app, size=(140, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one(ProjectList).border_title == "Projects (4)"
        assert not isinstance(app.screen, ErrorScreen) and not app.archive.ingesting
        assert any(n.title == "Read-only archive" and "chmod u+w" in n.message for n in app._notifications)
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


async def test_an_older_database_is_upgraded_by_the_worker_with_the_screen_up(tmp_path: Path) -> None:
    """The rebuild of an older schema runs in the ingest worker, saying so, not before the first frame."""
    import sqlite3

    from threadloom.core.store import db

    root = small_archive(tmp_path)
    path = ingested_db(tmp_path, root)
    old = sqlite3.connect(path)
    old.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION - 1}")
    old.close()
    app = make_app(path, ingest=True, sources=[root])
    async with run_test(app, size=(140, 40)) as pilot:
        assert app.conn is None  # not opened (and rebuilt) on the interface's thread
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one(ProjectList).border_title == "Projects (4)"
        assert not isinstance(app.screen, ErrorScreen)
    assert db.stored_version(path) == db.SCHEMA_VERSION


HOSTILE = "\x1b]0;PWNED\x07\x1b[2J\x9b2J\x00\x1bc"


def terminal_output(app: ThreadloomApp) -> str:
    """What the app writes to the terminal for the whole screen, less its own colours and moves."""
    update = app.screen._compositor.render_full_update()
    written = update.render_segments(app.console)
    return re.sub(r"\x1b\[[0-9;]*[mH]", "", written)


async def test_titles_projects_and_models_from_a_log_never_reach_the_terminal_as_controls(
    tmp_path: Path,
) -> None:
    """Session titles, project paths, model names and tool inputs went to the terminal as they
    were: a log could retitle the window, clear or reset the terminal (the messages' text alone was
    cleaned)."""
    from tests.builders.claude import Transcript, tool_use

    sid = "eeeeeeee-1111-4222-8333-00000000c0de"
    t = Transcript(tmp_path / "projects" / "-srv-evil" / f"{sid}.jsonl", sid, cwd=f"/srv/{HOSTILE}evil")
    t.user(f"{HOSTILE}title prompt")
    t.assistant(
        f"a reply {HOSTILE}",
        model=f"{HOSTILE}model",
        tools=[tool_use("te1", "Bash", command=f"{HOSTILE}ls", description=HOSTILE)],
    )
    t.tool_result("te1", f"out {HOSTILE}")
    t.write()
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(140, 40)) as pilot:
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == sid)
        view.focus()
        view.action_toggle_all()
        await pilot.pause()
        written = terminal_output(app)
        assert "PWNED" in written and "title prompt" in written  # the hostile text is there, as text
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", written), repr(written[:200])


async def test_bidi_controls_and_escape_sequences_from_a_log_are_drawn_as_text(tmp_path: Path) -> None:
    """A right-to-left override in a title reached the terminal as it was (and reordered the row),
    and a tool named "Bash\\x1b[2J" was drawn "Bash[2J", its ESC dropped and the rest left as if
    it were text: both are drawn as what they are."""
    from tests.builders.claude import Transcript, tool_use

    sid = "eeeeeeee-1111-4222-8333-00000000b1d1"
    t = Transcript(tmp_path / "projects" / "-srv-bidi" / f"{sid}.jsonl", sid, cwd="/srv/bidi\u2066app")
    t.user("Fix the \u202eevil\u202c parser")
    t.assistant(
        "Looking at \u202egnp.exe\u202c now.",
        model="claude-\u202eopus",
        tools=[tool_use("tb1", "Bash\x1b[2J", command="ls \u202eevil")],
    )
    t.tool_result("tb1", "out \x1b[2Jcleared \u2067x\u2069")
    t.write()
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(140, 40)) as pilot:
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == sid)
        view.focus()
        view.action_toggle_all()
        await pilot.pause()
        written = terminal_output(app)
        assert not re.search("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", written), repr(written[:300])
        assert "Fix the \\u202eevil\\u202c parser" in written  # the tree's row and the border
        assert "Bash␛[2J" in written and "ls \\u202eevil" in written
        assert "\\u202egnp.exe\\u202c" in written and "out ␛[2Jcleared \\u2067x\\u2069" in written
        projects = app.query_one(ProjectList)  # the projects pane gives way at this width: its row
        assert "bidi\\u2066app" in str(projects.get_option_at_index(0).prompt)


async def test_markdown_in_a_log_never_reaches_the_terminal_as_controls(tmp_path: Path) -> None:
    """Rendered Markdown is as safe as the text as written: controls in a heading, a code block, a
    link and a table are drawn as text, and a message holding escape sequences keeps only their
    colours, whichever way the text is shown."""
    from tests.builders.claude import Transcript

    sid = "eeeeeeee-1111-4222-8333-00000000add5"
    controls = "\x9b2J\x07\x00"  # no ESC: the Markdown is rendered
    t = Transcript(tmp_path / "projects" / "-srv-md" / f"{sid}.jsonl", sid)
    t.user(f"# Heading {controls}one\n\n[link {controls}](https://example.com/{controls})")
    t.assistant(f"## Code\n\n```python\nprint(1)  {controls}\n```\n\n| a {controls} |\n|---|\n| b |")
    t.assistant(
        f"# Title {HOSTILE}\n\n```python\nx = 1 {HOSTILE}\n```\n\n[link {HOSTILE}](https://e.com/{HOSTILE})"
    )
    t.write()
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(140, 40)) as pilot:
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == sid)
        view.focus()
        for _ in range(2):  # rendered, then as written
            await pilot.pause()
            written = terminal_output(app)
            assert "Title" in written and "x = 1" in written and "print(1)" in written and "one" in written
            assert "␛]0;PWNED␇" in written  # a window title's sequence is drawn as text
            assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", written), repr(written[:300])
            await pilot.press("m")
        screen = "\n".join(view.render_line(y).text for y in range(view.scrollable_content_region.height))
        assert "Heading \\u009b2J␇" in screen and "# Heading" not in screen  # rendered, controls drawn
        assert "▏ print(1)" in screen and "# Title" in screen  # with escape sequences: as written


async def test_a_message_of_megabytes_is_drawn_in_part_with_a_note(tmp_path: Path) -> None:
    """The view lays a message out whole before it paints: a 20 MB prompt froze the app for minutes.
    The first 100,000 characters are drawn, then how many more there are."""
    from tests.builders.claude import Transcript

    sid = "eeeeeeee-1111-4222-8333-00000000b16b"
    t = Transcript(tmp_path / "projects" / "-srv-big" / f"{sid}.jsonl", sid)
    t.user("a short prompt")
    body = ("all work and no play " * 3 + "\n") * 20_000  # 1.3 MB
    t.assistant(body)
    t.write()
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(140, 40)) as pilot:
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == sid)
        last = len(view.seqs) - 1
        assert "more lines · Enter shows all" in "\n".join(strip.text for strip in view.ensure(last).strips)
        view.focus()
        view.go_to_seq(last)
        await pilot.press("enter")  # shown whole: as whole as the view draws a message
        await pilot.pause()
        strips = view.ensure(last).strips
        text = "\n".join(strip.text for strip in strips)
        assert len(strips) < 2_500  # not the 20,000 lines of the whole message
        assert f"… {len(body) - 100_000:,} more characters (r shows the raw record)" in text


async def test_export_key_writes_the_open_session_as_one_html_page(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "exports"
    out.mkdir()
    monkeypatch.chdir(out)
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        await until(pilot, lambda: app.browser.open_session_id is not None)
        await pilot.press("E")
        await until(pilot, lambda: len(list(out.iterdir())) == 1)
        await pilot.press("E")  # a second export never replaces the first
        await until(pilot, lambda: len(list(out.iterdir())) == 2)
        first, second = sorted(out.iterdir(), key=lambda p: len(p.name))
        assert first.name.startswith("the-checkout-tests-started-failing") and first.suffix == ".html"
        assert second.name == first.name.replace(".html", "-2.html")
        page = first.read_text()
        assert page.startswith("<!doctype html>") and CHECKOUT in page and "<details" in page
        await until(pilot, lambda: any("Wrote " in str(n.message) for n in app._notifications))


async def test_the_viewer_says_a_session_was_rewritten(tmp_path: Path) -> None:
    from threadloom.core.store import db as ledger

    from tests.builders.versions import SID, later, session_file
    from tests.support import ingest

    path = session_file(tmp_path)
    database = ingested_db(tmp_path, tmp_path / "projects")
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:5]))
    later(path)
    conn = ledger.connect(database)
    ingest(conn, tmp_path / "projects")
    conn.close()
    app = make_app(database)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(SID)
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == SID)
        assert "5 messages · rewritten " in view.border_subtitle
        assert ": 3 records kept aside" in view.border_subtitle
        # v: as it read before the rewrite, read from the records the archive kept
        view.focus()
        await pilot.press("v")
        await until(pilot, lambda: view.count == 8)
        assert view.border_subtitle.startswith("as it read before ") and "8 messages · v: as it is now" in (
            view.border_subtitle
        )
        assert "answer 3" in (view.row(7).content or "")
        # its raw records are its own; forking is from the session as it is
        view.action_last()
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, RawJsonScreen))
        assert "answer 3" in shown(app.screen.query_one("#raw-json", Static))
        await pilot.press("escape")
        await pilot.press("f")
        await pilot.pause()
        assert not isinstance(app.screen, ForkPicker)
        # v again: the session as it is now, followed live again
        await pilot.press("v")
        await until(pilot, lambda: view.count == 5)
        assert "rewritten" in view.border_subtitle and app.browser.whole_session_open == SID


async def test_palettes_and_headers_say_the_year_of_another_years_session(demo_db: Path) -> None:
    """The jump and command palettes named a session of a past year "12 Jun 14:05:09"; the
    message headers and a narrow project row left its year out too."""
    from datetime import datetime

    from threadloom.tui.commands import RecentSessionsProvider
    from threadloom.tui.panes import ProjectList

    next_year = datetime(2026, 3, 1, 12, 0).timestamp()  # the demo's sessions are of June 2025
    app = ThreadloomApp(db_path=demo_db, ingest=False, now=lambda: next_year)
    async with run_test(app, size=(80, 24)) as pilot:
        await pilot.pause()
        provider = RecentSessionsProvider(app.screen)
        await provider.startup()
        helps = [hit.help or "" async for hit in provider.discover()]
        assert helps and all("2025" in h for h in helps), helps
        projects = app.query_one(ProjectList)
        first = str(projects.get_option_at_index(0).prompt).splitlines()[0]
        assert "2025" in first, first
        view = app.query_one(MessageView)  # the newest session, opened at start
        assert view.session_id is not None
        drawn = "\n".join(s.text for s in view.ensure(0).strips)
        assert " 2025 " in drawn, drawn[:300]


async def test_the_tui_opened_on_a_session_shows_it_in_its_project(demo_db: Path) -> None:
    """`threadloom open SESSION` (or `threadloom SESSION`): the app starts on that session, its
    project's sessions listed, the session revealed in the tree and read in the viewer."""
    from threadloom.core.read.query import get_session
    from threadloom.core.store import db as ledger

    conn = ledger.connect(demo_db, readonly=True)
    try:
        projects = browse.list_projects(conn)
        older = projects[-1]  # not the project a plain start shows
        target = browse.project_sessions(conn, older.path)[-1]  # nor its newest session
        assert get_session(conn, target.id) is not None and older.path != projects[0].path
    finally:
        conn.close()
    app = ThreadloomApp(db_path=demo_db, ingest=False, now=fixed_now, open_session=target.id)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.pause()
        view = app.query_one(MessageView)
        assert view.session_id == target.id and view.has_focus
        assert app.query_one(ProjectList).current.path == older.path
        tree = app.query_one(SessionTree)
        assert tree.cursor_node is not None and tree.cursor_node.data.session.id == target.id


async def test_a_subagent_calls_description_gives_way_to_no_hint(tmp_path: Path) -> None:
    """Three "Round 2: …" subagent calls were cut to "Round 2: ali…" to keep "↳ subagent
    general-purpose (Enter)" whole, and could not be told apart: the hint gives way first."""
    from tests.builders.claude import Transcript, tool_use

    sid = "aaaaaaaa-1111-4222-8333-00000000e958"
    folder = tmp_path / "projects" / "-home-dev-app"
    t = Transcript(folder / f"{sid}.jsonl", sid)
    t.user("Compare the three drafts")
    names = ("alice", "bob", "carol")
    for number, name in enumerate(names):
        description = f"Round 2: {name} comparison"
        call = tool_use(f"toolu_{name}", "Agent", description=description, prompt=f"Compare {name}'s draft")
        t.assistant(tools=[{**call, "input": {**call["input"], "subagent_type": "general-purpose"}}])
        agent = f"a{number}{'0' * 15}"
        t.tool_result(f"toolu_{name}", "done", tool_use_result={"status": "completed", "agentId": agent})
        sub = Transcript(
            folder / sid / "subagents" / f"agent-{agent}.jsonl", sid, isSidechain=True, agentId=agent
        )
        sub.user(f"Compare {name}'s draft", parent=False)
        sub.assistant("compared")
        sub.write()
    t.write()
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(140, 40)) as pilot:
        await until(pilot, lambda: app.query_one(SessionTree).sessions)
        app.browser.jump_to_session(sid)
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == sid)
        await pilot.pause()
        screen = [view.render_line(y).text for y in range(view.scrollable_content_region.height)]
        calls = [line for line in screen if "▸ Agent" in line]
        assert len(calls) == 3, screen
        for name, line in zip(names, calls, strict=True):
            assert f"Round 2: {name} comparison" in line and "↳" in line, line


async def test_the_raw_record_of_a_tool_input_nested_hundreds_deep(tmp_path: Path) -> None:
    """`r` on a call whose input was nested 300 levels deep crashed the app (the record is read,
    but cannot be pretty-printed that deep), and drawing the crash froze it for minutes: the
    record is shown as stored."""
    from tests.builders.claude import Transcript, tool_use

    sid = "dddddddd-1111-4222-8333-00000000deee"
    deep: dict = {}
    inner = deep
    for level in range(300):
        inner["k"] = inner = {"level": level}
    t = Transcript(tmp_path / "projects" / "-srv-deep" / f"{sid}.jsonl", sid, cwd="/srv/deep")
    t.user("send the nested payload")
    t.assistant(None, tools=[tool_use("td1", "mcp__api__post", body=deep)])
    t.tool_result("td1", "ok")
    t.write()
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(120, 36)) as pilot:
        await until(pilot, lambda: app.conn is not None)
        app.browser.jump_to_session(sid)
        await pilot.pause()
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == sid)
        view.focus()
        await cursor_to_tool(pilot, "mcp__api__post")
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, RawJsonScreen))
        assert app.is_running and app.screen.raw.count(b'"k"') == 300
        assert shown(app.screen.query_one("#raw-json", Static)).count('"k"') == 300
        await pilot.press("escape")
        assert not isinstance(app.screen, RawJsonScreen)


async def test_an_edit_whose_input_is_nested_hundreds_deep_does_not_stop_the_ingest(tmp_path: Path) -> None:
    """An Edit call with a field nested 300 levels deep failed the ingest at its last step (the
    sums of the files changed), at every start: "Reading agent logs failed: TypeError: Recursion
    limit reached" over empty panes. Now the session is read, the rest of the archive with it."""
    from tests.builders.claude import Transcript, tool_use

    sid = "dddddddd-1111-4222-8333-00000000dee9"
    nested: list = []
    inner = nested
    for _ in range(300):
        inner.append([])
        inner = inner[0]
    t = Transcript(tmp_path / "deep" / "projects" / "-srv-deep" / f"{sid}.jsonl", sid, cwd="/srv/deep")
    t.user("rename it everywhere")
    t.assistant(
        None,
        tools=[
            tool_use("te1", "Edit", file_path="/srv/deep/a.py", old_string="a", new_string="b", hint=nested)
        ],
    )
    t.tool_result("te1", "ok")
    t.write()
    root = small_archive(tmp_path)
    app = make_app(tmp_path / "fresh.db", ingest=True, sources=[root, tmp_path / "deep" / "projects"])
    async with run_test(app, size=(140, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not isinstance(app.screen, ErrorScreen), app.screen
        assert any(n.title == "Ingest done" for n in app._notifications), [
            n.title for n in app._notifications
        ]
        assert app.query_one(ProjectList).border_title == "Projects (5)"


async def test_a_follow_that_lands_while_the_app_quits_is_let_go(demo_db: Path) -> None:
    """The follow timer fired while the app was quitting, its screen's panes already taken down:
    `session_grew` asked for the message pane and the app stopped on NoMatches (the torture test
    saw it once, on its way out)."""
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        sid = await open_checkout(pilot, app)
        browser = app.browser
    assert not browser.query(MessageView)  # the app has quit: its panes are gone
    browser.session_grew(sid)  # as the timer's last call on the way out


@pytest.mark.parametrize("phase", ["FILES", "INDEXING"])
async def test_ingest_progress_that_lands_while_the_app_quits_is_let_go(demo_db: Path, phase: str) -> None:
    """An ingest's progress posted as the app quit, its screen's bar and panes already taken down:
    drawing it asked for the bar and the app stopped on NoMatches (the cleanup notice's test met
    it once, a first load running as the test left)."""
    from threadloom.core.ingest.pipeline import Phase, Progress

    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)):
        browser = app.browser
    assert not browser.query(ProjectList)  # the app has quit: its panes are gone
    progress = Progress(1, 3, 10, 30, "a.jsonl", 0.5, 1, 2, Phase[phase])
    browser.ingest_progressed(progress, load_reader=True)  # as the ingest's last word on the way out


async def test_the_app_reads_the_database_a_rebuild_put_in_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ingest --rebuild` moves the database aside as its backup and puts a new one at its path:
    the app went on reading the backup (a session ingested since never showed; a hide written to
    the new one was read back from the old). It reads the new file."""
    from threadloom.core.cli import main

    from tests.builders.claude import Transcript

    new_sid = "7e7e7e7e-1111-4222-8333-000000000777"

    db = build_demo_db(tmp_path, long_turns=3)
    monkeypatch.setattr(ThreadloomApp, "FOLLOW_SECONDS", 0.1)
    app = make_app(db)
    async with run_test(app, size=(140, 40)) as pilot:
        await until(pilot, lambda: app.conn is not None)
        before = app.conn
        t = Transcript(tmp_path / "later" / "-srv-later" / f"{new_sid}.jsonl", new_sid, cwd="/srv/later")
        t.user("a session ingested after the rebuild")
        t.write()
        assert main(["ingest", "--db", str(db), "--rebuild", "-q"]) == 0
        assert main(["ingest", "--db", str(db), "--source", str(tmp_path / "later"), "-q"]) == 0
        await until(pilot, lambda: app.conn is not before)
        app.browser.jump_to_session(new_sid)
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == new_sid)


async def test_a_rebuild_s_new_file_is_read_once_no_screen_holds_the_old_and_a_foreign_one_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new file a rebuild put in place is read once the screens that read through the app's
    connection (memory) are closed: swapped under one, the next row it showed read a closed
    connection. A file there that cannot be opened is said, and the one opened before read on
    (it was closed first: the next session opened read a closed connection)."""
    import os

    from threadloom.core.cli import main
    from threadloom.tui.memory import MemoryScreen

    db = build_demo_db(tmp_path, long_turns=3)
    monkeypatch.setattr(ThreadloomApp, "FOLLOW_SECONDS", 0.1)
    app = make_app(db)
    async with run_test(app, size=(140, 40)) as pilot:
        await until(pilot, lambda: app.conn is not None and app.archive.settled)
        before = app.conn
        app.browser.action_memory()
        await until(pilot, lambda: isinstance(app.screen, MemoryScreen))
        assert main(["ingest", "--db", str(db), "--rebuild", "-q"]) == 0
        await pilot.press("down", "down")
        await pilot.pause(0.3)  # three of the app's looks at its file
        assert app.conn is before and isinstance(app.screen, MemoryScreen)
        await pilot.press("escape")
        await until(pilot, lambda: app.conn is not before)
        now = app.conn
        (tmp_path / "note.db").write_bytes(b"this is not a database\n" * 300)
        os.replace(tmp_path / "note.db", db)
        await until(pilot, lambda: any("Another file took" in n.title for n in app._notifications))
        assert app.conn is now
        view = app.query_one(MessageView)
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        await until(pilot, lambda: view.session_id is not None and view.count > 0)
