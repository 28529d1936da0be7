"""Modal screens: help for the focused pane, a record's raw JSON, and the error dialog."""

from __future__ import annotations

from typing import Any

import orjson
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Static, TextArea

from ..core.base.text import drop_colours, printable

LONG_STRING = 400


HELP_IDS_WIDTH = 100  # terminal columns from which the help shows binding ids


class HelpScreen(ModalScreen[None]):
    """Every key of the focused pane (or a dialog's part), then the keys that work everywhere around
    it (after user remaps)."""

    BINDINGS = [Binding("escape,q,f1,question_mark", "dismiss", "Close", id="help.close")]

    def __init__(
        self,
        pane: str,
        pane_keys: list[tuple[str, str, str]],
        global_keys: list[tuple[str, str, str]],
        *,
        everywhere_title: str = "Everywhere",
    ) -> None:
        super().__init__()
        self.pane, self.pane_keys, self.global_keys = pane, pane_keys, global_keys
        self.everywhere_title = everywhere_title

    def compose(self) -> ComposeResult:
        # the ids (what keymap.toml remaps) only where there is room: on a narrow terminal they
        # squeezed the descriptions onto two lines and pushed "Everywhere" out of sight
        with_ids = self.app.size.width >= HELP_IDS_WIDTH
        with VerticalScroll(id="help-box") as box:
            box.border_title = f"Keys · {self.pane}"
            box.border_subtitle = "Esc closes" + (" · remap in keymap.toml by id" if with_ids else "")
            # one id column width for both tables, so their ids line up
            ids = (
                max((len(row[2]) for row in (*self.pane_keys, *self.global_keys)), default=0)
                if with_ids
                else 0
            )
            yield Static(_keys_table(self.pane, self.pane_keys, ids), classes="help-section")
            yield Static(_keys_table(self.everywhere_title, self.global_keys, ids), classes="help-section")

    def on_mount(self) -> None:
        self.call_after_refresh(self._say_if_it_scrolls)

    def _say_if_it_scrolls(self) -> None:
        box = self.query_one("#help-box", VerticalScroll)
        if box.max_scroll_y > 0:
            box.border_subtitle = f"↑↓ scrolls · {box.border_subtitle}"
        box.focus()


