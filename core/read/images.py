"""Images the logs embed, for the viewer, `show` and export: read again from their record only when
one is drawn, opened or saved (a page holds their type, size and place, never their bytes),
decoded strictly, and written to a private temporary file for the system viewer or beside the user.

`open_with` is the one seam to the system's image viewer; tests replace it."""

from __future__ import annotations

import base64
import binascii
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.text import one_line

if TYPE_CHECKING:
    from ..adapters.base import ImageRef

# the types a browser or an image viewer is handed; any other declared type is shown, never embedded
IMAGE_TYPES = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}


def human_bytes(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.1f} MB"
    if n >= 1000:
        return f"{n / 1e3:.1f} KB"
    return f"{n} B"


def describe(ref: ImageRef) -> str:
    """One line naming an image without showing it: "image/png · 12.3 KB · in the prompt"."""
    where = "in the prompt" if ref.place == "prompt" else "in a tool result"
    return f"{one_line(ref.media_type, 40)} · {human_bytes(ref.size)} · {where}"


@dataclass(frozen=True, slots=True)
class LoadedImage:
    """An image's bytes and the type they really are (read from their first bytes), or `note`
    saying in a few words why there is nothing to show."""

    media_type: str
    data: bytes = b""
    note: str | None = None


def sniff_type(data: bytes) -> str | None:
    """The image type `data` starts like, of the four IMAGE_TYPES; None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def decode(media_type: str, text: str) -> LoadedImage:
    """`text` as base64 (strictly: a damaged log is noted, not guessed at) of an image whose bytes
    must be one of IMAGE_TYPES."""
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        return LoadedImage(media_type, note="not valid base64")
    if not data:
        return LoadedImage(media_type, note="no image data in the log")
    real = sniff_type(data)
    if real is None:
        return LoadedImage(media_type, note="not a PNG, JPEG, GIF or WebP image")
    return LoadedImage(real, data)


def load(conn: sqlite3.Connection, entry_id: int, index: int) -> LoadedImage:
    """Image `index` of entry `entry_id`, read from its record by the adapter of its agent."""
    from ..adapters import ADAPTERS

    row = conn.execute(
        "SELECT e.raw, f.agent FROM entries e JOIN source_files f ON f.id = e.source_file_id WHERE e.id = ?",
        (entry_id,),
    ).fetchone()
    adapter = ADAPTERS.get(row[1]) if row else None
    found = adapter.image_data(bytes(row[0]), index) if row and adapter else None
    if found is None:
        return LoadedImage("image", note="the image is no longer in the archive")
    return decode(*found)


OPENER_WAIT = 2.0  # seconds: xdg-open and open return at once, with a status saying if a viewer ran
OPENER_FAILURES = {  # xdg-open's exit statuses
    1: "the opener was called wrongly",
    2: "the file was not found",
    3: "no program to show images was found (no desktop session here?)",
    4: "the viewer failed",
}


def _system_open(path: Path) -> None:
    """Hand `path` to the desktop's viewer (`open` on macOS, `xdg-open` elsewhere) and wait a
    moment for the opener's exit status: on a server or over SSH xdg-open finds no viewer and says
    so only that way. An opener still running then is taken to be showing the image."""
    program = "open" if sys.platform == "darwin" else "xdg-open"
    found = shutil.which(program)
    if found is None:
        raise OSError(f"{program} is not installed")
    process = subprocess.Popen(  # noqa: S603 - a fixed program and a path this process wrote
        [found, str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the viewer outlives threadloom and never gets its Ctrl+C
    )
    try:
        status = process.wait(timeout=OPENER_WAIT)
    except subprocess.TimeoutExpired:
        return
    if status != 0:
        why = OPENER_FAILURES.get(status, "it failed") if program == "xdg-open" else "it failed"
        raise OSError(f"{program} exited with status {status}: {why}")


open_with: Callable[[Path], None] = _system_open


def open_image(image: LoadedImage) -> Path:
    """Write the image to a private temporary file (0600, its type's extension) and open it in the
    system viewer; returns the file. Raises OSError when it cannot be written or opened (the file
    then removed: no viewer will read it). Waits up to OPENER_WAIT: run it off the UI thread."""
    fd, name = tempfile.mkstemp(prefix="threadloom-image-", suffix=IMAGE_TYPES[image.media_type])
    path = Path(name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(image.data)
        open_with(path)
    except OSError:
        path.unlink(missing_ok=True)
        raise
    return path


def save_image(image: LoadedImage, folder: Path, stem: str) -> Path:
    """Write the image into `folder` as `stem` plus its extension, or `stem-2`, `stem-3`… : never
    over a file that exists. Returns the path written."""
    suffix = IMAGE_TYPES[image.media_type]
    for n in range(1, 1000):
        path = folder / (f"{stem}{suffix}" if n == 1 else f"{stem}-{n}{suffix}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(image.data)
        return path
    raise FileExistsError(f"{folder / stem}{suffix} and 998 more names are taken")
