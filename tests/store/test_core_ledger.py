"""Sessions, subagents in all layouts, threading, turns, tool calls, tokens and titles."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from threadloom.core.adapters.base import stored_name
from threadloom.core.store import db

from tests.builders import claude
from tests.builders.claude import Transcript, tool_use
from tests.support import ingest

SID = "aaaaaaaa-1111-4222-8333-000000000001"
PROJECT = "-home-dev-app"


def project_dir(tmp_path: Path) -> Path:
    return tmp_path / "projects" / PROJECT


def session(conn, sid):
    row = conn.execute("SELECT * FROM agent_sessions WHERE id = ?", (sid,)).fetchone()
    cols = [d[0] for d in conn.execute("SELECT * FROM agent_sessions LIMIT 0").description]  # noqa: RUF015
    return dict(zip(cols, row, strict=True)) if row else None


def test_subagents_in_all_three_layouts_link_to_their_task_call(conn, tmp_path):
    t = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    t.user("Refactor the parser")
    # 1. inline sidechain (<= 1.0.x): same file, isSidechain, no agentId
    t.assistant(
        tools=[tool_use("toolu_inline", "Task", description="Inline helper", prompt="Find the parser files")]
    )
    inline_root = t.add(
        {
            "type": "user",
            "isSidechain": True,
            "message": {"role": "user", "content": "Find the parser files"},
        },
        parent=False,
        chain=False,
    )
    t.add(
        {
            "type": "assistant",
            "isSidechain": True,
            "message": {
                "id": "msg_side",
                "role": "assistant",
                "model": "m",
                "content": [{"type": "text", "text": "found them"}],
                "usage": {"input_tokens": 3, "output_tokens": 2},
            },
        },
        parent=inline_root,
        chain=False,
    )
    t.tool_result("toolu_inline", "found them")
    # 2. legacy agent-<id>.jsonl beside the session (2.0.x), linked by toolUseResult.agentId
    t.assistant(tools=[tool_use("toolu_legacy", "Task", description="Legacy helper", prompt="Run the tests")])
    t.tool_result(
        "toolu_legacy", "tests pass", tool_use_result={"status": "completed", "agentId": "1e9ac0de"}
    )
    # 3. <session>/subagents/agent-<id>.jsonl with .meta.json (2.1.x), meta names the tool call
    t.assistant(
        tools=[
            tool_use(
                "toolu_new",
                "Agent",
                description="New helper",
                prompt="Write docs",
                subagent_type="general-purpose",
            )
        ]
    )
    t.tool_result("toolu_new", "Failed: docs folder missing", is_error=True)
    t.write()

    legacy = Transcript(
        project_dir(tmp_path) / "agent-1e9ac0de.jsonl", SID, isSidechain=True, agentId="1e9ac0de"
    )
    legacy.user("Run the tests", parent=False)
    legacy.assistant("all green")
    legacy.write()

    sub_dir = project_dir(tmp_path) / SID / "subagents"
    new = Transcript(
        sub_dir / "agent-a0123456789abcdef.jsonl", SID, isSidechain=True, agentId="a0123456789abcdef"
    )
    new.user("Write docs", parent=False)
    # a subagent spawning its own subagent: nested
    new.assistant(
        tools=[tool_use("toolu_nested", "Task", description="Nested helper", prompt="Check spelling")]
    )
    new.tool_result("toolu_nested", "spelling ok", tool_use_result={"agentId": "afedcba9876543210"})
    new.write()
    (sub_dir / "agent-a0123456789abcdef.meta.json").write_text(
        json.dumps({"agentType": "general-purpose", "description": "New helper", "toolUseId": "toolu_new"})
    )
    nested = Transcript(
        sub_dir / "agent-afedcba9876543210.jsonl", SID, isSidechain=True, agentId="afedcba9876543210"
    )
    nested.user("Check spelling", parent=False)
    nested.assistant("no typos")
    nested.write()
    # a 2.0.x Warmup agent, not linked to anything
    warm = Transcript(
        project_dir(tmp_path) / "agent-0000beef.jsonl", SID, isSidechain=True, agentId="0000beef"
    )
    warm.user("Warmup", parent=False)
    warm.assistant("ready")
    warm.write()

    ingest(conn, tmp_path / "projects")
    subs = {
        r[0]: r
        for r in conn.execute(
            "SELECT id, parent_session_id, tool_call_id, task_description, task_status, kind, is_warmup, agent_type "
            "FROM agent_sessions WHERE is_subagent = 1"
        )
    }
    inline = [s for s in subs if ":side-" in s]
    assert len(inline) == 1
    assert subs[inline[0]][1:6] == (SID, "toolu_inline", "Inline helper", "completed", "sidechain")
    assert subs[f"{SID}:agent-1e9ac0de"][1:5] == (SID, "toolu_legacy", "Legacy helper", "completed")
    assert subs[f"{SID}:agent-a0123456789abcdef"][1:5] == (SID, "toolu_new", "New helper", "failed")
    assert subs[f"{SID}:agent-a0123456789abcdef"][7] == "general-purpose"
    # nested: its parent is the agent whose file holds the Task call
    assert subs[f"{SID}:agent-afedcba9876543210"][1:3] == (f"{SID}:agent-a0123456789abcdef", "toolu_nested")
    assert subs[f"{SID}:agent-0000beef"][6] == 1 and subs[f"{SID}:agent-0000beef"][2] is None
    calls = dict(
        conn.execute("SELECT id, child_session_id FROM agent_tool_calls WHERE tool_name IN ('Task','Agent')")
    )
    assert calls["toolu_legacy"] == f"{SID}:agent-1e9ac0de"
    assert calls["toolu_nested"] == f"{SID}:agent-afedcba9876543210"
    # the main session holds only its own messages
    assert session(conn, SID)["message_count"] == 7


def test_rewind_branch_compaction_and_turns(conn, tmp_path):
    t = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    t.user("first question")
    a1 = t.assistant("first answer")
    t.user("second question")
    t.assistant("second answer")
    # rewind: a new prompt hangs off the first answer, which already has a child
    t.user("second question, asked differently", parent=a1)
    before = t.assistant("better second answer")
    boundary = t.add(
        {
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "logicalParentUuid": before,
            "compactMetadata": {"trigger": "auto", "preTokens": 150000},
        },
        parent=False,
    )
    t.add(
        {
            "type": "user",
            "isCompactSummary": True,
            "isVisibleInTranscriptOnly": True,
            "message": {
                "role": "user",
                "content": "This session is being continued from a previous conversation",
            },
        },
        parent=boundary,
    )
    t.user("after compaction")
    t.assistant("still here")
    t.write()
    ingest(conn, tmp_path / "projects")
    s = session(conn, SID)
    assert (s["turn_count"], s["branch_count"], s["compaction_count"]) == (4, 1, 1)
    turns = conn.execute(
        "SELECT id, parent_turn_id, child_count, has_children, response_message_id FROM agent_turns "
        "WHERE session_id = ? ORDER BY sequence",
        (SID,),
    ).fetchall()
    first, second, rewound, after = turns
    assert first[2] == 2 and first[3] == 1  # the branch point
    assert second[1] == first[0] and rewound[1] == first[0]
    assert after[1] == rewound[0]  # joined across the compaction through logicalParentUuid
    # the compact summary is not a human prompt
    prompts = [
        r[0]
        for r in conn.execute(
            "SELECT content FROM entries e JOIN agent_turns t ON t.id = e.uuid WHERE t.session_id = ?", (SID,)
        )
    ]
    assert not any("continued from a previous" in p for p in prompts)


def test_tool_calls_whose_writer_left_out_their_ids_are_kept_and_matched_in_order(conn, tmp_path):
    """Some writers (test fixtures, older tools) give tool_use blocks and results no ids: the calls
    are still listed, each answered by the next result that has no id either."""
    t = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    t.user("look around")
    t.assistant(
        "Two commands.",
        tools=[
            {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}},
            {"type": "tool_use", "name": "Bash", "input": {"command": "pwd"}},
        ],
    )
    t.add(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "content": "README.md", "is_error": False}],
            },
        }
    )
    t.add(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "content": "/srv/app", "is_error": True}],
            },
        }
    )
    t.assistant(tools=[{"type": "tool_use", "name": "Task", "input": {"description": "search files"}}])
    t.add(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "content": "found 3 files", "is_error": False}],
            },
        }
    )
    t.assistant(tools=[{"type": "tool_use", "name": "Bash", "input": {"command": "date"}}])
    t.write()
    ingest(conn, tmp_path / "projects")
    from threadloom.core.read.query import messages

    calls = [call for msg in messages(conn, SID) for call in msg.tool_calls]
    assert [(c.name, c.status) for c in calls] == [
        ("Bash", "completed"),
        ("Bash", "failed"),
        ("Task", "completed"),
        ("Bash", "pending"),
    ]
    assert '"ls"' in calls[0].params_json and "README.md" in calls[0].result_json
    assert '"pwd"' in calls[1].params_json and "/srv/app" in calls[1].result_json
    # a Task's input is kept in the ledger: its result is read again alone
    assert "search files" in calls[2].params_json and "found 3 files" in calls[2].result_json
    assert '"date"' in calls[3].params_json and calls[3].result_json is None
    assert session(conn, SID)["tool_call_count"] == 4


NOTICE = (
    "<task-notification>\n<task-id>b07h5t4ng</task-id>\n<status>completed</status>\n"
    '<summary>Agent "Coverage analysis" completed</summary>\n<result>coverage is 96%</result>\n'
    "</task-notification>\nFull transcript available at: /tmp/tasks/b07h5t4ng.output"
)


def test_branches_are_named_where_each_left_its_nearest_sibling(conn, tmp_path):
    from threadloom.core.read import browse

    t = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    t.user("Start")
    start = t.assistant("ready")
    t.user("use sqlite")
    t.assistant("done with sqlite")
    t.user("use postgres", parent=start)  # rewound twice below the same first prompt
    t.assistant("done with postgres")
    t.user("use duckdb", parent=start)
    answer = t.assistant("done with duckdb")
    t.user(NOTICE, parent=answer)  # a background task's end, answered in its own turn
    t.assistant("noted")
    t.user("and now the docs", parent=answer)
    t.assistant("docs written")
    t.write()
    ingest(conn, tmp_path / "projects")
    labels = [b.label for b in browse.branches(conn, SID)]
    assert labels == [
        "use sqlite",
        "use postgres",
        '⚑ Agent "Coverage analysis" completed',
        "and now the docs",
    ]


def test_branches_named_by_a_command_read_it_as_typed(conn, tmp_path):
    """A branch that starts at a `!` command or a slash command is named `! uv run pytest…` or
    `/review #29`, not by the tags Claude Code wrote around them."""
    from threadloom.core.read import browse

    t = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    t.user("Start")
    start = t.assistant("ready")
    t.user("<bash-input>uv run pytest -q</bash-input>")
    t.user("<bash-stdout>3 passed</bash-stdout><bash-stderr></bash-stderr>")
    t.assistant("green")
    t.user(
        "<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n"
        "<command-args>#29</command-args>",
        parent=start,
    )
    t.assistant("reviewed")
    t.write()
    ingest(conn, tmp_path / "projects")
    assert [b.label for b in browse.branches(conn, SID)] == ["! uv run pytest -q", "/review #29"]


def test_tool_calls_statuses_and_streaming_token_dedup(conn, tmp_path):
    t = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    t.user("do things")
    usage1 = {
        "input_tokens": 100,
        "cache_creation_input_tokens": 1000,
        "cache_read_input_tokens": 5000,
        "output_tokens": 3,
    }
    usage2 = dict(usage1, output_tokens=150)
    # one API response split over three lines sharing message.id: count it once, output = max
    t.assistant(thinking="let me think", msg_id="msg_A", usage=usage1, request_id="req_A")
    t.assistant(
        msg_id="msg_A", usage=usage1, request_id="req_A", tools=[tool_use("tu_ok", "Bash", command="ls")]
    )
    t.assistant(
        msg_id="msg_A", usage=usage2, request_id="req_A", tools=[tool_use("tu_fail", "Bash", command="false")]
    )
    t.tool_result("tu_ok", "file.txt")
    t.tool_result("tu_fail", "Exit code 1", is_error=True)
    t.assistant(
        msg_id="msg_B",
        usage={"input_tokens": 7, "output_tokens": 11},
        tools=[
            tool_use("tu_rej", "Edit", file_path="a.py", old_string="a", new_string="b"),
            tool_use("tu_int", "Bash", command="sleep 100"),
        ],
    )
    t.tool_result(
        "tu_rej",
        "The user doesn't want to proceed with this tool use.",
        is_error=True,
        tool_use_result="User rejected tool use",
    )
    t.tool_result("tu_int", "[Request interrupted by user for tool use]", is_error=True)
    # synthetic / API-error lines carry no real usage
    t.add(
        {
            "type": "assistant",
            "isApiErrorMessage": True,
            "message": {
                "id": "msg_err",
                "role": "assistant",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": "API Error"}],
                "usage": {"input_tokens": 999, "output_tokens": 999},
            },
        }
    )
    t.write()
    ingest(conn, tmp_path / "projects")
    statuses = dict(conn.execute("SELECT id, status FROM agent_tool_calls"))
    assert statuses == {
        "tu_ok": "completed",
        "tu_fail": "failed",
        "tu_rej": "rejected",
        "tu_int": "interrupted",
    }
    s = session(conn, SID)
    assert (s["input_tokens"], s["output_tokens"], s["cache_creation_tokens"], s["cache_read_tokens"]) == (
        107,
        161,
        1000,
        5000,
    )
    assert s["tool_call_count"] == 4 and s["is_agentic"] == 1
    turn = conn.execute(
        "SELECT tool_call_count, token_count FROM agent_turns WHERE session_id = ?", (SID,)
    ).fetchone()
    assert turn == (4, 107 + 161 + 1000 + 5000)
    assert (
        conn.execute("SELECT thinking FROM entries WHERE thinking IS NOT NULL").fetchone()[0]
        == "let me think"
    )


def test_marker_words_inside_a_successful_output_leave_the_call_completed(conn, tmp_path):
    """A Read of a file that quotes Claude Code's interruption or refusal text is output, not an
    interruption: only an error whose text starts with the marker is one."""
    t = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    t.user("read the parser")
    quoted = (
        "     1→INTERRUPTED = '[Request interrupted by user for tool use]'\n     2→# the user rejected it"
    )
    t.assistant(
        tools=[
            tool_use("tu_read", "Read", file_path="p.py"),
            tool_use("tu_grep", "Grep", pattern="doesn't want"),
            tool_use("tu_cut", "Bash", command="sleep 9"),
        ]
    )
    t.tool_result("tu_read", quoted, tool_use_result={"type": "text", "file": {"filePath": "p.py"}})
    t.tool_result("tu_grep", "a.py: The user doesn't want to proceed with this tool use.")
    t.tool_result("tu_cut", "Error: [Request interrupted by user for tool use]", is_error=True)
    t.write()
    ingest(conn, tmp_path / "projects")
    statuses = dict(conn.execute("SELECT id, status FROM agent_tool_calls"))
    assert statuses == {"tu_read": "completed", "tu_grep": "completed", "tu_cut": "interrupted"}


def test_titles_custom_then_ai_then_summary_from_another_file_then_prompt(conn, tmp_path):
    def make(sid: str, prompt: str, extra: list[dict]) -> Transcript:
        t = Transcript(project_dir(tmp_path) / f"{sid}.jsonl", sid)
        t.user("<command-name>/clear</command-name>")
        t.user(prompt)
        t.assistant("ok")
        for rec in extra:
            t.raw(rec | {"sessionId": sid})
        return t

    s1 = "bbbbbbbb-0000-4000-8000-000000000001"
    s2 = "bbbbbbbb-0000-4000-8000-000000000002"
    s3 = "bbbbbbbb-0000-4000-8000-000000000003"
    s4 = "bbbbbbbb-0000-4000-8000-000000000004"
    make(
        s1,
        "p1",
        [
            {"type": "ai-title", "aiTitle": "AI one"},
            {"type": "custom-title", "customTitle": "Mine"},
            {"type": "ai-title", "aiTitle": "AI two"},
        ],
    ).write()
    make(
        s2, "p2", [{"type": "ai-title", "aiTitle": "Old AI"}, {"type": "ai-title", "aiTitle": "New AI"}]
    ).write()
    t3 = make(s3, "p3", [])
    t3.write()
    make(s4, "Explain the   build\nsystem", []).write()
    # a summary in s4's file whose leafUuid is a record of s3 belongs to s3
    with open(project_dir(tmp_path) / f"{s4}.jsonl", "a") as f:
        f.write(json.dumps({"type": "summary", "summary": "Summary of three", "leafUuid": t3.last}) + "\n")
    ingest(conn, tmp_path / "projects")
    titles = dict(conn.execute("SELECT id, title FROM agent_sessions"))
    assert titles == {s1: "Mine", s2: "New AI", s3: "Summary of three", s4: "Explain the build system"}


def test_records_copied_into_a_resumed_session_are_not_counted_twice(conn, tmp_path):
    old = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    old.user("original question")
    old.assistant("original answer", msg_id="msg_orig", usage={"input_tokens": 50, "output_tokens": 20})
    old.write()
    new_sid = "cccccccc-1111-4222-8333-000000000002"
    resumed = Transcript(project_dir(tmp_path) / f"{new_sid}.jsonl", new_sid)
    for line in old.lines:
        resumed.raw(dict(line))  # copies keep their uuid, sessionId and message.id
    resumed.last = old.last
    resumed.user("follow-up question")
    resumed.assistant("follow-up answer")
    resumed.write()
    ingest(conn, tmp_path / "projects")
    assert session(conn, SID)["message_count"] == 2
    assert session(conn, SID)["input_tokens"] == 50
    assert session(conn, new_sid)["message_count"] == 2
    assert conn.execute("SELECT count(*) FROM entries WHERE dup_of IS NOT NULL").fetchone()[0] == 2
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 6


def test_seed_query_patterns_run_unchanged(conn, tmp_path):
    t = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    t.user("q1")
    t.assistant("a1", tools=[tool_use("tu1", "Read", file_path="x"), tool_use("tu2", "Read", file_path="y")])
    t.tool_result("tu1", "x")
    t.tool_result("tu2", "boom", is_error=True)
    t.assistant("done")
    t.user("q2")
    last = t.assistant("a2", tools=[tool_use("tu3", "Task", description="helper", prompt="help me")])
    t.tool_result("tu3", "helped", tool_use_result={"agentId": "abc12345"})
    t.write()
    sub = Transcript(
        project_dir(tmp_path) / "agent-abc12345.jsonl", SID, isSidechain=True, agentId="abc12345"
    )
    sub.user("help me", parent=False)
    sub.assistant("helping")
    sub.write()
    ingest(conn, tmp_path / "projects")

    history = conn.execute(
        "SELECT * FROM agent_messages WHERE session_id = ? ORDER BY sequence;", (SID,)
    ).fetchall()
    assert [r[2] for r in history] == [
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert [r[4] for r in history] == list(range(8))

    turn2 = conn.execute(
        "SELECT id FROM agent_turns WHERE session_id = ? ORDER BY sequence DESC LIMIT 1", (SID,)
    ).fetchone()[0]
    tree = conn.execute(
        """
