"""Zero loss under any input: a value normalization cannot use never costs a record.

Each hostile line sits between good ones; the file must ingest, every line must be stored byte for
byte, the good messages must show, and `verify` must be clean. A file that does fail must make
`verify` fail too.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console
from threadloom.core import cli
from threadloom.core.adapters.claude import ClaudeAdapter
from threadloom.core.ingest.ledger import Ledger
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.archive import file_bytes, verify
from threadloom.core.read.browse import message_page
from threadloom.tui import render as tui_render

from tests.builders.claude import Transcript, tool_use
from tests.support import ingest

SID = "aaaaaaaa-1111-4222-8333-0000000020e0"
HOSTILE = "@@hostile@@"  # written as a JSON string, then replaced by the literal JSON text under test
KEPT_RAW = "kept in the raw record only"


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def write_hostile(path: Path, literal: str) -> list[bytes]:
    """The file with the placeholder replaced; returns its lines as bytes."""
    text = path.read_text().replace(json.dumps(HOSTILE), literal)
    path.write_text(text)
    return path.read_bytes().split(b"\n")[:-1]


def stored(conn: sqlite3.Connection, path: Path) -> list[bytes]:
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
    return [
        bytes(r[0])
        for r in conn.execute("SELECT raw FROM entries WHERE source_file_id = ? ORDER BY byte_offset", (fid,))
    ]


def shown(conn: sqlite3.Connection, sid: str) -> list[str | None]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT content FROM entries WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq", (sid,)
        )
    ]


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(list(argv))
    return code, out.getvalue()


def assert_all_stored(conn: sqlite3.Connection, path: Path, lines: list[bytes]) -> None:
    """No file in error, every line stored byte for byte, and verify clean."""
    assert conn.execute("SELECT DISTINCT status, error FROM source_files").fetchall() == [("ok", None)]
    assert stored(conn, path) == lines
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
    assert file_bytes(conn, fid) == (path.read_bytes(), True)
    report = verify(conn)
    every = conn.execute("SELECT count(*) FROM entries").fetchone()[0]  # (a side file's beside it too)
    assert report.ok and report.not_stored == [] and report.records_checked == every >= len(lines)


# ---------------------------------------------------------------------- Claude Code

BAD_TIMES = ["1e400", "-1e400", "NaN", "Infinity", "99999999999999999999999", '"99999-01-01"']


def claude_session(root: Path) -> Transcript:
    return Transcript(root / "projects" / "-srv-app" / f"{SID}.jsonl", SID, cwd="/srv/app")


@pytest.mark.parametrize("literal", BAD_TIMES)
def test_claude_timestamp_out_of_range_is_left_out_not_the_file(conn, tmp_path, literal):
    t = claude_session(tmp_path)
    t.user("hello")
    t.add({"type": "user", "message": {"role": "user", "content": "bad time"}, "timestamp": HOSTILE})
    t.assistant("world")
    lines = write_hostile(t.write(), literal)
    ingest(conn, tmp_path)
    assert_all_stored(conn, t.path, lines)
    assert shown(conn, SID) == ["hello", "bad time", "world"]  # the rest of the bad line is still read
    timestamp, note = conn.execute(
        "SELECT timestamp, parse_error FROM entries WHERE content = 'bad time'"
    ).fetchone()
    assert timestamp is None and "timestamp" in note and KEPT_RAW in note
    created, ended = conn.execute(
        "SELECT created_at, ended_at FROM agent_sessions WHERE id = ?", (SID,)
    ).fetchone()
    assert (created, ended) == (conn.execute("SELECT min(timestamp), max(timestamp) FROM entries").fetchone())
    code, out = run_cli("verify", "--db", str(tmp_path / "ledger.db"))
    assert code == 0 and "all stored bytes match their sources" in out


@pytest.mark.parametrize("tokens", [2**80, -(2**80)])
def test_claude_token_count_beyond_64_bits_is_left_out_not_the_file(conn, tmp_path, tokens):
    t = claude_session(tmp_path)
    t.user("hello")
    t.assistant("bad usage", usage={"input_tokens": HOSTILE, "output_tokens": 7})
    t.user("again")
    t.assistant("world", usage={"input_tokens": 10, "output_tokens": 5})
    lines = write_hostile(t.write(), str(tokens))
    ingest(conn, tmp_path)
    assert_all_stored(conn, t.path, lines)
    assert shown(conn, SID) == ["hello", "bad usage", "again", "world"]
    note = conn.execute("SELECT parse_error FROM entries WHERE content = 'bad usage'").fetchone()[0]
    assert "number" in note and KEPT_RAW in note
    # the unusable count is 0; the rest of that message's usage still counts
    assert conn.execute(
        "SELECT input_tokens, output_tokens FROM agent_sessions WHERE id = ?", (SID,)
    ).fetchone() == (10, 12)
    # appending to the file reads on from where it stopped
    with t.path.open("a") as f:
        f.write(
            json.dumps(
                {
                    "type": "user",
                    "message": {"role": "user", "content": "later"},
                    "sessionId": SID,
                    "uuid": "later-uuid",
                    "parentUuid": None,
                    "timestamp": "2026-03-01T11:00:00.000Z",
                }
            )
            + "\n"
        )
    ingest(conn, tmp_path)
    assert_all_stored(conn, t.path, t.path.read_bytes().split(b"\n")[:-1])
    assert shown(conn, SID)[-1] == "later"


def test_claude_token_totals_past_64_bits_do_not_fail_the_run(conn, tmp_path):
    t = claude_session(tmp_path)
    t.user("hello")
    for i in range(1030):  # each count fits, their sum does not: 1030 * 2**53 > 2**63
        t.assistant(f"reply {i}", usage={"input_tokens": 2**53, "output_tokens": 1})
    t.write()
    ingest(conn, tmp_path)
    assert_all_stored(conn, t.path, t.path.read_bytes().split(b"\n")[:-1])
    assert conn.execute("SELECT input_tokens, output_tokens FROM agent_sessions").fetchone() == (
        2**63 - 1,
        1030,
    )
    assert conn.execute("SELECT token_count FROM agent_turns").fetchone() == (2**63 - 1,)


@pytest.mark.parametrize("levels", [300, 1000])
def test_claude_tool_input_nested_deep_is_read(conn, tmp_path, levels):
    t = claude_session(tmp_path)
    t.user("hello")
    t.assistant("deep call", tools=[tool_use("tdeep", "Probe", path="src", nested=HOSTILE)])
    t.tool_result("tdeep", "done")
    t.assistant("world")
    lines = write_hostile(t.write(), deep(levels))
    ingest(conn, tmp_path)
    assert_all_stored(conn, t.path, lines)
    assert [c for c in shown(conn, SID) if c] == ["hello", "deep call", "world"]
    assert conn.execute("SELECT tool_name, status FROM agent_tool_calls").fetchall() == [
        ("Probe", "completed")
    ]
    # the session shows, its deep call included (the input is re-read from the record to show it)
    code, out = run_cli("show", "--db", str(tmp_path / "ledger.db"), SID, "--json")
    assert code == 0 and "deep call" in out
    [call] = [c for m in message_page(conn, SID, 0, 10) for c in m.tool_calls]
    console = Console(width=400, record=True)
    console.print(tui_render.call_body(call, None))  # pretty-printed, down to where the record must be read
    text = console.export_text()
    assert '"path": "src"' in text and "nested deeper than 100 levels: see the raw record" in text


@pytest.mark.parametrize("levels", [10_000, 100_000])
def test_claude_tool_input_nested_past_any_parser_keeps_its_message(conn, tmp_path, levels):
    """Past what orjson (255) and the standard library (the recursion limit) take, the record was
    invalid and its message and call vanished; what lies past 200 levels is now left out with a
    note (kept in the raw record), the rest read."""
    t = claude_session(tmp_path)
    t.user("hello")
    t.assistant("too deep", tools=[tool_use("tdeep", "Bash", command="ls", nested=HOSTILE)])
    t.assistant("world")
    lines = write_hostile(t.write(), deep(levels))
    ingest(conn, tmp_path)
    assert_all_stored(conn, t.path, lines)
    assert shown(conn, SID) == ["hello", "too deep", "world"]
    entry_type, note = conn.execute(
        "SELECT entry_type, parse_error FROM entries WHERE line_number = 2"
    ).fetchone()
    assert entry_type == "assistant" and "nested past 200 levels" in note
    name, status = conn.execute(
        "SELECT tool_name, status FROM agent_tool_calls WHERE id = 'tdeep'"
    ).fetchone()
    assert name == "Bash"


# ---------------------------------------------------------------------- the safety net


def test_a_record_the_adapter_fails_on_is_stored_raw_with_the_failure(conn, tmp_path, monkeypatch):
    read = ClaudeAdapter.normalize

    def buggy(self, rec, ctx):
        if b"trips the adapter" in rec.raw:
            raise KeyError("an unforeseen shape")
        return read(self, rec, ctx)

    monkeypatch.setattr(ClaudeAdapter, "normalize", buggy)
    t = claude_session(tmp_path)
    t.user("hello")
    t.user("this line trips the adapter")
    t.assistant("world")
    t.write()
    ingest(conn, tmp_path)
    assert_all_stored(conn, t.path, t.path.read_bytes().split(b"\n")[:-1])
    assert shown(conn, SID) == ["hello", "world"]
    entry_type, known, note = conn.execute(
        "SELECT entry_type, known, parse_error FROM entries WHERE line_number = 2"
    ).fetchone()
    assert (entry_type, known) == ("unreadable", 0) and "KeyError" in note and "an unforeseen shape" in note


def test_a_record_the_ledger_fails_on_is_stored_and_left_out_of_its_session(conn, tmp_path, monkeypatch):
    place_in_turn = Ledger._place_in_turn

    def buggy(self, entry_id, rec, sess):
        if rec.content == "trips the ledger":
            raise ValueError("a bug in placing it")
        return place_in_turn(self, entry_id, rec, sess)

    monkeypatch.setattr(Ledger, "_place_in_turn", buggy)
    t = claude_session(tmp_path)
    t.user("hello")
    t.assistant("trips the ledger")
    t.assistant("world")
    t.write()
    ingest(conn, tmp_path)
    assert_all_stored(conn, t.path, t.path.read_bytes().split(b"\n")[:-1])
    assert shown(conn, SID) == ["hello", "world"]
    note = conn.execute("SELECT parse_error FROM entries WHERE content = 'trips the ledger'").fetchone()[0]
    assert "ValueError" in note and "a bug in placing it" in note


HALF_AN_EMOJI = "a title with half an emoji"


def leaking_a_surrogate(read):
    """ClaudeAdapter.normalize letting a lone surrogate into the text of HALF_AN_EMOJI's record: a
    value the database refuses, as a reader once let through."""

    def leaky(self, rec, ctx):
        out = read(self, rec, ctx)
        if out.content == HALF_AN_EMOJI:
            out.content += "\ud83d"
        return out

    return leaky


def test_a_file_whose_storing_fails_past_its_records_is_kept_raw_and_said(conn, tmp_path, monkeypatch):
    """A value the database refuses (a lone surrogate a reader let through, as a Gemini CLI title
    once did) failed the file's insert, past each record's own guard: the whole file was left out
    of the archive, and lost with the agent's cleanup. Its records are kept byte for byte, unread,
    the failure in their note and in the run's errors; each run reads it again until one can."""
    read = ClaudeAdapter.normalize
    leaky = leaking_a_surrogate(read)
    monkeypatch.setattr(ClaudeAdapter, "normalize", leaky)
    t = claude_session(tmp_path)
    t.user("hello")
    t.assistant("a title with half an emoji")
    t.assistant("world")
    t.write()
    lines = t.path.read_bytes().split(b"\n")[:-1]
    for _ in range(2):  # and again while the bug is there: the same rows, nothing stored twice
        report = run_ingest(conn, [tmp_path], include_defaults=False)
        assert (
            len(report.errors) == 1
            and "kept raw only" in report.errors[0]
            and "surrogate" in report.errors[0]
        )
        assert stored(conn, t.path) == lines and verify(conn).ok
        notes = {r[0] for r in conn.execute("SELECT parse_error FROM entries")}
        assert len(notes) == 1 and "UnicodeEncodeError" in notes.pop()
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 3
    ids = [r[0] for r in conn.execute("SELECT id FROM entries ORDER BY id")]
    monkeypatch.setattr(ClaudeAdapter, "normalize", read)  # the bug fixed: the next run reads them
    assert not run_ingest(conn, [tmp_path], include_defaults=False).errors
    assert_all_stored(conn, t.path, lines)
    assert [r[0] for r in conn.execute("SELECT id FROM entries ORDER BY id")] == ids  # the same rows
    assert shown(conn, SID) == ["hello", "a title with half an emoji", "world"]
    assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 0


