"""Inside the open session: find (a bar at the bottom of the message pane), jumps between prompts and
to failed calls, and the compaction segment the cursor is in (on the pane's bottom border).

The viewer draws only what is on screen, so what matches is asked of the core over the whole
session's stored text (`core.read.find`); the marks are laid on the lines the viewer has drawn, whatever
the text was drawn as, so they follow the rendering rather than the raw text. `Navigator` holds the
state of one open session and is reached from `MessageView` through a few small hooks.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import Input, Static

from ..core.base.text import printable
from ..core.read import find
from ..core.read.browse import Segment as CompactionSegment
from ..core.read.find import Place
from . import workers
from .message_blocks import Block, Rendered, SessionView

DEBOUNCE = 0.12
MATCH_STYLE = Style(color="#1c1c1c", bgcolor="#d7af5f")
CURRENT_STYLE = Style(color="#1c1c1c", bgcolor="#ff8700", bold=True)
BLOCK_KEY_PREFIX = {"text": ("text:", "summary:"), "thinking": ("think:",)}
UNSEEN_HINT = "r shows the raw record"  # where a match the viewer does not draw can be read
MARKUP_KINDS = ("text", "output", "chip", "note")  # the blocks a user message's text is drawn in
FOLDED_KINDS = ("output", "chip")  # closed until opened: a `!` command's output, an IDE selection


def mark_matches(strip: Strip, needle: str, style: Style) -> Strip:
    """`strip` with every occurrence of `needle` (lower case) in its text drawn in `style`."""
    text = strip.text
    lower = text.lower()
    if len(lower) != len(text):  # a letter whose lower case is longer ("İ"): keep the columns
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    spans = []
    start = lower.find(needle)
    while start != -1:
        spans.append((start, start + len(needle)))
        start = lower.find(needle, start + len(needle))
    if not spans:
        return strip
    out: list[Segment] = []
    offset = 0
    for segment in strip:
        seg_text, seg_style, control = segment
        end = offset + len(seg_text)
        if control or not any(a < end and b > offset for a, b in spans):
            out.append(segment)
            offset = end
            continue
        cuts = sorted({offset, end, *(p for span in spans for p in span if offset < p < end)})
        for a, b in zip(cuts, cuts[1:], strict=False):
            inside = any(s <= a and b <= e for s, e in spans)
            piece = seg_text[a - offset : b - offset]
            out.append(
                Segment(
                    piece, (seg_style + style) if (inside and seg_style) else style if inside else seg_style
                )
            )
        offset = end
    return Strip(out, strip.cell_length)


class FoundInSession(Message):
    """A find worker read the places that hold `query` in the session (None: the archive could not
    be read, found on the view's own connection instead); `serial` tells an older query's apart."""

    bubble = False  # the view that started the worker hands it to its navigator

    def __init__(self, serial: int, session_id: str, query: str, places: list[Place] | None) -> None:
        super().__init__()
        self.serial, self.session_id, self.query, self.places = serial, session_id, query, places


class FindBar(Horizontal):
    """The query, typed; how many places hold it and which one the cursor is on."""

    DEFAULT_CSS = """
    FindBar {
        dock: bottom;
        height: 1;
        background: $panel;
    }
    FindBar > #find-label { width: auto; padding: 0 1; color: $accent; text-style: bold; }
    FindBar > Input, FindBar > Input:focus {
        width: 1fr; height: 1; border: none; padding: 0 1; background: $boost;
    }
    FindBar > #find-count { width: auto; min-width: 12; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("down,shift+enter", "step(1)", "Next match", show=False, id="find.next"),
        Binding("up", "step(-1)", "Previous match", show=False, id="find.previous"),
        Binding("escape", "close", "Close find", id="find.close", tooltip="Close find and clear the marks"),
    ]

    def __init__(self, navigator: Navigator) -> None:
        super().__init__(id="find-bar")
        self.navigator = navigator

    def compose(self) -> ComposeResult:
        yield Static("Find", id="find-label")
        yield Input(
            placeholder="in this session · Enter finds, then n next · N previous · Esc closes",
            id="find-input",
        )
        yield Static("", id="find-count")

    @on(Input.Changed, "#find-input")
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        self.navigator.typed(event.value)

    @on(Input.Submitted, "#find-input")
    def _submitted(self, event: Input.Submitted) -> None:
        """To the next match, and back to the messages (the bar stays): n and N go on, as in less.
        A miss keeps the keys in the bar, to type another."""
        event.stop()
        self.navigator.step(1)
        if self.navigator.places:
            self.navigator.view.focus()

    def action_step(self, step: int) -> None:
        self.navigator.step(step)

    def action_close(self) -> None:
        self.navigator.close()

    def show_count(self, text: Text) -> None:
        self.query_one("#find-count", Static).update(text)


