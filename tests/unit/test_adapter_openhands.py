"""OpenHands' conversation folders (core/adapters/openhands.py): base_state.json and every event file
read as one OpenHands session, each stored byte for byte, calls joined to their results (a rejected
and an errored one too), the folder, model and token totals from the state, edits from
`file_editor`, and its resume command."""

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

SID = "5d2f0c9e8a7b4c1d9e3f2a1b0c9d8e7f"
CWD = "/home/dev/shop"


def _call(n: int, tool: str, call_id: str, args: dict, thought: str = "") -> dict:
    return {
        "kind": "ActionEvent",
        "id": f"00000000-0000-4000-8000-00000000000{n}",
        "timestamp": f"2026-03-02T10:00:0{n}.000000",
        "source": "agent",
        "thought": [{"type": "text", "text": thought}] if thought else [],
        "action": {"kind": "X", **args},
        "tool_name": tool,
        "tool_call_id": call_id,
        "tool_call": {"id": call_id, "name": tool, "arguments": json.dumps(args), "origin": "completion"},
        "llm_response_id": "chatcmpl-1",
        "security_risk": "LOW",
    }


def openhands_conversation(root: Path) -> Path:
    folder = root / ".openhands" / "conversations" / SID
    (folder / "events").mkdir(parents=True)
    (folder / "base_state.json").write_text(
        json.dumps(
            {
                "id": "5d2f0c9e-8a7b-4c1d-9e3f-2a1b0c9d8e7f",
                "agent": {"kind": "Agent", "llm": {"model": "litellm_proxy/claude-sonnet-4-5"}},
                "workspace": {"kind": "LocalWorkspace", "working_dir": CWD},
                "persistence_dir": str(folder),
                "execution_status": "finished",
                "stats": {
                    "usage_to_metrics": {
                        "agent": {
                            "model_name": "litellm_proxy/claude-sonnet-4-5",
                            "accumulated_cost": 0.25,
                            "accumulated_token_usage": {
                                "prompt_tokens": 1200,
                                "completion_tokens": 80,
                                "cache_read_tokens": 900,
                                "cache_write_tokens": 30,
                            },
                        }
                    }
                },
            }
        )
    )
    edit = {
        "command": "str_replace",
        "path": f"{CWD}/cart.py",
        "old_str": "total = None",
        "new_str": "total = 0",
    }
    events = [
        {
            "kind": "SystemPromptEvent",
            "id": "00000000-0000-4000-8000-000000000000",
            "timestamp": "2026-03-02T10:00:00.000000",
            "source": "agent",
            "system_prompt": {"type": "text", "text": "You are OpenHands agent"},
            "tools": [],
        },
        {
            "kind": "MessageEvent",
            "id": "00000000-0000-4000-8000-000000000001",
            "timestamp": "2026-03-02T10:00:01.000000",
            "source": "user",
            "llm_message": {"role": "user", "content": [{"type": "text", "text": "fix the cart total"}]},
            "activated_skills": [],
        },
        _call(2, "file_editor", "toolu_1", edit, "Fixing it."),
        _call(3, "terminal", "toolu_2", {"command": "rm -rf build"}),
        _call(4, "file_editor", "toolu_3", {"command": "view", "path": f"{CWD}/x.py"}),
        {
            "kind": "ObservationEvent",
            "id": "00000000-0000-4000-8000-000000000005",
            "timestamp": "2026-03-02T10:00:05.000000",
            "source": "environment",
            "tool_name": "file_editor",
            "tool_call_id": "toolu_1",
            "observation": {
                "kind": "FileEditorObservation",
                "content": [{"type": "text", "text": "The file was edited"}],
                "is_error": False,
            },
            "action_id": "00000000-0000-4000-8000-000000000002",
        },
        {
            "kind": "UserRejectObservation",
            "id": "00000000-0000-4000-8000-000000000006",
            "timestamp": "2026-03-02T10:00:06.000000",
            "source": "environment",
            "tool_name": "terminal",
            "tool_call_id": "toolu_2",
            "rejection_reason": "not that",
            "action_id": "00000000-0000-4000-8000-000000000003",
        },
        {
            "kind": "AgentErrorEvent",
            "id": "00000000-0000-4000-8000-000000000007",
            "timestamp": "2026-03-02T10:00:07.000000",
            "source": "agent",
            "tool_name": "file_editor",
            "tool_call_id": "toolu_3",
            "error": "no such file",
        },
        {
            "kind": "MessageEvent",
            "id": "00000000-0000-4000-8000-000000000008",
            "timestamp": "2026-03-02T10:00:08.000000",
            "source": "agent",
            "llm_message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
            "llm_response_id": "chatcmpl-2",
        },
        {
            "kind": "SomethingNewEvent",
            "id": "00000000-0000-4000-8000-000000000009",
            "timestamp": "2026-03-02T10:00:09.000000",
            "source": "environment",
        },
    ]
    for index, event in enumerate(events):
        name = f"event-{index:05d}-{event['id']}.json"
        (folder / "events" / name).write_text(json.dumps(event, separators=(",", ":")))
    (folder / "events" / ".eventlog.lock").write_text("")
    return folder


def test_an_openhands_conversation_is_read_whole_and_as_openhands(tmp_path):
    folder = openhands_conversation(tmp_path)
    files = [folder / "base_state.json", *sorted((folder / "events").glob("event-*.json"))]
    for path in files:
        assert [a for a, adapter in ADAPTERS.items() if adapter.claims(path)] == ["openhands"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".openhands")
        refresh_pending(conn)
        for path in files:
            raws = conn.execute(
                "SELECT e.raw, e.newline FROM entries e JOIN source_files f ON f.id = e.source_file_id "
                "WHERE f.path = ? ORDER BY e.byte_offset",
                (str(path),),
            ).fetchall()
            assert b"".join(bytes(r) + b"\n" * n for r, n in raws) == path.read_bytes()
        assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == len(files)
        row = conn.execute("SELECT source, project_path FROM agent_sessions WHERE id = ?", (SID,)).fetchone()
        assert row == ("openhands", CWD)
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content and m.role in ("user", "assistant")] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
        ]
        calls = {c.name + ":" + c.id: c.status for m in shown for c in m.tool_calls}
        assert calls == {
            "file_editor:toolu_1": "completed",
            "terminal:toolu_2": "rejected",
            "file_editor:toolu_3": "failed",
        }
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?", (SID,)
        ).fetchone()
        assert tuple(tokens) == (1200, 80, 900)
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            (f"{CWD}/cart.py", 1, 1)
        ]
    finally:
        conn.close()


def test_an_openhands_conversation_resumes_with_its_own_command(tmp_path, fake_agents, sandbox):
    openhands_conversation(tmp_path)
    (fake_agents / "openhands").write_text((fake_agents / "claude").read_text())
    (fake_agents / "openhands").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".openhands")
        plan = resume_plan(conn, SID)
    finally:
        conn.close()
    assert plan.command == f"cd {CWD} && openhands --resume {SID}"
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["openhands", str(sandbox), "--resume", SID]
    ]