def test_an_append_whose_storing_fails_leaves_what_was_read_before_as_it_was(conn, tmp_path, monkeypatch):
    """Kept raw only and read again whole, a file read fine before had every record made unread
    by the next failing run, its session gone from the lists. An append that fails leaves the
    records read before as they are; the file is in error (verify says so) and its new lines are
    read once the run can."""
    read = ClaudeAdapter.normalize
    leaky = leaking_a_surrogate(read)
    t = claude_session(tmp_path)
    t.user("hello")
    t.assistant("world")
    t.write()
    ingest(conn, tmp_path)
    t.assistant("a title with half an emoji")
    t.write()
    monkeypatch.setattr(ClaudeAdapter, "normalize", leaky)
    for _ in range(2):
        report = run_ingest(conn, [tmp_path], include_defaults=False)
        assert (
            len(report.errors) == 1 and "surrogate" in report.errors[0] and "raw only" not in report.errors[0]
        )
        assert shown(conn, SID) == ["hello", "world"]
        assert (
            conn.execute("SELECT status FROM source_files").fetchone() == ("error",) and not verify(conn).ok
        )
    monkeypatch.setattr(ClaudeAdapter, "normalize", read)
    ingest(conn, tmp_path)
    assert_all_stored(conn, t.path, t.path.read_bytes().split(b"\n")[:-1])
    assert shown(conn, SID) == ["hello", "world", "a title with half an emoji"]