def key_rows(
    screen: Screen[Any], own: DOMNode | None, around: tuple[DOMNode, ...] = ()
) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(key, description, binding id) rows of `screen`'s active keys for `HelpScreen`: those of the
    widget `own`, then those of `around` (the screen itself when not given), after user remaps,
    each action once with all its keys."""
    around = around or (screen,)
    found: tuple[dict[tuple[str, str], list[str]], dict[tuple[str, str], list[str]]] = ({}, {})
    meta: dict[tuple[str, str], tuple[str, str]] = {}
    for key, active in screen.active_bindings.items():
        binding = active.binding
        target = found[0] if active.node is own else found[1] if active.node in around else None
        if target is None or _idle_sideways(active.node, binding.action):
            continue
        name = (binding.id or binding.action, binding.action)
        target.setdefault(name, []).append(screen.app.get_key_display(binding.with_key(key)))
        meta[name] = (binding.tooltip or binding.description, binding.id or "")
    own_rows, screen_rows = ([(", ".join(keys), *meta[k]) for k, keys in rows.items()] for rows in found)
    return own_rows, screen_rows


SIDEWAYS = frozenset({"scroll_left", "scroll_right", "page_left", "page_right"})


def _idle_sideways(node: DOMNode, action: str) -> bool:
    """A key that scrolls sideways a widget whose lines fit it (the lists fit their rows to the
    pane): it does nothing there, so help does not offer it."""
    return action in SIDEWAYS and getattr(node, "max_scroll_x", 1) == 0


def _keys_table(title: str, rows: list[tuple[str, str, str]], id_width: int) -> Table:
    """Key, description and (when `id_width`) the binding id that keymap.toml remaps."""
    table = Table(
        box=None,
        show_header=False,
        pad_edge=False,
        expand=True,
        title=Text(title, style="bold"),
        title_justify="left",
    )
    table.add_column("key", style="bold #d7af5f", no_wrap=True, width=16)
    table.add_column("what", ratio=1)  # the room left goes to the descriptions, the key column stays put
    if id_width:
        table.add_column("id", style="dim", no_wrap=True, width=id_width)
    for key, description, binding_id in rows:
        table.add_row(key, description, *([binding_id] if id_width else []))
    return table


class RawJsonScreen(ModalScreen[None]):
    """The stored record of a message, pretty-printed; `c` copies the exact original bytes."""

    BINDINGS = [
        Binding("escape,q,r", "dismiss", "Close", id="raw.close"),
        Binding("c", "copy", "Copy original", id="raw.copy"),
    ]

    def __init__(self, raw: bytes, title: str) -> None:
        super().__init__()
        self.raw = raw
        self.title_text = title

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="raw-box") as box:
            box.border_title = self.title_text
            box.border_subtitle = f"{len(self.raw):,} bytes · c copies the original · Esc closes"
            yield Static(id="raw-json")

    def on_mount(self) -> None:
        from .render import code

        try:
            value: Any = orjson.loads(self.raw)
            pretty = orjson.dumps(_shorten(value), option=orjson.OPT_INDENT_2).decode()
            # highlighted on the box's own background, known only once styled
            body: Any = code(pretty, "json", self.query_one("#raw-box").styles.background.hex)
        # not JSON; or nested deeper than orjson writes (a tool input 300 levels deep, which
        # crashed the app) or than `_shorten` recurses: the record as stored
        except (orjson.JSONDecodeError, orjson.JSONEncodeError, RecursionError):
            body = Text(self.raw.decode("utf-8", "replace"))
        self.query_one("#raw-json", Static).update(body)

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.raw.decode("utf-8", "replace"))
        self.notify(f"Copied the raw record ({len(self.raw):,} bytes)", timeout=2)


class OutputScreen(ModalScreen[None]):
    """A tool's whole output, kept from the file its agent saved it to (the transcript holds a
    preview); read-only, searchable line by line with the cursor, `c` copies it all."""

    BINDINGS = [
        Binding("escape,q,o", "dismiss", "Close", id="output.close"),
        Binding("c", "copy", "Copy all", id="output.copy"),
    ]

    def __init__(self, text: str, title: Text, subtitle: str) -> None:
        super().__init__()
        self.text, self.title_text, self.subtitle_text = text, title, subtitle

    def compose(self) -> ComposeResult:
        # a tool's output reaches the screen with its escape sequences and controls made harmless
        shown = printable(drop_colours(self.text.replace("\r\n", "\n")))
        area = TextArea(shown, read_only=True, soft_wrap=False, show_line_numbers=True, id="output-box")
        area.border_title = self.title_text
        area.border_subtitle = f"{self.subtitle_text} · c copies it · Esc closes"
        yield area

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.notify(f"Copied the output ({len(self.text):,} characters)", timeout=2)


def _shorten(value: Any) -> Any:
    """Long strings (base64 images, whole files) cut for reading; `c` still copies everything."""
    if isinstance(value, str) and len(value) > LONG_STRING:
        return value[:LONG_STRING] + f"… ({len(value):,} characters)"
    if isinstance(value, list):
        return [_shorten(v) for v in value]
    if isinstance(value, dict):
        return {k: _shorten(v) for k, v in value.items()}
    return value


class ErrorScreen(ModalScreen[None]):
    """A failure in a background task, said plainly, instead of a traceback over the screen."""

    BINDINGS = [
        Binding("escape,enter", "dismiss", "Close", id="error.close"),
        # the App's own q does not reach past a dialog: the one a user tries first must not be ignored
        Binding("q", "app.quit", "Quit", id="error.quit"),
    ]

    def __init__(self, title: str, message: str, hint: str = "") -> None:
        super().__init__()
        self.title_text, self.message, self.hint = title, message, hint

    def compose(self) -> ComposeResult:
        with Vertical(id="error-box") as box:
            box.border_title = self.title_text
            yield Static(Text(self.message), id="error-message")
            if self.hint:
                yield Static(Text(self.hint, style="dim"), id="error-hint")
            yield Button("Close", variant="error", id="error-close")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss()
