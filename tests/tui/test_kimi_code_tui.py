"""What the message viewer draws of Kimi Code's sessions (core/adapters/kimi_code.py): lines that
say where the context was undone or cleared."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from threadloom.core.read.browse import MessageRow
from threadloom.core.read.query import get_session
from threadloom.core.store import db
from threadloom.tui.message_draw import Canvas, MessageDrawer
from threadloom.tui.message_state import PAGE, MessageState
from threadloom.tui.render import subagent_hint

from tests.builders import kimi_code
from tests.support import ingest


def drawn(tmp_path: Path, sid: str, width: int = 100) -> list[str]:
    """Every message of the session as the viewer draws it, its lines' right margins trimmed."""
    conn = db.connect(tmp_path / "t.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        session = get_session(conn, sid)
        assert session is not None
        state = MessageState()
        state.open(sid, range(session.message_count))

        def row(pos: int) -> MessageRow | None:
            if state.needs_page(pos):
                state.read_page(conn, pos // PAGE)
            return state.rows.get(pos)

        drawer = MessageDrawer(state, row)
        drawer.conn = conn
        canvas = Canvas(Console(width=width, color_system=None), width)
        return [
            strip.text.rstrip() for pos in range(state.count) for strip in drawer.draw(pos, canvas).strips
        ]
    finally:
        conn.close()


def test_the_viewer_marks_an_undo_and_a_cleared_context_where_they_happened(tmp_path: Path) -> None:
    kimi_code.rewound_session(tmp_path)
    lines = [line.strip() for line in drawn(tmp_path, kimi_code.REWOUND) if line.strip()]
    undo = next(
        n for n, line in enumerate(lines) if line.startswith("── undo: the last prompt and its replies")
    )
    clear = next(n for n, line in enumerate(lines) if line.startswith("── clear: context cleared"))
    assert lines.index("Summed in floats.") < undo < lines.index("sum the carts in Decimal")
    assert lines.index("Summed in Decimal.") < clear < lines.index("what is left to do?")


def test_a_swarm_s_call_says_how_many_subagents_it_started(tmp_path: Path) -> None:
    """An `AgentSwarm` call that started two subagents said "↳ subagent", as a call that starts
    one does: it says how many it started. `Agent`'s call, which starts one, says what it said."""
    kimi_code.swarm_session(tmp_path)
    kimi_code.kimi_code_session(tmp_path)
    swarm = [line for line in drawn(tmp_path, kimi_code.SWARM) if "▸ AgentSwarm" in line]
    assert len(swarm) == 1 and swarm[0].endswith("↳ 2 subagents explore (Enter)"), swarm
    one = [line for line in drawn(tmp_path, kimi_code.SID) if "▸ Agent " in line]
    assert len(one) == 1 and one[0].endswith("↳ subagent coder (Enter)"), one
    # narrower, the count is what stays: its description tells calls apart, the hint gives way
    assert [subagent_hint("explore", room, 12) for room in (40, 28, 20, 8, 3)] == [
        "  ↳ 12 subagents explore (Enter)",
        "  ↳ 12 subagents explore",
        "  ↳ 12 explore",
        "  ↳ 12",
        "  ↳",
    ]
