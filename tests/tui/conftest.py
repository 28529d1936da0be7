"""What every TUI test runs in: no real ~/.claude, keymap, settings or clipboard; times in UTC."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tui_support import build_demo_db, restore_tz, use_utc


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
    monkeypatch.setattr("threadloom.core.base.clipboard.copy_with", no_clipboard)
    previous = use_utc()
    yield settings
    restore_tz(previous)


@pytest.fixture(scope="module")
def demo_db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo archive ingested once per test module (a module's tests may change it: hide, tag);
    a module that needs a longer or shorter long session sets `DEMO_LONG_TURNS`."""
    long_turns = getattr(request.module, "DEMO_LONG_TURNS", None)
    folder = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    return build_demo_db(folder) if long_turns is None else build_demo_db(folder, long_turns=long_turns)
