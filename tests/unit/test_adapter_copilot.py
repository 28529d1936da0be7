"""GitHub Copilot CLI's session events (core/adapters/copilot.py): read as Copilot CLI's, every
record stored byte for byte, calls joined to their results, a subagent's events as a child session
linked to its task call, tokens and models, edits, and its resume command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from threadloom.core.actions.fork import resume_plan
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.base import parse_iso_ms
from threadloom.core.base.text import prompt_title
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.builders.copilot import SID, copilot_session, event, model_row, write_events
from tests.support import ingest, read_in_pieces, run_printed


def test_a_copilot_session_is_read_whole_and_as_copilot_s(tmp_path):
    source = copilot_session(tmp_path)
    assert [name for name, a in ADAPTERS.items() if a.claims(source)] == ["copilot-cli"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        refresh_pending(conn)
        raws = conn.execute(  # the events' records (its workspace.yaml is kept beside them)
            "SELECT raw, newline FROM entries WHERE source_file_id = "
            "(SELECT id FROM source_files WHERE kind = 'transcript') ORDER BY byte_offset"
        ).fetchall()
        assert b"".join(bytes(r) + b"\n" * n for r, n in raws) == source.read_bytes()
        row = conn.execute(
            "SELECT id, source, project_path, git_branch, cli_version, model FROM agent_sessions WHERE is_subagent = 0"
        ).fetchone()
        assert row == (SID, "copilot-cli", "/home/dev/shop", "main", "1.0.63", "claude-sonnet-4.5")
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content and m.role != "system"] == [
            ("user", "fix the cart total"),
            ("assistant", "I will set it to zero."),
            ("assistant", "Done."),
        ]
        assert any(m.thinking == "looking at cart.py" for m in shown)
        calls = {c.name: c for m in shown for c in m.tool_calls}
        assert {n: c.status for n, c in calls.items()} == {"edit": "completed", "task": "completed"}
        # the subagent's events are a child session, linked to the task call that started it
        child = conn.execute(
            "SELECT id, parent_session_id, tool_call_id FROM agent_sessions WHERE is_subagent = 1"
        ).fetchone()
        assert child == (f"{SID}:agent-call_task", SID, "call_task")
        assert [m.content for m in messages(conn, child[0]) if m.content] == ["tests pass"]
        assert conn.execute(
            "SELECT child_session_id FROM agent_tool_calls WHERE id = 'call_task'"
        ).fetchone() == (child[0],)
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert tuple(tokens) == (200, 43, 1000)
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("/home/dev/shop/cart.py", 1, 1)
        ]
    finally:
        conn.close()


def test_a_copilot_session_resumes_with_its_own_command(tmp_path, fake_agents, sandbox):
    copilot_session(tmp_path)
    (fake_agents / "copilot").write_text((fake_agents / "claude").read_text())
    (fake_agents / "copilot").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        plan = resume_plan(conn, SID)
    finally:
        conn.close()
    assert plan.command == "cd /home/dev/shop && copilot --resume " + SID
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["copilot", str(sandbox), "--resume", SID]
    ]


def test_an_events_file_found_empty_is_copilot_s_once_it_is_written(tmp_path):
    """Copilot makes a session's events.jsonl before it writes to it: an ingest that finds it empty
    (a watch is quick) took it for an empty Claude Code log and kept it so, every event after going
    to a Claude session named "events". Found empty in a session's folder, it is Copilot's."""
    source = copilot_session(tmp_path)
    events = source.read_bytes()
    source.write_bytes(events[:30])  # its first line half written
    assert [name for name, a in ADAPTERS.items() if a.claims(source)] == ["copilot-cli"]
    source.write_bytes(b"")
    assert [name for name, a in ADAPTERS.items() if a.claims(source)] == ["copilot-cli"]
    conn = db.connect(tmp_path / "ledger.db")
    ingest(conn, tmp_path / ".copilot")
    source.write_bytes(events[:30])
    ingest(conn, tmp_path / ".copilot")
    source.write_bytes(events)
    ingest(conn, tmp_path / ".copilot")
    assert conn.execute("SELECT DISTINCT agent FROM source_files").fetchall() == [("copilot-cli",)]
    assert conn.execute(
        "SELECT source, message_count FROM agent_sessions WHERE id = ?", (SID,)
    ).fetchone() == (
        "copilot-cli",
        3,
    )
    # an empty events.jsonl anywhere else says nothing of itself: not taken for Copilot's
    elsewhere = tmp_path / "logs" / "events.jsonl"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(b"")
    assert not ADAPTERS["copilot-cli"].claims(elsewhere)


def test_copilot_home_is_honoured(tmp_path, monkeypatch):
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "elsewhere"))
    assert ADAPTERS["copilot-cli"].default_roots() == [tmp_path / "elsewhere" / "session-state"]


def test_a_run_s_model_comes_from_its_tools_update(tmp_path):
    """1.0.x names the model a run uses in `session.tools_updated` (its start may say "auto")."""
    sid = "5d0c7a34-1b2e-4c3d-9e8f-0a1b2c3d4e5f"
    folder = tmp_path / ".copilot" / "session-state" / sid
    folder.mkdir(parents=True)
    lines = [
        event(1, "session.tools_updated", {"model": "gpt-5.4"}, ephemeral=True),
        event(2, "user.message", {"content": "say hello", "attachments": [], "interactionId": "i1"}),
        event(
            3,
            "assistant.message",
            {"messageId": "m1", "content": "hello", "toolRequests": [], "outputTokens": 31},
        ),
    ]
    (folder / "events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        row = conn.execute("SELECT model, output_tokens FROM agent_sessions WHERE id = ?", (sid,)).fetchone()
        assert tuple(row) == ("gpt-5.4", 31)
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 0
    finally:
        conn.close()


def test_a_turn_that_failed_shows_its_error(tmp_path):
    """`session.error` (shapes of a real session whose quota ran out) is shown where the turn failed;
    without it the prompt looked unanswered."""
    sid = "3fc55392-0000-4000-8000-000000000001"
    folder = tmp_path / ".copilot" / "session-state" / sid
    folder.mkdir(parents=True)
    error = {
        "errorType": "quota",
        "message": "402 You have no quota (Request ID: CD88:30AFE2)",
        "statusCode": 402,
        "providerCallId": "CD88:30AFE2",
    }
    lines = [
        event(1, "user.message", {"content": "Please review PR 104"}),
        event(2, "assistant.turn_start", {"turnId": "0", "interactionId": "i1"}),
        event(3, "assistant.turn_end", {"turnId": "0"}),
        event(4, "session.error", error),
        event(5, "session.error", {"errorType": "unknown"}),
    ]
    (folder / "events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        shown = conn.execute(
            "SELECT role, content FROM entries WHERE seq IS NOT NULL ORDER BY seq"
        ).fetchall()
        assert [tuple(r) for r in shown] == [
            ("user", "Please review PR 104"),
            ("system", "402 You have no quota (Request ID: CD88:30AFE2)"),
            ("system", '{"errorType":"unknown"}'),
        ]
    finally:
        conn.close()


def test_a_session_folder_s_other_files_are_kept_and_restored(tmp_path):
    """Beside its events Copilot CLI keeps the session's workspace.yaml (folder, branch, summary),
    plan.md, checkpoints/ and the VS Code extension's vscode.*.json (as a real 2026 home holds
    them): they were left unread, and lost with the folder. Kept whole with the session and written
    back with it; a running copilot's lock is not the session's."""
    from threadloom.core.actions.restore import restore_session
    from threadloom.core.read.archive import verify

    sid = "3fc55392-0000-4000-8000-000000000001"
    folder = tmp_path / ".copilot" / "session-state" / sid
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "events.jsonl").write_text(json.dumps(event(1, "user.message", {"content": "hi"})) + "\n")
    kept = {
        "workspace.yaml": b"id: x\ncwd: /home/dev/shop\nsummary: |-\n  Fix the heading\n",
        "plan.md": b"# Plan\n",
        "vscode.metadata.json": b'{"customTitle":"Document fixes"}',
        "checkpoints/index.md": b"| # | title |\n",
        "checkpoints/001-fixes.md": b"what changed\n",
    }
    for name, data in kept.items():
        (folder / name).write_bytes(data)
    (folder / "inuse.47088.lock").write_text("47088")
    orphan = tmp_path / ".copilot" / "session-state" / "004f3a99-46f3-4dfb-a168-aa0a24097bae"
    orphan.mkdir()  # a session whose events are gone: its workspace is kept all the same
    (orphan / "workspace.yaml").write_bytes(b"id: y\n")
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        sides = dict(
            conn.execute(
                "SELECT f.path, e.subtype FROM source_files f JOIN entries e ON e.source_file_id = f.id "
                "WHERE f.kind = 'side'"
            ).fetchall()
        )
        assert sorted(sides.values()) == [
            "checkpoint",
            "checkpoint",
            "file",
            "plan",
            "workspace",
            "workspace",
        ]
        assert not any(p.endswith(".lock") for p in sides)
        assert verify(conn).ok
        restored = restore_session(conn, sid, tmp_path / "back")
        back = tmp_path / "back" / sid
        written = {
            Path(f.written_to).relative_to(back).as_posix(): Path(f.written_to).read_bytes() for f in restored
        }
        assert written == {**kept, "events.jsonl": (folder / "events.jsonl").read_bytes()}
    finally:
        conn.close()


def test_a_folder_s_files_go_with_the_session_its_events_name(tmp_path):
    """The session's id is its events' `session.start`; a folder named otherwise (another case, a
    copy renamed) kept its files with no session, and no restore wrote them."""
    from threadloom.core.actions.restore import restore_session

    sid = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
    folder = tmp_path / ".copilot" / "session-state" / sid.upper()
    folder.mkdir(parents=True)
    start = event(
        1, "session.start", {"sessionId": sid, "producer": "copilot-agent", "context": {"cwd": "/srv"}}
    )
    said = event(2, "user.message", {"content": "hi"})
    (folder / "events.jsonl").write_text(json.dumps(start) + "\n" + json.dumps(said) + "\n")
    (folder / "plan.md").write_text("# Plan\n")
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        names = {Path(f.written_to).name for f in restore_session(conn, sid, tmp_path / "back")}
        assert names == {"events.jsonl", "plan.md"}
    finally:
        conn.close()


def test_a_session_folder_its_agent_deleted_is_put_back_before_it_resumes(tmp_path):
    """`copilot --resume ID` finds a session in its folder: once the folder was deleted, the command
    was printed as if it worked; now it is put back first (its events and what was beside them)."""
    import shutil

    from threadloom.core.actions.fork import restore_for

    sid = "dddddddd-4444-4444-8444-444444444444"
    folder = tmp_path / ".copilot" / "session-state" / sid
    folder.mkdir(parents=True)
    start = event(
        1, "session.start", {"sessionId": sid, "producer": "copilot-agent", "context": {"cwd": "/srv"}}
    )
    (folder / "events.jsonl").write_text(
        json.dumps(start) + "\n" + json.dumps(event(2, "user.message", {"content": "hi"})) + "\n"
    )
    (folder / "workspace.yaml").write_text(f"id: {sid}\ncwd: /srv\n")
    kept = {p.name: p.read_bytes() for p in folder.iterdir()}
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        shutil.rmtree(folder)
        ingest(conn, tmp_path / ".copilot")
        plan = resume_plan(conn, sid)
        assert plan.restore is not None and plan.restore.gone
        restore_for(conn, plan)
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == kept
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("written", "title"),
    [
        ("summary: Build authentication module\n", "Build authentication module"),
        (
            "summary: |-\n  Fix the heading\n  and the footer\nsummary_count: 2\n",
            "Fix the heading\nand the footer",
        ),
        ('summary: "Fix: the \\"cart\\" total"\n', 'Fix: the "cart" total'),
        ("summary: 'it''s done'\n", "it's done"),
        ("summary_count: 0\n", None),
        ("summary: \n", None),
        ("summary: *anchor\n", None),  # YAML that is not text is not taken for a title
        ("summary: [a, b]\n", None),
        ("summary: ~\n", None),
    ],
)
def test_a_session_is_titled_by_its_workspace_summary(tmp_path, written, title):
    """Copilot CLI lists a session by the summary its model wrote in `workspace.yaml` (`id, cwd,
    summary, summary_count, created_at, updated_at`); it was kept but unused, the session titled by
    its first prompt. The summary is its title now (the first prompt where there is none), and a
    summary written later retitles it, the events unchanged."""
    folder = copilot_session(tmp_path).parent
    # as a BOM-writing editor saves it: the first key is still the first key
    (folder / "workspace.yaml").write_text(f"\ufeff{written}id: {SID}\ncwd: /home/dev/shop\n")
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        first_prompt = conn.execute(
            "SELECT first_prompt FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()[0]
        shown = conn.execute("SELECT title, title_source FROM agent_sessions WHERE id = ?", (SID,)).fetchone()
        assert shown == ((title, "ai-title") if title else (prompt_title(first_prompt), "prompt"))
        (folder / "workspace.yaml").write_text(
            f"id: {SID}\ncwd: /home/dev/shop\nsummary: Cart total, tested\n"
        )
        ingest(conn, tmp_path / ".copilot")
        assert conn.execute("SELECT title FROM agent_sessions WHERE id = ?", (SID,)).fetchone()[0] == (
            "Cart total, tested"
        )
        # a title its user gave it in VS Code comes first
        (folder / "vscode.metadata.json").write_bytes(b'{"customTitle":"Document fixes"}')
        ingest(conn, tmp_path / ".copilot")
        shown = conn.execute("SELECT title, title_source FROM agent_sessions WHERE id = ?", (SID,)).fetchone()
        assert shown == ("Document fixes", "custom-title")
    finally:
        conn.close()


RESUMED = "aa737378-7ebd-4c0b-9c77-77c050d2df98"


def resumed_session_events() -> list[dict]:
    """The shape of a real 1.0.77 session resumed once: the second shutdown repeats the first run's
    model row unchanged and adds the second run's; cache writes are inside `inputTokens`."""
    haiku = model_row(10, 0, 12602, 35)
    return [
        event(
            1, "session.start", {"sessionId": RESUMED, "copilotVersion": "1.0.77", "context": {"cwd": "/w"}}
        ),
        event(2, "user.message", {"content": "Reply with exactly the word: ok"}),
        event(3, "assistant.message", {"messageId": "m1", "content": "ok", "outputTokens": 35}),
        event(
            4, "session.shutdown", {"shutdownType": "routine", "modelMetrics": {"claude-haiku-4.5": haiku}}
        ),
        event(5, "session.resume", {"eventCount": 4, "resumeTime": "2026-08-05T17:02:24.805Z"}),
        event(6, "user.message", {"content": "Reply with exactly the word: again"}),
        event(7, "assistant.message", {"messageId": "m2", "content": "again", "outputTokens": 88}),
        event(
            8,
            "session.shutdown",
            {
                "shutdownType": "routine",
                "modelMetrics": {"claude-haiku-4.5": haiku, "gpt-5-mini": model_row(9277, 1536, 0, 88)},
            },
        ),
    ]


