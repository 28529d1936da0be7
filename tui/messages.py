"""The message viewer: a Line-API ScrollView that renders only the messages on screen.

A session of 20,000 messages must open at once (PERF.md: a widget per message takes seconds per
thousand). So the view keeps one height per message, estimated until the message is first drawn,
and a prefix sum of those heights; `render_line` finds the message under a line by bisection and
returns a strip from a small cache of rendered messages. Message rows are read from SQLite a page
at a time, only when a page comes into view or the cursor reaches it. When a message's real
height replaces its estimate, the message at the top of the screen stays where it was.

This widget is the view's keys, scrolling, cursor and Line API: what is shown and where is a
`MessageState` (`tui.message_state`), and how one message is drawn a `MessageDrawer`
(`tui.message_draw`), both plain Python.
"""

from __future__ import annotations

import re
import sqlite3
from collections import OrderedDict
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip

from ..core.adapters import spawned, tool_group
from ..core.adapters.base import ImageRef
from ..core.base import markup
from ..core.base.text import one_line, printable
from ..core.insight import memory
from ..core.read import browse, images
from ..core.read.browse import MessageRow
from ..core.read.calls import call_params
from ..core.read.side_files import PersistedOutput
from . import images as tui_images
from . import render, workers
from .find import FoundInSession, Navigator
from .images import Cells
from .message_blocks import Block, Rendered, SessionView
from .message_draw import Canvas, MessageDrawer, PictureKey, picture_cells
from .message_state import PAGE, MessageState

CACHE_SIZE = 600


