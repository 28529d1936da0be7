"""Command palette providers: "jump to session" by title, id or project (core.read.search.find_sessions)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.fuzzy import Matcher
from textual.markup import escape
from textual.system_commands import SystemCommandsProvider

from ..core.base.text import one_line, short_when
from ..core.read import browse
from ..core.read.query import display_title
from .events import OpenSession, archive_conn

SHOWN = 40
SEARCHED = 60
ENGINE_RANK = 10_000.0  # above any score of Textual's fuzzy matcher, so the engine's hits come first
ACTION_RANK = 1_000_000.0  # above the engine's hits: an action named by the words typed comes first


def highlighted(matcher: Matcher, text: str) -> Content:
    """`text` as it is, the letters the query matched marked: `Matcher.highlight` reads its text
    as markup, and a session titled "[trimmed for fixture]" was listed without its title."""
    content = Content(text)
    score, offsets = matcher.fuzzy_search.match(matcher.query, text)
    if not score:
        return content
    for offset in offsets:
        if not text[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content


class ActionsProvider(SystemCommandsProvider):
    """The actions of the general palette (ctrl+p). One whose title has a word starting with each
    word typed ("keys", "quit", "rescan") is listed above the sessions those words also find; a
    looser fuzzy match of an action comes after them."""

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        typed = query.lower().split()
        for name, help_text, callback, *_ in self.app.get_system_commands(self.screen):
            score = matcher.match(name)
            if score <= 0:
                continue
            words = name.lower().replace(":", " ").split()
            if typed and all(any(w.startswith(t) for w in words) for t in typed):
                score += ACTION_RANK
            yield Hit(score, highlighted(matcher, name), callback, help=escape(help_text))


PROJECT_CHARS = 60  # of a project's name in a jump row: a 4 KB folder name filled the whole palette


def jump_text(t: browse.JumpTarget) -> str:
    """ "title · project · id" (a subagent's with ⚙) on one line; a session with no project leaves
    it out, rather than showing an empty field between two dots. A project named with line breaks
    took as many lines of the palette, and one of 4 KB all of it: it is shown as the Projects pane
    shows it, on one line, shortened."""
    kind = "⚙ " if t.is_subagent else ""
    fields = [display_title(t), one_line(t.project, PROJECT_CHARS), t.id.split(":")[-1][:13]]
    return kind + " · ".join(f for f in fields if f)


class SessionJumpProvider(Provider):
    """Sessions and subagents, found by title, project or id prefix through `core.read.search.find_sessions`.

    In the general palette (ctrl+p) sessions appear once something is typed, so the actions that
    apply now are what an empty palette lists; the jump palette (p) lists recent sessions at once.
    """

    list_recent = False

    async def startup(self) -> None:
        conn = archive_conn(self.app)
        self.targets = browse.jump_targets(conn) if conn is not None else []

    def _text(self, t: browse.JumpTarget) -> str:
        return jump_text(t)

    async def search(self, query: str) -> Hits:
        """Ranked by `core.read.search.find_sessions`, the engine `threadloom` uses for titles and ids.

        Sessions it misses follow, matched by the palette's own fuzzy matcher on "title · project ·
        id" with a subagent's task description as its title (find_sessions reads the first prompt).
        """
        from ..core.read.search import find_sessions

        conn = archive_conn(self.app)
        if conn is None or not query.strip():
            return
        matcher = self.matcher(query)
        by_id = {t.id: t for t in self.targets}
        found: set[str] = set()
        for match in find_sessions(conn, query, limit=SEARCHED):
            target = by_id.get(match.session_id)
            if target is None:  # ingested since the palette opened
                target = browse.JumpTarget(match.session_id, match.title, match.project or "", None, False)
            found.add(target.id)
            text = self._text(target)
            yield Hit(
                ENGINE_RANK + match.score,
                highlighted(matcher, text),
                self._jump(target.id),
                text=text,
                help=escape(f"jump to session · {match.agent} · {short_when(target.started_at)}"),
            )
        more = 0
        for target in self.targets:
            if target.id in found:
                continue
            text = self._text(target)
            score = matcher.match(text)
            if score > 0:
                more += 1
                yield Hit(
                    score,
                    highlighted(matcher, text),
                    self._jump(target.id),
                    text=text,
                    help=f"jump to session · {short_when(target.started_at)}",
                )
                if more >= SEARCHED:
                    return

    def _jump(self, session_id: str) -> Callable[[], object]:
        """What choosing a session does: the app shows it in the browser."""
        return partial(self.app.post_message, OpenSession(session_id, way_back=True))

    async def discover(self) -> Hits:
        if not self.list_recent:
            return
        for target in self.targets[:SHOWN]:
            text = self._text(target)
            yield DiscoveryHit(
                Content(text),  # a str prompt is read as markup
                self._jump(target.id),
                text=text,
                help=f"jump to session · {short_when(target.started_at)}",
            )


class RecentSessionsProvider(SessionJumpProvider):
    list_recent = True
