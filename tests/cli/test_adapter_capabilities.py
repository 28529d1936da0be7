"""A new agent is one adapter: registered once, its own resume command and fork capability reach
`threadloom resume` and `threadloom fork` with no change anywhere else, quoted and checked like
every agent's (the printed command is RUN with bash, a fake agent on PATH)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from threadloom.core.actions.fork import plan_fork, resume_plan
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.base import (
    Adapter,
    Command,
    FileContext,
    ForkError,
    RawRecord,
    Record,
    ResumeTarget,
    SessionInfo,
    SourceRef,
)
from threadloom.core.cli import main
from threadloom.core.store import db

from tests.support import FAKE_AGENT, ingest, run_printed


class ToyAdapter(Adapter):
    """`*.toylog`: one JSON message a line, `{"n": 1, "role": "user", "text": …}`; the file's stem
    is the agent's session id, the first line says the folder."""

    name = "toy"
    mode = "lines"
    program = "toyagent"
    id_shape = (re.compile(r"toy-[0-9]+"), "toy- and digits")
    fork_style = "whole-session-resume"

    def default_roots(self) -> list[Path]:
        return []

    def claims(self, path: Path) -> bool:
        return path.suffix == ".toylog"

    def discover(self, root: Path) -> Iterator[SourceRef]:
        for path in sorted(root.rglob("*.toylog")):
            yield SourceRef(path, self.name, "transcript", path.parent.name)

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        obj = json.loads(rec.raw)
        sid = ctx.path.stem
        return Record(
            entry_type="message",
            role=obj["role"],
            content=obj["text"],
            is_message=True,
            is_prompt=obj["role"] == "user",
            uuid=f"{sid}:{obj['n']}",
            parent_uuid=f"{sid}:{obj['n'] - 1}" if obj["n"] > 1 else None,
            session_id=sid,
            cwd=obj.get("cwd"),
            session=SessionInfo(source=self.name, external_id=sid),
        )

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        if fork:
            raise ForkError("toy sessions cannot be copied")
        return Command(
            [self.program, "--continue", self.checked_id(target.external_id)], notes=["Toy resumes by id."]
        )


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch, fake_agents: Path) -> Path:
    monkeypatch.setitem(ADAPTERS, "toy", ToyAdapter())
    (fake_agents / "toyagent").write_text(FAKE_AGENT)
    (fake_agents / "toyagent").chmod(0o755)
    return fake_agents


def toy_ledger(tmp_path: Path, stem: str, cwd: str) -> Path:
    folder = tmp_path / "toylogs" / "proj"
    folder.mkdir(parents=True)
    lines = [
        {"n": 1, "role": "user", "text": "hello", "cwd": cwd},
        {"n": 2, "role": "assistant", "text": "hi"},
    ]
    (folder / f"{stem}.toylog").write_text("".join(json.dumps(line) + "\n" for line in lines))
    dbfile = tmp_path / "ledger.db"
    conn = db.connect(dbfile)
    try:
        ingest(conn, tmp_path / "toylogs")
    finally:
        conn.close()
    return dbfile


def test_a_registered_agent_resumes_through_its_own_command(tmp_path, capsys, toy, sandbox):
    work = tmp_path / "it's work"
    work.mkdir()
    dbfile = toy_ledger(tmp_path, "toy-7", str(work))
    assert main(["resume", "--db", str(dbfile), "toy-7"]) == 0
    out = capsys.readouterr()
    assert run_printed(out.out.strip(), toy, sandbox) == [["toyagent", str(work), "--continue", "toy-7"]]
    assert "Toy resumes by id." in out.err

    conn = db.connect(dbfile, readonly=True)
    try:
        with pytest.raises(ForkError, match="toy sessions cannot be copied"):
            resume_plan(conn, "toy-7", fork_at_end=True)
        entry = conn.execute("SELECT id FROM entries WHERE content = 'hi'").fetchone()[0]
        plan = plan_fork(conn, str(entry))  # its fork_style: the closest command, the whole session
        assert plan.action == "fork" and plan.command == resume_plan(conn, "toy-7").command
        assert plan.notes[0].startswith("toy cannot be started at a chosen point from outside")
        with pytest.raises(ForkError, match="forking before a prompt is for Claude Code and Codex"):
            plan_fork(conn, str(entry - 1), before=True)
    finally:
        conn.close()


