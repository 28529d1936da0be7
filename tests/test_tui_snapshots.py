"""SVG snapshots of the main screens at fixed sizes (pytest-textual-snapshot).

Deterministic: the demo's fixed clock, UTC, no ingest worker (the database is built before the
app starts), and the same scenes that `scripts/screenshots.py` renders for the README. The long
demo session is kept short here so the snapshots build fast. Update with `--snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.app import ThreadloomApp
from tui.testing import SCENES, build_demo_db, fixed_now, use_utc


@pytest.fixture(scope="module")
def snapshot_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    use_utc()
    return build_demo_db(tmp_path_factory.mktemp("snapshots"), long_turns=12)


@pytest.fixture(autouse=True)
def no_real_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "/nonexistent/.claude")  # a fixed path: it is shown
    monkeypatch.setenv("THREADLOOM_KEYMAP", str(tmp_path / "no-keymap.toml"))
    use_utc()


@pytest.mark.parametrize("scene", sorted(SCENES))
def test_scene(scene: str, snapshot_db: Path, snap_compare) -> None:
    run, size = SCENES[scene]
    app = ThreadloomApp(db_path=snapshot_db, ingest=False, now=fixed_now)
    assert snap_compare(app, terminal_size=size, run_before=run)


def test_first_frame(snapshot_db: Path, snap_compare) -> None:
    app = ThreadloomApp(db_path=snapshot_db, ingest=False, now=fixed_now)
    assert snap_compare(app, terminal_size=(100, 30))


def test_empty_state(tmp_path: Path, snap_compare) -> None:
    app = ThreadloomApp(db_path=tmp_path / "empty.db", ingest=False, now=fixed_now)
    assert snap_compare(app, terminal_size=(100, 30))
