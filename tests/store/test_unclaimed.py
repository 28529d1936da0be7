"""Nothing skipped without a word: a Claude Code session is known by more than its first line (a
damaged one, lines ended by CR alone, a name that is not a UUID), and a file under a source that
looks like a log but that no agent's reader takes is listed, with why, by `ingest --json` and
`sources`, on every run."""

from __future__ import annotations

import json
from pathlib import Path

from threadloom.core.cli import main

from tests.conftest import Transcript


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
