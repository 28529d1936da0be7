"""The stats' sums kept by the ledger: equal to sums over the raw rows after a first ingest, an
append and a rebuild; an unknown cost stays unknown; changed lines counted from each kind of edit."""

from __future__ import annotations

import json
import sqlite3

import pytest
from threadloom.core.ingest.ledger import rebuild_derived
from threadloom.core.insight import stats
from threadloom.core.store.sql import set_meta

from tests.builders.claude import Transcript, tool_use
from tests.support import ingest

SID = "57a75111-1111-4222-8333-000000000a01"
SONNET = "claude-sonnet-4-5-20250929"
USAGE = {
    "input_tokens": 12,
    "output_tokens": 700,
    "cache_creation_input_tokens": 3000,
    "cache_read_input_tokens": 40000,
}

ROLLUP_SUMS = (
    "SELECT CAST(total(input_tokens) AS INTEGER), CAST(total(output_tokens) AS INTEGER), "
    "CAST(total(cache_creation_tokens) AS INTEGER), CAST(total(cache_read_tokens) AS INTEGER), sum(cost_usd), "
    "CAST(total(unpriced_messages) AS INTEGER), CAST(total(api_messages) AS INTEGER) FROM stats_rollup"
)
RAW_SUMS = (
    "SELECT CAST(total(input_tokens) AS INTEGER), CAST(total(output_tokens) AS INTEGER), "
    "CAST(total(cache_creation_tokens) AS INTEGER), CAST(total(cache_read_tokens) AS INTEGER), sum(cost_usd), "
    "count(*) FILTER (WHERE cost_usd IS NULL), count(*) FROM agent_usage"
)


def edit_session(root) -> Transcript:
    """A session with an Edit, a MultiEdit, a Write of a new file, a failed Edit and an unknown model."""
    t = Transcript(root / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID)
    t.user("change the files")
    t.assistant(
        "editing",
        model=SONNET,
        usage=USAGE,
        tools=[
            tool_use(
                "e1",
                "Edit",
                file_path="/home/dev/app/a.py",
                old_string="x = 1\ny = 2",
                new_string="x = 10\ny = 2\nz = 3",
            )
        ],
    )
    t.tool_result("e1", "ok")
    t.assistant(
        tools=[
            tool_use(
                "m1",
                "MultiEdit",
                file_path="/home/dev/app/b.py",
                edits=[{"old_string": "a", "new_string": "b"}, {"old_string": "c\nd", "new_string": ""}],
            )
        ],
        model=SONNET,
        usage=USAGE,
    )
    t.tool_result("m1", "ok")
    t.assistant(
        tools=[tool_use("w1", "Write", file_path="/home/dev/app/new.txt", content="1\n2\n3\n4\n")],
        model=SONNET,
    )
    t.tool_result("w1", "File created")
    t.assistant(
        tools=[tool_use("f1", "Edit", file_path="/home/dev/app/a.py", old_string="q", new_string="r")]
    )
    t.tool_result("f1", "String to replace not found", is_error=True)
    t.assistant("done", model="my-local-llama", usage=USAGE)
    return t


def assert_rollups_match(conn: sqlite3.Connection) -> None:
    assert conn.execute("SELECT count(*) FROM stats_pending").fetchone()[0] == 0
    rolled, raw = conn.execute(ROLLUP_SUMS).fetchone(), conn.execute(RAW_SUMS).fetchone()
    assert rolled[:4] == raw[:4] and rolled[5:] == raw[5:]
    assert rolled[4] == pytest.approx(raw[4])
    by_session = dict(conn.execute("SELECT session_id, sum(messages) FROM stats_rollup GROUP BY session_id"))
    assert by_session == dict(
        conn.execute("SELECT id, message_count FROM agent_sessions WHERE message_count > 0")
    )
    calls = conn.execute("SELECT sum(tool_calls), sum(failed_tool_calls) FROM stats_rollup").fetchone()
    assert (
        calls
        == conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE status = 'failed') FROM agent_tool_calls"
        ).fetchone()
    )
    lines = conn.execute("SELECT sum(lines_added), sum(lines_removed) FROM stats_rollup").fetchone()
    assert (
        lines
        == conn.execute("SELECT sum(lines_added), sum(lines_removed) FROM agent_file_changes").fetchone()
    )


