"""Smoke test of the benchmark harness (bench/): a ~5 MB archive, one run, no claude-code-log.

It checks that the generator and every scenario run and report sane numbers; it never asserts on
timings (the benchmark itself is not part of the test suite and never fails CI on time).
"""

from __future__ import annotations

import glob
import json
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import gen_archive  # noqa: E402

from tests.support import kept  # noqa: E402


def test_generator_is_deterministic_and_realistic(tmp_path: Path) -> None:
    assert gen_archive.plan(5 << 20, 3) == gen_archive.plan(5 << 20, 3)
    manifest = gen_archive.generate(tmp_path / "a", 2 << 20, seed=3, jobs=1)
    files = sorted((tmp_path / "a" / "projects").rglob("*.jsonl"))
    assert files and manifest["lines"] > 500
    assert abs(manifest["bytes"] - (2 << 20)) < (2 << 20)  # about the size asked for
    types: set[str] = set()
    spawned: set[str] = set()
    for path in files:
        for line in path.read_bytes().splitlines():
            obj = orjson.loads(line)
            types.add(obj["type"])
            result = obj.get("toolUseResult")
            if isinstance(result, dict) and "agentId" in result:
                spawned.add(result["agentId"])
    assert {"user", "assistant", "file-history-snapshot"} <= types
    agent_files = {p.name[len("agent-") : -len(".jsonl")] for p in files if p.name.startswith("agent-")}
    assert spawned & agent_files  # Task/Agent results name the agent files they spawned
    # the same seed gives the same bytes
    again = gen_archive.generate(tmp_path / "b", 2 << 20, seed=3, jobs=2)
    assert again["bytes"] == manifest["bytes"] and again["file_list"] == manifest["file_list"]


def test_queries_use_words_the_generator_writes() -> None:
    vocab = set(gen_archive.pools().vocab)
    lines = [
        ln.split("\t", 1)
        for ln in (BENCH / "queries.txt").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert len(lines) >= 30
    rare = [q for cat, q in lines if cat == "rare"]
    assert rare and all(w in vocab for q in rare for w in q.split())


def worker_hub_server(request: pytest.FixtureRequest) -> list[str]:
    """`--hub-server` on this worker's PostgreSQL test server (tests/pg_support.py), which the sync
    tests start anyway: the harness's sync rows then make their hub there, where they started a
    server of their own (initdb, a second of CPU). None where there is none: the rows say why."""
    try:
        server = request.getfixturevalue("pg_server")
    except pytest.skip.Exception:
        return []
    return ["--hub-server", server.url("postgres")]


@pytest.mark.long(25)
def test_harness_quick_run(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    out = tmp_path / "results"
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "run.py"),
            "--quick",
            "--archive-dir",
            str(kept("bench-archives")),  # generated once (the generator has a test of its own above)
            "--work-dir",
            str(tmp_path / "work"),
            "--out",
            str(out),
            *worker_hub_server(request),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "latest.json").read_text())
    assert (out / "latest.md").read_text().startswith("# threadloom benchmark")
    assert result["runs"] == 1 and set(result["archives"]) == {"5M"}
    assert result["archives"]["5M"]["bytes"] > 1_000_000
    rows = {r["key"]: r for r in result["rows"] if r["key"]}
    for key in (
        "cold.seconds",
        "cold_index.seconds",
        "cold_total.seconds",
        "cold.peak_rss_mb",
        "cold.db_mb",
        "nochange.seconds",
        "parse1mb.seconds",
        "append1mb.seconds",
        "append1mb.ratio_to_parse1mb",
        "rewrite_same.seconds",
        "rewrite_grow.seconds",
    ):
        assert rows[key]["status"] == "ok", (key, rows[key])
        assert rows[key]["median"] > 0 and rows[key]["min"] <= rows[key]["median"] <= rows[key]["max"], key
    assert rows["cold.records"]["median"] > 0
    if glob.glob("/usr/lib/postgresql/*/bin/pg_ctl") or shutil.which("pg_ctl"):  # the sync rows
        for key in (
            "sync_push.seconds",
            "sync_nochange.seconds",
            "sync_pull.seconds",
            "sync_pull.ratio_to_cold",
        ):
            assert rows[key]["status"] == "ok" and rows[key]["median"] > 0, (key, rows[key])
    assert rows["rewrite_grow.detected"]["median"] == 1.0
    assert 0.5 < rows["append1mb.bytes_read_mb"]["median"] < 2.0  # only the new bytes are read
    # the TUI rows (scripts/measure_tui.py, headless) have numbers, and their targets are judged
    for key in (
        "tui.first_frame_s",
        "tui.first_frame_no_ingest_s",
        "tui.open_largest_ms",
        "tui.page_scroll_ms",
        "tui.open_largest_md_ms",
        "tui.page_scroll_md_ms",
        "tui.browse_rss_mb",
        "stats.open_ms",
        "stats.rollup_rows",
        "tui.stats_open_ms",
    ):
        assert rows[key]["status"] == "ok" and rows[key]["median"] > 0, (key, rows[key])
    assert rows["tui.first_frame_s"]["median"] < 60  # seconds from process start, not ms or a clock reading
    targets = {t["target"]: t for t in result["targets"]}
    for target in (
        "TUI first frame with data ≤ 0.5 s",
        "largest session ≤ 200 ms to first paint",
        "page scroll ≤ 16 ms",
        "largest session ≤ 200 ms to first paint, text as Markdown",
        "page scroll ≤ 16 ms, text as Markdown",
        "peak RSS while browsing ≤ 200 MB",
        "stats screen opens ≤ 300 ms",
    ):
        assert targets[target]["status"] in ("met", "missed"), targets[target]
    statuses = {r["scenario"]: r["status"] for r in result["rows"]}
    assert statuses["claude-code-log (all rows)"] == "skipped"
    assert any(t["status"] in ("met", "missed") for t in result["targets"])
