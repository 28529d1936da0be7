"""Markdown → Rich lines (`core.present.markdown`): each construct, code coloured by its language, and
what a log could slip into a terminal through it."""

from __future__ import annotations

import re

import pytest
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from threadloom.core.present.markdown import PREVIEW_CHARS, Markdown, has_markup, render_markdown
from threadloom.core.present.render import MESSAGE_CHARS, message_body

CONSOLE = Console(width=200, color_system="truecolor", force_terminal=True)
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def lines(source: str, width: int = 60, **kw: object) -> list[list[Segment]]:
    return render_markdown(source, **kw).lines(CONSOLE, width)  # type: ignore[arg-type]


def plain(rendered: list[list[Segment]]) -> list[str]:
    return ["".join(segment.text for segment in line).rstrip() for line in rendered]


def style_of(rendered: list[list[Segment]], word: str) -> Style:
    """The style of the segment that holds `word` (the first one)."""
    for line in rendered:
        for segment in line:
            if word in segment.text:
                return segment.style or Style()
    raise AssertionError(f"{word!r} not rendered: {plain(rendered)}")


def test_headings_lose_their_hashes_and_are_bold_the_first_underlined() -> None:
    out = lines("# Title\n\n## Part\n\n#### Detail\n\ntext")
    assert plain(out) == ["Title", "", "Part", "", "Detail", "", "text"]
    assert style_of(out, "Title").bold and style_of(out, "Title").underline
    assert style_of(out, "Part").bold and not style_of(out, "Part").underline
    assert style_of(out, "Detail").italic
    assert not style_of(out, "text").bold


def test_emphasis_strikethrough_and_inline_code_become_styles() -> None:
    out = lines("a **strong** and *slanted* and ~~gone~~ and `code()` here")
    assert plain(out) == ["a strong and slanted and gone and code() here"]
    assert style_of(out, "strong").bold
    assert style_of(out, "slanted").italic
    assert style_of(out, "gone").strike
    code = style_of(out, "code()")
    assert code.color is not None and code.color.triplet is not None
    assert not style_of(out, " and ").bold


def test_a_newline_inside_a_paragraph_stays_a_line_break() -> None:
    """Chat messages are written line by line; CommonMark would join the lines into one."""
    assert plain(lines("first line\nsecond line")) == ["first line", "second line"]


def test_tight_lists_nest_without_blank_lines_and_loose_ones_keep_them() -> None:
    out = lines("Steps:\n\n1. build\n2. test\n   - unit\n   - e2e\n3. ship\n\n- one\n\n- two")
    assert plain(out) == [
        "Steps:",
        "",
        "1. build",
        "2. test",
        "   • unit",
        "   • e2e",
        "3. ship",
        "",
        "• one",
        "",
        "• two",
    ]
    assert plain(lines("7. seven\n8. eight")) == ["7. seven", "8. eight"]  # numbered from its start
    assert plain(lines("- a\n  - b\n    - c")) == ["• a", "  ◦ b", "    ▪ c"]


def test_a_list_item_wraps_under_its_text_not_under_its_bullet() -> None:
    out = plain(lines("- " + "word " * 12, width=24))
    assert out[0].startswith("• word") and all(line.startswith("  word") for line in out[1:])
    assert len(out) > 2


def test_block_quotes_carry_a_bar_on_every_line_and_are_italic() -> None:
    out = lines("> " + "quoted words " * 8 + "\n>\n> again", width=40)
    text = plain(out)
    assert all(line.startswith("▎") for line in text), text
    assert text[-1] == "▎ again" and "▎" in text[-2]
    assert style_of(out, "quoted").italic


def test_links_show_their_text_then_their_address_when_it_says_more() -> None:
    out = lines(
        "see [the docs](https://example.com/docs) or <https://example.com> or [x@y.z](mailto:x@y.z)",
        width=100,
    )
    assert plain(out) == ["see the docs (https://example.com/docs) or https://example.com or x@y.z"]
    assert style_of(out, "the docs").underline
    assert style_of(out, "(https://example.com/docs)").dim
    assert all(segment.style is None or segment.style.link is None for line in out for segment in line)