def test_rollups_equal_the_raw_sums_after_ingest_append_and_rebuild(conn, tmp_path):
    t = edit_session(tmp_path)
    t.write()
    ingest(conn, tmp_path / "projects")
    assert_rollups_match(conn)
    before = conn.execute(ROLLUP_SUMS).fetchone()
    # an append: a new turn with a priced message and a failing Bash call
    t.user("and run it")
    t.assistant(tools=[tool_use("b1", "Bash", command="false")], model=SONNET, usage=USAGE, msg_id="msg_more")
    t.tool_result("b1", "exit 1", is_error=True)
    t.write()
    ingest(conn, tmp_path / "projects")
    assert_rollups_match(conn)
    after = conn.execute(ROLLUP_SUMS).fetchone()
    assert after[6] == before[6] + 1 and after[0] == before[0] + 12
    assert conn.execute("SELECT sum(failed_tool_calls) FROM stats_rollup").fetchone()[0] == 2
    kept = conn.execute("SELECT * FROM stats_rollup ORDER BY bucket, session_id, model").fetchall()
    rebuild_derived(conn)
    from threadloom.core.insight.cost import price_pending

    price_pending(conn)
    stats.refresh_pending(conn)
    assert_rollups_match(conn)
    again = conn.execute("SELECT * FROM stats_rollup ORDER BY bucket, session_id, model").fetchall()
    assert [r[1:] for r in again] == [r[1:] for r in kept]


def test_an_unknown_cost_stays_unknown_never_zero(conn, tmp_path):
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID)
    t.user("hello")
    t.assistant("hi", model="my-local-llama", usage=USAGE)
    t.write()
    ingest(conn, tmp_path / "projects")
    rows = stats.report(conn, "model")
    assert [(r.period, r.cost_usd, r.unpriced_messages, r.cost_text) for r in rows] == [
        ("my-local-llama", None, 1, "?")
    ]
    (everything,) = stats.report(conn, "total")
    assert (everything.cost_usd, everything.unpriced_messages, everything.sessions) == (None, 1, 1)


def test_a_new_price_table_reprices_the_rollups(conn, tmp_path):
    edit_session(tmp_path).write()
    ingest(conn, tmp_path / "projects")
    conn.execute("UPDATE stats_rollup SET cost_usd = 999")  # what the old prices gave
    set_meta(conn, "prices_version", "older data")
    ingest(conn, tmp_path / "projects")
    assert_rollups_match(conn)
    assert conn.execute("SELECT max(cost_usd) FROM stats_rollup").fetchone()[0] < 999


def test_lines_added_and_removed_by_claude_edits(conn, tmp_path):
    edit_session(tmp_path).write()
    ingest(conn, tmp_path / "projects")
    changes = {c.path: (c.lines_added, c.lines_removed, c.calls) for c in stats.session_changes(conn, SID)}
    assert changes == {
        "/home/dev/app/a.py": (2, 1, ["e1"]),  # x = 1 → x = 10, z = 3 added; the failed f1 not counted
        "/home/dev/app/new.txt": (4, 0, ["w1"]),
        "/home/dev/app/b.py": (1, 3, ["m1"]),
    }
    first_turn = conn.execute("SELECT turn_id FROM agent_tool_calls WHERE id = 'e1'").fetchone()[0]
    assert {c.path for c in stats.session_changes(conn, SID, first_turn)} == set(changes)


def test_a_write_over_a_file_counts_its_structured_patch(conn, tmp_path):
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID)
    t.user("rewrite it")
    t.assistant(tools=[tool_use("w2", "Write", file_path="/home/dev/app/c.py", content="a\nB\nc\n")])
    patch = [{"oldStart": 1, "oldLines": 3, "newStart": 1, "newLines": 3, "lines": [" a", "-b", "+B", " c"]}]
    t.tool_result("w2", "updated", tool_use_result={"type": "update", "structuredPatch": patch})
    t.write()
    ingest(conn, tmp_path / "projects")
    assert [(c.path, c.lines_added, c.lines_removed) for c in stats.session_changes(conn, SID)] == [
        ("/home/dev/app/c.py", 1, 1)
    ]


