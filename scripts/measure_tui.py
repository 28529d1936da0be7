"""Measure the TUI's speed on a database (not a test: numbers depend on the machine).

    python scripts/measure_tui.py DB [--runs 5] [--only first,browse,search] [--text markdown|raw]
                                     [--source DIR] [--installed]

Reports, as medians:
  first frame      process start → the first frame with the projects and sessions drawn; and
                   → settled, when the app's queue first runs empty (the frames after the first drawn)
                   (a fresh interpreter each run, so it includes importing Textual); with --source
                   the app also ingests DIR behind, as a plain `threadloom` launch does
  open largest     selecting the session with the most messages → its first paint
  page down        one page of scrolling in that session → the next paint
                   (--text: the messages' text rendered as Markdown, the viewer's default, or as written)
  RSS              resident memory after browsing
  search           typing a query on the search screen → its hits in the list (includes the 150 ms
                   debounce), and the worker's own time (connect + search), over a fixed set of queries
  picker open      `f` on the last message of the largest session → the fork picker on screen, and
                   → its turns listed (read by a worker)
  fork plan        "Fork here" in that picker → the confirmation (the whole transcript planned)

The threadloom measured is this checkout's (its folder goes first on sys.path), or with --installed
whatever the interpreter imports (PYTHONPATH, the installed package): bench/run.py runs it that way
and imports `first_frame_code` from here.
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

# Makes `threadloom.core` / `threadloom.tui` import from a checkout's core/ and tui/ (the installed
# package maps them the same way): `threadloom` becomes a namespace package rooted at the checkout.
CHECKOUT_IMPORT = """import sys, types
_pkg = types.ModuleType("threadloom")
_pkg.__path__ = [{root!r}]
sys.modules["threadloom"] = _pkg
"""

# Prints one JSON line once the app has settled: "ms" since the child's first line of Python to the
# first frame drawn with the projects and sessions in it (the first `App._display` after the panes
# are filled, as PERF.md measured Textual's first frames), and "at", CLOCK_MONOTONIC then
# (system-wide on Linux, so a parent that noted the clock when it started the process gets process
# start → first frame, the interpreter's own start included); "settled_ms" / "settled_at" when the
# app's queue first ran empty after mounting (the frames that follow the first one are drawn by then).
FIRST_FRAME = """
import time
t0 = time.perf_counter()
import json, sys
{path_setup}from pathlib import Path
from threadloom.tui.app import ThreadloomApp
from threadloom.tui.panes import ProjectList, SessionTree

class Timed(ThreadloomApp):
    first = None

    def _display(self, screen, update):
        super()._display(screen, update)
        if update is not None and self.first is None and self.panes_filled():
            self.first = (time.perf_counter(), time.clock_gettime(time.CLOCK_MONOTONIC))

    def panes_filled(self):
        screen = self.browser
        return screen.query_one(ProjectList).option_count > 0 and bool(screen.query_one(SessionTree).root.children)

    async def on_mount(self):
        self.call_after_refresh(self.done)  # queued first: runs when the queue is next empty
        await super().on_mount()

    def done(self):
        settled = (time.perf_counter(), time.clock_gettime(time.CLOCK_MONOTONIC))
        if {wait!r} and self.first is None and settled[0] - t0 < 300:
            self.set_timer(0.05, self.done)  # a first load: the data arrives after the first frames
            return
        first = self.first or settled
        print(json.dumps({{"ms": (first[0] - t0) * 1000, "at": first[1],
                          "settled_ms": (settled[0] - t0) * 1000, "settled_at": settled[1]}}), flush=True)
        cancel = getattr(self, "cancel_event", None)
        if cancel is not None:
            cancel.set()  # an ingest running behind stops at its next file
        self.exit()

