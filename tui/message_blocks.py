"""What a drawn message is (its lines, and the blocks in them the cursor can rest on) and what the
viewer that draws them offers the helpers it carries, so that find need not import the viewer."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..core.read.browse import MessageRow, ToolCall


@dataclass(slots=True)
class Block:
    """A run of lines inside a rendered message that the cursor can sit on (or not)."""

    kind: str  # text | thinking | summary | tool | image | event | gap
    start: int
    end: int
    target: bool
    key: str | None = None  # what Enter toggles
    call: ToolCall | None = None
    clipped: bool = False


@dataclass(slots=True)
class Rendered:
    strips: list[Strip]
    blocks: list[Block]


class SessionView(ScrollView):
    """The message viewer as find sees it: the open session, the cursor, the drawn messages and how
    to move among them. `MessageView` is the one; a widget's own means (notify, timers) come with it."""

    conn: sqlite3.Connection | None

    @property
    def session_id(self) -> str | None:
        raise NotImplementedError

    @property
    def seqs(self) -> Sequence[int]:
        raise NotImplementedError

    @property
    def cursor(self) -> tuple[int, int]:
        """(message position, block index) under the cursor."""
        raise NotImplementedError

    @cursor.setter
    def cursor(self, value: tuple[int, int]) -> None:
        raise NotImplementedError

    def current_row(self) -> MessageRow | None:
        raise NotImplementedError

    def current_block(self) -> Block | None:
        raise NotImplementedError

    def ensure(self, pos: int) -> Rendered:
        """The drawn lines of message `pos`."""
        raise NotImplementedError

    def go_to_seq(self, seq: int, *, mark: bool = True) -> None:
        raise NotImplementedError

    def open_block(self, pos: int, block: Block) -> None:
        raise NotImplementedError

    def show_line(self, pos: int, line: int) -> None:
        raise NotImplementedError

    def relayout(self) -> None:
        raise NotImplementedError