def test_a_write_over_a_file_written_before_counts_its_diff(conn, tmp_path):
    """A subagent's Write records no old text: a second Write of the file counted every line as
    added (+140 then +126, never a line removed); it is the diff against what the first one wrote,
    and an Edit between them, or an append that brings the second Write, is carried along."""
    path = tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl"
    t = Transcript(path, SID)
    t.user("write the notes")
    t.assistant(tools=[tool_use("w1", "Write", file_path="/home/dev/app/n.md", content="a\nb\nc\nd\n")])
    t.tool_result("w1", "File created successfully at: /home/dev/app/n.md")
    t.assistant(
        tools=[tool_use("e1", "Edit", file_path="/home/dev/app/n.md", old_string="b", new_string="B")]
    )
    t.tool_result("e1", "The file /home/dev/app/n.md has been updated successfully.")
    t.assistant(tools=[tool_use("w2", "Write", file_path="/home/dev/app/n.md", content="a\nB\nc\nD\n")])
    t.tool_result("w2", "The file /home/dev/app/n.md has been updated successfully.")
    t.write()
    ingest(conn, tmp_path / "projects")
    counts = {c.call_id: (c.lines_added, c.lines_removed) for c in stats.change_calls(conn, SID)}
    assert counts == {"w1": (4, 0), "e1": (1, 1), "w2": (1, 1)}
    t.assistant(tools=[tool_use("w3", "Write", file_path="/home/dev/app/n.md", content="a\nB\nc\n")])
    t.tool_result("w3", "The file /home/dev/app/n.md has been updated successfully.")
    t.assistant(tools=[tool_use("w4", "Write", file_path="/home/dev/app/other.md", content="x\n")])
    t.tool_result("w4", "The file /home/dev/app/other.md has been updated successfully.")
    t.write()
    ingest(conn, tmp_path / "projects")  # an append: w3 reads what the calls counted before left
    counts = {c.call_id: (c.lines_added, c.lines_removed) for c in stats.change_calls(conn, SID)}
    assert counts["w3"] == (0, 1)
    assert counts["w4"] == (1, 0)  # nothing known before it: every line added, as before
    assert_rollups_match(conn)


