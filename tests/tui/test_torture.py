"""Every writer at once: the TUI following a session its agent appends to every 50 ms and reading
everything new (Ctrl+R), while `threadloom ingest` and `threadloom search` run in another process
every second. The archive must come out whole: SQLite's integrity check and the search index's own
check pass, every appended line is stored once, and no command or screen ever says the database is
damaged.

The run lasts until every pair of writers has been seen at work at once, each pair `ROUNDS` times
(the TUI's follow and its Ctrl+R, each beside an ingest and beside a search of the other process,
and the agent appending through all of them): about 10 s on a 2-core machine. It fails,
naming the pairs never seen together, when they have not all been after `LIMIT` s.
`THREADLOOM_TORTURE_SECONDS` makes it last at least that long (a soak: 600 for ten minutes)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from threadloom.core.read import browse
from threadloom.tui import workers
from threadloom.tui.app import ThreadloomApp
from threadloom.tui.messages import MessageView
from threadloom.tui.screens import ErrorScreen

from tests.support import readers_seen
from tests.tui_support import Seen, build_demo_db, make_app, open_checkout, run_test, until

SECONDS = float(os.environ.get("THREADLOOM_TORTURE_SECONDS", "0"))  # at least this long
LIMIT = 120.0  # seconds past SECONDS for every pair to be seen together, or the test fails
ROUNDS = 3  # times each pair of writers must be seen at work at once
APPEND_EVERY = 0.05
CLI_EVERY = 1.0
REFRESH_EVERY = 1.0  # at least this long between two Ctrl+R
MAX_GAP = 20.0  # seconds between two of the other terminal's runs: longer is a writer held up
REPO = Path(__file__).resolve().parents[2]

Span = tuple[float, float]  # when a writer was at work (monotonic start, end)


class Agent(threading.Thread):
    """Appends one assistant line every 50 ms to a Claude Code session file, as an agent at work."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        last = json.loads(path.read_bytes().splitlines()[-1])
        self.parent, self.session, self.cwd = last["uuid"], last["sessionId"], last.get("cwd")
        self.written: list[str] = []
        self.times: list[float] = []  # when each line was written (monotonic)
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(APPEND_EVERY):
            uuid = f"torture-{len(self.written):05d}"
            record = {
                "type": "assistant",
                "uuid": uuid,
                "parentUuid": self.parent,
                "sessionId": self.session,
                "timestamp": "2026-06-12T15:00:00Z",
                "cwd": self.cwd,
                "isSidechain": False,
                "message": {
                    "role": "assistant",
                    "id": f"msg_{uuid}",
                    "model": "claude-opus-4-1",
                    "content": [{"type": "text", "text": f"step {uuid} of the long refactor"}],
                },
            }
            with self.path.open("ab") as f:
                f.write(json.dumps(record).encode() + b"\n")
            self.written.append(uuid)
            self.times.append(time.monotonic())
            self.parent = uuid


class OtherTerminal(threading.Thread):
    """`threadloom ingest` then `threadloom search` in another process, every second."""

    def __init__(self, db: Path, source: Path) -> None:
        super().__init__(daemon=True)
        self.db, self.source = db, source
        self.runs: list[subprocess.CompletedProcess[str]] = []
        self.ended: list[float] = []  # when each run ended (monotonic)
        self.spans: dict[str, list[Span]] = {"ingest": [], "search": []}
        self.running: str | None = None  # the command at work now
        self.stop = threading.Event()

    def cli(self, *args: str) -> None:
        started = time.monotonic()
        self.running = args[0]
        try:
            self.runs.append(
                subprocess.run(
                    [sys.executable, "-m", "threadloom.core.cli", *args, "--db", str(self.db)],
                    capture_output=True,
                    text=True,
                    cwd=REPO,
                    timeout=120,
                )
            )
        finally:
            self.running = None
        self.ended.append(time.monotonic())
        self.spans[args[0]].append((started, self.ended[-1]))

    def run(self) -> None:
        while not self.stop.wait(CLI_EVERY):
            self.cli("ingest", "--source", str(self.source), "--only", "--json")
            self.cli("search", "long refactor", "--limit", "5")


