"""`threadloom stats`: every grouping, the filters, local days and the --json rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders.claude import Transcript, tool_use
from tests.support import full_session, run

API = "5a7a0000-1111-4222-8333-0000000000a1"
WEB = "5b7b0000-1111-4222-8333-0000000000b2"
SONNET = "claude-sonnet-4-5-20250929"
USAGE = {
    "input_tokens": 10,
    "output_tokens": 200,
    "cache_creation_input_tokens": 1000,
    "cache_read_input_tokens": 5000,
}
KEYS = {
    "period",
    "sessions",
    "messages",
    "api_messages",
    "input_tokens",
    "output_tokens",
    "cache_creation_tokens",
    "cache_read_tokens",
    "cost_usd",
    "unpriced_messages",
    "tool_calls",
    "failed_tool_calls",
    "lines_added",
    "lines_removed",
    "label",
    "key",
}


def at(t: Transcript, when: str) -> None:
    """Every record of the transcript written so far at `when` (ISO, UTC), a second apart."""
    for n, line in enumerate(t.lines):
        line["timestamp"] = f"{when}:{n:02d}.000Z"


@pytest.fixture(scope="module")
def archive_db(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("stats")
    api = Transcript(root / "claude" / "-srv-api" / f"{API}.jsonl", API, cwd="/srv/api")
    api.user("add the endpoint")
    api.assistant(
        "adding",
        model=SONNET,
        usage=USAGE,
        tools=[tool_use("e1", "Edit", file_path="/srv/api/app.py", old_string="a", new_string="b\nc")],
    )
    api.tool_result("e1", "ok")
    api.assistant(tools=[tool_use("b1", "Bash", command="false")], model=SONNET, usage=USAGE)
    api.tool_result("b1", "exit 1", is_error=True)
    at(api, "2026-03-01T23:30")  # Sunday 1 March in UTC, Monday 2 March in India (+05:30)
    api.write()
    web = Transcript(root / "claude" / "-srv-web" / f"{WEB}.jsonl", WEB, cwd="/srv/web")
    web.user("hello")
    web.assistant("hi", model="my-local-llama", usage=USAGE)  # no price known
    at(web, "2026-03-03T10:00")
    web.write()
    full_session(root / "codex").write()  # Codex, /home/dev/shop, 2 March 10:00 UTC, an apply_patch
    dbfile = root / "stats.db"
    for source in ("claude", "codex"):
        res = run("ingest", "--db", str(dbfile), "--only", "--source", str(root / source), "-q")
        assert res.returncode == 0, res.stderr
    return dbfile


def stats(dbfile: Path, *args: str, tz: str = "UTC") -> list[dict]:
    res = run("stats", "--db", str(dbfile), *args, "--json", env_extra={"TZ": tz})
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_by_day_prints_local_dates(archive_db):
    utc = stats(archive_db)
    assert [r["period"] for r in utc] == ["2026-03-01", "2026-03-02", "2026-03-03"]
    assert all(set(r) == KEYS for r in utc)
    india = stats(archive_db, tz="Asia/Kolkata")
    assert [r["period"] for r in india] == ["2026-03-02", "2026-03-03"]
    assert india[0]["sessions"] == 2  # the api session moved onto the Codex session's day
    for key in ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens", "messages"):
        assert sum(r[key] for r in utc) == sum(r[key] for r in india)


def test_each_row_sums_its_sessions(archive_db):
    day = {r["period"]: r for r in stats(archive_db)}
    api = day["2026-03-01"]
    assert (api["sessions"], api["api_messages"], api["input_tokens"], api["output_tokens"]) == (
        1,
        2,
        20,
        400,
    )
    assert (api["cache_creation_tokens"], api["cache_read_tokens"]) == (2000, 10000)
    assert (api["tool_calls"], api["failed_tool_calls"], api["lines_added"], api["lines_removed"]) == (
        2,
        1,
        2,
        1,
    )
    assert api["cost_usd"] > 0 and api["unpriced_messages"] == 0
    web = day["2026-03-03"]
    assert (web["cost_usd"], web["unpriced_messages"], web["output_tokens"]) == (None, 1, 200)
    sessions = json.loads(run("sessions", "--db", str(archive_db), "--json").stdout)
    assert sum(r["input_tokens"] for r in day.values()) == sum(s["input_tokens"] for s in sessions)


def test_week_month_project_model_agent_session(archive_db):
    assert [(r["period"], r["sessions"]) for r in stats(archive_db, "--by", "week")] == [
        ("2026-02-23", 1),  # Sunday 1 March is in the week that began on Monday 23 February
        ("2026-03-02", 2),
    ]
    assert [r["period"] for r in stats(archive_db, "--by", "week", tz="Asia/Kolkata")] == ["2026-03-02"]
    assert [(r["period"], r["sessions"]) for r in stats(archive_db, "--by", "month")] == [("2026-03", 3)]
    projects = {r["period"]: r for r in stats(archive_db, "--by", "project")}
    assert set(projects) == {"/srv/api", "/srv/web", "/home/dev/shop"}
    assert projects["/srv/api"]["label"] == "api" and projects["/srv/web"]["cost_usd"] is None
    assert projects["/home/dev/shop"]["lines_added"] == 1  # its apply_patch
    models = {r["period"] for r in stats(archive_db, "--by", "model")}
    assert {SONNET, "my-local-llama", "gpt-5.2-codex"} <= models
    assert {r["period"]: r["sessions"] for r in stats(archive_db, "--by", "agent")} == {
        "claude-code": 2,
        "codex": 1,
    }
    by_session = {r["key"]: r for r in stats(archive_db, "--by", "session")}
    assert set(by_session) >= {API, WEB}
    assert by_session[API]["label"] == "add the endpoint"


def test_filters(archive_db):
    assert [r["period"] for r in stats(archive_db, "--since", "2026-03-02")] == ["2026-03-02", "2026-03-03"]
    assert [r["period"] for r in stats(archive_db, "--until", "2026-03-02")] == ["2026-03-01", "2026-03-02"]
    assert [r["period"] for r in stats(archive_db, "--since", "2026-03-02", "--until", "2026-03-02")] == [
        "2026-03-02"
    ]
    assert [r["period"] for r in stats(archive_db, "--by", "project", "--project", "web")] == ["/srv/web"]
    assert [r["period"] for r in stats(archive_db, "--by", "project", "--agent", "codex")] == [
        "/home/dev/shop"
    ]
    assert stats(archive_db, "--agent", "gemini") == []


def test_table_and_help(archive_db):
    res = run("stats", "--db", str(archive_db), "--by", "project", env_extra={"TZ": "UTC"})
    assert res.returncode == 0, res.stderr
    header, *rows = res.stdout.splitlines()
    assert header.split() == [
        "project",
        "sessions",
        "msgs",
        "input",
        "output",
        "cache",
        "w",
        "cache",
        "r",
        "cost",
        "tools",
        "failed",
        "+lines",
        "-lines",
    ]
    assert rows[-1].split()[:2] == ["total", "3"]
    assert any(line.split()[0] == "web" and " ? " in f"{line} " for line in rows)
    bad = run("stats", "--db", str(archive_db), "--since", "last tuesday")
    assert bad.returncode == 2 and "is not a day" in bad.stderr
    helped = run("stats", "--help")
    assert (
        "--by {day,week,month,project,model,agent,session,machine}" in helped.stdout
        and "null" in helped.stdout
    )


def test_by_model_names_the_row_of_what_no_model_was_recorded_for(tmp_path: Path) -> None:
    """A session whose agent recorded no model (a prompt never answered, an agent that writes
    none) is a row of its own by model: it was printed with a blank name."""
    sid = "5c7c0000-1111-4222-8333-0000000000c3"
    t = Transcript(tmp_path / "claude" / "-srv-cli" / f"{sid}.jsonl", sid, cwd="/srv/cli")
    t.user("a prompt the session ended on")
    t.write()
    dbfile = tmp_path / "t.db"
    assert (
        run("ingest", "--db", str(dbfile), "--only", "--source", str(tmp_path / "claude"), "-q").returncode
        == 0
    )
    rows = stats(dbfile, "--by", "model")
    assert [(r["period"], r["label"], r["messages"]) for r in rows] == [("", "(no model recorded)", 1)]
    res = run("stats", "--db", str(dbfile), "--by", "model")
    assert res.returncode == 0 and res.stdout.splitlines()[1].startswith("(no model recorded)"), res.stdout
