"""How the message viewer draws one message: its lines at a width, and the blocks in them the cursor
can rest on (`Rendered`), from the message's row, what is expanded and the text mode (`MessageState`).

No App: `MessageView` (`threadloom.tui.messages`) keeps the drawn messages, lays them out, scrolls
them and turns keys into steps; `MessageDrawer` turns a message into lines, as `tui.fork_widgets`
draws what `tui.fork` runs. A console and a width are all it needs to draw (`Canvas`), so tests draw
messages without a terminal. What a message shows beyond its row (a tool's structured result, the
output an agent saved to a side file, an image) is read here through core's API, once per call or
image; a picture is measured here and decoded in a thread the viewer starts (`DrawLater`), its
lines blank until then, so the message keeps its height when it arrives.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.padding import Padding
from rich.segment import Segment
from rich.text import Text
from textual.color import Color
from textual.strip import Strip

from ..core.adapters import tool_group
from ..core.adapters.base import ImageRef
from ..core.base import markup
from ..core.present.markdown import Markdown, segments
from ..core.present.render import rewind_line, starts_withdrawn, withdrawn_line
from ..core.read import browse, images
from ..core.read.browse import MessageRow, ToolCall
from ..core.read.calls import call_params, result_text
from ..core.read.side_files import (
    PERSISTED_NOTICE,
    PersistedOutput,
    persisted_output,
    session_plans,
)
from . import images as tui_images
from . import render
from .images import Cells
from .message_blocks import Block, Rendered
from .message_state import DEFAULT_HEIGHT, MessageState

TEXT_PREVIEW = 14  # the lines of a long text shown until it is opened
PICTURES = 48  # drawn images kept (by entry, index, width and height)

PictureKey = tuple[int, int, int, int]  # entry, image index, columns, rows
# starts decoding a picture (its key, bytes, cells and the background under it) off the UI thread
DrawLater = Callable[[PictureKey, bytes, tuple[int, int], tuple[int, int, int]], None]


@dataclass(frozen=True, slots=True)
class Canvas:
    """What a message is drawn onto: the console that renders it, the columns, the lines an image may
    take (a share of the pane's height) and the pane's background (under code and pictures)."""

    console: Console
    width: int
    image_rows: int = tui_images.MAX_ROWS
    background: Color = field(default_factory=lambda: Color(0, 0, 0))


def visible(msg: MessageRow) -> bool:
    """Whether the message draws anything: not a tool's result alone, nor an empty output of a
    local command (`<local-command-stdout></local-command-stdout>`, as `/clear` leaves)."""
    if msg.hooks or msg.thinking or msg.tool_calls or msg.images or msg.role == "system":
        return True
    if not msg.content:
        return False
    parts = render.user_parts(msg)
    return not (parts and all(isinstance(p, markup.CommandOutput) and not p.text.strip() for p in parts))


def under_call(msg: MessageRow) -> bool:
    """A record drawn under the call above it, without a header: a tool's result (with the hooks
    that ran after it, or a tool's image)."""
    if msg.role != "user" or msg.content or msg.thinking or msg.tool_calls:
        return False
    return all(i.place == "tool result" for i in msg.images)


def picture_cells(data: bytes, box: tuple[int, int], background: tuple[int, int, int]) -> Cells | str:
    """A picture decoded and scaled into `box` cells, or why not (the slow part: run in a thread)."""
    drawn = tui_images.draw(data, *box, background)
    return Cells(drawn) if isinstance(drawn, list) else drawn


class MessageDrawer:
    """Draws the messages of the session `state` holds. `row` gives a message's row by position
    (the viewer's reads its page first); `draw_later` decodes a picture off the UI thread (without
    one, pictures stay blank). `conn` is the connection drawing reads through, set by the viewer."""

    def __init__(
        self,
        state: MessageState,
        row: Callable[[int], MessageRow | None],
        *,
        draw_later: DrawLater | None = None,
    ) -> None:
        self.state = state
        self.row = row
        self.draw_later = draw_later
        self.conn: sqlite3.Connection | None = None
        self.pictures: OrderedDict[PictureKey, Cells | str] = OrderedDict()
        self._extras: dict[str, Any] = {}
        self._saved: dict[str, PersistedOutput | None] = {}

    def new_session(self) -> None:
        """Another session: what was read for the last one's calls is forgotten (pictures are kept,
        by record)."""
        self._extras.clear()
        self._saved.clear()

    # ------------------------------------------------------------------ heights

    def estimate(self, pos: int, width: int) -> int:
        """A message's height before it is drawn, from its row (read or not), at `width` columns."""
        msg = self.state.rows.get(pos)
        if msg is None:
            return DEFAULT_HEIGHT
        if not visible(msg):
            return 0
        note = markup.is_note(render.user_parts(msg))
        height = (0 if self.continues(pos) or note else 2) + 2 * (msg.seq in self.state.rewinds)
        height += 2 * starts_withdrawn(msg.seq, self.state.withdrawn)
        if msg.content and msg.role != "system" and not msg.is_compact_summary:
            text_width = max(20, width - 6)
            lines = sum(1 + len(part) // text_width for part in msg.content.split("\n"))
            height += min(lines, 1 if note else TEXT_PREVIEW)
        height += bool(msg.thinking) + len(msg.tool_calls) + len(msg.images) + msg.is_compact_summary
        return max(height + len(msg.hooks), 1)

    def continues(self, pos: int) -> bool:
        """Another line of an API response whose header an earlier line of it has drawn: no new
        header. A response can open on lines that draw nothing (an empty thinking block, which
        Claude Opus 4.7 writes first on most messages): its first line drawn has the header, or
        its text would read as part of the message above."""
        msg = self.state.rows.get(pos)
        if msg is None or not msg.message_id:
            return False
        before = pos - 1
        while before >= 0:
            prev = self.row(before)
            if prev is None:
                return False
            if prev.message_id != msg.message_id:
                # a tool's result between two calls of one message (Claude Code 2.1 writes each
                # call's result before the message's next call) draws no header: look past it
                if prev.message_id is None and under_call(prev):
                    before -= 1
                    continue
                return False
            if visible(prev):
                return True
            before -= 1
        return False

    # ------------------------------------------------------------------ drawing

    def draw(self, pos: int, canvas: Canvas) -> Rendered:
        """Message `pos` drawn onto `canvas`: its header, text, thinking, images, tool calls and
        hooks, each block closed or open as the state says."""
        msg = self.row(pos)
        if msg is None or not visible(msg):
            return Rendered([], [])
        drawing = _Drawing(canvas)
        width, toggled = canvas.width, self.state.toggled
        withdrawn = msg.seq in self.state.withdrawn
        if msg.role == "system" or msg.entry_type == "system":
            drawing.add("gap", Text(""), indent=0, target=False)
            self._withdrawn_from(drawing, msg)
            drawing.add("event", render.event_line(msg), indent=2)
            return drawing.rendered()
        # a record holding only a tool's image (a Read of a screenshot) reads as part of the call
        # above it: no "user" header of its own
        result_only = bool(msg.images) and not (msg.content or msg.thinking or msg.tool_calls)
        result_only = result_only and all(i.place == "tool result" for i in msg.images)
        parts = render.user_parts(msg)
        if markup.is_note(parts):  # output or a caveat: under the command it answers, no turn of its own
            if any(isinstance(p, markup.Caveat) for p in parts):
                drawing.add("gap", Text(""), indent=0, target=False)
            self._hooks(drawing, msg, before=True)
            self._draw_parts(drawing, msg, parts, None)
            self._hooks(drawing, msg, before=False)
            return drawing.rendered()
        # a record with nothing but hooks after it (a tool's result): its hooks, under the call
        result_only = result_only or not (msg.content or msg.thinking or msg.tool_calls or msg.images)
        continues = self.continues(pos) or result_only
        if not continues:
            drawing.add("gap", Text(""), indent=0, target=False)
        self._hooks(drawing, msg, before=True)  # the session's first hooks, before its first message
        if msg.seq in self.state.rewinds:
            drawing.add("rewind", rewind_line(), indent=2, target=False)
            drawing.add("gap", Text(""), indent=0, target=False)
        self._withdrawn_from(drawing, msg)
        if msg.is_compact_summary:
            key = f"summary:{msg.entry_id}"
            drawing.add("summary", render.summary_line(msg, key in toggled), indent=2, key=key)
            return drawing.rendered()
        tags = self.state.tags.get(msg.seq, [])
        head = None if continues else render.header(msg, tags, withdrawn=withdrawn)
        if continues and tags:  # a record drawn under its response's header: its own tags' line
            drawing.add("tags", render.tags_text(tags), indent=4, target=False)
        if msg.content and any(not isinstance(p, markup.Typed) for p in parts):
            head = self._draw_parts(drawing, msg, parts, head)
        elif msg.content:
            key = f"text:{msg.entry_id}"
            clip = 0 if key in toggled else TEXT_PREVIEW
            body = render.message_text(msg, markdown=self.state.markdown, preview=clip or None)
            if head is not None:
                drawing.add("text", (head, body), indent=2, key=key, clip=clip and clip + 1)
                head = None
            else:
                drawing.add("text", body, indent=4, key=key, clip=clip)
        if head is not None:
            drawing.add("text", head, indent=2)
        if msg.thinking:
            key = f"think:{msg.entry_id}"
            drawing.add("thinking", render.thinking_line(msg, key in toggled), indent=4, key=key)
        for image in msg.images:
            picture = self._picture(msg.entry_id, image, width - 6, canvas)
            key = f"image:{msg.entry_id}:{image.index}"
            if isinstance(picture, str):
                drawing.add("image", render.image_line(image, picture), indent=4, key=key)
            else:
                drawing.add("image", (render.image_line(image), picture), indent=4, key=key)
        for call in msg.tool_calls:
            self._draw_call(drawing, call, canvas)
        self._hooks(drawing, msg, before=False)
        return drawing.rendered()

    def _withdrawn_from(self, drawing: _Drawing, msg: MessageRow) -> None:
        """The line above a run of messages an undo or a rewind took back, on its first."""
        if starts_withdrawn(msg.seq, self.state.withdrawn):
            drawing.add("withdrawn", withdrawn_line(), indent=2, target=False)
            drawing.add("gap", Text(""), indent=0, target=False)

    def _draw_call(self, drawing: _Drawing, call: ToolCall, canvas: Canvas) -> None:
        """A tool call's line; opened, its input and output (a checklist: what this write changed,
        the whole list when opened)."""
        key = f"tool:{call.id}"
        expanded = self.state.is_expanded(key)
        line = render.call_line(call, expanded, canvas.width - 5)  # its indent, and the last column
        items = markup.todos(call_params(call)) if tool_group(call.agent, call.name) == "todo" else None
        if items is not None:
            todo = render.todo_lines(items, markup.todo_before(self._extra(call)), expanded)
            drawing.add("tool", (line, Padding(todo, (0, 0, 0, 2))), indent=4, key=key, call=call)
        elif expanded:
            body = render.call_body(call, self._extra(call), canvas.background.hex, self.saved_output(call))
            drawing.add("tool", (line, Padding(body, (0, 0, 0, 2))), indent=4, key=key, call=call)
        else:
            drawing.add("tool", line, indent=4, key=key, call=call)

    def _hooks(self, drawing: _Drawing, msg: MessageRow, *, before: bool) -> None:
        """The hooks that ran before the message (`before`) or after it, one line each; those with
        more to show open with Enter."""
        for run in msg.hooks:
            if run.before != before:
                continue
            key = f"hook:{run.entry_id}:{msg.hooks.index(run)}" if render.hook_has_more(run) else None
            view = render.hook_view(run, key is not None and key in self.state.toggled, drawing.width - 5)
            drawing.add("hook", view, indent=4, key=key)

    def _draw_parts(
        self, drawing: _Drawing, msg: MessageRow, parts: list[markup.Part], head: Text | None
    ) -> Text | None:
        """A user message holding Claude Code's markup, part by part: IDE notes as chips, a slash
        command as typed, a `!` command and its output (closed, Enter opens it), a command's
        output as a quiet note, the words typed as text. The header (`head`) is drawn with the
        first part; returns it when no part took it."""
        toggled = self.state.toggled
        chips = [p for p in parts if isinstance(p, render.CHIP_PARTS)]
        drawn_chips = False
        for number, part in enumerate(parts):
            body: RenderableType
            kind, key, clip = "text", None, 0
            if isinstance(part, render.CHIP_PARTS):
                if drawn_chips:
                    continue
                drawn_chips = True
                has_lines = any(isinstance(c, markup.Selection) and c.text for c in chips)
                kind, key = "chip", f"chip:{msg.entry_id}" if has_lines else None
                body = render.chips_line(chips, key is not None and key in toggled)
            elif isinstance(part, markup.Command):
                body = render.command_line(part)
            elif isinstance(part, markup.Shell):
                body = render.shell_line(part)
            elif isinstance(part, markup.ShellOutput):
                kind, key = "output", None if part.empty else f"tool:out:{msg.entry_id}:{number}"
                body = render.shell_output(part, key is not None and self.state.is_expanded(key))
            elif isinstance(part, (markup.CommandOutput, markup.Caveat)):
                kind, body = "note", render.note_view(part)
                if isinstance(part, markup.CommandOutput) and not part.text.strip():
                    continue
            else:
                key = f"text:{msg.entry_id}"
                clip = 0 if key in toggled else TEXT_PREVIEW
                body = render.message_text(
                    msg, markdown=self.state.markdown, preview=clip or None, text=part.text
                )
            if head is not None:
                drawing.add(kind, (head, body), indent=2, key=key, clip=clip and clip + 1)
                head = None
            else:  # output and notes under what they answer; the rest in line with the text
                under = kind == "output" or (kind == "note" and not isinstance(part, markup.Caveat))
                drawing.add(kind, body, indent=4 if under else 2, key=key, clip=clip)
        return head

    # ------------------------------------------------------------------ what drawing reads

    def _picture(self, entry_id: int, image: ImageRef, columns: int, canvas: Canvas) -> Cells | str:
        """An image's drawn cells, or a note; drawn once per width and pane height. Its record is read and its
        header measured here (cheap); decoding and scaling run in a thread, and until they are
        done the image's lines are blank, so the message keeps its height when they arrive."""
        rows = canvas.image_rows
        key = (entry_id, image.index, columns, rows)
        found = self.pictures.get(key)
        if found is not None:
            self.pictures.move_to_end(key)
            return found
        loaded = images.load(self.conn, entry_id, image.index) if self.conn is not None else None
        if loaded is None or loaded.note is not None:
            picture: Cells | str = loaded.note if loaded and loaded.note else "not in the archive"
        else:
            box = tui_images.measure(loaded.data, columns, rows)
            if isinstance(box, str):
                picture = box
            else:
                picture = Cells([[Segment(" " * box[0])] for _ in range(box[1])])
                if self.draw_later is not None:
                    self.draw_later(key, loaded.data, box, canvas.background.rgb)
        self.pictures[key] = picture
        if len(self.pictures) > PICTURES:
            self.pictures.popitem(last=False)
        return picture

    def picture_drawn(self, key: PictureKey, picture: Cells | str) -> str:
        """A decoded picture replaces its blank cells; returns the key of the blocks showing it
        (the viewer draws those messages again)."""
        self.pictures[key] = picture
        return f"image:{key[0]}:{key[1]}"

    def saved_output(self, call: ToolCall) -> PersistedOutput | None:
        """What the agent saved to a side file for this call, when the archive kept it: its whole
        output, or for the call that ends a plan the session's plan (read once per call: only
        results holding the agent's notice, and plan calls, are looked up)."""
        session_id = self.state.session_id
        if self.conn is None or session_id is None:
            return None
        if tool_group(call.agent, call.name) == "plan":
            if call.id not in self._saved:
                plans = session_plans(self.conn, session_id)
                self._saved[call.id] = plans[-1] if plans else None
            return self._saved[call.id]
        if not call.result_json or PERSISTED_NOTICE not in call.result_json[:200]:
            return None
        if call.id not in self._saved:
            self._saved[call.id] = persisted_output(self.conn, result_text(call))
        return self._saved[call.id]

    def _extra(self, call: ToolCall) -> Any:
        """A tool's structured result (an edit's patch, a checklist before the write), read once."""
        if self.conn is None or tool_group(call.agent, call.name) not in ("edit", "write", "patch", "todo"):
            return None
        if call.id not in self._extras:
            self._extras[call.id] = browse.tool_result_extra(self.conn, call)
        return self._extras[call.id]


class _Drawing:
    """One message as it is drawn: its lines so far, and the blocks they form."""

    def __init__(self, canvas: Canvas) -> None:
        self.console = canvas.console
        self.width = width = canvas.width
        self.options = self.console.options.update(width=width, min_width=width, max_width=width, height=None)
        self.strips: list[Strip] = []
        self.blocks: list[Block] = []

    def add(
        self,
        kind: str,
        renderable: RenderableType | tuple[RenderableType, ...],
        *,
        indent: int,
        target: bool = True,
        key: str | None = None,
        call: ToolCall | None = None,
        clip: int = 0,
    ) -> None:
        """A block of `renderable`'s lines, `indent` cells in; past `clip` lines (when given) cut
        short with a note that Enter shows all."""
        lines = _lines(self.console, self.options, renderable, indent, clip)
        clipped = False
        if clip and len(lines) > clip:
            more = len(lines) - clip + 1
            lines = lines[: clip - 1]
            note = Text(f"… {more} more lines · Enter shows all", style="dim italic")
            lines += _lines(self.console, self.options, note, indent)
            clipped = True
        start = len(self.strips)
        self.strips.extend(Strip(line).extend_cell_length(self.width) for line in lines)
        self.blocks.append(Block(kind, start, len(self.strips), target, key, call, clipped))

    def rendered(self) -> Rendered:
        return Rendered(self.strips, self.blocks)


def _lines(
    console: Console,
    options: ConsoleOptions,
    renderable: RenderableType | tuple[RenderableType, ...],
    indent: int,
    limit: int = 0,
) -> list[list[Segment]]:
    """Rendered lines with `indent` cells on the left, of one part or of parts one below the
    other. Plain Text and Markdown take a fast path (most parts); Markdown's lines past `limit`
    (when given) are counted but not drawn."""
    if isinstance(renderable, tuple):
        lines: list[list[Segment]] = []
        for part in renderable:
            lines += _lines(console, options, part, indent, limit and max(1, limit - len(lines)))
        return lines
    pad = Segment(" " * indent)
    width = max(1, options.max_width - indent - 1)
    if isinstance(renderable, Text):
        return [[pad, *segments(line, console)] for line in renderable.wrap(console, width)]
    if isinstance(renderable, Cells):
        return [[pad, *line] for line in renderable.lines]
    if isinstance(renderable, Markdown):
        return [[pad, *line] if line else line for line in renderable.lines(console, width, limit or None)]
    return console.render_lines(Padding(renderable, (0, 1, 0, indent)), options, pad=False)