def timed(work: Callable[..., Any], spans: list[Span]) -> Callable[..., Any]:
    """`work` (a worker's function), keeping when each call ran."""

    def run(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return work(*args, **kwargs)
        finally:
            spans.append((started, time.monotonic()))

    return run


def together(a: list[Span], b: list[Span]) -> int:
    """How many spans of `a` overlap one of `b`."""
    return sum(any(s < e2 and s2 < e for s2, e2 in b) for s, e in a)


def whole(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.execute("INSERT INTO search_fts(search_fts, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


@pytest.mark.long(10)
async def test_the_archive_survives_every_writer_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = build_demo_db(tmp_path, long_turns=3)
    monkeypatch.setattr(ThreadloomApp, "FOLLOW_SECONDS", 0.1)
    follows: list[Span] = []
    refreshes: list[Span] = []  # the TUI's own ingests (Ctrl+R)
    monkeypatch.setattr(workers, "follow", timed(workers.follow, follows))
    monkeypatch.setattr(workers, "ingest", timed(workers.ingest, refreshes))
    app = make_app(db)
    seen = Seen(workers.Followed)
    async with run_test(app, size=(140, 40), message_hook=seen) as pilot:
        sid = await open_checkout(pilot, app)
        assert app.conn is not None
        source = browse.session_source(app.conn, sid)
        assert source is not None
        agent, other = Agent(Path(source[0])), OtherTerminal(db, tmp_path / "archive")

        def pairs() -> dict[str, int]:
            """Each pair of writers: how often both were at work at once."""
            cli = other.spans
            appends = [(t, t) for t in agent.times]
            return {
                "the TUI's follow and an ingest": together(follows, cli["ingest"]),
                "the TUI's follow and a search": together(follows, cli["search"]),
                "Ctrl+R and an ingest": together(refreshes, cli["ingest"]),
                "Ctrl+R and a search": together(refreshes, cli["search"]),
                "the agent's appends and a follow": together(follows, appends),
                "the agent's appends and Ctrl+R": together(refreshes, appends),
                "the agent's appends and an ingest": together(cli["ingest"], appends),
            }

        agent.start()
        other.start()
        started = last_refresh = time.monotonic()
        try:
            while (
                time.monotonic() - started < SECONDS
                or min(pairs().values()) < ROUNDS
                or len(other.runs) < 2 * ROUNDS
            ):
                assert time.monotonic() - started < SECONDS + LIMIT, (
                    f"never at once {ROUNDS} times in {LIMIT:g} s: "
                    f"{ {k: n for k, n in pairs().items() if n < ROUNDS} }"
                )
                await pilot.pause(0.2)
                assert not isinstance(app.screen, ErrorScreen), app.archive.open_error
                # read everything new, as Ctrl+R does, while the other terminal is at work: the
                # one of its commands the TUI's ingest has met the fewer times
                if time.monotonic() - last_refresh < REFRESH_EVERY or other.running is None:
                    continue
                if other.running != min(
                    ("ingest", "search"), key=lambda c: together(refreshes, other.spans[c])
                ):
                    continue
                last_refresh = time.monotonic()
                await pilot.press("ctrl+r")
                await until(pilot, lambda: not app.archive.ingesting, 30)
                # the TUI's connections hold a shared lock on the file for as long as they are
                # open: another process must never get it whole (it would checkpoint and remove
                # the WAL under them)
                assert readers_seen(db)
        finally:
            agent.stop.set()
            other.stop.set()
            agent.join()
            other.join()
        elapsed = time.monotonic() - started
        view = app.query_one(MessageView)
        await until(pilot, lambda: any(m.report.records_added for m in seen.of(workers.Followed)), 20)
        await app.workers.wait_for_complete()
        assert not isinstance(app.screen, ErrorScreen), app.archive.open_error
        shown = view.count
    failed = [r for r in other.runs if r.returncode != 0 or "damaged" in r.stdout + r.stderr]
    assert not failed, failed[0].stderr or failed[0].stdout
    # the other terminal kept running all along: never held up for long (a pair of runs takes
    # 1.5-3 s on an idle 2-core machine, twice that with other suites running: a count of runs
    # measured the machine's load, a gap measures waiting on the TUI)
    gaps = [b - a for a, b in zip([started, *other.ended], other.ended, strict=False)]
    assert len(other.runs) >= 4 and max(gaps) < MAX_GAP, (
        f"{len(other.runs)} runs, longest gap {max(gaps):.1f} s"
    )
    assert len(agent.written) >= elapsed / APPEND_EVERY / 4
    # one more ingest takes in what the last append left, then everything is checked
    final = subprocess.run(
        [sys.executable, "-m", "threadloom.core.cli", "ingest", "--source", str(tmp_path / "archive"),
         "--only", "--db", str(db)],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert final.returncode == 0, final.stderr
    whole(db)
    conn = sqlite3.connect(db)
    try:
        counts = dict(
            conn.execute(
                "SELECT uuid, count(*) FROM entries WHERE uuid LIKE 'torture-%' AND byte_offset >= 0 GROUP BY uuid"
            ).fetchall()
        )
        messages = conn.execute(
            "SELECT count(*) FROM entries WHERE session_id = ? AND uuid LIKE 'torture-%' AND seq IS NOT NULL",
            (sid,),
        ).fetchone()[0]
    finally:
        conn.close()
    assert sorted(counts) == agent.written
    assert set(counts.values()) == {1}
    assert messages == len(agent.written)
    assert shown > 0
