"""Fixtures every test gets or asks for: an isolated home, a fresh ledger (`conn`), fake agents on PATH.

The builders and helpers tests share are in tests/support.py and tests/builders/, never here."""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from threadloom.core.base.text import use_clock
from threadloom.core.ingest.pipeline import IngestReport, run_ingest
from threadloom.core.store import db

from tests.pg_support import hub_db, pg_server  # noqa: F401 - fixtures: one PostgreSQL server a worker
from tests.support import AGENTS, CORPUS, FAKE_AGENT, isolated

# pytest keeps the test modules it rewrites (for its assertions) in a cache of its own beside them
# (__pycache__/*-pytest-*.pyc), except where no bytecode is to be written: this environment says so
# (PYTHONDONTWRITEBYTECODE), and each worker of each run rewrote every test module again, about
# 5 s of every worker's start. The tests ask for no other bytecode; threadloom's own is compiled below.
sys.dont_write_bytecode = False

# An ingest looks its prices up in a process of its own unless the price table is loaded in its
# process already (core/insight/cost.py `_periods`): in a test that ingests in process, that was a
# Python started for every ingest, 0.25 s each, three quarters of a typical store test. Each worker
# loads the table once instead; the lookup gives the same periods either way, and the process of its
# own is tested where a `threadloom` process ingests (test_costs.py and every CLI test).
import genai_prices.data  # noqa: E402, F401

# What the suite keeps from run to run (tests/support.py `kept`: the agents' CLIs it installs, mypy's
# cache) is in the user's cache folder: named before that folder is moved below, which had made
# every run, and every worker, install the CLIs and check the types from scratch.
if not os.environ.get("THREADLOOM_TEST_CACHE"):
    from platformdirs import user_cache_dir

    os.environ["THREADLOOM_TEST_CACHE"] = user_cache_dir("threadloom-tests", appauthor=False)

# The price periods looked up are kept in the user's cache folder for the next archive (cost.py
# `known_periods`): the tests' go to a folder of this worker's, never to the developer's.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="threadloom-test-cache-")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], True)


def _memory_temp_root(least_free: int = 8 << 30) -> str | None:
    """/dev/shm where it is a memory filesystem and both it and the machine's memory have room to
    spare (8 GB: a whole run's folders take about 3 GB), else None: pytest's temporary folders go
    to the system's.

    Every test's database is made, committed and checkpointed in them: on a disk each fsync (of
    SQLite, of the archive writes it asks for) was CPU in the kernel's journal and a wait, about
    a tenth of the store tests' CPU. Nothing a test checks needs the bytes on a disk: a process
    killed mid-write leaves its writes in the page cache as it does on one."""
    shm = Path("/dev/shm")
    if sys.platform != "linux" or not os.access(shm, os.W_OK):
        return None
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            kind = next((line.split()[2] for line in mounts if line.split()[1:2] == [str(shm)]), "")
        with open("/proc/meminfo", encoding="utf-8") as meminfo:
            available = next(
                (int(line.split()[1]) << 10 for line in meminfo if line.startswith("MemAvailable:")), 0
            )
        free = os.statvfs(shm)
    except (OSError, ValueError):
        return None
    roomy = min(available, free.f_bavail * free.f_frsize) >= least_free
    return str(shm) if kind == "tmpfs" and roomy else None


# pytest's own way to name the folder its runs' temporary folders go in (read where the first is made,
# by the controller; xdist's workers make theirs inside it): a developer's own setting stands.
IN_MEMORY = not os.environ.get("PYTEST_DEBUG_TEMPROOT") and _memory_temp_root()
if IN_MEMORY:
    os.environ["PYTEST_DEBUG_TEMPROOT"] = IN_MEMORY

# A worker lives for hundreds of tests, and each TUI test leaves a Textual app's widget trees (cycles,
# tens of thousands of objects) that outlive the young generations: at Python's thresholds
# (700, 10, 10) over a quarter of a TUI test's time went to full collections of the whole heap
# (measured with gc.callbacks: 8.5 of 30 s over 20 tests; 2.7 s at these). Garbage waits a little
# longer: the TUI and snapshot tests in one process took 156 -> 123 s of CPU, peak RSS 645 -> 786 MB.
gc.set_threshold(50_000, 50, 50)


