"""Memory people write from the command line (seed 004): tags, notes and bookmarks on sessions, turns
and messages; knowledge entries with versions, scopes inherited down, conflicts; JSON export and
import; all of it kept by `ingest --rebuild`, and found by `tag:` and `note:` in search."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from threadloom.core.insight import memory
from threadloom.core.store import db

from tests.builders.claude import Transcript, tool_use
from tests.support import copy_database, isolated, run

API = "a1000000-0000-4000-8000-0000000000a1"
WEB = "b1000000-0000-4000-8000-0000000000b1"


def write_archive(root: Path) -> Path:
    projects = root / "projects"
    one = Transcript(projects / "-srv-api" / f"{API}.jsonl", API, cwd="/srv/api")
    one.user("Make the dates timezone aware")
    one.assistant(
        "Editing",
        tools=[tool_use("e1", "Edit", file_path="/srv/api/dates.py", old_string="a", new_string="b")],
    )
    one.tool_result("e1", "ok")
    one.assistant("Dates are UTC now.")
    one.write()
    web = Transcript(projects / "-srv-web" / f"{WEB}.jsonl", WEB, cwd="/srv/web")
    web.user("Try the new bundler")
    web.assistant("Tried.")
    web.write()
    return projects


def ingested(root: Path, **env_extra: str) -> str:
    """`write_archive` under `root`, ingested by a `threadloom ingest` process into root/t.db."""
    projects = write_archive(root)
    path = str(root / "t.db")
    res = run("ingest", "--db", path, "--only", "--source", str(projects), "-q", env_extra=env_extra)
    assert res.returncode == 0, res.stderr
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The archive ingested once a module (and worker), as each test's would be (conftest.py
    `_isolated_home`): each test writes its memory to a copy of it (`dbfile`)."""
    root = tmp_path_factory.mktemp("memory-archive")
    return Path(ingested(root, **isolated(root)))


@pytest.fixture
def dbfile(tmp_path: Path, built: Path) -> str:
    """A copy of the module's archive, this test's own."""
    return str(copy_database(built, tmp_path / "t.db"))


@pytest.fixture
def own_dbfile(tmp_path: Path) -> str:
    """The archive ingested from this test's own folder (tmp_path/projects), for a test that
    ingests that folder again: the copy's database names the module's folder."""
    return ingested(tmp_path)


def ok(*args: str) -> str:
    res = run(*args, env_extra={"THREADLOOM_AUTHOR": "person:ada"})
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_tags_notes_bookmarks_and_search_filters(dbfile: str) -> None:
    said = json.loads(ok("tag", "--db", dbfile, API[:8], "Flaky Test", "dates", "--json"))
    assert said == {"target": API, "tags": ["dates", "flaky-test"], "changed": 2}
    again = json.loads(ok("tag", "--db", dbfile, API[:8], "dates", "--json"))
    assert again["changed"] == 0  # idempotent
    assert json.loads(ok("tag", "--db", dbfile, f"{WEB[:8]}#1", "bundler", "--json"))["target"] == f"{WEB}#1"
    assert json.loads(ok("tag", "--db", dbfile, "--json")) == [
        {"tag": "bundler", "count": 1},
        {"tag": "dates", "count": 1},
        {"tag": "flaky-test", "count": 1},
    ]
    ok("note", "--db", dbfile, API[:8], "We chose UTC everywhere", "--turn", "1")
    notes = json.loads(ok("note", "--db", dbfile, "--json"))
    assert [(n["target_type"], n["target_id"], n["value"], n["author"]) for n in notes] == [
        ("turn", f"{API}#0", "We chose UTC everywhere", "person:ada")  # the turn of #1 starts at #0
    ]
    assert notes[0]["show"] == f"threadloom show '{API}#0'" and notes[0]["at"] == "#0"
    ok("bookmark", "--db", dbfile, API[:8], "--message", "3", "--label", "the answer")
    marks = json.loads(ok("bookmark", "--db", dbfile, "--json"))
    assert [(m["target_id"], m["value"]) for m in marks] == [(f"{API}#3", "the answer")]

    # tag: and note: narrow a search to the sessions marked so
    hits = json.loads(ok("search", "--db", dbfile, "tag:flaky-test", "--json"))
    assert {h["session_id"] for h in hits} == {API}
    hits = json.loads(ok("search", "--db", dbfile, "tag:bundler", "bundler", "--json"))
    assert {h["session_id"] for h in hits} == {WEB}
    assert json.loads(ok("search", "--db", dbfile, "tag:bundler", "dates", "--json")) == []
    hits = json.loads(ok("search", "--db", dbfile, "note:utc", "--json"))
    assert {h["session_id"] for h in hits} == {API}
    assert json.loads(ok("search", "--db", dbfile, "note:nothing-like-it", "--json")) == []

    ok("tag", "--db", dbfile, API[:8], "dates", "--remove")
    assert json.loads(ok("tag", "--db", dbfile, API[:8], "--json"))["tags"] == ["flaky-test"]
    res = run("tag", "--db", dbfile, f"{API[:8]}#99", "x")
    assert res.returncode == 1 and "has no message #99" in res.stderr


