"""Kimi CLI's session logs (core/adapters/kimi.py): its context and wire read as one Kimi CLI session,
every record stored byte for byte, its folder found in kimi.json, calls joined to their results,
tokens from the wire, a subagent's context under its session, edits, and its resume command."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from threadloom.core.actions.fork import resume_plan
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.base import ForkError
from threadloom.core.insight.stats import refresh_pending
from threadloom.core.present.render import render_session
from threadloom.core.read.query import messages, resolve_session
from threadloom.core.store import db

from tests.builders.kimi import CWD, SID, kimi_session
from tests.support import ingest, run_printed, stored_bytes


def test_a_kimi_session_is_read_whole_and_as_kimi_s(tmp_path):
    folder = kimi_session(tmp_path)
    for name in ("context.jsonl", "wire.jsonl"):
        assert [a for a, adapter in ADAPTERS.items() if adapter.claims(folder / name)] == ["kimi-cli"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi")
        refresh_pending(conn)
        for path in (folder / "context.jsonl", folder / "wire.jsonl"):
            assert stored_bytes(conn, path) == path.read_bytes()
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


def jsonl(path, lines) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_context_set_aside_and_an_old_subagent_s_are_read_as_children(tmp_path):
    """`/clear` (a revert, a compaction) moves the context aside as `context_<n>.jsonl`, and releases
    before subagents/ folders wrote a `Task` subagent's context as `context_sub_<n>.jsonl` (as a real
    March 2026 session holds them): both were "not read", the conversation before the /clear gone
    from the session and its subagent's work with it; `kimi.json`, the one place the session's
    folder is named, was not kept."""
    folder = kimi_session(tmp_path)
    jsonl(
        folder / "context_1.jsonl",
        [
            {"role": "_system_prompt", "content": "sys"},
            {"role": "_checkpoint", "id": 0},
            {"role": "user", "content": "before the clear"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "delegating"}],
                "tool_calls": [
                    {
                        "type": "function",
                        "id": "Task:0",
                        "function": {
                            "name": "Task",
                            "arguments": json.dumps(
                                {"description": "audit", "subagent_name": "coder", "prompt": "audit the cart"}
                            ),
                        },
                    }
                ],
            },
            {"role": "tool", "content": [{"type": "text", "text": "audited"}], "tool_call_id": "Task:0"},
        ],
    )
    jsonl(
        folder / "context_sub_1.jsonl",
        [
            {"role": "_checkpoint", "id": 0},
            {"role": "user", "content": "audit the cart"},
            {"role": "assistant", "content": [{"type": "text", "text": "the cart is fine"}]},
        ],
    )
    registry = tmp_path / ".kimi" / "kimi.json"
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi")
        kept = sorted(
            (Path(p).name, kind)
            for p, kind in conn.execute("SELECT path, kind FROM source_files WHERE agent = 'kimi-cli'")
        )
        assert kept == [
            ("context.jsonl", "transcript"),  # the session's and its subagent's
            ("context.jsonl", "transcript"),
            ("context_1.jsonl", "transcript"),
            ("context_sub_1.jsonl", "transcript"),
            ("kimi.json", "side"),
            ("wire.jsonl", "transcript"),
        ]
        for path in (folder / "context_1.jsonl", folder / "context_sub_1.jsonl", registry):
            assert stored_bytes(conn, path) == path.read_bytes()
        sessions = {
            row[0]: row[1:]
            for row in conn.execute(
                "SELECT id, kind, is_subagent, parent_session_id, tool_call_id, project_path FROM agent_sessions"
            )
        }
        aside, sub = f"{SID}:context-1", f"{SID}:agent-sub-1"
        assert sessions[aside] == ("earlier context", 1, SID, None, CWD)
        assert sessions[sub] == ("subagent", 1, aside, "Task:0", CWD)
        assert [(m.role, m.content) for m in messages(conn, aside) if m.content] == [
            ("user", "before the clear"),
            ("assistant", "delegating"),
        ]
        assert [(m.role, m.content) for m in messages(conn, sub) if m.content] == [
            ("user", "audit the cart"),
            ("assistant", "the cart is fine"),
        ]
        # the session's own conversation is as it was
        assert [m.content for m in messages(conn, SID) if m.role == "user" and m.content] == [
            "fix the cart total"
        ]
        for child in (aside, sub):  # resumed through the session they belong to, said so
            with pytest.raises(ForkError, match=f"threadloom resume {SID}\\)"):
                resume_plan(conn, child)
    finally:
        conn.close()


def test_a_set_todo_list_shows_its_items_and_counts_the_done_ones(tmp_path):
    """SetTodoList names an item in `title` and says a finished one is `done`: `show` drew
    `0 of 3 done` with three blank items (a real session of 2026)."""
    sid = "33333333-2222-3333-4444-555555555555"
    folder = tmp_path / ".kimi" / "sessions" / hashlib.md5(CWD.encode()).hexdigest() / sid
    folder.mkdir(parents=True)
    todo_list = [
        {"title": "Deploy the frontend", "status": "done"},
        {"title": "Connect the domain", "status": "in_progress"},
        {"title": "Configure DNS", "status": "pending"},
    ]
    call = {"name": "SetTodoList", "arguments": json.dumps({"todos": todo_list})}
    lines = [
        {"role": "user", "content": "plan it"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Planning."}],
            "tool_calls": [{"type": "function", "id": "tool_T", "function": call}],
        },
        {"role": "tool", "content": "<system>Todo list updated</system>", "tool_call_id": "tool_T"},
    ]
    (folder / "context.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi")
        out = io.StringIO()
        render_session(Console(file=out, width=100, highlight=False), conn, resolve_session(conn, sid))
    finally:
        conn.close()
    shown = out.getvalue()
    assert "1 of 3 done · ◐ Connect the domain" in shown
    assert "☑ Deploy the frontend" in shown and "☐ Configure DNS" in shown


def test_a_restored_kimi_session_is_read_again_as_it_was(tmp_path):
    """A restore wrote a Kimi session as `<id>/context.jsonl`, its `sessions/<md5>/` left out, where
    no Kimi CLI (and no ingest) finds a session: `show --as-of` of a session rewritten since (a
    revert) said none matched. It is written from `sessions/` on, `kimi.json` beside, and reads back
    as the session it was."""
    from threadloom.core.actions.restore import as_of_archive, restore_session

    folder = kimi_session(tmp_path)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi")
        shown = [(m.role, m.content) for m in messages(conn, SID) if m.content]
        dest = tmp_path / "restored"
        restore_session(conn, SID, dest)
        relative = folder.relative_to(tmp_path / ".kimi")
        assert (dest / relative / "context.jsonl").read_bytes() == (folder / "context.jsonl").read_bytes()
        assert (dest / "kimi.json").is_file()
        then = as_of_archive(conn, SID, 2**62)
        try:
            assert [(m.role, m.content) for m in messages(then, SID) if m.content] == shown
            assert then.execute(
                "SELECT project_path FROM agent_sessions WHERE id = ?", (SID,)
            ).fetchone() == (CWD,)
        finally:
            then.close()
    finally:
        conn.close()


# ---------------------------------------------------------------------- Kimi Code (core/adapters/kimi_code.py)


def test_kimi_code_s_records_say_what_they_mean(tmp_path):
    """Each record of a Kimi Code log read by `normalize` straight: the prompt, the reply's pieces
    (one step's parts and calls one reply), calls and results by their ids, tokens and model from
    `usage.record`, a subagent's log as its own session under the main one, unknown types kept."""
    from threadloom.core.adapters.base import FileContext, RawRecord

    from tests.builders import kimi_code

    folder = kimi_code.kimi_code_session(tmp_path)
    adapter = ADAPTERS["kimi-code"]

    def read(path):
        ctx = FileContext(path, "transcript", path.parents[3].name)
        offset, out = 0, []
        for n, line in enumerate(path.read_bytes().split(b"\n"), 1):
            if line:
                out.append(adapter.normalize(RawRecord(offset, n, line), ctx))
            offset += len(line) + 1
        return out

    main = read(folder / "agents" / "main" / "wire.jsonl")
    assert {r.session_id for r in main} == {kimi_code.SID} and main[0].timestamp == kimi_code.T0
    assert all(r.cwd == kimi_code.CWD for r in main)  # from state.json's workDir
    prompts = [r.content for r in main if r.is_prompt]
    assert prompts == ["fix the cart total"]  # turn.prompt repeats it: not a message
    replies = [r for r in main if r.role == "assistant"]
    assert [(r.content, r.thinking, r.message_id) for r in replies[:2]] == [
        (None, "look at cart.py", "5e0c1d2a-0000-4000-8000-000000000001"),
        ("Fixing it.", None, "5e0c1d2a-0000-4000-8000-000000000001"),
    ]
    calls = [(t.id, t.name) for r in main for t in r.tool_uses]
    assert calls == [("Edit_0", "Edit"), ("Bash_1", "Bash"), ("Agent_2", "Agent")]
    results = [(x.tool_use_id, x.status, x.child_agent_id) for r in main for x in r.tool_results]
    assert results == [
        ("Edit_0", "completed", None),
        ("Bash_1", "failed", None),
        ("Agent_2", "completed", "agent-0"),
    ]
    tokens = [
        (r.usage.input_tokens, r.usage.output_tokens, r.usage.cache_read_tokens) for r in main if r.usage
    ]
    assert tokens == [
        (200, 40, 1000),
        (300, 20, 1200),
        (50, 60, 0),
    ]  # the compaction's too; step.end not twice
    assert {r.model for r in main if r.usage} == {"moonshot-ai/kimi-k2.7"}
    compaction = [r for r in main if r.is_compaction]
    assert [(r.content, r.segment_marker) for r in compaction] == [("The cart total was fixed.", True)]
    assert [r.entry_type for r in main if not r.known] == ["some.future_record"]

    sub = read(folder / "agents" / "agent-0" / "wire.jsonl")
    info = sub[0].session
    assert (info.kind, info.is_subagent, info.parent_session_id, info.agent_id) == (
        "subagent",
        1,
        kimi_code.SID,
        "agent-0",
    )
    assert {r.session_id for r in sub} == {f"{kimi_code.SID}:agent-0"}
    assert [r.content for r in sub if r.is_prompt] == [kimi_code.SUB_TASK]  # its task, from its parent


def test_a_kimi_code_session_is_read_whole_with_its_subagent(tmp_path):
    """Kimi Code's `~/.kimi-code/sessions/<key>/<id>/agents/<agent>/wire.jsonl` were never read (only
    Kimi CLI's `~/.kimi`): its sessions did not show up at all."""
    from tests.builders import kimi_code

    folder = kimi_code.kimi_code_session(tmp_path)
    logs = [folder / "agents" / "main" / "wire.jsonl", folder / "agents" / "agent-0" / "wire.jsonl"]
    for path in [*logs, folder / "state.json"]:
        assert [a for a, adapter in ADAPTERS.items() if adapter.claims(path)] == ["kimi-code"]
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        refresh_pending(conn)
        for path in [*logs, folder / "state.json"]:
            assert stored_bytes(conn, path) == path.read_bytes()
        row = conn.execute(
            "SELECT source, project_path, created_at, title FROM agent_sessions WHERE id = ?",
            (kimi_code.SID,),
        ).fetchone()
        assert tuple(row) == ("kimi-code", kimi_code.CWD, kimi_code.T0, "Cart total")
        shown = messages(conn, kimi_code.SID)
        assert [(m.role, m.content) for m in shown if m.content and m.role in ("user", "assistant")][:3] == [
            ("user", "fix the cart total"),
            ("assistant", "Fixing it."),
            ("assistant", "Done."),
        ]
        calls = {c.name: c.status for m in shown for c in m.tool_calls}
        assert calls == {"Edit": "completed", "Bash": "failed", "Agent": "completed"}
        tokens = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens FROM agent_sessions WHERE id = ?",
            (kimi_code.SID,),
        ).fetchone()
        assert tuple(tokens) == (550, 120, 2200)
        child = conn.execute(
            "SELECT id, parent_session_id, tool_call_id, agent_type FROM agent_sessions WHERE is_subagent = 1"
        ).fetchone()
        assert tuple(child) == (f"{kimi_code.SID}:agent-0", kimi_code.SID, "Agent_2", "coder")
        assert conn.execute("SELECT count(*) FROM entries WHERE known = 0").fetchone()[0] == 1
        assert conn.execute("SELECT path, lines_added, lines_removed FROM agent_file_changes").fetchall() == [
            ("cart.py", 1, 1)
        ]
    finally:
        conn.close()


