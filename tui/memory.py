"""Memory in the TUI (core.insight.memory): `t` tags and `n` notes the session (or, in the viewer, `t` the
message) under the cursor, `b` bookmarks it, `B` lists the bookmarks, `M` shows the memory: the
knowledge entries by scope with each one's history, the tags, the newest notes. What agents wrote
over MCP shows here as what people wrote."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ..core.base.text import count_of, human_when, one_line, printable
from ..core.insight import memory


@dataclass(frozen=True)
class MemoryTarget:
    """What `t`, `n` and `b` act on: a session, or one of its messages (`seq`)."""

    session_id: str
    seq: int | None = None
    title: str = ""

    @property
    def label(self) -> str:
        where = f" · message #{self.seq}" if self.seq is not None else ""
        return f"{one_line(self.title, 50) or self.session_id[:13]}{where}"

    @property
    def ref(self) -> str:
        """As core.insight.memory.parse_target reads it."""
        return self.session_id if self.seq is None else f"{self.session_id}#{self.seq}"


class MarkScreen(ModalScreen[str | None]):
    """A line to type: tags (comma-separated) or a note. Dismissed with the text, or None."""

    DEFAULT_CSS = """
    MarkScreen { align: center middle; background: $background 60%; }
    #mark-box { width: 80; max-width: 95%; height: auto; border: round $accent; background: $surface; padding: 0 1; }
    #mark-now { color: $text-muted; }
    """
    BINDINGS = [Binding("escape", "dismiss_none", "Cancel", id="mark.cancel")]

    def __init__(self, kind: str, target: MemoryTarget, present: list[str]) -> None:
        super().__init__()
        self.kind = kind
        self.target = target
        self.present = present

    def compose(self) -> ComposeResult:
        with Vertical(id="mark-box") as box:
            # the session's title is the log's: plain text, never markup
            box.border_title = Text(f"{'Tag' if self.kind == 'tag' else 'Note on'} {self.target.label}")
            box.border_subtitle = "Enter saves · Esc cancels"
            now = (
                ", ".join(sorted(self.present))  # as the toast after saving lists them
                if self.kind == "tag"
                else count_of(len(self.present), "note") * bool(self.present)
            )
            yield Static(Text(f"now: {printable(now) or 'none'}"), id="mark-now")
            yield Input(
                placeholder="tags, comma-separated (flaky test, timezone)"
                if self.kind == "tag"
                else "a note (found by note:WORD in search)",
                id="mark-input",
            )

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class BookmarksScreen(ModalScreen[tuple[str, int | None] | None]):
    """The bookmarks, newest first; Enter opens one (its session, at its message)."""

    BINDINGS = [Binding("escape,q,B", "dismiss_none", "Close", id="bookmarks.close")]

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__()
        self.found = memory.marks(conn, kind="bookmark")
        ids = {m.session_id or m.target_id for m in self.found}
        self.titles = {sid: _title(conn, sid) for sid in ids}

    def compose(self) -> ComposeResult:
        options: list[Option | None] = []
        for i, mark in enumerate(self.found):
            sid = mark.session_id or mark.target_id
            row = Text(no_wrap=True, overflow="ellipsis")
            row.append(human_when(mark.created_at), style="dim")
            row.append(f"  {printable(one_line(self.titles.get(sid, ''), 60)) or sid[:13]}", style="bold")
            if mark.target_type != "session":
                row.append(f"  #{mark.target_id.rpartition('#')[2]}", style="#87afd7")
            if mark.value:
                row.append(f"  {printable(one_line(mark.value, 60))}")
            options.append(Option(row, id=str(i)))
        if not self.found:
            options.append(
                Option(
                    Text(
                        "No bookmarks yet: b bookmarks the session or message under the cursor.", style="dim"
                    ),
                    disabled=True,
                )
            )
        listing = OptionList(*options, id="bookmarks-list", markup=False)
        listing.border_title = f"Bookmarks · {len(self.found)}"
        listing.border_subtitle = "Enter opens · Esc closes"
        yield listing

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        mark = self.found[int(event.option.id or "0")]
        seq = int(mark.target_id.rpartition("#")[2]) if mark.target_type != "session" else None
        self.dismiss((mark.session_id or mark.target_id, seq))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


def _title(conn: sqlite3.Connection, session_id: str) -> str:
    from ..core.read.query import display_title, get_session

    found = get_session(conn, session_id)
    return display_title(found) if found is not None else ""


class MemoryScreen(ModalScreen[None]):
    """The knowledge entries by scope (global, projects, sessions), the one under the cursor with
    its history beside the list; then the tags and the newest notes."""

    DEFAULT_CSS = """
    MemoryScreen { align: center middle; background: $background 60%; }
    #memory-box { width: 95%; height: 90%; border: round $accent; background: $surface; }
    #memory-list { width: 1fr; height: 1fr; border: none; }
    #memory-detail { width: 1fr; height: 1fr; padding: 0 1; overflow-y: auto; }
    """
    BINDINGS = [Binding("escape,q,M", "dismiss_none", "Close", id="memory.close")]

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__()
        self.conn = conn
        self.entries = memory.list_entries(conn)
        self.tags = memory.tag_counts(conn)
        self.notes = memory.marks(conn, kind="note", limit=50)
        self.conflicts = memory.conflicts(conn)

    def compose(self) -> ComposeResult:
        options: list[Option | None] = []
        scope = None
        for i, entry in enumerate(self.entries):
            if entry.scope_label != scope:
                scope = entry.scope_label
                options.append(Option(Text(printable(scope), style="bold #d7af5f"), disabled=True))
            row = Text(no_wrap=True, overflow="ellipsis")
            row.append(f"  {entry.kind:<10}", style="#af87d7")
            row.append(printable(one_line(entry.title, 60)), style="bold")
            row.append(f"  v{entry.current.version if entry.current else 0}", style="dim")
            if entry.open_conflicts:
                row.append("  ⚠ conflict", style="bold #ff8787")
            options.append(Option(row, id=f"e{i}"))
        if not self.entries:
            options.append(
                Option(
                    Text("No entries yet: `threadloom memory add`, or an agent's remember.", style="dim"),
                    disabled=True,
                )
            )
        options.append(Option(Text(f"Tags · {len(self.tags)}", style="bold #d7af5f"), disabled=True))
        for tag, count in self.tags:
            options.append(Option(Text(f"  {printable(tag)}  {count}"), id=f"t:{tag}"))
        options.append(Option(Text(f"Notes · {len(self.notes)}", style="bold #d7af5f"), disabled=True))
        for i, note in enumerate(self.notes):
            options.append(
                Option(
                    Text(f"  {printable(one_line(note.value, 70))}", no_wrap=True, overflow="ellipsis"),
                    id=f"n{i}",
                )
            )
        with Horizontal(id="memory-box") as box:
            box.border_title = (
                f"Memory · {len(self.entries)} entr{'y' if len(self.entries) == 1 else 'ies'}"
                + (f" · {count_of(len(self.conflicts), 'open conflict')}" if self.conflicts else "")
            )
            box.border_subtitle = "↑↓ an entry shows its history · Esc closes"
            yield OptionList(*options, id="memory-list", markup=False)
            yield Static(id="memory-detail", markup=False)

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        listing.focus()
        listing.action_first()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self.query_one("#memory-detail", Static).update(self.detail(event.option.id or ""))

    def detail(self, option_id: str) -> Text:
        out = Text()
        if option_id.startswith("e"):
            entry, versions = memory.history(self.conn, self.entries[int(option_id[1:])].id)
            out.append(f"{entry.title}\n", style="bold")
            out.append(f"{entry.id} · {entry.kind} · {printable(entry.scope_label)}\n", style="dim")
            if entry.tags:
                out.append("tags: " + " ".join(entry.tags) + "\n", style="#87afd7")
            for v in reversed(versions):  # the newest first
                out.append(f"\nv{v.version}  {printable(v.author)}  {human_when(v.created_at)}", style="bold")
                if v.conflict:
                    out.append("  ⚠ conflict", style="bold #ff8787")
                out.append("\n")
                if v.reason:
                    out.append(f"why: {printable(v.reason)}\n", style="italic")
                out.append(printable(v.content) + "\n")
        elif option_id.startswith("t:"):
            tag = option_id[2:]
            out.append(f"tag {tag}\n", style="bold")
            for mark in memory.marks(self.conn, kind="tag", value=tag, limit=40):
                out.append(f"{mark.target_type} {mark.target_id}  {printable(mark.author)}\n")
            out.append(f"\nsearch tag:{tag} lists their records", style="dim")
        elif option_id.startswith("n"):
            note = self.notes[int(option_id[1:])]
            out.append(f"{note.target_type} {note.target_id}\n", style="dim")
            out.append(f"{printable(note.author)} · {human_when(note.created_at)}\n\n", style="dim")
            out.append(printable(note.value))
        return out

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
