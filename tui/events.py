"""The messages screens send each other through the app.

A screen says what the user asked for by posting one of these; `ThreadloomApp` handles every one
of them, in one place, and decides which screen acts. So search, the fork picker and the palette
import this module, never the app: no screen reaches into another or into the app's state.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from textual.message import Message

if TYPE_CHECKING:
    from ..core.read.search import Hit


@runtime_checkable
class Archive(Protocol):
    """The one thing of the app the palette reads: the connection the browser reads through
    (a provider has no screen of ours to ask, and must not open a second connection)."""

    conn: sqlite3.Connection | None


def archive_conn(app: object) -> sqlite3.Connection | None:
    """The app's connection, when it is an app that browses an archive."""
    return app.conn if isinstance(app, Archive) else None


class OpenSession(Message):
    """Show a session (or subagent) in the browser, revealed in its tree (the jump palette).
    `way_back`: a subagent opened so keeps Esc's way back to where it was asked for, as one
    opened from its Task call does."""

    def __init__(self, session_id: str, *, way_back: bool = False) -> None:
        super().__init__()
        self.session_id = session_id
        self.way_back = way_back


class OpenProject(Message):
    """List a project's sessions in the browser, the project highlighted (the stats screen)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path


class HideChanged(Message):
    """A session or project was hidden from the lists, or shown again (`hidden`): the browser shows
    it so at once; the app writes it to the archive, where it is remembered."""

    def __init__(self, kind: str, key: str, hidden: bool) -> None:
        super().__init__()
        self.kind = kind
        self.key = key
        self.hidden = hidden


class SearchHitChosen(Message):
    """Enter on a search hit: the browser shows its session at the hit, and Esc goes back to search."""

    def __init__(self, hit: Hit) -> None:
        super().__init__()
        self.hit = hit


class SearchClosed(Message):
    """Esc in search: back to the browser as it was."""


class OpenForkPicker(Message):
    """The fork picker around an entry, a turn (`turn_id`) or a search hit's message (`seq`)."""

    def __init__(
        self, session_id: str, entry_id: int | None, *, turn_id: str | None = None, seq: int | None = None
    ) -> None:
        super().__init__()
        self.session_id = session_id
        self.entry_id = entry_id
        self.turn_id = turn_id
        self.seq = seq


class ForkWritten(Message):
    """The fork picker wrote a new session file: it is read into the archive so the tree shows it."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class AgentRan(Message):
    """An agent started from the fork picker has ended: what it wrote is read, as Ctrl+R does."""


class BackToSearch(Message):
    """Esc on a message opened from search: back to its results."""


class ExportSession(Message):
    """`E`: the session written as one HTML page into the folder threadloom runs in."""

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id


class MarkChosen(Message):
    """A tag, note or bookmark chosen for a session or message (`ref`): the app writes it."""

    def __init__(self, kind: str, ref: str, values: list[str]) -> None:
        super().__init__()
        self.kind, self.ref, self.values = kind, ref, values


class SyncChosen(Message):
    """Sync with the hub, with what the first sync's question chose (`url`, `rules`) if asked."""

    def __init__(self, url: str | None, rules: list[str]) -> None:
        super().__init__()
        self.url, self.rules = url, rules


class OpenDemo(Message):
    """`d` on the empty state: the demo archive opens instead."""
