"""The stats' sums on the corpus's real Claude Code files: per day they add up to the sessions'
own totals, per session they equal them, and every changed-lines row names a completed edit."""

from __future__ import annotations

import pytest
from threadloom.core.adapters import edit_tool_names
from threadloom.core.insight import stats
from threadloom.core.store import db

from tests.support import CORPUS

CLAUDE = CORPUS / "claude-code"
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not CLAUDE.is_dir(), reason="../shared/corpus/claude-code is not present"),
]
TOKENS = ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens")


@pytest.fixture(scope="module")
def conn(tmp_path_factory, claude_corpus_copy):
    """The corpus as one ingest read it (a copy of the one the corpus tests share)."""
    conn = db.connect(claude_corpus_copy(tmp_path_factory.mktemp("corpus-stats")))
    yield conn
    conn.close()


def test_days_add_up_to_the_session_totals(conn):
    """Every token and dollar is on a day: a message without a time of its own on its session's
    start, a session without any time in the "undated" row (last)."""
    days = stats.report(conn, "day")
    assert len(days) >= 5
    sessions = conn.execute(
        f"SELECT {', '.join(f'total({t})' for t in TOKENS)}, total(cost_usd), total(unpriced_messages), "
        "total(message_count) FROM agent_sessions"
    ).fetchone()
    for n, name in enumerate(TOKENS):
        assert sum(getattr(d, name) for d in days) == sessions[n], name
    assert sessions[1] > 0
    assert sum(d.cost_usd or 0.0 for d in days) == pytest.approx(sessions[4])
    assert sum(d.unpriced_messages for d in days) == sessions[5]
    assert sum(d.messages for d in days) == sessions[6]
    assert all(d.period != stats.UNDATED for d in days[:-1])
    (total,) = stats.report(conn, "total")
    assert (total.messages, total.input_tokens) == (sessions[6], sessions[0])


def test_each_session_s_rows_equal_its_totals(conn):
    rolled = {
        sid: values
        for sid, *values in conn.execute(
            f"SELECT session_id, {', '.join(f'sum({t})' for t in TOKENS)}, sum(cost_usd), sum(messages) "
            "FROM stats_rollup GROUP BY session_id"
        )
    }
    rows = conn.execute(
        f"SELECT id, {', '.join(TOKENS)}, cost_usd, message_count FROM agent_sessions WHERE message_count > 0"
    ).fetchall()
    assert len(rows) >= 100
    for sid, *values in rows:
        got = rolled[sid]
        assert got[:4] == values[:4] and got[5] == values[5], sid
        assert (got[4] is None) == (values[4] is None) and got[4] == pytest.approx(values[4]), sid


def test_every_changed_file_names_a_completed_edit(conn):
    changes = conn.execute(
        "SELECT f.call_id, c.tool_name, c.status, f.lines_added, f.lines_removed, s.source "
        "FROM agent_file_changes f JOIN agent_sessions s ON s.id = f.session_id "
        "LEFT JOIN agent_tool_calls c ON c.id = f.call_id AND c.session_id = f.session_id"
    ).fetchall()
    assert len(changes) >= 10
    for call_id, name, status, added, removed, agent in changes:
        assert name in edit_tool_names([agent]) and status == "completed", call_id  # its own agent's
        assert added >= 0 and removed >= 0
    assert sum(c[3] for c in changes) > 0 and sum(c[4] for c in changes) > 0
