"""Sorting and filtering a list of sessions: the pure functions the TUI's list and `sessions` share."""

from __future__ import annotations

import pytest
from threadloom.core.base.text import human_duration, short_when
from threadloom.core.read.query import (
    SORT_ORDERS,
    SessionSummary,
    SessionView,
    agents_of,
    session_matches,
    sort_sessions,
)

HOUR = 3_600_000


def session(sid: str, **kw: object) -> SessionSummary:
    base: dict[str, object] = dict(
        id=sid,
        agent="claude-code",
        project="p",
        project_path="/p",
        title=None,
        started_at=None,
        ended_at=None,
        message_count=2,
        is_subagent=False,
        parent_session_id=None,
        model=None,
        input_tokens=0,
        output_tokens=0,
        cache_creation_tokens=0,
        cache_read_tokens=0,
    )
    base.update(kw)
    return SessionSummary(**base)  # type: ignore[arg-type]


# started, ended, messages, tokens: each order puts a different one first
A = session("a", started_at=1 * HOUR, ended_at=9 * HOUR, message_count=3, output_tokens=50)
B = session("b", started_at=5 * HOUR, ended_at=6 * HOUR, message_count=40, output_tokens=10)
C = session("c", started_at=7 * HOUR, ended_at=10 * HOUR, message_count=5, cache_read_tokens=900)
D = session("d", started_at=None, ended_at=None, message_count=1)  # times unknown: last in every order
LIST = [D, B, A, C]


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ("recent", "cabd"),  # last activity 10, 9, 6, unknown
        ("oldest", "abcd"),  # started 1, 5, 7, unknown
        ("messages", "bcad"),  # 40, 5, 3, 1
        ("tokens", "cabd"),  # 900, 50, 10, 0
        ("duration", "acbd"),  # 8 h, 3 h, 1 h, unknown
    ],
)
def test_each_order_sorts_by_its_own_measure(order: str, expected: str) -> None:
    assert "".join(s.id for s in sort_sessions(LIST, order)) == expected


def test_ties_keep_the_newest_first_and_an_unknown_order_is_refused() -> None:
    older = session("x", started_at=HOUR, ended_at=2 * HOUR, message_count=7)
    newer = session("y", started_at=HOUR, ended_at=3 * HOUR, message_count=7)
    assert [s.id for s in sort_sessions([older, newer], "messages")] == ["y", "x"]
    assert set(SORT_ORDERS) == {"recent", "oldest", "messages", "tokens", "duration"}
    with pytest.raises(ValueError, match="unknown order"):
        sort_sessions(LIST, "size")


def test_text_matches_title_id_branch_and_first_prompt_every_word_case_insensitive() -> None:
    s = session(
        "1848b9bb-792b",
        title="Fix the checkout",
        git_branch="fix/tax-rounding",
        first_prompt="The tests started FAILING after the tax change",
    )
    assert session_matches(s, "")
    assert session_matches(s, "CHECKOUT")  # title
    assert session_matches(s, "792b")  # id
    assert session_matches(s, "rounding")  # branch
    assert session_matches(s, "failing")  # first prompt
    assert session_matches(s, "rounding checkout")  # words in different fields, any order
    assert not session_matches(s, "checkout webhooks")  # every word must be found
    assert not session_matches(session("z", title=None), "checkout")


def test_a_view_filters_by_text_agent_and_size_then_sorts() -> None:
    sessions = [
        session("c1", agent="codex", title="auth refactor", ended_at=3 * HOUR, message_count=9),
        session("c2", agent="codex", title="auth tests", ended_at=2 * HOUR, message_count=1),
        session("k1", agent="claude-code", title="auth docs", ended_at=1 * HOUR, message_count=30),
        session("k2", agent="claude-code", title="billing", ended_at=4 * HOUR, message_count=0),
    ]
    assert agents_of(sessions) == ["claude-code", "codex"]
    assert [s.id for s in SessionView().apply(sessions)] == ["k2", "c1", "c2", "k1"]
    assert not SessionView(order="tokens").narrows
    assert [s.id for s in SessionView(text="auth").apply(sessions)] == ["c1", "c2", "k1"]
    assert [s.id for s in SessionView(text="auth", agent="codex").apply(sessions)] == ["c1", "c2"]
    view = SessionView(text="auth", hide_short=True, order="messages")
    assert view.narrows
    assert [s.id for s in view.apply(sessions)] == ["k1", "c1"]  # c2 (1 message) hidden
    assert [s.id for s in SessionView(hide_short=True).apply(sessions)] == ["c1", "k1"]  # k2: none


def test_a_session_knows_its_duration_and_last_activity() -> None:
    assert A.duration_ms == 8 * HOUR and A.last_activity == 9 * HOUR
    assert D.duration_ms is None and D.last_activity is None
    only_start = session("s", started_at=HOUR)
    assert only_start.duration_ms is None and only_start.last_activity == HOUR
    assert "duration_ms" in A.as_dict() and A.as_dict()["duration_ms"] == 8 * HOUR


def test_dates_and_durations_in_one_short_style() -> None:
    from datetime import datetime

    june = datetime(2025, 6, 12, 14, 5).timestamp() * 1000
    assert short_when(int(june), now=datetime(2025, 12, 1).timestamp()) == "12 Jun 14:05"
    assert short_when(int(june), now=datetime(2026, 1, 2).timestamp()) == "12 Jun 2025"
    assert short_when(None) == ""
    assert [human_duration(ms) for ms in (None, 45_000, 12 * 60_000, 3 * HOUR + 5 * 60_000, 50 * HOUR)] == [
        "",
        "45s",
        "12m",
        "3h 05m",
        "2d 2h",
    ]


def test_a_date_of_another_year_keeps_its_year_however_short_it_is_written() -> None:
    """Another year's date said without its year reads as this year's: a search hit of last
    August said "20 Aug", a message header "20 Aug 09:59:12", and a narrow row cut "20 Aug 2025"
    to "20 Aug"."""
    from datetime import datetime

    from threadloom.core.base.text import human_when, moment, shorter_when
    from threadloom.tui.panes import session_label

    now = datetime(2026, 3, 1, 12, 0).timestamp()
    august = int(datetime(2025, 8, 20, 9, 59, 12).timestamp() * 1000)
    february = int(datetime(2026, 2, 3, 9, 30).timestamp() * 1000)
    assert human_when(august, now) == "20 Aug 2025" and human_when(february, now) == "03 Feb"
    assert moment(august, now) == "20 Aug 2025 09:59:12" and moment(february, now) == "03 Feb 09:30:00"
    assert shorter_when(short_when(august, now)) == "Aug 2025"
    assert shorter_when(short_when(february, now)) == "03 Feb"
    old = session("s1", title="Fix the build", started_at=august, ended_at=august, message_count=3)
    for width in (90, 44, 34):  # the row narrows: the title gives way, then the facts, never the year
        assert "2025" in session_label(old, width, now).plain, width
    assert "14:05" not in session_label(old, 34, now).plain


def test_a_narrow_row_of_a_session_with_no_date_keeps_a_fact_not_an_ellipsis() -> None:
    """A session whose records carry no time has its date column blank: on a narrow pane the row
    kept that blank fact, cut to a lone "…" where the date goes; it keeps the next one that says
    something."""
    from threadloom.tui.panes import session_label

    undated = session("s2", title="Really great! I want to go on", message_count=7)
    row = session_label(undated, 34).plain
    assert not row.rstrip().endswith("…") and "7 msgs" in row, row
