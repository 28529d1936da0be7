"""Command palette providers: "jump to session" by title, id or project."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from core import browse
from tui.render import when

if TYPE_CHECKING:
    from tui.app import ThreadloomApp

SHOWN = 40


class SessionJumpProvider(Provider):
    """Sessions and subagents; matched on "title · project · id" so any of the three finds it.

    In the general palette (ctrl+p) sessions appear once something is typed, so the actions that
    apply now are what an empty palette lists; the jump palette (p) lists recent sessions at once.
    """

    list_recent = False

    async def startup(self) -> None:
        app: ThreadloomApp = self.app  # type: ignore[assignment]
        self.targets = browse.jump_targets(app.conn) if app.conn is not None else []

    def _text(self, t: browse.JumpTarget) -> str:
        kind = "⚙ " if t.is_subagent else ""
        return f"{kind}{t.title or '(untitled)'} · {t.project} · {t.id.split(':')[-1][:13]}"

    async def search(self, query: str) -> Hits:
        app: ThreadloomApp = self.app  # type: ignore[assignment]
        matcher = self.matcher(query)
        found = 0
        for target in self.targets:
            text = self._text(target)
            score = matcher.match(text)
            if score > 0:
                found += 1
                yield Hit(score, matcher.highlight(text), partial(app.jump_to_session, target.id),
                          help=f"jump to session · {when(target.started_at)}")
                if found >= 400:
                    return

    async def discover(self) -> Hits:
        app: ThreadloomApp = self.app  # type: ignore[assignment]
        if not self.list_recent:
            return
        for target in self.targets[:SHOWN]:
            yield DiscoveryHit(self._text(target), partial(app.jump_to_session, target.id),
                               help=f"jump to session · {when(target.started_at)}")


class RecentSessionsProvider(SessionJumpProvider):
    list_recent = True
