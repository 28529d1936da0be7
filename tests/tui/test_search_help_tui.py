"""The search screen's help of its filters (`/` before anything is typed): a description that
wraps goes on under itself, never under the filter's name."""

from __future__ import annotations

from pathlib import Path

from textual.widget import Widget
from textual.widgets import Static
from threadloom.tui.search import SearchScreen

from tests.tui_support import make_app, run_test, until


def drawn_lines(widget: Static) -> list[str]:
    """The widget's lines as drawn on the screen."""
    return [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]


async def test_a_wrapped_filter_description_stays_in_its_column(demo_db: Path) -> None:
    """At 120x35 the "words" filter's second line ("as you remember it finds its turn …") began
    at the left edge, in the column of the filters' names."""
    app = make_app(demo_db)
    async with run_test(app, size=(120, 35)) as pilot:
        await pilot.press("slash")
        await until(pilot, lambda: isinstance(app.screen, SearchScreen))
        help_box = app.screen.query_one("#search-help", Static)
        await until(pilot, lambda: any("any order" in line for line in drawn_lines(help_box)))
        lines = drawn_lines(help_box)
        first = next(n for n, line in enumerate(lines) if "any order" in line)
        column = lines[first].index("any order")
        wrapped = lines[first + 1]  # the rest of its description ("… remember it finds its turn …")
        assert "remember it" in wrapped and wrapped.startswith(" " * column), lines[first : first + 4]


async def test_the_help_names_the_key_that_switches_to_words_not_the_cli_flag(demo_db: Path) -> None:
    """It said "(--mode words: all must match)", a flag of `threadloom search`; here F2 does it."""
    app = make_app(demo_db)
    async with run_test(app, size=(160, 40)) as pilot:
        await pilot.press("slash")
        await until(pilot, lambda: isinstance(app.screen, SearchScreen))
        help_box = app.screen.query_one("#search-help", Static)
        await until(pilot, lambda: any("any order" in line for line in drawn_lines(help_box)))
        text = " ".join(" ".join(line.split()) for line in drawn_lines(help_box))
        assert "--mode" not in text, text
        assert "(f2 to words only: all must match)" in text.lower(), text


async def test_the_help_scrolls_with_the_keys_in_a_short_terminal(demo_db: Path) -> None:
    """At 80x24 the help showed its first fifteen filters: the rest and the keys were below its
    edge, and nothing scrolled it (↑↓ and PgUp PgDn move through hits, and there were none). With
    the help on show they scroll it."""
    app = make_app(demo_db)
    async with run_test(app, size=(80, 24)) as pilot:
        await pilot.press("slash")
        await until(pilot, lambda: isinstance(app.screen, SearchScreen))
        help_box = app.screen.query_one("#search-help", Static)
        await until(pilot, lambda: any("any order" in line for line in drawn_lines(help_box)))
        window = help_box.parent
        assert isinstance(window, Widget)

        def on_screen() -> list[str]:
            lines = drawn_lines(help_box)
            return lines[round(window.scroll_y) : round(window.scroll_y) + window.size.height]

        assert any("any order" in line for line in on_screen())
        assert not any(line.strip() == "Keys" for line in on_screen())
        await pilot.press("pagedown", "pagedown", "pagedown")
        assert any(line.strip() == "Keys" for line in on_screen()), on_screen()
        await pilot.press("pageup", "pageup", "pageup")
        assert any("any order" in line for line in on_screen()) and window.scroll_y == 0
        await pilot.press("down")
        assert window.scroll_y == 1
