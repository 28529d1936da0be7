"""The read API: one session type for the CLI and the TUI, one tool-call type, and one test of
what a subagent is, whichever reader asks."""

from __future__ import annotations

import sqlite3
from dataclasses import fields

import pytest
from threadloom.core.read import browse, query
from threadloom.core.read.search import find_sessions, search
from threadloom.core.store import rows

from tests.builders.claude import Transcript, tool_use
from tests.support import ingest

MAIN = "b0000000-0000-4000-8000-00000000b001"
UNTITLED = "b0000000-0000-4000-8000-00000000b002"
FORK = "b0000000-0000-4000-8000-00000000b003"
AGENT = "0ddba11"


@pytest.fixture
def archive(conn, tmp_path):
    root = tmp_path / "projects"
    t = Transcript(root / "-srv-api" / f"{MAIN}.jsonl", MAIN, cwd="/srv/api")
    t.add({"type": "summary", "summary": "Find the log callers", "leafUuid": "x"}, chain=False)
    t.user("Who calls the logging helper?")
    t.assistant(
        "Asking a subagent.",
        tools=[tool_use("tu_1", "Task", description="find callers", prompt="find log callers")],
    )
    t.tool_result("tu_1", "3 callers", tool_use_result={"agentId": AGENT})
    t.assistant("Three callers.", tools=[tool_use("tu_2", "Bash", command="grep -rn log_event")])
    t.tool_result("tu_2", "a.py\nb.py\nc.py")
    t.write()
    sub = Transcript(
        root / "-srv-api" / f"agent-{AGENT}.jsonl", MAIN, cwd="/srv/api", isSidechain=True, agentId=AGENT
    )
    sub.user("find log callers", parent=False)
    sub.assistant("found three callers of log_event")
    sub.write()
    u = Transcript(root / "-srv-api" / f"{UNTITLED}.jsonl", UNTITLED, cwd="/srv/api")
    u.user("Rename the logging helper")
    u.assistant("Renamed to log_event.")
    u.write()
    f = Transcript(root / "-srv-api" / f"{FORK}.jsonl", FORK, cwd="/srv/api", forkedFrom={"sessionId": MAIN})
    f.user("Continue from the callers: rename log_event")
    f.assistant("Renamed log_event everywhere.")
    f.write()
    ingest(conn, root)
    return conn


def _subagent_id(conn: sqlite3.Connection) -> str:
    return rows.value(
        conn, "SELECT id FROM agent_sessions WHERE parent_session_id = ? AND kind = 'subagent'", (MAIN,)
    )


# ---------------------------------------------------------------------------- one session type


def test_the_cli_and_the_tree_read_one_session_type(archive) -> None:
    listed = {s.id: s for s in query.list_sessions(archive)}
    node = browse.get_node(archive, MAIN)
    assert type(node) is type(listed[MAIN]) is query.SessionSummary is browse.SessionSummary
    for name in ("id", "agent", "project", "project_path", "started_at", "ended_at", "message_count"):
        assert getattr(node, name) == getattr(listed[MAIN], name), name
    assert node.tokens == node.total_tokens == listed[MAIN].total_tokens > 0
    # below it in the tree: its subagent and its fork; the CLI's queries do not count them
    assert node.child_count == 2 and node.has_children and listed[MAIN].child_count == 0
    # a session without a title: none for the CLI; the tree's row shows its first prompt, on one line
    archive.execute(
        "UPDATE agent_sessions SET title = NULL, first_prompt = ? WHERE id = ?",
        ("  Rename   the\nlogging helper  ", UNTITLED),
    )
    assert query.get_session(archive, UNTITLED).title is None
    assert browse.get_node(archive, UNTITLED).title == "Rename the logging helper"


def test_sessions_json_keeps_its_fields_and_their_order(archive) -> None:
    data = query.get_session(archive, MAIN).as_dict()
    assert list(data) == [
        "id",
        "agent",
        "project",
        "project_path",
        "title",
        "started_at",
        "ended_at",
        "message_count",
        "is_subagent",
        "parent_session_id",
        "model",
        "input_tokens",
        "output_tokens",
        "cache_creation_tokens",
        "cache_read_tokens",
        "kind",
        "agent_type",
        "task_description",
        "task_status",
        "tool_call_id",
        "is_warmup",
        "turn_count",
        "tool_call_count",
        "branch_count",
        "compaction_count",
        "git_branch",
        "forked_from_session_id",
        "cost_usd",  # new fields come last: a reader of the earlier ones is not disturbed
        "unpriced_messages",
        "first_prompt",
        "file_path",
        "duration_ms",
    ]
    assert data["is_subagent"] is False and data["is_warmup"] is False
    assert isinstance(data["cost_usd"], float) and data["cost_usd"] > 0 and data["unpriced_messages"] == 0


