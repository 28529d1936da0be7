"""Pilot tests of what the viewer does inside one session: find, jumps to prompts and failed calls,
and the footer naming the compaction segment under the cursor."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.segment import Segment
from textual.widgets import Input
from threadloom.core.read import browse
from threadloom.core.read.find import failed_calls, find_in_session, prompt_seqs
from threadloom.tui.app import ThreadloomApp
from threadloom.tui.find import CURRENT_STYLE, MATCH_STYLE, FindBar
from threadloom.tui.messages import MessageView

from tests.tui_support import (
    CHECKOUT,
    LONG,
    make_app,
    run_test,
    session_id,
    until,
    wait_for_find,
)

DEMO_LONG_TURNS = 60  # still two compactions


def marked(view: MessageView) -> list[tuple[str, str]]:
    """(text, "match" or "current") of every marked piece on screen."""
    out = []
    for y in range(view.scrollable_content_region.height):
        for segment in view.render_line(y):
            style = segment.style
            if style is not None and style.bgcolor == MATCH_STYLE.bgcolor:
                out.append((segment.text, "match"))
            elif style is not None and style.bgcolor == CURRENT_STYLE.bgcolor:
                out.append((segment.text, "current"))
    return out


def count_text(app: ThreadloomApp) -> str:
    return str(app.query_one("#find-count").render())


def notes(app: ThreadloomApp) -> list[str]:
    return [n.message for n in app._notifications]


async def said(pilot, text: str) -> None:
    """Until a toast holds `text` (a notification is posted, then shown)."""
    await until(pilot, lambda: any(text in note for note in notes(pilot.app)))


async def open_session(pilot, title: str) -> MessageView:
    app = pilot.app
    app.browser.jump_to_session(session_id(app, title))
    await pilot.pause()
    view = app.query_one(MessageView)
    assert view.has_focus
    return view


async def test_find_counts_marks_moves_and_closes(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        view = await open_session(pilot, CHECKOUT)
        await pilot.press("ctrl+f")
        await pilot.pause()
        bar = app.query_one(FindBar)
        assert bar.query_one(Input).has_focus
        assert app.browser.focused_pane == "messages"  # the bar belongs to the pane: it stays in view
        await pilot.press(*"TAX")
        await wait_for_find(pilot)
        assert view.session_id is not None and app.conn is not None
        places = find_in_session(app.conn, view.session_id, "tax")
        assert len(places) >= 4 and view.navigator.places == places
        assert count_text(app) == f"1 of {len(places)}"
        assert view.row(view.cursor[0]).seq == places[0].seq
        shown = marked(view)
        assert shown and all(text.lower() == "tax" for text, _ in shown)
        assert any(kind == "current" for _, kind in shown)

        # Enter goes on, back in the messages, then n; a collapsed call holding a match opens when
        # the cursor lands on it
        tool = next(i for i, p in enumerate(places) if p.part == "tool")
        assert tool >= 1 and not view.is_expanded(f"tool:{places[tool].call_id}")
        await pilot.press("enter")
        for _ in range(tool - 1):
            await pilot.press("n")
        await pilot.pause()
        assert count_text(app) == f"{tool + 1} of {len(places)}"
        block = view.current_block()
        assert block is not None and block.call is not None and block.call.id == places[tool].call_id
        assert view.is_expanded(f"tool:{places[tool].call_id}")
        assert any(kind == "current" for _, kind in marked(view))

        # n and N, round the ends
        await pilot.press("n")
        assert view.row(view.cursor[0]).seq == places[tool + 1].seq
        await pilot.press("N", "N")
        assert view.row(view.cursor[0]).seq == places[tool - 1].seq
        for _ in range(tool):
            await pilot.press("N")
        assert count_text(app) == f"{len(places)} of {len(places)}"  # before the first: the last

        # Esc closes the bar and takes the marks away (and is not the app's Esc)
        await pilot.press("escape")
        await pilot.pause()
        assert not app.query(FindBar) and marked(view) == []
        assert view.has_focus and view.session_id is not None


def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The queries the viewer's find reads a session for from now on."""
    from threadloom.core.read import find

    queries: list[str] = []
    real = find.find_in_session

    def reading(conn, session_id: str, query: str):  # type: ignore[no-untyped-def]
        queries.append(query)
        return real(conn, session_id, query)

    monkeypatch.setattr(find, "find_in_session", reading)
    return queries


