"""Benchmark harness for threadloom (issue 7): one command, every scenario, median of N runs.

    /work/venv/bin/python bench/run.py --sizes 100M,1G --runs 3
    /work/venv/bin/python bench/run.py --quick --archive-dir /tmp/a --out /tmp/r   # 5M, 1 run, no claude-code-log

Archives come from bench/gen_archive.py and are cached under bench/archives/ (git-ignored). Every
measurement is a whole process started with subprocess and timed with time.perf_counter; peak RSS
comes from os.wait4 (the largest process of the tree); the TUI rows come from
scripts/measure_tui.py (headless Textual). Results: a table on stdout,
bench/results/latest.json and bench/results/latest.md. See bench/README.md for what each
scenario measures.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import math
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(REPO / "scripts"))

import gen_archive  # noqa: E402  (a sibling script, not a package)
import measure_tui  # noqa: E402  (scripts/measure_tui.py; imports neither core nor tui at load)

MB = 1e6
FLOOR = REPO.parent / "shared" / "tools" / "ingest_floor.py"  # the floor of a cold ingest (shared/README.md)
CCL_VENV = BENCH / ".venv-ccl"
NOT_BUILT = "not built yet"
TUI_LAUNCHES = 3  # first-frame launches per run and mode (their median is the run's value)
SEARCH_REPEAT = 5  # timings of each query after its first (their median is the query's value)


# ---------------------------------------------------------------------- processes


@dataclass
class Proc:
    """One finished process: wall time, exit code, peak RSS, output."""

    cmd: list[str]
    seconds: float
    returncode: int
    peak_rss_mb: float  # largest single process of the tree (os.wait4 ru_maxrss)
    tree_rss_mb: float | None  # sum over the process tree, sampled 10 times a second (if asked)
    cpu_seconds: float  # user + system CPU of the command and its children
    foreign_cpu_s: float  # CPU seconds other processes used on the machine meanwhile (noise)
    stdout: str
    stderr: str
    started_at: float | None = None  # CLOCK_MONOTONIC when the launcher forked the command

    def check(self) -> Proc:
        if self.returncode != 0:
            raise RuntimeError(f"{' '.join(self.cmd)} exited {self.returncode}:\n{self.stderr[-3000:]}")
        return self

    def json(self) -> dict[str, Any]:
        lines = [ln for ln in self.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            raise RuntimeError(
                f"no JSON on stdout of {' '.join(self.cmd)}:\n{self.stdout[-2000:]}\n{self.stderr[-2000:]}"
            )
        return json.loads(lines[-1])


# The measured command is started by a tiny launcher process. A child's ru_maxrss starts from the
# high-water mark of the memory image it exec()s from (the parent's, after fork or vfork), so a
# command forked straight from this harness would report at least the harness's own RSS. The
# launcher is a bare `python -I -S` (~10 MB) that times the command and reports its rusage.
LAUNCHER = """
import json, os, sys, time
report, cmd = sys.argv[1], sys.argv[2:]
started = time.perf_counter()
started_at = time.clock_gettime(time.CLOCK_MONOTONIC)
pid = os.fork()
if pid == 0:
    try:
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - started
with open(report, "w") as f:
    json.dump({"seconds": seconds, "maxrss_kb": usage.ru_maxrss, "cpu": usage.ru_utime + usage.ru_stime,
               "started_at": started_at}, f)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _tree_rss_bytes(pid: int, include_self: bool = True) -> int:
    """Resident bytes of pid's descendants (and pid); shared pages are counted in each process."""
    total = 0
    stack = [pid]
    page = os.sysconf("SC_PAGE_SIZE")
    while stack:
        p = stack.pop()
        try:
            if include_self or p != pid:
                with open(f"/proc/{p}/statm") as f:
                    total += int(f.read().split()[1]) * page
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return total


def run_process(
    cmd: list[str], env: dict[str, str], *, sample_tree: bool = False, timeout: float | None = None
) -> Proc:
    """Run cmd to completion through the launcher; its wall time and peak RSS, and its output."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile(suffix=".json") as report,
    ):
        peak_tree = 0
        done = threading.Event()
        launcher = [sys.executable, "-I", "-S", "-c", LAUNCHER, report.name, *cmd]
        busy_before = busy_cpu_seconds()
        started = time.perf_counter()
        # run from the (empty) HOME: with `python -m core.cli` the current folder would come first on sys.path
        proc = subprocess.Popen(
            launcher, env=env, cwd=env.get("HOME"), stdin=subprocess.DEVNULL, stdout=out, stderr=err
        )

        def sample() -> None:
            nonlocal peak_tree
            while not done.wait(0.1):
                peak_tree = max(peak_tree, _tree_rss_bytes(proc.pid, include_self=False))

        sampler = threading.Thread(target=sample, daemon=True) if sample_tree else None
        if sampler is not None:
            sampler.start()
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            for child in _children(proc.pid):
                _kill_tree(child)
            proc.kill()

        killer = threading.Timer(timeout, kill) if timeout else None
        if killer is not None:
            killer.start()
        returncode = proc.wait()
        outer_seconds = time.perf_counter() - started
        busy = busy_cpu_seconds() - busy_before
        done.set()
        if killer is not None:
            killer.cancel()
        if sampler is not None:
            sampler.join()
        if timed_out.is_set():
            raise TimeoutError(f"{' '.join(cmd)} still running after {timeout:.0f} s: stopped")
        try:
            measured = json.loads(Path(report.name).read_text())
        except (OSError, ValueError):
            measured = {"seconds": outer_seconds, "maxrss_kb": 0, "cpu": 0.0}
        out.seek(0)
        err.seek(0)
        return Proc(
            cmd=cmd,
            seconds=measured["seconds"],
            returncode=returncode,
            peak_rss_mb=measured["maxrss_kb"] * 1024 / MB,
            tree_rss_mb=peak_tree / MB if sample_tree else None,
            cpu_seconds=measured["cpu"],
            foreign_cpu_s=max(0.0, busy - measured["cpu"]),
            stdout=out.read().decode(errors="replace"),
            stderr=err.read().decode(errors="replace"),
            started_at=measured.get("started_at"),
        )


def busy_cpu_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (/proc/stat)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def wait_for_quiet(max_wait: float, threshold: float = 0.25) -> float:
    """Wait (up to max_wait s) until other processes use less than `threshold` of a core. Returns the wait."""
    started = time.perf_counter()
    while time.perf_counter() - started < max_wait:
        before = busy_cpu_seconds()
        time.sleep(0.5)
        if (busy_cpu_seconds() - before) / 0.5 < threshold:
            break
    return time.perf_counter() - started


def _children(pid: int) -> list[int]:
    try:
        return [
            int(c)
            for task in os.listdir(f"/proc/{pid}/task")
            for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        ]
    except (OSError, ValueError):
        return []


def _kill_tree(pid: int) -> None:
    """Kill a process we started and its descendants (by pid, children first)."""
    for child in _children(pid):
        _kill_tree(child)
    with contextlib.suppress(OSError):
        os.kill(pid, 9)


# ---------------------------------------------------------------------- the tools


@dataclass
class Tools:
    threadloom: list[str]
    ccl: list[str] | None
    ccl_version: str | None
    ccl_problem: str | None
    home: Path  # an empty HOME and CLAUDE_CONFIG_DIR for every process
    timeout: float = 3600.0  # per process
    quiet_wait: float = 0.0  # before each measured process, wait up to this long for an idle machine
    pythonpath: str | None = None  # --threadloom-src: benchmark another checkout
    tui_launches: int = TUI_LAUNCHES  # first-frame launches per run and mode (--quick: one, a smoke run)
    search_repeat: int = SEARCH_REPEAT  # timings of each query after its first (--quick: one)
    scale: Scale | None = None  # the issue 33 archives (None: --no-scale)
    archive_dir: Path = field(default_factory=lambda: BENCH / "archives")
    hub_server: str | None = None  # --hub-server: the sync scenario's hubs made there (None: its own server)

    def env(self, **extra: str) -> dict[str, str]:
        # PYTHONDONTWRITEBYTECODE would make every measured process compile threadloom from source
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("THREADLOOM_", "CLAUDE_")) and k != "PYTHONDONTWRITEBYTECODE"
        }
        env.update(HOME=str(self.home), CLAUDE_CONFIG_DIR=str(self.home / ".claude"), PYTHONHASHSEED="0")
        if self.pythonpath:
            env["PYTHONPATH"] = self.pythonpath
        env.update(extra)
        return env


def checkout_path(src: Path, home: Path) -> str:
    """A PYTHONPATH under which `threadloom.core` and `threadloom.tui` import from the checkout `src`
    (as the installed package maps them): a folder holding `threadloom` → `src`."""
    shim = home.parent / f"{home.name}-src"
    shim.mkdir(exist_ok=True)
    link = shim / "threadloom"
    if not link.exists():
        link.symlink_to(src, target_is_directory=True)
    return str(shim)


def threadloom_command() -> list[str]:
    script = Path(sys.executable).parent / "threadloom"
    return [str(script)] if script.exists() else [sys.executable, "-m", "threadloom.core.cli"]


def find_ccl(install: bool) -> tuple[list[str] | None, str | None, str | None]:
    """(command, version, problem): claude-code-log from bench/.venv-ccl, installed there if asked."""
    exe = CCL_VENV / "bin" / "claude-code-log"
    if not exe.exists() and install:
        try:
            if not (CCL_VENV / "bin" / "python").exists():
                subprocess.run([sys.executable, "-m", "venv", str(CCL_VENV)], check=True, capture_output=True)
            subprocess.run(
                [str(CCL_VENV / "bin" / "pip"), "install", "--quiet", "claude-code-log"],
                check=True,
                capture_output=True,
                timeout=600,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            text = (
                detail.decode(errors="replace").strip().splitlines()[-1:] if isinstance(detail, bytes) else []
            )
            return (
                None,
                None,
                f"could not be installed into {CCL_VENV} ({type(exc).__name__}: {' '.join(text)[:200]})",
            )
    if not exe.exists():
        return None, None, f"not installed (expected {exe})"
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True).stdout.strip()
    return [str(exe)], version.rsplit(" ", 1)[-1] or None, None


@dataclass(frozen=True)
class Scale:
    """The sizes of issue 33's archives, where a cost must follow the change and not the archive."""

    files: int = 20_000  # small sessions in one project folder
    file_bytes: int = 3_000
    records: int = 100_000  # records of one long session
    line_bytes: int = 200_000_000  # one line of a tool result


