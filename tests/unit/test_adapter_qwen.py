"""Qwen Code's chat recordings (core/adapters/qwen.py): read as Qwen Code's (never as Claude Code's
or Gemini CLI's), every record stored byte for byte, calls joined to their results, tokens and
models, its edit drawn from the file before and after its result holds, and its resume command."""

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

SID = "7d1f7c8e-3b7a-4c1e-9a55-0c2f4e6b8a10"


def record(n: int, kind: str, parent: int | None, **more: object) -> dict:
    return {
        "uuid": f"00000000-0000-4000-8000-{n:012d}",
        "parentUuid": f"00000000-0000-4000-8000-{parent:012d}" if parent else None,
        "sessionId": SID,
        "timestamp": f"2026-05-02T09:00:{n:02d}.000Z",
        "type": kind,
        "cwd": "/home/dev/shop",
        "version": "0.9.1",
        **more,
    }


def qwen_session(root: Path) -> Path:
    chats = root / ".qwen" / "projects" / "-home-dev-shop" / "chats"
    chats.mkdir(parents=True)
    edit = {"file_path": "/home/dev/shop/cart.py", "old_string": "total = None", "new_string": "total = 0"}
    lines = [
        record(1, "user", None, message={"role": "user", "parts": [{"text": "fix the cart total"}]}),
        record(
            2,
            "assistant",
            1,
            model="qwen3-coder-plus",
            message={
                "role": "model",
                "parts": [
                    {"text": "looking at cart.py", "thought": True},
                    {"text": "I will set it to zero."},
                    {"functionCall": {"id": "call_1", "name": "edit", "args": edit}},
                ],
            },
            usageMetadata={
                "promptTokenCount": 1200,
                "cachedContentTokenCount": 1000,
                "candidatesTokenCount": 40,
                "thoughtsTokenCount": 10,
            },
        ),
        record(
            3,
            "tool_result",
            2,
            message={
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "call_1", "name": "edit", "response": {"output": "ok"}}}
                ],
            },
            toolCallResult={
                "callId": "call_1",
                "status": "success",
                "resultDisplay": {
                    "fileName": "cart.py",
                    "fileDiff": "",
                    "originalContent": "items = []\ntotal = None\n",
                    "newContent": "items = []\ntotal = 0\n",
                },
            },
        ),
        record(
            4,
            "assistant",
            3,
            model="qwen3-coder-plus",
            message={"role": "model", "parts": [{"text": "Done."}]},
        ),
        record(5, "system", 4, subtype="ui_telemetry", systemPayload={"uiEvent": {"event.name": "x"}}),
        record(6, "system", 5, subtype="custom_title", systemPayload={"customTitle": "Cart total"}),
        {"type": "some_future_record", "sessionId": SID},
    ]
    path = chats / f"{SID}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_qwen_session_is_read_whole_and_as_qwen_code(tmp_path):
    source = qwen_session(tmp_path)
    assert [name for name, a in ADAPTERS.items() if a.claims(source)] == ["qwen-code"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".qwen")
        refresh_pending(conn)
        raws = conn.execute("SELECT raw, newline FROM entries ORDER BY byte_offset").fetchall()
        assert b"".join(bytes(r) + b"\n" * n for r, n in raws) == source.read_bytes()
        row = conn.execute(
            "SELECT id, source, title, project_path FROM agent_sessions WHERE is_subagent = 0"
        ).fetchone()
        assert row == (SID, "qwen-code", "Cart total", "/home/dev/shop")
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content] == [
            ("user", "fix the cart total"),
            ("assistant", "I will set it to zero."),
            ("assistant", "Done."),
        ]
        assert any(m.thinking == "looking at cart.py" for m in shown)
        calls = [c for m in shown for c in m.tool_calls]
        assert [(c.name, c.status, c.agent) for c in calls] == [("edit", "completed", "qwen-code")]
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?",
            (SID,),
        ).fetchone()
        assert tuple(tokens) == (200, 50, 1000)
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        # the edit counted from the file before and after its result holds
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("/home/dev/shop/cart.py", 1, 1)
        ]
    finally:
        conn.close()


def test_a_qwen_session_resumes_with_its_own_command(tmp_path, fake_agents, sandbox):
    qwen_session(tmp_path)
    (fake_agents / "qwen").write_text((fake_agents / "claude").read_text())
    (fake_agents / "qwen").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".qwen")
        plan = resume_plan(conn, SID)
    finally:
        conn.close()
    assert plan.command == "cd /home/dev/shop && qwen --resume " + SID
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["qwen", str(sandbox), "--resume", SID]
    ]
