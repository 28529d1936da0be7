"""Any size: a log larger than a window is read a window at a time, and a line too long for one row
(a crash's preallocated NULs) is stored in pieces and restored byte for byte; the valid records
around it are stored once, and the file is not read again on the next run.

The window and the longest record are made small here (the same code runs at 16 and 32 MB)."""

from __future__ import annotations

import json

import pytest
from threadloom.core.ingest import reading
from threadloom.core.read.archive import file_bytes, verify

from tests.builders.claude import Transcript
from tests.support import ingest as run

SID = "eeeeeeee-3333-4444-8555-000000000001"


@pytest.fixture
def small_windows(monkeypatch):
    monkeypatch.setattr(reading, "WINDOW", 64 << 10)
    monkeypatch.setattr(reading, "LONGEST_RECORD", 16 << 10)


def session(tmp_path, turns: int = 3) -> Transcript:
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{SID}.jsonl", SID)
    for n in range(turns):
        t.user(f"question {n}")
        t.assistant(f"answer {n} " + "x" * 200)
    return t


def messages(conn) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT content FROM entries WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq", (SID,)
        )
    ]


def file_id(conn, path) -> int:
    return conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]


def test_valid_records_then_a_run_of_nuls_are_stored_whole_and_read_once(conn, tmp_path, small_windows):
    t = session(tmp_path, turns=1)
    path = t.write()
    path.write_bytes(path.read_bytes() + b"\0" * (300 << 10))  # a crash after preallocating
    report = run(conn, tmp_path / "projects")
    assert messages(conn) == ["question 0", "answer 0 " + "x" * 200]
    assert file_bytes(conn, file_id(conn, path)) == (path.read_bytes(), True)
    pieces = conn.execute(
        "SELECT count(*), max(length(raw)) FROM entries WHERE source_file_id = ? AND known = 0",
        (file_id(conn, path),),
    ).fetchone()
    assert pieces == ((300 << 10) // (16 << 10) + 1, 16 << 10)
    assert report.records_added == 2 + pieces[0]
    again = run(conn, tmp_path / "projects")
    assert again.files_read == 0 and again.files_skipped == 1
    assert verify(conn).ok


def test_a_large_log_read_by_windows_gives_what_one_read_gives(conn, tmp_path, small_windows, monkeypatch):
    t = session(tmp_path, turns=300)  # ~150 KB: several windows
    long_line = {"type": "user", "sessionId": SID, "uuid": "long", "parentUuid": None,
                 "message": {"role": "user", "content": "y" * (40 << 10)}}  # fmt: skip
    t.add(long_line)
    path = t.write()
    size = path.stat().st_size
    assert size > 2 * reading.WINDOW
    run(conn, tmp_path / "projects")
    assert file_bytes(conn, file_id(conn, path)) == (path.read_bytes(), True)
    streamed = messages(conn)
    # the same file read in one go
    monkeypatch.setattr(reading, "WINDOW", 1 << 30)
    monkeypatch.setattr(reading, "LONGEST_RECORD", 1 << 30)
    from threadloom.core.store import db

    other = db.connect(tmp_path / "whole.db")
    run(other, tmp_path / "projects")
    whole = [
        r[0]
        for r in other.execute(
            "SELECT content FROM entries WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq", (SID,)
        )
    ]
    other.close()
    # the one line past the longest record is stored in pieces (bytes kept, not a message); the rest alike
    assert streamed == [m for m in whole if not m.startswith("yyyy")]
    assert len(whole) == 601
    # an append after a large read goes on from where it stopped
    with path.open("ab") as f:
        f.write(json.dumps({"type": "user", "sessionId": SID, "uuid": "tail", "parentUuid": "long",
                            "message": {"role": "user", "content": "one more"}}).encode() + b"\n")  # fmt: skip
    monkeypatch.setattr(reading, "WINDOW", 64 << 10)
    report = run(conn, tmp_path / "projects")
    assert report.bytes_read == path.stat().st_size - size
    assert messages(conn)[-1] == "one more"
    assert file_bytes(conn, file_id(conn, path)) == (path.read_bytes(), True)
