"""Factory Droid's session logs (core/adapters/droid.py): read as Droid's, every record stored byte
for byte, calls joined to their results, a Task subagent's own session linked to its call, tokens
from the settings sidecar, edits, and its resume and fork commands."""

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

SID = "2c179b50-6f1e-4c53-9a0e-3d8f1b2c4a55"
CHILD = "9a1f3c2e-0b4d-4e8a-8c6f-1d2e3f4a5b6c"


def message(n: int, parent: int | None, role: str, content: list, **more: object) -> dict:
    return {
        "type": "message",
        "id": f"00000000-0000-4000-8000-{n:012d}",
        "timestamp": f"2026-06-18T20:11:{n:02d}.000Z",
        **({"parentId": f"00000000-0000-4000-8000-{parent:012d}"} if parent else {}),
        "message": {"role": role, "content": content, **more},
    }


def droid_sessions(root: Path) -> Path:
    folder = root / ".factory" / "sessions" / "-home-dev-shop"
    folder.mkdir(parents=True)
    header = {
        "type": "session_start",
        "id": SID,
        "title": "fix the cart total",
        "sessionTitle": "Cart total fix",
        "owner": "dev",
        "version": 2,
        "cwd": "/home/dev/shop",
        "isSessionTitleManuallySet": False,
        "sessionTitleAutoStage": "first_message",
    }
    multi = {
        "file_path": "/home/dev/shop/cart.py",
        "edits": [
            {"old_str": "total = None", "new_str": "total = 0"},
            {"old_str": "a = 1", "new_str": "a = 2"},
        ],
    }
    lines = [
        header,
        message(
            1,
            None,
            "user",
            [
                {"type": "text", "text": "<system-reminder>cwd is /home/dev/shop</system-reminder>"},
                {"type": "text", "text": "fix the cart total"},
            ],
        ),
        message(
            2,
            1,
            "assistant",
            [
                {"type": "thinking", "thinking": "look at cart.py", "signature": "s", "durationMs": 5},
                {"type": "text", "text": "Fixing it."},
                {"type": "tool_use", "id": "call_edit", "name": "MultiEdit", "input": multi},
                {"type": "tool_use", "id": "call_task", "name": "Task", "input": {"prompt": "run the tests"}},
            ],
            modelId="glm-5.2",
        ),
        message(
            3,
            2,
            "user",
            [
                {"type": "tool_result", "tool_use_id": "call_edit", "is_error": False, "content": "edited"},
                {
                    "type": "tool_result",
                    "tool_use_id": "call_task",
                    "is_error": False,
                    "content": "tests pass",
                },
            ],
        ),
        message(4, 3, "assistant", [{"type": "text", "text": "Done."}], modelId="glm-5.2"),
        {
            "type": "todo_state",
            "id": "t1",
            "timestamp": "2026-06-18T20:11:05.000Z",
            "todos": {"todos": "1. [x] fix"},
        },
        {"type": "some_future_state", "id": "f1"},
    ]
    path = folder / f"{SID}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (folder / f"{SID}.settings.json").write_text(
        json.dumps(
            {
                "model": "glm-5.2",
                "tokenUsage": {
                    "inputTokens": 200,
                    "outputTokens": 40,
                    "cacheCreationTokens": 0,
                    "cacheReadTokens": 1000,
                    "thinkingTokens": 10,
                },
            },
            indent=2,
        )
    )
    child = [
        {
            **header,
            "id": CHILD,
            "callingSessionId": SID,
            "callingToolUseId": "call_task",
            "sessionTitle": "tests",
        },
        message(11, None, "user", [{"type": "text", "text": "run the tests"}]),
        message(12, 11, "assistant", [{"type": "text", "text": "tests pass"}], modelId="glm-5.2"),
    ]
    (folder / f"{CHILD}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in child))
    return path


def test_a_droid_session_is_read_whole_and_as_droid_s(tmp_path):
    source = droid_sessions(tmp_path)
    assert [name for name, a in ADAPTERS.items() if a.claims(source)] == ["factory-droid"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".factory")
        refresh_pending(conn)
        for path in source.parent.iterdir():
            raws = conn.execute(
                "SELECT e.raw, e.newline FROM entries e JOIN source_files f ON f.id = e.source_file_id "
                "WHERE f.path = ? ORDER BY e.byte_offset",
                (str(path),),
            ).fetchall()
            assert b"".join(bytes(r) + b"\n" * n for r, n in raws) == path.read_bytes(), path
        row = conn.execute(
            "SELECT id, source, title, project_path, model FROM agent_sessions WHERE is_subagent = 0"
        ).fetchone()
        assert row == (SID, "factory-droid", "Cart total fix", "/home/dev/shop", "glm-5.2")
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
        ]
        assert any(m.thinking == "look at cart.py" for m in shown)
        calls = {c.name: c.status for m in shown for c in m.tool_calls}
        assert calls == {"MultiEdit": "completed", "Task": "completed"}
        child = conn.execute(
            "SELECT id, parent_session_id, tool_call_id FROM agent_sessions WHERE is_subagent = 1"
        ).fetchone()
        assert child == (CHILD, SID, "call_task")
        assert conn.execute(
            "SELECT child_session_id FROM agent_tool_calls WHERE id = 'call_task'"
        ).fetchone() == (CHILD,)
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert tuple(tokens) == (200, 50, 1000)
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("/home/dev/shop/cart.py", 2, 2)
        ]
    finally:
        conn.close()


def test_a_droid_session_resumes_and_forks_with_its_own_commands(tmp_path, fake_agents, sandbox):
    droid_sessions(tmp_path)
    (fake_agents / "droid").write_text((fake_agents / "claude").read_text())
    (fake_agents / "droid").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".factory")
        plan = resume_plan(conn, SID)
        forked = resume_plan(conn, SID, fork_at_end=True)
    finally:
        conn.close()
    assert plan.command == "cd /home/dev/shop && droid --resume " + SID
    assert forked.command == "cd /home/dev/shop && droid --fork " + SID
    for command, flag in ((plan.command, "--resume"), (forked.command, "--fork")):
        assert run_printed(command.split(" && ", 1)[1], fake_agents, sandbox) == [
            ["droid", str(sandbox), flag, SID]
        ]