# ---------------------------------------------------------------------- verify


def test_verify_fails_while_a_file_is_in_error(conn, tmp_path, monkeypatch):
    t = claude_session(tmp_path)
    t.user("hello")
    t.assistant("world")
    t.write()

    def broken(self):
        raise RuntimeError("a bug while writing the session")

    with monkeypatch.context() as m:
        m.setattr(Ledger, "flush", broken)
        report = run_ingest(conn, [tmp_path], include_defaults=False)
    assert len(report.errors) == 1
    assert conn.execute("SELECT status FROM source_files").fetchone() == ("error",)
    checked = verify(conn)
    assert not checked.ok
    assert checked.not_stored == [(str(t.path), "RuntimeError: a bug while writing the session")]
    db_path = str(tmp_path / "ledger.db")
    code, out = run_cli("verify", "--db", db_path)
    assert code == 1
    assert f"not stored: {t.path}: RuntimeError: a bug while writing the session" in out
    assert "all stored bytes match" not in out
    assert "run `threadloom ingest` again" in out
    code, out = run_cli("verify", "--db", db_path, "--json")
    assert code == 1 and json.loads(out)["not_stored"] == [
        {"path": str(t.path), "error": "RuntimeError: a bug while writing the session"}
    ]
    # once the bug is gone the next ingest reads the file and verify is clean again
    ingest(conn, tmp_path)
    assert_all_stored(conn, t.path, t.path.read_bytes().split(b"\n")[:-1])
    assert run_cli("verify", "--db", db_path)[0] == 0


