"""Hiding sessions and projects one is done with: gone from the lists (`sessions`, the TUI's), kept
in the archive, remembered in the database and kept by `ingest --rebuild`."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.builders.claude import Transcript, tool_use
from tests.support import run

API_1 = "a1000000-0000-4000-8000-0000000000a1"
API_2 = "a2000000-0000-4000-8000-0000000000a2"
WEB = "b1000000-0000-4000-8000-0000000000b1"


@pytest.fixture
def dbfile(tmp_path: Path) -> str:
    root = tmp_path / "projects"
    one = Transcript(root / "-srv-api" / f"{API_1}.jsonl", API_1, cwd="/srv/api")
    one.user("Old spike on caching")
    one.assistant(
        "Asking a helper.", tools=[tool_use("tk", "Task", description="measure the cache", prompt="go")]
    )
    one.tool_result("tk", "done", tool_use_result={"agentId": "c1"})
    one.write()
    sub = Transcript(root / "-srv-api" / API_1 / "subagents" / "agent-c1.jsonl", API_1, cwd="/srv/api",
                     isSidechain=True, agentId="c1")  # fmt: skip
    sub.user("go", parent=False)
    sub.assistant("measured")
    sub.write()
    two = Transcript(root / "-srv-api" / f"{API_2}.jsonl", API_2, cwd="/srv/api")
    two.user("Ship the rate limiter")
    two.assistant("Shipped.")
    two.write()
    web = Transcript(root / "-srv-web" / f"{WEB}.jsonl", WEB, cwd="/srv/web")
    web.user("Try the new bundler")
    web.assistant("Tried.")
    web.write()
    path = str(tmp_path / "t.db")
    res = run("ingest", "--db", path, "--only", "--source", str(root), "-q")
    assert res.returncode == 0, res.stderr
    return path


def listed(db: str, *extra: str) -> list[str]:
    res = run("sessions", "--db", db, "--json", *extra)
    assert res.returncode == 0, res.stderr
    return [s["id"] for s in json.loads(res.stdout)]


def test_hide_a_session_and_a_project_then_bring_them_back(dbfile: str, tmp_path: Path) -> None:
    everything = set(listed(dbfile))
    assert len(everything) == 4  # three sessions and a subagent
    res = run("hide", "--db", dbfile, API_1[:8])
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"hidden: session {API_1[:13]}  Old spike on caching")
    # out of the list, its subagent with it; in the archive still
    assert set(listed(dbfile)) == {API_2, WEB}
    assert run("show", "--db", dbfile, API_1[:8]).returncode == 0
    assert run("search", "--db", dbfile, "caching").stdout.count("Old spike") >= 1
    table = run("sessions", "--db", dbfile, "--hidden").stdout
    assert "⊘ Old spike on caching" in table and "↳ ⊘ measure the cache" in table
    marked = {
        s["id"]: s["hidden"] for s in json.loads(run("sessions", "--db", dbfile, "--json", "--hidden").stdout)
    }
    assert marked[API_1] is True and marked[API_2] is False and len(marked) == 4

    assert run("hide", "--db", dbfile, "--project", "web").returncode == 0
    assert listed(dbfile) == [API_2]
    said = run("hide", "--db", dbfile).stdout.splitlines()
    assert said == [f"session  {API_1[:13]}  Old spike on caching", "project  /srv/web"]
    assert json.loads(run("hide", "--db", dbfile, "--json").stdout) == [
        {"kind": "session", "key": API_1, "title": "Old spike on caching"},
        {"kind": "project", "key": "/srv/web", "title": "/srv/web"},
    ]

    # a rebuild starts a new database from the agents' files: what was hidden stays hidden
    rebuilt = run(
        "ingest", "--db", dbfile, "--rebuild", "-q", "--only", "--source", str(tmp_path / "projects")
    )
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert listed(dbfile) == [API_2]

    assert run("unhide", "--db", dbfile, API_1[:8]).returncode == 0
    assert set(listed(dbfile)) == {API_1, f"{API_1}:agent-c1", API_2}
    assert run("unhide", "--db", dbfile, "--all").returncode == 0
    assert set(listed(dbfile)) == everything
    assert "nothing is hidden" in run("hide", "--db", dbfile).stderr


def test_hide_refuses_what_it_cannot_name_or_write(dbfile: str) -> None:
    res = run("hide", "--db", dbfile, "--project", "srv")
    assert res.returncode == 1 and "names several projects" in res.stderr
    res = run("hide", "--db", dbfile, "no-such-session")
    assert res.returncode == 1 and "no session matches" in res.stderr
    os.chmod(dbfile, stat.S_IRUSR)
    try:
        res = run("hide", "--db", dbfile, API_2[:8])
        assert res.returncode == 1 and "read-only" in res.stderr
    finally:
        os.chmod(dbfile, stat.S_IRUSR | stat.S_IWUSR)
    assert set(listed(dbfile)) >= {API_2}