FULL_SCALE = Scale()
QUICK_SCALE = Scale(files=300, records=3_000, line_bytes=40_000_000)  # the smoke run: a line past a window


def tl_ingest(tools: Tools, db: Path, source: Path, *extra: str) -> tuple[Proc, dict[str, Any]]:
    """`threadloom --db DB ingest --only --source SOURCE --json -q [EXTRA]` as a whole process."""
    cmd = [
        *tools.threadloom,
        "--db",
        str(db),
        "ingest",
        "--only",
        "--source",
        str(source),
        "--json",
        "-q",
        *extra,
    ]
    if tools.quiet_wait:
        wait_for_quiet(tools.quiet_wait)
    proc = run_process(cmd, tools.env(), timeout=tools.timeout).check()
    report = proc.json()
    if report.get("errors"):
        raise RuntimeError(f"ingest reported errors: {report['errors'][:5]}")
    return proc, report


def ccl_build(tools: Tools, projects: Path, out: Path, cache: Path) -> Proc:
    """claude-code-log over every project: its SQLite cache plus the HTML pages (cold or warm)."""
    assert tools.ccl is not None
    cmd = [*tools.ccl, "--projects-dir", str(projects), "--all-projects", "--output", str(out)]
    if tools.quiet_wait:
        wait_for_quiet(tools.quiet_wait)
    return run_process(
        cmd, tools.env(CLAUDE_CODE_LOG_CACHE_PATH=str(cache)), sample_tree=True, timeout=tools.timeout
    ).check()


def db_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists())


def episodes_bytes(db: Path) -> int:
    """The pages of the episodes table and its indexes (vectors included): 0 where there is none."""
    if not has_table(db, "episodes"):
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT sum(pgsize) FROM dbstat WHERE name = 'episodes' OR name LIKE 'ix_episodes%' "
            "OR name = 'sqlite_autoindex_episodes_1'"
        ).fetchone()
    except sqlite3.OperationalError:  # an SQLite built without dbstat
        return 0
    finally:
        conn.close()
    return int(row[0] or 0)


