"""The files a session changed with its subagents' edits counted in: what an orchestrating session
did to the working tree is mostly its subagents' doing (one showed "1 file · +97" while its
subagents wrote ~1,900 lines).

Read from the sums the ingest keeps per session (`core.insight.stats.change_calls`), each subagent's under
its own id, and put together here for `c` in the viewer and `show`'s closing list."""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass, field
from typing import Any

from ..read.query import display_title, read_sessions, session_select
from .stats import ChangeCall, change_calls


@dataclass(slots=True)
class SessionChangeCall(ChangeCall):
    """A call's changes to one file, with the session that made it: the one asked about or one of
    its subagents (`by`: that subagent's title; "" for the session itself)."""

    session_id: str = ""
    by: str = ""


@dataclass(slots=True)
class ChangedFile:
    """A file and the calls that changed it, in the order they ran."""

    path: str
    calls: list[SessionChangeCall] = field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(c.lines_added for c in self.calls)

    @property
    def removed(self) -> int:
        return sum(c.lines_removed for c in self.calls)

    @property
    def by_subagents(self) -> int:
        """How many of its calls a subagent made."""
        return sum(1 for c in self.calls if c.by)


def subagents_below(conn: sqlite3.Connection, session_id: str) -> list[tuple[str, str]]:
    """(id, title) of every subagent a session started, theirs included, in the order they started."""
    out: list[tuple[str, str]] = []
    seen = {session_id}
    queue = [session_id]
    while queue:
        parent = queue.pop(0)
        found = read_sessions(
            conn.execute(
                session_select()
                + " WHERE s.parent_session_id = ? AND s.is_subagent = 1 ORDER BY s.created_at, s.id",
                (parent,),
            )
        )
        for child in found:
            if child.id not in seen:
                seen.add(child.id)
                out.append((child.id, display_title(child)))
                queue.append(child.id)
    return out


def tree_change_calls(
    conn: sqlite3.Connection, session_id: str, *, subagents: bool = True
) -> list[SessionChangeCall]:
    """The calls that changed files in the session and (with `subagents`) in every subagent below
    it, in the order they ran."""
    sessions = [(session_id, "")] + (subagents_below(conn, session_id) if subagents else [])
    out = [
        SessionChangeCall(**asdict(call), session_id=sid, by=by)
        for sid, by in sessions
        for call in change_calls(conn, sid)
    ]
    out.sort(key=lambda c: (c.timestamp is None, c.timestamp or 0))  # stable: a session's own order kept
    return out


def changed_files(calls: list[SessionChangeCall]) -> list[ChangedFile]:
    """The calls grouped by file, most changed first (then by path)."""
    files: dict[str, ChangedFile] = {}
    for call in calls:
        files.setdefault(call.path, ChangedFile(call.path)).calls.append(call)
    return sorted(files.values(), key=lambda f: (-(f.added + f.removed), f.path))


def files_changed(
    conn: sqlite3.Connection, session_id: str, *, subagents: bool = True
) -> list[dict[str, Any]]:
    """The changed files for `show --json`: path, lines added and removed, and each call that
    changed it (most changed file first, its calls in the order they ran), each call with the
    session that made it."""
    return [
        {
            "path": f.path,
            "added": f.added,
            "removed": f.removed,
            "calls": [
                {
                    "id": c.call_id,
                    "tool": c.tool_name,
                    "timestamp": c.timestamp,
                    "added": c.lines_added,
                    "removed": c.lines_removed,
                    "entry_id": c.entry_id,
                    "session_id": c.session_id,
                }
                for c in f.calls
            ],
        }
        for f in changed_files(tree_change_calls(conn, session_id, subagents=subagents))
    ]
