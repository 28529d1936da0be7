"""`threadloom show` ends with the files the session changed; `show --json` carries them with the
calls that changed each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders.claude import Transcript, tool_use
from tests.support import orchestrating_session, run

SID = "5c7c0000-1111-4222-8333-0000000000c3"
QUIET = "6d7d0000-1111-4222-8333-0000000000d4"
ODD = "/srv/api/\x1b]0;pwned\x07.py"  # a path from a log that would retitle the terminal


@pytest.fixture(scope="module")
def dbfile(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("show-changes")
    t = Transcript(root / "claude" / "-srv-api" / f"{SID}.jsonl", SID, cwd="/srv/api")
    t.user("fix it")
    t.assistant(
        tools=[tool_use("e1", "Edit", file_path="/srv/api/app.py", old_string="a\nb", new_string="c")]
    )
    t.tool_result("e1", "ok")
    t.assistant(tools=[tool_use("w1", "Write", file_path=ODD, content="x\ny\nz\n")])
    t.tool_result("w1", "ok")
    t.assistant(
        tools=[tool_use("e2", "Edit", file_path="/srv/api/app.py", old_string="c", new_string="d\ne")]
    )
    t.tool_result("e2", "ok")
    t.assistant(tools=[tool_use("e3", "Edit", file_path="/srv/api/gone.py", old_string="q", new_string="r")])
    t.tool_result("e3", "no such file", is_error=True)  # failed: changed nothing
    t.write()
    quiet = Transcript(root / "claude" / "-srv-api" / f"{QUIET}.jsonl", QUIET, cwd="/srv/api")
    quiet.user("hello")
    quiet.assistant("hi")
    quiet.write()
    path = root / "show.db"
    res = run("ingest", "--db", str(path), "--only", "--source", str(root / "claude"), "-q")
    assert res.returncode == 0, res.stderr
    return path


def test_show_ends_with_the_files_changed(dbfile):
    res = run("show", "--db", str(dbfile), SID[:8])
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout
    tail = res.stdout.splitlines()[-4:]
    assert tail[0] == "Files changed"
    assert tail[1].split() == ["/srv/api/app.py", "+3", "−3"]  # two Edits: 1+2 added, 2+1 removed
    assert tail[2].split() == ["/srv/api/␛]0;pwned␇.py", "+3", "−0"]
    assert tail[3].split() == ["2", "files", "·", "+6", "−3"]
    quiet = run("show", "--db", str(dbfile), QUIET[:8])
    assert quiet.returncode == 0 and "Files changed" not in quiet.stdout


def test_show_json_carries_each_file_and_its_calls(dbfile):
    res = run("show", "--db", str(dbfile), SID[:8], "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    files = data["files_changed"]
    assert [(f["path"], f["added"], f["removed"]) for f in files] == [
        ("/srv/api/app.py", 3, 3),
        (ODD, 3, 0),
    ]
    app_calls = files[0]["calls"]
    assert [(c["id"], c["tool"], c["added"], c["removed"]) for c in app_calls] == [
        ("e1", "Edit", 1, 2),
        ("e2", "Edit", 2, 1),
    ]
    by_id = {m["entry_id"]: m for m in data["messages"]}
    for call in app_calls:  # each call points at the message that made it
        assert call["id"] in {t["id"] for t in by_id[call["entry_id"]]["tool_calls"]}
    assert json.loads(run("show", "--db", str(dbfile), QUIET[:8], "--json").stdout)["files_changed"] == []


def test_show_counts_the_subagents_edits_with_the_sessions_own(tmp_path):
    """An orchestrating session's list named its own one edit; what its subagents wrote was left
    out (listed only under each subagent's own id)."""
    sid = "7e7e0000-1111-4222-8333-0000000000e5"
    sub = orchestrating_session(tmp_path / "claude" / "-srv-app", sid)
    sub.write()
    db = tmp_path / "t.db"
    assert (
        run("ingest", "--db", str(db), "--only", "--source", str(tmp_path / "claude"), "-q").returncode == 0
    )
    out = run("show", "--db", str(db), sid[:8]).stdout.splitlines()
    assert out[-4:] == [
        "Files changed",
        "  /srv/app/importer.py  +4 −0",
        "  /srv/app/README.md    +1 −1",
        "  2 files · +5 −1 (+4 −0 by 1 subagent)",
    ], out[-4:]
    own = run("show", "--db", str(db), sid[:8], "--no-subagents").stdout.splitlines()
    assert own[-2:] == ["  /srv/app/README.md  +1 −1", "  1 file · +1 −1"]
    data = json.loads(run("show", "--db", str(db), sid[:8], "--json").stdout)
    calls = {c["id"]: c["session_id"] for f in data["files_changed"] for c in f["calls"]}
    assert calls == {"w1": f"{sid}:agent-imp1", "e0": sid}
