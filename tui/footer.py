"""The key footer, rebuilt only when the keys it shows change, showing only the keys it has room for."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

KeySignature = tuple[tuple[object, ...], ...]

# When the footer is short of room, whole keys give way (F1 and the palette still list them): these
# first, then the rest from the end; last of all the keys that say how to learn the others and leave.
GIVEN_UP_FIRST = ("messages.raw",)
KEPT_TO_THE_LAST = ("app.help", "app.quit")


class KeyFooter(Footer):
    """Textual's Footer rebuilds all its key widgets (each styled anew) whenever the screen's
    bindings are refreshed: on every focus change and every `refresh_bindings`, although most of
    them leave the shown keys as they were. That rebuild was the costliest part of a focus change.
    This one compares what it would show with what it shows and rebuilds only on a difference,
    and its keys start as compact as the footer is, instead of restyling themselves twice as
    they mount (compact by default, then bound to the footer's setting).

    Textual's Footer also lets its keys run past its edge, the last one cut mid-word under the
    palette's key ("q Qu▏"); this one hides whole keys until the rest fit (`fit_keys`)."""

    def __init__(self) -> None:
        super().__init__()
        self._shown: KeySignature | None = None

    def shown_keys(self, screen: Screen) -> KeySignature:
        """All that `compose` draws from: each shown binding's key, label, action, group, state and
        tip, and the command palette's (shown although its binding is not). Hidden bindings come
        and go, or are enabled and disabled, far more often than the shown ones: they are left out,
        as they change nothing in the footer."""
        palette = self.app.COMMAND_PALETTE_BINDING
        return tuple(
            (key, self.app.get_key_display(binding), binding.description, binding.action)
            + (binding.group, enabled, tooltip)
            for key, (_node, binding, enabled, tooltip) in screen.active_bindings.items()
            if binding.show or key == palette
        )

    def bindings_changed(self, screen: Screen) -> None:
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = self.shown_keys(screen)
            if self._bindings_ready and shown == self._shown:
                return
            self._shown = shown
        super().bindings_changed(screen)

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                widget.set_reactive(FooterKey.compact, self.compact)  # what its binding sets
            yield widget

    async def recompose(self) -> None:
        await super().recompose()
        self.call_after_refresh(self.fit_keys)  # once the new keys are styled

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit_keys)  # once a narrow screen's spacing applies

    def fit_keys(self) -> None:
        """Show the keys that fit beside the palette's, whole: the others are hidden, those least
        needed first (`GIVEN_UP_FIRST`, then from the end, help and quit last)."""
        if not self.size.width or not self.is_attached:
            return
        keys = list(self.query_children(FooterKey))
        palette = [key for key in keys if key.has_class("-command-palette")]
        keys = [key for key in keys if key not in palette]
        room = self.size.width - sum(_key_width(key) for key in palette)
        # each asked once: a key's width renders it, and the screen works its bindings out anew
        widths = [_key_width(key) for key in keys]
        active = self.screen.active_bindings
        ids = [active[key.key].binding.id if key.key in active else None for key in keys]

        def rank(position: int) -> tuple[int, int]:
            key_id = ids[position]
            if key_id in GIVEN_UP_FIRST:
                return (0, GIVEN_UP_FIRST.index(key_id))
            return (2 if key_id in KEPT_TO_THE_LAST else 1, -position)

        shown = set(range(len(keys)))
        width = sum(widths)
        for position in sorted(shown, key=rank):
            if width <= room:
                break
            shown.discard(position)
            width -= widths[position]
        for position, key in enumerate(keys):
            if key.display != (position in shown):  # set only to change: setting lays the key out anew
                key.display = position in shown


def _key_width(key: FooterKey) -> int:
    """The cells a key takes in the footer, shown or not: its label, padding, border and margin."""
    return key.render().cell_len + key.styles.gutter.width + key.styles.margin.width