def session_tokens(conn, sid: str) -> tuple[int, int, int, int]:
    row = conn.execute(
        "SELECT input_tokens, cache_read_tokens, cache_creation_tokens, output_tokens FROM agent_sessions "
        "WHERE id = ?",
        (sid,),
    ).fetchone()
    return tuple(row)


def test_a_resumed_session_s_tokens_are_counted_once(tmp_path):
    """A shutdown counts the session from its start: the runs before a resume are in it again, so
    they count once; the cache writes inside `inputTokens` are not input as well."""
    write_events(tmp_path, RESUMED, resumed_session_events())
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        assert session_tokens(conn, RESUMED) == (10 + 9277, 1536, 12602, 35 + 88)
    finally:
        conn.close()


def test_a_resumed_session_read_in_two_runs_is_what_one_read_gives(tmp_path):
    """Read as it grows (the first run's events, then the resumed run's), it counts the same."""
    write_events(tmp_path, RESUMED, resumed_session_events()[:4])
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        assert session_tokens(conn, RESUMED) == (10, 0, 12602, 35)
        write_events(tmp_path, RESUMED, resumed_session_events())
        ingest(conn, tmp_path / ".copilot")
        assert session_tokens(conn, RESUMED) == (10 + 9277, 1536, 12602, 35 + 88)
    finally:
        conn.close()