def test_images_show_their_description_and_source() -> None:
    assert plain(lines("![the chart](chart.png)")) == ["▣ the chart (chart.png)"]


def test_pipe_tables_align_their_columns_with_a_bold_header() -> None:
    out = lines("| name | size |\n|:-----|-----:|\n| `a.py` | 7 |\n| bigger.py | 1200 |")
    text = plain(out)
    assert [row.split() for row in text] == [
        ["name", "size"],
        ["─" * len(text[1])],
        ["a.py", "7"],
        ["bigger.py", "1200"],
    ]
    assert text[2].endswith(" 7") and text[3].endswith("1200")  # right-aligned: the ends line up
    assert len(text[2]) == len(text[3])
    assert style_of(out, "name").bold and not style_of(out, "bigger.py").bold
    assert style_of(out, "a.py").color is not None  # inline code inside a cell


def test_horizontal_rules_span_the_width() -> None:
    assert plain(lines("above\n\n---\n\nbelow", width=30)) == ["above", "", "─" * 30, "", "below"]


def _colours(rendered: list[list[Segment]]) -> dict[str, str]:
    return {
        segment.text.strip(): segment.style.color.name
        for line in rendered
        for segment in line
        if segment.text.strip() not in ("", "▏") and segment.style and segment.style.color
    }


def test_fenced_code_is_coloured_by_its_language_behind_a_bar() -> None:
    source = "```python\ndef area(r):\n    return 3.14 * r * r  # circle\n```"
    out = lines(source)
    assert plain(out) == ["▏ def area(r):", "▏     return 3.14 * r * r  # circle"]
    colours = _colours(out)
    # keywords, the function's name, the number and the comment each in a colour of their own
    assert colours["def"] == colours["return"]
    assert len({colours["def"], colours["area"], colours["3.14"], colours["# circle"]}) == 4
    assert all(
        segment.style is None or segment.style.bgcolor is None for line in out for segment in line
    )  # no box of the theme's background: the pane's (or the cursor's) shows through
    # the same words are one colour in plain text, and a fence without a language is not coloured
    assert len(set(_colours(lines("```text\ndef area(r):\n```")).values())) == 1
    assert not _colours(lines("```\ndef area(r):\n```")) and not _colours(lines("```nosuchlang\ndef x\n```"))
    sql = _colours(lines("```sql\nSELECT name FROM users\n```"))
    assert sql["SELECT"] == sql["FROM"] == colours["def"] and sql["name"] != sql["SELECT"]


def test_code_in_a_list_item_is_indented_with_the_item() -> None:
    out = plain(lines("1. run:\n   ```bash\n   make test\n   ```\n2. done"))
    assert out == ["1. run:", "   ▏ make test", "2. done"]


def test_a_preview_colours_only_the_lines_it_shows_and_counts_the_rest() -> None:
    """A collapsed message shows its first lines; lexing the code below them was most of the cost."""
    code = "\n".join(f"x{i} = {i}" for i in range(40))
    source = f"intro\n\n```python\n{code}\n```"
    whole, preview = lines(source), lines(source, preview=10)
    assert plain(whole) == plain(preview)
    assert style_of(preview, "x5").color is not None  # line 8 of the output: coloured
    assert style_of(preview, "x30").color is None and style_of(whole, "x30").color is not None
    limited = render_markdown(source).lines(CONSOLE, 60, limit=10)
    assert len(limited) == len(whole) and limited[:10] == whole[:10] and not any(limited[10:])