class MessageView(SessionView, can_focus=True):
    """Messages of one session or branch; tool calls, thinking and long text expand in place."""

    BINDINGS = [
        Binding("down,j", "cursor_down", "Down", show=False, id="messages.down"),
        Binding("up,k", "cursor_up", "Up", show=False, id="messages.up"),
        Binding("pagedown,space", "page_down", "Page down", show=False, id="messages.page-down"),
        Binding("pageup,ctrl+b", "page_up", "Page up", show=False, id="messages.page-up"),
        Binding("home,g", "first", "First", show=False, id="messages.first"),
        Binding("end,G", "last", "Last", show=False, id="messages.last"),
        Binding(
            "enter",
            "activate",
            "Open",
            id="messages.activate",
            tooltip="Expand the tool call, thinking or text under the cursor; open a subagent (choose one of several)",
        ),
        Binding("right,l", "expand", "Expand", show=False, id="messages.expand"),
        Binding("left,h", "collapse", "Collapse", show=False, id="messages.collapse"),
        Binding(
            "e",
            "toggle_all",
            "Expand all",
            id="messages.expand-all",
            tooltip="Expand or collapse every tool call",
        ),
        Binding("r", "raw", "Raw JSON", id="messages.raw", tooltip="The stored record, byte for byte"),
        Binding(
            "v",
            "earlier_version",
            "Earlier version",
            show=False,
            id="messages.earlier-version",
            tooltip="A session whose files were rewritten: as it read before each rewrite, then as it is",
        ),
        Binding(
            "m",
            "markdown",
            "Markdown",
            show=False,
            id="messages.markdown",
            tooltip="Show text as rendered Markdown or as written",
        ),
        Binding(
            "y",
            "copy",
            "Copy",
            show=False,
            id="messages.copy",
            tooltip="Copy the text or tool call under the cursor",
        ),
        Binding(
            "o",
            "open_image",
            "Open image or output",
            show=False,
            id="messages.open-image",
            tooltip="Open the image under the cursor in the system's image viewer, or the whole output of "
            "the tool call under it (one its agent saved to a file)",
        ),
        Binding(
            "w",
            "save_image",
            "Save image",
            show=False,
            id="messages.save-image",
            tooltip="Save the image under the cursor in the current folder (never over a file)",
        ),
        Binding(
            "ctrl+f",
            "find",
            "Find",
            show=False,  # the footer is full at 80 columns: F1 and the palette show it
            id="messages.find",
            tooltip="Find in this session (Enter finds, then n next, N previous; Esc closes)",
        ),
        Binding(
            "a",
            "screen.note_message",
            "Note",
            show=False,
            id="messages.note",
            tooltip="Annotate: a note on the message under the cursor (n is the next match); note:WORD finds it",
        ),
        Binding("n", "find_step(1)", "Next match", show=False, id="messages.find-next"),
        Binding("N", "find_step(-1)", "Previous match", show=False, id="messages.find-previous"),
        Binding("escape", "close_find", "Close find", show=False, id="messages.find-close"),
        Binding("right_curly_bracket", "prompt(1)", "Next prompt", show=False, id="messages.next-prompt"),
        Binding(
            "left_curly_bracket", "prompt(-1)", "Previous prompt", show=False, id="messages.previous-prompt"
        ),
        Binding(
            "exclamation_mark",
            "next_failure",
            "Next failure",
            show=False,
            id="messages.next-failure",
            tooltip="The next tool call that failed, opened",
        ),
        Binding(
            "L",
            "similar",
            "Similar turns",
            show=False,
            id="messages.similar",
            tooltip="The turns of other sessions most like this one: have I solved this before?",
        ),
        Binding(
            "c",
            "files_changed",
            "Files changed",
            show=False,
            id="messages.files-changed",
            tooltip="Files this session and its subagents changed, and their calls",
        ),
        Binding("ctrl+pageup", "page_left", "Page left", show=False, id="messages.page-left"),
        Binding("ctrl+pagedown", "page_right", "Page right", show=False, id="messages.page-right"),
    ]
    COMPONENT_CLASSES = {
        "message-view--cursor",
        "message-view--gutter",
        "message-view--found",
        "message-view--found-gutter",
    }
    DEFAULT_CSS = """
    MessageView > .message-view--cursor { background: $boost; }
    MessageView:focus > .message-view--cursor { background: $primary 22%; }
    MessageView > .message-view--gutter { color: $accent; }
    MessageView > .message-view--found { background: $warning 10%; }
    MessageView > .message-view--found-gutter { color: $warning; }
    """

    class SubagentRequested(Message):
        """Enter on a Task/Agent call: the app opens the subagent it spawned."""

        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id

    class SubagentsRequested(Message):
        """Enter on a call that started several subagents at once (a swarm): the app offers them."""

        def __init__(self, session_id: str, call_id: str, title: str) -> None:
            super().__init__()
            self.session_id, self.call_id, self.title = session_id, call_id, title

    class OutputRequested(Message):
        """`o` on a tool call whose whole output the agent saved to a side file: show all of it."""

        def __init__(self, output: PersistedOutput, tool: str) -> None:
            super().__init__()
            self.output, self.tool = output, tool

    class RawRequested(Message):
        def __init__(self, entry_id: int) -> None:
            super().__init__()
            self.entry_id = entry_id

    class FilesChangedRequested(Message):
        """`c`: the app shows the files the open session changed."""

    class SimilarRequested(Message):
        """`L`: the app lists the turns of other sessions most like the one under the cursor."""

        def __init__(self, entry_id: int, label: str) -> None:
            super().__init__()
            self.entry_id, self.label = entry_id, label

    class EarlierVersionRequested(Message):
        """`v`: the browser shows the open session as it read before a rewrite of its files."""

    class PictureDrawn(Message):
        """An image worker decoded and scaled the picture of `key` (its cells, or why not)."""

        bubble = False  # for the view that started the worker

        def __init__(self, key: PictureKey, picture: Cells | str) -> None:
            super().__init__()
            self.key, self.picture = key, picture

    class ImageOpened(Message):
        """The image was handed to the system's viewer (`path`), or why it could not be (`error`)."""

        bubble = False

        def __init__(self, path: Path | None, error: str | None) -> None:
            super().__init__()
            self.path, self.error = path, error

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        # what is shown, read, selected and expanded, and where (tui/message_state.py), and how
        # one message is drawn (tui/message_draw.py); the rest of this widget is keeping the
        # drawn messages, scrolling them, and what keys do to them
        self.state = MessageState()
        self.drawer = MessageDrawer(self.state, self.row, draw_later=self._draw_later)
        self._picture_rows = 0  # the lines an image may take in the pane as last drawn
        self.cache: OrderedDict[int, Rendered] = OrderedDict()  # drawn messages, by position
        self.navigator = Navigator(self)  # find, jumps and the segment footer (tui/find.py)
        self._width = 0
        self._frame: tuple[int, Style] | None = None  # the width and style of the lines being painted
        self._ahead = 0  # the direction of the last page key: the next page is drawn ahead
        self.placeholder = "Select a session to read it."

    # ------------------------------------------------------------------ the state, as others read it

    @property
    def conn(self) -> sqlite3.Connection | None:
        """The connection the view reads through: the drawer's, so that there is one."""
        return self.drawer.conn

    @conn.setter
    def conn(self, value: sqlite3.Connection | None) -> None:
        self.drawer.conn = value

    @property
    def session_id(self) -> str | None:
        return self.state.session_id

    @property
    def seqs(self) -> Sequence[int]:
        return self.state.seqs

    @property
    def count(self) -> int:
        return self.state.count

    @property
    def cursor(self) -> tuple[int, int]:
        """(message position, block index) under the cursor."""
        return self.state.cursor

    @cursor.setter
    def cursor(self, value: tuple[int, int]) -> None:
        self.state.cursor = value
        self.navigator.cursor_moved()

    @property
    def rewinds(self) -> set[int]:
        return self.state.rewinds

    @rewinds.setter
    def rewinds(self, value: set[int]) -> None:
        self.state.rewinds = value

    @property
    def withdrawn(self) -> frozenset[int]:
        return self.state.withdrawn

    @withdrawn.setter
    def withdrawn(self, value: frozenset[int]) -> None:
        """Marked anew: an undo or a rewind came while the session is followed. The messages whose
        mark changed, and those after them (a run's line sits above its first), are drawn again."""
        changed = self.state.withdrawn ^ value
        self.state.withdrawn = value
        if not changed or not self.state.seqs:
            return
        anchor = self._anchor()
        for seq in changed | {seq + 1 for seq in changed}:
            pos = self.state.position_of_seq(seq)
            self.cache.pop(pos, None)
            self.state.exact.discard(pos)
        self._relayout(anchor)
        self.refresh()

    @property
    def found(self) -> int | None:
        """The position of the message a search opened, marked."""
        return self.state.found

    @property
    def markdown(self) -> bool:
        return self.state.markdown

    @markdown.setter
    def markdown(self, value: bool) -> None:
        self.state.markdown = value

    def is_expanded(self, key: str) -> bool:
        return self.state.is_expanded(key)

    def position_of_seq(self, seq: int) -> int:
        """The position of a message sequence number in this view (nearest at or after it)."""
        return self.state.position_of_seq(seq)

    def index_at(self, line: int) -> int:
        return self.state.index_at(line)

    # ------------------------------------------------------------------ loading

    @property
    def is_container(self) -> bool:
        """A container only while the find bar is docked in it (the lines are this widget's own)."""
        return bool(self.children)

    @property
    def scrollable_content_region(self) -> Region:
        """The lines the messages are drawn in: above the find bar, when it is open."""
        region = super().scrollable_content_region
        reserved = self.navigator.reserved
        return region._replace(height=max(0, region.height - reserved)) if reserved else region

    def set_facts(self, facts: str) -> None:
        """The pane's footer: `facts` (size, tokens, model), after the compaction segment the cursor is in."""
        self.navigator.set_facts(facts)

    def relayout(self) -> None:
        """Lay the lines out again, the message at the top of the screen kept there."""
        self._relayout(self._anchor())
        self.refresh()

    def show(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        seqs: Sequence[int],
        *,
        at: int = 0,
        rewinds: set[int] | None = None,
    ) -> None:
        """Open a session (all of it, or the positions `seqs` of a branch), with `at` under the cursor.

        `rewinds` are the sequence numbers of prompts where the user went back and asked again;
        a divider marks them so an abandoned branch is not read as part of the later one. What an
        undo or a rewind took back is marked as withdrawn (`browse.withdrawn_seqs`).
        """
        self.conn = conn
        self.state.open(session_id, seqs, rewinds)
        self.state.withdrawn = browse.withdrawn_seqs(conn, session_id)
        self.state.tags = memory.message_tags(conn, session_id)
        self.navigator.reset()
        self.cache.clear()
        self.drawer.new_session()
        self._relayout(None)
        self.set_scroll(0, 0)
        self.scroll_target_y = 0
        self.cursor = (0, 0)
        if seqs:
            self.cursor = self.state.start(at, self._targets)
            if at:
                self._scroll_to_cursor(top=True)
        self.refresh()

    def reload_tags(self) -> None:
        """A tag was put on (or taken off) a message: the headers whose tags changed drawn again."""
        if self.conn is None or self.state.session_id is None:
            return
        old, new = self.state.tags, memory.message_tags(self.conn, self.state.session_id)
        changed = {seq for seq in old.keys() | new.keys() if old.get(seq) != new.get(seq)}
        self.state.tags = new
        for pos in [p for p in self.cache if (row := self.row(p)) is not None and row.seq in changed]:
            del self.cache[pos]
        self.refresh()

    def extend(self, seqs: Sequence[int]) -> bool:
        """The open session grew (its agent wrote more): show the new messages, keeping what is on
        screen where it is; a reader resting on the last message follows to the new end.
        False when `seqs` does not continue what is shown (the caller opens it afresh)."""
        at_end, anchor = self.state.at_end, self._anchor()
        forgotten = self.state.grow(seqs)
        if forgotten is None:
            return False
        for pos in forgotten:  # read again: drawn again
            self.cache.pop(pos, None)
        self._relayout(anchor)
        if at_end:
            self.action_last()
        self.refresh()
        return True

    def clear(self, placeholder: str = "Select a session to read it.") -> None:
        self.placeholder = placeholder
        self.state.clear()
        self.cache.clear()
        self._relayout(None)
        self.refresh()

    def go_to_seq(self, seq: int, *, mark: bool = True) -> None:
        """Put the cursor on message `seq`, with a quarter of the screen of what came before above it.

        With `mark` the message keeps a marker (a search hit) until another session is shown.
        """
        if not self.seqs:
            return
        state = self.state
        start = state.position_of_seq(seq)
        pos = state.find_target(start, 1, self._targets)
        if pos is None:
            pos = state.find_target(start, -1, self._targets)
        if pos is None:
            return
        state.found = pos if mark else None
        self.cursor = (pos, state.first_target(pos, self._targets))
        state.stick_end = False
        height = self.scrollable_content_region.height or self.size.height or 20
        context = max(1, height // 4)
        lines, above = 0, pos
        while above > 0 and lines < context:  # exact heights above, so the offsets below are exact
            above -= 1
            lines += len(self.ensure(above).strips)
        self.ensure(pos)
        self._relayout(None)
        y = max(0, min(state.offsets[pos] - context, state.lines - height))
        y = min(y, state.offsets[pos])
        self.set_scroll(None, y)
        self.scroll_target_y = y
        self.refresh()

    def row(self, pos: int) -> MessageRow | None:
        """Message `pos`'s row, its page read first when it was not (their heights estimated)."""
        state = self.state
        if state.needs_page(pos):
            assert self.conn is not None
            for read in state.read_page(self.conn, pos // PAGE):
                if read not in state.exact:
                    state.set_height(read, self._estimate(read))
        return state.rows.get(pos)

    # ------------------------------------------------------------------ layout

    def _body_width(self, region: Region | None = None) -> int:
        region = region or self.scrollable_content_region
        return max(20, region.width or self.size.width or 80)

    def on_resize(self) -> None:
        self._relayout(self._anchor())
        self.navigator.show_facts()  # fitted to the new width

    def _relayout(self, anchor: tuple[int, int] | None) -> None:
        """Recompute line offsets; keep the message `anchor[0]` at its screen line `anchor[1]`."""
        state = self.state
        state.relayout()
        width = self._body_width()
        # the find bar covers the last line: one more to scroll, so the end is never under it
        self._set_virtual_size(Size(width, state.lines + self.navigator.reserved if state.seqs else 0))
        y = state.anchored(anchor)
        if y is not None and y != round(self.scroll_y):
            self.set_scroll(None, y)
            self.scroll_target_y = y

    def _set_virtual_size(self, size: Size) -> None:
        """The scrollable size changes as estimated heights become exact. The view's own size does
        not depend on it, so only the scrollbars are updated: a screen layout (what assigning
        `virtual_size` asks for) re-rendered every widget on screen after each page of messages."""
        if size == self.virtual_size:
            return
        scroll_update = getattr(self, "_scroll_update", None)  # Textual's own no-layout path
        if scroll_update is None:
            self.virtual_size = size
            return
        self.set_reactive(MessageView.virtual_size, size)
        scroll_update(size)

    def _anchor(self) -> tuple[int, int] | None:
        """The message at the top of the screen, and how far into it (kept there by `_relayout`)."""
        return self.state.anchor(round(self.scroll_y))

    def _estimate(self, pos: int) -> int:
        """A message's height before it is drawn (at the pane's width now)."""
        return self.drawer.estimate(pos, self._body_width())

    def ensure(self, pos: int) -> Rendered:
        """The rendered lines of a message; its height becomes exact."""
        region = self.scrollable_content_region  # once: asked for each message on screen each frame
        width = self._body_width(region)
        state = self.state
        if width != self._width:
            self._width = width
            self.cache.clear()
            state.exact.clear()
        rows = self._image_rows(region)
        if rows != self._picture_rows:  # a taller or shorter pane: images are drawn again to fit
            self._picture_rows = rows
            for drawn in [p for p, r in self.cache.items() if any(b.kind == "image" for b in r.blocks)]:
                del self.cache[drawn]
        rendered = self.cache.get(pos)
        if rendered is not None:
            self.cache.move_to_end(pos)
            return rendered
        rendered = self.drawer.draw(pos, Canvas(self.app.console, width, rows, self.styles.background))
        self.cache[pos] = rendered
        if len(self.cache) > CACHE_SIZE:
            self.cache.popitem(last=False)
        state.set_height(pos, len(rendered.strips), exact=True)
        return rendered

    def _prepare(self) -> None:
        """Draw the messages on screen so their heights are exact before the frame is painted."""
        state = self.state
        if not state.seqs:
            return
        height = self.scrollable_content_region.height or self.size.height
        for _ in range(4):
            anchor = self._anchor()
            assert anchor is not None
            if state.stick_end:
                pos = len(state.seqs) - 1
                lines = 0
                while pos >= 0 and lines < height:
                    lines += len(self.ensure(pos).strips)
                    pos -= 1
            else:
                pos, line = anchor[0], state.offsets[anchor[0]]
                top = round(self.scroll_y)
                while pos < len(state.seqs) and line < top + height:
                    line += len(self.ensure(pos).strips)
                    pos += 1
            # stale, not a comparison with the heights before this pass: heights that became exact
            # before it (a page read, a message drawn ahead) need the layout too
            if not state.stale and len(state.offsets) == len(state.heights) + 1:
                break
            self._relayout(None if state.stick_end else anchor)
        if state.stick_end:
            end = max(0, state.lines - height)
            if round(self.scroll_y) != end:
                self.set_scroll(None, end)
                self.scroll_target_y = end

    # ------------------------------------------------------------------ pictures

    def _image_rows(self, region: Region) -> int:
        return tui_images.rows_for(region.height or self.size.height)

    def _draw_later(
        self, key: PictureKey, data: bytes, box: tuple[int, int], background: tuple[int, int, int]
    ) -> None:
        """A picture the drawer measured, decoded and scaled in an image worker."""
        workers.start(self, workers.IMAGE, partial(self._draw_picture, key, data, box, background))

    def _draw_picture(
        self, key: PictureKey, data: bytes, box: tuple[int, int], background: tuple[int, int, int]
    ) -> None:
        """In an image worker: the picture decoded and scaled, posted back as `PictureDrawn`."""
        self.post_message(self.PictureDrawn(key, picture_cells(data, box, background)))

    def on_message_view_picture_drawn(self, event: PictureDrawn) -> None:
        """A drawn image replaces its blank lines: the messages showing it are drawn again."""
        block_key = self.drawer.picture_drawn(event.key, event.picture)
        for pos in [p for p, r in self.cache.items() if any(b.key == block_key for b in r.blocks)]:
            del self.cache[pos]
        self.refresh()

    def render_lines(self, crop: Region) -> list[Strip]:
        self._prepare()
        # asked once a frame, not once a line: each walks up the DOM, most of what a line cost
        self._frame = self._line_frame()
        try:
            lines = super().render_lines(crop)
        finally:
            self._frame = None
        if self._ahead:
            self.call_later(self._render_ahead, self._ahead)
            self._ahead = 0
        return lines

    def _line_frame(self) -> tuple[int, Style]:
        """The width the lines are cut to and the style under them."""
        return self.scrollable_content_region.width or self.size.width, self.rich_style

    def render_line(self, y: int) -> Strip:
        width, base = self._frame or self._line_frame()
        state = self.state
        if not state.seqs:
            if y == 1:
                return Strip([Segment("  " + self.placeholder, base + Style(dim=True))]).extend_cell_length(
                    width, base
                )
            return Strip.blank(width, base)
        scroll_x, scroll_y = self.scroll_offset
        line = scroll_y + y
        if line >= state.lines:
            return Strip.blank(width, base)
        pos = state.index_at(line)
        rendered = self.cache.get(pos) or self.ensure(pos)
        i = line - state.offsets[pos]
        if i >= len(rendered.strips):
            return Strip.blank(width, base)
        strip = rendered.strips[i]
        if self.navigator.needle:
            strip = self.navigator.mark(strip, pos, i, rendered)
        if pos == state.found:
            mark = self.get_component_rich_style("message-view--found-gutter")
            strip = Strip.join([Strip([Segment("▎", mark)], 1), strip.crop(1)])
            strip = strip.apply_style(self.get_component_rich_style("message-view--found"))
        if pos == state.cursor[0] and state.cursor[1] < len(rendered.blocks):
            block = rendered.blocks[state.cursor[1]]
            if block.start <= i < block.end:
                gutter = self.get_component_rich_style("message-view--gutter")
                strip = Strip.join([Strip([Segment("▌", gutter)], 1), strip.crop(1)])
                strip = strip.apply_style(self.get_component_rich_style("message-view--cursor"))
        return strip.crop_extend(scroll_x, scroll_x + width, base).apply_style(base)

    # ------------------------------------------------------------------ cursor

    def _targets(self, pos: int) -> list[int]:
        """The blocks of message `pos` the cursor can rest on (drawn first: drawing decides)."""
        return [i for i, b in enumerate(self.ensure(pos).blocks) if b.target]

    def current_block(self) -> Block | None:
        if not self.seqs:
            return None
        blocks = self.ensure(self.cursor[0]).blocks
        return blocks[self.cursor[1]] if self.cursor[1] < len(blocks) else None

    def current_row(self) -> MessageRow | None:
        return self.row(self.cursor[0]) if self.seqs else None

    def _move_to(self, pos: int, block: int, *, top: bool = False) -> None:
        anchor = self._anchor()
        self.ensure(pos)
        self._relayout(anchor)
        self.cursor = (pos, block)
        self.state.stick_end = False
        self._scroll_to_cursor(top=top)
        self.refresh()

    def _scroll_to_cursor(self, *, top: bool = False) -> None:
        pos, index = self.cursor
        rendered = self.ensure(pos)
        self._relayout(self._anchor())
        if index >= len(rendered.blocks):
            return
        block = rendered.blocks[index]
        height = self.scrollable_content_region.height or self.size.height
        offsets = self.state.offsets
        start = offsets[pos] + block.start
        end = offsets[pos] + block.end
        y = round(self.scroll_y)
        if top:
            y = offsets[pos]
        elif start < y:
            y = start
        elif end > y + height:
            y = min(start, end - height)
        if y != round(self.scroll_y):
            self.set_scroll(None, y)
            self.scroll_target_y = y

    def action_cursor_down(self) -> None:
        if not self.seqs:
            return
        to = self.state.step(1, self._targets)
        if to is not None:
            self._move_to(*to)
        else:
            self.scroll_end(animate=False)

    def action_cursor_up(self) -> None:
        if not self.seqs:
            return
        to = self.state.step(-1, self._targets)
        if to is not None:
            self._move_to(*to)
        else:
            self.set_scroll(None, 0)
            self.scroll_target_y = 0
            self.refresh()

    def _page(self, direction: int) -> None:
        if not self.seqs:
            return
        state = self.state
        height = self.scrollable_content_region.height or self.size.height
        max_y = max(0, state.lines - height)
        y = max(0, min(max_y, round(self.scroll_y) + direction * max(1, height - 2)))
        self.set_scroll(None, y)
        self.scroll_target_y = y
        state.stick_end = False
        self._prepare()
        pos = state.find_target(state.index_at(y), 1, self._targets)
        if pos is None:
            pos = state.find_target(state.index_at(y), -1, self._targets)
        if pos is not None:
            self.cursor = (pos, state.first_target(pos, self._targets))
        self.refresh()
        self._ahead = direction  # render_lines draws the next page once this one is painted

    def _render_ahead(self, direction: int) -> None:
        """Once a page is painted, draw the next one in the same direction, so paging on costs
        a paint rather than rendering a screenful of messages first (~8 ms of the ~25)."""
        if not self.seqs:
            return
        height = self.scrollable_content_region.height or self.size.height
        top = round(self.scroll_y)
        start, end = (top + height, top + 2 * height) if direction > 0 else (max(0, top - height), top)
        anchor, state = self._anchor(), self.state
        pos, changed = state.index_at(start), False
        while pos < len(state.seqs) and state.offsets[pos] < end:
            changed |= pos not in state.exact
            self.ensure(pos)
            pos += 1
        if changed:
            self._relayout(anchor)  # the messages on screen keep their place

    def action_page_down(self) -> None:
        self._page(1)

    def action_page_up(self) -> None:
        self._page(-1)

    def action_first(self) -> None:
        if self.seqs:
            self._move_to(*self.state.start(0, self._targets), top=True)

    def action_last(self) -> None:
        if not self.seqs:
            return
        pos = self.state.find_target(len(self.seqs) - 1, -1, self._targets)
        if pos is None:
            return
        self.cursor = (pos, self._targets(pos)[-1])
        self.state.stick_end = True
        self._prepare()
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        if not self.seqs:
            return
        line = round(self.scroll_y) + event.y
        if line >= self.state.lines:
            return
        pos = self.state.index_at(line)
        rendered = self.ensure(pos)
        i = line - self.state.offsets[pos]
        for index, block in enumerate(rendered.blocks):
            if block.target and block.start <= i < block.end:
                if self.cursor == (pos, index):
                    self.action_activate()
                else:
                    self.cursor = (pos, index)
                    self.refresh()
                return

    # ------------------------------------------------------------------ actions

    def _toggle(self, block: Block, value: bool | None = None) -> None:
        if block.key is None:
            return
        if block.kind == "text" and not block.clipped and block.key not in self.state.toggled:
            return
        current = self.state.is_expanded(block.key)
        if value is not None and value == current:
            return
        self.state.toggle(block.key)
        self._rerender(self.cursor[0])

    def _rerender(self, pos: int) -> None:
        anchor = self._anchor()
        self.cache.pop(pos, None)
        self.state.exact.discard(pos)
        self.ensure(pos)
        self._relayout(anchor)
        self._scroll_to_cursor()
        self.refresh()

    def open_block(self, pos: int, block: Block) -> None:
        """Expand a collapsed block of message `pos` (find landing on what it hides)."""
        if block.key is None or self.state.is_expanded(block.key):
            return
        if block.kind == "text" and not block.clipped:
            return
        anchor = self._anchor()
        self.state.toggle(block.key)
        self.cache.pop(pos, None)
        self.state.exact.discard(pos)
        self.ensure(pos)
        self._relayout(anchor)
        self.refresh()

    def show_line(self, pos: int, line: int) -> None:
        """Scroll so that line `line` of message `pos` is on screen (a third of the way down when
        it was not)."""
        self._relayout(self._anchor())
        y = self.state.offsets[pos] + line
        height = self.scrollable_content_region.height or self.size.height
        top = round(self.scroll_y)
        if not top <= y < top + height:
            top = max(0, min(y - height // 3, self.state.lines + self.navigator.reserved - height))
            self.set_scroll(None, top)
            self.scroll_target_y = top
        self.refresh()

    def on_found_in_session(self, event: FoundInSession) -> None:
        self.navigator.found(event)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "close_find":
            return self.navigator.is_open  # else Esc is the app's (back, cancel)
        return True

    async def action_find(self) -> None:
        await self.navigator.open()

    async def action_find_step(self, step: int) -> None:
        await self.navigator.again(step)

    def action_close_find(self) -> None:
        self.navigator.close()

    def action_prompt(self, step: int) -> None:
        self.navigator.jump_prompt(step)

    def action_next_failure(self) -> None:
        self.navigator.next_failure()

    def action_activate(self) -> None:
        block = self.current_block()
        if block is None:
            return
        call = block.call
        if call is not None and tool_group(call.agent, call.name) == "spawn" and call.child_session_id:
            if call.subagent_count > 1 and self.session_id is not None:  # a swarm's: which one
                spawn = spawned(call.agent, call.name, call_params(call))
                title = f"{call.name} · {spawn.description}" if spawn and spawn.description else call.name
                self.post_message(self.SubagentsRequested(self.session_id, call.id, title))
            else:
                self.post_message(self.SubagentRequested(call.child_session_id))
            return
        self._toggle(block)

    def action_expand(self) -> None:
        block = self.current_block()
        if block is not None:
            self._toggle(block, True)

    def action_collapse(self) -> None:
        block = self.current_block()
        if block is not None:
            self._toggle(block, False)

    def action_toggle_all(self) -> None:
        if not self.seqs:
            return
        expanded = self.state.toggle_all()
        self._redraw_all()
        self.notify("All tool calls expanded" if expanded else "All tool calls collapsed", timeout=2)

    def action_markdown(self) -> None:
        """Text as rendered Markdown or as written: every message is drawn again (those on screen
        now, the rest as they come into view), the one at the top of the screen kept in place."""
        markdown = self.state.toggle_markdown()
        self._redraw_all()
        self.notify("Text rendered as Markdown" if markdown else "Text shown as written", timeout=2)

    def _redraw_all(self) -> None:
        """Forget every drawn message (a setting that changes them all changed): heights go back
        to estimates, the message at the top of the screen stays where it is."""
        if not self.seqs:
            return
        anchor = self._anchor()
        self.cache.clear()
        self.state.exact.clear()
        for pos in self.state.read_positions():
            self.state.heights[pos] = self._estimate(pos)
        self._relayout(anchor)
        self._scroll_to_cursor()
        self.refresh()

    def action_raw(self) -> None:
        msg = self.current_row()
        if msg is not None:
            self.post_message(self.RawRequested(msg.entry_id))

    def action_earlier_version(self) -> None:
        if self.session_id is not None:
            self.post_message(self.EarlierVersionRequested())

    def action_similar(self) -> None:
        msg = self.current_row()
        if msg is None or self.session_id is None:
            return
        # which message, by its number and its first words ("#0" alone said little)
        words = one_line(printable(msg.content or msg.thinking or ""), 48)
        self.post_message(
            self.SimilarRequested(msg.entry_id, f"#{msg.seq} “{words}”" if words else f"#{msg.seq}")
        )

    def action_files_changed(self) -> None:
        if self.session_id is not None:
            self.post_message(self.FilesChangedRequested())

    def _output_here(self) -> tuple[PersistedOutput, str] | None:
        """The whole saved output of the tool call under the cursor, else of the message's first
        call that has one (with the tool's name)."""
        block, msg = self.current_block(), self.current_row()
        calls = [block.call] if block is not None and block.call is not None else []
        calls += msg.tool_calls if msg is not None else []
        for call in calls:
            whole = self.drawer.saved_output(call)
            if whole is not None:
                return whole, call.name
        return None

    def _image_here(
        self, nothing: str = "No image here"
    ) -> tuple[MessageRow, ImageRef, images.LoadedImage] | None:
        """The image under the cursor (else the message's first), read; None after saying why
        (`nothing`: there is none)."""
        block, msg = self.current_block(), self.current_row()
        if msg is None or not msg.images or self.conn is None:
            self.notify(nothing, timeout=3)
            return None
        index = int(block.key.rsplit(":", 1)[1]) if block and block.key and block.kind == "image" else None
        image = next((i for i in msg.images if i.index == index), msg.images[0])
        loaded = images.load(self.conn, msg.entry_id, image.index)
        if loaded.note is not None:
            self.notify(f"The image cannot be used: {loaded.note}", severity="warning")
            return None
        return msg, image, loaded

    def action_open_image(self) -> None:
        output = self._output_here()
        if output is not None:
            self.post_message(self.OutputRequested(*output))
            return
        block = self.current_block()
        call = block.call if block is not None else None
        # `o` opens a side file too: when there is none, the note says that as well as "no image"
        nothing = (
            f"Nothing to open here: no image, and no side file kept for this {call.name} call "
            "(its whole output, or a plan)"
            if call is not None
            else "Nothing to open here: no image, and no tool call under the cursor"
        )
        found = self._image_here(nothing)
        if found is not None:
            workers.start(self, workers.OPEN_IMAGE, partial(self._open_image, found[2]))

    def _open_image(self, image: images.LoadedImage) -> None:
        """In a worker: the opener is waited for a moment (it says only so whether a viewer ran)."""
        try:
            self.post_message(self.ImageOpened(images.open_image(image), None))
        except OSError as exc:
            self.post_message(self.ImageOpened(None, str(exc)))

    def on_message_view_image_opened(self, event: ImageOpened) -> None:
        if event.path is None:
            self.notify(
                f"Could not open the image: {event.error}. w saves it in the current folder",
                severity="error",
                timeout=8,
            )
        else:
            self.notify(f"Opened {event.path} in the image viewer", timeout=4)

    def action_save_image(self) -> None:
        found = self._image_here()
        if found is None:
            return
        msg, image, loaded = found
        session = re.sub(r"[^A-Za-z0-9]+", "-", self.session_id or "session")[-12:].strip("-")
        try:
            path = images.save_image(loaded, Path.cwd(), f"image-{session}-{msg.seq}-{image.index + 1}")
        except OSError as exc:
            self.notify(f"Could not save the image: {exc}", severity="error")
            return
        self.notify(f"Saved {path}", timeout=6)

    def action_copy(self) -> None:
        block, msg = self.current_block(), self.current_row()
        if block is None or msg is None:
            return
        if block.call is not None:
            text = f"{block.call.name} {block.call.params_json or ''}\n{render.result_text(block.call)}"
        elif block.kind == "thinking":
            text = msg.thinking or ""
        elif block.kind == "hook":
            run = next((r for i, r in enumerate(msg.hooks) if block.key == f"hook:{r.entry_id}:{i}"), None)
            text = "\n".join(filter(None, (run.command, run.message, run.stdout, run.stderr))) if run else ""
        elif block.kind == "output":  # what the `!` command printed, as it printed it
            outs = [p for p in render.user_parts(msg) if isinstance(p, markup.ShellOutput)]
            text = "\n".join(o.stdout + o.stderr for o in outs)
        elif render.user_parts(msg):  # Claude Code's markup as what it stands for (`/model opus`)
            text = markup.plain(msg.content)
        else:
            text = msg.content or ""
        self.app.copy_to_clipboard(text)
        self.notify(f"Copied {len(text):,} characters", timeout=2)