# ---------------------------------------------------------------------- a last line without its newline

NOT_JSON_TAILS = {
    "text": b"this line was never JSON",
    "two records on one line": b'{"type":"user","message":{"content":"a"}}{"type":"user"}',
    "a byte no UTF-8 has": b'{"type":"user","message":{"content":"\xff"}}',
    "bare carriage returns": b'{"type":"user"}\r{"type":"assistant"}\r{"type":"user"}',
}


@pytest.mark.parametrize("tail", NOT_JSON_TAILS.values(), ids=NOT_JSON_TAILS.keys())
def test_a_last_line_no_writer_could_finish_is_stored_at_once(conn, tmp_path, tail):
    """Bytes that no bytes appended could make JSON are not a line half written: kept by the first
    ingest (they waited an hour, and a file deleted meanwhile lost them) and verify is clean."""
    t = claude_session(tmp_path)
    t.user("hello")
    t.assistant("world")
    path = t.write()
    with open(path, "ab") as f:
        f.write(tail)
    ingest(conn, tmp_path)
    assert conn.execute("SELECT status FROM source_files").fetchall() == [("ok",)]
    assert stored(conn, path)[-1] == tail
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
    assert file_bytes(conn, fid) == (path.read_bytes(), True)
    assert shown(conn, SID)[:2] == ["hello", "world"]
    report = verify(conn)
    assert report.ok and report.unread == []
    # the writer was alive after all: what it adds is read, and the first ending is kept as a version
    with open(path, "ab") as f:
        f.write(b"more\n")
    ingest(conn, tmp_path)
    assert file_bytes(conn, fid) == (path.read_bytes(), True)
    assert stored(conn, path)[-1] == tail + b"more"
    assert verify(conn).ok and verify(conn).unread == []


def test_a_file_whose_lines_end_in_bare_carriage_returns_is_stored_whole(conn, tmp_path):
    t = claude_session(tmp_path)
    t.user("hello")
    t.assistant("world")
    path = t.write()
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r"))
    ingest(conn, tmp_path)
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
    assert file_bytes(conn, fid) == (path.read_bytes(), True)
    assert verify(conn).ok and verify(conn).unread == []


