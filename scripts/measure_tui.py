"""Measure the TUI's speed on a database (not a test: numbers depend on the machine).

    python scripts/measure_tui.py DB [--runs 5]

Reports, as medians:
  first frame      process start → the first frame with the projects and sessions drawn
                   (a fresh interpreter each run, so it includes importing Textual)
  open largest     selecting the session with the most messages → its first paint
  page down        one page of scrolling in that session → the next paint
  RSS              resident memory after browsing
  search           typing a query on the search screen → its hits in the list (includes the 150 ms
                   debounce), and the worker's own time (connect + search), over a fixed set of queries
  picker open      `f` on the last message of the largest session → the fork picker on screen, and
                   → its turns listed (read by a worker)
  fork plan        "Fork here" in that picker → the confirmation (the whole transcript planned)
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


SEARCH_QUERIES = ["checkout tax", "tests green", "invoise", "repository layer", "role:user fix", "tmux",
                  "migrated committed", "in:tools npm", "after:7d test", "zero rated"]


async def search_and_fork(db: Path) -> dict[str, float]:
    from tui.app import ThreadloomApp
    from tui.fork import ForkPicker
    from tui.messages import MessageView
    from tui.search import SearchScreen
    from tui.testing import wait_for_search

    app = ThreadloomApp(db_path=db, ingest=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        assert app.conn is not None
        typed, worker = [], []
        await pilot.press("slash")
        for query in SEARCH_QUERIES:
            await pilot.press(*query)
            await wait_for_search(pilot)
            screen = app.screen
            assert isinstance(screen, SearchScreen)
            typed.append(screen.latency * 1000)
            worker.append(screen.last_seconds * 1000)
            await pilot.press("ctrl+u")  # clear the query
            await wait_for_search(pilot)
        await pilot.press("escape")
        sid = app.conn.execute("SELECT id FROM agent_sessions ORDER BY message_count DESC LIMIT 1").fetchone()[0]
        app.jump_to_session(sid)
        await pilot.pause()
        app.query_one(MessageView).action_last()
        await pilot.pause()
        # polled with asyncio.sleep: Pilot.pause waits for the whole process to idle, workers included
        painted: list[float] = []
        t0 = time.perf_counter()
        app.action_fork()  # what `f` runs
        picker = app.screen
        assert isinstance(picker, ForkPicker)
        while not picker.is_mounted:
            await asyncio.sleep(0.001)
        picker.call_after_refresh(lambda: painted.append(time.perf_counter()))
        while not painted:
            await asyncio.sleep(0.001)
        picker_ms = (painted[0] - t0) * 1000
        while not picker.points_read:
            await asyncio.sleep(0.001)
        picker.call_after_refresh(lambda: painted.append(time.perf_counter()))
        while len(painted) < 2:
            await asyncio.sleep(0.001)
        points_ms = (painted[1] - t0) * 1000
        points = len(picker.points)
        t0 = time.perf_counter()
        picker.action_fork_here()
        while picker.pending is None and not picker.error:
            await asyncio.sleep(0.001)
        plan_ms = (time.perf_counter() - t0) * 1000
    return {"search_typed_ms": statistics.median(typed), "search_typed_max_ms": max(typed),
            "search_worker_ms": statistics.median(worker), "picker_points": points, "picker_open_ms": picker_ms,
            "picker_points_ms": points_ms,
            "fork_plan_ms": plan_ms}


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
    searches = [asyncio.run(search_and_fork(args.db)) for _ in range(max(1, args.runs // 2))]
    result = {
        "db": str(args.db),
        "first_frame_ms": round(statistics.median(firsts), 1),
        **{k: round(statistics.median(r[k] for r in runs), 1) for k in runs[0]},
        **{k: round(statistics.median(r[k] for r in searches), 1) for k in searches[0]},
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