def codex_rollout(root, patch: str, status: str = "completed"):
    folder = root / "sessions" / "2026" / "03" / "01"
    folder.mkdir(parents=True)
    path = folder / "rollout-2026-03-01T10-00-00-0199a000-0000-7000-8000-00000000c0de.jsonl"
    lines = [
        {
            "timestamp": "2026-03-01T10:00:00.000Z",
            "type": "session_meta",
            "payload": {
                "id": "0199a000-0000-7000-8000-00000000c0de",
                "timestamp": "2026-03-01T10:00:00.000Z",
                "cwd": "/home/dev/api",
                "originator": "codex_cli_rs",
                "cli_version": "0.50.0",
            },
        },
        {
            "timestamp": "2026-03-01T10:00:01.000Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "patch it"}],
            },
        },
        {
            "timestamp": "2026-03-01T10:00:02.000Z",
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call",
                "status": status,
                "call_id": "call_p1",
                "name": "apply_patch",
                "input": patch,
            },
        },
        {
            "timestamp": "2026-03-01T10:00:03.000Z",
            "type": "response_item",
            "payload": {"type": "custom_tool_call_output", "call_id": "call_p1", "output": "Success."},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


PATCH = """*** Begin Patch
*** Update File: src/app.py
@@ def main():
-    print("hi")
+    print("hello")
+    return 0
*** Add File: src/new.py
+one
+two
*** End Patch"""


def test_lines_of_a_codex_apply_patch(conn, tmp_path):
    codex_rollout(tmp_path, PATCH)
    ingest(conn, tmp_path / "sessions")
    sid = conn.execute("SELECT id FROM agent_sessions").fetchone()[0]
    assert [(c.path, c.lines_added, c.lines_removed) for c in stats.session_changes(conn, sid)] == [
        ("src/app.py", 2, 1),
        ("src/new.py", 2, 0),
    ]
    row = stats.report(conn, "agent")[0]
    assert (row.period, row.lines_added, row.lines_removed, row.tool_calls) == ("codex", 4, 1, 1)


AIDER = """# aider chat started at 2026-03-01 10:00:00

#### make the greeting friendlier

src/greet.py
```python
<<<<<<< SEARCH
def greet():
    return "hi"
=======
def greet():
    return "hello, friend"
>>>>>>> REPLACE
```

notes.md
```
<<<<<<< SEARCH
=======
# Notes
done
>>>>>>> REPLACE
```

> Applied edit to src/greet.py
"""


def test_lines_of_aider_edit_blocks_it_applied(conn, tmp_path):
    home = tmp_path / "proj"
    home.mkdir()
    (home / ".aider.chat.history.md").write_text(AIDER)
    ingest(conn, home / ".aider.chat.history.md")
    sid = conn.execute("SELECT id FROM agent_sessions WHERE source = 'aider'").fetchone()[0]
    # notes.md was never applied (no "Applied edit to" line): it changed nothing
    assert [(c.path, c.lines_added, c.lines_removed) for c in stats.session_changes(conn, sid)] == [
        ("src/greet.py", 1, 1)
    ]
    assert stats.report(conn, "session")[0].lines_added == 1


def test_every_message_is_on_a_day_and_a_session_without_any_time_is_undated(conn, tmp_path):
    """Aider writes a time only in each session's header: its messages, token lines and edits count
    on that day, not nowhere. A log without any time is the last row, "undated", so the days add up
    to the total; a range (--since) leaves it out."""
    from tests.builders.aider import SESSION_1, SESSION_2, history

    history(tmp_path / "proj", SESSION_1 + SESSION_2)
    t = Transcript(
        tmp_path / "projects" / "-srv" / f"{'e' * 8}-0000-4000-8000-000000000001.jsonl",
        "e" * 8 + "-0000-4000-8000-000000000001",
    )
    t.user("when was this?")
    t.assistant("no one wrote it down", usage={"input_tokens": 7, "output_tokens": 3})
    for line in t.lines:
        del line["timestamp"]
    t.write()
    ingest(conn, tmp_path / "proj", tmp_path / "projects")
    days = stats.report(conn, "day")
    assert [d.period for d in days] == ["2025-12-03", "2025-12-04", stats.UNDATED]
    assert [(d.input_tokens, d.output_tokens, d.lines_added) for d in days] == [
        (800, 104, 1),
        (234, 12, 0),
        (7, 3, 0),
    ]
    assert days[-1].label == "(no date)" and days[-1].messages == 2
    (total,) = stats.report(conn, "total")
    for name in ("messages", "input_tokens", "output_tokens", "tool_calls", "lines_added"):
        assert sum(getattr(d, name) for d in days) == getattr(total, name), name
    since = stats.parse_day("2025-12-01")
    assert [d.period for d in stats.report(conn, "month", since=since)] == ["2025-12"]
    assert [d.period for d in stats.report(conn, "month")] == ["2025-12", stats.UNDATED]


def test_rollups_summed_by_an_older_stats_version_are_summed_again_once(conn, tmp_path):
    from threadloom.core.store.sql import get_meta

    t = edit_session(tmp_path)
    t.write()
    ingest(conn, tmp_path / "projects")
    conn.execute("DELETE FROM stats_rollup")  # as an older version left them: say, nothing
    set_meta(conn, stats.STATS_VERSION_KEY, "1")
    assert ingest(conn, tmp_path / "projects").files_read == 0
    assert_rollups_match(conn)
    assert get_meta(conn, stats.STATS_VERSION_KEY) == stats.STATS_VERSION
    assert stats.refresh_pending(conn) == 0  # once


def test_a_schema_upgrade_rebuilds_the_rollups(tmp_path):
    from threadloom.core.ingest.pipeline import rebuild_pending
    from threadloom.core.store import db

    edit_session(tmp_path).write()
    path = tmp_path / "old.db"
    conn = db.connect(path)
    ingest(conn, tmp_path / "projects")
    before = conn.execute(ROLLUP_SUMS).fetchone()
    conn.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION - 1}")
    conn.close()
    conn = db.connect(path)  # the upgrade empties the derived tables; it never replays
    assert db.rebuild_due(conn) == db.SCHEMA_VERSION - 1
    assert conn.execute("SELECT count(*) FROM stats_rollup").fetchone()[0] == 0
    assert rebuild_pending(conn)
    assert_rollups_match(conn)
    assert conn.execute(ROLLUP_SUMS).fetchone()[:4] == before[:4]
    assert len(stats.session_changes(conn, SID)) == 3
    conn.close()