def test_a_session_resumed_on_another_model_prices_each_model_at_its_own_rate(tmp_path):
    """A run on Haiku, resumed on Opus: the second shutdown repeats Haiku's row and adds Opus's.
    Each model's input is its own usage, priced at its rate and dated at the first shutdown naming
    it; read as one usage, Opus's 3.6M tokens were priced as Haiku's and dated at the first run."""
    from threadloom.core.insight.cost import message_cost

    haiku, opus = model_row(10, 0, 1000, 35), model_row(200000, 3000000, 400000, 50000)
    events = [
        event(1, "session.start", {"sessionId": RESUMED, "context": {"cwd": "/w"}}),
        event(2, "user.message", {"content": "hi"}),
        event(3, "assistant.message", {"messageId": "m1", "content": "ok", "outputTokens": 35}),
        event(4, "session.shutdown", {"modelMetrics": {"claude-haiku-4.5": haiku}}),
        event(5, "session.resume", {"eventCount": 4}),
        event(6, "session.model_change", {"newModel": "claude-opus-4.5"}),
        event(7, "user.message", {"content": "big job"}),
        event(8, "assistant.message", {"messageId": "m2", "content": "done", "outputTokens": 50000}),
        event(9, "session.shutdown", {"modelMetrics": {"claude-haiku-4.5": haiku, "claude-opus-4.5": opus}}),
    ]
    write_events(tmp_path, RESUMED, events)
    first, second = (parse_iso_ms(events[n]["timestamp"]) for n in (3, 8))  # the two shutdowns
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        rows = conn.execute(
            "SELECT message_id, model, input_tokens, cache_read_tokens, cache_creation_tokens, timestamp, "
            "cost_usd FROM agent_usage WHERE message_id LIKE '%:shutdown%' ORDER BY timestamp"
        ).fetchall()
        assert [row[:6] for row in rows] == [
            (f"{RESUMED}:shutdown:claude-haiku-4.5", "claude-haiku-4.5", 10, 0, 1000, first),
            (f"{RESUMED}:shutdown:claude-opus-4.5", "claude-opus-4.5", 200000, 3000000, 400000, second),
        ]
        opus_cost = message_cost("claude-opus-4.5", 200000, 0, 400000, 3000000, second)
        assert opus_cost is not None and rows[1][6] == pytest.approx(opus_cost)
        assert session_tokens(conn, RESUMED) == (10 + 200000, 3000000, 1000 + 400000, 35 + 50000)
    finally:
        conn.close()


