"""Nothing skipped without a word: a Claude Code session is known by more than its first line (a
damaged one, lines ended by CR alone, a name that is not a UUID), and a file under a source that
looks like a log but that no agent's reader takes is listed, with why, by `ingest --json` and
`sources`, on every run."""

from __future__ import annotations

import json
from pathlib import Path

from threadloom.core.adapters import ADAPTERS
from threadloom.core.cli import main

from tests.builders.claude import Transcript


def claude_lines(folder: Path, name: str, sid: str) -> list[bytes]:
    t = Transcript(folder / name, sid)
    t.user("why does the parser drop lines")
    t.assistant("because the first line is cut")
    return [json.dumps(line).encode() for line in t.lines]


def test_odd_claude_sessions_are_read_and_what_no_reader_takes_is_said(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "home" / ".claude"))
    backup = tmp_path / "backup" / "sessions"
    backup.mkdir(parents=True)
    damaged = claude_lines(backup, "a.jsonl", "aaaaaaaa-0000-4000-8000-000000000001")
    (backup / "a.jsonl").write_bytes(b'{"type":"user","uuid":"x", "mess\n' + b"\n".join(damaged) + b"\n")
    cr_only = claude_lines(backup, "b.jsonl", "bbbbbbbb-0000-4000-8000-000000000002")
    (backup / "b.jsonl").write_bytes(b"\r".join(cr_only) + b"\r")
    named = claude_lines(backup, "my-session.jsonl", "cccccccc-0000-4000-8000-000000000003")
    (backup / "my-session.jsonl").write_bytes(b"\n".join(named) + b"\n")
    (backup / "notes.json").write_text('{"todo": ["buy milk"]}')
    (backup / "events.jsonl").write_text('{"event": "click", "x": 1}\n')
    database = str(tmp_path / "t.db")
    for run in range(2):
        assert main(["ingest", "--db", database, "--source", str(backup.parent), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        if run == 0:
            assert report["files_seen"] == 3 and report["errors"] == []
        assert {Path(f["path"]).name: f["why"] for f in report["unclaimed"]} == {
            "events.jsonl": "no agent's records found in its first lines",
            "notes.json": "not a session document of an agent threadloom reads",
        }
    # a session added in another folder: that folder is walked again, this one's record is kept
    other = backup.parent / "more"
    other.mkdir()
    more = claude_lines(other, "d.jsonl", "dddddddd-0000-4000-8000-000000000004")
    (other / "d.jsonl").write_bytes(b"\n".join(more) + b"\n")
    (other / "stray.json").write_text("[]")
    assert main(["ingest", "--db", database, "--source", str(backup.parent), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert sorted(Path(f["path"]).name for f in report["unclaimed"]) == [
        "events.jsonl",
        "notes.json",
        "stray.json",
    ]
    assert main(["sessions", "--db", database, "--json"]) == 0
    ids = {s["id"] for s in json.loads(capsys.readouterr().out)}
    assert {"aaaaaaaa-0000-4000-8000-000000000001", "cccccccc-0000-4000-8000-000000000003"} <= ids
    assert main(["sources", "--db", database]) == 0
    out = capsys.readouterr().out
    assert "not read: " in out and "notes.json: not a session document" in out


QWEN_SID = "9ac9a7c3-5e1d-4c2b-8a3f-2ce24fc677d6"
OLDER_SID = "5b2e8d14-7c3a-4f6e-9d1b-3a4c5e6f7a8b"  # a chat of Qwen Code's JSON era


def qwen_lines(cwd: str = "/home/dev/engram") -> list[dict]:
    """A Qwen Code transcript as 0.15 writes it (the shape of real anonymized files): Claude Code's
    envelope around Gemini's content, telemetry records, `tool_result` records."""
    base = {"sessionId": QWEN_SID, "cwd": cwd, "version": "0.15.0", "gitBranch": "main"}
    return [
        {
            **base,
            "uuid": "0b7d3ecc-0000-4000-8000-dbc39a20e637",
            "parentUuid": None,
            "timestamp": "2026-04-23T00:39:48.359Z",
            "type": "user",
            "message": {"role": "user", "parts": [{"text": "read the config"}]},
        },
        {
            **base,
            "uuid": "ec79c67f-0000-4000-8000-000000000002",
            "parentUuid": "0b7d3ecc-0000-4000-8000-dbc39a20e637",
            "timestamp": "2026-04-23T00:39:51.104Z",
            "type": "system",
            "subtype": "ui_telemetry",
            "systemPayload": {
                "uiEvent": {"event.name": "qwen-code.api_response", "input_token_count": 16928}
            },
        },
        {
            **base,
            "uuid": "7171547f-0000-4000-8000-000000000003",
            "parentUuid": "ec79c67f-0000-4000-8000-000000000002",
            "timestamp": "2026-04-23T00:39:51.130Z",
            "type": "assistant",
            "model": "qwen3.5-plus",
            "usageMetadata": {
                "promptTokenCount": 16928,
                "candidatesTokenCount": 40,
                "totalTokenCount": 16968,
            },
            "message": {
                "role": "model",
                "parts": [
                    {"text": "reading it", "thought": True},
                    {"functionCall": {"id": "call_1", "name": "read_file", "args": {"file_path": "a.toml"}}},
                ],
            },
        },
        {
            **base,
            "uuid": "5a5a5a5a-0000-4000-8000-000000000004",
            "parentUuid": "7171547f-0000-4000-8000-000000000003",
            "timestamp": "2026-04-23T00:39:52.000Z",
            "type": "tool_result",
            "toolCallResult": {"callId": "call_1", "status": "success", "resultDisplay": "x = 1"},
            "message": {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "call_1",
                            "name": "read_file",
                            "response": {"output": "x = 1"},
                        }
                    }
                ],
            },
        },
    ]


def test_qwen_code_transcripts_are_never_claude_code_s(tmp_path, capsys, monkeypatch):
    """Qwen Code's transcripts look like Claude Code's (its envelope, Gemini's content): they are not
    read as Claude Code sessions (that gave empty sessions, and `resume --restore` would have written
    them into Claude Code's projects); Qwen Code's reader takes them, in the agent's folder and in a
    copy elsewhere, and its older JSON chats (Gemini CLI's shape) too, never as Gemini CLI's."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(home))
    qwen = home / ".qwen"
    live = qwen / "projects" / "-home-dev-engram" / "chats" / f"{QWEN_SID}.jsonl"
    copy = tmp_path / "backup" / "qwen-chats" / f"{QWEN_SID}.jsonl"
    # an image pasted into the first prompt: a first line longer than any sniff
    long_first = [
        dict(qwen_lines()[0], message={"role": "user", "parts": [{"inlineData": {"data": "A" * 70000}}]})
    ]
    cut = tmp_path / "backup" / "qwen-chats" / "long-first-line.jsonl"
    for path, lines in ((live, qwen_lines()), (copy, qwen_lines()), (cut, long_first + qwen_lines()[1:])):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    older = qwen / "tmp" / ("ab" * 32) / "chats" / "session-2025-10-01T10-00-9ac9a7c3.json"
    older.parent.mkdir(parents=True)
    older.write_text(
        json.dumps(
            {
                "sessionId": OLDER_SID,
                "projectHash": "ab" * 32,
                "startTime": "2025-10-01T10:00:00Z",
                "lastUpdated": "2025-10-01T10:01:00Z",
                "messages": [
                    {"id": "m1", "timestamp": "2025-10-01T10:00:01Z", "type": "user", "content": "hi"},
                    {"id": "m2", "timestamp": "2025-10-01T10:00:02Z", "type": "qwen", "content": "hello"},
                ],
            },
            indent=2,
        )
    )
    database = str(tmp_path / "t.db")
    assert (
        main(["ingest", "--db", database, "--source", str(qwen), "--source", str(copy.parent), "--json"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["files_seen"] == 4
    assert report["unclaimed"] == []
    assert main(["sessions", "--db", database, "--json"]) == 0
    listed = {s["id"]: s["agent"] for s in json.loads(capsys.readouterr().out)}
    assert listed == {QWEN_SID: "qwen-code", OLDER_SID: "qwen-code"}
    assert main(["resume", QWEN_SID, "--restore", "--db", database]) == 0
    assert f"qwen --resume {QWEN_SID}" in capsys.readouterr().out
    assert not (home / ".claude").exists() and not (home / ".gemini").exists()


def test_a_qwen_transcript_an_earlier_version_read_as_claude_s_is_not_restored(tmp_path, capsys, monkeypatch):
    """An archive made before Qwen Code's transcripts were told apart holds one as a Claude Code
    session: `resume --restore` refuses to write it into Claude Code's projects, and says how the
    archive is read again without it."""
    from threadloom.core.adapters import claude

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    (tmp_path / "proj").mkdir()
    copy = tmp_path / "backup" / f"{QWEN_SID}.jsonl"
    copy.parent.mkdir(parents=True)
    copy.write_text("".join(json.dumps(line) + "\n" for line in qwen_lines(str(tmp_path / "proj"))))
    database = str(tmp_path / "t.db")
    with monkeypatch.context() as m:  # as an earlier threadloom read it, with no reader of Qwen Code's
        m.setattr(claude, "looks_like_qwen", lambda head: False)
        m.delitem(ADAPTERS, "qwen-code")
        assert main(["ingest", "--db", database, "--source", str(copy.parent), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sessions_total"] == 1
    assert main(["resume", QWEN_SID, "--restore", "--db", database]) != 0
    err = capsys.readouterr().err
    assert "Qwen Code transcript" in err and "ingest --rebuild" in err
    assert not (home / ".claude" / "projects").exists()


def test_threadloom_s_own_folders_are_not_listed(tmp_path, capsys, monkeypatch):
    """A home folder given whole holds threadloom's own cache (its price periods, prices.json): it
    was listed as a log no agent's reader takes."""
    home = tmp_path / "home"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    (home / ".cache" / "threadloom").mkdir(parents=True)
    (home / ".cache" / "threadloom" / "prices.json").write_text('{"format": "threadloom-price-periods"}')
    (home / "stray.json").write_text("[]")  # and a file that is no agent's still is
    assert main(["ingest", "--db", str(tmp_path / "t.db"), "--only", "--source", str(home), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [Path(f["path"]).name for f in report["unclaimed"]] == ["stray.json"]
