"""What every TUI test runs in: no real ~/.claude, keymap, settings or clipboard; times in UTC."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tui_support import restore_tz, use_utc


def no_clipboard(text: str) -> None:
    raise OSError("no clipboard in tests")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Never read the developer's own ~/.claude, keymap or settings, nor touch their clipboard (the
    app falls back to the terminal's, OSC 52); yields where this test's settings file goes."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "no-claude"))
    monkeypatch.setenv("THREADLOOM_KEYMAP", str(tmp_path / "no-keymap.toml"))
    settings = tmp_path / "config" / "settings.toml"
    monkeypatch.setenv("THREADLOOM_SETTINGS", str(settings))
    monkeypatch.setattr("threadloom.core.clipboard.copy_with", no_clipboard)
    previous = use_utc()
    yield settings
    restore_tz(previous)
