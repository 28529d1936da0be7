"""A bulk load may leave the search index behind; it is caught up in resumable chunks."""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.search import search
from threadloom.core.store import db, search_index
from threadloom.core.store.sql import ONE_PASS_CACHE_KIB

from tests.builders.claude import Transcript
from tests.support import run


def fts_is_consistent(conn: sqlite3.Connection) -> bool:
    """FTS5's own check: every indexed row matches the text in `entries` and nothing is missing."""
    try:
        conn.execute("INSERT INTO search_fts(search_fts, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError:
        return False
    return True


def archive(root: Path, sessions: int = 6) -> Path:
    projects = root / "projects"
    for n in range(sessions):
        sid = f"22222222-aaaa-4bbb-8ccc-{n:012d}"
        t = Transcript(projects / "-home-dev-app" / f"{sid}.jsonl", sid)
        for turn in range(5):
            t.user(f"session{n} question {turn} about the flamingo parser")
            t.assistant(f"session{n} answer {turn} mentions zebra{n}")
        t.write()
    return projects


def test_bulk_load_without_index_is_browsable_and_search_says_the_index_is_behind(conn, tmp_path):
    projects = archive(tmp_path)
    report = run_ingest(conn, [projects], include_defaults=False, build_index=False)
    assert report.records_added == 60 and report.index_seconds == 0
    state = search_index.pending(conn)
    assert state is not None and state.done == 0 and state.total == 60
    assert conn.execute("SELECT count(*) FROM agent_sessions").fetchone()[0] == 6
    result = search(conn, "flamingo")
    assert result.hits == [] and any("still being built (0%)" in p for p in result.problems)

    cache = conn.execute("PRAGMA cache_size").fetchone()[0]
    caches: list[int] = []  # the build's, seen from its progress: a pass over the archive with a small one
    assert search_index.build(conn, lambda p: caches.append(conn.execute("PRAGMA cache_size").fetchone()[0]))
    assert set(caches) == {-ONE_PASS_CACHE_KIB} and conn.execute("PRAGMA cache_size").fetchone()[0] == cache
    assert search_index.pending(conn) is None and fts_is_consistent(conn)
    result = search(conn, "zebra3")
    assert len(result.hits) == 5 and not any("being built" in p for p in result.problems)


def test_cancelled_build_resumes_where_it_stopped(conn, tmp_path):
    run_ingest(conn, [archive(tmp_path)], include_defaults=False, build_index=False)
    cancel = threading.Event()
    seen: list[int] = []

    def progress(p: search_index.IndexProgress) -> None:
        seen.append(p.done)
        if p.done >= 20:
            cancel.set()

    assert search_index.build(conn, progress, cancel, chunk_rows=10) is False
    assert search_index.indexed_upto(conn) == 20
    assert conn.execute("SELECT count(*) FROM search_fts_docsize").fetchone()[0] == 20
    seen.clear()
    assert search_index.build(conn, progress=lambda p: seen.append(p.done), chunk_rows=25) is True
    assert seen == [20, 45, 60] and fts_is_consistent(conn)
    assert len(search(conn, "flamingo", limit=100).hits) == 30  # one per user prompt


def test_changes_while_the_index_is_behind_are_indexed_once(conn, tmp_path):
    projects = archive(tmp_path)
    run_ingest(conn, [projects], include_defaults=False, build_index=False)
    search_index.build(conn, cancel=_cancel_after(1), chunk_rows=25)  # part of it indexed
    assert search_index.indexed_upto(conn) == 25
    # a file rewritten in place (half indexed, half not) and a new file
    straddling = Path(
        conn.execute(
            "SELECT f.path FROM entries e JOIN source_files f ON f.id = e.source_file_id WHERE e.id = 25"
        ).fetchone()[0]
    )
    assert (
        conn.execute(
            "SELECT count(*) FROM entries e JOIN source_files f ON f.id = e.source_file_id "
            "WHERE f.path = ? AND e.id > 25",
            (str(straddling),),
        ).fetchone()[0]
        == 5
    )
    straddling.write_bytes(straddling.read_bytes().replace(b"flamingo", b"pelicans"))
    sid = "33333333-aaaa-4bbb-8ccc-000000000000"
    late = Transcript(projects / "-home-dev-app" / f"{sid}.jsonl", sid)
    late.user("a late ostrich question")
    late.write()
    report = run_ingest(conn, [projects], include_defaults=False, build_index=False)
    assert report.files_read == 2 and search_index.pending(conn) is not None
    assert search_index.build(conn) is True and fts_is_consistent(conn)
    assert len(search(conn, "pelicans").hits) == 5
    assert len(search(conn, "ostrich").hits) == 1
    assert len(search(conn, "flamingo", limit=100).hits) == 25
    # once complete, ingest indexes each file as it goes again
    sid = "44444444-aaaa-4bbb-8ccc-000000000000"
    later = Transcript(projects / "-home-dev-app" / f"{sid}.jsonl", sid)
    later.user("an emu question")
    later.write()
    run_ingest(conn, [projects], include_defaults=False, build_index=False)
    assert search_index.pending(conn) is None and len(search(conn, "emu").hits) == 1


def _cancel_after(chunks: int) -> threading.Event:
    class AfterN(threading.Event):
        calls = 0

        def is_set(self) -> bool:
            self.calls += 1
            return self.calls > chunks

    return AfterN()


def test_cli_no_index_then_index_and_search_catches_up(tmp_path):
    projects = archive(tmp_path)
    db_path = tmp_path / "cli.db"
    res = run("ingest", "--db", str(db_path), "--only", "--source", str(projects), "--no-index", "--json")
    assert res.returncode == 0, res.stderr
    res = run("index", "--db", str(db_path), "--json")
    assert res.returncode == 0 and '"indexed": 60' in res.stdout
    assert json.loads(res.stdout)["episodes_seconds"] > 0  # the turns for meaning, read after the index
    with closing(sqlite3.connect(db_path)) as conn:
        assert conn.execute("SELECT count(DISTINCT session_id) FROM episodes").fetchone()[0] == 6
    assert "already complete" in run("index", "--db", str(db_path)).stdout
    # said as it is done: the index and the turns, or the turns alone (a catch-up stopped between)
    for name, said in (
        ("words.db", "search index complete: 60 records indexed, the sessions' turns read"),
        ("turns.db", "the sessions' turns read for search by meaning in"),
    ):
        run("ingest", "--db", str(tmp_path / name), "--only", "--source", str(projects), "--no-index")
        if name == "turns.db":
            with closing(db.connect(tmp_path / name)) as conn:
                assert search_index.build(conn)
        res = run("index", "--db", str(tmp_path / name))
        assert res.returncode == 0 and res.stdout.startswith(said), res.stdout
    # a search on an index left behind finishes it first
    other = tmp_path / "other.db"
    run("ingest", "--db", str(other), "--only", "--source", str(projects), "--no-index", "--json")
    res = run("search", "--db", str(other), "zebra2", "--json", "--mode", "words")
    assert res.returncode == 0 and res.stdout.count('"session_id"') == 5, res.stdout[:500]
    # so does a context for a new session, which reads the turns for meaning
    third = tmp_path / "third.db"
    run("ingest", "--db", str(third), "--only", "--source", str(projects), "--no-index")
    res = run("context", "--db", str(third), "zebra2", "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["turns"], res.stdout[:500]
    with closing(sqlite3.connect(third)) as conn:
        assert conn.execute("SELECT count(DISTINCT session_id) FROM episodes").fetchone()[0] == 6