WITH RECURSIVE turn_tree AS (
  SELECT * FROM agent_turns WHERE id = ?  -- start from turn
  UNION ALL
  SELECT t.* FROM agent_turns t
  JOIN turn_tree tt ON t.id = tt.parent_turn_id
)
SELECT * FROM turn_tree ORDER BY timestamp;""",
        (turn2,),
    ).fetchall()
    assert len(tree) == 2 and tree[1][0] == turn2 and tree[1][4] == last

    subagents = conn.execute("SELECT * FROM agent_sessions\nWHERE parent_session_id = ?;", (SID,)).fetchall()
    assert [r[0] for r in subagents] == [f"{SID}:agent-abc12345"]

    stats = conn.execute(
        """SELECT tool_name, COUNT(*) as uses,
       SUM(CASE WHEN status='completed' THEN 1 ELSE 0 END) as success
FROM agent_tool_calls
WHERE session_id = ?
GROUP BY tool_name
ORDER BY uses DESC;""",
        (SID,),
    ).fetchall()
    assert stats == [("Read", 2, 1), ("Task", 1, 1)]


def test_project_path_comes_from_cwd_not_the_folder_name(conn, tmp_path):
    t = Transcript(
        tmp_path / "projects" / "-home-dev-my-proj-v2" / f"{SID}.jsonl", SID, cwd="/home/dev/my_proj.v2"
    )
    t.user("hi")
    t.write()
    ingest(conn, tmp_path / "projects")
    s = session(conn, SID)
    assert (s["project"], s["project_path"]) == ("my_proj.v2", "/home/dev/my_proj.v2")


def test_schema_version_mismatch_rebuilds_derived_tables(tmp_path):
    from threadloom.core.store import db

    t = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    t.user("question")
    t.assistant("answer", usage={"input_tokens": 4, "output_tokens": 2})
    t.write()
    conn = db.connect(tmp_path / "l.db")
    ingest(conn, tmp_path / "projects")
    before = session(conn, SID)
    conn.execute("UPDATE agent_sessions SET title = 'stale', input_tokens = 0")
    conn.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION - 1}")
    conn.close()
    conn = db.connect(tmp_path / "l.db")
    # opening it only upgrades the tables; the replay is left to the next ingest
    assert session(conn, SID) is None and db.rebuild_due(conn) == db.SCHEMA_VERSION - 1
    ingest(conn)
    assert db.rebuild_due(conn) is None
    after = session(conn, SID)
    assert after["title"] == "question" and after["input_tokens"] == 4
    assert {k: v for k, v in after.items() if k != "updated_at"} == {
        k: v for k, v in before.items() if k != "updated_at"
    }


def test_session_titles_are_found_through_their_own_index(conn):
    from threadloom.core.ingest.ledger import TITLES_SQL

    plan = " ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + TITLES_SQL, ("x",)))
    assert "ix_entries_titles" in plan


def test_a_session_s_undos_are_found_through_their_own_index(conn):
    """Opening a session reads its undos: through an index of them, not every record of the session."""
    from threadloom.core.read.browse import UNDOS_SQL

    plan = " ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + UNDOS_SQL, ("x",)))
    assert "ix_entries_undo" in plan and "ix_entries_uuid" in plan  # each message it names, by its uuid


def test_claude_tool_input_and_output_are_stored_once_and_read_back_from_their_records(conn, tmp_path):
    from threadloom.core.read import browse, query

    t = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    t.user("run both")
    t.assistant(tools=[tool_use("tu_a", "Bash", command="ls"), tool_use("tu_b", "Bash", command="cat x")])
    # parallel calls answered in one record: each call gets its own block back
    t.add(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "tu_a", "content": "a.py\nb.py"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu_b",
                        "content": [{"type": "text", "text": "no such file"}],
                        "is_error": True,
                    },
                ],
            },
        }
    )
    t.assistant(
        tools=[
            tool_use("tu_late", "Read", file_path="c.py"),
            tool_use("tu_task", "Task", description="look", prompt="find it"),
        ]
    )
    t.write()
    ingest(conn, tmp_path / "projects")
    t.tool_result("tu_late", "print('c')")  # the result arrives in a later run: an UPDATE, not an INSERT
    t.write()
    ingest(conn, tmp_path / "projects")
    stored = dict(
        conn.execute(
            "SELECT id, coalesce(params_json, '') || '|' || coalesce(result_json, '') FROM agent_tool_calls"
        )
    )
    # only the input the ledger reads itself (a subagent's Task) is kept
    assert stored == {
        "tu_a": "|",
        "tu_b": "|",
        "tu_late": "|",
        "tu_task": '{"description":"look","prompt":"find it"}|',
    }
    expected = {
        "tu_a": ('{"command":"ls"}', '"a.py\\nb.py"'),
        "tu_b": ('{"command":"cat x"}', '[{"type":"text","text":"no such file"}]'),
        "tu_late": ('{"file_path":"c.py"}', "\"print('c')\""),
        "tu_task": ('{"description":"look","prompt":"find it"}', None),
    }
    calls = {c.id: c for m in query.messages(conn, SID) for c in m.tool_calls}
    assert {k: (c.params_json, c.result_json) for k, c in calls.items()} == expected
    assert calls["tu_b"].status == "failed" and calls["tu_late"].status == "completed"
    page = browse.message_page(conn, SID, 0, 10)
    assert {c.id: (c.params_json, c.result_json) for m in page for c in m.tool_calls} == expected


SIDE_REMINDER = (
    "<system-reminder>This is a side question from the user. You must answer this question directly in a "
    "single response.\n\nCRITICAL CONSTRAINTS:\n- You have NO tools available\n</system-reminder>\n\n"
)


def test_a_side_question_is_named_by_its_question_and_hangs_under_the_message_it_followed(conn, tmp_path):
    """Claude Code 2.1's `/btw`: `subagents/agent-aside_question-<id>.jsonl` copies the conversation so
    far (same uuids), then asks the wrapped question and answers it. The copy is context, the
    question names the session, and the session hangs under the parent message it followed."""
    t = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    u1 = t.user("Refactor the parser")
    a1 = t.assistant("On it: the lexer first.")
    t.user("now the parser itself")
    t.assistant("Done.")
    t.write()
    asked = "what does the lexer return for an empty file?"
    aside = Transcript(
        project_dir(tmp_path) / SID / "subagents" / "agent-aside_question-c5e5c961a7749e08.jsonl",
        SID,
        isSidechain=True,
        agentId="aside_question-c5e5c961a7749e08",
    )
    aside.add({"type": "user", "uuid": u1, "message": {"role": "user", "content": "Refactor the parser"}})
    aside.add(
        {
            "type": "assistant",
            "uuid": a1,
            "message": {
                "id": "msg_copy",
                "role": "assistant",
                "model": "claude-opus-4-5",
                "content": [{"type": "text", "text": "On it: the lexer first."}],
            },
        }
    )
    aside.user(SIDE_REMINDER + asked)
    aside.assistant("An empty token list.")
    aside.write()
    # a side question without the copy (its question follows nothing): the parent's message before it
    lone = Transcript(
        project_dir(tmp_path) / SID / "subagents" / "agent-aside_question-0000000000000002.jsonl",
        SID,
        isSidechain=True,
        agentId="aside_question-0000000000000002",
    )
    lone.add(
        {
            "type": "user",
            "timestamp": "2026-03-01T10:00:03.500Z",
            "message": {"role": "user", "content": SIDE_REMINDER + "is the parser done yet?"},
        },
        parent=False,
    )
    lone.assistant("Not yet.")
    lone.write()
    ingest(conn, tmp_path / "projects")
    s = session(conn, f"{SID}:agent-aside_question-c5e5c961a7749e08")
    title = f"Side question: {asked}"
    assert (
        s["title"],
        s["task_description"],
        s["agent_type"],
        s["parent_session_id"],
        s["parent_message_id"],
    ) == (title, title, "side question", SID, a1)
    assert (s["turn_count"], s["first_prompt"]) == (1, SIDE_REMINDER + asked)
    other = session(conn, f"{SID}:agent-aside_question-0000000000000002")
    third = conn.execute("SELECT uuid FROM entries WHERE session_id = ? AND seq = 2", (SID,)).fetchone()[0]
    assert (other["title"], other["parent_message_id"]) == ("Side question: is the parser done yet?", third)
    assert session(conn, SID)["title"] == "Refactor the parser"


def test_the_ledgers_state_classes_name_their_tables_columns_in_order():
    """Rows for executemany are read off the state classes by column name: a column a table
    gains must be a field of its class, in the same place."""
    from dataclasses import fields

    from threadloom.core.ingest import ledger

    for cls, columns, table in (
        (ledger.SessionState, ledger.SESSION_COLUMNS, "agent_sessions"),
        (ledger.TurnState, ledger.TURN_COLUMNS, "agent_turns"),
        (ledger.PendingToolCall, ledger.TOOL_CALL_COLUMNS, "agent_tool_calls"),
        (ledger.PendingUsage, ledger.USAGE_COLUMNS, "agent_usage"),
    ):
        assert [f.name for f in fields(cls)][: len(columns)] == list(columns)
        from threadloom.core.store import models

        stored = {c.name for c in models.SQLModel.metadata.tables[table].columns}
        assert set(columns) <= stored, table


def test_local_commands_run_in_a_row_are_no_branches(conn, tmp_path):
    """`/doctor`, `/status`, `/mcp` run one after another all hang off the caveat Claude Code wrote
    before them, as does the prompt after them: no rewind, one line of turns."""
    from threadloom.core.read import browse

    t = Transcript(project_dir(tmp_path) / f"{SID}.jsonl", SID)
    t.user("Start")
    t.assistant("ready")
    caveat = t.add(
        {
            "type": "user",
            "isMeta": True,
            "message": {
                "role": "user",
                "content": "Caveat: The messages below were generated by the user while running local commands.",
            },
        }
    )
    for name in ("doctor", "status", "mcp"):
        t.user(
            f"<command-name>/{name}</command-name>\n<command-message>{name}</command-message>\n"
            "<command-args></command-args>",
            parent=caveat,
        )
        t.user("<local-command-stdout>(no content)</local-command-stdout>")
    t.user("and now the docs", parent=caveat)
    t.assistant("on it")
    t.write()
    ingest(conn, tmp_path / "projects")
    assert session(conn, SID)["branch_count"] == 0
    assert browse.rewind_seqs(conn, SID) == set()
    assert browse.branches(conn, SID) == []


def test_a_fork_of_the_conversation_hangs_as_a_fork_under_its_call(conn, tmp_path):
    """`Agent` with `fork: true` starts a subagent handed the parent's conversation (its file opens
    with a `fork-context-ref`, then the parent's lines as handed to it): it was linked as an
    ordinary subagent begun with the parent's first message. It is a fork of the parent, under
    the call that made it, starting when it was forked, the copied messages' tokens the parent's
    alone; without the reference, the call's `fork: true` still says what it is."""
    _, sub = claude.fork_subagent_session(tmp_path / "projects")
    ingest(conn, tmp_path / "projects")
    fork = session(conn, f"{claude.FORKING}:agent-{claude.FORK_AGENT}")
    parent = session(conn, claude.FORKING)
    assert (fork["kind"], fork["is_subagent"], fork["parent_session_id"], fork["tool_call_id"]) == (
        "fork",
        1,
        claude.FORKING,
        "toolu_fork_1",
    )
    assert fork["forked_from_session_id"] == claude.FORKING
    assert fork["created_at"] > parent["created_at"]  # from the fork on, not from the copied start
    assert (fork["input_tokens"], fork["output_tokens"]) == (400, 60)  # its own request alone
    assert (parent["input_tokens"], parent["output_tokens"]) == (3500, 100)
    # the same files with no reference and no meta: the call still marks its child a fork
    _, sub = claude.fork_subagent_session(tmp_path / "bare")
    sub.path.write_text("".join(line + "\n" for line in sub.path.read_text().splitlines()[1:]))
    (sub.path.parent / f"agent-{claude.FORK_AGENT}.meta.json").unlink()
    other = db.connect(tmp_path / "bare.db")
    try:
        ingest(other, tmp_path / "bare")
        fork = session(other, f"{claude.FORKING}:agent-{claude.FORK_AGENT}")
    finally:
        other.close()
    assert (fork["kind"], fork["tool_call_id"], fork["agent_type"]) == ("fork", "toolu_fork_1", "fork")


