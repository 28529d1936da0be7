"""Any size: a log larger than a window is read a window at a time, and a line too long for one row
(a crash's preallocated NULs) is stored in pieces and restored byte for byte; the valid records
around it are stored once, and the file is not read again on the next run.

The window and the longest record are made small here (the same code runs at 16 and 32 MB)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from threadloom.core import cli
from threadloom.core.ingest import reading
from threadloom.core.read.archive import file_bytes, verify

from tests.builders.claude import Transcript, tool_use
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
    # the one line past the longest record is stored in pieces and read whole from them: the same
    assert streamed == whole
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


def test_a_valid_line_past_the_longest_record_is_a_message_with_its_long_strings_shortened(
    conn, tmp_path, small_windows, monkeypatch
):
    """A PDF's base64 or a file written whole makes a line past LONGEST_RECORD: stored in pieces, and
    still read as its message (its strings past KEPT_STRING shortened), its tool call's input kept."""
    monkeypatch.setattr(reading, "KEPT_STRING", 4 << 10)
    t = session(tmp_path, turns=1)
    pdf = "JVBERi0" + "QUJD" * (40 << 10)  # 160 KB of base64: ten pieces
    t.add({"type": "user", "message": {"role": "user", "content": [
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": pdf}},
        {"type": "text", "text": "summarize the attached report"}]}})  # fmt: skip
    body = "line of the written file é\n" * 8000  # escapes and two-byte characters, ~220 KB
    t.assistant(
        "writing it", tools=[tool_use("toolu_big", "Write", file_path="/srv/app/big.txt", content=body)]
    )
    t.tool_result("toolu_big", "File created successfully")
    t.user("thanks")
    path = t.write()
    run(conn, tmp_path / "projects")
    fid = file_id(conn, path)
    assert file_bytes(conn, fid) == (path.read_bytes(), True)
    assert verify(conn).ok
    assert messages(conn)[2] == "summarize the attached report"
    assert messages(conn)[-1] == "thanks"
    kinds = conn.execute(
        "SELECT entry_type, count(*) FROM entries WHERE source_file_id = ? AND entry_type = 'piece'", (fid,)
    ).fetchone()
    assert kinds[1] >= 2 * (160 << 10) // (16 << 10) - 2  # the pieces before each long line's last
    params_json, result_json = conn.execute(
        "SELECT params_json, result_json FROM agent_tool_calls WHERE id = 'toolu_big'"
    ).fetchone()
    params = json.loads(params_json)
    assert params["file_path"] == "/srv/app/big.txt"
    kept, note = params["content"].split(" [… ")
    assert (
        body.startswith(kept) and len(kept.encode()) <= 4 << 10 and "more bytes in the stored line]" in note
    )
    assert result_json is None  # its own record gives it back
    # shown by `show` as any message
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["show", SID[:8], "--db", str(tmp_path / "ledger.db")]) == 0
    assert "summarize the attached report" in out.getvalue() and "/srv/app/big.txt" in out.getvalue()
    # a fork copies the long lines whole, not their last pieces (nor leaves them out)
    from threadloom.core.actions.fork import plan_fork, write_fork

    last = conn.execute(
        "SELECT max(id) FROM entries WHERE session_id = ? AND seq IS NOT NULL", (SID,)
    ).fetchone()[0]
    forked = [json.loads(line) for line in write_fork(plan_fork(conn, str(last))).read_text().splitlines()]
    texts = json.dumps(forked)
    assert (
        pdf in texts
        and json.dumps(body)[1:-1] in texts
        and "thanks" in [r.get("message", {}).get("content") for r in forked]
    )


def test_a_codex_line_past_the_longest_record_keeps_its_place_and_forks_whole(
    conn, tmp_path, small_windows, monkeypatch
):
    """Codex places a record by its line number: the pieces before the last are in the session but
    take no place (no message twice, no chain broken), and a fork writes the long line whole."""
    from threadloom.core.actions.fork import plan_fork, write_fork

    from tests.support import THREAD, Rollout

    monkeypatch.setattr(reading, "KEPT_STRING", 4 << 10)
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    r = Rollout(home, THREAD)
    r.meta()
    r.context()
    r.prompt("print the log")
    r.call("call_1", ["bash", "-lc", "cat build.log"], "log line\n" * (20 << 10))  # ~200 KB: pieces
    r.say("The build log is long.")
    r.prompt("thanks")
    for n in range(400):  # enough after it for a window of its own
        r.say(f"note {n} " + "z" * 200)
    path = r.write()
    run(conn, home)
    fid = file_id(conn, path)
    assert file_bytes(conn, fid) == (path.read_bytes(), True)
    pieces = conn.execute(
        "SELECT count(*), count(DISTINCT session_id), min(session_id) FROM entries "
        "WHERE source_file_id = ? AND entry_type = 'piece'",
        (fid,),
    ).fetchone()
    assert pieces[0] >= 10 and pieces[1:] == (1, THREAD)
    shown = [
        r[0]
        for r in conn.execute(
            "SELECT content FROM entries WHERE session_id = ? AND seq IS NOT NULL AND content IS NOT NULL "
            "ORDER BY seq",
            (THREAD,),
        )
    ]
    assert shown[:3] == ["print the log", "The build log is long.", "thanks"]
    status = conn.execute(
        "SELECT status FROM agent_tool_calls WHERE id = 'call_1' AND session_id = ?", (THREAD,)
    ).fetchone()
    assert status == ("completed",)
    point = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND content = 'thanks' AND seq IS NOT NULL", (THREAD,)
    ).fetchone()[0]
    written = write_fork(plan_fork(conn, str(point)))
    long_line = next(
        line
        for line in path.read_bytes().split(b"\n")
        if b"function_call_output" in line and len(line) > 1 << 17
    )
    assert long_line + b"\n" in written.read_bytes()