def subagent_events() -> list[dict]:
    """A subagent whose thinking carries its `agentId` alone (no spawning call on it), and a call
    asked for in one event and started in a later one."""
    return [
        event(1, "session.start", {"sessionId": SID, "context": {"cwd": "/w"}}),
        event(2, "user.message", {"content": "check tests"}),
        event(
            3,
            "assistant.message",
            {
                "messageId": "m1",
                "content": "",
                "toolRequests": [
                    {"toolCallId": "call_task", "name": "task", "arguments": {"description": "check"}},
                    {"toolCallId": "call_edit", "name": "edit", "arguments": {"path": "/w/a.py"}},
                ],
                "outputTokens": 12,
            },
        ),
        event(4, "subagent.started", {"toolCallId": "call_task", "agentName": "explore"}, agentId="agent-1"),
        event(5, "tool.execution_start", {"toolCallId": "call_edit", "toolName": "edit", "arguments": {}}),
        event(6, "assistant.reasoning", {"content": "thinking inside the subagent"}, agentId="agent-1"),
        event(
            7,
            "assistant.message",
            {"messageId": "m2", "content": "tests pass", "parentToolCallId": "call_task", "outputTokens": 5},
            agentId="agent-1",
        ),
        event(8, "subagent.completed", {"toolCallId": "call_task"}, agentId="agent-1"),
        event(9, "tool.execution_complete", {"toolCallId": "call_task", "success": True, "result": {}}),
        event(10, "tool.execution_complete", {"toolCallId": "call_edit", "success": True, "result": {}}),
        event(11, "session.shutdown", {"modelMetrics": {"claude-sonnet-4.5": model_row(100, 200, 0, 17)}}),
    ]