def test_kimi_code_s_default_folder_follows_its_home_variable(monkeypatch, tmp_path):
    adapter = ADAPTERS["kimi-code"]
    monkeypatch.setenv("KIMI_CODE_HOME", str(tmp_path / "kc"))
    assert adapter.default_roots() == [tmp_path / "kc" / "sessions"]
    monkeypatch.delenv("KIMI_CODE_HOME")
    assert adapter.default_roots() == [Path.home() / ".kimi-code" / "sessions"]


def test_a_kimi_code_session_resumes_by_its_id_and_is_not_forked(tmp_path, fake_agents, sandbox):
    from tests.builders import kimi_code

    kimi_code.kimi_code_session(tmp_path)
    (fake_agents / "kimi").write_text((fake_agents / "claude").read_text())
    (fake_agents / "kimi").chmod(0o755)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi-code")
        plan = resume_plan(conn, kimi_code.SID)
        with pytest.raises(ForkError, match="/fork"):
            resume_plan(conn, kimi_code.SID, fork_at_end=True)
    finally:
        conn.close()
    assert plan.command == f"cd {kimi_code.CWD} && kimi --session {kimi_code.SID}"
    assert run_printed(plan.command.split(" && ", 1)[1], fake_agents, sandbox) == [
        ["kimi", str(sandbox), "--session", kimi_code.SID]
    ]