def pytest_configure(config: pytest.Config) -> None:
    """Byte-compile the code under test once, before any worker starts: each `threadloom` process
    a test starts (several hundred) and each worker would otherwise compile every module it imports
    from source again where no bytecode is written (PYTHONDONTWRITEBYTECODE, a fresh checkout):
    a quarter of a CLI test's time. Test modules are left to pytest, which rewrites them."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has done it
        return
    import compileall
    import re

    root = Path(__file__).resolve().parents[1]
    for folder in ("core", "tui", "tests"):
        if (root / folder).is_dir():
            compileall.compile_dir(
                root / folder, quiet=2, rx=re.compile(r"[/\\](test_[^/\\]*|conftest)\.py$")
            )


@pytest.hookimpl(optionalhook=True)  # a hook of xdist's: a run without it (-p no:xdist) still starts
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than there are cores. A TUI test spends a fifth of its time
    waiting for the app to go idle and a CLI test waiting for its subprocess; the extra worker
    runs in those gaps (on 2 cores: 73 s instead of 90 s for the suite)."""
    return (os.cpu_count() or 1) + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests marked `long(SECONDS)` run first, shared out among the workers: xdist's worksteal
    hands worker k the k-th of equal slices of the collection and steals from their ends, so each
    slice starts with its share of them (the longest first, each to the least loaded slice; a
    module's long tests kept together, as they share its set-up). Left where they were, they ran
    one after another on one worker and the run ended waiting for them."""
    marked = [item for item in items if item.get_closest_marker("long")]
    if not marked:
        return
    workers = int(config.workerinput["workercount"]) if hasattr(config, "workerinput") else 1

    def seconds(unit: list[pytest.Item]) -> float:
        return sum(float(item.get_closest_marker("long").args[0]) for item in unit)  # type: ignore[union-attr]

    units: dict[str, list[pytest.Item]] = {}
    for item in marked:
        units.setdefault(item.nodeid.split("::")[0], []).append(item)
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for unit in sorted(units.values(), key=seconds, reverse=True):
        least = loads.index(min(loads))
        shares[least] += unit
        loads[least] += seconds(unit)
    rest = [item for item in items if not item.get_closest_marker("long")]
    ordered: list[pytest.Item] = []
    for k, share in enumerate(shares):
        size = (len(items) - len(ordered)) // (workers - k)  # the slice worksteal sends worker k
        take = max(0, size - len(share))
        ordered += share + rest[:take]
        rest = rest[take:]
    items[:] = ordered + rest


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read the developer's real agent folders (~/.claude, ~/.codex, ~/.gemini, ~/.kimi-code, …: an ingest of the default
    folders would take what is there: a Gemini CLI run anywhere on the machine writes its
    projects.json), nor write the real database."""
    for name, value in isolated(tmp_path).items():  # nor their settings (tests/support.py)
        monkeypatch.setenv(name, value)


@pytest.fixture(autouse=True)
def _real_clock() -> Iterator[None]:
    """An app draws dates by the clock it is given (`use_clock`, process-wide: the tests' apps run
    at the demo's fixed time): the next test starts on the real one. Left set, `show` drawn in a
    worker after a TUI test dated a session of this year as another year's."""
    yield
    use_clock(time.time)


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    c = db.connect(tmp_path / "ledger.db")
    yield c
    c.close()


@pytest.fixture(scope="session")
def claude_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, IngestReport]:
    """../shared/corpus/claude-code (10 MB, read-only) ingested once a worker, as
    `run_ingest(conn, [that folder], include_defaults=False)` reads it: the database and the report.
    The tests that read all of it take a copy each (`claude_corpus_copy`), never this file."""
    source = CORPUS / "claude-code"
    if not source.is_dir():
        pytest.skip("../shared/corpus/claude-code is not present")
    path = tmp_path_factory.mktemp("claude-corpus") / "corpus.db"
    conn = db.connect(path)
    try:
        report = run_ingest(conn, [source], include_defaults=False)
    finally:
        conn.close()  # checkpointed: the one file is the whole database
    assert not report.errors, report.errors
    return path, report


@pytest.fixture(scope="session")
def claude_corpus_copy(claude_corpus: tuple[Path, IngestReport]) -> Callable[[Path], Path]:
    """Copies the ingested Claude Code corpus into a folder and gives the copy's path: a test may
    write to its copy (a search builds its index) without touching another's."""

    def copy(folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copyfile(claude_corpus[0], folder / "corpus.db"))

    return copy


# ---------------------------------------------------------------------- fake agents


@pytest.fixture
def fake_agents(tmp_path: Path) -> Path:
    """A folder of fake agents to put on PATH (see tests/test_command_safety.py's `run_printed`)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in AGENTS:
        (folder / name).write_text(FAKE_AGENT)
        (folder / name).chmod(0o755)
    return folder


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """Where a printed command is run from."""
    path = tmp_path / "sandbox"
    path.mkdir()
    return path


# ---------------------------------------------------------------------- Claude Code's own markup
# Written from real 2.1.x transcripts (read in place, see docs/FORMATS.md "Claude Code's markup"):
# `!` commands, slash commands and their output, an IDE selection, TodoWrite updates, hooks, and
# replies that open on an empty (omitted) thinking block as Claude Opus 4.7 writes them.
