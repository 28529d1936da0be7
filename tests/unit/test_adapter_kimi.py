"""Kimi CLI's session logs (core/adapters/kimi.py): its context and wire read as one Kimi CLI session,
every record stored byte for byte, its folder found in kimi.json, calls joined to their results,
tokens from the wire, a subagent's context under its session, edits, and its resume command."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from threadloom.core.actions.fork import resume_plan
from threadloom.core.adapters import ADAPTERS
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.conftest import ingest
from tests.support import run_printed

SID = "0f9a4c1e-5b7d-4e2a-9c3b-8d1e2f3a4b5c"
CWD = "/home/dev/shop"


def kimi_session(root: Path) -> Path:
    share = root / ".kimi"
    folder = share / "sessions" / hashlib.md5(CWD.encode()).hexdigest() / SID
    folder.mkdir(parents=True)
    (share / "kimi.json").write_text(
        json.dumps({"work_dirs": [{"path": CWD, "kaos": "local", "last_session_id": SID}]})
    )
    edit = {"path": "cart.py", "edit": [{"old": "total = None", "new": "total = 0"}]}
    context = [
        {"role": "_system_prompt", "content": "You are Kimi Code CLI"},
        {"role": "_checkpoint", "id": 0},
        {"role": "user", "content": [{"type": "text", "text": "fix the cart total"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "think", "think": "look at cart.py"},
                {"type": "text", "text": "Fixing it."},
            ],
            "tool_calls": [
                {
                    "type": "function",
                    "id": "StrReplaceFile:0",
                    "function": {"name": "StrReplaceFile", "arguments": json.dumps(edit)},
                },
                {
                    "type": "function",
                    "id": "Agent:1",
                    "function": {
                        "name": "Agent",
                        "arguments": json.dumps({"description": "tests", "prompt": "run the tests"}),
                    },
                },
            ],
        },
        {
            "role": "tool",
            "content": [{"type": "text", "text": "File edited"}],
            "tool_call_id": "StrReplaceFile:0",
        },
        {"role": "tool", "content": [{"type": "text", "text": "tests pass"}], "tool_call_id": "Agent:1"},
        {"role": "_usage", "token_count": 1300},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        {"role": "something_new", "x": 1},
    ]
    (folder / "context.jsonl").write_text("".join(json.dumps(line) + "\n" for line in context))
    wire = [
        {"type": "metadata", "protocol_version": "1.9"},
        {
            "timestamp": 1781810000.0,
            "message": {"type": "TurnBegin", "payload": {"user_input": "fix the cart total"}},
        },
        {
            "timestamp": 1781810001.5,
            "message": {"type": "ContentPart", "payload": {"type": "text", "text": "Fixing it."}},
        },
        {
            "timestamp": 1781810002.0,
            "message": {
                "type": "StatusUpdate",
                "payload": {
                    "token_usage": {
                        "input_other": 200,
                        "output": 40,
                        "input_cache_read": 1000,
                        "input_cache_creation": 0,
                    },
                    "message_id": "chatcmpl-1",
                },
            },
        },
        {"timestamp": 1781810009.0, "message": {"type": "TurnEnd", "payload": {}}},
    ]
    (folder / "wire.jsonl").write_text("".join(json.dumps(line) + "\n" for line in wire))
    sub = folder / "subagents" / "a1b2c3"
    sub.mkdir(parents=True)
    (sub / "context.jsonl").write_text(
        "".join(
            json.dumps(line) + "\n"
            for line in [
                {"role": "user", "content": "run the tests"},
                {"role": "assistant", "content": [{"type": "text", "text": "tests pass"}]},
            ]
        )
    )
    return folder


def test_a_kimi_session_is_read_whole_and_as_kimi_s(tmp_path):
    folder = kimi_session(tmp_path)
    for name in ("context.jsonl", "wire.jsonl"):
        assert [a for a, adapter in ADAPTERS.items() if adapter.claims(folder / name)] == ["kimi-cli"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi")
        refresh_pending(conn)
        for path in (folder / "context.jsonl", folder / "wire.jsonl"):
            raws = conn.execute(
                "SELECT e.raw, e.newline FROM entries e JOIN source_files f ON f.id = e.source_file_id "
                "WHERE f.path = ? ORDER BY e.byte_offset",
                (str(path),),
            ).fetchall()
            assert b"".join(bytes(r) + b"\n" * n for r, n in raws) == path.read_bytes()
        row = conn.execute(
            "SELECT source, project_path, created_at FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert row == ("kimi-cli", CWD, 1781810000000)
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content and m.role in ("user", "assistant")] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
        ]
        assert any(m.thinking == "look at cart.py" for m in shown)
        calls = {c.name: c.status for m in shown for c in m.tool_calls}
        assert calls == {"StrReplaceFile": "completed", "Agent": "completed"}
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert tuple(tokens) == (200, 40, 1000)
        child = conn.execute(
            "SELECT id, parent_session_id, tool_call_id FROM agent_sessions WHERE is_subagent = 1"
        ).fetchone()
        assert child == (f"{SID}:agent-a1b2c3", SID, "Agent:1")
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("cart.py", 1, 1)
        ]
    finally:
        conn.close()


def test_a_kimi_session_resumes_with_its_own_command(tmp_path, fake_agents, sandbox):
    kimi_session(tmp_path)
    (fake_agents / "kimi").write_text((fake_agents / "claude").read_text())
    (fake_agents / "kimi").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi")
        plan = resume_plan(conn, SID)
    finally:
        conn.close()
    assert plan.command == f"cd {CWD} && kimi -r {SID}"
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["kimi", str(sandbox), "-r", SID]
    ]
