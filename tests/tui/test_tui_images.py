"""Pilot tests of images in the viewer: drawn as half-block cells in a thread, one-line notes for
what cannot be drawn (garbage base64, bytes Pillow cannot read), `o` opening one through the core's
seam and `w` saving it beside the user, never over a file."""

from __future__ import annotations

import base64
import io
import json
import os
import sys
from functools import cache
from pathlib import Path

import pytest
from PIL import Image
from threadloom.core.read import images
from threadloom.core.store import db
from threadloom.tui import images as tui_images
from threadloom.tui.messages import MessageView
from threadloom.tui.screens import HelpScreen

from tests.builders.claude import Transcript
from tests.support import ingest
from tests.tui_support import make_app, run_test, until

SID = "ffffffff-1111-4222-8333-000000000001"


@cache
def png(width: int, height: int, colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, "PNG")
    return out.getvalue()


def image_block(data: bytes | str) -> dict:
    text = data if isinstance(data, str) else base64.b64encode(data).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": text}}


@pytest.fixture
def images_db(tmp_path: Path) -> Path:
    """One session: a prompt with a red 1×1 PNG, one with a 4000×4000 blue PNG, one with text that
    is not base64 and one whose bytes are base64 of something Pillow cannot read."""
    t = Transcript(tmp_path / "projects" / "-srv-pics" / f"{SID}.jsonl", SID)
    shots = [
        png(1, 1, (255, 0, 0)),
        png(4000, 4000, (0, 0, 255)),
        "%%% not base64 %%%",
        b"\x89PNG\r\n\x1a\nbroken",
    ]
    for n, shot in enumerate(shots):
        content = [{"type": "text", "text": f"picture {n}"}, image_block(shot)]
        t.add({"type": "user", "message": {"role": "user", "content": content}})
        t.assistant(f"seen {n}")
    t.assistant(
        "Reading it",
        tools=[{"type": "tool_use", "id": "tu1", "name": "Read", "input": {"file_path": "/a.png"}}],
    )
    result = {"type": "tool_result", "tool_use_id": "tu1", "content": [image_block(shots[0])]}
    t.add({"type": "user", "message": {"role": "user", "content": [result]}})
    t.path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in t.lines))
    conn = db.connect(tmp_path / "pics.db")
    ingest(conn, tmp_path / "projects")
    conn.close()
    return tmp_path / "pics.db"


def image_blocks(view: MessageView) -> list[list[str]]:
    """The lines of every image block of the session's messages, as text."""
    out = []
    for pos in range(len(view.seqs)):
        rendered = view.ensure(pos)
        for block in rendered.blocks:
            if block.kind == "image":
                out.append([s.text.strip() for s in rendered.strips[block.start : block.end]])
    return out


async def opened(pilot) -> MessageView:
    app = pilot.app
    await pilot.pause()
    app.browser.jump_to_session(SID)
    await pilot.pause()
    view = app.query_one(MessageView)
    # every image comes into view (each is read and measured), until those that decode are drawn
    # by their threads: no blank placeholder line is left
    await until(pilot, lambda: all(len(lines) == 1 or lines[1] for lines in image_blocks(view)))
    return view


