"""A message's Markdown as Rich renderables: headings, emphasis, lists, block quotes, links, pipe
tables and fenced code highlighted by its language. Shared by `threadloom show` and the TUI's
viewer (and free of Textual, as the core is).

Built straight from markdown-it's tokens rather than with `rich.markdown.Markdown`, which took
about five times as long as plain text per message (a fenced block of code 12-18 ms) and would
have put the viewer's page scroll past its 16 ms. Each block becomes a `Text` wrapped to the width
behind the prefixes of the lists and quotes around it, the same fast path the plain text takes.

A log is untrusted: escape sequences are removed before parsing and whatever else a terminal
would act on is drawn as a visible character, in every piece of text, code, link and cell.
Links show their text, and their address after it when the two differ; no hyperlink escape is
ever written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Literal

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from ..base.text import UNPRINTABLE, drop_colours, printable

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from pygments.lexer import Lexer
    from pygments.token import _TokenType
    from rich.syntax import SyntaxTheme

SYNTAX_THEME = "monokai"
HEADING_STYLES = {1: "bold underline #87afd7", 2: "bold #87afd7", 3: "bold"}
HEADING_STYLE = "bold italic"  # h4 to h6
CODE_INLINE = "#d7af87"
LINK_TEXT = "underline #5fafff"
LINK_URL = "dim"
QUOTE_BAR = Text("▎ ", style="#808080")
QUOTE_STYLE = "italic"
CODE_BAR = Text("▏ ", style="#585858")
BULLETS = ("• ", "◦ ", "▪ ")
RULE = "dim"

# a text with none of these can hold no Markdown (no emphasis, code, link, heading, list, quote,
# table, rule or indented code) and takes the plain path
MARKUP = re.compile(r"[*_`#>\[|~<&\\]|^ {0,3}(?:[-+=]|\d{1,9}[.)])|^ {4}|^\t", re.M)


def has_markup(text: str) -> bool:
    """Whether `text` can hold any Markdown: most short messages cannot, and are drawn as they are."""
    return MARKUP.search(text) is not None


@cache
def parser(typed: bool = False) -> MarkdownIt:
    """CommonMark with pipe tables and strikethrough; raw HTML is text (a log cannot inject tags),
    and a newline inside a paragraph stays a line break, as the writer of a chat message meant.
    `typed`: a backslash escape or an entity stays its own token (`text_special`), so that what a
    person typed can be drawn as typed (see `render_markdown`)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(["table", "strikethrough"])
    return md.disable("text_join") if typed else md


# a line ending in an odd number of backslashes: the last one would be read as a line break
TRAILING_BACKSLASH = re.compile(r"(?<!\\)((?:\\\\)*\\)$", re.M)
FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")  # a line that opens or closes a fenced code block
# a line's end as the parser reads it (`\r\n` and a lone `\r` are `\n` to it)
LINE_END = re.compile(r"\r\n?")


def safe(text: str) -> str:
    """`text` with whatever a terminal acts on drawn as a character (ESC as ␛)."""
    return printable(text) if UNPRINTABLE.search(text) else text


@cache
def _theme(name: str) -> SyntaxTheme:
    from rich.syntax import Syntax

    return Syntax.get_theme(name)


@cache
def _token_style(theme: str, kind: _TokenType) -> Style:
    """The theme's colour and weight for a kind of token, without the theme's background."""
    style = _theme(theme).get_style_for_token(kind)
    return Style(
        color=style.color, bold=style.bold, italic=style.italic, underline=style.underline, dim=style.dim
    )


@cache
def _lexer(language: str) -> Lexer | None:
    """Pygments' lexer for a fence's language (`python`, `ts`, `sh`, `diff`, …), None if unknown."""
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


# a code block's lines past this are drawn plain: lexing is most of a block's cost, and a block of
# 16,000 lines took 3.5 s to open in the viewer and as long again to redraw as Markdown
HIGHLIGHTED_LINES = 2_000


