"""A session's side files: what its agent keeps beside the transcript and deletes with it.

Claude Code writes a tool's output too large for the transcript to `<session>/tool-results/<call
id>.txt` (the transcript keeps a 2 KB preview and the path), the copy of every file it edits before
the edit to `file-history/<session>/` (what /rewind restores), todo lists to `todos/` and plans to
`plans/`. The ingest stores each whole (`source_files` of kind 'side', the bytes in `entries`, with
the session they belong to and what they are in `subtype`), versioned like any file; a restore
writes them back with the session. Read back here for the viewer, `show` and `sources`.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from ..adapters.base import shown_name
from .archive import file_bytes, plan_files

# the notice Claude Code puts in a tool result in place of an output it saved to a file (2.1.x)
PERSISTED_NOTICE = "<persisted-output>"
PERSISTED = re.compile(
    r"<persisted-output>\s*Output too large \((?P<size>[^)\n]*)\)\. Full output saved to: (?P<path>[^\n]+)"
)


@dataclass(frozen=True)
class PersistedOutput:
    """A side file's bytes as the archive kept them: a call's whole output (of which the transcript
    holds a preview), or a plan."""

    named: str  # the path the transcript names (the agent's machine's)
    stored: str  # the file the archive read it from, as shown
    data: bytes
    complete: bool  # every byte of the file is in the archive
    kind: str = "output"  # output | plan

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def persisted_output(conn: sqlite3.Connection, result: str) -> PersistedOutput | None:
    """The output a tool result's `<persisted-output>` notice names, when the archive kept the file
    (read from where the transcript says, or from a copy of the same session's folder elsewhere:
    a backup, another machine); None otherwise."""

    found = PERSISTED.search(result[:4000])
    if found is None:
        return None
    named = found.group("path").strip()
    parts = named.replace("\\", "/").split("/")
    if len(parts) < 3 or parts[-2] != "tool-results":
        return None
    tail = "/" + "/".join(parts[-3:])  # <session>/tool-results/<call id>.txt
    row = conn.execute(
        "SELECT id, path, size FROM source_files WHERE kind = 'side' AND (path = ? OR substr(path, -?) = ?) "
        "ORDER BY path = ? DESC, id DESC LIMIT 1",
        (named, len(tail), tail, named),
    ).fetchone()
    if row is None:
        return None
    file_id, path, size = row
    data, contiguous = file_bytes(conn, file_id)
    return PersistedOutput(named, shown_name(path), data, contiguous and len(data) == size)


def session_plans(conn: sqlite3.Connection, session_id: str) -> list[PersistedOutput]:
    """The plans kept for a session, read back (see `plan_files`)."""

    out = []
    for file_id, path, size in plan_files(conn, session_id):
        data, contiguous = file_bytes(conn, file_id)
        shown = shown_name(path)
        out.append(PersistedOutput(shown, shown, data, contiguous and len(data) == size, "plan"))
    return out


@dataclass(frozen=True)
class SideFile:
    path: str  # as shown (bytes that are not UTF-8 escaped, \xff)
    what: str  # tool-result | file-history | todo | plan
    size: int
    status: str  # as source_files says: ok, gone (deleted by its agent: kept here), superseded, …


def side_files(conn: sqlite3.Connection, session_id: str) -> list[SideFile]:
    """The side files kept with a session, by path."""
    rows = conn.execute(
        "SELECT f.path, (SELECT e.subtype FROM entries e WHERE e.source_file_id = f.id LIMIT 1), "
        "CASE WHEN f.size >= 0 THEN f.size ELSE f.bytes_ingested END, f.status "
        "FROM source_files f WHERE f.kind = 'side' AND f.id IN "
        "(SELECT DISTINCT source_file_id FROM entries WHERE session_id = ?) ORDER BY f.path",
        (session_id,),
    )
    return [
        SideFile(shown_name(path), what or "side file", size, status) for path, what, size, status in rows
    ]


@dataclass(frozen=True)
class SideFileCount:
    agent: str
    what: str
    files: int
    bytes: int
    without_session: int  # of no session the archive knows (a plan, a session never read)


def side_file_counts(conn: sqlite3.Connection) -> list[SideFileCount]:
    """Per agent and kind: how many side files are kept, their bytes, and how many belong to no
    session the archive knows (a plan is named by a session's slug; a session whose transcript
    was never read). A file kept for all of a project's sessions (Gemini CLI's prompt log) belongs
    to them while its project folder holds a log the archive read."""
    rows = conn.execute(
        "SELECT f.agent, e.subtype, count(*), COALESCE(sum(CASE WHEN f.size >= 0 THEN f.size ELSE f.bytes_ingested END), 0), "
        "sum(CASE WHEN e.session_id IS NOT NULL "
        "THEN NOT EXISTS (SELECT 1 FROM agent_sessions s WHERE s.id = e.session_id) "
        "ELSE NOT EXISTS (SELECT 1 FROM source_files g WHERE g.agent = f.agent AND g.kind != 'side' "
        "AND (g.project_key = f.project_key "  # or a log under its folder (the projects' registry)
        "OR substr(g.path, 1, length(rtrim(f.path, replace(f.path, '/', '')))) = rtrim(f.path, replace(f.path, '/', '')))) END) "
        "FROM source_files f JOIN entries e ON e.id = (SELECT min(id) FROM entries WHERE source_file_id = f.id) "
        "WHERE f.kind = 'side' GROUP BY 1, 2 ORDER BY 1, 2"
    )
    return [
        SideFileCount(agent, what or "side file", files, size, loose)
        for agent, what, files, size, loose in rows
    ]