def test_entries_versions_scopes_conflicts(dbfile: str) -> None:
    glob = json.loads(
        ok(
            "memory",
            "add",
            "--db",
            dbfile,
            "--kind",
            "guideline",
            "--title",
            "Dates",
            "Use ISO 8601",
            "--json",
        )
    )
    proj = json.loads(
        ok("memory", "add", "--db", dbfile, "--kind", "decision", "--project", "/srv/api", "--title", "Dates",
           "Store UTC", "--reason", "bug 12", "--json")
    )  # fmt: skip
    other = json.loads(
        ok("memory", "add", "--db", dbfile, "--kind", "fact", "--title", "CI", "CI runs on 2 cores", "--json")
    )
    assert glob["scope"] == "global" and proj["scope_key"] == "/srv/api" and proj["id"].startswith("k-")
    # read for a session of /srv/api: the project's "Dates" hides the global one; the rest inherited
    recalled = json.loads(ok("memory", "list", "--db", dbfile, "--recall", "--session", API[:8], "--json"))
    assert [(e["title"], e["scope"]) for e in recalled] == [("Dates", "project"), ("CI", "global")]
    recalled = json.loads(ok("memory", "list", "--db", dbfile, "--recall", "--session", WEB[:8], "--json"))
    assert [(e["title"], e["scope"]) for e in recalled] == [("CI", "global"), ("Dates", "global")]
    # a subfolder's project inherits its parent folder's entries
    sub = json.loads(
        ok("memory", "list", "--db", dbfile, "--recall", "--project", "/srv/api/billing", "--json")
    )
    assert sub[0]["id"] == proj["id"]

    edited = json.loads(
        ok(
            "memory",
            "edit",
            "--db",
            dbfile,
            proj["id"][:6],
            "Store UTC, ISO 8601",
            "--reason",
            "agreed",
            "--json",
        )
    )
    assert (
        edited["version"] == 2
        and edited["content"] == "Store UTC, ISO 8601"
        and edited["open_conflicts"] == 0
    )
    history = json.loads(ok("memory", "history", "--db", dbfile, proj["id"], "--json"))["history"]
    assert [(v["version"], v["content"], v["reason"]) for v in history] == [
        (1, "Store UTC", "bug 12"),
        (2, "Store UTC, ISO 8601", "agreed"),
    ]
    # another writer within seconds: both versions kept, the later flagged, listed until resolved
    res = run(
        "memory",
        "edit",
        "--db",
        dbfile,
        proj["id"],
        "Store local time",
        env_extra={"THREADLOOM_AUTHOR": "agent:x"},
    )
    assert res.returncode == 0 and "another writer changed it" in res.stdout
    open_ = json.loads(ok("memory", "list", "--db", dbfile, "--conflicts", "--json"))
    assert [(c["entry_id"], c["version_a"], c["version_b"], c["author_b"]) for c in open_] == [
        (proj["id"], 2, 3, "agent:x")
    ]
    # a writer editing from a version that is no longer the latest: a conflict too
    stale = json.loads(
        ok("memory", "edit", "--db", dbfile, other["id"], "CI has 4 cores", "--base", "0", "--json")
    )
    assert stale["open_conflicts"] == 1
    listed = ok("memory", "list", "--db", dbfile)
    assert "⚠ 1 open conflict" in listed and "(s)" not in listed
    assert ok("memory", "resolve", "--db", dbfile, proj["id"]).strip().endswith(": 1 conflict resolved")
    assert [
        c["entry_id"] for c in json.loads(ok("memory", "list", "--db", dbfile, "--conflicts", "--json"))
    ] == [other["id"]]
    shown = ok("memory", "show", "--db", dbfile, proj["id"])
    assert "Store local time" in shown and "project /srv/api" in shown
    # relations between entries and sessions
    ok("memory", "relate", "--db", dbfile, proj["id"], "related_to", API[:8])
    related = json.loads(ok("memory", "show", "--db", dbfile, proj["id"], "--json"))["relations"]
    assert [(r["relation"], r["target_id"], r["show"]) for r in related] == [
        ("related_to", API, f"threadloom show {API}")
    ]
    res = run("memory", "edit", "--db", dbfile, "k-nope", "x")
    assert res.returncode == 1 and "no memory entry 'k-nope'" in res.stderr


