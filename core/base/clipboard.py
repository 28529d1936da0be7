"""The one seam to the system clipboard. Tests replace `copy_with`.

pyperclip first; when it cannot reach a clipboard (no display, SSH, no xclip) the caller falls back
to the terminal's OSC 52 (the TUI does this through Textual) and always shows the text to copy by hand.
"""

from __future__ import annotations

from collections.abc import Callable


def _pyperclip_copy(text: str) -> None:
    import pyperclip

    pyperclip.copy(text)


copy_with: Callable[[str], None] = _pyperclip_copy


def copy(text: str) -> str | None:
    """Copy `text`; returns "system clipboard" on success, None when no clipboard is reachable."""
    try:
        copy_with(text)
    except Exception:  # pyperclip raises its own exception types, and OSError/FileNotFoundError
        return None
    return "system clipboard"
