"""Tool calls belong to their session: sessions that repeat each other's tool ids (forks, side
questions, Codex forks and reused call ids) each keep all their calls, joined to their own results."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from threadloom.core.ingest.pipeline import rebuild_pending
from threadloom.core.read import browse
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.builders.claude import Transcript, tool_use
from tests.support import CORPUS, THREAD, Rollout, full_session, ingest

SID = "aaaaaaaa-1111-4222-8333-000000000001"
COPY = "bbbbbbbb-1111-4222-8333-000000000002"
PROJECT = "-home-dev-app"


def project_dir(tmp_path: Path) -> Path:
    return tmp_path / "projects" / PROJECT


def calls_of(conn: sqlite3.Connection, sid: str) -> dict[str, tuple]:
    """Each call of a session as (tool, status, result text), read as the TUI and `show` read them."""
    return {c.id: (c.name, c.status, c.result_json) for m in messages(conn, sid) for c in m.tool_calls}


def stored_calls(conn: sqlite3.Connection, sid: str) -> int:
    return conn.execute("SELECT count(*) FROM agent_tool_calls WHERE session_id = ?", (sid,)).fetchone()[0]


def working_session(
    tmp_path: Path, sid: str = SID, outputs: tuple[str, str, str] = ("a.py", "1 passed", "ok")
) -> Transcript:
    t = Transcript(project_dir(tmp_path) / f"{sid}.jsonl", sid)
    t.user("look around and run the tests")
    t.assistant(
        "Two things at once.",
        tools=[
            tool_use("toolu_ls", "Bash", command="ls"),
            tool_use("toolu_test", "Bash", command="pytest -q"),
        ],
    )
    t.tool_result("toolu_ls", outputs[0])
    t.tool_result("toolu_test", outputs[1])
    t.assistant(tools=[tool_use("toolu_edit", "Edit", file_path="a.py", old_string="x", new_string="y")])
    t.tool_result(
        "toolu_edit", outputs[2], tool_use_result={"filePath": "a.py", "structuredPatch": [outputs[2]]}
    )
    t.assistant("Done.")
    return t


def copy_as(source: Transcript, sid: str, path: Path, replace: dict[str, str] | None = None) -> Path:
    """A second session file repeating `source`'s records (uuids and tool ids) under a new sessionId,
    as a fork does; `replace` rewrites tool outputs so each session's results can be told apart."""
    text = "\n".join(json.dumps({**line, "sessionId": sid}) for line in source.lines) + "\n"
    for old, new in (replace or {}).items():
        text = text.replace(old, new)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_two_sessions_sharing_tool_ids_keep_all_their_calls_with_their_own_results(conn, tmp_path):
    working_session(tmp_path).write()
    working_session(tmp_path, COPY, ("b.py", "2 failed", "nope")).write()
    ingest(conn, tmp_path / "projects")
    assert calls_of(conn, SID) == {
        "toolu_ls": ("Bash", "completed", '"a.py"'),
        "toolu_test": ("Bash", "completed", '"1 passed"'),
        "toolu_edit": ("Edit", "completed", '"ok"'),
    }
    assert calls_of(conn, COPY) == {
        "toolu_ls": ("Bash", "completed", '"b.py"'),
        "toolu_test": ("Bash", "completed", '"2 failed"'),
        "toolu_edit": ("Edit", "completed", '"nope"'),
    }
    # every call's record and result record are its own session's
    foreign = conn.execute(
        "SELECT count(*) FROM agent_tool_calls t JOIN entries c ON c.id = t.entry_id "
        "JOIN entries r ON r.id = t.result_entry_id WHERE c.session_id <> t.session_id OR r.session_id <> t.session_id"
    ).fetchone()[0]
    assert foreign == 0
    # the edit's own structured result, as the TUI shows it under the call
    edit = {
        s: next(c for m in browse.message_page(conn, s, 0, 99) for c in m.tool_calls if c.name == "Edit")
        for s in (SID, COPY)
    }
    assert browse.tool_result_extra(conn, edit[SID])["structuredPatch"] == ["ok"]
    assert browse.tool_result_extra(conn, edit[COPY])["structuredPatch"] == ["nope"]