def test_json_cut_short_waits_for_its_writer_and_verify_says_so(conn, tmp_path):
    """A line half written (JSON cut at its end, or inside a character) waits; verify names the bytes
    not stored yet instead of saying everything matches; a minute unchanged, they are kept."""
    t = claude_session(tmp_path)
    t.user("hello")
    path = t.write()
    cut = b'{"type":"user","message":{"content":"caf\xc3'
    with open(path, "ab") as f:
        f.write(cut)
    ingest(conn, tmp_path)
    assert conn.execute("SELECT status FROM source_files").fetchone() == ("waiting",)
    report = verify(conn)
    assert report.ok and report.unread == [(str(path), len(cut), "unfinished")]
    db_path = str(tmp_path / "ledger.db")
    code, out = run_cli("verify", "--db", db_path)
    assert code == 0 and f"not stored yet: {path}: its last {len(cut)} bytes are a line its writer" in out
    code, out = run_cli("verify", "--db", db_path, "--json")
    assert json.loads(out)["unread"] == [{"path": str(path), "bytes": len(cut), "why": "unfinished"}]
    # bytes written since the last ingest are named too
    with open(path, "ab") as f:
        f.write(b"\xa9 " * 3)
    assert verify(conn).unread == [(str(path), len(cut) + 6, "unfinished")]
    old = path.stat().st_mtime - 61
    os.utime(path, (old, old))
    ingest(conn, tmp_path)
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
    assert file_bytes(conn, fid) == (path.read_bytes(), True)
    assert verify(conn).unread == []


def test_no_cut_of_a_json_line_is_taken_for_a_finished_one():
    """Every prefix of a record, with characters of two to four bytes before the cut, is a line
    its writer may finish (orjson counts the error's position in characters, not bytes)."""
    from threadloom.core.ingest.reading import _tail_is_final

    line = json.dumps(
        {
            "type": "user",
            "message": {"content": 'running\u2026 caf\u00e9 \U0001f600 <cmd>\n\t"q"</cmd>', "n": -1.5e3},
        },
        ensure_ascii=False,
    ).encode()
    assert "…".encode() in line
    assert [c for c in range(1, len(line)) if _tail_is_final(line[:c], True)] == []
    assert _tail_is_final(line, True)


def test_verify_names_bytes_written_since_the_last_ingest(conn, tmp_path):
    t = claude_session(tmp_path)
    t.user("hello")
    path = t.write()
    ingest(conn, tmp_path)
    with open(path, "ab") as f:
        f.write(b'{"type":"user"}\n')
    assert verify(conn).unread == [(str(path), 16, "new")]
    code, out = run_cli("verify", "--db", str(tmp_path / "ledger.db"))
    assert code == 0 and f"not stored yet: {path}: 16 bytes written since the last ingest" in out


def test_a_first_line_cut_short_leaves_the_session_its_agent(conn, tmp_path):
    """The session was begun by the broken record, which names no agent: it stayed "unknown" (no
    resume command, fork refused) though every later record said Claude Code."""
    from threadloom.core.actions.fork import plan_fork

    t = claude_session(tmp_path)
    t.user("the first prompt")
    t.user("hello")
    t.assistant("world")
    path = t.write()
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([lines[0][:50], *lines[1:]]))
    ingest(conn, tmp_path)
    assert conn.execute("SELECT source FROM agent_sessions WHERE id = ?", (SID,)).fetchone() == (
        "claude-code",
    )
    last = conn.execute(
        "SELECT max(id) FROM entries WHERE session_id = ? AND seq IS NOT NULL", (SID,)
    ).fetchone()[0]
    plan = plan_fork(conn, str(last))
    assert plan.agent == "claude-code" and "claude" in plan.command


def test_an_empty_session_id_is_no_session_id(conn, tmp_path):
    """`sessionId: ""` made a session with an empty id (a blank id column, nothing to resume):
    the records belong to the file's session, as when the field is missing."""
    t = claude_session(tmp_path)
    t.user("hello")
    t.assistant("world")
    path = t.write()
    path.write_bytes(path.read_bytes().replace(f'"sessionId": "{SID}"'.encode(), b'"sessionId": ""'))
    assert b'"sessionId": ""' in path.read_bytes()
    ingest(conn, tmp_path)
    assert conn.execute("SELECT id FROM agent_sessions").fetchall() == [(SID,)]
    assert shown(conn, SID) == ["hello", "world"]


@pytest.mark.parametrize(
    ("literal", "text"),
    [
        ("42", "42"),
        ('{"note": "hi"}', '{"note":"hi"}'),
        ('["plain", {"type": "text", "text": "typed"}]', "plain\ntyped"),
    ],
)
def test_user_content_of_another_shape_is_shown_as_written(conn, tmp_path, literal, text):
    """A user message whose content is a number, an object or bare strings was counted but shown
    empty: its words are shown (an object as its JSON)."""
    t = claude_session(tmp_path)
    t.user("hello")
    t.add({"type": "user", "message": {"role": "user", "content": HOSTILE}})
    t.assistant("world")
    lines = write_hostile(t.write(), literal)
    ingest(conn, tmp_path)
    assert_all_stored(conn, t.path, lines)
    assert shown(conn, SID) == ["hello", text, "world"]