def test_a_preview_of_a_long_text_parses_only_its_head() -> None:
    """A 100 KB answer dense with Markdown took 0.9 s to lay out whole, for 14 lines shown."""
    paragraph = "Some **bold** words and `code` in a paragraph of its own.\n\n"
    source = "# Head\n\n" + paragraph * (PREVIEW_CHARS // len(paragraph) + 50) + "## Tail"
    whole, preview = plain(lines(source, width=100)), plain(lines(source, width=100, preview=14))
    assert preview[:14] == whole[:14] and preview[0] == "Head"
    assert whole[-1] == "Tail" and preview[-1] == "## Tail"  # past the head: only counted, as written
    assert abs(len(preview) - len(whole)) < len(whole) // 10


def test_a_style_for_the_whole_message_sits_under_every_part() -> None:
    out = lines("# Head\n\nplain and **bold**", style="dim")
    assert style_of(out, "Head").dim and style_of(out, "plain").dim and style_of(out, "bold").dim
    assert style_of(out, "bold").bold


HOSTILE = "\x1b]0;PWNED\x07\x1b[2J\x9b2J\x00\x1bc\x07"


def test_escape_sequences_in_a_heading_code_and_link_never_reach_the_terminal() -> None:
    source = (
        f"# Title {HOSTILE}end\n\n"
        f"```python\nprint(1) {HOSTILE}\n```\n\n"
        f"[click {HOSTILE}](https://example.com/{HOSTILE}) and [ok](https://example.com/\x1b[31m)\n\n"
        f"| a {HOSTILE} |\n|---|\n| b {HOSTILE} |\n\n"
        f"> quote `{HOSTILE}` &#x1b;[2J &#155;"
    )
    out = lines(source, width=120)
    text = "\n".join(plain(out))
    assert "Title" in text and "print(1)" in text and "click" in text and "quote" in text
    assert not CONTROLS.search(text), repr(text)
    # a sequence is drawn as text, never sent and never lost: ESC as ␛, BEL as ␇
    assert "␛]0;PWNED␇␛[2J" in text and "␛c" in text
    assert "\ufffd[2J" in text  # an entity naming ESC is U+FFFD, never the character
    written = _written(render_markdown(source))
    assert not re.search(r"\x1b(?!\[[0-9;]*m)", written), repr(written)  # only the console's own colours


def _written(markdown: Markdown) -> str:
    console = Console(width=100, color_system="truecolor", force_terminal=True, record=False)
    with console.capture() as captured:
        console.print(markdown)
    return captured.get()


def test_only_text_that_could_hold_markdown_is_parsed() -> None:
    assert not has_markup("Fixed it; all 24 tests pass.\nDone.")
    for source in ("a *b*", "`x`", "# h", "- item", "1. one", "> q", "a | b", "[a](b)", "x_y", "    code"):
        assert has_markup(source), source


def test_message_body_renders_markdown_or_keeps_the_text_as_written() -> None:
    def text_of(renderable: object) -> str:
        with CONSOLE.capture() as captured:
            CONSOLE.print(renderable)
        return re.sub(r"\x1b\[[0-9;]*m", "", captured.get())

    source = "## Plan\n\n- **one**"
    assert text_of(message_body(source)).split() == ["Plan", "•", "one"]
    assert text_of(message_body(source, markdown=False)).split() == ["##", "Plan", "-", "**one**"]
    plain_text = message_body("no markup here at all")
    assert isinstance(plain_text, Text) and plain_text.plain == "no markup here at all"
    # a terminal's output (escape sequences in it) keeps its colours rather than being parsed
    coloured = message_body("**\x1b[1mbold\x1b[22m**")
    assert isinstance(coloured, Text) and coloured.plain == "**bold**"


def test_a_typed_prompt_keeps_its_backslashes_and_entities_where_markdown_would_drop_them() -> None:
    """A person's prompt is not written as Markdown: `C:\\Users\\me\\.gemini` lost the backslash
    before the dot (an escape to CommonMark), a shell line's last backslash became a line break and
    `&amp;` an ampersand. Typed, each is drawn as typed; its code, emphasis and lines as before.
    What an assistant writes is Markdown, and stays read as such."""
    source = (
        "look in C:\\Users\\me\\.gemini\\tmp, a\\_b, \\*x\\* and a\\\\b &amp; `C:\\x\\.y`\n"
        "ls \\\n  -la\n\n```\nC:\\code\\.z \\\n```\n**bold**"
    )
    assert plain(lines(source, 80, typed=True)) == [
        "look in C:\\Users\\me\\.gemini\\tmp, a\\_b, \\*x\\* and a\\\\b &amp; C:\\x\\.y",
        "ls \\",
        "-la",
        "",
        "▏ C:\\code\\.z \\",
        "",
        "bold",
    ]
    typed = lines(source, 80, typed=True)
    assert style_of(typed, "bold").bold and style_of(typed, "C:\\x").color is not None
    # as Markdown (an assistant's answer) the escapes are escapes
    assert plain(lines(source, 80))[:2] == [
        "look in C:\\Users\\me.gemini\\tmp, a_b, *x* and a\\b & C:\\x\\.y",
        "ls",
    ]


def test_a_typed_prompt_with_windows_line_ends_keeps_every_last_backslash() -> None:
    """A prompt pasted from Windows ends its lines in `\\r\\n` (or an old Mac's `\\r`): the
    parser reads each as a line's end, so a shell line's last backslash was a line break there."""
    for end in ("\r\n", "\r"):
        source = f"ls \\{end}  -la \\{end}- one \\{end}- two"
        assert plain(lines(source, 80, typed=True)) == ["ls \\", "-la \\", "", "• one \\", "• two"]


@pytest.mark.parametrize("typed", [True, False])
def test_a_text_nested_deeper_than_the_parser_goes_is_drawn_as_written(typed: bool) -> None:
    """The parser skips without a word what lies inside a block opened 20 levels deep: a quote of
    30 `>` (a mail thread pasted whole) or a list nested 12 deep was drawn as nothing at all."""
    quoted = "> " * 30 + "the reply"
    assert plain(lines(quoted, 200, typed=typed)) == [quoted]
    nested = "".join("  " * depth + f"- item {depth}\n" for depth in range(12))
    drawn = "\n".join(plain(lines(nested, 200, typed=typed)))
    assert all(f"item {depth}" in drawn for depth in range(12))
    assert plain(lines("> > > shallow", typed=typed)) == ["▎ ▎ ▎ shallow"]


@pytest.mark.parametrize("markdown", [True, False])
def test_a_huge_message_is_cut_with_a_note_either_way(markdown: bool) -> None:
    body = message_body("# big\n\n" + "word " * (MESSAGE_CHARS // 4), markdown=markdown, rest="r shows it")
    with CONSOLE.capture() as captured:
        CONSOLE.print(body)
    out = captured.get()
    assert "more characters (r shows it)" in out
    assert out.count("word") < MESSAGE_CHARS // 5 + 10


def test_a_huge_code_block_is_coloured_as_far_as_it_pays_the_rest_plain() -> None:
    """Lexing is most of a code block's cost: a block of 16,000 lines took 3.5 s to open in the
    viewer. Its first lines are coloured, those past the cap drawn plain, the text all there, with
    the line breaks the lexer gives (a CRLF block's too)."""
    from threadloom.core.present.markdown import HIGHLIGHTED_LINES, highlight

    code = "".join(f"def f{n}(x):\r\n    return x + {n}  # done\r\n" for n in range(HIGHLIGHTED_LINES))
    text = highlight(code, "python", "monokai")
    same = text.plain == highlight(code, "python", None).plain  # as the pipe's, not lexed at all
    assert same and text.plain.count("\n") == 2 * HIGHLIGHTED_LINES and "return x + 1999" in text.plain
    styled_up_to = max(span.end for span in text.spans)
    cut = text.plain.index("\n", len("\n".join(text.plain.split("\n")[: HIGHLIGHTED_LINES - 1])) + 1)
    assert 0 < styled_up_to <= cut < len(text.plain) - 1000
    assert any(span.start < 100 for span in text.spans)  # the head is coloured


def test_a_typed_prompt_s_fenced_code_keeps_its_lines_as_typed() -> None:
    """A space was added after every line's last backslash, a fenced shell command's too: copied
    from an exported page, `docker run \\` followed by a space no longer continued the line."""
    from threadloom.core.present.markdown import typed_source

    source = "run this \\\n```sh\ndocker run \\\n  --rm img\n~~~\n```\nthen \\\n~~~\nin tildes \\\n~~~~\n"
    assert typed_source(source) == (
        "run this \\ \n```sh\ndocker run \\\n  --rm img\n~~~\n```\nthen \\ \n~~~\nin tildes \\\n~~~~\n"
    )
