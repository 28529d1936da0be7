"""`threadloom sessions` lists each subagent under the session that started it, whatever the
order asked for: sorted by last activity alone, a `↳` row followed whatever session came before
it (52 of 116 subagents of one real backup sat under the wrong session)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read import query
from threadloom.core.store import db

from tests.conftest import CORPUS, Transcript, tool_use
from tests.support import run

A = "a0000000-0000-4000-8000-0000000000a1"
B = "b0000000-0000-4000-8000-0000000000b2"


def say(t: Transcript, role: str, text: str, at: str, **extra: object) -> None:
    """A record at a chosen time (the builder's own clock gives every file the same times)."""
    message = {"role": role, "content": text} if role == "user" else {
        "id": f"msg_{t.n}_{t.path.stem}", "role": "assistant", "model": "claude-opus-4-5",
        "content": [{"type": "text", "text": text}, *extra.pop("tools", [])],  # type: ignore[misc]
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }  # fmt: skip
    t.add({"type": role, "message": message, "timestamp": f"2026-03-01T{at}:00.000Z", **extra})


def archive(root: Path) -> Path:
    """A: 10:00-12:00, its subagent 10:10-10:30 and that one's own 10:15; B: 10:40-11:00, between."""
    projects = root / "projects" / "-srv-api"
    a = Transcript(projects / f"{A}.jsonl", A, cwd="/srv/api")
    say(a, "user", "Audit the API", "10:00")
    say(a, "assistant", "Starting an agent.", "10:05",
        tools=[tool_use("ta", "Task", description="audit endpoints", prompt="audit the endpoints")])  # fmt: skip
    a.tool_result("ta", "done", tool_use_result={"agentId": "sub1"}, timestamp="2026-03-01T10:31:00.000Z")
    say(a, "user", "Now write it up", "11:50")
    say(a, "assistant", "Written.", "12:00")
    a.write()
    sub = Transcript(projects / A / "subagents" / "agent-sub1.jsonl", A, cwd="/srv/api",
                     isSidechain=True, agentId="sub1")  # fmt: skip
    say(sub, "user", "audit the endpoints", "10:10", parent=False)
    say(sub, "assistant", "Asking a helper.", "10:12",
        tools=[tool_use("tn", "Task", description="list routes", prompt="list the routes")])  # fmt: skip
    sub.tool_result(
        "tn", "12 routes", tool_use_result={"agentId": "sub2"}, timestamp="2026-03-01T10:20:00.000Z"
    )
    say(sub, "assistant", "Audited.", "10:30")
    sub.write()
    nested = Transcript(projects / A / "subagents" / "agent-sub2.jsonl", A, cwd="/srv/api",
                        isSidechain=True, agentId="sub2")  # fmt: skip
    say(nested, "user", "list the routes", "10:15", parent=False)
    say(nested, "assistant", "12 routes.", "10:16")
    nested.write()
    b = Transcript(projects / f"{B}.jsonl", B, cwd="/srv/api")
    say(b, "user", "Bump the version", "10:40")
    say(b, "assistant", "Bumped.", "11:00")
    b.write()
    return root / "projects"


def titles(out: str) -> list[str]:
    """The title column of `sessions --wide` (between the model and the file)."""
    rows = out.splitlines()[1:]
    return [next(t for t in ("Audit the API", "Bump the version", "audit endpoints", "list routes") if t in r)
            for r in rows]  # fmt: skip


def test_subagents_are_listed_under_the_session_that_started_them(tmp_path: Path) -> None:
    dbp = str(tmp_path / "t.db")
    assert run("--db", dbp, "ingest", "--only", "--source", str(archive(tmp_path))).returncode == 0
    wide = run("--db", dbp, "sessions", "--wide").stdout
    assert titles(wide) == ["Audit the API", "audit endpoints", "list routes", "Bump the version"], wide
    rows = wide.splitlines()[1:]
    assert "claude-opus-4-5  ↳ audit endpoints" in rows[1] and "claude-opus-4-5    ↳ list routes" in rows[2]
    table = run("--db", dbp, "sessions").stdout
    assert [line.split()[0] for line in table.splitlines()[1:]] == [
        A[:13],
        "agent-sub1",
        "agent-sub2",
        B[:13],
    ], table
    # by size too: each subagent stays under its session, the sessions themselves are sorted
    by_messages = run("--db", dbp, "sessions", "--wide", "--sort", "messages").stdout
    assert titles(by_messages) == ["Audit the API", "audit endpoints", "list routes", "Bump the version"]
    # --json keeps the order asked for, each with its parent
    data = json.loads(run("--db", dbp, "sessions", "--json").stdout)
    assert [d["title"] for d in data][:2] == ["Audit the API", "Bump the version"]
    # a subagent whose session is left out is listed on its own, said to be one
    only = run("--db", dbp, "sessions", "--wide", "--agent", "claude-code").stdout
    assert "↳" in only
    conn = db.connect(dbp)
    conn.execute("UPDATE agent_sessions SET parent_session_id = 'gone' WHERE id LIKE ?", (f"{A}:%sub1",))
    conn.close()
    orphan = run("--db", dbp, "sessions", "--wide").stdout
    assert titles(orphan) == ["Audit the API", "Bump the version", "audit endpoints", "list routes"], orphan
    assert "claude-opus-4-5  ⚙ audit endpoints" in orphan and "claude-opus-4-5  ↳ list routes" in orphan


@pytest.mark.corpus
@pytest.mark.skipif(not (CORPUS / "claude-code").is_dir(), reason="corpus absent")
def test_every_subagent_of_real_sessions_follows_its_own_session(tmp_path: Path) -> None:
    conn = db.connect(tmp_path / "t.db")
    run_ingest(conn, [CORPUS / "claude-code"], include_defaults=False)
    sessions = query.sort_sessions(query.list_sessions(conn), "recent")
    subagents = [s for s in sessions if s.is_subagent and query.owner_of(s) in {x.id for x in sessions}]
    assert len(subagents) >= 5
    stack: list[str] = []
    for s, depth in query.under_their_sessions(sessions):
        del stack[depth:]
        if depth:
            assert stack[-1] == query.owner_of(s), s.id
        stack.append(s.id)
    assert len(query.under_their_sessions(sessions)) == len(sessions)


def test_titles_in_square_brackets_are_printed_as_written(tmp_path: Path) -> None:
    """Rich read a table's cells as markup: a session titled "[trimmed for fixture]" (a real Codex
    fixture's) was listed with a blank title by `sessions` and `stats --by session`."""
    sid = "c0000000-0000-4000-8000-0000000000c1"
    t = Transcript(tmp_path / "projects" / "-srv-api" / f"{sid}.jsonl", sid, cwd="/srv/api")
    t.add({"type": "custom-title", "customTitle": "[trimmed for fixture]", "sessionId": sid}, chain=False)
    t.user("List the [bold]files[/bold]")
    t.assistant("Listed.")
    t.write()
    dbp = str(tmp_path / "t.db")
    assert run("--db", dbp, "ingest", "--only", "--source", str(tmp_path / "projects")).returncode == 0
    assert "[trimmed for fixture]" in run("--db", dbp, "sessions").stdout
    assert "[trimmed for fixture]" in run("--db", dbp, "stats", "--by", "session").stdout
