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


def _line(uuid: str, text: str) -> bytes:
    return (
        json.dumps(
            {"type": "user", "uuid": uuid, "sessionId": SID, "message": {"role": "user", "content": text}}
        )
        + "\n"
    ).encode()


def _hash_row(conn, path: Path) -> tuple[str, int]:
    return conn.execute(
        "SELECT content_hash, bytes_ingested FROM source_files WHERE path = ?", (str(path),)
    ).fetchone()


def test_the_prefix_hash_is_fast_and_an_in_place_rewrite_before_an_append_is_still_seen(conn, tmp_path):
    """The prefix is proved by xxh3 now (FAST_HASH): an edit written into the same file (same inode,
    no rename) before a line is appended still makes it be read whole, and the old bytes are kept."""
    from threadloom.core.ingest.reading import FAST_HASH

    t = long_session(tmp_path, turns=300)
    path = t.write()
    ingest(conn, tmp_path / "projects")
    content_hash, done = _hash_row(conn, path)
    assert content_hash.startswith(FAST_HASH) and done == path.stat().st_size
    inode = path.stat().st_ino
    with open(path, "r+b") as f:  # rewritten in place: one byte of a prompt in the middle
        at = path.read_bytes().index(b"prompt number 150")
        f.seek(at)
        f.write(b"P")
    with open(path, "ab") as f:
        f.write(_line("tail-1", "appended after the edit"))
    assert path.stat().st_ino == inode
    report = ingest(conn, tmp_path / "projects")
    assert report.bytes_read == path.stat().st_size  # read again whole
    texts = contents(conn)
    assert "Prompt number 150" in texts and "prompt number 150" not in texts
    assert "appended after the edit" in texts
    assert stored(conn, path) == path.read_bytes()
    old = conn.execute("SELECT count(*) FROM entries WHERE content = 'prompt number 150'").fetchone()[0]
    assert old == 1  # the superseded bytes are kept, out of the session
    # and a plain append after that is read from where it stopped again
    with open(path, "ab") as f:
        f.write(_line("tail-2", "one more"))
    report = ingest(conn, tmp_path / "projects")
    assert report.records_added == 1 and report.bytes_read < 200


def test_a_same_size_edit_under_a_new_mtime_is_seen_with_the_fast_hash(conn, tmp_path):
    t = long_session(tmp_path, turns=50)
    path = t.write()
    ingest(conn, tmp_path / "projects")
    data = path.read_bytes()
    at = data.index(b"prompt number 25")
    path.write_bytes(data[:at] + b"PROMPT" + data[at + 6 :])
    report = ingest(conn, tmp_path / "projects")
    assert report.bytes_read == len(data)
    assert "PROMPT number 25" in contents(conn)
    assert stored(conn, path) == path.read_bytes()


def test_a_prefix_hashed_by_an_older_threadloom_is_checked_as_sha256_then_hashed_on_fast(conn, tmp_path):
    """A database written before FAST_HASH holds sha256's first 32 hex digits: an append is still read
    from where that run stopped (the prefix proved by sha256), and the hash stored then is xxh3; an
    edit of such a prefix is still seen."""
    import hashlib

    from threadloom.core.ingest.reading import FAST_HASH

    t = long_session(tmp_path, turns=100)
    path = t.write()
    ingest(conn, tmp_path / "projects")
    old_hash = hashlib.sha256(path.read_bytes()).hexdigest()[:32]
    conn.execute("UPDATE source_files SET content_hash = ? WHERE path = ?", (old_hash, str(path)))
    with open(path, "ab") as f:
        f.write(_line("tail-1", "after the upgrade"))
    report = ingest(conn, tmp_path / "projects")
    assert report.records_added == 1 and report.bytes_read < 200
    content_hash, done = _hash_row(conn, path)
    assert content_hash.startswith(FAST_HASH) and done == path.stat().st_size
    assert stored(conn, path) == path.read_bytes()
    # an older hash that no longer matches: read again whole
    conn.execute(
        "UPDATE source_files SET content_hash = ? WHERE path = ?",
        (hashlib.sha256(path.read_bytes()).hexdigest()[:32], str(path)),
    )
    data = path.read_bytes()
    at = data.index(b"prompt number 50")
    edited = data[:at] + b"PROMPT" + data[at + 6 :]
    path.write_bytes(edited + _line("tail-2", "and one more"))
    report = ingest(conn, tmp_path / "projects")
    assert report.bytes_read == path.stat().st_size
    texts = contents(conn)
    assert "PROMPT number 50" in texts and "and one more" in texts
    assert stored(conn, path) == path.read_bytes()