def highlight(code: str, language: str, theme: str | None = SYNTAX_THEME, lines: int | None = None) -> Text:
    """`code` coloured by its language's lexer in `theme` (plain when the language is unknown or
    not given), with no background of its own: the pane's, the cursor's or the terminal's shows.
    Only its first `lines` lines when given (the rest, never shown, plain), and never more than
    HIGHLIGHTED_LINES: lexing is most of a code block's cost. `theme` None: no colours will be shown
    (`show` piped), so the code is not lexed, only given the line breaks the lexer gives it (half of
    a long session's `show`)."""
    code = safe(code)
    lexer = _lexer(language.lower()) if language else None
    if lexer is None or lines is not None and lines <= 0:
        return Text(code)
    head, rest = code, ""
    cut = _nth_newline(code, HIGHLIGHTED_LINES if lines is None else min(lines, HIGHLIGHTED_LINES))
    if cut >= 0:
        head, rest = code[:cut], code[cut:]
    if theme is None:
        text = Text(as_lexed(head))
    else:
        text = Text().append_tokens(
            (value, _token_style(theme, kind)) for kind, value in lexer.get_tokens(head)
        )
    if rest:  # plain, with the line breaks the lexer would have given it
        text.append(rest.replace("\r\n", "\n").replace("\r", "\n"))
    return text


def as_lexed(code: str) -> str:
    """The text a Pygments lexer's tokens add up to: its byte order mark dropped, its line breaks
    made newlines (`Lexer._preprocess_lexer_input`, with no stripping and no tab size)."""
    return code.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _nth_newline(text: str, n: int) -> int:
    """The index of the `n`th newline of `text`, -1 if it has fewer."""
    at = -1
    for _ in range(n):
        at = text.find("\n", at + 1)
        if at < 0:
            return -1
    return at


# ---------------------------------------------------------------------------- the renderable


@dataclass(slots=True)
class Block:
    """One run of lines: its body and what goes before its first line and before each other one
    (the bullets and bars of the lists and quotes it sits in)."""

    first: Text
    rest: Text
    body: Text | Table | None  # None: a horizontal rule
    fold: bool = False  # code: long lines are cut anywhere, not only at spaces


@dataclass
class Markdown:
    """Markdown laid out for Rich: `Block`s one below the other, each wrapped to the width left
    after its prefixes. Build one with `render_markdown`."""

    blocks: list[Block] = field(default_factory=list)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines(console, options.max_width):
            yield from line
            yield Segment.line()

    def lines(self, console: Console, width: int, limit: int | None = None) -> list[list[Segment]]:
        """The rendered lines at `width`, each a list of segments; those past the first `limit`
        come back empty (counted, not drawn: a preview shows only the first ones)."""
        out: list[list[Segment]] = []
        for block in self.blocks:
            room = max(1, width - block.first.cell_len)
            rows: Sequence[Text | list[Segment]]
            if block.body is None:
                rows = [Text("─" * room, style=RULE)]
            elif isinstance(block.body, Table):
                rows = console.render_lines(block.body, console.options.update_width(room), pad=False)
            else:
                rows = list(block.body.wrap(console, room, overflow="fold" if block.fold else None))
            first, rest = segments(block.first, console), segments(block.rest, console)
            for i, row in enumerate(rows):
                if limit is not None and len(out) >= limit:
                    out.append([])
                    continue
                line = segments(row, console) if isinstance(row, Text) else row
                out.append([*(rest if i else first), *line])
        return out

    def plain_lines(self, console: Console, width: int) -> list[str]:
        """The lines `__rich_console__` draws at `width` without colours, as text (`show` piped):
        each body wrapped by `wrap_plain`, a table alone drawn by Rich, every line cut at `width`
        as Rich's padding cuts it."""
        out: list[str] = []
        for block in self.blocks:
            room = max(1, width - block.first.cell_len)
            rows: list[str]
            if block.body is None:
                rows = ["─" * room]
            elif isinstance(block.body, Table):
                drawn = console.render_lines(block.body, console.options.update_width(room), pad=False)
                rows = ["".join(segment.text for segment in row) for row in drawn]
            else:
                rows = wrap_plain(block.body, room, console)
            first, rest = block.first.plain, block.rest.plain
            if max(block.first.cell_len, block.rest.cell_len) + room <= width:  # but for end spaces
                out.extend((rest if i else first) + row for i, row in enumerate(rows))
            else:  # prefixes wider than the width: cut as Rich's padding cuts them
                out.extend(crop((rest if i else first) + row, width) for i, row in enumerate(rows))
        return out


