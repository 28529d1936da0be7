"""Claude Code transcripts that raise each signal (rejected calls, cache misses, compactions), and
the signals read back as stored, to compare an incremental read with one at once."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from threadloom.core.insight.signals import session_signals
from threadloom.core.store import db

from tests.builders.claude import Transcript
from tests.support import ingest

SID = "5a9e1111-1111-4222-8333-000000005190"


OPUS = "claude-opus-4-5"


SONNET = "claude-sonnet-4-5-20250929"


REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
    "edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to "
    "tell you how to proceed."
)


# a request well over a dead end's threshold: 200k input tokens of Opus 4.5 cost $1
EXPENSIVE = {"input_tokens": 200_000, "output_tokens": 100}


def transcript(tmp_path: Path, sid: str = SID, name: str | None = None, **common) -> Transcript:
    return Transcript(tmp_path / "projects" / "-home-dev-app" / f"{name or sid}.jsonl", sid, **common)


def cached(creation: int, read: int, inp: int = 5, out: int = 50) -> dict:
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_creation_input_tokens": creation,
        "cache_read_input_tokens": read,
    }


def at(t: Transcript, when: str) -> None:
    """Give the last record written its own time."""
    t.lines[-1]["timestamp"] = when


def compact(t: Transcript, when: str, summary: str) -> str:
    boundary = t.add(
        {
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "level": "info",
            "isMeta": False,
            "compactMetadata": {"trigger": "auto", "preTokens": 160_000},
        },
        parent=False,
    )
    at(t, when)
    t.add(
        {
            "type": "user",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "This session is being continued. Summary: " + summary},
        }
    )
    at(t, when)
    return boundary


def stored(conn: sqlite3.Connection) -> dict[str, list[tuple]]:
    """Every session's signals (as listed, their records named by file and place), stats rows,
    turns' tokens, totals and changed files."""
    where = {
        entry_id: (path, offset)
        for entry_id, path, offset in conn.execute(
            "SELECT e.id, f.path, e.byte_offset FROM entries e JOIN source_files f ON f.id = e.source_file_id"
        )
    }
    out: dict[str, list[tuple]] = {}
    for (session_id,) in conn.execute("SELECT id FROM agent_sessions ORDER BY id"):
        out[session_id] = [
            (
                s.name,
                s.severity,
                s.seq,
                s.turn_id,
                s.detail,
                [(where.get(e.entry_id), e.seq, e.tool_call_id, e.result_seq) for e in s.evidence],
            )
            for s in session_signals(conn, session_id)
        ]
        out[session_id].append(
            tuple(
                conn.execute(
                    "SELECT bucket, model, root_session_id, project_path, agent, messages, api_messages, input_tokens, "
                    "output_tokens, cache_creation_tokens, cache_read_tokens, cost_usd, unpriced_messages, tool_calls, "
                    "failed_tool_calls, lines_added, lines_removed FROM stats_rollup WHERE session_id = ? "
                    "ORDER BY bucket, model",
                    (session_id,),
                )
            )
        )
        out[session_id].append(
            tuple(
                conn.execute(
                    "SELECT id, token_count FROM agent_turns WHERE session_id = ? ORDER BY id", (session_id,)
                )
            )
        )
        out[session_id].append(
            tuple(
                conn.execute(
                    "SELECT input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, cost_usd, "
                    "unpriced_messages, message_count FROM agent_sessions WHERE id = ?",
                    (session_id,),
                )
            )
        )
        out[session_id].append(
            tuple(
                conn.execute(
                    "SELECT call_id, path, turn_id, timestamp, lines_added, lines_removed FROM agent_file_changes "
                    "WHERE session_id = ? ORDER BY call_id, path",
                    (session_id,),
                )
            )
        )
    return out


def read_at_once(tmp_path: Path, files: dict[Path, bytes], name: str) -> dict[str, list[tuple]]:
    """The signals of a database that read `files` (relative path → bytes) in one ingest."""
    root = tmp_path / name / "projects"
    for relative, data in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    conn = db.connect(tmp_path / name / "once.db")
    ingest(conn, root)
    found = stored(conn)
    conn.close()
    shutil.rmtree(root)
    return relative_to_root(found, root)


def relative_to_root(found: dict[str, list[tuple]], root: Path) -> dict[str, list[tuple]]:
    """Records named relative to their root, so two databases of copies in two places compare."""
    out = {}
    for sid, listed in found.items():
        signals_found, sums = listed[:-4], listed[-4:]
        out[sid] = [
            (*s[:5], [((str(Path(w[0]).relative_to(root)), w[1]) if w else None, *rest) for w, *rest in s[5]])
            for s in signals_found
        ] + sums
    return out