# ---------------------------------------------------------------------- other agents

THREAD = "019a0000-1111-7222-8333-0000000020e0"


def codex_line(rtype: str, payload: dict, ts: str = "2026-03-02T10:00:00.000Z") -> dict:
    return {"timestamp": ts, "type": rtype, "payload": payload}


def test_codex_token_counts_beyond_64_bits(conn, tmp_path, monkeypatch):
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    huge = {
        "input_tokens": HOSTILE,
        "cached_input_tokens": HOSTILE,
        "output_tokens": 7,
        "reasoning_output_tokens": 0,
        "total_tokens": HOSTILE,
    }
    good = {
        "input_tokens": 100,
        "cached_input_tokens": 40,
        "output_tokens": 9,
        "reasoning_output_tokens": 0,
        "total_tokens": 109,
    }
    lines = [
        codex_line(
            "session_meta",
            {
                "id": THREAD,
                "timestamp": "2026-03-02T10:00:00.000Z",
                "cwd": "/home/dev/shop",
                "originator": "codex_cli_rs",
                "cli_version": "0.101.0",
            },
        ),
        codex_line("turn_context", {"cwd": "/home/dev/shop", "model": "gpt-5.2-codex"}),
        codex_line("event_msg", {"type": "user_message", "message": "hello", "images": []}),
        codex_line(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
        ),
        codex_line(
            "event_msg",
            {
                "type": "token_count",
                "info": {"total_token_usage": huge, "last_token_usage": huge},
                "rate_limits": {},
            },
        ),
        codex_line(
            "event_msg", {"type": "token_count", "info": {"total_token_usage": huge}}
        ),  # no last: a delta
        codex_line("event_msg", {"type": "turn.completed", "usage": huge}),
        codex_line("event_msg", {"type": "agent_message", "message": "odd time"}, ts=HOSTILE),
        codex_line(
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "world"}]},
        ),
        codex_line(
            "event_msg",
            {
                "type": "token_count",
                "info": {"total_token_usage": good, "last_token_usage": good},
                "rate_limits": {},
            },
        ),
    ]
    path = home / "sessions" / "2026" / "03" / "02" / f"rollout-2026-03-02T10-00-00-{THREAD}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    raw = write_hostile(path, str(2**80))
    ingest(conn, home)
    assert_all_stored(conn, path, raw)
    assert "hello" in shown(conn, THREAD) and "world" in shown(conn, THREAD)
    tokens = conn.execute(
        "SELECT input_tokens, cache_read_tokens, output_tokens FROM agent_sessions WHERE id = ?", (THREAD,)
    ).fetchone()
    assert tokens == (60, 40, 9 + 7 + 7)  # the repeated total is the same request, counted once
    notes = [r[0] for r in conn.execute("SELECT parse_error FROM entries WHERE parse_error IS NOT NULL")]
    assert len(notes) == 4 and all(KEPT_RAW in n for n in notes)


GEMINI_SID = "5f0e2a8c-1b2d-4e3f-9a0b-0000000020e0"
PROJECT = "/home/dev/webshop"


def test_gemini_token_counts_beyond_64_bits_and_parts_nested_deep(conn, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "ghome"))
    root = tmp_path / "ghome" / ".gemini" / "tmp" / "webshop"
    (root).mkdir(parents=True)
    (root / ".project_root").write_text(PROJECT + "\n")
    ts = "2026-04-29T21:39:33.155Z"
    lines = [
        {
            "sessionId": GEMINI_SID,
            "projectHash": hashlib.sha256(PROJECT.encode()).hexdigest(),
            "startTime": ts,
            "lastUpdated": ts,
            "kind": "main",
        },
        {"id": "u1", "timestamp": ts, "type": "user", "content": [{"text": "hello"}]},
        {
            "id": "g1",
            "timestamp": ts,
            "type": "gemini",
            "content": "counted oddly",
            "model": "gemini-3-flash-preview",
            "tokens": {
                "input": HOSTILE,
                "output": 2,
                "cached": HOSTILE,
                "thoughts": 1,
                "tool": 0,
                "total": HOSTILE,
            },
        },
        {"id": "u2", "timestamp": ts, "type": "user", "content": ["@@nested@@"]},
        {
            "id": "g2",
            "timestamp": ts,
            "type": "gemini",
            "content": "world",
            "model": "gemini-3-flash-preview",
            "tokens": {"input": 100, "output": 5, "cached": 0, "total": 105},
        },
    ]
    path = root / "chats" / "session-2026-04-29T21-39-0000020e.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    path.write_text(path.read_text().replace('"@@nested@@"', "[" * 1000 + '{"text": "deep"}' + "]" * 1000))
    raw = write_hostile(path, str(-(2**80)))
    ingest(conn, tmp_path / "ghome" / ".gemini" / "tmp")
    assert_all_stored(conn, path, raw)
    assert shown(conn, GEMINI_SID) == ["hello", "counted oddly", "deep", "world"]
    tokens = conn.execute(
        "SELECT input_tokens, cache_read_tokens, output_tokens FROM agent_sessions WHERE id = ?",
        (GEMINI_SID,),
    ).fetchone()
    assert tokens == (100, 0, 2 + 1 + 5)