def segments(line: Text, console: Console) -> list[Segment]:
    """One line of text as segments, in its own style too: `Text.render` leaves out the style of
    a text without spans (a heading, a dim line)."""
    if not line.spans and line.style:
        return [Segment(line.plain, console.get_style(line.style))]
    return list(line.render(console))


def render_markdown(
    text: str,
    *,
    style: str = "",
    code_theme: str | None = SYNTAX_THEME,
    preview: int | None = None,
    typed: bool = False,
) -> Markdown:
    """`text` parsed as Markdown and laid out as blocks; `style` under everything (dim for meta
    messages), code coloured in `code_theme` (a Pygments style, or Rich's `ansi_dark` for the
    terminal's own colours). `preview`: only that many lines will be shown, so a preview of a
    long text costs about what it shows: code below them is left uncoloured, and the text past
    the first PREVIEW_CHARS characters is laid out as written, only to be counted.

    `typed`: a person typed it (a prompt), not a writer of Markdown: its backslashes and entities
    are drawn as typed (a Windows path's `\\.config`, a shell line's `\\` at its end, `&amp;`), where
    Markdown takes them for escapes and drops them; its fences, lists and emphasis are drawn."""
    rest = ""
    if preview is not None and len(text) > PREVIEW_CHARS:
        cut = text.rfind("\n", 0, PREVIEW_CHARS) + 1 or PREVIEW_CHARS
        text, rest = text[:cut], text[cut:]
    source = typed_source(drop_colours(text)) if typed else drop_colours(text)
    md = parser(typed)
    tokens = md.parse(source)
    if too_deep(tokens, md.options.maxNesting):  # the parser left out what lies deeper: drawn as written
        tokens, rest = [], text + rest
    markdown = _Builder(style, code_theme, preview, typed).build(tokens)
    if rest:
        markdown.blocks.append(Block(Text(), Text(), Text(safe(drop_colours(rest)), style=style)))
    return markdown


def typed_source(text: str) -> str:
    """What a person typed, made ready for a parser that keeps its escapes (`parser(typed=True)`):
    a space after a line's last backslash keeps it a character, not a line break (a line's last
    spaces are not drawn), its line ends read as the parser reads them. In a fenced block a
    backslash is a character already: its lines are left as typed (a shell line's continuation
    copied from an exported page keeps working)."""
    lines = LINE_END.sub("\n", text).split("\n")
    fence: str | None = None
    for n, line in enumerate(lines):
        found = FENCE.match(line)
        if fence is None:
            if found:
                fence = found.group(1)
            elif line.endswith("\\"):
                lines[n] = TRAILING_BACKSLASH.sub(r"\1 ", line)
        elif found and found.group(1)[0] == fence[0] and len(found.group(1)) >= len(fence):
            closes = not line[found.end() :].strip()  # the fence's close: only its marks on the line
            fence = None if closes else fence
    return "\n".join(lines)


def too_deep(tokens: list[Token], max_nesting: int) -> bool:
    """Whether a block opens at the parser's deepest level: it skips all that lies inside (a quote
    in a quote 20 deep, a list nested 10 deep) without a word, and the text would not be shown."""
    return any(token.nesting == 1 and token.level >= max_nesting - 1 for token in tokens)


# a preview parses this much of a text at most (a 100 KB answer dense with Markdown took 0.9 s to
# lay out whole, three times its plain text); the rest is counted as plain lines
PREVIEW_CHARS = 10_000


# ---------------------------------------------------------------------------- tokens → blocks