@pytest.mark.parametrize("order", ["one run", "call first", "result first"])
def test_a_result_never_joins_another_sessions_call(conn, tmp_path, order):
    """Session A's last call went unanswered; session B holds a result for the same tool id (a
    copy resumed elsewhere). A's call stays pending, B's result is no answer to it."""
    a = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    a.user("deploy it")
    a.assistant(tools=[tool_use("toolu_deploy", "Bash", command="make deploy")])
    b = Transcript(project_dir(tmp_path) / f"{COPY}.jsonl", COPY)
    b.user("what happened?")
    b.tool_result("toolu_deploy", "deployed to prod")
    b.assistant("It was deployed.")
    if order == "one run":
        a.write()
        b.write()
        ingest(conn, tmp_path / "projects")
    else:
        for t in (a, b) if order == "call first" else (b, a):
            t.write()
            ingest(conn, tmp_path / "projects")
    assert calls_of(conn, SID) == {"toolu_deploy": ("Bash", "pending", None)}
    row = conn.execute(
        "SELECT status, result_entry_id, completed_at FROM agent_tool_calls WHERE session_id = ?", (SID,)
    ).fetchone()
    assert row == ("pending", None, None)
    assert stored_calls(conn, COPY) == 0


def test_a_result_in_the_same_file_under_another_session_id_does_not_answer_the_call(conn, tmp_path):
    """A resumed file (older Claude Code) copies the old session's lines with their sessionId, then
    goes on under the new one: a new-session result for the old session's call is not its answer."""
    t = Transcript(project_dir(tmp_path) / f"{COPY}.jsonl", SID)
    t.user("deploy it")
    t.assistant(tools=[tool_use("toolu_deploy", "Bash", command="make deploy")])
    t.session_id = COPY
    t.tool_result("toolu_deploy", "[Request interrupted by user for tool use]", sessionId=COPY)
    t.write()
    ingest(conn, tmp_path / "projects")
    assert calls_of(conn, SID) == {"toolu_deploy": ("Bash", "pending", None)}


def test_a_fork_like_copy_shows_all_its_tool_calls(conn, tmp_path):
    source = working_session(tmp_path)
    source.write()
    copy_as(source, COPY, project_dir(tmp_path) / f"{COPY}.jsonl", {'"ok"': '"fine"'})
    ingest(conn, tmp_path / "projects")
    assert stored_calls(conn, SID) == stored_calls(conn, COPY) == 3
    assert calls_of(conn, COPY) == {
        "toolu_ls": ("Bash", "completed", '"a.py"'),
        "toolu_test": ("Bash", "completed", '"1 passed"'),
        "toolu_edit": ("Edit", "completed", '"fine"'),
    }
    assert calls_of(conn, SID)["toolu_edit"] == ("Edit", "completed", '"ok"')
    counts = conn.execute("SELECT id, tool_call_count FROM agent_sessions ORDER BY id").fetchall()
    assert counts == [(SID, 3), (COPY, 3)]


def test_a_fork_written_by_threadloom_shows_its_tool_calls_once_ingested(conn, tmp_path):
    from threadloom.core.actions.fork import plan_fork, write_fork

    source = working_session(tmp_path)
    source.write()
    ingest(conn, tmp_path / "projects")
    plan = plan_fork(conn, source.lines[-1]["uuid"])
    path = write_fork(plan)
    ingest(conn, path.parent)
    assert stored_calls(conn, plan.new_session_id) == 3
    assert calls_of(conn, plan.new_session_id) == calls_of(conn, SID)
    assert stored_calls(conn, SID) == 3


SIDE_REMINDER = (
    "<system-reminder>This is a side question from the user. You must answer this question directly in a "
    "single response.\n\nCRITICAL CONSTRAINTS:\n- You have NO tools available\n</system-reminder>\n\n"
)


def test_a_side_question_shows_the_calls_it_copied_and_spawns_no_subagent(conn, tmp_path):
    """Claude Code's `/btw` side question copies the conversation (uuids and tool ids) before its
    question. It shows those calls; the subagent the parent's Task started stays the parent's;
    another subagent with the same prompt is not hung under the side question's copy of the call."""
    t = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    t.user("check the tests with a helper")
    t.assistant(tools=[tool_use("toolu_task", "Task", description="Run the tests", prompt="run the tests")])
    t.tool_result("toolu_task", "all pass", tool_use_result={"agentId": "a1111111111111111"})
    t.assistant(tools=[tool_use("toolu_ls", "Bash", command="ls")])
    t.tool_result("toolu_ls", "a.py")
    t.assistant("The tests pass.")
    t.write()
    subagents = project_dir(tmp_path) / SID / "subagents"
    for aid in ("a1111111111111111", "a2222222222222222"):  # the second: a retry with the same prompt
        sub = Transcript(subagents / f"agent-{aid}.jsonl", SID, isSidechain=True, agentId=aid)
        sub.user("run the tests", parent=False)
        sub.assistant("They pass.")
        sub.write()
    aside_id = "aside_question-c5e5c961a7749e08"
    aside = Transcript(subagents / f"agent-{aside_id}.jsonl", SID, isSidechain=True, agentId=aside_id)
    for line in t.lines:
        aside.add({k: v for k, v in line.items() if k not in ("isSidechain", "parentUuid")})
    aside.user(SIDE_REMINDER + "did the helper run every test?")
    aside.assistant("Yes.")
    aside.write()
    ingest(conn, tmp_path / "projects")

    side = f"{SID}:agent-{aside_id}"
    assert stored_calls(conn, side) == stored_calls(conn, SID) == 2
    assert (
        calls_of(conn, side)
        == calls_of(conn, SID)
        == {"toolu_task": ("Task", "completed", '"all pass"'), "toolu_ls": ("Bash", "completed", '"a.py"')}
    )
    first, retry = f"{SID}:agent-a1111111111111111", f"{SID}:agent-a2222222222222222"
    linked = dict(
        conn.execute("SELECT session_id, child_session_id FROM agent_tool_calls WHERE id = 'toolu_task'")
    )
    assert linked == {SID: first, side: None}
    sessions = {
        r[0]: r[1:]
        for r in conn.execute(
            "SELECT id, parent_session_id, tool_call_id FROM agent_sessions WHERE is_subagent = 1"
        )
    }
    assert sessions[first] == (SID, "toolu_task")
    assert sessions[retry] == (SID, None)  # not the side question's copy of the spawning call