def test_a_registered_agents_id_is_checked_by_its_shape(tmp_path, capsys, toy, sandbox):
    work = tmp_path / "work"
    work.mkdir()
    dbfile = toy_ledger(tmp_path, "toy-7;touch pwned", str(work))
    assert main(["resume", "--db", str(dbfile), "toy-7;touch pwned"]) == 1
    out = capsys.readouterr()
    assert out.out == "" and "is not toy- and digits, as toy writes it" in out.err


def test_an_agent_without_the_capability_gets_todays_messages(tmp_path, monkeypatch, fake_agents):
    class Mute(ToyAdapter):
        name = "toy"
        fork_style = None
        resume_command = Adapter.resume_command  # declares no command of its own

    monkeypatch.setitem(ADAPTERS, "toy", Mute())
    dbfile = toy_ledger(tmp_path, "toy-8", str(tmp_path))
    conn = db.connect(dbfile, readonly=True)
    try:
        with pytest.raises(ForkError, match="^threadloom has no resume command for toy sessions$"):
            resume_plan(conn, "toy-8")
        entry = conn.execute("SELECT id FROM entries WHERE content = 'hi'").fetchone()[0]
        with pytest.raises(ForkError, match="forking toy sessions at a point is not supported yet"):
            plan_fork(conn, str(entry))
    finally:
        conn.close()


def test_a_refusal_with_json_is_one_object_on_stdout(tmp_path, capsys, monkeypatch, fake_agents):
    """`resume --json` and `fork --json` said a refusal on stderr only: a script reading stdout got
    nothing. Each prints one object saying so and why, beside the same stderr and exit code."""

    class Mute(ToyAdapter):
        name = "toy"
        fork_style = None
        resume_command = Adapter.resume_command

    monkeypatch.setitem(ADAPTERS, "toy", Mute())
    dbfile = toy_ledger(tmp_path, "toy-9", str(tmp_path))
    conn = db.connect(dbfile, readonly=True)
    entry = str(conn.execute("SELECT id FROM entries WHERE content = 'hi'").fetchone()[0])
    conn.close()
    refusals = [
        (["resume", "toy-9"], 1, {"action": "resume", "session": "toy-9"}, "has no resume command for toy"),
        (["resume", "nothing-like-it"], 1, {"action": "resume"}, "no session matches 'nothing-like-it'"),
        (["fork", entry], 1, {"action": "fork", "entry": entry}, "forking toy sessions at a point is not"),
        (["fork", "987654"], 1, {"action": "fork"}, "no record '987654'"),
        (["fork", entry, "--dry-run"], 1, {"dry_run": True}, "forking toy sessions at a point is not"),
        (["fork", entry, "--native"], 2, {"action": "fork-prompt"}, "--native needs --prompt"),
    ]
    for words, code, fields, why in refusals:
        assert main([*words, "--db", str(dbfile), "--json"]) == code, words
        out = capsys.readouterr()
        said = json.loads(out.out)
        assert said["ok"] is False and why in said["error"] and fields.items() <= said.items(), said
        assert why in out.err and out.out.count("\n") == 1
        assert main([*words, "--db", str(dbfile)]) == code
        assert capsys.readouterr().out == ""  # plain: stdout stays the command's alone


def test_a_plan_with_json_says_it_is_ok(tmp_path, capsys, toy, sandbox):
    """A script tells a plan from a refusal by `ok`, as the exit code does."""
    dbfile = toy_ledger(tmp_path, "toy-5", str(tmp_path))
    assert main(["resume", "--db", str(dbfile), "--json", "toy-5"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["ok"] is True and "error" not in said and said["command"].endswith("--continue toy-5")