def _copilot_ledger(conn) -> dict[str, list[tuple]]:
    """What a read makes of a session: its sessions, their calls, their usage, each record's session."""
    queries = {
        "sessions": "SELECT id, kind, parent_session_id, message_count, tool_call_count, input_tokens, "
        "output_tokens, cache_read_tokens, cache_creation_tokens, model FROM agent_sessions ORDER BY id",
        "calls": "SELECT session_id, id, tool_name, status, child_session_id FROM agent_tool_calls "
        "ORDER BY session_id, id",
        "usage": "SELECT message_id, session_id, model, input_tokens, output_tokens, cache_read_tokens, "
        "cache_creation_tokens, timestamp FROM agent_usage ORDER BY message_id",
        "records": "SELECT byte_offset, session_id, seq FROM entries WHERE entry_type IS NOT 'side-file' "
        "ORDER BY byte_offset",
    }
    return {name: [tuple(row) for row in conn.execute(query)] for name, query in queries.items()}


def model_events() -> list[dict]:
    """A session whose replies name no model (1.0.7x): the run's model is named by its events."""
    return [
        event(1, "session.start", {"sessionId": RESUMED, "selectedModel": "auto", "context": {"cwd": "/w"}}),
        event(2, "session.tools_updated", {"model": "claude-sonnet-4.5"}),
        event(3, "user.message", {"content": "Reply with exactly the word: ok"}),
        event(4, "assistant.message", {"messageId": "m1", "content": "ok", "outputTokens": 50}),
        event(5, "session.model_change", {"newModel": "gpt-5-mini"}),
        event(6, "user.message", {"content": "Reply with exactly the word: again"}),
        event(7, "assistant.message", {"messageId": "m2", "content": "again", "outputTokens": 20}),
    ]