def _same_messages(a: tuple[str | None, object, int], b: tuple[str | None, object, int]) -> bool:
    """The same session, showing the very seqs it showed (a session that grew or changed is shown
    with seqs read again), as many of them."""
    return a[0] == b[0] and a[1] is b[1] and a[2] == b[2]


class Navigator:
    """Find, jumps and the segment footer for the session a `MessageView` shows."""

    def __init__(self, view: SessionView) -> None:
        self.view = view
        self.bar: FindBar | None = None
        self.query = ""  # what is found (the bar may hold more, typed since)
        self.last = ""  # the last query that found something, for n and N once the bar is closed
        self.needle = ""
        self.places: list[Place] = []
        self.index: int | None = None  # the place the cursor was last taken to
        # the place taken to holds the query past what its block draws (an output's first lines)
        self.unseen = False
        self._seqs: set[int] | None = None  # a branch: only its messages
        self._prompts: list[int] | None = None
        self._failures: list[Place] | None = None
        self._segments: list[CompactionSegment] = []
        self._segments_of: str | None = None  # the session they were read (or are being read) for
        self._segment: int | None = None
        self._facts = ""  # the footer's text after the segment: messages, tokens, model
        self._debounce: Timer | None = None
        self._serial = 0  # of the latest query: an older one's answer is dropped
        # what `places` was found among (the view's messages then) and, once the bar closes, the
        # last query's places with it: n finds them again without reading the session on the UI
        # thread (~100 ms for a common word at 20,000 messages) while the messages are the same
        self._found_among: tuple[str | None, object, int] | None = None
        self._last_found: tuple[str, tuple[str | None, object, int], list[Place]] | None = None

    # ------------------------------------------------------------------ the session

    def reset(self) -> None:
        """Another session (or branch) is shown: forget what was found and read about the last."""
        self.close(focus=False)
        self._seqs = None if isinstance(self.view.seqs, range) else set(self.view.seqs)
        self._prompts = self._failures = None
        self._segments, self._segments_of, self._segment = [], None, None

    @property
    def is_open(self) -> bool:
        return self.bar is not None

    @property
    def reserved(self) -> int:
        """Lines the bar covers at the bottom of the pane."""
        return 1 if self.bar is not None else 0

    def _messages_now(self) -> tuple[str | None, object, int]:
        """The messages the view shows (its session, the branch's or whole session's seqs, how
        many): places found among them stand while these do."""
        view = self.view
        return (view.session_id, view.seqs, len(view.seqs))

    def _shown(self, places: list[Place]) -> list[Place]:
        seqs, count = self._seqs, len(self.view.seqs)
        return [p for p in places if (p.seq in seqs if seqs is not None else p.seq < count)]

    # ------------------------------------------------------------------ find

    async def open(self, *, focus: bool = True) -> None:
        """Show the bar (or go back to it) with what it holds selected, so typing replaces it.
        Awaited: the keys typed right after the one that opened it go to the bar."""
        view = self.view
        if view.session_id is None:
            return
        if self.bar is None:
            self.bar = FindBar(self)
            await view.mount(self.bar)
            view.relayout()
        if focus:
            field = self.bar.query_one(Input)
            field.focus()
            field.select_all()

    async def again(self, step: int) -> None:
        """n or N: the next (1) or previous (-1) match; with the bar closed, the last query's from
        the cursor, the bar shown again (as n in less and vim goes on after the prompt is gone)."""
        if self.bar is not None or not self.last:
            self.step(step)
            return
        query = self.last
        await self.open(focus=False)
        if self.bar is None:
            return
        self.query = query  # typed() sees the bar's value is what is found: no search of its own
        self.bar.query_one(Input).value = query
        found = self._last_found
        if found is not None and found[0] == query and _same_messages(found[1], self._messages_now()):
            self._show_found(query, found[2], land=False)  # the same messages: the same places
        else:
            self.search(query, land=False)
        if not self.places:
            return
        row = self.view.current_row()
        here = row.seq if row is not None else 0
        seqs = [p.seq for p in self.places]
        # the match before the one to go to: n goes past the message under the cursor, N before it
        self.index = bisect_right(seqs, here) - 1 if step > 0 else bisect_left(seqs, here)
        self.step(step)

    def close(self, *, focus: bool = True) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        self._serial += 1
        bar, self.bar = self.bar, None
        if self.places:
            self.last = self.query
            among = self._found_among
            self._last_found = (self.query, among, self.places) if among is not None else None
        self.query, self.needle, self.places, self.index = "", "", [], None
        if bar is not None:
            had_focus = bar.has_focus_within
            bar.remove()
            self.view.relayout()
            if focus and had_focus:
                self.view.focus()
        self.view.refresh()

    def typed(self, value: str) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        self._serial += 1  # whatever is being found for an older query is not shown
        if value == self.query:
            return  # what is found already (the bar shown again by n)
        self._debounce = self.view.set_timer(DEBOUNCE, lambda: self.search_in_thread(value))

    def search_in_thread(self, query: str) -> None:
        """Find `query` in a thread with a connection of its own (a common word in a 20,000-message
        session takes ~100 ms, which typing should not wait for); the newest query's answer is shown."""
        view = self.view
        db_path = getattr(view.app, "db_path", None)
        if db_path is None or view.session_id is None or not query.strip():
            self.search(query)
            return
        self._serial += 1
        serial, session_id = self._serial, view.session_id
        workers.read(
            view,
            workers.FIND,
            db_path,
            lambda conn: FoundInSession(
                serial, session_id, query, find.find_in_session(conn, session_id, query)
            ),
            lambda why: FoundInSession(serial, session_id, query, None),
        )

    def found(self, event: FoundInSession) -> None:
        """A find worker's answer (the view hands it on): shown when it is for the latest query."""
        if event.serial != self._serial or event.session_id != self.view.session_id or self.bar is None:
            return  # typed on since, or another session opened, or the bar closed
        if event.places is None:
            self.search(event.query)
        else:
            self._show_found(event.query, event.places)

    def search(self, query: str, *, land: bool = True) -> None:
        """Find `query` in the whole session now, on the view's connection (the cursor taken to
        the first match at or after it when `land`)."""
        view = self.view
        if view.conn is None or view.session_id is None:
            return
        self._serial += 1
        self._show_found(
            query,
            find.find_in_session(view.conn, view.session_id, query) if query.strip() else [],
            land=land,
        )

    def _show_found(self, query: str, places: list[Place], *, land: bool = True) -> None:
        """The places found for `query`: counted, marked, and the cursor on the first at or after it."""
        view = self.view
        self.query, self.needle = query, query.lower()
        self.places = self._shown(places)
        self._found_among = self._messages_now()
        self.index, self.unseen = None, False
        if self.places and land:
            row = view.current_row()
            here = row.seq if row is not None else 0
            seqs = [p.seq for p in self.places]
            self._go(min(bisect_left(seqs, here), len(self.places) - 1))
        self._show_count()
        view.refresh()

    @property
    def settled(self) -> bool:
        """What the bar holds is what was found (no search pending): for tests."""
        return self.bar is None or self.bar.query_one(Input).value == self.query

    def step(self, step: int) -> None:
        """To the next (1) or previous (-1) place holding the query, round the session's ends."""
        if self.bar is not None and self.bar.query_one(Input).value != self.query:
            self.search(self.bar.query_one(Input).value)  # Enter before the pause: find it now
            if step > 0:
                return
        if not self.query:
            self.view.notify("Ctrl+F finds in this session", timeout=3)
            return
        if not self.places:
            self.view.notify(f"No match for {printable(self.query)!r} in this session", timeout=3)
            return
        index = self.index if self.index is not None else (-1 if step > 0 else 0)
        self._go((index + step) % len(self.places))
        self._show_count()

    def _show_count(self) -> None:
        if self.bar is None:
            return
        if not self.query.strip():
            text = Text("")
        elif not self.places:
            text = Text("no matches", style="#d75f5f")
        else:
            text = Text(f"{(self.index or 0) + 1:,} of {len(self.places):,}")
            if self.unseen:
                text.append(f" · past the lines shown: {UNSEEN_HINT}", style="#d7af5f")
        self.bar.show_count(text)

    def _go(self, index: int) -> None:
        self.index = index
        place = self.places[index]
        self._land(place, open_it=place.part != "text" or None)

    def open_place(self, place: Place) -> bool:
        """The cursor on `place`'s block, opened; False when this view does not show its message
        (a branch without it)."""
        if not self._shown([place]):
            return False
        self._land(place, open_it=True)
        return True

    def _land(self, place: Place, *, open_it: bool | None) -> None:
        """The cursor on `place`'s block, opened when `open_it` (None: when its match is hidden),
        with the first line that holds the query on screen (`unseen` when none does)."""
        self.unseen = False
        view = self.view
        view.go_to_seq(place.seq, mark=False)
        pos = view.cursor[0]
        rendered = view.ensure(pos)
        index = _block_of(rendered, place)
        if place.part == "text" and self.needle:
            # Claude Code's markup draws one text as several blocks (a `!` command and its output,
            # a command and its note, chips): the one showing the match, else one hiding it
            parts = [i for i, b in enumerate(rendered.blocks) if b.target and b.kind in MARKUP_KINDS]
            showing = [i for i in parts if self._first_line(rendered, rendered.blocks[i]) is not None]
            clipped = [index] if index is not None and rendered.blocks[index].clipped else []
            hiding = clipped or [i for i in parts if rendered.blocks[i].kind in FOLDED_KINDS]
            if showing or hiding:
                index = (showing or hiding)[0]
        if index is None:
            return
        view.cursor = (pos, index)
        block = rendered.blocks[index]
        if open_it is None:
            hidden = block.clipped or block.kind in FOLDED_KINDS
            open_it = hidden and self._first_line(rendered, block) is None
        if open_it:
            view.open_block(pos, block)
            rendered = view.ensure(pos)
            block = rendered.blocks[index]
        line = self._first_line(rendered, block)
        # opened and still not drawn: in the part of a long output or text the viewer leaves out
        self.unseen = bool(self.needle) and line is None
        view.show_line(pos, block.start if line is None else line)

    def _first_line(self, rendered: Rendered, block: Block) -> int | None:
        if not self.needle:
            return None
        for i in range(block.start, block.end):
            if self.needle in rendered.strips[i].text.lower():
                return i
        return None

    def mark(self, strip: Strip, pos: int, line: int, rendered: Rendered) -> Strip:
        """A drawn line with the query's occurrences marked; brighter on the place the cursor is on."""
        if not self.needle:
            return strip
        style = MATCH_STYLE
        if (
            self.index is not None
            and pos == self.view.cursor[0]
            and self.view.cursor[1] < len(rendered.blocks)
        ):
            block = rendered.blocks[self.view.cursor[1]]
            if block.start <= line < block.end:
                style = CURRENT_STYLE
        return mark_matches(strip, self.needle, style)

    # ------------------------------------------------------------------ jumps

    def jump_prompt(self, step: int) -> None:
        """To the next (1) or previous (-1) prompt the user typed."""
        view = self.view
        if view.conn is None or view.session_id is None:
            return
        if self._prompts is None:
            shown = self._shown([Place(s, 0, "text") for s in find.prompt_seqs(view.conn, view.session_id)])
            self._prompts = [p.seq for p in shown]
        row = view.current_row()
        here = row.seq if row is not None else 0
        if step > 0:
            at = bisect_right(self._prompts, here)
            target = self._prompts[at] if at < len(self._prompts) else None
        else:
            at = bisect_left(self._prompts, here)
            target = self._prompts[at - 1] if at > 0 else None
        if target is None:
            view.notify("No later prompt" if step > 0 else "No earlier prompt", timeout=2)
            return
        view.go_to_seq(target, mark=False)

    def next_failure(self) -> None:
        """To the next tool call that failed, opened on its output."""
        view = self.view
        if view.conn is None or view.session_id is None:
            return
        if self._failures is None:
            self._failures = self._shown(find.failed_calls(view.conn, view.session_id))
        row, block = view.current_row(), view.current_block()
        here = row.seq if row is not None else -1
        on_call = block.call.id if block is not None and block.call is not None else None
        for place in self._failures:
            if place.seq < here or (
                place.seq == here and (on_call is None or not _after(view, place, on_call))
            ):
                continue
            self._land(place, open_it=True)
            return
        if self._failures:
            view.notify("No failed tool call after this point", timeout=2)
            return
        below = find.subagents_failed_calls(view.conn, view.session_id)
        view.notify(
            f"No tool call failed here; {below:,} failed in its subagents (the ⚙ sessions under it)"
            if below
            else "No tool call failed here",
            timeout=3,
        )

    # ------------------------------------------------------------------ the segment footer

    def set_facts(self, facts: str) -> None:
        """The footer's own text (messages, tokens, model): the segment goes before it."""
        self._facts = facts
        self._segment = None
        self._prompts = self._failures = None  # opened, or grown: read them again when asked
        self.cursor_moved()

    def _read_segments(self, session_id: str) -> None:
        view = self.view
        if view.conn is None or view.session_id != session_id or not view.seqs:
            return  # another session was opened meanwhile: it reads its own
        self._segments = find.session_segments(view.conn, session_id, view.seqs[-1] + 1)
        if self._segments:
            self._segment = None
            self.cursor_moved()

    def cursor_moved(self) -> None:
        """The footer names the compaction segment the cursor is in (compacted sessions only)."""
        view = self.view
        if view.conn is None or view.session_id is None or not view.seqs:
            return
        if self._segments_of != view.session_id:
            # read once the frame is painted: the records of a compacted 20,000-message session
            # take 15 ms (more when not in the page cache), which opening it need not wait for
            self._segments, self._segments_of = [], view.session_id
            view.call_after_refresh(self._read_segments, view.session_id)
        number = 0
        if self._segments:
            seq = view.seqs[min(view.cursor[0], len(view.seqs) - 1)]
            starts = [s.start_seq for s in self._segments]
            number = max(1, bisect_right(starts, seq))
        if number == self._segment:
            return
        self._segment = number
        self.show_facts()

    def show_facts(self) -> None:
        """The segment and the facts under the pane, whole ones only: its border cut what was too
        long where it ended ("$0.0…"); the last give way (the model, the cost, …)."""
        number = self._segment
        prefix = f"segment {number} of {len(self._segments)} · " if number else ""
        parts = (prefix + self._facts).split(" · ")
        room = self.view.outer_size.width - 6  # the corners, a line and a space on each side
        while len(parts) > 1 and room > 0 and len(" · ".join(parts)) > room:
            parts.pop()
        self.view.border_subtitle = Text(" · ".join(parts))  # a model name is the log's, never markup


def _block_of(rendered: Rendered, place: Place) -> int | None:
    """The index of the block that shows `place` in its message's rendering."""
    for index, block in enumerate(rendered.blocks):
        if not block.target:
            continue
        if place.part == "tool":
            shows = block.call is not None and block.call.id == place.call_id
        else:
            shows = (block.key or "").startswith(BLOCK_KEY_PREFIX[place.part]) or (
                place.part == "text" and block.kind == "event"
            )
        if shows:
            return index
    return None


def _after(view: SessionView, place: Place, call_id: str) -> bool:
    """In the message under the cursor: is `place`'s call drawn after the call `call_id`?"""
    blocks = view.ensure(view.cursor[0]).blocks
    order = [b.call.id for b in blocks if b.call is not None]
    return place.call_id in order and call_id in order and order.index(place.call_id) > order.index(call_id)
