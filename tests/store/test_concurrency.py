"""Two threadlooms at once (the TUI's ingest beside a CLI ingest or search): one writer at a
time, decided once; the other waits and says so, or reads only. Real processes, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.store import db, search_index

from tests.support import archive

ROOT = Path(__file__).resolve().parents[2]

# a writer that stops half-way, holding the database, until its stdin closes
PAUSED_WRITER = """
import sys
sys.path.insert(0, sys.argv[1])
from threadloom.core.store import db, search_index
from threadloom.core.ingest.pipeline import run_ingest
conn = db.connect(sys.argv[2])
paused = []
def pause(done):
    if done and not paused:
        paused.append(1)
        print("paused", flush=True)
        sys.stdin.read()
if sys.argv[3] == "ingest":
    run_ingest(conn, [sys.argv[4]], include_defaults=False, progress=lambda p: pause(p.files_done == 2))
else:
    search_index.build(conn, lambda p: pause(p.done >= 40), chunk_rows=20)
print("finished", flush=True)
"""


def paused_writer(db_path: Path, *args: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSED_WRITER, str(ROOT), str(db_path), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "paused\n"
    return proc


def cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "threadloom.core.cli", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, HOME=str(ROOT / "no-home")),
    )


def test_a_second_ingest_waits_for_the_first_and_says_so(tmp_path):
    projects = archive(tmp_path, sessions=12)
    path = tmp_path / "ledger.db"
    first = paused_writer(path, "ingest", str(projects))  # a first load, half-way
    second = cli("ingest", "--db", str(path), "--source", str(projects), "--only", "--json")
    assert second.stderr is not None
    waiting = second.stderr.readline()
    assert f"process {first.pid} is updating {path}" in waiting and "waiting" in waiting
    first.communicate("")
    out, err = second.communicate(timeout=60)
    assert first.returncode == 0 and second.returncode == 0, err
    report = json.loads(out)
    assert report["errors"] == [] and report["records_added"] == 0 and report["files_skipped"] == 12
    conn = db.connect(path)
    assert conn.execute("SELECT status, count(*) FROM source_files GROUP BY status").fetchall() == [
        ("ok", 12)
    ]
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 144
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def fts_rows(conn) -> int:
    return conn.execute("SELECT count(*) FROM search_fts_docsize").fetchone()[0]


def test_a_search_while_the_index_is_built_reads_only_and_the_index_stays_whole(tmp_path):
    projects = archive(tmp_path, sessions=12)
    path = tmp_path / "ledger.db"
    conn = db.connect(path)
    run_ingest(conn, [projects], include_defaults=False, build_index=False)  # the index is left behind
    conn.close()
    builder = paused_writer(path, "index")  # 40 of 144 entries indexed, the lock held
    # by words: what the index has so far (meaning reads the episodes, which are all in)
    searcher = cli("search", "--db", str(path), "question", "--limit", "500", "--json", "--mode", "words")
    out, err = searcher.communicate(timeout=60)  # it does not wait for the builder
    assert searcher.returncode == 0, err
    assert "still being built" in err
    assert 0 < len(json.loads(out)) < 72  # the prompts indexed so far
    builder.communicate("")
    assert builder.returncode == 0
    conn = db.connect(path)
    assert search_index.pending(conn) is None
    conn.execute("INSERT INTO search_fts(search_fts) VALUES ('integrity-check')")  # raises when damaged
    assert fts_rows(conn) == conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 144


def test_the_index_position_is_read_under_the_lock_that_moves_it(tmp_path):
    """Two builders one after the other on one database, each resuming where the index stands
    when it gets the lock: every entry indexed exactly once."""
    projects = archive(tmp_path, sessions=12)
    path = tmp_path / "ledger.db"
    conn = db.connect(path)
    run_ingest(conn, [projects], include_defaults=False, build_index=False)
    builder = paused_writer(path, "index")
    other = db.connect(path)
    assert search_index.build(other, wait=False) is False  # busy: left to the one building
    assert search_index.indexed_upto(other) == 40
    builder.communicate("")
    assert search_index.build(other) is True
    other.execute("INSERT INTO search_fts(search_fts) VALUES ('integrity-check')")
    assert fts_rows(other) == 144
