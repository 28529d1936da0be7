"""GitHub Copilot CLI's session events (core/adapters/copilot.py): read as Copilot CLI's, every
record stored byte for byte, calls joined to their results, a subagent's events as a child session
linked to its task call, tokens and models, edits, and its resume command."""

from __future__ import annotations

import json
from pathlib import Path

from threadloom.core.actions.fork import resume_plan
from threadloom.core.adapters import ADAPTERS
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.conftest import ingest
from tests.support import run_printed

SID = "3bc4d926-f2d2-48ec-81fb-aafb579e671a"


def event(n: int, kind: str, data: dict, **more: object) -> dict:
    return {
        "type": kind,
        "data": data,
        "id": f"00000000-0000-4000-8000-{n:012d}",
        "timestamp": f"2026-06-18T19:13:{n:02d}.000Z",
        "parentId": f"00000000-0000-4000-8000-{n - 1:012d}" if n > 1 else None,
        **more,
    }


def copilot_session(root: Path) -> Path:
    folder = root / ".copilot" / "session-state" / SID
    folder.mkdir(parents=True)
    (folder / "workspace.yaml").write_text(f"id: {SID}\ncwd: /home/dev/shop\nsummary: Cart total\n")
    edit = {"path": "/home/dev/shop/cart.py", "old_str": "total = None", "new_str": "total = 0"}
    lines = [
        event(
            1,
            "session.start",
            {
                "sessionId": SID,
                "version": 1,
                "producer": "copilot-agent",
                "copilotVersion": "1.0.63",
                "startTime": "2026-06-18T19:13:01.000Z",
                "context": {"cwd": "/home/dev/shop", "branch": "main"},
            },
        ),
        event(2, "session.model_change", {"newModel": "claude-sonnet-4.5"}),
        event(3, "system.message", {"role": "system", "content": "You are the GitHub Copilot CLI"}),
        event(4, "user.message", {"content": "fix the cart total", "attachments": []}),
        event(5, "assistant.turn_start", {"turnId": "0"}),
        event(
            6,
            "assistant.message",
            {
                "messageId": "m1",
                "content": "I will set it to zero.",
                "reasoningText": "looking at cart.py",
                "toolRequests": [
                    {"toolCallId": "call_edit", "name": "edit", "arguments": edit, "type": "function"},
                    {"toolCallId": "call_task", "name": "task", "arguments": {"description": "check tests"}},
                ],
                "model": "claude-sonnet-4.5",
                "outputTokens": 40,
            },
        ),
        event(7, "tool.execution_start", {"toolCallId": "call_edit", "toolName": "edit", "arguments": edit}),
        event(
            8,
            "tool.execution_complete",
            {"toolCallId": "call_edit", "success": True, "result": {"content": "File updated"}},
        ),
        event(
            9,
            "subagent.started",
            {
                "toolCallId": "call_task",
                "agentName": "explore",
                "agentDisplayName": "Explore",
                "agentDescription": "x",
            },
            agentId="agent-1",
        ),
        event(
            10,
            "assistant.message",
            {"messageId": "m2", "content": "tests pass", "parentToolCallId": "call_task", "outputTokens": 5},
            agentId="agent-1",
        ),
        event(
            11, "subagent.completed", {"toolCallId": "call_task", "agentName": "explore"}, agentId="agent-1"
        ),
        event(
            12,
            "tool.execution_complete",
            {"toolCallId": "call_task", "success": True, "result": {"content": "tests pass"}},
        ),
        event(13, "assistant.message", {"messageId": "m3", "content": "Done.", "outputTokens": 3}),
        event(14, "some.future_event", {"x": 1}),
        event(
            15,
            "session.shutdown",
            {
                "shutdownType": "routine",
                "codeChanges": {"filesModified": [], "linesAdded": 1, "linesRemoved": 1},
                "modelMetrics": {
                    "claude-sonnet-4.5": {
                        "requests": {"count": 3, "cost": 3},
                        "usage": {
                            "inputTokens": 1200,
                            "outputTokens": 48,
                            "cacheReadTokens": 1000,
                            "cacheWriteTokens": 0,
                        },
                    }
                },
                "sessionStartTime": 1781810000000,
                "totalApiDurationMs": 100,
            },
        ),
    ]
    path = folder / "events.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_copilot_session_is_read_whole_and_as_copilot_s(tmp_path):
    source = copilot_session(tmp_path)
    assert [name for name, a in ADAPTERS.items() if a.claims(source)] == ["copilot-cli"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".copilot")
        refresh_pending(conn)
        raws = conn.execute("SELECT raw, newline FROM entries ORDER BY byte_offset").fetchall()
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
