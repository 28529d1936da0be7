"""The viewer on Claude Code's own shapes: replies that open on an empty thinking block, `!`
commands, slash commands and their output, IDE selections, TodoWrite lists and hooks."""

from __future__ import annotations

from pathlib import Path

from threadloom.tui.app import ThreadloomApp
from threadloom.tui.messages import MessageView

from tests.conftest import markup_session
from tests.tui.test_tui import ingested_db, make_app
from tests.tui_support import until


async def open_markup(tmp_path: Path) -> tuple[ThreadloomApp, str]:
    t = markup_session(tmp_path)
    return make_app(ingested_db(tmp_path, tmp_path / "projects")), t.session_id


def drawn(view: MessageView) -> list[str]:
    """Every message's lines as drawn, one string per message position."""
    return ["\n".join(s.text.rstrip() for s in view.ensure(pos).strips) for pos in range(len(view.seqs))]


async def test_a_reply_that_opens_on_empty_thinking_has_its_own_header(tmp_path: Path) -> None:
    """Opus 4.7 writes an empty thinking block first on most API messages: that line draws nothing,
    and its next line (the text) took it for a continuation, merging the reply under the header
    before it (the first reply read as part of the user's prompt)."""
    app, sid = await open_markup(tmp_path)
    async with app.run_test(size=(140, 50)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id == sid)
        view = app.query_one(MessageView)
        lines = drawn(view)
        ids = [view.row(pos).message_id for pos in range(len(view.seqs))]  # type: ignore[union-attr]
        for message_id in ("msg_tok_1", "msg_tok_2", "msg_tok_3", "msg_tok_4"):
            shown = [pos for pos, mid in enumerate(ids) if mid == message_id and lines[pos].strip()]
            assert shown, message_id
            assert "◆ assistant" in lines[shown[0]], (message_id, lines[shown[0]])
            assert all("◆ assistant" not in lines[pos] for pos in shown[1:])  # one header per message
        looking = next(pos for pos, text in enumerate(lines) if "Looking at the loop" in text)
        assert "◆ assistant" in lines[looking]