def test_a_subagent_in_a_worktree_of_its_own_counts_in_its_sessions_project(conn, tmp_path):
    """Claude Code runs some subagents in a worktree (`.claude/worktrees/agent-…`), their cwd: they
    worked for their main session's project, where stats by project and the project list count
    them, alike; no project named after the worktree appears."""
    from threadloom.core.read import browse

    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{SID}.jsonl", SID, cwd="/srv/app")
    t.user("split the work")
    t.assistant(None, tools=[tool_use("task1", "Task", description="refactor", prompt="refactor it")])
    t.tool_result("task1", "done", tool_use_result={"agentId": "a4ca7529"})
    t.assistant("Done.", model=SONNET, usage=USAGE)
    t.write()
    sub = Transcript(
        tmp_path / "projects" / "-srv-app" / SID / "subagents" / "agent-a4ca7529.jsonl",
        SID,
        cwd="/srv/app/.claude/worktrees/agent-a4ca7529",
        isSidechain=True,
        agentId="a4ca7529",
    )
    sub.user("refactor it", parent=False)
    sub.assistant("refactored", model=SONNET, usage=USAGE, msg_id="msg_sub_1")
    sub.write()
    ingest(conn, tmp_path / "projects")
    assert {s for (s,) in conn.execute("SELECT project_path FROM agent_sessions")} == {
        "/srv/app",
        "/srv/app/.claude/worktrees/agent-a4ca7529",
    }
    (project,) = stats.report(conn, "project")
    assert project.key == "/srv/app" and project.api_messages == 3  # the subagent's among them
    (listed,) = browse.list_projects(conn)
    assert listed.path == "/srv/app" and listed.cost_usd == pytest.approx(project.cost_usd)
    assert listed.cost_usd == pytest.approx(
        sum(c for (c,) in conn.execute("SELECT cost_usd FROM agent_usage"))
    )


def test_stats_count_the_sessions_the_lists_show(conn, tmp_path):
    """Stats counted every root its rows named: a subagent whose session file was never read (a
    backup of its folder alone) was a session in stats and none in the project list, and the
    screens disagreed (22 sessions and 20 for one project). They count the sessions listed; the
    orphan's tokens and cost are counted all the same."""
    from threadloom.core.read import browse

    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{SID}.jsonl", SID, cwd="/srv/app")
    t.user("fix it")
    t.assistant("Done.", model=SONNET, usage=USAGE)
    t.write()
    orphan = "0fa0fa00-1111-4222-8333-000000000fa0"
    sub = Transcript(
        tmp_path / "projects" / "-srv-app" / orphan / "subagents" / "agent-b1.jsonl",
        orphan,
        cwd="/srv/app",
        isSidechain=True,
        agentId="b1",
    )
    sub.user("look around", parent=False)
    sub.assistant("looked", model=SONNET, usage=USAGE, msg_id="msg_orphan_1")
    sub.write()
    ingest(conn, tmp_path / "projects")
    (listed,) = browse.list_projects(conn)
    (project,) = stats.report(conn, "project")
    (total,) = stats.report(conn, "total")
    assert listed.session_count == project.sessions == total.sessions == 1
    assert project.api_messages == 2  # the orphan's reply among them


# ------------------------------------------------------------------ a fork's copies


FORKED = "57a75111-1111-4222-8333-000000000f0f"


def _day_sums(conn: sqlite3.Connection) -> dict[str, tuple[int, int, int, int, int]]:
    return {
        r.period: (r.messages, r.tool_calls, r.failed_tool_calls, r.lines_added, r.lines_removed)
        for r in stats.report(conn, "day")
    }


