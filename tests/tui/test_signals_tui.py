"""Signals in the TUI: a badge on the session's row, `S` lists the open session's signals, and
Enter on a piece of evidence shows that message in the viewer."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len
from textual.widgets import OptionList
from threadloom.core.insight import signals
from threadloom.tui.messages import MessageView
from threadloom.tui.panes import SessionTree, session_label
from threadloom.tui.signals import SignalsScreen

from tests.tui_support import fixed_now, make_app, run_test, session_id, until

HEADER = "The header is misaligned on mobile"


async def test_the_badge_the_list_and_enter_on_evidence(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        assert app.conn is not None
        sid = session_id(app, HEADER)
        (refused,) = signals.session_signals(app.conn, sid)
        assert refused.name == "rejected"
        call = refused.evidence[0]
        assert call.tool == "Bash" and call.seq is not None

        app.browser.jump_to_session(sid)
        await until(pilot, lambda: app.query_one(MessageView).session_id == sid)
        tree = app.query_one(SessionTree)
        row = next(s for s in tree.sessions if s.id == sid)
        assert row.signal_count == 1
        assert session_label(row, 80, fixed_now()).plain.startswith(f"⚠1 {HEADER[:20]}")
        calm = next(s for s in tree.sessions if s.id != sid)
        assert "⚠" not in session_label(calm, 80, fixed_now()).plain

        view = app.query_one(MessageView)
        view.go_to_seq(0, mark=False)
        await pilot.press("W")
        await until(pilot, lambda: isinstance(app.screen, SignalsScreen))
        listing = app.screen.query_one(OptionList)
        rows = [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]
        assert rows[0] == "rejected  medium  the user refused 1 tool call (Bash)"
        assert rows[1].startswith(
            f"  #{call.seq}  Bash  rm -rf node_modules && npm ci  → The user doesn't want"
        )
        assert listing.highlighted == 1  # the first piece of evidence, not the heading

        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, SignalsScreen))
        await until(pilot, lambda: view.found is not None)
        assert view.session_id == sid
        assert view.found == view.position_of_seq(call.seq)
        assert app.focused is view

        await pilot.press("W")
        await until(pilot, lambda: isinstance(app.screen, SignalsScreen))
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, SignalsScreen))
        assert view.session_id == sid


async def test_a_long_repeated_prompt_is_cut_to_the_lists_width_not_wrapped(tmp_path: Path) -> None:
    """The excerpt of a long prompt (wide characters in it) was a few cells wider than the list:
    Textual wrapped it, leaving its last word and ellipsis on a line of their own. Each row is cut
    to the list's width in cells now, its ellipsis in the last one."""
    from tests.builders.claude import Transcript
    from tests.tui_support import ingested_db

    sid = "abcdef00-0000-4000-8000-00000000516a"
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{sid}.jsonl", sid)
    prompt = (
        "Ok great, now we can try to check how this works by doing the integration testing, "
        "統合テストを実行して結果を確認してください. Some time ago, we wrote a script for that."
    )
    for answer in ("Running it.", "Running it again.", "Once more."):
        t.user(prompt)
        t.assistant(answer)
    t.write()
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(120, 35)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id == sid)
        await pilot.press("W")
        await until(pilot, lambda: isinstance(app.screen, SignalsScreen))
        listing = app.screen.query_one(OptionList)
        await until(pilot, lambda: listing.option_count > 0)
        await pilot.pause()
        lines = [
            listing.render_line(y).text.rstrip() for y in range(listing.scrollable_content_region.height)
        ]
        shown = [line for line in lines if line]
        assert shown[0].startswith("repeated-prompt  ") and len(shown) == 4, lines
        for line in shown[1:]:  # each piece of evidence on its one line, cut in its last cell
            assert line.startswith("  #") and line.endswith("…"), lines
            assert cell_len(line) == listing.scrollable_content_region.width, lines
        # and moved through with j and k as every other list is (they did nothing here)
        first = listing.highlighted
        await pilot.press("j")
        assert listing.highlighted == first + 1
        await pilot.press("j", "k")
        assert listing.highlighted == first + 1


async def test_a_calm_session_s_list_offers_no_enter(demo_db: Path) -> None:
    """A session with no signal listed "No signals in this session." over "Enter shows the
    message": there is no message to show. Its footer says Esc alone."""
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        assert app.conn is not None
        tree = app.query_one(SessionTree)
        app.browser.jump_to_session(session_id(app, "The checkout tests started failing"))
        await pilot.pause()
        calm = next(s for s in tree.sessions if not s.signal_count)
        app.browser.jump_to_session(calm.id)
        await until(pilot, lambda: app.query_one(MessageView).session_id == calm.id)
        await pilot.press("W")
        await until(pilot, lambda: isinstance(app.screen, SignalsScreen))
        listing = app.screen.query_one(OptionList)
        assert str(listing.get_option_at_index(0).prompt) == "No signals in this session."
        assert listing.border_subtitle == "Esc closes"
