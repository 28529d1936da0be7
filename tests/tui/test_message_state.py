"""The message viewer's state on its own (no Textual): what is shown, read, selected and expanded,
and where each message is, as `MessageView` draws it."""

from __future__ import annotations

from pathlib import Path

from threadloom.core.store.db import connect
from threadloom.tui.message_state import DEFAULT_HEIGHT, PAGE, MessageState


def opened(count: int, *, seqs: list[int] | None = None) -> MessageState:
    state = MessageState()
    state.open("s1", seqs if seqs is not None else range(count), rewinds={3})
    return state


def test_opening_forgets_the_last_session_but_keeps_the_text_mode() -> None:
    state = opened(10)
    state.toggle("text:1")
    state.toggle_all()
    state.toggle_markdown()
    state.found, state.stick_end, state.cursor = 4, True, (4, 1)
    state.open("s2", range(5))
    assert (state.session_id, state.count, state.heights) == ("s2", 5, [DEFAULT_HEIGHT] * 5)
    assert not state.toggled and not state.expand_all and state.found is None and not state.stick_end
    assert state.cursor == (0, 0) and state.rewinds == set()
    assert state.markdown is False  # kept from session to session
    state.clear()
    assert state.session_id is None and state.count == 0 and state.heights == []


def test_tool_calls_follow_expand_all_unless_toggled_and_the_rest_only_when_toggled() -> None:
    state = opened(3)
    assert not state.is_expanded("tool:a") and not state.is_expanded("text:1")
    state.toggle("tool:a")
    state.toggle("text:1")
    assert state.is_expanded("tool:a") and state.is_expanded("text:1")
    assert state.toggle_all() is True
    assert state.is_expanded("tool:a") and state.is_expanded("tool:b")  # what was toggled is forgotten
    assert state.is_expanded("text:1")  # text is not a tool call
    state.toggle("tool:b")
    assert not state.is_expanded("tool:b")
    assert state.toggle_all() is False and not state.is_expanded("tool:b")


def test_heights_lay_out_as_a_prefix_sum_and_an_anchor_stays_put() -> None:
    state = opened(4)
    state.relayout()
    assert state.offsets == [0, 3, 6, 9, 12] and state.lines == 12 and not state.stale
    assert [state.index_at(line) for line in (0, 2, 3, 11, 99)] == [0, 0, 1, 3, 3]
    anchor = state.anchor(7)  # a line into the third message
    assert anchor == (2, 1)
    state.set_height(0, 10, exact=True)  # drawn: taller than its estimate
    assert state.stale and 0 in state.exact
    state.relayout()
    assert state.anchored(anchor) == 10 + 3 + 1  # the same line of the same message
    state.set_height(1, 3)
    assert not state.stale  # no change, no new layout
    assert state.anchored((2, 99)) == state.offsets[2] + 2  # not past the message's last line
    assert state.anchored(None) is None and state.anchored((9, 0)) is None
    assert MessageState().anchor(0) is None


def test_the_cursor_steps_through_the_blocks_it_can_rest_on() -> None:
    state = opened(5)
    blocks = {0: [0, 2], 1: [], 2: [1], 3: [], 4: [0]}  # message 1 and 3 draw nothing to select

    def targets(pos: int) -> list[int]:
        return blocks[pos]

    assert state.start(0, targets) == (0, 0) and state.start(1, targets) == (2, 1)
    state.cursor = (0, 0)
    assert state.step(1, targets) == (0, 2)
    state.cursor = (0, 2)
    assert state.step(1, targets) == (2, 1)
    state.cursor = (4, 0)
    assert state.step(1, targets) is None
    assert state.step(-1, targets) == (2, 1)
    state.cursor = (2, 1)
    assert state.step(-1, targets) == (0, 2)  # the previous message's last block
    state.cursor = (0, 0)
    assert state.step(-1, targets) is None
    assert state.find_target(3, 1, targets) == 4 and state.find_target(3, -1, targets) == 2


def test_a_sequence_number_finds_its_position_in_a_branch_or_the_whole_session() -> None:
    assert opened(0, seqs=range(10, 20)).position_of_seq(12) == 2
    assert opened(0, seqs=range(10, 20)).position_of_seq(99) == 9
    branch = opened(0, seqs=[1, 4, 9])
    assert [branch.position_of_seq(s) for s in (0, 4, 5, 9, 20)] == [0, 1, 2, 2, 2]


def test_a_session_grows_only_when_it_continues_what_is_shown() -> None:
    state = opened(3)
    state.rows[2] = object()  # type: ignore[assignment]  # read: on the last page
    state.pages.add(0)
    state.set_height(2, 7, exact=True)
    state.cursor = (2, 0)
    assert state.at_end
    assert state.grow(range(2)) is None and state.grow([0, 5, 6, 7]) is None
    assert state.grow(range(5)) == range(0, 3)  # the last page is read again
    assert state.count == 5 and state.heights == [DEFAULT_HEIGHT] * 5
    assert 2 not in state.rows and 0 not in state.pages and 2 not in state.exact
    assert not state.at_end


def test_rows_are_read_a_page_at_a_time(demo_db: Path) -> None:
    conn = connect(demo_db, readonly=True)
    try:
        sid, count = conn.execute(
            "SELECT id, message_count FROM agent_sessions ORDER BY message_count DESC LIMIT 1"
        ).fetchone()
        state = MessageState()
        state.open(sid, range(count))
        assert count > PAGE and state.needs_page(PAGE)
        read = state.read_page(conn, 1)
        assert read == range(PAGE, min(count, 2 * PAGE)) and not state.needs_page(PAGE)
        assert state.rows[PAGE].seq == PAGE and state.needs_page(0)
        assert state.read_positions() == list(read)
    finally:
        conn.close()