def test_a_reply_that_names_no_model_is_priced_at_the_model_in_use(tmp_path):
    """1.0.7x replies carry their output tokens but name no model: they were never priced (the
    session's cost left out every reply). The model the session's events name is the one in use."""
    write_events(tmp_path, RESUMED, model_events())
    conn = db.connect(tmp_path / "ledger.db")
    ingest(conn, tmp_path / ".copilot")
    rows = conn.execute(
        "SELECT message_id, model, output_tokens, cost_usd FROM agent_usage ORDER BY message_id"
    ).fetchall()
    assert [(m, model, out) for m, model, out, _ in rows] == [
        ("m1", "claude-sonnet-4.5", 50),
        ("m2", "gpt-5-mini", 20),
    ]
    assert all(cost is not None and cost > 0 for *_, cost in rows), rows


@pytest.mark.parametrize("session", ["builder", "subagent", "resumed", "models"])
def test_a_session_read_in_two_pieces_is_what_one_read_gives(tmp_path, session):
    """A session followed live is read in pieces, each on its own: the ids its subagents' events
    name and the calls asked for before the piece were forgotten, so a subagent's thinking went
    to a session of its own and a call was counted twice. Cut at every line, it reads as whole."""

    def written(root: Path) -> Path:
        if session == "builder":
            return copilot_session(root)
        if session == "subagent":  # compact, as Copilot CLI writes its lines
            path = write_events(root, SID, [])
            path.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in subagent_events()))
            return path
        if session == "models":
            return write_events(root, RESUMED, model_events())
        return write_events(root, RESUMED, resumed_session_events())

    expected = read_in_pieces(tmp_path, written, ".copilot", _copilot_ledger)
    assert expected["sessions"] and expected["usage"]  # type: ignore[index]