def _day_tokens(conn: sqlite3.Connection) -> dict[str, tuple[int, int, int, int]]:
    return {
        r.period: (r.input_tokens, r.output_tokens, r.cache_creation_tokens, r.cache_read_tokens)
        for r in stats.report(conn, "day")
    }


def test_a_fork_counts_only_what_it_added_not_the_records_it_copied(conn, tmp_path) -> None:
    """A fork holds a copy of its source's conversation up to the point: its messages, tool calls,
    failures and edits were counted again, on the source's own dates."""
    from threadloom.core.actions.fork import plan_fork, write_fork

    t = Transcript(
        tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID, timestamp="2026-03-01T10:00:00.000Z"
    )
    t.user("fix the tests")
    t.assistant("running", model=SONNET, tools=[tool_use("b1", "Bash", command="pytest")])
    t.tool_result("b1", "2 failed", is_error=True)
    t.assistant(
        "editing",
        model=SONNET,
        tools=[tool_use("e1", "Edit", file_path="/home/dev/app/a.py", old_string="x", new_string="y\nz")],
    )
    t.tool_result("e1", "ok")
    last = t.assistant("fixed", model=SONNET)
    t.write()
    ingest(conn, tmp_path / "projects")
    before = _day_sums(conn)
    assert before == {"2026-03-01": (6, 2, 1, 2, 1)}

    fork = write_fork(plan_fork(conn, last, new_session_id=FORKED))
    resumed = Transcript(fork, FORKED, timestamp="2026-03-05T09:00:00.000Z")  # Claude Code goes on in it
    resumed.last = json.loads(fork.read_text().splitlines()[-2])["uuid"]
    resumed.user("now the docs")
    resumed.assistant("editing", model=SONNET, tools=[tool_use("e2", "Edit", file_path="/home/dev/app/README", old_string="a", new_string="b")])  # fmt: skip
    resumed.tool_result("e2", "ok")
    with fork.open("a") as f:
        f.write("".join(json.dumps(line) + "\n" for line in resumed.lines))
    ingest(conn, fork)
    assert conn.execute("SELECT kind FROM agent_sessions WHERE id = ?", (FORKED,)).fetchone()[0] == "fork"
    assert conn.execute("SELECT message_count FROM agent_sessions WHERE id = ?", (FORKED,)).fetchone()[0] == 9
    # the source's day unchanged; the fork's day has what the fork itself added
    assert _day_sums(conn) == {"2026-03-01": (6, 2, 1, 2, 1), "2026-03-05": (3, 1, 0, 1, 1)}
    # an append to the fork is summed from where it lands, its copies still left out
    later = Transcript(fork, FORKED, timestamp="2026-03-06T09:00:00.000Z")
    later.last = resumed.last
    later.user("and the changelog")
    later.assistant("done", model=SONNET)
    with fork.open("a") as f:
        f.write("".join(json.dumps(line) + "\n" for line in later.lines))
    ingest(conn, fork)
    expected = {"2026-03-01": (6, 2, 1, 2, 1), "2026-03-05": (3, 1, 0, 1, 1), "2026-03-06": (2, 0, 0, 0, 0)}
    assert _day_sums(conn) == expected
    # and so after a rebuild of every sum, by session and by model too
    rebuild_derived(conn)
    stats.refresh_pending(conn)
    assert _day_sums(conn) == expected
    by_model = stats.report(conn, "model")
    assert [(r.period, r.messages, r.tool_calls) for r in by_model] == [(SONNET, 11, 3)]
    forked = next(r for r in stats.report(conn, "session") if r.key == FORKED)
    assert (forked.messages, forked.tool_calls, forked.lines_added) == (5, 1, 1)