def test_the_cli_and_the_viewer_read_one_tool_call_type(archive) -> None:
    shown = [c for m in query.messages(archive, MAIN) for c in m.tool_calls]
    paged = [c for m in browse.message_page(archive, MAIN, 0, 99) for c in m.tool_calls]
    assert [type(c) for c in shown + paged] == [query.ToolCall] * 4 and browse.ToolCall is query.ToolCall
    assert shown == paged
    assert [(c.name, c.status, c.entry_id is not None) for c in shown] == [
        ("Task", "completed", True),
        ("Bash", "completed", True),
    ]
    assert {f.name for f in fields(query.ToolCall)} >= {"result_entry_id", "entry_id"}


# ---------------------------------------------------------------------------- one subagent test


def _everyone_says_subagent(conn: sqlite3.Connection, sid: str) -> set[bool]:
    """Whether `sid` is a subagent, as each reader decides it."""
    said = {
        query.get_session(conn, sid).is_subagent,
        browse.get_node(conn, sid).is_subagent,
        next(t for t in browse.jump_targets(conn) if t.id == sid).is_subagent,
        sid not in {s.id for s in query.list_sessions(conn, include_subagents=False)},
        sid not in {s.id for p in browse.list_projects(conn) for s in browse.project_sessions(conn, p.path)},
    }
    return said


def test_a_subagent_is_one_everywhere(archive) -> None:
    sub = _subagent_id(archive)
    assert _everyone_says_subagent(archive, sub) == {True}
    assert _everyone_says_subagent(archive, MAIN) == {False}
    assert [p.subagent_count for p in browse.list_projects(archive)] == [1]


def test_a_fork_names_its_source_as_parent_and_is_no_subagent(archive) -> None:
    fork = query.get_session(archive, FORK)
    assert (fork.kind, fork.parent_session_id) == ("fork", MAIN)
    assert _everyone_says_subagent(archive, FORK) == {False}


def test_a_subagent_whose_parent_was_never_found_is_still_one(archive) -> None:
    sub = _subagent_id(archive)
    archive.execute("UPDATE agent_sessions SET parent_session_id = NULL WHERE id = ?", (sub,))
    assert _everyone_says_subagent(archive, sub) == {True}
    # the palette and the tree name it by its task, as they name every subagent
    assert browse.get_node(archive, sub).task_description == "find callers"
    assert next(m for m in find_sessions(archive, sub) if m.session_id == sub).title == "find callers"
    # and search takes it for one: in:main leaves it out, as it leaves out every subagent
    assert sub not in {h.session_id for h in search(archive, "callers in:main").hits}
    assert sub in {h.session_id for h in search(archive, "callers").hits}


def test_the_tree_reads_the_start_of_each_first_prompt_and_every_session_its_file(archive) -> None:
    """The list's filter matches a titled session's first prompt too: the tree reads its first
    300 characters (not all 2,000 of thousands of sessions); `sessions` has it whole."""
    prompt = "Rename the logging helper " + "x" * 600 + " tail"
    archive.execute("UPDATE agent_sessions SET first_prompt = ? WHERE id = ?", (prompt, UNTITLED))
    listed = {s.id: s for s in browse.project_sessions(archive, "/srv/api")}
    assert (
        listed[UNTITLED].first_prompt == prompt[: browse.TREE_PROMPT_CHARS]
        and browse.TREE_PROMPT_CHARS == 300
    )
    assert query.get_session(archive, UNTITLED).first_prompt == prompt
    assert query.session_matches(listed[UNTITLED], "logging helper")
    for s in listed.values():
        assert s.file_path is not None and s.file_path.endswith(f"{s.id}.jsonl"), s.id