def test_cline_timestamps_and_tokens_beyond_64_bits(conn, tmp_path):
    folder = (
        tmp_path
        / ".config"
        / "Code"
        / "User"
        / "globalStorage"
        / "saoudrizwan.claude-dev"
        / "tasks"
        / "17708587"
    )
    folder.mkdir(parents=True)
    request = {
        "request": "<task>\nfix it\n</task>",
        "tokensIn": 2**80,
        "tokensOut": 3,
        "cacheWrites": -(2**80),
        "cacheReads": 0,
        "cost": 1e300,
    }
    ui = [
        {"ts": 1770858773985, "type": "say", "say": "task", "text": "fix it"},
        {"ts": 1770858773986, "type": "say", "say": "api_req_started", "text": json.dumps(request)},
        {"ts": 2**80, "type": "say", "say": "text", "text": "odd time"},
        {"ts": 1770858773988, "type": "say", "say": "text", "text": "world"},
    ]
    path = folder / "ui_messages.json"
    path.write_text(json.dumps(ui, separators=(",", ":")))
    ingest(conn, tmp_path / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev")
    assert conn.execute("SELECT DISTINCT status, error FROM source_files").fetchall() == [("ok", None)]
    fid = conn.execute("SELECT id FROM source_files").fetchone()[0]
    assert file_bytes(conn, fid) == (path.read_bytes(), True)
    assert verify(conn).ok
    contents = shown(conn, "17708587")
    assert "fix it" in contents and "odd time" in contents and "world" in contents
    assert conn.execute("SELECT timestamp FROM entries WHERE content = 'odd time'").fetchone() == (None,)
    assert conn.execute(
        "SELECT input_tokens, output_tokens FROM agent_sessions WHERE id = '17708587'"
    ).fetchone() == (0, 3)


def test_opencode_times_and_tokens_beyond_64_bits(conn, tmp_path):
    storage = tmp_path / "share" / "opencode" / "storage"
    sid, huge = "ses_4f2a1c9e8b7dFFFFa1b2c300e0", 2**80
    files = {
        storage / "session" / "a1b2c3" / f"{sid}.json": {
            "id": sid,
            "version": "1.0.150",
            "projectID": "a1b2c3",
            "directory": "/home/dev/shop",
            "title": "Fix it",
            "time": {"created": huge, "updated": huge},
        },
        storage / "message" / sid / "msg_01.json": {
            "id": "msg_01",
            "sessionID": sid,
            "role": "user",
            "time": {"created": 1760000001000},
        },
        storage / "message" / sid / "msg_02.json": {
            "id": "msg_02",
            "sessionID": sid,
            "role": "assistant",
            "parentID": "msg_01",
            "time": {"created": huge},
            "modelID": "claude-sonnet-4-5",
            "cost": 1e300,
            "tokens": {"input": huge, "output": 20, "reasoning": -huge, "cache": {"read": huge, "write": 50}},
        },
        storage / "part" / "msg_01" / "prt_01.json": {
            "id": "prt_01",
            "sessionID": sid,
            "messageID": "msg_01",
            "type": "text",
            "text": "hello",
        },
        storage / "part" / "msg_02" / "prt_02.json": {
            "id": "prt_02",
            "sessionID": sid,
            "messageID": "msg_02",
            "type": "text",
            "text": "world",
            "time": {"start": -huge},
        },
    }
    for path, value in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, indent=2))
    ingest(conn, storage)
    assert {r for r in conn.execute("SELECT status, error FROM source_files")} == {("ok", None)}
    for path in files:
        fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path),)).fetchone()[0]
        assert file_bytes(conn, fid) == (path.read_bytes(), True), path
    assert verify(conn).ok
    assert [c for c in shown(conn, sid) if c] == ["hello", "world"]
    assert conn.execute(
        "SELECT input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens "
        "FROM agent_sessions WHERE id = ?",
        (sid,),
    ).fetchone() == (0, 20, 50, 0)