Timed(db_path=Path({db!r}), sources={sources!r}, ingest={ingest!r}).run(headless=True, size=(140, 40))
"""


def first_frame_code(
    db: Path, *, sources: list[Path] | None = None, root: Path | None = ROOT, wait_for_data: bool = False
) -> str:
    """The `python -c` program of one first-frame measurement.

    With `sources` the app ingests them behind (as `threadloom --source …` does; the default roots
    under HOME are read too); without, it starts with the ingest off (`threadloom --no-ingest`).
    `root` goes first on the child's sys.path; None leaves the import path to the environment.
    `wait_for_data`: on a first load (an empty `db`) the first frames have no data yet; wait for
    the first one that has (the panes read the load's first transactions), then stop the load.
    """
    path_setup = CHECKOUT_IMPORT.format(root=str(root)) if root is not None else ""
    return FIRST_FRAME.format(
        path_setup=path_setup,
        db=str(db),
        sources=[str(s) for s in sources or []],
        ingest=bool(sources),
        wait=wait_for_data,
    )


def first_frame_ms(
    db: Path, *, sources: list[Path] | None = None, root: Path | None = ROOT
) -> tuple[float, float]:
    """The first frame with data and the settled app, in ms from the child's first line of Python
    (the interpreter's own ~12 ms start comes on top)."""
    code = first_frame_code(db, sources=sources, root=root)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    line = json.loads(out.stdout.strip().splitlines()[-1])
    return float(line["ms"]), float(line["settled_ms"])


async def browse(db: Path, *, markdown: bool = True) -> dict[str, float]:
    """Open the largest session, page down 10 times, jump to the end; with the messages' text
    rendered as Markdown (the default) or shown as written."""
    from threadloom.core.read import browse as queries
    from threadloom.tui.app import ThreadloomApp
    from threadloom.tui.messages import MessageView

    app = ThreadloomApp(db_path=db, ingest=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        assert app.conn is not None
        sid, count = app.conn.execute(
            "SELECT id, message_count FROM agent_sessions ORDER BY message_count DESC LIMIT 1"
        ).fetchone()
        view = app.query_one(MessageView)
        view.markdown = markdown
        frames: list[float] = []
        original = view.render_lines

        def timed_render(crop):  # type: ignore[no-untyped-def]
            lines = original(crop)
            frames.append(time.perf_counter())
            return lines

        view.render_lines = timed_render  # type: ignore[method-assign]
        t0 = time.perf_counter()
        app.browser.jump_to_session(sid)
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
    page_ms = statistics.median(pages) if pages else float("nan")  # no paint: the session is under a page
    return {
        "messages": count,
        "sessions": sessions,
        "open_ms": open_ms,
        "page_ms": page_ms,
        "end_ms": end_ms,
        "rss_mb": rss,
        "peak_rss_mb": _rss_mb("VmHWM"),
    }


async def stats_screen(db: Path) -> dict[str, float]:
    """`S` → the stats screen's table first painted with rows (the ledger's sums grouped by day)."""
    from textual.widgets import DataTable
    from threadloom.tui.app import ThreadloomApp
    from threadloom.tui.stats import StatsScreen

    painted: list[float] = []
    original = DataTable.render_lines

    def timed_render(self, crop):  # type: ignore[no-untyped-def]
        lines = original(self, crop)
        if self.row_count:
            painted.append(time.perf_counter())
        return lines

    DataTable.render_lines = timed_render  # type: ignore[method-assign]
    try:
        app = ThreadloomApp(db_path=db, ingest=False)
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause()
            t0 = time.perf_counter()
            app.browser.action_stats()  # what `S` runs
            screen = app.screen
            assert isinstance(screen, StatsScreen)
            while not painted:
                await asyncio.sleep(0.001)
            opened = (painted[0] - t0) * 1000
            await pilot.pause()
            rows = screen.query_one(DataTable).row_count
    finally:
        DataTable.render_lines = original  # type: ignore[method-assign]
    return {"stats_open_ms": opened, "stats_rows": rows}


SEARCH_QUERIES = [
    "checkout tax",
    "tests green",
    "invoise",
    "repository layer",
    "role:user fix",
    "tmux",
    "migrated committed",
    "in:tools npm",
    "after:7d test",
    "zero rated",
]


async def search_and_fork(db: Path) -> dict[str, float]:
    from threadloom.tui.app import ThreadloomApp
    from threadloom.tui.fork import ForkPicker
    from threadloom.tui.messages import MessageView
    from threadloom.tui.search import SearchScreen

    sys.path.insert(0, str(ROOT))  # the tests' helpers
    from tests.tui_support import wait_for_search

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
        sid = app.conn.execute(
            "SELECT id FROM agent_sessions ORDER BY message_count DESC LIMIT 1"
        ).fetchone()[0]
        app.browser.jump_to_session(sid)
        await pilot.pause()
        app.query_one(MessageView).action_last()
        await pilot.pause()
        # polled with asyncio.sleep: Pilot.pause waits for the whole process to idle, workers included
        painted: list[float] = []
        t0 = time.perf_counter()
        app.browser.action_fork()  # what `f` runs: it asks the app for the picker
        while not isinstance(app.screen, ForkPicker):
            await asyncio.sleep(0.001)
        picker = app.screen
        while not picker.is_mounted:
            await asyncio.sleep(0.001)
        picker.call_after_refresh(lambda: painted.append(time.perf_counter()))
        while not painted:
            await asyncio.sleep(0.001)
        picker_ms = (painted[0] - t0) * 1000
        while not picker.model.points_read:
            await asyncio.sleep(0.001)
        picker.call_after_refresh(lambda: painted.append(time.perf_counter()))
        while len(painted) < 2:
            await asyncio.sleep(0.001)
        points_ms = (painted[1] - t0) * 1000
        points = len(picker.model.points)
        t0 = time.perf_counter()
        picker.action_fork_here()
        while picker.model.pending is None and not picker.model.error:
            await asyncio.sleep(0.001)
        plan_ms = (time.perf_counter() - t0) * 1000
    return {
        "search_typed_ms": statistics.median(typed),
        "search_typed_max_ms": max(typed),
        "search_worker_ms": statistics.median(worker),
        "picker_points": points,
        "picker_open_ms": picker_ms,
        "picker_points_ms": points_ms,
        "fork_plan_ms": plan_ms,
    }


def _rss_mb(field: str = "VmRSS") -> float:
    """This process's resident memory now (VmRSS) or its high-water mark (VmHWM), in MiB."""
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return float("nan")


PARTS = ("first", "browse", "search", "stats")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("db", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--only",
        default=",".join(PARTS),
        help="comma-separated parts to measure: first (first frame), browse, search (search and fork), "
        "stats (the stats screen)",
    )
    parser.add_argument(
        "--text",
        choices=("markdown", "raw"),
        default="markdown",
        help="browse: the messages' text rendered as Markdown (the viewer's default) or as written (m)",
    )
    parser.add_argument(
        "--source",
        type=Path,
        action="append",
        default=[],
        help="first frame: ingest this folder behind, as a plain `threadloom` launch does",
    )
    parser.add_argument(
        "--installed",
        action="store_true",
        help="measure the threadloom the interpreter imports (PYTHONPATH, installed package), "
        "not this checkout",
    )
    args = parser.parse_args(argv)
    parts = {p.strip() for p in args.only.split(",") if p.strip()}
    if parts - set(PARTS):
        parser.error(
            f"--only: unknown part(s) {', '.join(sorted(parts - set(PARTS)))}; choose from {', '.join(PARTS)}"
        )
    root = None if args.installed else ROOT
    if root is not None:
        exec(CHECKOUT_IMPORT.format(root=str(root)))
    result: dict[str, object] = {"db": str(args.db)}
    if "first" in parts:
        firsts = [first_frame_ms(args.db, sources=args.source, root=root) for _ in range(args.runs)]
        result["first_frame_ms"] = round(statistics.median(f for f, _ in firsts), 1)
        result["settled_ms"] = round(statistics.median(s for _, s in firsts), 1)
    if "browse" in parts:
        markdown = args.text == "markdown"
        runs = [asyncio.run(browse(args.db, markdown=markdown)) for _ in range(max(1, args.runs // 2))]
        result.update({k: round(statistics.median(r[k] for r in runs), 1) for k in runs[0]})
    if "search" in parts:
        searches = [asyncio.run(search_and_fork(args.db)) for _ in range(max(1, args.runs // 2))]
        result.update({k: round(statistics.median(r[k] for r in searches), 1) for k in searches[0]})
    if "stats" in parts:
        opened = [asyncio.run(stats_screen(args.db)) for _ in range(max(1, args.runs // 2))]
        result.update({k: round(statistics.median(r[k] for r in opened), 1) for k in opened[0]})
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