@dataclass(slots=True)
class _Container:
    """A list item or a block quote the blocks being built sit in."""

    marker: Text  # before the container's first line
    indent: Text  # before its other lines
    used: bool = False  # its first line is written


@dataclass(slots=True)
class _List:
    tight: bool  # no blank lines between its items (markdown-it hides their paragraphs)
    number: int | None  # the next item's number; None in a bullet list
    depth: int  # how many bullet lists it sits in (its bullet)
    started: bool = False  # a block of it is written


# ---------------------------------------------------------------------------- plain lines


def wrap_plain(text: Text, width: int, console: Console) -> list[str]:
    """The lines `text.wrap` cuts `text` into at `width` (justified as written, long words folded),
    as text: what Rich draws of it without colours. A line of characters one cell wide each, cut
    at spaces alone, is cut here (`fold_line`, a few steps a line where Rich takes a few per word
    and measures each); any other line (a tab, a wide or combining character, another kind of
    space) by Rich itself. `tests/unit/test_plain_show.py` holds the two to the same lines."""
    plain = text.plain
    if plain.isascii() and not NOT_ONE_CELL_ASCII.search(plain):
        if "\n" not in plain:
            return fold_line(plain, width)
        return [row for line in plain.split("\n") for row in fold_line(line, width)]
    rows: list[str] = []
    one_cell = one_cell_chars()
    for line in plain.split("\n"):
        if one_cell.issuperset(line):
            rows.extend(fold_line(line, width))
        else:
            rows.extend(row.plain for row in Text(line).wrap(console, width, tab_size=console.tab_size))
    return rows


# in printable ASCII, a space is the only place a line is cut and every character is one cell
NOT_ONE_CELL_ASCII = re.compile("[^\x20-\x7e\n]")
NOT_SPACE = re.compile("[^ ]")
# beyond ASCII, the blocks whose characters are mostly one cell wide (which are is Rich's to say)
ONE_CELL_BLOCKS = (
    (0xA1, 0x2FF),  # Latin-1 and Latin Extended, IPA, spacing modifiers
    (0x370, 0x482),  # Greek, Cyrillic
    (0x2010, 0x2027),  # dashes, quotes, bullet, ellipsis
    (0x2030, 0x205E),
    (0x20A0, 0x20C0),  # currency signs
    (0x2100, 0x23FF),  # letterlike, arrows, mathematical, technical
    (0x2500, 0x27BF),  # box drawing, shapes, symbols, dingbats
)


@cache
def one_cell_chars() -> frozenset[str]:
    """The characters `fold_line` may cut a line of: printable ASCII, and those of ONE_CELL_BLOCKS
    that Rich measures as one cell, that no regular expression takes for a space (Rich cuts at any
    of those) and that are printable."""
    from rich.cells import cell_len

    wider = (chr(c) for start, end in ONE_CELL_BLOCKS for c in range(start, end + 1))
    return frozenset(
        [chr(c) for c in range(0x20, 0x7F)]
        + [c for c in wider if c.isprintable() and not SPACE.match(c) and cell_len(c) == 1]
    )


SPACE = re.compile(r"\s")


def fold_line(line: str, width: int) -> list[str]:
    """`line` (one cell a character, cut only at spaces) in the rows Rich's `divide_line` cuts it
    into at `width`: a word goes to the next row when it does not end within this one, a word
    longer than a row is folded into rows of `width`, the first word keeps the spaces before it.
    Jumps from row to row rather than from word to word. Rows keep their trailing spaces (the
    caller trims lines)."""
    end = len(line)
    if end <= width:
        return [line]
    rows: list[str] = []
    lead = end - len(line.lstrip(" "))  # where the first word's letters start
    row = 0  # where the current row starts
    while row + width < end:
        edge = row + width  # the first character that does not fit
        if line[edge] == " ":
            found = NOT_SPACE.search(line, edge)
            if found is None:
                break  # only spaces are left: they stay on this row
            word = found.start()
        else:
            word = line.rfind(" ", row, edge) + 1 or row
        if row == 0 and word <= lead:
            word = 0  # the first word, with the spaces before it
        letters = line.find(" ", max(word, lead))
        letters = end if letters < 0 else letters
        if letters - word <= width:  # it fits on a row of its own
            rows.append(line[row:word])
            row = word
            continue
        if word:
            rows.append(line[row:word])
        found = NOT_SPACE.search(line, letters)
        after = end if found is None else found.start()  # the word's spaces are folded with it
        row = word
        while after - row > width:
            rows.append(line[row : row + width])
            row += width
    rows.append(line[row:])
    return rows