async def test_n_goes_on_after_enter_and_after_escape(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Enter gives the keys back to the messages with the find still on, so n and N step (they
    had been typed into the bar); after Esc, n finds the last query again from the cursor."""
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        view = await open_session(pilot, CHECKOUT)
        await pilot.press("ctrl+f", *"tax")
        await wait_for_find(pilot)
        places = view.navigator.places
        assert len(places) >= 4
        await pilot.press("enter")
        await pilot.pause()
        assert view.has_focus and app.query(FindBar)
        assert count_text(app) == f"2 of {len(places)}"
        await pilot.press("n", "n")
        await pilot.pause()
        assert app.query_one(FindBar).query_one(Input).value == "tax"
        assert count_text(app) == f"4 of {len(places)}"
        await pilot.press("N")
        await pilot.pause()
        assert count_text(app) == f"3 of {len(places)}"
        assert view.row(view.cursor[0]).seq == places[2].seq

        await pilot.press("escape")
        await pilot.pause()
        assert not app.query(FindBar) and marked(view) == []
        read_again = counted(monkeypatch)
        await pilot.press("n")
        await wait_for_find(pilot)
        assert app.query_one(FindBar).query_one(Input).value == "tax" and view.has_focus
        after = next(i for i, p in enumerate(places) if p.seq > places[2].seq)
        assert view.row(view.cursor[0]).seq == places[after].seq
        assert count_text(app) == f"{after + 1} of {len(places)}"
        assert any(kind == "current" for _, kind in marked(view))
        assert not any("Ctrl+F finds" in note for note in notes(app))
        # the same messages: what was found stands, nothing read again on the UI thread
        assert read_again == []

        # the session shown again (as a followed one that grew or changed is): found afresh
        await pilot.press("escape")
        await pilot.pause()
        view.state.seqs = range(view.state.seqs.start, view.state.seqs.stop)
        await pilot.press("n")
        await wait_for_find(pilot)
        assert read_again == ["tax"] and view.navigator.places == places


async def test_escape_in_the_bar_closes_it_and_a_miss_says_so(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        view = await open_session(pilot, CHECKOUT)
        await pilot.press("ctrl+f", *"kubernetes")
        await wait_for_find(pilot)
        assert count_text(app) == "no matches" and marked(view) == []
        await pilot.press("enter")
        await said(pilot, "No match for 'kubernetes'")
        app.query_one(FindBar).query_one(Input).value = "\x1b]0;owned\x07"  # pasted: shown as text
        await wait_for_find(pilot)
        await pilot.press("enter")
        await said(pilot, "No match for '␛]0;owned␇'")
        await pilot.press("escape")
        await pilot.pause()
        assert not app.query(FindBar) and view.has_focus
        await pilot.press("n")
        await said(pilot, "Ctrl+F finds in this session")


async def test_the_newest_query_wins_and_a_new_session_forgets_the_find(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        view = await open_session(pilot, CHECKOUT)
        await pilot.press("ctrl+f")
        navigator = view.navigator
        navigator.search_in_thread("tax")  # found in threads: the older answer, if later, is dropped
        navigator.search_in_thread("webhook")
        await until(pilot, lambda: navigator.query == "webhook")
        await until(pilot, lambda: not [w for w in app.workers if w.group == "find" and w.is_running])
        await pilot.pause()
        assert navigator.query == "webhook" and all(text.lower() == "webhook" for text, _ in marked(view))
        assert app.conn is not None and view.session_id is not None
        assert navigator.places == find_in_session(app.conn, view.session_id, "webhook") != []
        app.browser.jump_to_session(session_id(app, LONG))
        await pilot.pause()
        assert not app.query(FindBar) and navigator.query == "" and marked(view) == []


async def test_prompt_jumps_land_on_prompts(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        view = await open_session(pilot, LONG)
        assert app.conn is not None and view.session_id is not None
        prompts = prompt_seqs(app.conn, view.session_id)
        assert len(prompts) > 10
        assert view.row(view.cursor[0]).seq == prompts[0]
        for expected in prompts[1:4]:
            await pilot.press("right_curly_bracket")
            row = view.row(view.cursor[0])
            assert row.seq == expected and row.role == "user"
        await pilot.press("j", "j", "left_curly_bracket")  # inside a turn: back to its prompt
        assert view.row(view.cursor[0]).seq == prompts[3]
        await pilot.press("left_curly_bracket")
        assert view.row(view.cursor[0]).seq == prompts[2]
        await pilot.press("G", "right_curly_bracket")
        await said(pilot, "No later prompt")


async def test_next_failed_call_lands_on_each_failed_call_opened(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        view = await open_session(pilot, LONG)
        assert app.conn is not None and view.session_id is not None
        failed = failed_calls(app.conn, view.session_id)
        assert len(failed) >= 3
        for place in failed:
            await pilot.press("exclamation_mark")
            block = view.current_block()
            assert block is not None and block.call is not None
            assert (block.call.id, block.call.status) == (place.call_id, "failed")
            assert view.is_expanded(f"tool:{place.call_id}")
        await pilot.press("exclamation_mark")
        await said(pilot, "No failed tool call after this point")
        assert view.current_block().call.id == failed[-1].call_id
        app.browser.jump_to_session(session_id(app, "Add a tmux config"))  # nothing failed there
        await pilot.pause()
        await pilot.press("exclamation_mark")
        await said(pilot, "No tool call failed here")


async def test_the_footer_names_the_segment_under_the_cursor(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        view = await open_session(pilot, LONG)
        assert app.conn is not None and view.session_id is not None
        segments = browse.compaction_segments(app.conn, view.session_id, view.count)
        assert len(segments) == 3
        assert str(view.border_subtitle).startswith("segment 1 of 3 · ")
        assert f"{view.count:,} messages" in str(view.border_subtitle)
        view.go_to_seq(segments[1].start_seq + 2, mark=False)
        await pilot.pause()
        assert str(view.border_subtitle).startswith("segment 2 of 3 · ")
        await pilot.press("G")
        assert str(view.border_subtitle).startswith("segment 3 of 3 · ")
        # crossing the compaction line moving up, message by message
        view.go_to_seq(segments[2].start_seq, mark=False)
        await pilot.pause()
        assert str(view.border_subtitle).startswith("segment 3 of 3 · ")
        while view.row(view.cursor[0]).seq >= segments[2].start_seq:
            await pilot.press("k")
        assert str(view.border_subtitle).startswith("segment 2 of 3 · ")
        # a session never compacted names no segment
        app.browser.jump_to_session(session_id(app, CHECKOUT))
        await pilot.pause()
        assert str(view.border_subtitle).startswith("22 messages")


def test_marks_keep_the_line_its_width_and_its_other_styles() -> None:
    from rich.style import Style
    from textual.strip import Strip
    from threadloom.tui.find import mark_matches

    red, bold = Style(color="red"), Style(bold=True)
    strip = Strip([Segment("  applyTa", bold), Segment("x(total) · TAX 19% 税", red)])
    out = mark_matches(strip, "tax", MATCH_STYLE)
    assert out.text == strip.text and out.cell_length == strip.cell_length
    pieces = [(s.text, s.style) for s in out]
    hits = [(text, style.bold) for text, style in pieces if style and style.bgcolor == MATCH_STYLE.bgcolor]
    assert hits == [("Ta", True), ("x", None), ("TAX", None)]  # across two segments, each keeps its own
    assert [text for text, style in pieces if style == red] == ["(total) · ", " 19% 税"]
    assert mark_matches(strip, "vat", MATCH_STYLE) is strip


async def test_a_match_past_what_an_output_shows_says_where_to_read_it(tmp_path: Path) -> None:
    """A call's output is drawn to its first 60 lines: find counted a match at line 150 ("1 of 1")
    and showed the output's top, the match nowhere, and paging never reached it. The bar says the
    match is past the lines shown, and where to read it."""
    from tests.builders.claude import Transcript, tool_use
    from tests.tui_support import ingested_db

    sid = "eeeeeeee-1111-4222-8333-0000000f1d00"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid)
    t.user("read the big file")
    t.assistant("Reading.", tools=[tool_use("tu_big", "Bash", command="cat big.log")])
    t.tool_result("tu_big", "\n".join(f"line {n}" for n in range(200)).replace("line 150", "needle_here"))
    t.assistant("Read it.")
    t.write()
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(140, 40)) as pilot:
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == sid)
        view.focus()
        await pilot.press("ctrl+f", *"needle_here")
        await wait_for_find(pilot)
        await pilot.press("enter")
        await until(pilot, lambda: count_text(app).startswith("1 of 1"))
        assert count_text(app) == "1 of 1 · past the lines shown: r shows the raw record"
        await pilot.press("ctrl+f")  # the bar again, for a query the output shows
        bar = app.query_one(FindBar).query_one(Input)
        bar.value = ""
        await pilot.press(*"line 12")
        await wait_for_find(pilot)
        await pilot.press("enter")
        await until(pilot, lambda: "past" not in count_text(app) and count_text(app).endswith("of 1"))


async def test_no_failure_here_names_those_of_its_subagents(tmp_path: Path) -> None:
    """`!` in a session whose own calls all worked said "No tool call failed here" while its
    project counted three failures, all in its subagents: it says how many failed there."""
    from tests.builders.claude import tool_use
    from tests.support import orchestrating_session
    from tests.tui_support import ingested_db

    sid = "aaaaaaaa-1111-4222-8333-0000000000b2"
    sub = orchestrating_session(tmp_path / "projects" / "-srv-app", sid)  # its own calls all work
    sub.assistant(
        tools=[
            tool_use("toolu_a", "Bash", command="make lint"),
            tool_use("toolu_b", "Bash", command="make test"),
        ]
    )
    sub.tool_result("toolu_a", "lint failed", is_error=True)
    sub.tool_result("toolu_b", "tests failed", is_error=True)
    sub.write()
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(sid)
        await pilot.pause()
        app.query_one(MessageView).focus()
        await pilot.press("exclamation_mark")
        await said(pilot, "No tool call failed here; 2 failed in its subagents")