def test_a_shutdown_without_token_details_reads_input_less_both_caches(tmp_path):
    """Older shutdowns have `usage` alone: its `inputTokens` holds the reads and the writes."""
    sid = "0b7c6a5d-4e3f-4a1b-9c8d-7e6f5a4b3c2d"
    write_events(
        tmp_path,
        sid,
        [
            event(1, "session.start", {"sessionId": sid, "context": {"cwd": "/w"}}),
            event(2, "user.message", {"content": "hi"}),
            event(3, "assistant.message", {"messageId": "m1", "content": "hello", "outputTokens": 5}),
            event(
                4,
                "session.shutdown",
                {"modelMetrics": {"claude-sonnet-4.5": model_row(8, 54064, 27594, 5, details=False)}},
            ),
        ],
    )
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        assert session_tokens(conn, sid) == (8, 54064, 27594, 5)
    finally:
        conn.close()


def test_a_shell_command_the_user_ran_is_a_call_with_its_result(tmp_path):
    """1.0.78 writes a `!` command as `tool.user_requested` and then its result (`isUserRequested`),
    with no `tool.execution_start`: the call is the request's, shown with what it printed."""
    sid = "532a2447-af18-4647-9576-712e931e1a9c"
    call = "1613003b-2af7-4b6e-8788-60ec03b992fa"
    arguments = {"command": "echo hello", "description": "Execute shell command: echo hello"}
    write_events(
        tmp_path,
        sid,
        [
            event(
                1, "session.start", {"sessionId": sid, "copilotVersion": "1.0.78", "context": {"cwd": "/w"}}
            ),
            event(
                2,
                "tool.user_requested",
                {"toolCallId": call, "toolName": "local_shell", "arguments": arguments},
            ),
            event(
                3,
                "tool.execution_complete",
                {
                    "toolCallId": call,
                    "isUserRequested": True,
                    "success": True,
                    "result": {"content": "hello"},
                },
            ),
        ],
    )
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        calls = [
            (c.name, c.status, json.loads(c.params_json)) for m in messages(conn, sid) for c in m.tool_calls
        ]
        assert calls == [("local_shell", "completed", arguments)]
        result = conn.execute("SELECT result_json FROM agent_tool_calls WHERE id = ?", (call,)).fetchone()[0]
        assert "hello" in result
    finally:
        conn.close()


def test_an_auto_session_s_model_is_the_one_auto_chose_and_newer_events_are_known(tmp_path):
    """With `auto` (1.0.77), the model change says "auto" and `session.auto_mode_resolved` names the
    model that runs: a turn cut short before any reply still has it. The other events a real 1.0.77
    log holds beside these are read as events of their kinds."""
    sid = "144d0848-1ca0-49df-a61f-59fe01d4f5eb"
    write_events(
        tmp_path,
        sid,
        [
            event(
                1, "session.start", {"sessionId": sid, "copilotVersion": "1.0.77", "context": {"cwd": "/w"}}
            ),
            event(2, "session.permissions_changed", {"allowAllPermissions": True}),
            event(3, "session.mode_changed", {"previousMode": "interactive", "newMode": "autopilot"}),
            event(4, "session.model_change", {"newModel": "auto", "reasoningEffort": None}),
            event(5, "session.auto_mode_resolved", {"chosenModel": "gpt-5-mini", "confidence": 0.67}),
            event(6, "user.message", {"content": "Write a 200 word essay about the history of coffee."}),
            event(7, "hook.start", {"hookInvocationId": "h1", "hookType": "postToolUse", "input": {}}),
            event(8, "hook.end", {"hookInvocationId": "h1", "hookType": "postToolUse", "success": True}),
            event(9, "permission.requested", {"requestId": "r1", "permissionRequest": {"kind": "shell"}}),
            event(10, "system.notification", {"content": "<system_notification>done</system_notification>"}),
            event(11, "session.usage_checkpoint", {"totalNanoAiu": 53955000, "totalPremiumRequests": 0}),
            event(12, "session.task_complete", {"summary": "Wrote the essay.", "success": True}),
            event(13, "session.shutdown", {"shutdownType": "routine", "modelMetrics": {}}),
        ],
    )
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        assert conn.execute("SELECT model FROM agent_sessions WHERE id = ?", (sid,)).fetchone() == (
            "gpt-5-mini",
        )
        unknown = conn.execute("SELECT entry_type FROM entries WHERE NOT known").fetchall()
        assert unknown == []
    finally:
        conn.close()


