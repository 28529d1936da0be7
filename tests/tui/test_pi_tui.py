"""What the message viewer draws of pi's sessions (core/adapters/pi.py): a compaction's line."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from threadloom.core.read.browse import MessageRow
from threadloom.core.read.query import get_session
from threadloom.core.store import db
from threadloom.tui.message_draw import Canvas, MessageDrawer
from threadloom.tui.message_state import PAGE, MessageState

from tests.builders.pi import COMPACTED, pi_compacted_early
from tests.support import ingest


def test_the_viewer_draws_a_pi_compaction_where_it_happened(tmp_path: Path) -> None:
    """pi's `compaction` entry was drawn nowhere: a line says the conversation was compacted
    there, with the summary the model went on from."""
    pi_compacted_early(tmp_path)
    conn = db.connect(tmp_path / "t.db")
    try:
        ingest(conn, tmp_path / ".pi")
        session = get_session(conn, COMPACTED)
        assert session is not None
        state = MessageState()
        state.open(COMPACTED, range(session.message_count))

        def row(pos: int) -> MessageRow | None:
            if state.needs_page(pos):
                state.read_page(conn, pos // PAGE)
            return state.rows.get(pos)

        drawer = MessageDrawer(state, row)
        drawer.conn = conn
        canvas = Canvas(Console(width=100, color_system=None), 100)
        lines = [s.text.strip() for pos in range(state.count) for s in drawer.draw(pos, canvas).strips]
    finally:
        conn.close()
    lines = [line for line in lines if line]
    compacted = [n for n, line in enumerate(lines) if line.startswith("── ✂ conversation compacted")]
    assert len(compacted) == 1 and "notes.md lists three errands" in lines[compacted[0]]
    assert lines.index("It lists three errands.") < compacted[0] < lines.index("and the first?")
