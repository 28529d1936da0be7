"""Measure the TUI's speed on a database (not a test: numbers depend on the machine).

    python scripts/measure_tui.py DB [--runs 5]

Reports, as medians:
  first frame      process start → the first frame with the projects and sessions drawn
                   (a fresh interpreter each run, so it includes importing Textual)
  open largest     selecting the session with the most messages → its first paint
  page down        one page of scrolling in that session → the next paint
  RSS              resident memory after browsing
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FIRST_FRAME = """
import time
t0 = time.perf_counter()
import sys
sys.path.insert(0, {root!r})
from pathlib import Path
from tui.app import ThreadloomApp

class Timed(ThreadloomApp):
    def on_mount(self):
        self.call_after_refresh(self.done)  # queued first: the frame with projects and sessions
        super().on_mount()

    def done(self):
        print((time.perf_counter() - t0) * 1000)
        self.exit()

Timed(db_path=Path({db!r}), ingest=False).run(headless=True, size=(140, 40))
"""


def first_frame_ms(db: Path) -> float:
    """From the child's first line of Python (the interpreter's own ~12 ms start comes on top)."""
    code = FIRST_FRAME.format(root=str(ROOT), db=str(db))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


async def browse(db: Path) -> dict[str, float]:
    from core import browse as queries
    from tui.app import ThreadloomApp
    from tui.messages import MessageView

    app = ThreadloomApp(db_path=db, ingest=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        assert app.conn is not None
        sid, count = app.conn.execute(
            "SELECT id, message_count FROM agent_sessions ORDER BY message_count DESC LIMIT 1"
        ).fetchone()
        view = app.query_one(MessageView)
        frames: list[float] = []
        original = view.render_lines

        def timed_render(crop):  # type: ignore[no-untyped-def]
            lines = original(crop)
            frames.append(time.perf_counter())
            return lines

        view.render_lines = timed_render  # type: ignore[method-assign]
        t0 = time.perf_counter()
        app.jump_to_session(sid)
        await pilot.pause()
        open_ms = (frames[0] - t0) * 1000 if frames else float("nan")
        view.focus()
        pages = []
        for _ in range(10):
            frames.clear()
            t0 = time.perf_counter()
            view.action_page_down()
            await pilot.pause()
            if frames:
                pages.append((frames[0] - t0) * 1000)
        frames.clear()
        t0 = time.perf_counter()
        view.action_last()
        await pilot.pause()
        end_ms = (frames[0] - t0) * 1000 if frames else float("nan")
        rss = _rss_mb()
        sessions = len(queries.jump_targets(app.conn))
    return {"messages": count, "sessions": sessions, "open_ms": open_ms, "page_ms": statistics.median(pages),
            "end_ms": end_ms, "rss_mb": rss}


def _rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("db", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    firsts = [first_frame_ms(args.db) for _ in range(args.runs)]
    runs = [asyncio.run(browse(args.db)) for _ in range(max(1, args.runs // 2))]
    result = {
        "db": str(args.db),
        "first_frame_ms": round(statistics.median(firsts), 1),
        **{k: round(statistics.median(r[k] for r in runs), 1) for k in runs[0]},
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