def has_table(db: Path, name: str) -> bool:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def stored_line(db: Path, path: Path, offset: int) -> bytes | None:
    """The raw bytes threadloom holds for the record at `offset` of `path` (None if none)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            row = conn.execute(
                "SELECT e.raw FROM entries e JOIN source_files f ON f.id = e.source_file_id "
                "WHERE f.path = ? AND e.byte_offset = ?",
                (str(path), offset),
            ).fetchone()
    except sqlite3.Error:
        return None
    return bytes(row[0]) if row else None


# ---------------------------------------------------------------------- archives and work trees


def ensure_archive(size: str, seed: int, archive_dir: Path) -> tuple[Path, dict[str, Any]]:
    """The cached archive for (size, seed, generator version), generated when missing."""
    root = archive_dir / f"{size}-seed{seed}-g{gen_archive.GEN_VERSION}"
    manifest_path = root / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("gen_version") == gen_archive.GEN_VERSION:
            return root, manifest
    print(f"generating {size} archive (seed {seed}) in {root} …", file=sys.stderr, flush=True)
    with _made_in_place_of(root) as making:
        manifest = gen_archive.generate(making, gen_archive.parse_size(size), seed, quiet=False)
    return root, manifest


@contextlib.contextmanager
def _made_in_place_of(root: Path) -> Iterator[Path]:
    """A folder to generate an archive in, renamed to `root` once whole: another run sharing the
    archive folder (the test suite's) never sees, nor removes, one half written."""
    root.parent.mkdir(parents=True, exist_ok=True)
    making = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    try:
        yield making
        shutil.rmtree(root, ignore_errors=True)  # an older generator's, or one left half written
        os.replace(making, root)
    finally:
        shutil.rmtree(making, ignore_errors=True)


def warm_page_cache(root: Path) -> None:
    """Read every file once so each run starts from the same (warm) page cache."""
    for dirpath, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                while f.read(1 << 22):
                    pass


def make_worktree(archive: Path, work: Path, private: list[str]) -> Path:
    """A hard-linked copy of the archive's projects/ in `work`; the `private` files are real copies
    (the scenarios edit them), so the cached archive is never modified."""
    src = archive / "projects"
    dst = work / "archive" / "projects"
    private_set = set(private)
    for dirpath, _, files in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            rel_file = str(Path("projects") / rel / name)
            if rel_file in private_set:
                shutil.copy2(Path(dirpath) / name, dst / rel / name)
            else:
                _link_or_copy(str(Path(dirpath) / name), str(dst / rel / name))
    return (work / "archive").resolve()


# ---------------------------------------------------------------------- one run of every scenario


@dataclass
class RunContext:
    tools: Tools
    archive: Path  # the work tree's archive root
    manifest: dict[str, Any]
    work: Path
    seed: int
    with_ccl: bool
    values: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def record(ctx: RunContext, key: str, proc: Proc) -> None:
    """The numbers every whole-process measurement gives."""
    ctx.values.update(
        {
            f"{key}.seconds": proc.seconds,
            f"{key}.peak_rss_mb": proc.peak_rss_mb,
            f"{key}.cpu_seconds": proc.cpu_seconds,
            f"{key}.foreign_cpu_s": proc.foreign_cpu_s,
        }
    )


def run_floor(ctx: RunContext) -> Proc | None:
    """shared/tools/ingest_floor.py over the archive (parse every line, insert the raw bytes, two
    indexes): what any zero-loss cold ingest pays at least on this machine, run beside threadloom's
    so that the two read as a ratio that holds from one machine (and one load) to the next."""
    if not FLOOR.exists():
        ctx.notes["floor"] = f"{FLOOR} not found: no ratios to the floor"
        return None
    floor_db = ctx.work / "floor.db"
    if ctx.tools.quiet_wait:
        wait_for_quiet(ctx.tools.quiet_wait)
    proc = run_process(
        [sys.executable, str(FLOOR), str(ctx.archive), str(floor_db)],
        ctx.tools.env(),
        timeout=ctx.tools.timeout,
    ).check()
    floor_db.unlink(missing_ok=True)
    return proc


def scenario_cold(ctx: RunContext) -> None:
    """Cold ingest of the whole archive into an empty database: first to a browsable archive (the
    search index left behind, as the TUI does), then `threadloom index` finishing the index; the
    floor (`run_floor`) is run between the two, so each ratio to it is taken side by side."""
    db = ctx.work / "cold.db"
    proc, report = tl_ingest(ctx.tools, db, ctx.archive, "--no-index")
    size = ctx.manifest["bytes"]
    record(ctx, "cold", proc)
    ctx.values["cold.workers"] = float(report.get("workers", 0))
    floor = run_floor(ctx)
    if floor is not None:
        record(ctx, "floor", floor)
    index = run_process(
        [*ctx.tools.threadloom, "--db", str(db), "index", "--json"],
        ctx.tools.env(),
        timeout=ctx.tools.timeout,
    ).check()
    record(ctx, "cold_index", index)
    episodes_seconds = float(report.get("episodes_seconds", 0.0)) + float(
        index.json().get("episodes_seconds", 0.0)
    )
    ctx.values.update(
        {
            "cold.mb_per_s": size / MB / proc.seconds,
            "cold.records": float(report["records_added"]),
            "cold.files": float(report["files_read"]),
            "cold.db_mb": db_bytes(db) / MB,
            "cold.db_ratio": db_bytes(db) / size,
            "cold.internal_seconds": float(report["seconds"]),
            "cold.search_index": float(has_table(db, "search_fts")),
            "cold_total.seconds": proc.seconds + index.seconds,
            # search by meaning: building and embedding every turn, of the whole cold ingest
            # (a first load reads the turns for meaning after its search index: `threadloom index` does)
            "cold.episodes_seconds": episodes_seconds,
            "cold.episodes_share": episodes_seconds / (proc.seconds + index.seconds),
            "cold.episodes_db_share": episodes_bytes(db) / max(1, db_bytes(db)),
            "cold_index.records": float(index.json().get("indexed", 0)),
        }
    )
    if floor is not None:
        ctx.values["ratio.cold_over_floor"] = proc.seconds / floor.seconds
        ctx.values["ratio.cold_total_over_floor"] = (proc.seconds + index.seconds) / floor.seconds


def scenario_cores(ctx: RunContext) -> None:
    """How a cold ingest (to browsable) scales with cores: the same ingest pinned to one core
    (`taskset -c 0`) and to two (`taskset -c 0,1`), one after the other, each into an empty database."""
    taskset = shutil.which("taskset")
    if taskset is None or (os.cpu_count() or 1) < 2:
        ctx.notes["cores"] = "needs taskset and 2 cores"
        return
    # two cores: with two workers, as a machine of more cores would start them (below 4 cores an
    # ingest reads in process by default: on 2 they did not pay)
    for key, cpus, workers in (("cores1", "0", "0"), ("cores2", "0,1", "2")):
        db = ctx.work / f"{key}.db"
        pinned = [taskset, "-c", cpus, "env", f"THREADLOOM_INGEST_WORKERS={workers}", *ctx.tools.threadloom]
        tools = dataclasses.replace(ctx.tools, threadloom=pinned)
        proc, report = tl_ingest(tools, db, ctx.archive, "--no-index")
        record(ctx, key, proc)
        ctx.values[f"{key}.workers"] = float(report.get("workers", 0))
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    ctx.values["ratio.cores1_over_cores2"] = ctx.values["cores1.seconds"] / ctx.values["cores2.seconds"]


def scenario_ccl_cold(ctx: RunContext) -> None:
    """claude-code-log's cold build: empty cache, no HTML yet."""
    proc = ccl_build(ctx.tools, ctx.archive / "projects", ctx.work / "ccl-html", ctx.work / "ccl-cache.db")
    record(ctx, "ccl_cold", proc)
    ctx.values["ccl_cold.tree_rss_mb"] = proc.tree_rss_mb or 0.0


def scenario_nochange(ctx: RunContext) -> None:
    """The same ingest command again with nothing changed: what every launch pays."""
    proc, report = tl_ingest(ctx.tools, ctx.work / "cold.db", ctx.archive)
    if report["files_read"] != 0:
        ctx.notes["nochange"] = f"{report['files_read']} files were read again although nothing changed"
    record(ctx, "nochange", proc)


def scenario_ccl_warm(ctx: RunContext) -> None:
    """claude-code-log run again on the unchanged archive (cache and HTML present)."""
    proc = ccl_build(ctx.tools, ctx.archive / "projects", ctx.work / "ccl-html", ctx.work / "ccl-cache.db")
    record(ctx, "ccl_warm", proc)


def scenario_search(ctx: RunContext) -> None:
    """Every query of bench/queries.txt in one process (bench/search_probe.py), then one whole
    `threadloom search` process."""
    db = ctx.work / "cold.db"
    if not ctx.values.get("cold.search_index"):
        ctx.notes["search"] = "the database has no search index (search_fts)"
        return
    cmd = [
        sys.executable,
        str(BENCH / "search_probe.py"),
        str(db),
        "--queries",
        str(BENCH / "queries.txt"),
        "--repeat",
        str(ctx.tools.search_repeat),
    ]
    try:
        probe = run_process(cmd, ctx.tools.env(), timeout=ctx.tools.timeout).check().json()
    except RuntimeError as exc:
        ctx.notes["search"] = f"search probe failed: {str(exc)[-300:]}"
        return
    medians = sorted(q["median_ms"] for q in probe["queries"])
    firsts = sorted(q["first_ms"] for q in probe["queries"])
    ctx.values.update(
        {
            "search.p50_ms": percentile(medians, 50),
            "search.p95_ms": percentile(medians, 95),
            "search.max_ms": medians[-1],
            "search.first_p50_ms": percentile(firsts, 50),
            "search.first_p95_ms": percentile(firsts, 95),
            "search.queries": float(len(medians)),
            "search.zero_hit_queries": float(sum(1 for q in probe["queries"] if q["hits"] == 0)),
            "search.open_seconds": probe["open_seconds"],
        }
    )
    slowest = max(probe["queries"], key=lambda q: q["median_ms"])
    ctx.notes["search"] = (
        f"slowest: {slowest['query']!r} ({slowest['category']}) {slowest['median_ms']:.1f} ms"
    )
    if ctx.tools.search_repeat != SEARCH_REPEAT:
        ctx.notes["search"] += (
            f" (of {ctx.tools.search_repeat} timed after the first call, not {SEARCH_REPEAT})"
        )
    ctx.extra["search_queries"] = probe["queries"]
    if has_table(db, "episodes"):  # search by meaning: words and nearest turns fused (core.insight.recall)
        try:
            hybrid = (
                run_process([*cmd, "--mode", "hybrid"], ctx.tools.env(), timeout=ctx.tools.timeout)
                .check()
                .json()
            )
        except RuntimeError as exc:
            ctx.notes["search_hybrid"] = f"hybrid search probe failed: {str(exc)[-300:]}"
        else:
            medians = sorted(q["median_ms"] for q in hybrid["queries"])
            ctx.values.update(
                {
                    "search_hybrid.p50_ms": percentile(medians, 50),
                    "search_hybrid.p95_ms": percentile(medians, 95),
                    "search_hybrid.peak_mb": hybrid.get("peak_mb", 0.0),
                    "search_words.peak_mb": probe.get("peak_mb", 0.0),
                }
            )
    cli = run_process(
        [*ctx.tools.threadloom, "--db", str(db), "search", "--json", "error"],
        ctx.tools.env(),
        timeout=ctx.tools.timeout,
    )
    if cli.returncode == 0:
        record(ctx, "search_cli", cli)


def scenario_tui(ctx: RunContext) -> None:
    """The TUI on the run's database (up to date: after the no-change re-ingest), headless Textual.

    First frame: `scripts/measure_tui.first_frame_code` in a fresh interpreter (so Textual's import
    is in it), from the launcher's fork to the first frame drawn with projects and sessions in it
    (and to "settled", when the app's queue first runs empty and the frames after it are drawn), TUI_LAUNCHES
    times with the ingest of the unchanged archive running behind (a plain `threadloom --source
    ARCHIVE` launch) and as many with the ingest off (`--no-ingest`), interleaved; the median of each.
    First launch: the same on an empty database, to the first frame with sessions in it while the
    first load runs (which is then stopped).
    Browsing: `scripts/measure_tui.py DB --only browse` in one process: the largest session opened
    (→ first paint), 10 pages down (median → next paint), the end; once with the text as written
    (`--text raw`), once rendered as Markdown (the viewer's default), each in its own process;
    peak RSS is the larger of the two.
    """
    db = ctx.work / "cold.db"
    tools = ctx.tools
    env = tools.env()
    notes = []
    if tools.pythonpath and not (Path(tools.pythonpath) / "threadloom" / "tui").is_dir():
        notes.append(f"no tui/ in {tools.pythonpath}: the installed tui/ ran on that core/")

    def launch(cmd: list[str]) -> Proc:
        if tools.quiet_wait:
            wait_for_quiet(tools.quiet_wait)
        return run_process(cmd, env, timeout=tools.timeout).check()

    try:
        variants = {"tui.first_frame_s": [ctx.archive], "tui.first_frame_no_ingest_s": []}
        # the code under test comes from the environment (PYTHONPATH with --threadloom-src), as for search_probe
        codes = {
            key: measure_tui.first_frame_code(db, sources=sources, root=None)
            for key, sources in variants.items()
        }
        launches: dict[str, list[Proc]] = {key: [] for key in variants}
        for _ in range(tools.tui_launches):
            for key, code in codes.items():  # interleaved (A B A B), so neither kind gets the quieter minutes
                proc = launch([sys.executable, "-c", code])
                if proc.started_at is None:
                    raise RuntimeError("the launcher did not report when it started the process")
                launches[key].append(proc)
        for key, procs in launches.items():
            ctx.values[key] = statistics.median(p.json()["at"] - (p.started_at or 0.0) for p in procs)
            ctx.values[key.replace("first_frame", "settled")] = statistics.median(
                p.json()["settled_at"] - (p.started_at or 0.0) for p in procs
            )
            ctx.values[f"{key}.foreign_cpu_s"] = statistics.median(
                p.foreign_cpu_s for p in procs
            )  # per launch
            if variants[key]:
                ctx.values["tui.first_frame_rss_mb"] = max(p.peak_rss_mb for p in procs)
        # a first launch: an empty database, the whole archive to load; the panes read the load's
        # first transactions, so the first frame with sessions comes long before the load ends
        starts = []
        for _ in range(tools.tui_launches):
            fresh = ctx.work / "first-launch.db"
            for suffix in ("", "-wal", "-shm", ".first-load"):
                Path(f"{fresh}{suffix}").unlink(missing_ok=True)
            code = measure_tui.first_frame_code(fresh, sources=[ctx.archive], root=None, wait_for_data=True)
            proc = launch([sys.executable, "-c", code])
            if proc.started_at is None:
                raise RuntimeError("the launcher did not report when it started the process")
            starts.append(proc.json()["at"] - proc.started_at)
        ctx.values["tui.first_load_data_s"] = statistics.median(starts)
        # the text as written, then rendered as Markdown (the viewer's default), each in its own process
        browsing = {
            text: launch(
                [
                    sys.executable,
                    str(REPO / "scripts" / "measure_tui.py"),
                    str(db),
                    "--only",
                    "browse",
                    "--runs",
                    "1",
                    "--text",
                    text,
                    "--installed",
                ]
            )
            for text in ("raw", "markdown")
        }
        browse, browse_md = browsing["raw"].json(), browsing["markdown"].json()
    except (RuntimeError, TimeoutError, KeyError, ValueError) as exc:
        # a failed TUI measurement must not stop the ingest scenarios that follow
        ctx.notes["tui"] = "; ".join([*notes, f"failed: {str(exc)[-300:]}"])
        return
    measured = {
        "tui.open_largest_ms": browse["open_ms"],
        "tui.largest_messages": float(browse["messages"]),
        "tui.page_scroll_ms": browse["page_ms"],
        "tui.end_ms": browse["end_ms"],
        "tui.open_largest_md_ms": browse_md["open_ms"],
        "tui.page_scroll_md_ms": browse_md["page_ms"],
        "tui.end_md_ms": browse_md["end_ms"],
        "tui.browse_rss_mb": max(proc.peak_rss_mb for proc in browsing.values()),
    }
    ctx.values.update({k: v for k, v in measured.items() if math.isfinite(v)})
    for key, text in (
        ("tui.open_largest_ms", "raw"),
        ("tui.page_scroll_ms", "raw"),
        ("tui.open_largest_md_ms", "markdown"),
        ("tui.page_scroll_md_ms", "markdown"),
    ):  # the whole browsing process's
        ctx.values[f"{key}.foreign_cpu_s"] = browsing[text].foreign_cpu_s
    unpainted = [k.split(".", 1)[1] for k, v in measured.items() if not math.isfinite(v)]
    if unpainted:  # measure_tui gives NaN when no paint followed (e.g. a session shorter than a page)
        notes.append(f"no paint measured for {', '.join(unpainted)}")
    if notes:
        ctx.notes["tui"] = "; ".join(notes)


# what the stats screen reads as it opens (core.insight.stats.report): the sparkline's days, the table's
# days and the whole archive's total, timed in one process on the run's database
STATS_PROBE = """
import json, statistics, sys, time
from threadloom.core.store import db
from threadloom.core.insight import stats
conn = db.open_for_reading(sys.argv[1])
times = []
for _ in range(6):
    t0 = time.perf_counter()
    days = stats.report(conn, "day")
    stats.report(conn, "day")
    stats.report(conn, "total")
    times.append((time.perf_counter() - t0) * 1000)
t0 = time.perf_counter()
projects = stats.report(conn, "project")
project_ms = (time.perf_counter() - t0) * 1000
rows = conn.execute("SELECT count(*) FROM stats_rollup").fetchone()[0]
print(json.dumps({"first_ms": times[0], "open_ms": statistics.median(times[1:]), "project_ms": project_ms,
                  "days": len(days), "rollup_rows": rows}))
"""


def scenario_stats(ctx: RunContext) -> None:
    """The stats screen's reads in one process (STATS_PROBE: the first call, then the median of 5),
    and the screen itself: `scripts/measure_tui.py DB --only stats`, `S` → the table painted."""
    db = ctx.work / "cold.db"
    env = ctx.tools.env()
    try:
        probe = run_process([sys.executable, "-c", STATS_PROBE, str(db)], env, timeout=ctx.tools.timeout)
        found = probe.check().json()
        ctx.values.update(
            {
                "stats.open_ms": found["open_ms"],
                "stats.first_ms": found["first_ms"],
                "stats.project_ms": found["project_ms"],
                "stats.rollup_rows": float(found["rollup_rows"]),
            }
        )
        cmd = [sys.executable, str(REPO / "scripts" / "measure_tui.py"), str(db), "--only", "stats"]
        screen = run_process([*cmd, "--runs", "2", "--installed"], env, timeout=ctx.tools.timeout).check()
        ctx.values["tui.stats_open_ms"] = screen.json()["stats_open_ms"]
    except (RuntimeError, TimeoutError, KeyError, ValueError) as exc:
        ctx.notes["stats"] = f"failed: {str(exc)[-300:]}"


MCP_PROBE = """
import asyncio, json, sys, time
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from threadloom.core.store import db
from threadloom.core.serve.mcp_server import tokens_of

conn = db.open_for_reading(sys.argv[1])
largest = conn.execute("SELECT id FROM agent_sessions WHERE is_subagent = 0 ORDER BY message_count DESC LIMIT 1").fetchone()[0]
path = (conn.execute("SELECT path FROM agent_file_changes GROUP BY path ORDER BY count(*) DESC LIMIT 1").fetchone() or ["README.md"])[0]
conn.close()
CALLS = [("search", {"query": "error"}), ("search", {"query": "tool:Bash after:30d"}), ("recent_sessions", {}),
         ("session_outline", {"session": largest}), ("get_turn", {"session": largest, "turn": 0}),
         ("file_history", {"path": path}), ("signals", {}), ("signals", {"session": largest}), ("stats", {}),
         ("stats", {"session": largest}), ("recall", {"project": "/"})]

async def main():
    params = StdioServerParameters(command=sys.executable, args=["-m", "threadloom.core.cli", "mcp", "--db", sys.argv[1]])
    times, sizes = {}, {}
    async with Client(params, read_timeout_seconds=120) as client:
        t0 = time.perf_counter()
        await client.list_tools()
        first = (time.perf_counter() - t0) * 1000
        for _ in range(5):
            for tool, args in CALLS:
                t0 = time.perf_counter()
                result = await client.call_tool(tool, args)
                ms = (time.perf_counter() - t0) * 1000
                times.setdefault(tool, []).append(ms)
                sizes[tool] = max(sizes.get(tool, 0), tokens_of(result.content[0].text))
    every = sorted(t for v in times.values() for t in v)
    p95 = every[max(0, round(0.95 * len(every) + 0.5) - 1)]
    print(json.dumps({"p95_ms": p95, "max_ms": every[-1], "list_tools_ms": first, "max_tokens": max(sizes.values()),
                      "by_tool_max": {k: sorted(v)[-1] for k, v in times.items()}, "tokens": sizes}))

asyncio.run(main())
"""


def scenario_mcp(ctx: RunContext) -> None:
    """`threadloom mcp` driven by the MCP SDK's client over stdio (MCP_PROBE): every read tool five
    times on the archive's largest session and most edited file; p95 latency and the largest answer."""
    db = ctx.work / "cold.db"
    try:
        probe = run_process(
            [sys.executable, "-c", MCP_PROBE, str(db)], ctx.tools.env(), timeout=ctx.tools.timeout
        )
        found = probe.check().json()
        ctx.values.update(
            {
                "mcp.p95_ms": found["p95_ms"],
                "mcp.max_ms": found["max_ms"],
                "mcp.max_tokens": float(found["max_tokens"]),
            }
        )
    except (RuntimeError, TimeoutError, KeyError, ValueError) as exc:
        ctx.notes["mcp"] = f"failed: {str(exc)[-300:]}"


def percentile(sorted_values: list[float], pct: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return 0.0
    rank = max(1, min(len(sorted_values), round(pct / 100 * len(sorted_values) + 0.5)))
    return sorted_values[rank - 1]


def scenario_parse_1mb(ctx: RunContext) -> None:
    """The yardstick for the append: ingesting a new 1 MB transcript as a whole process.

    `parse1mb`: into an empty database whose schema already exists (what the append run also has).
    `parse1mb_fresh`: into a new database file, so the one-time schema creation is included.
    """
    src = ctx.work / "one-mb" / "projects" / "-home-dev-code-webapp"
    gen_archive.write_single_session(src, 1_000_000, ctx.seed)
    empty = ctx.work / "empty-source"
    empty.mkdir(exist_ok=True)
    db = ctx.work / "one-mb.db"
    tl_ingest(ctx.tools, db, empty)  # creates the schema; not timed
    proc, report = tl_ingest(ctx.tools, db, ctx.work / "one-mb")
    record(ctx, "parse1mb", proc)
    ctx.values["parse1mb.records"] = float(report["records_added"])
    fresh, _ = tl_ingest(ctx.tools, ctx.work / "one-mb-fresh.db", ctx.work / "one-mb")
    record(ctx, "parse1mb_fresh", fresh)


def scenario_append(ctx: RunContext) -> None:
    """1 MB of new turns appended to the largest transcript, then the ingest command again."""
    path = ctx.archive / ctx.manifest["largest"]["path"]
    added = gen_archive.append_records(path, 1_000_000, ctx.seed)
    proc, report = tl_ingest(ctx.tools, ctx.work / "cold.db", ctx.archive)
    record(ctx, "append1mb", proc)
    ctx.values.update(
        {"append1mb.bytes_read_mb": report["bytes_read"] / MB, "append1mb.appended_mb": added / MB}
    )
    if "parse1mb.seconds" in ctx.values:
        ctx.values["append1mb.ratio_to_parse1mb"] = proc.seconds / ctx.values["parse1mb.seconds"]


def _rewrite(ctx: RunContext, same_size: bool, key: str) -> None:
    path = ctx.archive / ctx.manifest["mid_sized"]["path"]
    offset, new_line = gen_archive.rewrite_middle(path, same_size=same_size)
    proc, report = tl_ingest(ctx.tools, ctx.work / "cold.db", ctx.archive)
    detected = stored_line(ctx.work / "cold.db", path, offset) == new_line
    record(ctx, key, proc)
    ctx.values.update({f"{key}.bytes_read_mb": report["bytes_read"] / MB, f"{key}.detected": float(detected)})
    if not detected:
        ctx.notes[key] = (
            f"the edited line at byte {offset} of {path.name} is not what the database holds "
            f"afterwards: the change was not picked up"
        )


def scenario_rewrite_same_size(ctx: RunContext) -> None:
    """A line in the middle of a mid-sized (~1 MB) transcript edited in place, same length."""
    _rewrite(ctx, True, "rewrite_same")


def scenario_rewrite_grow(ctx: RunContext) -> None:
    """The same file edited in the middle again, this time the line grows (the file is rewritten)."""
    _rewrite(ctx, False, "rewrite_grow")


def scenario_new_session(ctx: RunContext) -> None:
    """A new ~20 KB session file in the largest file's project folder (what starting an agent
    session does), then the ingest command: the folder's mtime moves, so discovery looks again."""
    folder = (ctx.archive / ctx.manifest["largest"]["path"]).parent
    gen_archive.write_single_session(folder, 20_000, ctx.seed + 7)
    proc, report = tl_ingest(ctx.tools, ctx.work / "cold.db", ctx.archive)
    record(ctx, "newsession", proc)
    ctx.values.update(
        {
            "newsession.files_read": float(report["files_read"]),
            "newsession.files_seen": float(report["files_seen"]),
        }
    )


def scale_archive(tools: Tools, kind: str, make: Callable[[Path], Any]) -> Path:
    """A cached issue 33 archive (`make` writes it under the folder's projects/), generated once."""
    assert tools.scale is not None
    sc = tools.scale
    name = f"scale-g{gen_archive.GEN_VERSION}-{kind}-{sc.files}x{sc.file_bytes}-{sc.records}-{sc.line_bytes}"
    root = tools.archive_dir / name
    if not (root / "done").exists():
        print(f"generating the {kind} archive in {root} …", file=sys.stderr, flush=True)
        with _made_in_place_of(root) as making:
            make(making / "projects" / "-home-dev-code-webapp")
            (making / "done").write_text("")
    warm_page_cache(root / "projects")
    return root


def copy_archive(src: Path, dst: Path, *, link: bool) -> Path:
    """A copy of a cached archive to work on: hard links when the scenario only adds files."""
    shutil.copytree(src / "projects", dst / "projects", copy_function=_link_or_copy if link else shutil.copy2)
    return dst


def _link_or_copy(src: str, dst: str) -> None:
    """A hard link, or a copy where none can be made (the archives on another file system than
    the work folder: a tmpfs /tmp)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def scenario_many_files(ctx: RunContext) -> None:
    """Issue 33: one new session in a project folder of 20,000 (only it is read and classified),
    then `threadloom sessions` listing the 20,000 as a table (the way a terminal user reads it)."""
    tools = ctx.tools
    assert tools.scale is not None
    sc = tools.scale
    cached = scale_archive(
        tools, "many", lambda d: gen_archive.write_many_sessions(d, sc.files, sc.file_bytes, 1)
    )
    archive = copy_archive(cached, ctx.work / "many", link=True)
    db = ctx.work / "many.db"
    cold, _ = tl_ingest(tools, db, archive)
    record(ctx, "many_cold", cold)
    gen_archive.write_many_sessions(ctx.work / "new-session", 1, sc.file_bytes, 2)
    new_file = next((ctx.work / "new-session").iterdir())
    os.link(new_file, archive / "projects" / "-home-dev-code-webapp" / new_file.name)
    proc, report = tl_ingest(tools, db, archive)
    record(ctx, "many_newfile", proc)
    ctx.values["many_newfile.files_read"] = float(report["files_read"])
    listed = run_process([*tools.threadloom, "--db", str(db), "sessions"], tools.env(), timeout=tools.timeout)
    record(ctx, "sessions_list", listed.check())
    ctx.values["sessions_list.rows"] = float(max(0, listed.stdout.count("\n") - 1))


def first_line_and_end(cmd: list[str], env: dict[str, str], timeout: float) -> tuple[float, float, int]:
    """(seconds to the first line of output, to the end of it, bytes) of a command whose output is
    a pipe read as it comes (as a pager reads it)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, cwd=env.get("HOME"), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    try:
        first = proc.stdout.readline()
        first_at = time.perf_counter() - started
        size = len(first)
        while chunk := proc.stdout.read(1 << 20):
            size += len(chunk)
        if proc.wait() != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}")
    finally:
        killer.cancel()
    return first_at, time.perf_counter() - started, size


def scenario_long_session(ctx: RunContext) -> None:
    """Issue 33: one line appended to a session of 100,000 records (signals and stats brought up to
    date from the turn it continues), then `threadloom show` of that session, piped."""
    tools = ctx.tools
    assert tools.scale is not None
    sc = tools.scale
    cached = scale_archive(
        tools, "long", lambda d: gen_archive.write_long_session(d / "long.jsonl", sc.records, 1)
    )
    archive = copy_archive(cached, ctx.work / "long", link=False)
    db = ctx.work / "long.db"
    cold, report = tl_ingest(tools, db, archive)
    record(ctx, "long_cold", cold)
    path = archive / "projects" / "-home-dev-code-webapp" / "long.jsonl"
    gen_archive.append_prompt(path, ctx.seed)  # one line: a prompt
    proc, report = tl_ingest(tools, db, archive)
    record(ctx, "long_append", proc)
    ctx.values["long_append.records"] = float(report["records_added"])
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        session, count = conn.execute(
            "SELECT id, message_count FROM agent_sessions ORDER BY message_count DESC LIMIT 1"
        ).fetchone()
    first, total, size = first_line_and_end(
        [*tools.threadloom, "--db", str(db), "show", session], tools.env(), tools.timeout
    )
    ctx.values.update(
        {"show_long.first_line_s": first, "show_long.seconds": total, "show_long.messages": float(count)}
    )
    ctx.values["show_long.output_mb"] = size / MB


def scenario_giant_line(ctx: RunContext) -> None:
    """Issue 33: a transcript one of whose lines is 200 MB, ingested into an empty database: its
    peak memory, and whether the file is stored byte for byte."""
    tools = ctx.tools
    assert tools.scale is not None
    sc = tools.scale
    cached = scale_archive(
        tools, "giant", lambda d: gen_archive.write_giant_line(d / "giant.jsonl", sc.line_bytes, 1)
    )
    db = ctx.work / "giant.db"
    proc, _ = tl_ingest(tools, db, cached)
    record(ctx, "giant", proc)
    path = cached / "projects" / "-home-dev-code-webapp" / "giant.jsonl"
    stored = hashlib.sha256()
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        for raw, newline in conn.execute(
            "SELECT e.raw, e.newline FROM entries e JOIN source_files f ON f.id = e.source_file_id "
            "WHERE f.path = ? ORDER BY e.byte_offset",
            (str(path),),
        ):
            stored.update(bytes(raw) + (b"\n" if newline else b""))
    on_disk = hashlib.sha256(path.read_bytes()).digest()
    ctx.values["giant.verbatim"] = float(stored.digest() == on_disk)
    ctx.values["giant.line_mb"] = sc.line_bytes / MB
    if stored.digest() != on_disk:
        ctx.notes["giant"] = "the bytes stored for the file are not the file's"


Scenario = Callable[[RunContext], None]


@contextlib.contextmanager
def hub_maker(tools: Tools) -> Iterator[Callable[[], str]]:
    """What makes an empty hub database and gives its URL: on --hub-server's PostgreSQL server
    when one is given, else on a throwaway server of the sync scenario's own (started here, stopped
    on leaving). Raises tests.pg_support.NoServer where neither can be had."""
    if tools.hub_server:
        yield lambda: new_database_at(tools.hub_server or "")
        return
    sys.path.insert(0, str(REPO))
    from tests.pg_support import throwaway_server

    with throwaway_server() as server:
        yield lambda: server.url(server.new_database())


def new_database_at(url: str) -> str:
    """A new database made on the server of `url` (a database of it that may be connected to, as
    `postgres`), by the same name as the throwaway server's are: its URL."""
    import urllib.parse
    import uuid

    import psycopg

    name = f"hub_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return urllib.parse.urlsplit(url)._replace(path=f"/{name}").geturl()


# order matters: cold → (ccl cold) → no-change → (ccl warm) interleaves A B A B within a run
def scenario_sync(ctx: RunContext) -> None:
    """`threadloom sync` through a PostgreSQL hub on a throwaway server of its own (the tests' own,
    tests/pg_support.py) or on --hub-server's: the first push of the whole archive (cold.db), a sync
    with nothing new, and a pull of all of it into an empty database; each beside the cold ingest.
    Skipped, saying why, without PostgreSQL's server programs."""
    sys.path.insert(0, str(REPO))
    from tests.pg_support import NoServer

    try:
        with hub_maker(ctx.tools) as new_hub:
            url = new_hub()

            def sync(db: Path, *args: str) -> tuple[Proc, dict[str, Any]]:
                proc = run_process(
                    [*ctx.tools.threadloom, "sync", url, "--db", str(db), "--json", *args],
                    ctx.tools.env(),
                    timeout=ctx.tools.timeout,
                ).check()
                return proc, proc.json()

            run_process([*ctx.tools.threadloom, "sync", "--init", url], ctx.tools.env(), timeout=60).check()
            push, pushed = sync(ctx.work / "cold.db", "--machine", "bench-a", "--share", "all", "--push-only")
            record(ctx, "sync_push", push)
            again, _ = sync(ctx.work / "cold.db", "--machine", "bench-a")
            record(ctx, "sync_nochange", again)
            pull, pulled = sync(ctx.work / "pulled.db", "--machine", "bench-b", "--pull-only")
            record(ctx, "sync_pull", pull)
    except NoServer as exc:
        ctx.notes["sync"] = f"skipped: {exc}"
        return
    cold = ctx.values["cold.seconds"]
    ctx.values.update(
        {
            "sync_push.records": float(pushed["pushed_records"]),
            "sync_push.ratio_to_cold": push.seconds / cold,
            "sync_pull.records": float(pulled["pulled_records"]),
            "sync_pull.ratio_to_cold": pull.seconds / cold,
        }
    )


SCENARIOS: list[tuple[str, Scenario, bool]] = [  # (name, function, needs claude-code-log)
    ("cold", scenario_cold, False),
    ("cores", scenario_cores, False),
    ("ccl_cold", scenario_ccl_cold, True),
    ("nochange", scenario_nochange, False),
    ("ccl_warm", scenario_ccl_warm, True),
    ("search", scenario_search, False),
    ("tui", scenario_tui, False),
    ("stats", scenario_stats, False),
    ("mcp", scenario_mcp, False),
    ("parse1mb", scenario_parse_1mb, False),
    ("append1mb", scenario_append, False),
    ("rewrite_same", scenario_rewrite_same_size, False),
    ("rewrite_grow", scenario_rewrite_grow, False),
    ("newsession", scenario_new_session, False),
    ("sync", scenario_sync, False),
    ("many_files", scenario_many_files, False),
    ("long_session", scenario_long_session, False),
    ("giant", scenario_giant_line, False),
]
SCALE_SCENARIOS = {"many_files", "long_session", "giant"}  # left out with --no-scale


def run_once(
    tools: Tools,
    archive: Path,
    manifest: dict[str, Any],
    work_root: Path,
    seed: int,
    with_ccl: bool,
    keep: bool,
) -> RunContext:
    work = Path(tempfile.mkdtemp(prefix="run-", dir=work_root))
    try:
        private = [manifest["largest"]["path"], manifest["mid_sized"]["path"]]
        tree = make_worktree(archive, work, private)
        ctx = RunContext(tools, tree, manifest, work, seed, with_ccl)
        ctx.values["loadavg_1m"] = os.getloadavg()[0]
        for name, fn, needs_ccl in SCENARIOS:
            if needs_ccl and not with_ccl or name in SCALE_SCENARIOS and tools.scale is None:
                continue
            print(f"  {name} …", file=sys.stderr, end="", flush=True)
            try:
                fn(ctx)
            except (TimeoutError, RuntimeError) as exc:
                # the later scenarios build on this one's database: stop this run, say why
                ctx.notes[name] = f"failed: {exc}"[:400]
                print(f" {ctx.notes[name]}", file=sys.stderr, flush=True)
                break
            shown = ctx.values.get(f"{name}.seconds")
            print(f" {shown:.3f} s" if shown is not None else " done", file=sys.stderr, flush=True)
        if with_ccl and "ccl_warm.seconds" in ctx.values:
            ctx.values["ratio.ccl_cold_over_cold"] = (
                ctx.values["ccl_cold.seconds"] / ctx.values["cold.seconds"]
            )
            ctx.values["ratio.ccl_cold_over_cold_total"] = (
                ctx.values["ccl_cold.seconds"] / ctx.values["cold_total.seconds"]
            )
            ctx.values["ratio.ccl_warm_over_nochange"] = (
                ctx.values["ccl_warm.seconds"] / ctx.values["nochange.seconds"]
            )
            if "tui.first_frame_s" in ctx.values:
                ctx.values["ratio.tui_first_frame_over_ccl_warm"] = (
                    ctx.values["tui.first_frame_s"] / ctx.values["ccl_warm.seconds"]
                )
        return ctx
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------- tables


# (metric key, scenario label, metric label, unit)
ROWS: list[tuple[str, str, str, str]] = [
    ("cold.seconds", "cold ingest (empty database)", "wall time to a browsable archive (--no-index)", "s"),
    ("cold.internal_seconds", "cold ingest (empty database)", "of which inside run_ingest", "s"),
    ("cold.mb_per_s", "cold ingest (empty database)", "throughput", "MB/s"),
    ("cold.records", "cold ingest (empty database)", "records", "records"),
    ("cold.peak_rss_mb", "cold ingest (empty database)", "peak RSS", "MB"),
    ("cold.db_mb", "cold ingest (empty database)", "database size", "MB"),
    ("cold.db_ratio", "cold ingest (empty database)", "database / archive", "x"),
    ("cold.workers", "cold ingest (empty database)", "worker processes reading files", ""),
    ("floor.seconds", "floor: shared/tools/ingest_floor.py, run beside the cold ingest", "wall time", "s"),
    (
        "floor.peak_rss_mb",
        "floor: shared/tools/ingest_floor.py, run beside the cold ingest",
        "peak RSS",
        "MB",
    ),
    ("ratio.cold_over_floor", "cold ingest / floor", "to a browsable archive", "x"),
    ("ratio.cold_total_over_floor", "cold ingest / floor", "with the search index complete", "x"),
    ("cores1.seconds", "cold ingest on 1 core (taskset -c 0)", "wall time to browsable", "s"),
    ("cores2.seconds", "cold ingest on 2 cores (taskset -c 0,1)", "wall time to browsable", "s"),
    ("cores2.peak_rss_mb", "cold ingest on 2 cores (taskset -c 0,1)", "peak RSS", "MB"),
    ("ratio.cores1_over_cores2", "cold ingest, 1 core / 2 cores", "speed-up on 2 cores", "x"),
    ("cold_index.seconds", "then `threadloom index` (search index)", "wall time", "s"),
    ("cold_index.peak_rss_mb", "then `threadloom index` (search index)", "peak RSS", "MB"),
    ("cold_total.seconds", "cold ingest, search index complete", "wall time (sum of both)", "s"),
    ("cold.episodes_seconds", "cold ingest: episodes built and embedded", "wall time (of the ingest)", "s"),
    (
        "cold.episodes_share",
        "cold ingest: episodes built and embedded",
        "share of the whole cold ingest",
        "x",
    ),
    ("cold.episodes_db_share", "episodes and their vectors", "share of the database", "x"),
    ("nochange.seconds", "no-change re-ingest", "wall time", "s"),
    ("nochange.peak_rss_mb", "no-change re-ingest", "peak RSS", "MB"),
    ("parse1mb.seconds", "ingest a new 1 MB file (schema exists)", "wall time", "s"),
    ("parse1mb_fresh.seconds", "ingest a new 1 MB file (new database file)", "wall time", "s"),
    ("append1mb.seconds", "append 1 MB to the largest file, re-ingest", "wall time", "s"),
    (
        "append1mb.ratio_to_parse1mb",
        "append 1 MB to the largest file, re-ingest",
        "/ ingest of a 1 MB file",
        "x",
    ),
    ("append1mb.bytes_read_mb", "append 1 MB to the largest file, re-ingest", "bytes read", "MB"),
    ("append1mb.peak_rss_mb", "append 1 MB to the largest file, re-ingest", "peak RSS", "MB"),
    ("rewrite_same.seconds", "edit a line mid-file, same size, re-ingest", "wall time", "s"),
    ("rewrite_same.detected", "edit a line mid-file, same size, re-ingest", "change picked up (1 = yes)", ""),
    ("rewrite_grow.seconds", "edit a line mid-file, file grows, re-ingest", "wall time", "s"),
    ("rewrite_grow.bytes_read_mb", "edit a line mid-file, file grows, re-ingest", "bytes read", "MB"),
    (
        "rewrite_grow.detected",
        "edit a line mid-file, file grows, re-ingest",
        "change picked up (1 = yes)",
        "",
    ),
    ("newsession.seconds", "a new 20 KB session file in a project folder, re-ingest", "wall time", "s"),
    ("newsession.files_read", "a new 20 KB session file in a project folder, re-ingest", "files read", ""),
    ("search.p50_ms", "search, in process, queries.txt (median of 5 per query)", "p50 over queries", "ms"),
    ("search.p95_ms", "search, in process, queries.txt (median of 5 per query)", "p95 over queries", "ms"),
    (
        "search_hybrid.p50_ms",
        "hybrid search (words + meaning), in process, queries.txt",
        "p50 over queries",
        "ms",
    ),
    (
        "search_hybrid.p95_ms",
        "hybrid search (words + meaning), in process, queries.txt",
        "p95 over queries",
        "ms",
    ),
    ("search_hybrid.peak_mb", "hybrid search (words + meaning), in process, queries.txt", "peak RSS", "MB"),
    ("search_words.peak_mb", "search by words, in process, queries.txt", "peak RSS", "MB"),
    ("search.max_ms", "search, in process, queries.txt (median of 5 per query)", "slowest query", "ms"),
    (
        "search.first_p50_ms",
        "search, in process, queries.txt (median of 5 per query)",
        "first call p50",
        "ms",
    ),
    (
        "search.first_p95_ms",
        "search, in process, queries.txt (median of 5 per query)",
        "first call p95",
        "ms",
    ),
    ("search.queries", "search, in process, queries.txt (median of 5 per query)", "queries", "records"),
    (
        "search.zero_hit_queries",
        "search, in process, queries.txt (median of 5 per query)",
        "queries with no hit",
        "records",
    ),
    ("search_cli.seconds", "`threadloom search error` as a whole process", "wall time", "s"),
    ("search_cli.peak_rss_mb", "`threadloom search error` as a whole process", "peak RSS", "MB"),
    (
        "tui.first_frame_s",
        "TUI: start to first frame with data",
        "process start → frame, ingest running behind",
        "s",
    ),
    (
        "tui.first_frame_no_ingest_s",
        "TUI: start to first frame with data",
        "the same with the ingest off",
        "s",
    ),
    (
        "tui.settled_s",
        "TUI: start to first frame with data",
        "→ settled (queue empty, later frames drawn), ingest behind",
        "s",
    ),
    ("tui.settled_no_ingest_s", "TUI: start to first frame with data", "→ settled, the ingest off", "s"),
    (
        "tui.first_load_data_s",
        "TUI: start to first frame with data",
        "first launch (empty database, the load running)",
        "s",
    ),
    (
        "tui.first_frame_rss_mb",
        "TUI: start to first frame with data",
        "peak RSS (ingest behind, to exit)",
        "MB",
    ),
    ("tui.open_largest_ms", "TUI: open the largest session, first paint", "select → first paint", "ms"),
    ("stats.open_ms", "stats: what the screen reads as it opens", "in process, median of 5", "ms"),
    ("mcp.p95_ms", "MCP: each read tool 5 times over stdio (target p95 ≤ 200 ms)", "p95 latency", "ms"),
    ("mcp.max_ms", "MCP: each read tool 5 times over stdio (target p95 ≤ 200 ms)", "slowest call", "ms"),
    (
        "mcp.max_tokens",
        "MCP: each read tool 5 times over stdio (target p95 ≤ 200 ms)",
        "largest answer (budget 2,000)",
        "tokens",
    ),
    ("stats.first_ms", "stats: what the screen reads as it opens", "in process, first call", "ms"),
    ("stats.project_ms", "stats: what the screen reads as it opens", "by project, in process", "ms"),
    (
        "stats.rollup_rows",
        "stats: what the screen reads as it opens",
        "rows summed (stats_rollup)",
        "records",
    ),
    ("tui.stats_open_ms", "stats: what the screen reads as it opens", "TUI: S → table painted", "ms"),
    ("tui.largest_messages", "TUI: open the largest session, first paint", "messages in it", "records"),
    ("tui.page_scroll_ms", "TUI: scroll a page", "page down → next paint (median of 10)", "ms"),
    ("tui.end_ms", "TUI: scroll a page", "jump to the end → paint", "ms"),
    (
        "tui.open_largest_md_ms",
        "TUI: open the largest session, text as Markdown",
        "select → first paint",
        "ms",
    ),
    (
        "tui.page_scroll_md_ms",
        "TUI: scroll a page, text as Markdown",
        "page down → next paint (median of 10)",
        "ms",
    ),
    ("tui.end_md_ms", "TUI: scroll a page, text as Markdown", "jump to the end → paint", "ms"),
    ("tui.browse_rss_mb", "peak RSS while browsing", "open the largest session, 10 pages, the end", "MB"),
    ("ccl_cold.seconds", "claude-code-log cold build (cache + HTML)", "wall time", "s"),
    ("ccl_cold.peak_rss_mb", "claude-code-log cold build (cache + HTML)", "peak RSS, largest process", "MB"),
    ("ccl_cold.tree_rss_mb", "claude-code-log cold build (cache + HTML)", "peak RSS, all processes", "MB"),
    ("ccl_warm.seconds", "claude-code-log warm run (nothing changed)", "wall time", "s"),
    (
        "ratio.ccl_cold_over_cold",
        "claude-code-log cold / threadloom cold (browsable)",
        "ratio, pair by pair",
        "x",
    ),
    (
        "ratio.ccl_cold_over_cold_total",
        "claude-code-log cold / threadloom cold (index complete)",
        "ratio, pair by pair",
        "x",
    ),
    (
        "ratio.ccl_warm_over_nochange",
        "claude-code-log warm / threadloom no-change",
        "ratio, pair by pair",
        "x",
    ),
    (
        "ratio.tui_first_frame_over_ccl_warm",
        "TUI warm start / claude-code-log warm run",
        "ratio, pair by pair",
        "x",
    ),
    ("many_cold.seconds", "a folder of 20,000 small sessions: cold ingest", "wall time", "s"),
    (
        "many_newfile.seconds",
        "a new session in a folder of 20,000, re-ingest (target ≤ 0.5 s)",
        "wall time",
        "s",
    ),
    (
        "many_newfile.files_read",
        "a new session in a folder of 20,000, re-ingest (target ≤ 0.5 s)",
        "files read",
        "",
    ),
    (
        "sessions_list.seconds",
        "`threadloom sessions` of 20,000 sessions, piped (target ≤ 1 s)",
        "wall time",
        "s",
    ),
    (
        "sessions_list.rows",
        "`threadloom sessions` of 20,000 sessions, piped (target ≤ 1 s)",
        "rows",
        "records",
    ),
    ("long_cold.seconds", "a session of 100,000 records: cold ingest", "wall time", "s"),
    (
        "long_append.seconds",
        "one line appended to a session of 100,000 records, re-ingest (target ≤ 0.3 s)",
        "wall time",
        "s",
    ),
    (
        "show_long.first_line_s",
        "`threadloom show` of 100,000 messages, piped (target ≤ 5 s, first lines ≤ 0.5 s)",
        "first line",
        "s",
    ),
    (
        "show_long.seconds",
        "`threadloom show` of 100,000 messages, piped (target ≤ 5 s, first lines ≤ 0.5 s)",
        "wall time",
        "s",
    ),
    (
        "show_long.messages",
        "`threadloom show` of 100,000 messages, piped (target ≤ 5 s, first lines ≤ 0.5 s)",
        "messages",
        "records",
    ),
    ("giant.peak_rss_mb", "ingest a file with one 200 MB line (target ≤ 400 MB RSS)", "peak RSS", "MB"),
    ("giant.seconds", "ingest a file with one 200 MB line (target ≤ 400 MB RSS)", "wall time", "s"),
    (
        "giant.verbatim",
        "ingest a file with one 200 MB line (target ≤ 400 MB RSS)",
        "stored byte for byte (1 = yes)",
        "",
    ),
    ("sync_push.seconds", "sync: first push of the archive to a hub", "wall time", "s"),
    ("sync_push.ratio_to_cold", "sync: first push of the archive to a hub", "/ cold ingest", "x"),
    ("sync_push.peak_rss_mb", "sync: first push of the archive to a hub", "peak RSS", "MB"),
    ("sync_nochange.seconds", "sync: nothing new", "wall time", "s"),
    ("sync_pull.seconds", "sync: pull of it all into an empty database", "wall time", "s"),
    ("sync_pull.ratio_to_cold", "sync: pull of it all into an empty database", "/ cold ingest", "x"),
    ("sync_pull.peak_rss_mb", "sync: pull of it all into an empty database", "peak RSS", "MB"),
]


def summarize(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def build_rows(size: str, runs: list[RunContext], ccl_note: str | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for key, scenario, metric, unit in ROWS:
        row: dict[str, Any] = {"size": size, "key": key, "scenario": scenario, "metric": metric, "unit": unit}
        if not key:
            row.update(status=NOT_BUILT, values=[])
        else:
            values = [r.values[key] for r in runs if key in r.values]
            failed = sorted({r.notes[key.split(".", 1)[0]] for r in runs if key.split(".", 1)[0] in r.notes})
            if not values and failed:
                row.update(status="failed", values=[], note="; ".join(failed))
                rows.append(row)
                continue
            if not values:
                if not key.startswith(("ccl", "ratio")):
                    continue
                if any(r.get("status") == "skipped" for r in rows):
                    continue  # one row says it for all of claude-code-log
                row.update(
                    scenario="claude-code-log (all rows)",
                    metric="skipped",
                    status="skipped",
                    values=[],
                    note=ccl_note or "claude-code-log not run",
                )
            else:
                row.update(status="ok", values=[round(v, 6) for v in values], **summarize(values))
        prefix = key.split(".", 1)[0]
        notes = sorted({r.notes[prefix] for r in runs if prefix in r.notes})
        if notes and (
            row["status"] != "ok"
            or key.endswith((".seconds", ".detected", ".max_ms"))
            or key == "tui.first_frame_s"
        ):
            row["note"] = "; ".join(notes)
        # other CPU: per scenario for wall times, or per metric where a scenario records it so (the TUI rows)
        noise_key = f"{prefix}.foreign_cpu_s" if key.endswith(".seconds") else f"{key}.foreign_cpu_s"
        if row["status"] == "ok":
            noise = [r.values[noise_key] for r in runs if noise_key in r.values]
            if noise:
                row["foreign_cpu_s"] = round(statistics.median(noise), 3)
        rows.append(row)
    return rows


def fmt(value: float, unit: str) -> str:
    if unit in ("records", "MB") or abs(value) >= 1000:
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"
    if unit == "s":
        return f"{value:.3f}" if value < 10 else f"{value:.1f}"
    return f"{value:.2f}"


def table_lines(rows: list[dict[str, Any]], markdown: bool) -> list[str]:
    head = ["size", "scenario", "metric", "median", "min", "max", "runs", "other CPU s", "note"]
    body: list[list[str]] = []
    for r in rows:
        if r["status"] == "ok":
            unit = r["unit"]
            suffix = f" {unit}" if unit and unit != "records" else ""
            body.append(
                [
                    r["size"],
                    r["scenario"],
                    r["metric"],
                    fmt(r["median"], unit) + suffix,
                    fmt(r["min"], unit),
                    fmt(r["max"], unit),
                    str(len(r["values"])),
                    f"{r['foreign_cpu_s']:.2f}" if "foreign_cpu_s" in r else "",
                    r.get("note", ""),
                ]
            )
        else:
            body.append(
                [
                    r["size"],
                    r["scenario"],
                    r["metric"] if r["status"] == NOT_BUILT else r["status"],
                    "–",
                    "–",
                    "–",
                    "0",
                    "",
                    r.get("note", ""),
                ]
            )
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
        return out
    widths = [max(len(h), *(len(row[i]) for row in body)) if body else len(h) for i, h in enumerate(head)]
    widths[-1] = len(head[-1])
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in body]
    return out


# ---------------------------------------------------------------------- targets (issue 7)


def evaluate_targets(size: str, rows: list[dict[str, Any]], manifest: dict[str, Any]) -> list[dict[str, Any]]:
    med = {r["key"]: r["median"] for r in rows if r["status"] == "ok"}
    mx = {r["key"]: r["max"] for r in rows if r["status"] == "ok"}
    gb = manifest["bytes"] / 1e9
    out: list[dict[str, Any]] = []

    def add(
        target: str,
        measured: float | None,
        limit: float,
        unit: str,
        higher_is_better: bool = False,
        note: str = "",
    ) -> None:
        if measured is None:
            out.append(
                {
                    "size": size,
                    "target": target,
                    "limit": limit,
                    "measured": None,
                    "status": "not measured",
                    "note": note,
                }
            )
            return
        ok = measured >= limit if higher_is_better else measured <= limit
        factor = (limit / measured if higher_is_better else measured / limit) if measured and limit else None
        out.append(
            {
                "size": size,
                "target": target,
                "limit": round(limit, 4),
                "measured": round(measured, 4),
                "unit": unit,
                "status": "met" if ok else "missed",
                "factor": round(factor, 2) if factor else None,
                "note": note,
            }
        )

    add(
        "cold ingest ≤ 15 s per GB",
        med.get("cold.seconds"),
        15 * gb,
        "s",
        note=f"limit scaled to this archive ({manifest['bytes'] / MB:,.0f} MB)",
    )
    add("no-change re-ingest ≤ 0.25 s (whole process)", med.get("nochange.seconds"), 0.25, "s")
    add("append 1 MB ≤ 2× ingest of a 1 MB file", med.get("append1mb.ratio_to_parse1mb"), 2.0, "x")
    rss = [
        mx[k]
        for k in (
            "cold.peak_rss_mb",
            "cold_index.peak_rss_mb",
            "cores1.peak_rss_mb",
            "cores2.peak_rss_mb",
            "append1mb.peak_rss_mb",
            "nochange.peak_rss_mb",
        )
        if k in mx
    ]
    add("peak RSS while ingesting ≤ 150 MB", max(rss) if rss else None, 150, "MB", note="worst run")
    add(
        "cold ingest to browsable ≤ 2× the floor",
        med.get("ratio.cold_over_floor"),
        2.0,
        "x",
        note="shared/tools/ingest_floor.py run beside it",
    )
    add(
        "cold ingest with the index complete ≤ 3× the floor",
        med.get("ratio.cold_total_over_floor"),
        3.0,
        "x",
        note="ingest --no-index, then threadloom index, beside the floor",
    )
    add("database ≤ 2× the archive", med.get("cold.db_ratio"), 2.0, "x")
    add(
        "cold ingest ≥ 10× faster than claude-code-log's cold build",
        med.get("ratio.ccl_cold_over_cold"),
        10.0,
        "x",
        higher_is_better=True,
    )
    add(
        "no-change ≥ 2× faster than claude-code-log's warm run",
        med.get("ratio.ccl_warm_over_nochange"),
        2.0,
        "x",
        higher_is_better=True,
    )
    add("search p50 ≤ 30 ms (in process)", med.get("search.p50_ms"), 30.0, "ms")
    add("search p95 ≤ 100 ms (in process)", med.get("search.p95_ms"), 100.0, "ms")
    add("hybrid search p50 ≤ 30 ms (in process)", med.get("search_hybrid.p50_ms"), 30.0, "ms")
    add("hybrid search p95 ≤ 100 ms (in process)", med.get("search_hybrid.p95_ms"), 100.0, "ms")
    words_mb, hybrid_mb = med.get("search_words.peak_mb"), med.get("search_hybrid.peak_mb")
    add(
        "hybrid search RSS ≤ 100 MB more than words",
        hybrid_mb - words_mb if hybrid_mb is not None and words_mb is not None else None,
        100.0,
        "MB",
    )
    add("embedding ≤ 30 % of a cold ingest", med.get("cold.episodes_share"), 0.30, "x")
    add("vectors ≤ 10 % of the database", med.get("cold.episodes_db_share"), 0.10, "x")
    add(
        "cold ingest with the search index complete ≤ 30 s per GB",
        med.get("cold_total.seconds"),
        30 * gb,
        "s",
        note="ingest --no-index, then threadloom index",
    )
    add(
        "TUI first frame with data ≤ 0.5 s",
        med.get("tui.first_frame_s"),
        0.5,
        "s",
        note="process start, the ingest of the unchanged archive running behind",
    )
    add("largest session ≤ 200 ms to first paint", med.get("tui.open_largest_ms"), 200.0, "ms")
    add("stats screen opens ≤ 300 ms", med.get("tui.stats_open_ms"), 300.0, "ms", note="S → table painted")
    add("page scroll ≤ 16 ms", med.get("tui.page_scroll_ms"), 16.0, "ms")
    add(
        "largest session ≤ 200 ms to first paint, text as Markdown",
        med.get("tui.open_largest_md_ms"),
        200.0,
        "ms",
    )
    add("page scroll ≤ 16 ms, text as Markdown", med.get("tui.page_scroll_md_ms"), 16.0, "ms")
    add("peak RSS while browsing ≤ 200 MB", mx.get("tui.browse_rss_mb"), 200.0, "MB", note="worst run")
    add("a new session in a folder of 20,000 ≤ 0.5 s", med.get("many_newfile.seconds"), 0.5, "s")
    add("one line appended to a 100k-record session ≤ 0.3 s", med.get("long_append.seconds"), 0.3, "s")
    add("`sessions` of 20,000 sessions ≤ 1 s", med.get("sessions_list.seconds"), 1.0, "s")
    add("`show` of 100k messages ≤ 5 s", med.get("show_long.seconds"), 5.0, "s")
    add("`show` of 100k messages: first lines ≤ 0.5 s", med.get("show_long.first_line_s"), 0.5, "s")
    add("ingest of a 200 MB line ≤ 400 MB RSS", mx.get("giant.peak_rss_mb"), 400.0, "MB", note="worst run")
    add(
        "TUI warm start no slower than claude-code-log's warm run",
        med.get("ratio.tui_first_frame_over_ccl_warm"),
        1.0,
        "x",
        note="TUI first frame / claude-code-log warm run",
    )
    return out


# ---------------------------------------------------------------------- main


def machine_info(tools: Tools, src: Path | None, label: str) -> dict[str, Any]:
    def git(*args: str) -> str:
        res = subprocess.run(["git", "-C", str(src or REPO), *args], capture_output=True, text=True)
        return res.stdout.strip()

    if src is not None and not (src / ".git").exists():
        commit, dirty = label or f"the tree at {src}", False
    else:
        commit, dirty = (
            git("rev-parse", "--short", "HEAD"),
            bool(git("status", "--porcelain", "--", "core", "tui")),
        )

    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": platform.node(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "threadloom_commit": commit,
        "dirty": dirty,
        "threadloom_command": tools.threadloom,
        "claude_code_log": tools.ccl_version,
        "claude_code_log_problem": tools.ccl_problem,
        "page_cache": "warm (every archive file read before the runs)",
    }


def write_results(out_dir: Path, result: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "latest.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    md = [
        "# threadloom benchmark: latest results",
        "",
        f"{result['machine']['date']} · {result['machine']['cpus']} CPUs · Python {result['machine']['python']} · "
        f"SQLite {result['machine']['sqlite']} · threadloom {result['machine']['threadloom_commit']}"
        f"{' (core/ or tui/ modified)' if result['machine']['dirty'] else ''} · claude-code-log "
        f"{result['machine']['claude_code_log'] or 'not run'} · median of {result['runs']} runs, page cache warm",
        "",
        *[f"Note: {n}" for n in result.get("notes", [])],
        "",
        "## Archives",
        "",
        "| size | MB | files | records (lines) | sessions | subagent files | largest file | generated in |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size, a in result["archives"].items():
        md.append(
            f"| {size} | {a['bytes'] / MB:,.1f} | {a['files']:,} | {a['lines']:,} | {a['sessions']:,} | "
            f"{a['subagent_files']:,} | {a['largest_mb']:.1f} MB, {a['largest_lines']:,} lines | {a['gen_seconds']} s |"
        )
    md += ["", "## Results", ""] + table_lines(result["rows"], markdown=True)
    md += ["", "## Targets (issue 7)", "", "| size | target | measured | status |", "|---|---|---|---|"]
    for t in result["targets"]:
        measured = "–" if t.get("measured") is None else f"{t['measured']:g} {t.get('unit', '')}".strip()
        status = t["status"] + (
            f" ({t['factor']}× the limit)" if t["status"] == "missed" and t.get("factor") else ""
        )
        md.append(f"| {t['size']} | {t['target']} | {measured} | {status} |")
    md.append("")
    (out_dir / "latest.md").write_text("\n".join(md))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100M,1G", help="comma-separated archive sizes (binary units)")
    ap.add_argument("--runs", type=int, default=3, help="runs per size (median, min, max over them)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--archive-dir", type=Path, default=BENCH / "archives", help="where generated archives are cached"
    )
    ap.add_argument(
        "--work-dir", type=Path, default=BENCH / "out", help="scratch space for databases and copies"
    )
    ap.add_argument("--out", type=Path, default=BENCH / "results", help="where latest.json / latest.md go")
    ap.add_argument("--no-ccl", action="store_true", help="skip claude-code-log")
    ap.add_argument("--ccl-sizes", default=None, help="sizes to run claude-code-log on (default: all)")
    ap.add_argument(
        "--ccl-runs",
        type=int,
        default=None,
        help="run claude-code-log only in the first N runs of each size (its 1 GB build takes ~20 min)",
    )
    ap.add_argument(
        "--append-results",
        action="store_true",
        help="keep the other sizes already in OUT/latest.json and replace only the sizes run now",
    )
    ap.add_argument("--no-install", action="store_true", help="do not try to install claude-code-log")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: --sizes 5M --runs 1 --no-ccl, one TUI launch per mode, each search query timed once after its first call",
    )
    ap.add_argument("--keep", action="store_true", help="keep each run's work folder")
    ap.add_argument(
        "--no-scale",
        action="store_true",
        help="skip issue 33's archives (20,000 sessions in a folder, a 100k-record session, a 200 MB line)",
    )
    ap.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds before a measured process is stopped"
    )
    ap.add_argument(
        "--hub-server",
        metavar="URL",
        default=None,
        help="the sync rows: make each run's hub a new database on this PostgreSQL server (URL of a "
        "database of it to connect to, e.g. postgres) rather than start a throwaway server",
    )
    ap.add_argument(
        "--threadloom-src",
        type=Path,
        default=None,
        help="benchmark the threadloom in this checkout (python -m core.cli with PYTHONPATH=DIR)",
    )
    ap.add_argument(
        "--quiet-wait",
        type=float,
        default=10.0,
        help="before each measured process wait up to this many seconds for the machine to be idle",
    )
    ap.add_argument(
        "--label", default="", help="a note stored with the results (e.g. what --threadloom-src holds)"
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.runs, args.no_ccl = "5M", 1, True
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    ccl_sizes = set(sizes if args.ccl_sizes is None else [s.strip() for s in args.ccl_sizes.split(",")])

    home = Path(tempfile.mkdtemp(prefix="threadloom-bench-home-"))
    (home / ".claude").mkdir()
    try:
        if args.no_ccl:
            ccl, ccl_version, ccl_problem = None, None, "skipped (--no-ccl)"
        else:
            ccl, ccl_version, ccl_problem = find_ccl(install=not args.no_install)
            if ccl_problem:
                print(f"claude-code-log: {ccl_problem}; skipping it", file=sys.stderr)
        command = (
            [sys.executable, "-m", "threadloom.core.cli"] if args.threadloom_src else threadloom_command()
        )
        src = str(args.threadloom_src.resolve()) if args.threadloom_src else None
        pythonpath = checkout_path(Path(src), home) if src else None
        tools = Tools(
            command,
            ccl,
            ccl_version,
            ccl_problem,
            home,
            args.timeout,
            0.0 if args.quick else args.quiet_wait,
            pythonpath,
            1 if args.quick else TUI_LAUNCHES,
            1 if args.quick else SEARCH_REPEAT,
            None if args.no_scale else QUICK_SCALE if args.quick else FULL_SCALE,
            args.archive_dir,
            args.hub_server,
        )
        # byte-compile the code under test once, as an installed package is, so no measured process pays it
        for folder in [Path(src) / "core", Path(src) / "tui"] if src else [REPO / "core", REPO / "tui"]:
            if not folder.is_dir():
                continue
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(folder)], capture_output=True, env=tools.env()
            )
        args.work_dir.mkdir(parents=True, exist_ok=True)
        result: dict[str, Any] = {
            "machine": machine_info(tools, args.threadloom_src, args.label),
            "label": args.label,
            "runs": args.runs,
            "seed": args.seed,
            "archives": {},
            "rows": [],
            "targets": [],
            "notes": [],
        }
        previous = args.out / "latest.json"
        if args.append_results and previous.exists():
            old = json.loads(previous.read_text())
            keep = [s for s in old.get("archives", {}) if s not in sizes]
            result["archives"] = {s: old["archives"][s] for s in keep}
            result["rows"] = [r for r in old.get("rows", []) if r["size"] in keep]
            result["targets"] = [t for t in old.get("targets", []) if t["size"] in keep]
            result["raw_runs"] = {s: v for s, v in old.get("raw_runs", {}).items() if s in keep}
            result["notes"].append(f"sizes {', '.join(keep)} kept from the run of {old['machine']['date']}")
        for size in sizes:
            archive, manifest = ensure_archive(size, args.seed, args.archive_dir)
            result["archives"][size] = {
                "path": str(archive),
                "bytes": manifest["bytes"],
                "files": manifest["files"],
                "lines": manifest["lines"],
                "sessions": manifest["sessions"],
                "subagent_files": manifest["subagent_files"],
                "projects": manifest["projects"],
                "largest_mb": manifest["largest"]["bytes"] / MB,
                "largest_lines": manifest["largest"]["lines"],
                "mid_sized_mb": manifest["mid_sized"]["bytes"] / MB,
                "gen_seconds": manifest["seconds"],
            }
            warm_page_cache(archive / "projects")
            with_ccl = ccl is not None and size in ccl_sizes
            runs = []
            for i in range(args.runs):
                print(f"{size} run {i + 1}/{args.runs}", file=sys.stderr, flush=True)
                ccl_now = with_ccl and (args.ccl_runs is None or i < args.ccl_runs)
                runs.append(run_once(tools, archive, manifest, args.work_dir, args.seed, ccl_now, args.keep))
            note = (
                ccl_problem if ccl is None else (None if with_ccl else "not run at this size (--ccl-sizes)")
            )
            rows = build_rows(size, runs, note)
            result["rows"] += rows
            result["targets"] += evaluate_targets(size, rows, manifest)
            result.setdefault("raw_runs", {})[size] = [
                {"values": r.values, "notes": r.notes, **r.extra} for r in runs
            ]
            print("\n".join(table_lines(rows, markdown=False)) + "\n", flush=True)
            write_results(args.out, result)  # after every size, so a later failure keeps these
        for t in result["targets"]:
            if t["status"] in ("met", "missed"):
                print(
                    f"[{t['status']:>6}] {t['size']:>5} {t['target']}: {t['measured']:g} {t.get('unit', '')} "
                    f"(limit {t['limit']:g})"
                )
        print(f"\nwrote {args.out / 'latest.json'} and {args.out / 'latest.md'}")
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(home.parent / f"{home.name}-src", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