def test_aider_token_figures_that_are_no_numbers_or_too_large(conn, tmp_path):
    path = tmp_path / "proj" / ".aider.chat.history.md"
    path.parent.mkdir()
    path.write_text(
        "\n# aider chat started at 2025-12-04 09:00:00\n\n> Aider v0.86.1  \n> Model: gpt-4o-mini with whole edit format  \n\n"
        "#### hello  \n\nFirst reply.\n\n> Tokens: 1.2.3k sent, 12 received.\n\n"
        f"#### again  \n\nSecond reply.\n\n> Tokens: {'9' * 400} sent, 99999999999999999999999 received.\n\n"
        "#### world  \n\nThird reply.\n\n> Tokens: 1,234 sent, 1,000 cache hit, 7 received.\n"
    )
    ingest(conn, tmp_path)
    assert conn.execute("SELECT DISTINCT status, error FROM source_files").fetchall() == [("ok", None)]
    fid = conn.execute("SELECT id FROM source_files").fetchone()[0]
    assert file_bytes(conn, fid) == (path.read_bytes(), True)
    assert verify(conn).ok
    sid = conn.execute("SELECT id FROM agent_sessions WHERE turn_count = 3").fetchone()[0]
    contents = [
        c
        for _, c in conn.execute(
            "SELECT role, content FROM entries WHERE session_id = ? AND seq IS NOT NULL "
            "AND role IN ('user', 'assistant') ORDER BY seq",
            (sid,),
        )
    ]
    assert contents == ["hello", "First reply.", "again", "Second reply.", "world", "Third reply."]
    assert conn.execute(
        "SELECT input_tokens, cache_read_tokens, output_tokens FROM agent_sessions WHERE id = ?", (sid,)
    ).fetchone() == (234, 1000, 12 + 7)
    notes = [r[0] for r in conn.execute("SELECT parse_error FROM entries WHERE parse_error IS NOT NULL")]
    assert len(notes) == 2 and "'1.2.3'" in notes[0] and all(KEPT_RAW in n for n in notes)


def test_amazon_q_request_time_beyond_64_bits(conn, tmp_path):
    conv, cwd = "4e83977c-0000-4000-8000-0000000020e0", "/home/dev/thing"

    def user(text: str, stamp: str) -> dict:
        return {
            "additional_context": "",
            "env_context": {
                "env_state": {
                    "operating_system": "linux",
                    "current_working_directory": cwd,
                    "environment_variables": [],
                }
            },
            "content": {"Prompt": {"prompt": text}},
            "images": None,
            "timestamp": stamp,
        }

    history = [
        {
            "user": user("hello", "2026-04-01T10:00:00Z"),
            "assistant": {"Response": {"message_id": "m1", "content": "hi"}},
            "request_metadata": {
                "request_id": "r1",
                "message_id": "m1",
                "request_start_timestamp_ms": 2**80,
                "model_id": "claude-sonnet-4.5",
                "message_meta_tags": [],
            },
        },
        {
            "user": user("again", "99999-01-01T00:00:00Z"),
            "assistant": {"Response": {"message_id": "m2", "content": "world"}},
            "request_metadata": {
                "request_id": "r2",
                "message_id": "m2",
                "request_start_timestamp_ms": 1775037600000,
                "model_id": "claude-sonnet-4.5",
                "message_meta_tags": [],
            },
        },
    ]
    value = {
        "conversation_id": conv,
        "next_message": None,
        "history": history,
        "valid_history_range": [0, 2],
        "transcript": [],
        "tools": {},
        "context_manager": None,
        "context_message_length": None,
        "latest_summary": None,
        "model": "claude-sonnet-4.5",
    }
    path = tmp_path / "saves" / "convo.json"
    path.parent.mkdir()
    path.write_text(json.dumps(value, indent=2))
    ingest(conn, path)
    assert conn.execute("SELECT DISTINCT status, error FROM source_files").fetchall() == [("ok", None)]
    assert file_bytes(conn, 1) == (path.read_bytes(), True)
    assert verify(conn).ok
    assert [c for c in shown(conn, conv) if c] == ["hello", "hi", "again", "world"]
    assert conn.execute("SELECT created_at, ended_at FROM agent_sessions").fetchone() == (
        1775037600000,
        1775037600000,
    )
