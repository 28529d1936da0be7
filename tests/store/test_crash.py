"""`kill -9` in the middle of an ingest, then one plain ingest, gives what a clean run gives:
sessions, titles, token totals, branch counts, costs, the stats' sums and the signals.

The files an ingest reads are committed in batches while what spans sessions (titles, totals,
signals) is finished at the end of the run: a kill between the two must leave that work marked
in the database, for the next run to finish."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.store import db

from tests.builders.derived import DERIVED, derived, sessions_into

REPO = Path(__file__).resolve().parents[2]


def ingest_in_process(database: Path, projects: Path) -> None:
    conn = db.connect(database)
    try:
        report = run_ingest(conn, [projects], include_defaults=False)
        assert not report.errors, report.errors
    finally:
        conn.close()


def committed_files(database: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=0.05)
        try:
            return conn.execute("SELECT count(*) FROM source_files").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return 0


def embedded(database: Path, what: str = "count(vector)") -> int:
    try:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=0.05)
        try:
            return conn.execute(f"SELECT {what} FROM episodes").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return 0


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple]]:
    """What one clean ingest of the tests' 403 sessions derives, made once a module rather than
    once a test: the sessions are the same bytes in every test (fixed ids and times), and what is
    compared names no folder."""
    folder = tmp_path_factory.mktemp("clean")
    sessions_into(folder / "projects", 0, 3)
    sessions_into(folder / "projects", 3, 400)
    ingest_in_process(folder / "clean.db", folder / "projects")
    return derived(folder / "clean.db")


@pytest.mark.parametrize(
    "when", ["after a batch", "at the end", "while embedding", "a first load's turns read after its index"]
)
def test_kill_9_during_an_ingest_then_one_ingest_gives_a_clean_run_s_result(tmp_path, when, clean_run):
    projects = tmp_path / "projects"
    sessions_into(projects, 0, 3)
    database = tmp_path / "crashed.db"
    first_load = when.startswith("a first load")
    if not first_load:
        ingest_in_process(database, projects)  # an incremental ingest is what is killed
    sessions_into(projects, 3, 400)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "threadloom.core.cli", "ingest", "--db", str(database), "--only", "-q",
         "--source", str(projects)],
        env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    # killed once some files are committed (a batch), once all are (before what follows them), or
    # once the first batch of new turns is embedded (before the others are)
    wanted = 3 + 1 if when == "after a batch" else 3 + 400
    before = embedded(database)
    deadline = time.monotonic() + 120

    def running() -> bool:
        if first_load:  # its episodes are being built, after its search index (a batch of sessions is in)
            return embedded(database, "count(*)") == 0
        if when == "while embedding":
            return embedded(database) <= before
        return committed_files(database) < wanted

    while proc.poll() is None and running():
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    if proc.returncode == 0:
        pytest.skip("the ingest finished before it could be killed")
    assert committed_files(database) > 3
    if first_load:  # killed with some sessions' episodes built and others still marked for after the index
        with closing(sqlite3.connect(database)) as conn:
            left = conn.execute("SELECT count(*) FROM derived_pending WHERE kind = 'episodes'").fetchone()[0]
        if left == 0:
            pytest.skip("the first load's episodes were all built before it could be killed")
        assert left < 403 and embedded(database, "count(*)") > 0
    ingest_in_process(database, projects)
    after, expected = derived(database), clean_run
    for name in DERIVED:
        assert after[name] == expected[name], name
    assert len(expected["sessions"]) == 403 and expected["signals"]
    assert len(expected["episodes"]) >= 403 and all(row[-1] for row in expected["episodes"])
