"""Recall by meaning in the TUI: the search modes, turns picked for a new session's context, and the
viewer's similar turns (L), on the demo archive."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Input, Static
from threadloom.tui.context import ContextScreen
from threadloom.tui.messages import MessageView
from threadloom.tui.search import SearchScreen

from tests.support import run_printed
from tests.tui_support import CHECKOUT, make_app, run_test, session_id, until, wait_for_search


def shown(widget: Static) -> str:
    """The plain text a Static shows."""
    console = Console(width=400, file=io.StringIO(), color_system=None)
    with console.capture() as capture:
        console.print(widget.content)
    return capture.get()


DEMO_LONG_TURNS = 6


async def test_picked_turns_start_a_new_session_with_their_context(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_agents: Path, sandbox: Path
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    copied: list[str] = []
    monkeypatch.setattr(
        "threadloom.core.base.clipboard.copy", lambda text: copied.append(text) or "system clipboard"
    )
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"tax rounding")
        await wait_for_search(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen) and screen.hits
        assert "words + meaning" in shown(screen.query_one("#search-status", Static))
        await pilot.press("ctrl+t", "down", "ctrl+t")  # two turns picked
        assert len(screen.picked) == 2
        assert "2 turns picked" in shown(screen.query_one("#search-status", Static))
        picked_prompts = {h.snippet[:20] for h in screen.picked.values()}
        await pilot.press("ctrl+n")
        await until(pilot, lambda: isinstance(app.screen, ContextScreen) and app.screen.context is not None)
        dialog = app.screen
        assert isinstance(dialog, ContextScreen) and dialog.context is not None
        assert len(dialog.context.turns) == 2
        folder = tmp_path / "new $(touch pwned) 'place'"
        folder.mkdir()
        dialog.query_one("#context-folder", Input).value = str(folder)
        await pilot.pause()
        await pilot.press("ctrl+y")
        await pilot.pause()
        assert dialog.launch is not None and copied == [dialog.launch.command]
        written = dialog.launch.path
        assert written.parent == tmp_path / "data" / "threadloom" / "context"
        assert written.stat().st_mode & 0o777 == 0o600
        text = written.read_text()
        assert all(p in text for p in picked_prompts)
        assert "only you can read it" in shown(dialog.query_one("#context-status", Static))
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
    calls = run_printed(copied[0], fake_agents, sandbox)
    assert calls == [["claude", str(folder), written.read_text().rstrip("\n")]]
    assert not list(tmp_path.rglob("pwned"))


async def test_similar_turns_open_from_the_viewer(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        checkout = session_id(app, CHECKOUT)
        app.browser.jump_to_session(checkout)
        await pilot.pause()
        view = app.query_one(MessageView)
        view.focus()
        await until(pilot, lambda: view.session_id == checkout and view.count > 0)
        row = view.current_row()
        assert row is not None and row.content
        await pilot.press("L")
        await until(pilot, lambda: isinstance(app.screen, SearchScreen) and app.screen.result is not None)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        status = shown(screen.query_one("#search-status", Static))
        # the turn by its number and first words ("#0" alone said little)
        assert f"turns like #{row.seq} “{row.content.split()[0]}" in status
        assert screen.hits and all(h.why == "meaning" for h in screen.hits)
        assert checkout not in {h.session_id for h in screen.hits}
        assert checkout not in {h.main_session_id for h in screen.hits}
        await pilot.press("enter")  # a similar turn opens in the viewer like a hit
        await pilot.pause()
        assert app.screen is app.browser and view.session_id == screen.hits[0].session_id


async def test_a_turn_like_no_other_says_so(demo_db: Path) -> None:
    """A turn no other session's is like listed nothing under "0 of 0 hits", saying no more; it
    says what `threadloom similar` says."""
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        checkout = session_id(app, CHECKOUT)
        app.browser.jump_to_session(checkout)
        await pilot.pause()
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == checkout and view.count > 0)
        await pilot.press("3", "G", "{", "{")  # "Also round to cents in the invoice summary email."
        row = view.current_row()
        assert row is not None and row.content.startswith("Also round to cents")
        await pilot.press("L")
        await until(pilot, lambda: isinstance(app.screen, SearchScreen) and app.screen.result is not None)
        screen = app.screen
        assert isinstance(screen, SearchScreen) and not screen.hits
        status = shown(screen.query_one("#search-status", Static))
        assert "0 of 0 hits" in status and "no turn of another session is like it" in status, status


async def test_the_fork_picker_starts_a_new_session_with_its_picked_turns(demo_db: Path) -> None:
    from threadloom.tui.fork import ForkPicker, PointList

    from tests.tui_support import settle

    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        app.query_one(MessageView).go_to_seq(0)
        await pilot.press("f")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ForkPicker) and len(picker.model.points) >= 2
        points = picker.query_one(PointList)
        points.highlighted = 0
        await pilot.press("p")
        points.highlighted = len(picker.model.rows) - 1
        await pilot.press("p")
        assert len(picker.model.picked_turns) == 2
        assert sum("●" in points.get_option_at_index(i).prompt.plain for i in range(points.option_count)) == 2
        await pilot.press("ctrl+n")
        await until(pilot, lambda: isinstance(app.screen, ContextScreen) and app.screen.context is not None)
        dialog = app.screen
        assert isinstance(dialog, ContextScreen) and dialog.context is not None
        assert [t.turn_id for t in dialog.context.turns] == [
            p.turn_id for p in picker.model.points if p.turn_id in picker.model.picked_turns
        ]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is picker


async def test_the_hits_facts_line_up_in_columns(demo_db: Path) -> None:
    """Each hit's facts (how it was found, the role, the date) were put one after the other at the
    right of its row: a "user" hit's started five columns further right than an "assistant" one's.
    They are columns, each as wide as its longest."""
    from threadloom.tui.search import ResultsList

    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"tax")
        await wait_for_search(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        assert {h.role for h in screen.hits} == {"user", "assistant"}, [h.role for h in screen.hits]
        results = screen.query_one(ResultsList)
        firsts = [
            str(results.get_option_at_index(n).prompt).splitlines()[0] for n in range(results.option_count)
        ]
        assert len({row.index("words + meaning") for row in firsts}) == 1, firsts
        roles = {row.index("  user  ") if "  user  " in row else row.index("  assistant  ") for row in firsts}
        assert len(roles) == 1, firsts
        assert len({len(row) for row in firsts}) == 1, firsts  # the dates end together


async def test_one_turn_is_one_turn_not_turn_s(demo_db: Path) -> None:
    """The new-session dialog and the picked count said "1 turn(s)", "2 turn(s) picked": counted
    as words are."""
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"tax rounding")
        await wait_for_search(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen) and len(screen.hits) > 1
        await pilot.press("ctrl+t")
        assert "1 turn picked: Ctrl+N starts" in shown(screen.query_one("#search-status", Static))
        await pilot.press("down", "ctrl+t")
        assert "2 turns picked" in shown(screen.query_one("#search-status", Static))
        await pilot.press("ctrl+t", "up", "ctrl+t")  # none picked: Ctrl+N takes the hit's turn
        await pilot.press("ctrl+n")
        await until(pilot, lambda: isinstance(app.screen, ContextScreen) and app.screen.context is not None)
        dialog = app.screen
        assert isinstance(dialog, ContextScreen)
        assert str(dialog.query_one("#context-box").border_title) == "New session with the context of 1 turn"
        assert "1 turn, about " in shown(dialog.query_one("#context-preview", Static))


async def test_a_new_session_in_a_folder_not_on_this_machine_asks_for_one(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enter handed the terminal to `cd /home/dev/src/acme-shop && claude …` though no such folder
    is here (the turns ran on another machine): bash said "No such file or directory" and the
    agent never started. The dialog says so and waits for a folder that is here."""
    from threadloom.tui import shell

    ran: list[str] = []
    monkeypatch.setattr(shell, "run_in_shell", lambda command: ran.append(command) or 0)
    monkeypatch.setattr(shell, "hand_over", lambda app: contextlib.nullcontext())
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"tax rounding")
        await wait_for_search(pilot)
        await pilot.press("ctrl+n")
        await until(pilot, lambda: isinstance(app.screen, ContextScreen) and app.screen.context is not None)
        dialog = app.screen
        assert isinstance(dialog, ContextScreen)
        folder = dialog.query_one("#context-folder", Input)
        assert folder.value == "/home/dev/src/acme-shop" and not Path(folder.value).exists()
        await pilot.press("enter")
        said = shown(dialog.query_one("#context-status", Static))
        assert not ran and "Not started: type a folder of this machine to start in" in said, said
        noted = shown(dialog.query_one("#context-command", Static))
        assert "The folder /home/dev/src/acme-shop does not exist on this machine" in noted, noted
        folder.value = str(tmp_path)
        await pilot.press("enter")
        assert len(ran) == 1 and ran[0].startswith(f"cd {tmp_path} && claude ")