def test_hooks_come_with_the_message_they_followed(conn, tmp_path):
    """Hook records are no messages (no place in the order): each is given to the message recorded
    before it, the session's first ones to its first message (marked `before`); a page of the
    viewer finds those after its last message too; a stop_hook_summary record tells its own."""
    from tests.builders.claude import hook, markup_session

    t = markup_session(tmp_path)
    ingest(conn, tmp_path / "projects")
    every = query.messages(conn, t.session_id)
    with_hooks = {m.seq: [(h.kind, h.event, h.before) for h in m.hooks] for m in every if m.hooks}
    caveat = every[0].seq
    prompt = next(m.seq for m in every if m.content and "tokenizer" in m.content)
    todo_result = next(m.seq for m in every if m.role == "user" and not m.content and m.seq > prompt + 5)
    assert with_hooks == {
        caveat: [("hook_success", "SessionStart", True)],
        prompt: [("hook_success", "UserPromptSubmit", False)],
        todo_result: [("hook_non_blocking_error", "PostToolUse", False)],
        every[-4].seq: [
            ("hook_blocking_error", "PreToolUse", False)
        ],  # after "Fix it and run the tests again."
        every[-1].seq: [("stop_hook_summary", "Stop", False)],
    }
    # a page that ends on the message a hook follows still finds it; one starting later does not
    page = browse.message_page(conn, t.session_id, prompt - 1, prompt)
    assert [len(m.hooks) for m in page] == [0, 1]
    later = browse.message_page(conn, t.session_id, prompt + 1, prompt + 2)
    assert not any(m.hooks for m in later)
    (run,) = page[1].hooks
    assert (run.command, run.exit_code, run.duration_ms, run.tool_use_id) == (
        "./scripts/notify.sh busy",
        0,
        106,
        None,
    )

    # a hook seen starting (progress) and ending (attachment) is shown once, by how it ended
    other = "eeeeeeee-1111-4222-8333-00000000c0df"
    u = Transcript(tmp_path / "more" / "-srv-x" / f"{other}.jsonl", other, cwd="/srv/x")
    u.add(
        {
            "type": "progress",
            "toolUseID": "start-1",
            "data": {
                "type": "hook_progress",
                "hookEvent": "SessionStart",
                "hookName": "SessionStart:startup",
                "command": "x",
            },
        }
    )
    hook(u, "hook_success", "SessionStart", toolUseID="start-1", command="x", exitCode=0, durationMs=5)
    u.add(
        {
            "type": "progress",
            "toolUseID": "start-2",
            "data": {"type": "hook_progress", "hookEvent": "SessionStart", "command": "y"},
        }
    )
    u.user("hello")
    u.assistant("hi")
    u.write()
    ingest(conn, tmp_path / "more")
    first = query.messages(conn, other)[0]
    assert [(h.kind, h.command) for h in first.hooks] == [("hook_success", "x"), ("hook_progress", "y")]


# ---------------------------------------------------------------------------- one title


def _names(conn: sqlite3.Connection, sid: str, tmp_path) -> dict[str, str]:
    """What names session `sid` in each place a session is named."""
    import contextlib
    import io

    from threadloom.core import cli
    from threadloom.core.actions.export import export_session
    from threadloom.core.cli.sessions import _listed_title as listed_title
    from threadloom.core.insight.stats import report as stats_report
    from threadloom.core.read.search import search as run_search

    def printed(*argv: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.main(list(argv)) == 0
        return out.getvalue()

    db = str(conn.execute("PRAGMA database_list").fetchone()[2])
    session = query.get_session(conn, sid)
    hits = run_search(conn, f"session:{sid[:8]} in:subagents in:tools", limit=50).hits
    listed = {s.id: s for s in query.list_sessions(conn)}
    # the stats by session name main sessions (a subagent's sums are its session's)
    by_session = {r.key: r.label for r in stats_report(conn, "session")}
    return {
        **({"stats by session": by_session[sid]} if sid in by_session else {}),
        "display_title": query.display_title(session),
        "tree": browse.get_node(conn, sid).title,
        "palette": next(t for t in browse.jump_targets(conn) if t.id == sid).title,
        "jump engine": next(m for m in find_sessions(conn, sid) if m.session_id == sid).title,
        "search hit": next(h.session_title for h in hits if h.session_id == sid),
        "sessions": listed_title(listed[sid], 1).removeprefix("↳ "),
        "show": printed("show", sid, "--db", db, "--no-subagents").splitlines()[0].rsplit("  ", 1)[0],
        "export": export_session(conn, session, "md").data.decode().splitlines()[0].removeprefix("# "),
    }


def test_a_session_has_one_title_everywhere(archive, tmp_path) -> None:
    """A subagent is named by its task, a session without a stored title by its first prompt,
    whoever names it: the tree, the palettes, search hits, `sessions`, `show` and exports used to
    choose among title, task and prompt each in their own order."""
    sub = _subagent_id(archive)
    archive.execute("UPDATE agent_sessions SET title = ? WHERE id = ?", ("find log callers", sub))
    archive.execute("UPDATE agent_sessions SET title = NULL WHERE id = ?", (UNTITLED,))
    for sid, name in ((sub, "find callers"), (UNTITLED, "Rename the logging helper")):
        names = _names(archive, sid, tmp_path)
        assert set(names.values()) == {name}, names
