"""What the CLI prints with `--json` and the MCP server answers (core.serve.mcp_server): one builder for
each, so a script and an agent read the same fields."""

from __future__ import annotations

import shlex
import sqlite3
from dataclasses import asdict
from typing import Any

from ..read.query import MessageRow, SessionSummary, ToolCall


def show_ref(session_id: str) -> str:
    """The command a person runs to read a session."""
    return f"threadloom show {session_id}"


def show_command(session_id: str, seq: int | None = None) -> str:
    """The command that opens a session, or only the turn holding its message #seq, as a shell runs
    it: `threadloom show 'ID#5'` (unquoted, a shell takes `#5` for a comment)."""
    return "threadloom show " + shlex.quote(session_id if seq is None else f"{session_id}#{seq}")


def tool_call_json(t: ToolCall, *, output_chars: int | None = None) -> dict[str, Any]:
    """A call as `show --json` lists it; with `output_chars`, also its input and output as text, each
    cut to that many characters (saying how long it was)."""
    out: dict[str, Any] = {
        "id": t.id,
        "name": t.name,
        "status": t.status,
        "input": t.params_json,
        "child_session_id": t.child_session_id,
    }
    if output_chars is not None:
        from ..read.calls import result_text

        out["input"] = cut(t.params_json or "", output_chars)
        out["output"] = cut(result_text(t), output_chars)
    return out


def cut(text: str, limit: int) -> str:
    """`text` whole, or its first `limit` characters and how many were left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit:,} more characters]"


def message_json(m: MessageRow, *, output_chars: int | None = None) -> dict[str, Any]:
    """A message as `show --json` prints it: its text and thinking, its tool calls, where its images
    sit (never their bytes), Claude Code's markup read beside the text as written, and its hooks.
    With `output_chars` (an agent's page), the thinking is cut as tool outputs are."""
    from ..base.markup import as_dict, described

    thinking = m.thinking
    if thinking is not None and output_chars is not None:
        thinking = cut(thinking, output_chars)
    return {
        "entry_id": m.entry_id,
        "seq": m.seq,
        "uuid": m.uuid,
        "role": m.role,
        "type": m.entry_type,
        "timestamp": m.timestamp,
        "model": m.model,
        "content": m.content,
        "thinking": thinking,
        "tool_calls": [tool_call_json(t, output_chars=output_chars) for t in m.tool_calls],
        "images": [i.as_dict() for i in m.images],
        "markup": described(m.content) if m.role == "user" else None,
        "hooks": [as_dict(h) for h in m.hooks] or None,
    }


def session_signals_json(conn: sqlite3.Connection, session: SessionSummary) -> dict[str, Any]:
    """`signals SESSION --json`: the session and each of its signals with its evidence and excerpts."""
    from . import signals

    found = signals.session_signals(conn, session.id)
    texts = signals.excerpts(conn, session.id, found)
    data = session.as_dict()
    data["signals"] = [
        {
            **f.as_dict(),
            "evidence": [
                {**asdict(e), "excerpt": texts.get((e.entry_id, e.tool_call_id), "")} for e in f.evidence
            ],
        }
        for f in found
    ]
    return data


def ranked_signals_json(conn: sqlite3.Connection, limit: int) -> list[dict[str, Any]]:
    """`signals --json`: the sessions with the most signals, each with its count by kind."""
    from . import signals

    return [
        {**s.as_dict(), "signal_count": sum(c.values()), "signals": c}
        for s, c in signals.ranked_sessions(conn, limit)
    ]