def test_kimi_code_claims_its_own_files_only(tmp_path):
    """A `state.json` beside some other tool's `agents/` folder is not a Kimi Code session's; a log
    whose metadata line was damaged is still told by the records after it (Kimi CLI's carry
    `timestamp`, not `time`), a message record first among them too."""
    from tests.builders import kimi_code

    adapter = ADAPTERS["kimi-code"]
    folder = kimi_code.kimi_code_session(tmp_path)
    log = folder / "agents" / "main" / "wire.jsonl"
    assert adapter.claims(folder / "state.json") and adapter.claims(log)
    other = tmp_path / "elsewhere" / "tool"
    (other / "agents").mkdir(parents=True)
    (other / "state.json").write_text('{"agents": {"a": 1}}')
    assert not adapter.claims(other / "state.json")
    damaged = tmp_path / "d" / "sessions" / "k" / "s" / "agents" / "main" / "wire.jsonl"
    damaged.parent.mkdir(parents=True)
    damaged.write_text(
        '{"type": "metadata", "protocol_ver\n'
        '{"type": "context.append_message", "message": {"role": "user", "content": "hi"}, "time": 1}\n'
    )
    assert adapter.claims(damaged)


def test_a_rebuild_places_a_session_by_the_kimi_json_the_archive_kept(tmp_path):
    """`kimi.json` is the one place a session's folder is named (by the md5 of the folder its
    sessions folder is named after): it is kept as a side file, but a replay (a schema upgrade's,
    `ingest --rebuild`) read it from the disk, so once it was gone the session came back with no
    folder. A replay reads it as the archive kept it."""
    import shutil

    from threadloom.core.ingest.ledger import rebuild_derived

    kimi_session(tmp_path)
    conn = db.connect(tmp_path / "ledger.db")
    try:
        ingest(conn, tmp_path / ".kimi")
        folder = "SELECT project_path, created_at FROM agent_sessions WHERE id = ?"
        assert conn.execute(folder, (SID,)).fetchone() == (CWD, 1781810000000)
        shutil.rmtree(tmp_path / ".kimi")
        rebuild_derived(conn)
        assert conn.execute(folder, (SID,)).fetchone() == (CWD, 1781810000000)
    finally:
        conn.close()