def test_codex_fork_and_sessions_reusing_call_ids_keep_their_own_calls(conn, home):
    """A Codex fork copies its parent's rollout, call ids included; other sessions number their
    calls the same way (`call_1` …). Each keeps its calls and its outputs."""
    parent = full_session(home)
    parent.write()
    fork_id = "019a0000-1111-7222-8333-aaaabbbbcccc"
    fork = Rollout(home, fork_id, day="2026/03/03")
    fork.meta(forked_from_id=THREAD)
    for line in parent.lines:
        fork.add(line["type"], line["payload"], ts="2026-03-03T08:00:00.000Z")
    fork.context()
    fork.prompt("try another way")
    fork.call("call_3", ["bash", "-lc", "pytest -q"], "2 passed")
    fork.write()
    other_id = "019a0000-1111-7222-8333-ddddeeeeffff"
    other = Rollout(home, other_id, day="2026/03/04")
    other.meta()
    other.prompt("list the files")
    other.call("call_1", ["ls"], "README.md")
    other.write()
    ingest(conn, home)

    def outputs(sid: str) -> dict[str, str | None]:
        return {cid: result for cid, (_, _, result) in calls_of(conn, sid).items()}

    assert set(outputs(THREAD)) == {"call_1", "call_2"}
    assert set(outputs(fork_id)) == {"call_1", "call_2", "call_3"}
    assert outputs(fork_id)["call_1"] == outputs(THREAD)["call_1"] and "1 failed" in outputs(THREAD)["call_1"]
    assert "2 passed" in outputs(fork_id)["call_3"]
    assert "README.md" in outputs(other_id)["call_1"]
    for sid in (THREAD, fork_id, other_id):
        count = conn.execute("SELECT tool_call_count FROM agent_sessions WHERE id = ?", (sid,)).fetchone()[0]
        assert stored_calls(conn, sid) == count


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    codex = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex))
    return codex


# agent_tool_calls as schema 8 created it: keyed by the tool id alone
SCHEMA_8_TOOL_CALLS = """CREATE TABLE agent_tool_calls (
    id VARCHAR NOT NULL, message_id VARCHAR, session_id VARCHAR NOT NULL, tool_name VARCHAR NOT NULL,
    tool_number INTEGER DEFAULT '0' NOT NULL, params_json VARCHAR, result_json VARCHAR, status VARCHAR,
    child_session_id VARCHAR, started_at INTEGER, completed_at INTEGER, entry_id INTEGER, result_entry_id INTEGER,
    turn_id VARCHAR, child_agent_id VARCHAR, PRIMARY KEY (id))"""


def test_a_database_of_the_previous_schema_is_rebuilt_with_every_sessions_calls(tmp_path):
    source = working_session(tmp_path)
    source.write()
    copy_as(source, COPY, project_dir(tmp_path) / f"{COPY}.jsonl")
    path = tmp_path / "old.db"
    conn = db.connect(path)
    ingest(conn, tmp_path / "projects")
    fresh = {sid: calls_of(conn, sid) for sid in (SID, COPY)}
    # what schema 8 held: the calls of whichever session came first, the other's lost
    conn.execute("ALTER TABLE agent_tool_calls RENAME TO calls_9")
    conn.execute(SCHEMA_8_TOOL_CALLS)
    conn.execute("INSERT OR IGNORE INTO agent_tool_calls SELECT * FROM calls_9 ORDER BY session_id")
    conn.execute("DROP TABLE calls_9")
    conn.execute("PRAGMA user_version = 8")
    assert (stored_calls(conn, SID), stored_calls(conn, COPY)) == (3, 0)
    conn.close()

    conn = db.connect(path)
    assert db.user_version(conn) == db.SCHEMA_VERSION >= 9
    # opening it upgraded the tables only: the calls come back with the rebuild that follows
    assert (stored_calls(conn, SID), stored_calls(conn, COPY)) == (0, 0) and db.rebuild_due(conn) == 8
    assert rebuild_pending(conn)
    assert (stored_calls(conn, SID), stored_calls(conn, COPY)) == (3, 3)
    assert {sid: calls_of(conn, sid) for sid in (SID, COPY)} == fresh
    ddl = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'agent_tool_calls'").fetchone()[0]
    assert "PRIMARY KEY (id, session_id)" in ddl
    conn.close()