def test_a_compaction_s_summary_is_shown_where_it_happened(tmp_path):
    """`session.compaction_complete` holds the summary the model goes on from: it is shown, as the
    other agents' compactions are, between the turns before it and after it."""
    sid = "ab0d12c0-ab1d-44dc-bb64-24a18b6dfe45"
    summary = "<overview>\nThe user asked for one-word replies.\n</overview>"
    write_events(
        tmp_path,
        sid,
        [
            event(
                1, "session.start", {"sessionId": sid, "copilotVersion": "1.0.78", "context": {"cwd": "/w"}}
            ),
            event(2, "user.message", {"content": "Reply with exactly the word: ok"}),
            event(3, "assistant.message", {"messageId": "m1", "content": "ok", "outputTokens": 5}),
            event(4, "session.compaction_start", {"trigger": "manual", "currentTokens": 10826}),
            event(5, "session.compaction_complete", {"success": True, "summaryContent": summary}),
            event(6, "user.message", {"content": "Reply with exactly the word: still-here"}),
            event(7, "assistant.message", {"messageId": "m2", "content": "still-here", "outputTokens": 6}),
        ],
    )
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        assert [(m.role, m.content) for m in messages(conn, sid)] == [
            ("user", "Reply with exactly the word: ok"),
            ("assistant", "ok"),
            ("system", summary),
            ("user", "Reply with exactly the word: still-here"),
            ("assistant", "still-here"),
        ]
    finally:
        conn.close()


def test_a_renamed_folder_s_files_stay_with_their_session_in_a_rebuild(tmp_path):
    """A folder named otherwise than its session keeps its files with the session its events name:
    a replay (a schema upgrade's, `ingest --rebuild`) read those events from the disk, so once the
    folder was deleted a rebuild put its `workspace.yaml` (the title Copilot CLI gave the session)
    with a session of the folder's name. It reads them as the archive kept them."""
    import shutil

    from threadloom.core.ingest.ledger import rebuild_derived

    sid = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
    folder = tmp_path / ".copilot" / "session-state" / sid.upper()
    folder.mkdir(parents=True)
    start = event(
        1, "session.start", {"sessionId": sid, "producer": "copilot-agent", "context": {"cwd": "/srv"}}
    )
    said = event(2, "user.message", {"content": "hi"})
    (folder / "events.jsonl").write_text(json.dumps(start) + "\n" + json.dumps(said) + "\n")
    (folder / "workspace.yaml").write_text(f"id: {sid}\ncwd: /srv\nsummary: Greeting\n")
    facts = "SELECT id, title, project_path, created_at FROM agent_sessions ORDER BY id"
    kept_with = "SELECT count(*) FROM entries WHERE session_id = ? AND entry_type = 'ai-title'"
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        read_then = conn.execute(facts).fetchall()
        assert read_then == [(sid, "Greeting", "/srv", read_then[0][3])]
        assert conn.execute(kept_with, (sid,)).fetchone() == (1,)
        shutil.rmtree(folder)
        rebuild_derived(conn)
        assert conn.execute(facts).fetchall() == read_then
        assert conn.execute(kept_with, (sid,)).fetchone() == (1,)
    finally:
        conn.close()
