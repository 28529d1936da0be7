"""SVG snapshots of the main screens at fixed sizes (pytest-textual-snapshot).

Deterministic: the demo's fixed clock, UTC, no ingest worker (the database is built before the
app starts), and the same scenes that `scripts/screenshots.py` renders for the README. The long
demo session is kept short here so the snapshots build fast. Update with `--snapshot-update`.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
from threadloom.tui.app import ThreadloomApp

from tests.tui_support import SCENES, build_demo_db, fixed_now, make_app, restore_tz, use_utc

# SVGs depend on Textual's rendering; they were recorded with this version. After upgrading
# Textual, look at the new output and re-record with `--snapshot-update`.
RECORDED_WITH = "8.2.8"
pytestmark = pytest.mark.skipif(
    version("textual") != RECORDED_WITH, reason=f"snapshots recorded with textual {RECORDED_WITH}"
)


@pytest.fixture(scope="module")
def snapshot_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo_db(tmp_path_factory.mktemp("snapshots"), long_turns=12)


@pytest.fixture(autouse=True)
def no_real_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "/nonexistent/.claude")  # a fixed path: it is shown
    monkeypatch.setenv("THREADLOOM_KEYMAP", str(tmp_path / "no-keymap.toml"))
    previous = use_utc()
    yield
    restore_tz(previous)


@pytest.mark.parametrize("scene", sorted(SCENES))
def test_scene(scene: str, snapshot_db: Path, snap_compare) -> None:
    run, size = SCENES[scene]
    app = make_app(snapshot_db)
    assert snap_compare(app, terminal_size=size, run_before=run)


def test_first_frame(snapshot_db: Path, snap_compare) -> None:
    app = make_app(snapshot_db)
    assert snap_compare(app, terminal_size=(100, 30))


def test_empty_state(tmp_path: Path, snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:
    from threadloom.core.adapters.claude import ClaudeAdapter

    # the list of places looked in grows with every adapter; the snapshot is about the layout
    monkeypatch.setattr("threadloom.core.adapters.all_adapters", lambda: [ClaudeAdapter()])
    app = ThreadloomApp(db_path=tmp_path / "empty.db", ingest=False, now=fixed_now)
    assert snap_compare(app, terminal_size=(100, 30))
