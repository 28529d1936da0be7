"""The key footer, rebuilt only when the keys it shows change."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

KeySignature = tuple[tuple[object, ...], ...]


class KeyFooter(Footer):
    """Textual's Footer rebuilds all its key widgets (each styled anew) whenever the screen's
    bindings are refreshed: on every focus change and every `refresh_bindings`, although most of
    them leave the shown keys as they were. That rebuild was the costliest part of a focus change.
    This one compares what it would show with what it shows and rebuilds only on a difference,
    and its keys start as compact as the footer is, instead of restyling themselves twice as
    they mount (compact by default, then bound to the footer's setting)."""

    def __init__(self) -> None:
        super().__init__()
        self._shown: KeySignature | None = None

    def shown_keys(self, screen: Screen) -> KeySignature:
        """All that `compose` draws from: each active binding's key, label, action, group, state
        and tip (hidden ones too: the command palette's key is shown although its binding is not)."""
        return tuple(
            (key, self.app.get_key_display(binding), binding.description, binding.action)
            + (binding.show, binding.group, enabled, tooltip)
            for key, (_node, binding, enabled, tooltip) in screen.active_bindings.items()
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