def crop(line: str, width: int) -> str:
    """`line` cut at `width` cells, as Rich cuts a line too long for its console."""
    if len(line) <= width and (line.isascii() or cell_len(line) <= width):
        return line
    if line.isascii():
        return line[:width]
    return "".join(s.text for s in Segment.adjust_line_length([Segment(line)], width, pad=False))


class _Builder:
    def __init__(self, style: str, code_theme: str | None, preview: int | None, typed: bool = False) -> None:
        self.style = Style.parse(style) if style else None
        self.code_theme = code_theme
        self.preview = preview
        self.typed = typed  # escapes and entities drawn as written (`render_markdown`)
        self.least = 0  # the fewest lines the blocks so far can take, whatever the width
        self.blocks: list[Block] = []
        self.containers: list[_Container] = []
        self.lists: list[_List] = []
        self.quotes = 0

    def build(self, tokens: list[Token]) -> Markdown:
        i = 0
        while i < len(tokens):
            i = self._token(tokens, i)
        return Markdown(self.blocks)

    def _token(self, tokens: list[Token], i: int) -> int:
        """Handle the token at `i`; the index of the next one to look at."""
        token = tokens[i]
        kind = token.type
        if kind in ("paragraph_open", "heading_open"):
            children = tokens[i + 1].children or []
            if kind == "heading_open":
                level = int(token.tag[1:])
                self._add(self._inline(children, HEADING_STYLES.get(level, HEADING_STYLE)))
            else:
                self._add(self._inline(children, QUOTE_STYLE if self.quotes else ""))
            return i + 3
        if kind in ("bullet_list_open", "ordered_list_open"):
            number = int(token.attrs.get("start", 1)) if kind == "ordered_list_open" else None
            depth = sum(1 for open_list in self.lists if open_list.number is None)
            self.lists.append(_List(_tight(tokens, i), number, depth))
        elif kind in ("bullet_list_close", "ordered_list_close"):
            self.lists.pop()
        elif kind == "list_item_open":
            current = self.lists[-1]
            if current.number is None:
                marker = BULLETS[current.depth % len(BULLETS)]
            else:
                marker = f"{current.number}{token.markup} "
                current.number += 1
            self.containers.append(_Container(Text(marker, style="bold"), Text(" " * len(marker))))
        elif kind == "blockquote_open":
            self.quotes += 1
            self.containers.append(_Container(QUOTE_BAR, QUOTE_BAR))
        elif kind in ("list_item_close", "blockquote_close"):
            self.quotes -= kind == "blockquote_close"
            self.containers.pop()
        elif kind in ("fence", "code_block"):
            language = token.info.split()[0].strip("{}.") if token.info.strip() else ""
            first_line = self.least + bool(self.blocks)  # after the blank line before it
            shown = None if self.preview is None else self.preview - first_line
            code = highlight(token.content.rstrip("\n"), language, self.code_theme, shown)
            self._add(code, fold=True, bar=True)
        elif kind == "hr":
            self._add(None)
        elif kind == "table_open":
            return self._table(tokens, i)
        elif kind == "inline":  # not inside a paragraph or heading (none in CommonMark): its text
            self._add(self._inline(token.children or [], ""))
        return i + 1

    def _add(self, body: Text | Table | None, *, fold: bool = False, bar: bool = False) -> None:
        """Put a block below the others, a blank line between, but inside a tight list (between
        its items, and between an item's lines and a list nested in it)."""
        snug = any(open_list.tight and open_list.started for open_list in self.lists)
        if self.blocks and not snug:
            blank = Text.assemble(*(c.indent for c in self.containers if c.used))  # not a new one's
            blank.rstrip()
            self.blocks.append(Block(blank, blank, Text("")))
            self.least += 1
        for open_list in self.lists:
            open_list.started = True
        first = Text.assemble(*(c.indent if c.used else c.marker for c in self.containers))
        rest = Text.assemble(*(c.indent for c in self.containers))
        for container in self.containers:
            container.used = True
        if bar:
            first, rest = first + CODE_BAR, rest + CODE_BAR
        if isinstance(body, Text) and self.style is not None:
            own = body.style if isinstance(body.style, Style) else Style.parse(body.style or "none")
            body.style = self.style + own  # under every span: a dim message stays dim between them
        self.blocks.append(Block(first, rest, body, fold))
        if isinstance(body, Table):
            self.least += body.row_count + 2  # its header and the rule under it
        else:
            self.least += 1 if body is None else body.plain.count("\n") + 1

    def _inline(self, children: list[Token], base: str) -> Text:
        """An inline run (emphasis, code, links, images, breaks) as one styled Text."""
        text = Text(style=base)
        styles: list[str] = []
        href, link_at = "", 0  # the open link's address, and where its text starts
        for child in children:
            kind = child.type
            current = " ".join(styles) or None
            if kind == "text":
                text.append(safe(child.content), style=current)
            elif kind == "text_special":  # an escape or an entity, apart only when `typed`
                text.append(safe(child.markup if self.typed else child.content), style=current)
            elif kind in ("softbreak", "hardbreak"):
                text.append("\n")
            elif kind == "code_inline":
                text.append(safe(child.content), style=f"{current or ''} {CODE_INLINE}".strip())
            elif kind in INLINE_STYLES:
                styles.append(INLINE_STYLES[kind])
            elif kind in ("strong_close", "em_close", "s_close", "link_close"):
                if styles:
                    styles.pop()
                if kind == "link_close":
                    shown = text.plain[link_at:]
                    if href and href not in (shown, f"mailto:{shown}"):
                        text.append(f" ({safe(href)})", style=LINK_URL)
            elif kind == "link_open":
                href, link_at = str(child.attrs.get("href", "")), len(text)
                styles.append(LINK_TEXT)
            elif kind == "image":
                text.append(f"▣ {safe(child.content or 'image')}", style=IMAGE)
                src = str(child.attrs.get("src", ""))
                if src:
                    text.append(f" ({safe(src)})", style=LINK_URL)
            else:  # html_inline cannot occur (html is off); anything new is kept as its source
                text.append(safe(child.content), style=current)
        return text

    def _table(self, tokens: list[Token], i: int) -> int:
        """A pipe table from `table_open` at `i`; the index after its `table_close`."""
        from rich import box

        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        row: list[Text] = []
        header = True
        i += 1
        while tokens[i].type != "table_close":
            token = tokens[i]
            if token.type == "th_open":
                table.add_column(justify=_align(token))
            elif token.type == "inline":
                row.append(self._inline(token.children or [], "bold" if header else ""))
            elif token.type == "tr_close":
                if header:
                    for column, cell in zip(table.columns, row, strict=False):
                        column.header = cell
                    header = False
                else:
                    table.add_row(*row)
                row = []
            i += 1
        self._add(table)
        return i + 1


INLINE_STYLES = {"strong_open": "bold", "em_open": "italic", "s_open": "strike"}
IMAGE = "#d7af5f"


def _align(token: Token) -> Literal["left", "center", "right"]:
    style = str(token.attrs.get("style", ""))
    if style.endswith("right"):
        return "right"
    if style.endswith("center"):
        return "center"
    return "left"


def _tight(tokens: list[Token], i: int) -> bool:
    """Whether the list opening at `i` is tight: markdown-it hides its items' paragraphs."""
    depth = 0
    for token in tokens[i + 1 :]:
        depth += token.nesting
        if depth < 0:
            return True  # no paragraph in it at all
        if token.type == "paragraph_open" and depth == 2:  # an item's own paragraph
            return token.hidden
    return True
