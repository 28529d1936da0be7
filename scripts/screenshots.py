"""Regenerate the SVG screenshots in screenshots/ from the demo archive.

    python scripts/screenshots.py [OUTDIR [SCENE ...]]

Each scene (see `tests/tui_support.py`'s `SCENES`) drives the real app headless at a fixed size, with the
demo's fixed clock, UTC and a fixed (fake) Claude Code folder, so the files only change when the
interface does.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' helpers: scenes, demo database, fixed clock

from threadloom.tui.app import ThreadloomApp  # noqa: E402

from tests.tui_support import SCENES, build_demo_db, fixed_now, use_utc  # noqa: E402


async def shoot(db_path: Path, out: Path, name: str) -> Path:
    scene, size = SCENES[name]
    app = ThreadloomApp(db_path=db_path, ingest=False, now=fixed_now)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await scene(pilot)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        path = out / f"{name}.svg"
        app.save_screenshot(str(path))
    return path


def main(argv: list[str]) -> int:
    use_utc()
    # the fork picker shows where Claude Code looks for sessions: a fixed path (the snapshot tests'
    # own), not the home folder of whoever regenerates the pictures; and no personal keymap or settings
    os.environ["CLAUDE_CONFIG_DIR"] = "/nonexistent/.claude"
    os.environ["THREADLOOM_KEYMAP"] = "/nonexistent/keymap.toml"
    out = Path(argv[1]) if len(argv) > 1 else ROOT / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="threadloom-shots-") as tmp:
        db_path = build_demo_db(Path(tmp))
        os.environ["THREADLOOM_SETTINGS"] = str(Path(tmp) / "settings.toml")  # the defaults, thrown away
        for name in argv[2:] or list(SCENES):
            print(asyncio.run(shoot(db_path, out, name)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
