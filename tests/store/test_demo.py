"""The demo archive: deterministic, in Claude Code's format, and showing every feature once ingested."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from threadloom.core.adapters.claude_demo import write_demo_archive
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.store import db


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("demo")
    root = write_demo_archive(base / "archive")
    conn = db.connect(base / "demo.db")
    report = run_ingest(conn, [root], include_defaults=False)
    yield root, conn, report
    conn.close()


def test_demo_is_deterministic(tmp_path: Path) -> None:
    a = write_demo_archive(tmp_path / "a", long_turns=5)
    b = write_demo_archive(tmp_path / "b", long_turns=5)
    assert _digest(a) == _digest(b)


def test_demo_ingests_cleanly(demo_db) -> None:
    root, conn, report = demo_db
    assert report.errors == []
    assert report.files_read == len(list(root.rglob("*.jsonl"))) + len(list(root.rglob("*.meta.json")))
    projects = {r[0] for r in conn.execute("SELECT DISTINCT project_path FROM agent_sessions")}
    assert len(projects) == 4
    mains = conn.execute("SELECT count(*) FROM agent_sessions WHERE is_subagent = 0").fetchone()[0]
    assert mains == 7


def test_demo_shows_claude_codes_own_shapes(demo_db) -> None:
    """One demo session holds Claude Code 2.1's own shapes, for the viewer's cards and the README's
    picture: hooks, an IDE selection, TodoWrite updates, a `!` command with stdout and stderr, a
    slash command with its output, replies opening on empty thinking blocks."""
    _, conn, _ = demo_db
    from threadloom.core.base.markup import parse
    from threadloom.core.read.query import messages

    sid = conn.execute("SELECT id FROM agent_sessions WHERE title LIKE 'Show the git branch%'").fetchone()[0]
    shown = messages(conn, sid)
    kinds = {type(p).__name__ for m in shown if m.role == "user" for p in parse(m.content)}
    assert {"Selection", "Shell", "ShellOutput", "Command", "CommandOutput", "Typed"} <= kinds
    assert {h.kind for m in shown for h in m.hooks} == {
        "hook_success",
        "hook_non_blocking_error",
        "stop_hook_summary",
    }
    assert [c.name for m in shown for c in m.tool_calls].count("TodoWrite") == 2


def test_demo_has_nested_subagents(demo_db) -> None:
    _, conn, _ = demo_db
    rows = conn.execute(
        "SELECT id, parent_session_id, task_description, agent_type, task_status FROM agent_sessions "
        "WHERE is_subagent = 1 AND is_warmup = 0"
    ).fetchall()
    assert len(rows) == 3
    by_id = {r[0]: r for r in rows}
    nested = [r for r in rows if r[1] in by_id]
    assert len(nested) == 1
    assert nested[0][2] == "Check how Stripe webhooks apply tax"
    assert by_id[nested[0][1]][3] == "Explore"
    assert all(r[4] == "completed" for r in rows)
    # every spawning call points at its subagent
    linked = conn.execute(
        "SELECT count(*) FROM agent_tool_calls WHERE tool_name = 'Task' AND child_session_id IS NOT NULL"
    ).fetchone()[0]
    assert linked == 3


def test_demo_has_warmup_branch_and_compaction(demo_db) -> None:
    _, conn, _ = demo_db
    assert conn.execute("SELECT count(*) FROM agent_sessions WHERE is_warmup = 1").fetchone()[0] == 1
    branched = conn.execute("SELECT title FROM agent_sessions WHERE branch_count > 0").fetchall()
    assert [r[0] for r in branched] == [
        "The checkout tests started failing after yesterday's tax change. Find out why and fix it."
    ]
    long_session = conn.execute(
        "SELECT message_count, compaction_count FROM agent_sessions ORDER BY message_count DESC LIMIT 1"
    ).fetchone()
    assert long_session[0] > 4000
    assert long_session[1] == 2
    summaries = conn.execute(
        "SELECT count(*) FROM entries WHERE CAST(raw AS TEXT) LIKE '%\"isCompactSummary\":true%'"
    ).fetchone()[0]
    assert summaries == 2


def test_demo_has_failures_edits_thinking_and_image(demo_db) -> None:
    _, conn, _ = demo_db
    statuses = dict(conn.execute("SELECT status, count(*) FROM agent_tool_calls GROUP BY status").fetchall())
    assert statuses["failed"] >= 2
    assert statuses["rejected"] == 1
    tools = {r[0] for r in conn.execute("SELECT DISTINCT tool_name FROM agent_tool_calls")}
    assert {"Edit", "MultiEdit", "Write", "Bash", "Read", "Task", "Grep"} <= tools
    assert conn.execute("SELECT count(*) FROM entries WHERE thinking IS NOT NULL").fetchone()[0] >= 4
    assert (
        conn.execute(
            'SELECT count(*) FROM entries WHERE CAST(raw AS TEXT) LIKE \'%"type":"image"%\''
        ).fetchone()[0]
        == 1
    )
    assert conn.execute("SELECT count(*) FROM entries WHERE subtype = 'api_error'").fetchone()[0] == 1


def test_a_demo_folder_whose_process_is_gone_is_removed_at_the_next_demo(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys
    import time

    from threadloom.core.adapters.claude_demo import OWNER_FILE, UNOWNED_GRACE_SECONDS, claim_demo_dir

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    killed = claim_demo_dir(tmp_path)
    (killed / OWNER_FILE).write_text(gone.stdout.strip())  # its terminal was closed under it
    (killed / "demo.db").write_bytes(b"x" * 1000)
    running = claim_demo_dir(tmp_path)  # this process: still running
    old_unmarked = tmp_path / "threadloom-demo-old"
    old_unmarked.mkdir()
    past = time.time() - UNOWNED_GRACE_SECONDS - 60
    os.utime(old_unmarked, (past, past))
    fresh_unmarked = tmp_path / "threadloom-demo-fresh"
    fresh_unmarked.mkdir()
    someone_else = tmp_path / "not-a-demo"
    someone_else.mkdir()
    newest = claim_demo_dir(tmp_path)
    assert not killed.exists() and not old_unmarked.exists()
    assert running.exists() and fresh_unmarked.exists() and someone_else.exists() and newest.exists()
    assert (newest / OWNER_FILE).read_text() == str(os.getpid())