async def test_images_draw_as_half_blocks_and_notes_never_crash(images_db: Path) -> None:
    app = make_app(images_db)
    async with run_test(app, size=(140, 40)) as pilot:
        view = await opened(pilot)
        tiny, big, garbage, broken, read = image_blocks(view)
        assert read == ["▣ image/png · 69 B · in a tool result", "▀"]
        assert tiny == ["▣ image/png · 69 B · in the prompt", "▀"]
        # the 4000×4000 image fits the pane: half its height in lines, a square of cells
        rows = view.scrollable_content_region.height // 2
        assert tui_images.MIN_ROWS < rows < tui_images.MAX_ROWS
        assert big[0].startswith("▣ image/png · ") and len(big) == 1 + rows
        assert set("".join(big[1:])) == {"▀"} and len(big[1]) == 2 * rows
        # the Read's image sits under its call, with no "user" header of its own
        heads = [s.text.strip() for p in range(len(view.seqs)) for s in view.ensure(p).strips]
        assert sum(h.startswith("● user") for h in heads) == 4  # the four prompts'
        read_at = next(i for i, h in enumerate(heads) if h.startswith("▸ Read  /a.png"))
        assert heads[read_at + 1] == "▣ image/png · 69 B · in a tool result", heads[read_at:]
        assert garbage == ["▣ image/png · 13 B · in the prompt  (not valid base64)"]
        assert broken == ["▣ image/png · 14 B · in the prompt  (Pillow cannot read this image)"]
        # the cells carry the pixels: red over red for the 1×1 image
        pos = next(p for p in range(len(view.seqs)) if any(b.kind == "image" for b in view.ensure(p).blocks))
        rendered = view.ensure(pos)
        block = next(b for b in rendered.blocks if b.kind == "image")
        cell = next(s for s in rendered.strips[block.end - 1] if s.text == "▀")
        assert cell.style is not None and cell.style.color is not None and cell.style.bgcolor is not None
        assert cell.style.color.get_truecolor() == (255, 0, 0) == cell.style.bgcolor.get_truecolor()
        # a shorter terminal: the big image is drawn again, to half the new pane's height
        await pilot.resize_terminal(140, 24)
        await until(pilot, lambda: view.scrollable_content_region.height < 2 * rows)
        short = view.scrollable_content_region.height // 2
        await until(pilot, lambda: len(image_blocks(view)[1]) == 1 + short and image_blocks(view)[1][1])
        assert short < rows and len(image_blocks(view)[1][1]) == 2 * short


async def test_o_opens_the_image_through_the_seam_and_w_saves_it_here(
    images_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Path] = []
    monkeypatch.setattr(images, "open_with", seen.append)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    app = make_app(images_db)
    async with run_test(app, size=(140, 40)) as pilot:
        view = await opened(pilot)
        view.focus()
        while (block := view.current_block()) is None or block.kind != "image":
            view.action_cursor_down()
        await pilot.press("o")
        await until(pilot, lambda: any("in the image viewer" in n.message for n in app._notifications))
        assert len(seen) == 1 and seen[0].read_bytes() == png(1, 1, (255, 0, 0))
        seen[0].unlink()
        (here / f"image-{SID[-12:]}-0-1.png").write_bytes(b"mine")
        await pilot.press("w")
        await pilot.pause()
        saved = sorted(p.name for p in here.iterdir())
        assert saved == [f"image-{SID[-12:]}-0-1-2.png", f"image-{SID[-12:]}-0-1.png"]
        assert (here / saved[0]).read_bytes() == png(1, 1, (255, 0, 0))
        assert (here / saved[1]).read_bytes() == b"mine"
        assert any(f"Saved {here / saved[0]}" in n.message for n in app._notifications)
        # on the garbage image: a note, and nothing written
        while (block := view.current_block()) is None or "not valid base64" not in view.ensure(
            view.cursor[0]
        ).strips[block.start].text:
            view.action_cursor_down()
        await pilot.press("w")
        await pilot.pause()
        assert len(list(here.iterdir())) == 2
        assert any("not valid base64" in n.message for n in app._notifications)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        keys = {key_id: key for key, _, key_id in app.screen.pane_keys}
        assert (keys["messages.open-image"], keys["messages.save-image"]) == ("o", "w")


async def test_o_says_when_no_viewer_ran_and_leaves_no_file(
    images_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Headless or over SSH xdg-open exits 3 at once: said (with w to save it), not "Opened"."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    opener = bin_dir / ("open" if sys.platform == "darwin" else "xdg-open")
    opener.write_text('#!/bin/sh\necho "$1" > "$(dirname "$0")/given"\nexit 3\n')
    opener.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    app = make_app(images_db)
    async with run_test(app, size=(140, 40)) as pilot:
        view = await opened(pilot)
        view.focus()
        while (block := view.current_block()) is None or block.kind != "image":
            view.action_cursor_down()
        await pilot.press("o")
        await until(pilot, lambda: any("Could not open" in n.message for n in app._notifications))
        said = [n.message for n in app._notifications]
        assert not any("in the image viewer" in m for m in said)
        assert any("exited with status 3" in m and "w saves it" in m for m in said), said
        given = Path((bin_dir / "given").read_text().strip())
        assert given.name.startswith("threadloom-image-") and not given.exists()
