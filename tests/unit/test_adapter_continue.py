"""Continue's sessions (core/adapters/continue_dev.py): a session file and sessions.json read as one
Continue session, every byte of both stored, its folder from the IDE's file:// URI, calls joined to
the results its toolCallStates (or the CLI's tool messages) hold, tokens per message or per session,
edits, and its command."""

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

SID = "3b9e2c41-7a1d-4f5e-8c2b-0d9e8f7a6b5c"
CLI_SID = "8c1f0a2e-4d3b-4a6c-9e8f-7b6a5c4d3e2f"
CWD = "/home/dev/shop"


def call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def continue_sessions(root: Path) -> Path:
    folder = root / ".continue" / "sessions"
    folder.mkdir(parents=True)
    edit = {"filepath": "cart.py", "old_string": "total = None", "new_string": "total = 0"}
    ide = {
        "sessionId": SID,
        "title": "Fix the cart total",
        "workspaceDirectory": f"file://{CWD}",
        "history": [
            {
                "message": {"role": "user", "content": [{"type": "text", "text": "fix the cart total"}]},
                "contextItems": [{"name": "cart.py", "description": "cart.py", "content": "total = None"}],
                "editorState": {"type": "doc", "content": []},
            },
            {
                "message": {
                    "role": "assistant",
                    "content": "Fixing it.",
                    "toolCalls": [call("call_1", "single_find_and_replace", edit)],
                    "usage": {
                        "promptTokens": 1200,
                        "completionTokens": 40,
                        "promptTokensDetails": {"cachedTokens": 1000},
                    },
                },
                "contextItems": [],
                "reasoning": {"active": False, "text": "look at cart.py", "startAt": 1781810001000},
                "promptLogs": [
                    {"modelTitle": "GPT-5", "modelProvider": "openai", "prompt": "…", "completion": ""}
                ],
                "toolCallStates": [
                    {
                        "toolCallId": "call_1",
                        "toolCall": call("call_1", "single_find_and_replace", edit),
                        "status": "done",
                        "parsedArgs": edit,
                        "output": [{"name": "Edit", "description": "", "content": "Edited cart.py"}],
                    }
                ],
            },
            {"message": {"role": "assistant", "content": "Done."}, "contextItems": []},
            {"message": {"role": "something_new", "content": "x"}, "contextItems": []},
        ],
        "mode": "agent",
        "chatModelTitle": "GPT-5",
        "usage": {"promptTokens": 9999, "completionTokens": 9999, "totalCost": 0.5},
    }
    (folder / f"{SID}.json").write_text(json.dumps(ide, indent=2))
    cli = {
        "sessionId": CLI_SID,
        "title": "New Session",
        "workspaceDirectory": "/home/dev/api",
        "history": [
            {"message": {"role": "user", "content": "run the tests"}, "contextItems": []},
            {
                "message": {
                    "role": "assistant",
                    "content": "",
                    "toolCalls": [call("tc1", "Bash", {"command": "pytest"})],
                },
                "contextItems": [],
            },
            {"message": {"role": "tool", "content": "3 passed", "toolCallId": "tc1"}, "contextItems": []},
            {"message": {"role": "assistant", "content": "All pass."}, "contextItems": []},
        ],
        "usage": {
            "promptTokens": 300,
            "completionTokens": 20,
            "promptTokensDetails": {"cachedTokens": 100, "cacheWriteTokens": 50},
            "totalCost": 0.01,
        },
    }
    (folder / f"{CLI_SID}.json").write_text(json.dumps(cli, indent=2))
    listed = [
        {
            "sessionId": SID,
            "title": "Fix the cart total",
            "dateCreated": "1781810000000",
            "workspaceDirectory": f"file://{CWD}",
            "messageCount": 2,
        },
        {
            "sessionId": CLI_SID,
            "title": "New Session",
            "dateCreated": "1781820000000",
            "workspaceDirectory": "/home/dev/api",
            "messageCount": 2,
        },
    ]
    (folder / "sessions.json").write_text(json.dumps(listed, indent=2))
    return folder


def test_continue_sessions_are_read_whole_and_as_continue_s(tmp_path):
    folder = continue_sessions(tmp_path)
    for name in (f"{SID}.json", "sessions.json"):
        assert [a for a, adapter in ADAPTERS.items() if adapter.claims(folder / name)] == ["continue"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".continue")
        refresh_pending(conn)
        for path in sorted(folder.iterdir()):
            raws = conn.execute(
                "SELECT e.raw, e.newline FROM entries e JOIN source_files f ON f.id = e.source_file_id "
                "WHERE f.path = ? ORDER BY e.byte_offset",
                (str(path),),
            ).fetchall()
            assert b"".join(bytes(r) + b"\n" * n for r, n in raws) == path.read_bytes()
        row = conn.execute(
            "SELECT source, project_path, created_at, title, model FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert row == ("continue", CWD, 1781810000000, "Fix the cart total", "GPT-5")
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content and m.role in ("user", "assistant")] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
        ]
        assert any(m.thinking == "look at cart.py" for m in shown)
        assert {c.name: c.status for m in shown for c in m.tool_calls} == {
            "single_find_and_replace": "completed"
        }
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert tuple(tokens) == (200, 40, 1000)  # the message's, not the session's totals again
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("cart.py", 1, 1)
        ]
        cli = messages(conn, CLI_SID)
        assert {c.name: c.status for m in cli for c in m.tool_calls} == {"Bash": "completed"}
        row = conn.execute(
            "SELECT project_path, created_at, input_tokens, cache_creation_tokens, cache_read_tokens "
            "FROM agent_sessions WHERE id = ?",
            (CLI_SID,),
        ).fetchone()
        assert tuple(row) == ("/home/dev/api", 1781820000000, 300, 50, 100)
    finally:
        conn.close()


def test_a_continue_session_opens_with_its_own_command(tmp_path, fake_agents, sandbox):
    continue_sessions(tmp_path)
    (fake_agents / "cn").write_text((fake_agents / "claude").read_text())
    (fake_agents / "cn").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".continue")
        plan = resume_plan(conn, SID)
    finally:
        conn.close()
    assert plan.command == f"cd {CWD} && cn --fork {SID}"
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["cn", str(sandbox), "--fork", SID]
    ]
