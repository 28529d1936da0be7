"""pi's session logs (core/adapters/pi.py): read as pi's, every record stored byte for byte, the
entry tree (a branch made with /tree) kept, calls joined to their results, tokens and recorded cost,
the session's name as its title, edits, a fork linked to its source, and its resume command."""

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

SID = "5b1c7f7e-2a4d-4c1e-9b55-0c2f4e6b8a10"
FORK = "6c2d8a8f-3b5e-4d2f-8c66-1d3a5f7c9b21"


def entry(n: int, parent: int | None, kind: str, **more: object) -> dict:
    return {
        "type": kind,
        "id": f"{n:08x}",
        "parentId": f"{parent:08x}" if parent else None,
        "timestamp": f"2026-03-02T09:00:{n:02d}.000Z",
        **more,
    }


def pi_sessions(root: Path) -> Path:
    folder = root / ".pi" / "agent" / "sessions" / "--home-dev-shop--"
    folder.mkdir(parents=True)
    edit = {"path": "cart.py", "oldText": "total = None", "newText": "total = 0"}
    usage = {
        "input": 200,
        "output": 40,
        "cacheRead": 1000,
        "cacheWrite": 0,
        "totalTokens": 1240,
        "cost": {"total": 0.01},
    }
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": SID,
            "timestamp": "2026-03-02T09:00:00.000Z",
            "cwd": "/home/dev/shop",
        },
        entry(1, None, "model_change", provider="anthropic", modelId="claude-sonnet-4-5"),
        entry(2, 1, "message", message={"role": "user", "content": "fix the cart total", "timestamp": 1}),
        entry(
            3,
            2,
            "message",
            message={
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "look at cart.py"},
                    {"type": "text", "text": "Fixing it."},
                    {"type": "toolCall", "id": "call_1", "name": "edit", "arguments": edit},
                ],
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage,
                "stopReason": "toolUse",
            },
        ),
        entry(
            4,
            3,
            "message",
            message={
                "role": "toolResult",
                "toolCallId": "call_1",
                "toolName": "edit",
                "content": [{"type": "text", "text": "Successfully replaced text in cart.py."}],
                "isError": False,
            },
        ),
        entry(
            5,
            4,
            "message",
            message={
                "role": "assistant",
                "content": [{"type": "text", "text": "Done."}],
                "model": "claude-sonnet-4-5",
            },
        ),
        # a branch from the first prompt, made with /tree
        entry(6, 2, "branch_summary", fromId="00000005", summary="set total to zero"),
        entry(
            7,
            6,
            "message",
            message={"role": "user", "content": [{"type": "text", "text": "use Decimal instead"}]},
        ),
        entry(
            8,
            7,
            "message",
            message={
                "role": "bashExecution",
                "command": "pytest",
                "output": "ok",
                "exitCode": 0,
                "cancelled": False,
                "truncated": False,
            },
        ),
        entry(9, 8, "session_info", name="Cart total"),
        entry(10, 9, "some_future_entry", x=1),
    ]
    path = folder / f"2026-03-02T09-00-00-000Z_{SID}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    fork = [
        {
            "type": "session",
            "version": 3,
            "id": FORK,
            "timestamp": "2026-03-03T09:00:00.000Z",
            "cwd": "/home/dev/shop",
            "parentSession": str(path),
        },
        entry(1, None, "message", message={"role": "user", "content": "fix the cart total"}),
    ]
    (folder / f"2026-03-03T09-00-00-000Z_{FORK}.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in fork)
    )
    return path


def test_a_pi_session_is_read_whole_and_as_pi_s(tmp_path):
    source = pi_sessions(tmp_path)
    assert [name for name, a in ADAPTERS.items() if a.claims(source)] == ["pi"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".pi")
        refresh_pending(conn)
        raws = conn.execute(
            "SELECT e.raw, e.newline FROM entries e JOIN source_files f ON f.id = e.source_file_id "
            "WHERE f.path = ? ORDER BY e.byte_offset",
            (str(source),),
        ).fetchall()
        assert b"".join(bytes(r) + b"\n" * n for r, n in raws) == source.read_bytes()
        row = conn.execute(
            "SELECT source, title, project_path, model FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert row == ("pi", "Cart total", "/home/dev/shop", "claude-sonnet-4-5")
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content and m.role in ("user", "assistant")][:4] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
            ("user", "use Decimal instead"),
        ]
        assert any(m.thinking == "look at cart.py" for m in shown)
        calls = {c.name: c.status for m in shown for c in m.tool_calls}
        assert calls == {"edit": "completed", "bash": "completed"}
        # two prompts, the second on a branch from the first: two turns, the second's parent the first's
        turns = conn.execute("SELECT count(*) FROM agent_turns WHERE session_id = ?", (SID,)).fetchone()[0]
        assert turns == 2
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert tuple(tokens) == (200, 40, 1000)
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("cart.py", 1, 1)
        ]
        assert conn.execute(
            "SELECT forked_from_session_id FROM agent_sessions WHERE id = ?", (FORK,)
        ).fetchone() == (SID,)
    finally:
        conn.close()


def test_a_pi_session_resumes_with_its_own_command(tmp_path, fake_agents, sandbox):
    pi_sessions(tmp_path)
    (fake_agents / "pi").write_text((fake_agents / "claude").read_text())
    (fake_agents / "pi").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".pi")
        plan = resume_plan(conn, SID)
    finally:
        conn.close()
    assert plan.command == "cd /home/dev/shop && pi --session " + SID
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["pi", str(sandbox), "--session", SID]
    ]


def test_pi_agent_dir_is_honoured(tmp_path, monkeypatch):
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert ADAPTERS["pi"].default_roots() == [tmp_path / "agent" / "sessions"]


def test_command_codes_transcripts_are_not_taken_for_pi_s(tmp_path):
    """Command Code writes pi's session header in `~/.commandcode/projects/`: left unread, and said to
    be Command Code's where unclaimed files are listed."""
    from threadloom.core.adapters import stranger

    folder = tmp_path / ".commandcode" / "projects" / "home-dev-shop"
    folder.mkdir(parents=True)
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-05-18T10:00:00Z", "cwd": "/w"}
    path = folder / "s1.jsonl"
    path.write_text(json.dumps(header) + "\n")
    assert [name for name, a in ADAPTERS.items() if a.claims(path)] == []
    assert "Command Code" in (stranger(path) or "")
