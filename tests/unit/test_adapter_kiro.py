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

from tests.builders.kiro import CHILD, SID, kiro_sessions
from tests.support import home_env, ingest, run_printed

ROOT = Path(__file__).resolve().parents[2]


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


def test_a_rebuild_reads_a_log_s_metadata_as_the_archive_kept_it(tmp_path):
    """A log's metadata file (`<id>.json`) names its session, its parent and the task a subagent
    was given: it is kept, but a replay (a schema upgrade's, `ingest --rebuild`) read it from the
    disk, so once the session was deleted a rebuild told the subagent otherwise (its title taken
    from its prompt). A replay reads it as the archive kept it."""
    import shutil

    from threadloom.core.ingest.ledger import rebuild_derived

    folder = tmp_path / "sessions" / "cli"
    kiro_sessions(folder)
    facts = (
        "SELECT id, kind, parent_session_id, task_description, project_path, created_at, title "
        "FROM agent_sessions ORDER BY id"
    )
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, folder)
        read_then = conn.execute(facts).fetchall()
        assert [row[2:4] for row in read_then if row[0] == CHILD] == [(SID, "run the tests")]
        shutil.rmtree(folder)
        rebuild_derived(conn)
        assert conn.execute(facts).fetchall() == read_then
    finally:
        conn.close()
