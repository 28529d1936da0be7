"""Search relevance and filters on fixtures written here, index upkeep, and the corpus."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest
from threadloom.core.read.search import find_sessions, parse_query, parse_time, search
from threadloom.core.store import db

from tests.builders.claude import Transcript, tool_use
from tests.support import CORPUS, ingest

NOW = time.mktime((2026, 3, 10, 12, 0, 0, 0, 0, -1))
S_AUTH = "a0000000-0000-4000-8000-00000000a001"
S_CONF = "a0000000-0000-4000-8000-00000000a002"
S_DOCS = "a0000000-0000-4000-8000-00000000a003"
S_OTHER = "a0000000-0000-4000-8000-00000000a004"


@pytest.fixture
def archive(conn, tmp_path):
    root = tmp_path / "projects"
    t = Transcript(root / "-srv-api" / f"{S_AUTH}.jsonl", S_AUTH, cwd="/srv/api")
    t.user("Please add authentication middleware to the express server")
    t.assistant(
        "I will write the authentication middleware now.",
        thinking="maybe use passport for sessions",
        tools=[tool_use("tu_a1", "Bash", command="npm install passport-jwt")],
    )
    t.tool_result("tu_a1", "added 12 packages, found 0 vulnerabilities")
    t.assistant("Done: middleware checks the bearer token.")
    t.write()
    c = Transcript(root / "-srv-cli" / f"{S_CONF}.jsonl", S_CONF, cwd="/srv/cli")
    c.user("Why does parseConfigFile crash on empty YAML?")
    c.assistant("parseConfigFile assumes a mapping; an empty document loads as None.")
    c.write()
    d = Transcript(root / "-srv-docs" / f"{S_DOCS}.jsonl", S_DOCS, cwd="/srv/docs")
    d.user("server middleware authentication is covered in which chapter?")
    d.assistant("Chapter four covers it.")
    d.write()
    o = Transcript(root / "-srv-api" / f"{S_OTHER}.jsonl", S_OTHER, cwd="/srv/api")
    o.user("Rename the logging helper")
    o.assistant(
        "Renamed to log_event",
        tools=[tool_use("tu_o1", "Task", description="find callers", prompt="find log callers")],
    )
    o.tool_result("tu_o1", "3 callers", tool_use_result={"agentId": "0badc0de"})
    o.write()
    sub = Transcript(
        root / "-srv-api" / "agent-0badc0de.jsonl", S_OTHER, isSidechain=True, agentId="0badc0de"
    )
    sub.user("find log callers of the authentication middleware", parent=False)
    sub.assistant("found three callers")
    sub.write()
    ingest(conn, root)
    return conn


def sessions_of(result) -> list[str]:
    return [h.session_id for h in result.hits]


def test_exact_misspelt_and_reordered_queries_rank_the_right_session_first(archive):
    for query in (
        "authentication middleware",
        "autentication midleware",
        "middleware authentication express",
    ):
        result = search(archive, query + " in:main")
        assert sessions_of(result)[0] == S_AUTH, query
    # without in:main the subagent that was asked about the middleware is found too
    assert f"{S_OTHER}:agent-0badc0de" in sessions_of(search(archive, "authentication middleware"))
    phrase = search(archive, '"server middleware authentication"')
    assert sessions_of(phrase) == [S_DOCS]


def test_identifier_prefix_is_found(archive):
    result = search(archive, "parseConf")
    assert sessions_of(result) and set(sessions_of(result)) == {S_CONF}
    hit = result.hits[0]
    assert hit.snippet[hit.highlights[0][0] : hit.highlights[0][1]].lower().startswith("parseconf")


def test_default_noise_control_and_filters(archive):
    # tool output and thinking are not searched unless asked for
    assert search(archive, "vulnerabilities").hits == []
    assert sessions_of(search(archive, "vulnerabilities in:tools")) == [S_AUTH]
    assert search(archive, "passport for sessions").hits == []
    assert sessions_of(search(archive, "passport sessions in:thinking")) == [S_AUTH]
    assert sessions_of(search(archive, "passport tool:Bash")) == [S_AUTH]
    # subagents are searched by default (in:subagents still reads); in:main leaves them out
    for query in ("log callers", "log callers in:subagents"):
        assert any(h.session_id == f"{S_OTHER}:agent-0badc0de" for h in search(archive, query).hits)
    assert all(":" not in h.session_id for h in search(archive, "log callers in:main").hits)
    # project, agent, role, session, dates
    assert set(sessions_of(search(archive, "middleware project:api"))) == {S_AUTH}
    assert search(archive, "middleware agent:codex").hits == []
    assert {h.role for h in search(archive, "middleware role:user").hits} == {"user"}
    assert set(sessions_of(search(archive, f"middleware session:{S_DOCS}"))) == {S_DOCS}
    assert search(archive, "middleware after:2026-03-02").hits == []
    assert search(archive, "middleware before:2026-03-02").hits


def test_query_parsing():
    q = parse_query('fix "exact words" agent:claude-code in:tools,thinking after:7d role:user', now=NOW)
    assert (q.words, q.phrases, q.agent, q.role, q.in_tools, q.in_thinking) == (
        ["fix"],
        ["exact words"],
        "claude-code",
        "user",
        True,
        True,
    )
    assert q.after == int((NOW - 7 * 86400) * 1000)
    assert parse_time("yesterday", now=NOW) < parse_time("today", now=NOW)
    assert parse_query("after:someday x").problems


def test_no_match_says_why(archive):
    result = search(archive, "zzqxjv")
    assert result.hits == [] and "zzqxjv" in result.problems[0]


def test_filters_alone_give_the_newest_records_they_let_through(archive):
    calls = search(archive, "tool:Bash")
    assert [(h.session_id, h.field) for h in calls.hits] == [(S_AUTH, "tool_text"), (S_AUTH, "tool_text")]
    assert "12 packages" in calls.hits[0].snippet and "npm install" in calls.hits[1].snippet  # newest first
    assert any("no words given" in p for p in calls.problems)
    api = search(archive, "project:api")
    assert {h.session_id for h in api.hits} == {S_AUTH, S_OTHER}
    assert [h.timestamp for h in api.hits] == sorted((h.timestamp for h in api.hits), reverse=True)
    assert sessions_of(search(archive, "tool:Task project:api")) == [S_OTHER, S_OTHER]
    assert search(archive, "tool:Bash project:docs").hits == []
    assert sessions_of(search(archive, "role:user session:a0000000-0000-4000-8000-00000000a002")) == [S_CONF]
    assert search(archive, "").problems == ["type some words to search for"]
    newest = search(archive, "role:assistant")  # nothing to narrow by id: every record from the newest
    assert newest.hits[0].role == "assistant" and newest.hits[0].timestamp == max(
        h.timestamp for h in newest.hits
    )


def test_filters_alone_list_records_by_their_time_not_by_the_order_files_were_read(
    conn, tmp_path, monkeypatch
):
    """Files are read in any order (a backup added later holds older sessions): `tool:Edit` listed
    an edit of 2025-09-07 above one of 2025-11-17 because its record was stored later."""
    days = ["2025-11-17", "2025-10-01", "2025-09-07", "2025-12-24"]
    for n, day in enumerate(days):  # each read on its own: the December one last, the rest newest first
        sid = f"d0000000-0000-4000-8000-00000000d00{n}"
        root = tmp_path / f"read-{n}"
        t = Transcript(
            root / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app", timestamp=f"{day}T10:00:00.000Z"
        )
        t.user(f"fix the parser, day {day}")
        t.assistant(
            "Editing.",
            tools=[tool_use(f"te{n}", "Edit", file_path="/srv/app/p.py", old_string="a", new_string="b")],
        )
        t.tool_result(f"te{n}", "edited")
        t.write()
        ingest(conn, root)

    def days_of(query: str, limit: int = 50) -> list[str]:
        found = search(conn, query, limit=limit).hits
        return [time.strftime("%Y-%m-%d", time.gmtime(h.timestamp / 1000)) for h in found]

    # each day twice: the call and its result (a user record); the prompt and the call
    newest_first = [d for d in sorted(days, reverse=True) for _ in (1, 2)]
    assert days_of("tool:Edit") == newest_first
    assert days_of("role:user") == newest_first  # nothing narrows by id: the sessions are walked
    assert days_of("project:app role:user") == newest_first  # through the session index
    monkeypatch.setattr("threadloom.core.read.search.SESSION_IDS_MAX", 0)
    assert days_of("project:app role:user") == newest_first
    # the walk stops once no session left can hold a newer record, and still finds the newest
    monkeypatch.setattr("threadloom.core.read.search.CANDIDATES", 2)
    monkeypatch.setattr("threadloom.core.read.search.WALK_SESSIONS", 1)
    assert days_of("role:user", limit=3) == newest_first[:3]
    assert days_of("role:user after:2025-10-15", limit=9) == newest_first[:3]


def test_a_wide_session_filter_walks_the_records_instead_of_listing_them(archive, monkeypatch):
    listed = [h.entry_id for h in search(archive, "project:api").hits]
    monkeypatch.setattr("threadloom.core.read.search.SESSION_IDS_MAX", 0)
    assert [h.entry_id for h in search(archive, "project:api").hits] == listed
    assert sessions_of(search(archive, "tool:Task project:api")) == [S_OTHER, S_OTHER]


def test_index_follows_appends_and_rewrites(archive, tmp_path):
    path = tmp_path / "projects" / "-srv-cli" / f"{S_CONF}.jsonl"
    with open(path, "a") as f:
        f.write(
            json.dumps(
                {
                    "type": "user",
                    "uuid": "late-1",
                    "parentUuid": None,
                    "sessionId": S_CONF,
                    "timestamp": "2026-03-01T11:00:00Z",
                    "message": {"role": "user", "content": "what about kubernetes manifests"},
                }
            )
            + "\n"
        )
    ingest(archive, tmp_path / "projects")
    assert sessions_of(search(archive, "kubernetes")) == [S_CONF]
    path.write_text(path.read_text().replace("kubernetes", "terraform"))
    ingest(archive, tmp_path / "projects")
    assert search(archive, "kubernetes").hits == []
    assert sessions_of(search(archive, "terraform")) == [S_CONF]
    archive.execute("INSERT INTO search_fts(search_fts) VALUES ('integrity-check')")  # raises if out of step


def test_jump_to_session_by_title_id_or_project(archive):
    assert find_sessions(archive, "parse config crash")[0].session_id == S_CONF
    assert find_sessions(archive, S_DOCS)[0].session_id == S_DOCS
    assert find_sessions(archive, "docs chapter")[0].session_id == S_DOCS
    # subagents by what they were asked to do; extra words and word order do not matter
    assert find_sessions(archive, "callers find")[0].session_id == f"{S_OTHER}:agent-0badc0de"


def test_cli_search_json(archive, tmp_path):
    import subprocess
    import sys

    db_path = archive.execute("PRAGMA database_list").fetchone()[2]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "threadloom.core.cli",
            "search",
            "autentication",
            "in:main",
            "--db",
            db_path,
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        check=True,
    )
    hits = json.loads(out.stdout)
    assert hits and hits[0]["session_id"] == S_AUTH
    assert {
        "session_id",
        "entry_id",
        "uuid",
        "agent",
        "project",
        "role",
        "timestamp",
        "score",
        "snippet",
    } <= set(hits[0])


@pytest.mark.corpus
@pytest.mark.skipif(not (CORPUS / "claude-code").is_dir(), reason="corpus absent")
def test_words_from_real_messages_find_their_sessions(tmp_path, claude_corpus_copy):
    conn = db.connect(claude_corpus_copy(tmp_path))
    rows = conn.execute(
        "SELECT e.session_id, e.content FROM entries e JOIN agent_sessions s ON s.id = e.session_id "
        "WHERE e.role = 'user' AND e.is_meta = 0 AND s.is_subagent = 0 AND e.dup_of IS NULL "
        "AND length(e.content) > 80 AND e.content NOT LIKE '<%'"
    ).fetchall()
    rng = random.Random(7)
    sample = rng.sample(rows, min(25, len(rows)))
    found = 0
    for session_id, content in sample:
        words = [w for w in re.findall(r"[A-Za-z]{6,}", content)]
        if len(words) < 3:
            continue
        query = " ".join(rng.sample(words, 3))
        result = search(conn, query + " in:all", limit=200)
        found += session_id in {h.session_id for h in result.hits}
    conn.close()
    assert found >= 20


def test_a_background_tasks_notification_is_found_and_read_by_its_summary(conn, tmp_path):
    from tests.builders.claude import notice_session

    notice_session(tmp_path)
    ingest(conn, tmp_path / "projects")
    hits = search(conn, "coverage analysis completed").hits
    notice = next(h for h in hits if "Coverage is now 96%" in h.snippet)
    assert notice.snippet.startswith('⚑ Agent "Coverage analysis" completed: Coverage is now 96%.')
    assert "<task-id>" not in notice.snippet and "task-notification" not in notice.snippet


def test_a_short_session_id_typed_whole_comes_first(conn, tmp_path):
    root = tmp_path / "projects"
    for sid, prompt, turns in (("s154", "tune the s1 cache", 4), ("s1", "write the parser", 1)):
        t = Transcript(root / "-srv-ids" / f"{sid}.jsonl", sid, cwd="/srv/ids")
        for _ in range(turns):  # s154 ends later: on a tie of scores the newer would come first
            t.user(prompt)
            t.assistant("ok")
        t.write()
    ingest(conn, root)
    assert [m.session_id for m in find_sessions(conn, "s1")][:2] == ["s1", "s154"]
    assert [m.session_id for m in find_sessions(conn, "S154")] == ["s154"]


def test_a_snippet_is_cut_between_words_with_an_ellipsis() -> None:
    from threadloom.core.read.search import make_snippet

    words = "understand the purpose of different folders in this repository " * 6
    pattern = re.compile("purpose", re.IGNORECASE)
    snippet, spans = make_snippet(words, pattern, width=60)
    assert snippet.endswith("…") and snippet[:-1] == snippet[:-1].rstrip()
    assert all(w in words.split() for w in snippet.strip("…").split()), snippet
    assert [snippet[a:b] for a, b in spans] == ["purpose"]
    assert make_snippet("short and whole", None) == ("short and whole", [])