def test_a_codex_fork_counts_only_what_it_added(conn, tmp_path, monkeypatch) -> None:
    """Codex copies its source's rollout into the fork in one burst, after the fork's own
    session_meta; threadloom's own Codex fork copies the lines as they were. Neither copy counts."""
    from threadloom.core.actions.fork import plan_fork, write_fork

    from tests.support import THREAD, Rollout, full_session, usage

    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    parent = full_session(home)
    parent.write()
    ingest(conn, home)
    alone = _day_sums(conn)
    alone_tokens = _day_tokens(conn)
    assert sum(sum(t) for t in alone_tokens.values()) > 0
    parent_messages = conn.execute(
        "SELECT message_count FROM agent_sessions WHERE id = ?", (THREAD,)
    ).fetchone()[0]
    parent_totals = tuple(
        conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?",
            (THREAD,),
        ).fetchone()
    )
    assert any(parent_totals)

    native = "019a0000-1111-7222-8333-aaaabbbb0001"
    fork = Rollout(home, native, day="2026/03/04")
    burst = "2026-03-04T08:00:00.000Z"
    fork.add("session_meta", {**parent.lines[0]["payload"], "id": native, "forked_from_id": THREAD}, ts=burst)
    for line in parent.lines:
        fork.add(line["type"], line["payload"], ts=burst)
    copied = len(fork.lines)
    fork.context()
    fork.prompt("try another way")
    fork.call("call_9", ["bash", "-lc", "make"], "boom", exit_code=2)
    fork.total = dict(parent.total)
    fork.tokens(usage(2000, 1500, 40))
    for n, line in enumerate(fork.lines[copied:]):  # its own lines, minutes after the copy
        line["timestamp"] = f"2026-03-04T08:05:{n:02d}.000Z"
    fork.write()
    ingest(conn, home)
    own = (
        conn.execute("SELECT message_count FROM agent_sessions WHERE id = ?", (native,)).fetchone()[0]
        - parent_messages
    )
    assert own > 0
    sums = _day_sums(conn)
    assert {d: v for d, v in sums.items() if d != "2026-03-04"} == alone  # the source's days unchanged
    assert sums["2026-03-04"][:3] == (own, 1, 1)
    # the source's token counts, copied with its lines, are its own: the fork's day has the fork's alone
    tokens = _day_tokens(conn)
    assert {d: v for d, v in tokens.items() if d != "2026-03-04"} == alone_tokens
    assert tokens["2026-03-04"] == (500, 40, 0, 1500)  # usage(2000 in, 1500 of them cached, 40 out)

    # threadloom's own fork: the source's lines up to the point, under a fresh session_meta
    point = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND content = 'Added the total.' LIMIT 1", (THREAD,)
    ).fetchone()[0]
    written = write_fork(plan_fork(conn, str(point)))
    ingest(conn, written)
    assert {d: v for d, v in _day_sums(conn).items() if d != "2026-03-04"} == alone
    # and the source's token counts its lines carry are not counted again (they were, on their days)
    assert {d: v for d, v in _day_tokens(conn).items() if d != "2026-03-04"} == alone_tokens
    # nor in the sessions' own totals (`sessions`, the list): each fork has what it added, the
    # source what it had alone
    totals = "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?"
    fork_id = conn.execute(
        "SELECT id FROM agent_sessions WHERE forked_from_session_id = ? AND id != ?", (THREAD, native)
    ).fetchone()[0]
    assert tuple(conn.execute(totals, (native,)).fetchone()) == (500, 40, 1500)
    assert tuple(conn.execute(totals, (fork_id,)).fetchone()) == (0, 0, 0)
    assert tuple(conn.execute(totals, (THREAD,)).fetchone()) == parent_totals


def test_projects_of_one_name_in_two_folders_are_told_apart(conn, tmp_path):
    """Stats by project listed "app" twice (S, then p) with nothing to tell which was which."""
    for n, cwd in enumerate(("/home/alice/work/app", "/home/bob/work/app", "/srv/api")):
        sid = f"57a75111-1111-4222-8333-000000000b0{n}"
        t = Transcript(tmp_path / "projects" / cwd.replace("/", "-") / f"{sid}.jsonl", sid, cwd=cwd)
        t.user("hello")
        t.assistant("Done.", model=SONNET, usage=USAGE, msg_id=f"msg_{n}")
        t.write()
    ingest(conn, tmp_path / "projects")
    labels = {row.key: row.label for row in stats.report(conn, "project")}
    assert labels == {
        "/home/alice/work/app": "app (alice/work)",
        "/home/bob/work/app": "app (bob/work)",
        "/srv/api": "api",
    }