def test_memory_survives_a_rebuild_and_travels_as_json(own_dbfile: str, tmp_path: Path) -> None:
    dbfile = own_dbfile
    ok("tag", "--db", dbfile, API[:8], "keep")
    ok("note", "--db", dbfile, f"{API[:8]}#3", "the answer")
    entry = json.loads(
        ok("memory", "add", "--db", dbfile, "--kind", "fact", "--title", "Port", "8080", "--json")
    )
    ok("memory", "edit", "--db", dbfile, entry["id"], "8081", "--reason", "moved")
    before = json.loads(ok("memory", "export", "--db", dbfile))

    rebuilt = run(
        "ingest", "--db", dbfile, "--rebuild", "-q", "--only", "--source", str(tmp_path / "projects")
    )
    assert rebuilt.returncode == 0, rebuilt.stderr
    after = json.loads(ok("memory", "export", "--db", dbfile))
    for table in ("marks", "entries", "versions", "relations", "conflicts"):
        assert after[table] == before[table], table
    assert json.loads(ok("tag", "--db", dbfile, API[:8], "--json"))["tags"] == ["keep"]
    assert json.loads(
        ok("search", "--db", dbfile, "tag:keep", "--json")
    )  # the marks still find their session

    # into another archive: merged, twice without doubling
    exported = tmp_path / "memory.json"
    ok("memory", "export", "--db", dbfile, "-o", str(exported))
    other = str(tmp_path / "other.db")
    res = run("ingest", "--db", other, "--only", "--source", str(tmp_path / "projects"), "-q")
    assert res.returncode == 0
    added = json.loads(ok("memory", "import", "--db", other, str(exported), "--json"))
    assert added == {"marks": 2, "entries": 1, "versions": 2, "relations": 0, "conflicts": 0}
    assert json.loads(ok("memory", "import", "--db", other, str(exported), "--json"))["versions"] == 0
    history = json.loads(ok("memory", "history", "--db", other, entry["id"], "--json"))["history"]
    assert [v["content"] for v in history] == ["8080", "8081"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    res = run("memory", "import", "--db", other, str(bad))
    assert res.returncode == 1 and "not a threadloom memory export" in res.stderr


def test_reading_an_archive_from_before_memory(tmp_path: Path) -> None:
    """A database without the memory tables (read-only, so they cannot be added) reads as empty."""
    path = tmp_path / "old.db"
    conn = db.connect(path)
    for table in memory.TABLES:
        conn.execute(f"DROP TABLE {table}")
    conn.close()
    ro = db.connect(path, readonly=True)
    assert memory.marks(ro) == [] and memory.list_entries(ro) == [] and memory.conflicts(ro) == []
    assert memory.recall(ro, project="/srv") == []
    ro.close()
    # the next write adds them
    with memory.writing(path) as w:
        entry, new = memory.add_entry(
            w, kind="fact", scope="global", scope_key=None, title="t", content="c", author="person:ada"
        )
    assert new and memory.resolve_entry(sqlite3.connect(path), entry.id).title == "t"


def test_a_conflict_needs_two_writers_within_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1_000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    with memory.writing(tmp_path / "m.db") as w:
        entry, _ = memory.add_entry(
            w, kind="decision", scope="global", scope_key=None, title="t", content="a", author="person:ada"
        )
        clock[0] += 2
        assert (
            memory.edit_entry(w, entry.id, content="b", author="person:ada").open_conflicts == 0
        )  # same writer
        clock[0] += memory.CONFLICT_SECONDS + 1
        assert (
            memory.edit_entry(w, entry.id, content="c", author="agent:s1").open_conflicts == 0
        )  # long after
        clock[0] += 1
        flagged = memory.edit_entry(w, entry.id, content="d", author="person:ada")
    assert flagged.open_conflicts == 1 and flagged.current is not None and flagged.current.conflict


def test_a_tagged_message_is_what_its_tag_finds(dbfile: str) -> None:
    """`tag:NAME` alone lists what was tagged: a message tagged is the hit (before: every record of
    its session, newest first, the message among them or not), ahead of a tagged session's records."""
    ok("tag", "--db", dbfile, f"{WEB[:8]}#1", "done")
    ok("tag", "--db", dbfile, API[:8], "done")
    hits = json.loads(ok("search", "--db", dbfile, "tag:done", "--json"))
    assert (hits[0]["session_id"], hits[0]["seq"], hits[0]["snippet"]) == (WEB, 1, "Tried.")
    assert [h["seq"] for h in hits if h["session_id"] == WEB] == [1]  # not the rest of its session
    assert {h["session_id"] for h in hits[1:]} == {API}  # the tagged session's records after it
    said = run("search", "--db", dbfile, "tag:done")
    assert "what is tagged done" in said.stderr + said.stdout and "Tried." in said.stdout


def test_options_may_come_among_the_words(dbfile: str) -> None:
    """`tag ID --turn 1 some words`: argparse took the words after an option as unrecognized."""
    said = json.loads(ok("tag", "--db", dbfile, API[:8], "--turn", "1", "flaky", "dates", "--json"))
    assert said == {"target": f"{API}#0", "tags": ["dates", "flaky"], "changed": 2}
    ok("note", "--db", dbfile, API[:8], "We chose", "--message", "3", "UTC", "everywhere")
    assert [n["value"] for n in json.loads(ok("note", "--db", dbfile, "--json"))] == [
        "We chose UTC everywhere"
    ]
    usage = ok("tag", "--help")
    assert "[target] [TAG ...]" in usage and "--turn N" in usage
    res = run("tag", "--db", dbfile, API[:8], "--turn", "1", "x", "--bogus")
    assert res.returncode == 2 and "threadloom tag: error: unrecognized arguments: --bogus" in res.stderr


def test_add_takes_a_projects_name_and_refuses_a_relative_path(dbfile: str) -> None:
    """`--project api` was kept as the scope 'api', which recall (by path) never read."""
    added = json.loads(
        ok(
            "memory",
            "add",
            "--db",
            dbfile,
            "--kind",
            "fact",
            "--project",
            "api",
            "--title",
            "T",
            "c",
            "--json",
        )
    )
    assert added["scope_key"] == "/srv/api"
    res = run("memory", "add", "--db", dbfile, "--kind", "fact", "--project", ".", "--title", "T", "c")
    assert res.returncode != 0 and "is a relative path" in res.stderr
