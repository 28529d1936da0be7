"""Kiro CLI's session logs (core/adapters/kiro.py): found under `$KIRO_HOME/sessions/cli` and under a
`--source` folder at any depth, read as Kiro's alone, every line and metadata file stored byte for
byte, calls joined to their results (from `content` or from `results` alone), a subagent session
under its parent, thinking and its model, and `kiro-cli chat --resume-id ID` run with a fake binary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from threadloom.core.actions.fork import resume_plan
from threadloom.core.adapters import ADAPTERS
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.conftest import ingest
from tests.support import home_env, run_printed

ROOT = Path(__file__).resolve().parents[2]
SID = "4f1b2c3d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
CHILD = "7a8b9c0d-1e2f-4a3b-9c4d-5e6f7a8b9c0d"


def envelope(kind: str, message: str, content: list, **data: object) -> dict:
    return {"version": "v1", "kind": kind, "data": {"message_id": message, "content": content, **data}}


def text(value: str) -> dict:
    return {"kind": "text", "data": value}


def metadata(sid: str, parent: str | None, title: str) -> dict:
    return {
        "session_id": sid,
        "cwd": "/home/dev/shop",
        "created_at": "2026-06-07T14:14:27.290365Z",
        "updated_at": "2026-06-07T14:20:36.404077Z",
        "title": title,
        "parent_session_id": parent,
        "session_created_reason": "subagent",
        "session_state": {
            "version": "v1",
            "rts_model_state": {
                "conversation_id": sid,
                "model_info": {"model_id": "claude-sonnet-4.6", "context_window_tokens": 200000},
                "context_usage_percentage": 3.5,
            },
            "agent_name": None,
        },
    }


def kiro_sessions(folder: Path) -> Path:
    folder.mkdir(parents=True)
    edit = {
        "command": "str_replace",
        "path": "/home/dev/shop/cart.py",
        "old_str": "total = None",
        "new_str": "total = 0",
    }
    lines = [
        envelope("Prompt", "m1", [text("fix the cart total")], meta={"timestamp": 1780841667}),
        envelope(
            "AssistantMessage",
            "m2",
            [
                {
                    "kind": "thinking",
                    "data": {"text": "look at cart.py", "signature": "c2ln", "modelId": "claude-opus-4.8"},
                },
                text("Fixing it."),
                {
                    "kind": "toolUse",
                    "data": {
                        "toolUseId": "tooluse_edit",
                        "name": "write",
                        "input": {**edit, "__tool_use_purpose": "fix"},
                    },
                },
                {
                    "kind": "toolUse",
                    "data": {"toolUseId": "tooluse_ls", "name": "shell", "input": {"command": "pytest -q"}},
                },
                {
                    "kind": "toolUse",
                    "data": {
                        "toolUseId": "tooluse_rd",
                        "name": "read",
                        "input": {"operations": [{"mode": "Line", "path": "/home/dev/shop/cart.py"}]},
                    },
                },
            ],
        ),
        envelope(
            "ToolResults",
            "m3",
            [
                {
                    "kind": "toolResult",
                    "data": {"toolUseId": "tooluse_edit", "content": [text("edited")], "status": "success"},
                },
                {
                    "kind": "toolResult",
                    "data": {
                        "toolUseId": "tooluse_ls",
                        "content": [
                            {
                                "kind": "json",
                                "data": {"exit_status": "exit status: 1", "stdout": "1 failed", "stderr": ""},
                            }
                        ],
                        "status": "error",
                    },
                },
            ],
            results={
                "tooluse_ls": {"tool": {}, "result": {"Error": {"items": [{"Text": "1 failed"}]}}},
                # a result given under `results` alone
                "tooluse_rd": {"tool": {}, "result": {"Success": {"items": [{"Text": "total = 0"}]}}},
            },
        ),
        envelope("AssistantMessage", "m4", [text("Done.")]),
        {"version": "v1", "kind": "SomeFutureKind", "data": {}},
    ]
    path = folder / f"{SID}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (folder / f"{SID}.json").write_text(json.dumps(metadata(SID, None, "fix the cart total"), indent=2))
    (folder / f"{SID}.history").write_text("/model\nfix the cart total\n")
    child = [
        envelope("Prompt", "c1", [text("run the tests")], meta={"timestamp": 1780841700}),
        envelope("AssistantMessage", "c2", [text("tests pass")]),
    ]
    (folder / f"{CHILD}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in child))
    (folder / f"{CHILD}.json").write_text(json.dumps(metadata(CHILD, SID, "run the tests"), indent=2))
    return path


def test_a_kiro_session_is_read_whole_and_as_kiro_s(tmp_path):
    source = kiro_sessions(tmp_path / "backup" / "laptop" / ".kiro" / "sessions" / "cli")
    claimed = {p.name: [n for n, a in ADAPTERS.items() if a.claims(p)] for p in source.parent.iterdir()}
    assert claimed == {
        f"{SID}.jsonl": ["kiro-cli"],
        f"{SID}.json": ["kiro-cli"],
        f"{SID}.history": [],
        f"{CHILD}.jsonl": ["kiro-cli"],
        f"{CHILD}.json": ["kiro-cli"],
    }
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / "backup")  # found at any depth
        refresh_pending(conn)
        for path in source.parent.glob("*.json*"):
            raws = conn.execute(
                "SELECT e.raw, e.newline FROM entries e JOIN source_files f ON f.id = e.source_file_id "
                "WHERE f.path = ? ORDER BY e.byte_offset",
                (str(path),),
            ).fetchall()
            assert b"".join(bytes(r) + b"\n" * n for r, n in raws) == path.read_bytes(), path
        row = conn.execute(
            "SELECT id, source, project_path, model FROM agent_sessions WHERE is_subagent = 0"
        ).fetchone()
        assert tuple(row) == (SID, "kiro-cli", "/home/dev/shop", "claude-opus-4.8")
        shown = messages(conn, SID)
        assert [(m.role, m.content) for m in shown if m.content] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
        ]
        assert shown[0].timestamp == 1780841667000
        assert any(m.thinking == "look at cart.py" for m in shown)
        calls = {c.name: c.status for m in shown for c in m.tool_calls}
        assert calls == {"write": "completed", "shell": "failed", "read": "completed"}
        params = conn.execute(
            "SELECT params_json FROM agent_tool_calls WHERE id = 'tooluse_edit'"
        ).fetchone()[0]
        assert "__tool_use_purpose" not in (params or "")
        child = conn.execute(
            "SELECT id, parent_session_id, kind, project_path FROM agent_sessions WHERE is_subagent = 1"
        ).fetchone()
        assert tuple(child) == (CHILD, SID, "subagent", "/home/dev/shop")
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("/home/dev/shop/cart.py", 1, 1)
        ]
    finally:
        conn.close()


def test_a_kiro_session_resumes_by_its_id(tmp_path, fake_agents, sandbox):
    kiro_sessions(tmp_path / ".kiro" / "sessions" / "cli")
    (fake_agents / "kiro-cli").write_text((fake_agents / "claude").read_text())
    (fake_agents / "kiro-cli").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kiro")
        plan = resume_plan(conn, SID)
    finally:
        conn.close()
    assert plan.command == f"cd /home/dev/shop && kiro-cli chat --resume-id {SID}"
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["kiro-cli", str(sandbox), "chat", "--resume-id", SID]
    ]


def test_kiro_home_moves_where_sessions_are_looked_for_and_sources_lists_them(tmp_path):
    env = home_env(tmp_path, KIRO_HOME=str(tmp_path / "elsewhere"))
    kiro_sessions(tmp_path / "elsewhere" / "sessions" / "cli")
    dbfile = str(tmp_path / "a.db")
    run = [sys.executable, "-m", "threadloom.core.cli"]
    done = subprocess.run(
        [*run, "ingest", "--db", dbfile, "-q"], env=env, cwd=ROOT, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    shown = subprocess.run(
        [*run, "sources", "--db", dbfile, "--json"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    data = json.loads(shown.stdout)
    [place] = [p for p in data["default_locations"] if p["agent"] == "kiro-cli"]
    assert place == {
        "agent": "kiro-cli",
        "path": str(tmp_path / "elsewhere" / "sessions" / "cli"),
        "exists": True,
        "files": 4,
    }
    assert {
        k: v for k, v in next(i for i in data["ingested"] if i["agent"] == "kiro-cli").items() if k != "bytes"
    } == {"agent": "kiro-cli", "status": "ok", "files": 4}
