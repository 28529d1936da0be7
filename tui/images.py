"""Images drawn in the viewer's lines as half-block cells: each cell shows two pixels, the upper as
the colour of "▀" and the lower as its background, so any terminal with colours shows a picture.

`measure` reads only an image's header (cheap, on the UI thread) to know how many lines it takes;
`draw` decodes and scales it (the slow part, run in a thread). Neither raises: an image Pillow
cannot read, or one too big to decode, becomes a one-line note."""

from __future__ import annotations

import math
from collections.abc import Iterator
from io import BytesIO

from rich.color import Color
from rich.console import Console, ConsoleOptions
from rich.segment import Segment
from rich.style import Style

MAX_ROWS = 24  # lines an image takes at most, on a tall pane: it shows a thumbnail, `o` opens it
MIN_ROWS = 6


def rows_for(pane_height: int) -> int:
    """The lines an image may take in a pane this tall: half of it, within MIN_ROWS..MAX_ROWS."""
    return max(MIN_ROWS, min(MAX_ROWS, pane_height // 2))


MAX_PIXELS = 40_000_000  # beyond this, decoding takes seconds and hundreds of MB: not drawn
UNREADABLE = "Pillow cannot read this image"


def measure(data: bytes, columns: int, max_rows: int = MAX_ROWS) -> tuple[int, int] | str:
    """The cells (columns, rows) the image is drawn in, fitting `columns` and `max_rows` and never
    enlarged; or a note saying why it is not drawn."""
    from PIL import Image

    try:
        with Image.open(BytesIO(data)) as image:
            width, height = image.size
    except Exception:  # Pillow raises many kinds for damaged data (SyntaxError, struct.error…)
        return UNREADABLE
    if width < 1 or height < 1:
        return UNREADABLE
    if width * height > MAX_PIXELS:
        return f"{width}×{height} pixels: too large to draw here"
    scale = min(1.0, max(1, columns) / width, 2 * max_rows / height)
    return max(1, round(width * scale)), max(1, math.ceil(height * scale / 2))


def draw(data: bytes, columns: int, rows: int, background: tuple[int, int, int]) -> list[list[Segment]] | str:
    """The image scaled to `columns` × 2·`rows` pixels as lines of "▀" cells; transparent parts take
    `background`. A note instead when the data will not decode."""
    from PIL import Image

    try:
        with Image.open(BytesIO(data)) as image:
            image.draft("RGB", (columns, rows * 2))  # a JPEG decodes at a fraction of its size
            rgba = image.convert("RGBA")
        # scaled first (Pillow scales RGBA with its alpha premultiplied), then laid on the
        # background: the same picture as the other way round, at a fraction of the pixels
        small_rgba = rgba.resize((columns, rows * 2), Image.Resampling.BOX)
        page = Image.new("RGBA", small_rgba.size, (*background, 255))
        page.alpha_composite(small_rgba)
        small = page.convert("RGB")
    except Exception:
        return UNREADABLE
    raw = small.tobytes()  # RGB, row by row
    pixels = [(raw[i], raw[i + 1], raw[i + 2]) for i in range(0, len(raw), 3)]
    styles: dict[tuple[tuple[int, int, int], tuple[int, int, int]], Style] = {}
    lines: list[list[Segment]] = []
    for row in range(rows):
        top, bottom = pixels[2 * row * columns :][:columns], pixels[(2 * row + 1) * columns :][:columns]
        line: list[Segment] = []
        for pair in zip(top, bottom, strict=True):
            style = styles.get(pair)
            if style is None:
                style = styles[pair] = Style(color=Color.from_rgb(*pair[0]), bgcolor=Color.from_rgb(*pair[1]))
            line.append(Segment("▀", style))
        lines.append(list(Segment.simplify(line)))
    return lines


class Cells:
    """Lines of segments as a Rich renderable, so a drawn image joins a message's other blocks."""

    def __init__(self, lines: list[list[Segment]]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for line in self.lines:
            yield from line
            yield Segment.line()