@pytest.mark.parametrize(
    "folder", ["app", os.fsdecode(b"we\xffird[1]%_\\ *?")], ids=["plain", "bytes-and-globs"]
)
def test_a_subagent_s_meta_json_is_read_from_the_archive_by_a_replay(conn, tmp_path, folder):
    """A subagent's `.meta.json` tells what its transcript may not (here that it is a fork: no
    `fork-context-ref`, no `fork: true` on the call): a replay (a schema upgrade's, `ingest
    --rebuild`) read it from the disk, so once Claude Code deleted the session's files the fork came
    back an ordinary subagent. The replay reads it as the archive holds it; an archive that holds
    none (from before it was read) still reads the disk's. In a folder whose name is not UTF-8 (stored
    escaped, with its bytes in hex) and holds a glob's signs, the archive's lookup failed outright."""
    import shutil

    from threadloom.core.ingest.ledger import rebuild_derived

    main, sub = claude.fork_subagent_session(tmp_path / "projects" / folder)
    sub.path.write_text("".join(line + "\n" for line in sub.path.read_text().splitlines()[1:]))
    main.path.write_text(main.path.read_text().replace('"fork": true', '"fork": false'))
    sid = f"{claude.FORKING}:agent-{claude.FORK_AGENT}"
    facts = ("kind", "agent_type", "parent_session_id", "tool_call_id", "project_path", "created_at", "title")
    ingest(conn, tmp_path / "projects")
    read_then = {k: session(conn, sid)[k] for k in facts}
    assert (read_then["kind"], read_then["agent_type"]) == ("fork", "fork")
    meta = stored_name(sub.path.with_name(f"agent-{claude.FORK_AGENT}.meta.json"))
    older = db.connect(tmp_path / "older.db")
    try:
        ingest(older, tmp_path / "projects")
        older.execute(  # an archive from before the meta.json was read: the disk's is read
            "DELETE FROM entries WHERE source_file_id = (SELECT id FROM source_files WHERE path = ?)", (meta,)
        )
        older.execute("DELETE FROM source_files WHERE path = ?", (meta,))
        rebuild_derived(older)
        assert session(older, sid)["kind"] == "fork"
    finally:
        older.close()
    shutil.rmtree(tmp_path / "projects")  # Claude Code deleted the session after 30 days
    rebuild_derived(conn)
    assert {k: session(conn, sid)[k] for k in facts} == read_then
