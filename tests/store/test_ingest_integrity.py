"""Incremental ingest that can be trusted: prefixes proved by their whole hash, only regular
files opened, documents complete when they parse."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.archive import file_bytes

from tests.builders.claude import Transcript
from tests.support import ingest

SID = "11111111-aaaa-4bbb-8ccc-000000000001"


def long_session(root: Path, turns: int) -> Transcript:
    t = Transcript(root / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID)
    for i in range(turns):
        t.user(f"prompt number {i}")
        t.assistant(f"answer number {i} " + "x" * 200)
    return t


def stored(conn, path: Path) -> bytes:
    file_id = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
    return file_bytes(conn, file_id)[0]


def contents(conn) -> list[str]:
    """The text of the records in a session now (a rewrite's superseded records are in none)."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT content FROM entries WHERE content IS NOT NULL AND seq IS NOT NULL ORDER BY id"
        )
    ]


def test_an_edit_inside_a_grown_file_is_read_again_whole(conn, tmp_path):
    t = long_session(tmp_path, turns=4000)
    path = t.write()
    ingest(conn, tmp_path / "projects")
    data = path.read_bytes()
    assert len(data) > 2_000_000
    # 11 bytes changed in the middle (no sample of the prefix would look there) and a line appended
    middle = data.index(b"prompt number 1999")
    edited = data[:middle] + b"PROMPT EDIT" + data[middle + 11 :]
    extra = (
        json.dumps(
            {
                "type": "user",
                "uuid": "tail-1",
                "parentUuid": None,
                "sessionId": SID,
                "message": {"role": "user", "content": "appended"},
            }
        ).encode()
        + b"\n"
    )
    path.write_bytes(edited + extra)
    report = ingest(conn, tmp_path / "projects")
    assert report.bytes_read == len(edited + extra)  # read again whole, not from where it stopped
    texts = contents(conn)
    assert "PROMPT EDITer 1999" in texts and "prompt number 1999" not in texts and "appended" in texts
    assert stored(conn, path) == path.read_bytes()
    assert conn.execute("SELECT count(*) FROM entries WHERE seq IS NOT NULL").fetchone()[0] == 8001
    assert (
        conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 8002
    )  # the edited line's old bytes kept


def test_a_plain_append_is_still_read_from_where_the_last_run_stopped(conn, tmp_path):
    t = long_session(tmp_path, turns=200)
    path = t.write(final_newline=False)  # the last record is complete but has no newline yet
    ingest(conn, tmp_path / "projects")
    ids_before = [r[0] for r in conn.execute("SELECT id FROM entries ORDER BY id")]
    for n in (1, 2):
        line = json.dumps(
            {
                "type": "user",
                "uuid": f"tail-{n}",
                "sessionId": SID,
                "message": {"role": "user", "content": f"late {n}"},
            }
        ).encode()
        with open(path, "ab") as f:
            f.write((b"\n" if n == 1 else b"") + line + b"\n")
        report = ingest(conn, tmp_path / "projects")
        assert report.records_added == 1 and report.bytes_read < 200, n
    assert [r[0] for r in conn.execute("SELECT id FROM entries ORDER BY id")][: len(ids_before)] == ids_before
    assert stored(conn, path) == path.read_bytes()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_named_like_a_session_is_reported_and_skipped(conn, tmp_path):
    long_session(tmp_path, turns=2).write()
    fifo = tmp_path / "projects" / "-home-dev-app" / "22222222-aaaa-4bbb-8ccc-000000000002.jsonl"
    os.mkfifo(fifo)
    (tmp_path / "projects" / "-home-dev-fifo").mkdir()
    os.mkfifo(tmp_path / "projects" / "-home-dev-fifo" / "session-2026-01-01T00-00-abc.json")
    report = run_ingest(conn, [tmp_path / "projects"], include_defaults=False)  # returns: nothing blocks
    assert report.records_added == 4
    assert any(str(fifo) in e and "not a regular file (a FIFO)" in e for e in report.errors), report.errors