def test_seed_000_queries_run_on_sessions_sharing_tool_ids(conn, tmp_path):
    source = working_session(tmp_path)
    source.write()
    copy_as(source, COPY, project_dir(tmp_path) / f"{COPY}.jsonl")
    ingest(conn, tmp_path / "projects")
    cur = conn.execute("SELECT * FROM agent_tool_calls WHERE session_id = ?", (COPY,))
    rows = cur.fetchall()
    columns = [d[0] for d in cur.description]
    assert columns[:11] == [
        "id",
        "message_id",
        "session_id",
        "tool_name",
        "tool_number",
        "params_json",
        "result_json",
        "status",
        "child_session_id",
        "started_at",
        "completed_at",
    ]
    assert sorted(r[0] for r in rows) == ["toolu_edit", "toolu_ls", "toolu_test"]
    for sid in (SID, COPY):
        stats = conn.execute(
            """SELECT tool_name, COUNT(*) as uses,
       SUM(CASE WHEN status='completed' THEN 1 ELSE 0 END) as success
FROM agent_tool_calls
WHERE session_id = ?
GROUP BY tool_name
ORDER BY uses DESC;""",
            (sid,),
        ).fetchall()
        assert stats == [("Bash", 2, 2), ("Edit", 1, 1)]
        # the relationship seed 000 draws: a call joins its message through (session_id, message_id)
        joined = conn.execute(
            "SELECT t.id, m.role FROM agent_tool_calls t JOIN agent_messages m "
            "ON m.session_id = t.session_id AND m.id = t.message_id WHERE t.session_id = ? ORDER BY t.id",
            (sid,),
        ).fetchall()
        assert joined == [("toolu_edit", "assistant"), ("toolu_ls", "assistant"), ("toolu_test", "assistant")]


def test_joining_a_result_to_its_call_is_a_primary_key_lookup(conn):
    """The ledger answers a call met in an earlier file by (tool id, session): no scan, and no index
    beyond the primary key and the per-session one readers use (by session and message)."""
    plan = " ".join(
        r[3]
        for r in conn.execute(
            "EXPLAIN QUERY PLAN UPDATE agent_tool_calls SET status = 'completed' WHERE id = ? AND session_id = ?",
            ("t", "s"),
        )
    )
    assert "sqlite_autoindex_agent_tool_calls_1" in plan and "SCAN" not in plan
    indexes = {r[1] for r in conn.execute("PRAGMA index_list(agent_tool_calls)")}
    assert indexes == {
        "sqlite_autoindex_agent_tool_calls_1",
        "ix_tool_calls_session_entry",
        "ix_tool_calls_child_agent",
        "ix_tool_calls_entry",
        "ix_tool_calls_result_entry",
    }


REAL = CORPUS / "claude-code" / "handgemacht-ai__claude-code-log" / "test" / "test_data" / "real_projects"


@pytest.mark.corpus
@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/corpus/claude-code is not present")
def test_copies_of_real_sessions_show_every_tool_call_of_their_source(conn, tmp_path):
    shutil.copytree(REAL, tmp_path / "projects")
    ingest(conn, tmp_path / "projects")
    sources = conn.execute(
        "SELECT s.id, f.path FROM agent_sessions s JOIN source_files f ON f.id = s.source_file_id "
        "WHERE s.is_subagent = 0 AND s.source = 'claude-code' AND s.tool_call_count >= 5 ORDER BY s.id LIMIT 5"
    ).fetchall()
    assert len(sources) >= 3
    pairs = []
    for n, (sid, path) in enumerate(sources):
        copy = f"cccccccc-0000-4000-8000-{n:012d}"
        lines = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        Path(path).with_name(f"{copy}.jsonl").write_text(
            "".join(
                json.dumps({**x, "sessionId": copy} if x.get("sessionId") == sid else x) + "\n" for x in lines
            )
        )
        pairs.append((sid, copy, calls_of(conn, sid)))
    ingest(conn, tmp_path / "projects")
    for sid, copy, calls in pairs:
        assert len(calls) >= 5
        assert calls_of(conn, copy) == calls  # every call, with the same results
        assert calls_of(conn, sid) == calls  # and the source kept its own
