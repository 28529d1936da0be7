"""What the message viewer shows and where, apart from how it is drawn: the messages of the open
session (or branch) and the rows read of them a page at a time, the cursor, what is expanded, the
text mode, the marked message, and each message's height with the prefix sum that places it.

Plain Python, no Textual (as `core.actions.fork_session.ForkSession` is to the fork picker): `MessageView`
(`threadloom.tui.messages`) draws it and turns keys into its steps. What the cursor can rest on
depends on how a message is drawn, so the steps that move it are given the drawn targets of a
message (`Targets`) rather than computing them.
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from ..core.read import browse
from ..core.read.browse import MessageRow

PAGE = 64  # message rows read from the archive at a time
DEFAULT_HEIGHT = 3  # the lines a message is taken to have before its row is read

# the blocks of message `pos` the cursor can rest on, by their index (drawing tells)
Targets = Callable[[int], list[int]]


@dataclass
class MessageState:
    """One session (or branch) in the viewer: what is shown, read, selected, expanded and where."""

    session_id: str | None = None
    seqs: Sequence[int] = ()  # the messages shown, by sequence number (a branch: some of them)
    rewinds: set[int] = field(default_factory=set)  # prompts where the user went back and asked again
    withdrawn: frozenset[int] = (
        frozenset()
    )  # messages an undo or a rewind took back (`browse.withdrawn_seqs`)
    tags: dict[int, list[str]] = field(default_factory=dict)  # the tags put on messages, by seq
    cursor: tuple[int, int] = (0, 0)  # (message position, block index)
    toggled: set[str] = field(default_factory=set)  # blocks opened (or, under expand_all, closed)
    expand_all: bool = False  # every tool call open
    markdown: bool = True  # text as rendered Markdown, or as written; kept from session to session
    found: int | None = None  # the position of the message a search opened, marked
    stick_end: bool = False  # the reader rests on the last message: a grown session is followed
    rows: dict[int, MessageRow] = field(default_factory=dict)  # by position, a page at a time
    pages: set[int] = field(default_factory=set)  # the pages read
    heights: list[int] = field(default_factory=list)  # lines per message, estimated until drawn
    exact: set[int] = field(default_factory=set)  # the positions whose height is drawn, not estimated
    offsets: list[int] = field(default_factory=lambda: [0])  # the first line of each message, and the end
    # a height changed since the offsets were computed: laid out again before the next paint
    stale: bool = False

    @property
    def count(self) -> int:
        return len(self.seqs)

    # ------------------------------------------------------------------ what is shown

    def open(self, session_id: str, seqs: Sequence[int], rewinds: set[int] | None = None) -> None:
        """Another session (or branch): nothing of the last one is kept but the text mode."""
        self.session_id, self.seqs = session_id, seqs
        self.rewinds = rewinds or set()
        self.withdrawn = frozenset()
        self.tags = {}
        self.heights = [DEFAULT_HEIGHT] * len(seqs)
        self.rows.clear()
        self.pages.clear()
        self.exact.clear()
        self.toggled.clear()
        self.expand_all = False
        self.stick_end = False
        self.found = None
        self.cursor = (0, 0)

    def clear(self) -> None:
        """Nothing shown (a placeholder instead)."""
        self.session_id, self.seqs, self.heights = None, (), []

    @property
    def at_end(self) -> bool:
        """The reader rests on the last message (or there is none): a grown session is followed."""
        return self.stick_end or not self.seqs or self.cursor[0] >= len(self.seqs) - 1

    def grow(self, seqs: Sequence[int]) -> range | None:
        """The session grew to `seqs` (or changed with as many messages): the new messages added,
        and the last page read forgotten (a message on it may have changed since: a tool call
        answered, a streamed reply continued). Returns the positions forgotten; None when `seqs`
        does not continue what is shown."""
        old = len(self.seqs)
        if len(seqs) < old or list(seqs[:old]) != list(self.seqs):
            return None
        last = (old - 1) // PAGE if old else 0
        self.pages.discard(last)
        forgotten = range(last * PAGE, old)
        for pos in forgotten:
            self.rows.pop(pos, None)
            self.exact.discard(pos)
            self.heights[pos] = DEFAULT_HEIGHT
        self.seqs = seqs
        self.heights.extend([DEFAULT_HEIGHT] * (len(seqs) - old))
        return forgotten

    def position_of_seq(self, seq: int) -> int:
        """The position of a message sequence number in this view (nearest at or after it)."""
        if isinstance(self.seqs, range):
            return max(0, min(len(self.seqs) - 1, seq - self.seqs.start))
        return min(len(self.seqs) - 1, bisect_left(self.seqs, seq))

    # ------------------------------------------------------------------ reading rows

    def needs_page(self, pos: int) -> bool:
        return pos not in self.rows and pos // PAGE not in self.pages

    def read_page(self, conn: sqlite3.Connection, page: int) -> range:
        """Read the rows of page `page` from the archive; returns its positions."""
        assert self.session_id is not None
        self.pages.add(page)
        a, b = page * PAGE, min(len(self.seqs), (page + 1) * PAGE)
        wanted = {self.seqs[i]: i for i in range(a, b)}
        for row in browse.message_page(conn, self.session_id, self.seqs[a], self.seqs[b - 1]):
            pos = wanted.get(row.seq)
            if pos is not None:
                self.rows[pos] = row
        return range(a, b)

    def read_positions(self) -> list[int]:
        """The positions of every page read (what a change of drawing estimates again)."""
        return [
            pos for page in self.pages for pos in range(page * PAGE, min(len(self.seqs), (page + 1) * PAGE))
        ]

    # ------------------------------------------------------------------ heights and positions

    def set_height(self, pos: int, height: int, *, exact: bool = False) -> None:
        """A message's height, estimated or (`exact`) as drawn; a change asks for a new layout."""
        self.stale = self.stale or self.heights[pos] != height
        self.heights[pos] = height
        if exact:
            self.exact.add(pos)

    def relayout(self) -> None:
        """The prefix sum of the heights: where each message starts."""
        self.offsets = list(accumulate(self.heights, initial=0))
        self.stale = False

    @property
    def lines(self) -> int:
        """The lines of every message, as laid out."""
        return self.offsets[-1]

    def index_at(self, line: int) -> int:
        """The message drawn at `line`."""
        pos = bisect_right(self.offsets, line) - 1
        return max(0, min(pos, len(self.heights) - 1))

    def anchor(self, top: int) -> tuple[int, int] | None:
        """The message at screen line `top` and how far into it: kept there by `anchored`."""
        if not self.seqs:
            return None
        pos = self.index_at(top)
        return pos, top - self.offsets[pos]

    def anchored(self, anchor: tuple[int, int] | None) -> int | None:
        """The scroll line that keeps `anchor` where it was, after a layout (None: none kept)."""
        if anchor is None or anchor[0] >= len(self.heights):
            return None
        pos, within = anchor
        return self.offsets[pos] + min(within, max(0, self.heights[pos] - 1))

    # ------------------------------------------------------------------ the cursor

    def find_target(self, pos: int, step: int, targets: Targets) -> int | None:
        """The nearest message from `pos` (in direction `step`) that has something to select."""
        while 0 <= pos < len(self.seqs):
            if targets(pos):
                return pos
            pos += step
        return None

    @staticmethod
    def first_target(pos: int, targets: Targets) -> int:
        found = targets(pos)
        return found[0] if found else 0

    def step(self, step: int, targets: Targets) -> tuple[int, int] | None:
        """Where the cursor goes one block down (`step` 1) or up (-1): the next block of this
        message it can rest on, else the first (last) of the next message that has one; None at
        the end (the start)."""
        pos, index = self.cursor
        here = targets(pos)
        further = [i for i in here if i > index] if step > 0 else [i for i in here if i < index]
        if further:
            return pos, further[0] if step > 0 else further[-1]
        nxt = self.find_target(pos + step, step, targets)
        if nxt is None:
            return None
        return nxt, self.first_target(nxt, targets) if step > 0 else targets(nxt)[-1]

    def start(self, at: int, targets: Targets) -> tuple[int, int]:
        """Where the cursor starts: the first block of the first message at or after position `at`
        that has something to select."""
        if not self.seqs:
            return 0, 0
        pos = self.find_target(min(max(at, 0), len(self.seqs) - 1), 1, targets) or 0
        return pos, self.first_target(pos, targets)

    # ------------------------------------------------------------------ expansion and text mode

    def is_expanded(self, key: str) -> bool:
        """A block open: tool calls follow expand_all unless toggled, the rest only when toggled."""
        if key.startswith("tool:"):
            return (key in self.toggled) != self.expand_all
        return key in self.toggled

    def toggle(self, key: str) -> None:
        self.toggled ^= {key}

    def toggle_all(self) -> bool:
        """Every tool call open, or every one closed (what was toggled of them forgotten); returns
        whether they are open now."""
        self.expand_all = not self.expand_all
        self.toggled = {k for k in self.toggled if not k.startswith("tool:")}
        return self.expand_all

    def toggle_markdown(self) -> bool:
        """Text as rendered Markdown, or as written; returns whether Markdown now."""
        self.markdown = not self.markdown
        return self.markdown
