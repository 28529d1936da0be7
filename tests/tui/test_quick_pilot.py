"""QuickPilot (tests/tui_support.py) presses keys as Textual's own Pilot does: the same Key events
reach the app, and the app has handled each one when `press` returns."""

from __future__ import annotations

from textual import events
from textual.app import App, ComposeResult
from textual.widgets import Input

from tests.tui_support import run_test

# letters, digits, punctuation typed one character at a time, key names, chords
KEYS = [*"aZ7 /?.,-_'\"[]()+*#~\\", "enter", "escape", "tab", "space", "up", "pagedown", "f1", "ctrl+f"]
KEYS += ["shift+tab", "backspace", "slash", "question_mark", "é"]


class Keys(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str | None]] = []

    def on_key(self, event: events.Key) -> None:
        self.seen.append((event.key, event.character))


async def test_the_same_key_events_reach_the_app_as_with_textual_s_pilot() -> None:
    textual_s = Keys()
    async with textual_s.run_test() as pilot:
        await pilot.press(*KEYS)
    quick = Keys()
    async with run_test(quick) as pilot:  # type: ignore[arg-type]  # any App will do
        await pilot.press(*KEYS)
    assert len(textual_s.seen) == len(KEYS)
    assert quick.seen == textual_s.seen


class Typing(App[None]):
    def compose(self) -> ComposeResult:
        yield Input()


async def test_what_is_typed_is_in_the_input_when_press_returns() -> None:
    app = Typing()
    async with run_test(app) as pilot:  # type: ignore[arg-type]
        await pilot.press(*"fix the cart total", "left", "backspace")
        assert app.query_one(Input).value == "fix the cart totl"  # the a before the cursor went
        assert app.animation_level == "none"