def gemini_chat(sid: str) -> bytes:
    """A chat as Gemini CLI writes it: pretty-printed JSON with no final newline."""
    doc = {
        "sessionId": sid,
        "projectHash": "ab" * 32,
        "startTime": "2026-01-16T18:34:00.000Z",
        "lastUpdated": "2026-01-16T18:34:10.000Z",
        "messages": [
            {"id": "m1", "timestamp": "2026-01-16T18:34:01.000Z", "type": "user", "content": "Hello"},
            {
                "id": "m2",
                "timestamp": "2026-01-16T18:34:02.000Z",
                "type": "gemini",
                "content": "Hi there",
                "model": "gemini-3-flash-preview",
            },
        ],
    }
    return json.dumps(doc, indent=2).encode()


def test_a_gemini_chat_without_a_final_newline_is_complete_when_it_parses(conn, tmp_path):
    chats = tmp_path / "gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    path = chats / "session-2026-01-16T18-34-3739ef95.json"
    path.write_bytes(gemini_chat("3739ef95-0000-4000-8000-000000000001"))
    ingest(conn, tmp_path / "gemini")
    status = conn.execute(
        "SELECT status, bytes_ingested FROM source_files WHERE path = ?", (str(path),)
    ).fetchone()
    assert status == ("ok", path.stat().st_size)
    assert {"Hello", "Hi there"} <= set(contents(conn))
    assert stored(conn, path) == path.read_bytes()


def test_a_half_written_gemini_chat_still_waits_for_its_writer(conn, tmp_path):
    chats = tmp_path / "gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    path = chats / "session-2026-01-16T18-34-3739ef95.json"
    whole = gemini_chat("3739ef95-0000-4000-8000-000000000001")
    cut = whole.rindex(b"\n    }")
    path.write_bytes(whole[:cut] + b"\n    }")  # a closing brace, but the document is not complete
    ingest(conn, tmp_path / "gemini")
    assert (
        conn.execute("SELECT status FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
        == "waiting"
    )
    path.write_bytes(whole)
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    ingest(conn, tmp_path / "gemini")
    assert conn.execute("SELECT status FROM source_files WHERE path = ?", (str(path),)).fetchone()[0] == "ok"
    assert stored(conn, path) == whole


def test_a_file_name_that_is_not_utf8_is_read_with_the_rest(conn, tmp_path):
    """Stored under its name escaped and its bytes (core.adapters.base.stored_name); see test_odd_names."""
    long_session(tmp_path, turns=2).write()
    folder = os.fsencode(tmp_path / "projects" / "-home-dev-app")
    with open(folder + b"/\xff-33333333-aaaa-4bbb-8ccc-000000000003.jsonl", "wb") as f:
        f.write(
            b'{"type":"user","sessionId":"33333333-aaaa-4bbb-8ccc-000000000003","message":{"content":"x"}}\n'
        )
    report = run_ingest(conn, [tmp_path / "projects"], include_defaults=False)
    assert report.records_added == 5 and report.errors == []
    [(shown,)] = conn.execute("SELECT path FROM source_files WHERE path LIKE '%\\xff-3333%'").fetchall()
    assert shown.split("\0")[0].endswith("/\\xff-33333333-aaaa-4bbb-8ccc-000000000003.jsonl")


def test_errors_printed_by_ingest_cannot_drive_the_terminal(tmp_path, capsys):
    from threadloom.core.cli import main

    long_session(tmp_path, turns=1).write()
    os.mkfifo(tmp_path / "projects" / "-home-dev-app" / "\x1b]0;pwned\x07\x1b[2J.jsonl")
    assert (
        main(["--db", str(tmp_path / "t.db"), "ingest", "--only", "--source", str(tmp_path / "projects")])
        == 0
    )
    err = capsys.readouterr().err
    assert "␛]0;pwned␇␛[2J.jsonl" in err and "\x1b" not in err and "\x07" not in err
