"""`ingest_known`: what an append to a file the archive knows costs the watch and the hooks, with
no folder walked; the result is the one a full ingest gives."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from threadloom.core.ingest.pipeline import ingest_known, known_sources, run_ingest

from tests.conftest import Transcript, ingest

SID = "88888888-aaaa-4bbb-8ccc-000000000001"


def session(root: Path) -> Transcript:
    t = Transcript(root / "projects" / "-srv-app" / f"{SID}.jsonl", SID)
    t.user("first question")
    t.assistant("first answer")
    t.write()
    return t


def test_an_append_to_a_known_file_is_read_alone(conn: sqlite3.Connection, tmp_path: Path) -> None:
    t = session(tmp_path)
    ingest(conn, tmp_path / "projects")
    known = known_sources(conn)
    assert list(known) == [str(t.path)]
    assert known[str(t.path)].agent == "claude-code" and known[str(t.path)].size == t.path.stat().st_size

    unchanged = ingest_known(conn, [str(t.path)])
    assert (unchanged.files_seen, unchanged.files_skipped, unchanged.files_read) == (1, 1, 0)

    t.lines.clear()
    t.user("second question")
    with t.path.open("a") as f:
        f.write(json.dumps(t.lines[-1]) + "\n")
    other = "88888888-aaaa-4bbb-8ccc-000000000002"
    stranger = Transcript(tmp_path / "projects" / "-srv-app" / f"{other}.jsonl", other)
    stranger.user("a session the archive has not seen")
    stranger.write()
    report = ingest_known(conn, [str(t.path), str(stranger.path), str(t.path)])
    assert (report.files_seen, report.files_read, report.records_added) == (1, 1, 1)
    assert report.changed_sessions == [SID] and report.roots == []
    # a full run finds nothing more in the known file; the new one is its to find
    again = run_ingest(conn, [tmp_path / "projects"], include_defaults=False)
    assert (again.files_read, again.records_added, again.changed_sessions) == (1, 1, [other])
    assert conn.execute("SELECT count(*) FROM entries WHERE session_id = ?", (SID,)).fetchone()[0] == 3


def test_a_file_known_as_gone_is_left_to_a_full_run(conn: sqlite3.Connection, tmp_path: Path) -> None:
    t = session(tmp_path)
    ingest(conn, tmp_path / "projects")
    t.path.unlink()
    ingest(conn, tmp_path / "projects")  # marks it gone
    assert known_sources(conn) == {}
    t.write()
    assert ingest_known(conn, [str(t.path)]).files_seen == 0
