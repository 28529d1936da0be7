"""What the message viewer draws of pi's sessions (core/adapters/pi.py): a compaction's line."""

from __future__ import annotations

from pathlib import Path

from threadloom.core.store import db

from tests.builders.pi import COMPACTED, pi_compacted_early
from tests.support import ingest
from tests.tui_support import viewer_lines


def test_the_viewer_draws_a_pi_compaction_where_it_happened(tmp_path: Path) -> None:
    """pi's `compaction` entry was drawn nowhere: a line says the conversation was compacted
    there, with the summary the model went on from."""
    pi_compacted_early(tmp_path)
    conn = db.connect(tmp_path / "t.db")
    try:
        ingest(conn, tmp_path / ".pi")
        lines = [line.strip() for line in viewer_lines(conn, COMPACTED)]
    finally:
        conn.close()
    lines = [line for line in lines if line]
    compacted = [n for n, line in enumerate(lines) if line.startswith("── ✂ conversation compacted")]
    assert len(compacted) == 1 and "notes.md lists three errands" in lines[compacted[0]]
    assert lines.index("It lists three errands.") < compacted[0] < lines.index("and the first?")
