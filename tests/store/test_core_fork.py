"""Forking at a point: the written transcript is valid, minimal, private, and the source untouched."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from threadloom.core.actions.fork import ForkError, fork_points, plan_fork, resume_plan, write_fork
from threadloom.core.base import clipboard

from tests.builders.claude import Transcript, tool_use
from tests.support import CORPUS, check_fork_file, ingest

SID = "f0000000-0000-4000-8000-00000000f001"


@pytest.fixture
def branched(conn, tmp_path):
    t = Transcript(
        tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID, cwd="/home/dev/my app's dir"
    )
    t.user("set up the project")
    # one API response split over two lines, two parallel tool calls, results as siblings
    a1 = t.assistant(msg_id="m1", tools=[tool_use("tA", "Bash", command="ls")])
    a2 = t.assistant(msg_id="m1", tools=[tool_use("tB", "Read", file_path="README.md")])
    t.tool_result("tA", "README.md", parent=a1, chain=False, sourceToolAssistantUUID=a1)
    t.tool_result("tB", "# readme", parent=a2, sourceToolAssistantUUID=a2)
    done = t.assistant("project is set up")
    t.user("abandoned idea")
    t.assistant("abandoned answer")
    t.user("better idea", parent=done)  # rewind: a branch at `done`
    t.assistant("better answer", tools=[tool_use("tC", "Bash", command="make")])
    t.tool_result("tC", "ok")
    t.assistant("built")
    t.write()
    ingest(conn, tmp_path / "projects")
    return t


def test_fork_at_a_branch_point_keeps_the_chain_only(conn, branched, tmp_path):
    source = branched.path
    before = (source.read_bytes(), source.stat().st_mtime_ns)
    last = branched.lines[-1]["uuid"]
    plan = plan_fork(conn, last)
    path = write_fork(plan)
    assert (source.read_bytes(), source.stat().st_mtime_ns) == before
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # where Claude Code looks for sessions of that folder, not beside the copy it was read from
    assert path.parent == tmp_path / "no-claude-here" / "projects" / "-home-dev-my-app-s-dir"
    transcript = check_fork_file(path, plan.new_session_id, last)
    texts = json.dumps(transcript)
    assert "abandoned" not in texts and "better idea" in texts
    assert plan.command == f"cd '/home/dev/my app'\"'\"'s dir' && claude --resume {plan.new_session_id}"
    # forking twice never overwrites
    second = write_fork(plan_fork(conn, last))
    assert second != path and path.exists()
    with pytest.raises(FileExistsError):
        write_fork(plan)


def test_fork_at_a_tool_call_keeps_its_whole_message_and_results_and_no_more(conn, branched):
    # the first block of an API message with two parallel calls: both calls and both results, not the reply
    plan = plan_fork(conn, branched.lines[1]["uuid"])
    assert plan.fork_point == branched.lines[4]["uuid"]  # the result of the second call
    transcript = check_fork_file(write_fork(plan), plan.new_session_id, plan.fork_point)
    assert [r["forkedFrom"]["messageUuid"] for r in transcript] == [r["uuid"] for r in branched.lines[:5]]
    assert (plan.records, plan.tool_calls) == (5, 2)


def test_fork_points_follow_the_branch(conn, branched):
    points = fork_points(conn, SID)
    assert [p.prompt for p in points] == ["set up the project", "better idea"]
    abandoned = conn.execute("SELECT id FROM entries WHERE content = 'abandoned answer'").fetchone()[0]
    assert [p.prompt for p in fork_points(conn, SID, around_entry=abandoned)] == [
        "set up the project",
        "abandoned idea",
    ]


def test_forked_session_is_ingested_under_its_source(conn, branched, tmp_path):
    plan = plan_fork(conn, branched.lines[-1]["uuid"])
    ingest(conn, write_fork(plan))
    row = conn.execute(
        "SELECT kind, parent_session_id, title, is_subagent FROM agent_sessions WHERE id = ?",
        (plan.new_session_id,),
    ).fetchone()
    assert row[0] == "fork" and row[1] == SID and row[2].endswith("(fork)") and row[3] == 0


def test_edit_a_prompt_cuts_before_it(conn, branched):
    prompt_uuid = [r["uuid"] for r in branched.lines if r.get("message", {}).get("content") == "better idea"][
        0
    ]
    plan = plan_fork(conn, prompt_uuid, prompt="an even better idea")
    assert plan.fork_point == branched.lines[5]["uuid"]
    assert plan.command.endswith("'an even better idea'")
    assert plan_fork(conn, prompt_uuid, before=True).fork_point == branched.lines[5]["uuid"]
    assert plan_fork(conn, prompt_uuid).fork_point == prompt_uuid  # fork here: the prompt is kept, unanswered
    with pytest.raises(ForkError, match="only a prompt"):
        plan_fork(conn, branched.lines[5]["uuid"], before=True)
    # before the first prompt there is nothing: a new session in the same folder
    first = plan_fork(conn, branched.lines[0]["uuid"], prompt="start over")
    assert first.command == "cd '/home/dev/my app'\"'\"'s dir' && claude 'start over'" and not first.lines


def test_compaction_and_subagent_fork_points(conn, tmp_path):
    t = Transcript(tmp_path / "projects" / "-p" / f"{SID}.jsonl", SID)
    t.user("old context")
    before = t.assistant("old reply")
    boundary = t.add(
        {
            "type": "system",
            "subtype": "compact_boundary",
            "logicalParentUuid": before,
            "content": "Conversation compacted",
        },
        parent=False,
    )
    t.add(
        {
            "type": "user",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "Summary of before"},
        },
        parent=boundary,
    )
    t.user(
        "new work",
    )
    t.assistant("spawning", tools=[tool_use("tS", "Task", description="helper", prompt="do the sub task")])
    t.tool_result("tS", "sub done", tool_use_result={"agentId": "abcd1234"})
    t.assistant("all done")
    t.write()
    sub = Transcript(
        tmp_path / "projects" / "-p" / "agent-abcd1234.jsonl", SID, isSidechain=True, agentId="abcd1234"
    )
    sub.user("do the sub task", parent=False)
    sub.assistant("sub step one")
    sub.user("continue sub")
    sub.assistant("sub step two")
    sub.write()
    ingest(conn, tmp_path / "projects")
    plan = plan_fork(conn, t.lines[-1]["uuid"])
    transcript = check_fork_file(write_fork(plan), plan.new_session_id, t.lines[-1]["uuid"])
    assert transcript[0]["subtype"] == "compact_boundary"  # starts at the compaction, as Claude loads it
    assert "old context" not in json.dumps(transcript)
    assert any("compaction" in n for n in plan.notes)
    # before the compaction: the full old context comes back
    early = plan_fork(conn, before)
    assert [json.loads(line).get("message", {}).get("content") for line in early.lines[:1]] == ["old context"]
    # inside a subagent: the subagent's conversation becomes a new main session
    sub_plan = plan_fork(conn, sub.lines[1]["uuid"])
    sub_transcript = check_fork_file(write_fork(sub_plan), sub_plan.new_session_id, sub.lines[1]["uuid"])
    assert [
        r["message"]["content"] if isinstance(r["message"]["content"], str) else "a" for r in sub_transcript
    ] == ["do the sub task", "a"]
    assert any("subagent" in n for n in sub_plan.notes)
    with pytest.raises(ForkError):
        resume_plan(conn, f"{SID}:agent-abcd1234")


def test_resume_and_fork_at_end_commands(conn, branched):
    assert resume_plan(conn, SID).command == f"cd '/home/dev/my app'\"'\"'s dir' && claude --resume {SID}"
    assert resume_plan(conn, SID, fork_at_end=True).command.endswith("--fork-session")


def test_commands_go_to_the_folder_the_session_was_started_in(conn, tmp_path):
    """Claude Code finds a session only from the folder it was started in; the lines written after
    its shell moved into a subfolder carry that subfolder as their cwd."""
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID, cwd="/home/dev/app")
    t.user("run the tests")
    t.assistant("moving into test/", tools=[tool_use("t1", "Bash", command="cd test && pytest")])
    t.cwd = "/home/dev/app/test"
    t.tool_result("t1", "12 passed")
    t.assistant("all pass")
    t.write()
    ingest(conn, tmp_path / "projects")
    assert resume_plan(conn, SID).command == f"cd /home/dev/app && claude --resume {SID}"
    assert resume_plan(conn, SID, fork_at_end=True).command.startswith("cd /home/dev/app && claude --resume")
    plan = plan_fork(conn, t.lines[-1]["uuid"])
    assert plan.cwd == "/home/dev/app"
    assert plan.command == f"cd /home/dev/app && claude --resume {plan.new_session_id}"
    first = json.loads(write_fork(plan).read_text().splitlines()[0])
    assert first["cwd"] == "/home/dev/app"  # the picker files the fork under the same project


def test_the_note_names_the_branch_or_a_detached_head(conn, tmp_path):
    """Claude Code records git's "HEAD" for a detached checkout: the note said "Recorded git branch
    then: HEAD", a branch to check out that none is."""
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID, cwd="/home/dev/app")
    t.common["gitBranch"] = "HEAD"
    t.user("bisect this")
    t.assistant("found it")
    t.write()
    ingest(conn, tmp_path / "projects")
    for plan in (plan_fork(conn, t.lines[-1]["uuid"]), resume_plan(conn, SID)):
        said = " ".join(plan.notes)
        assert "a detached HEAD (no branch)" in said and "git branch then: HEAD" not in said


def test_cli_fork_json_dry_run_and_plain(conn, branched, tmp_path, monkeypatch):
    db_path = conn.execute("PRAGMA database_list").fetchone()[2]
    last = branched.lines[-1]["uuid"]

    def run(*a: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "threadloom.core.cli", *a, "--db", db_path],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        )

    dry = run("fork", last, "--dry-run", "--json")
    data = json.loads(dry.stdout)
    assert {"command", "new_session_id", "path", "source_session_id", "fork_point"} <= set(data)
    assert not Path(data["path"]).exists() and data["dry_run"] is True and data["written"] is False
    # plain: the command on stdout; on stderr where the file would go and what it would hold, never
    # the transcript's raw lines
    dry = run("fork", last, "--dry-run")
    assert dry.returncode == 0 and dry.stdout.count("\n") == 1 and dry.stdout.startswith("cd ")
    would = re.search(
        r"would write (\S+) \(a new file, mode 0600, never over one\): (\d+) records", dry.stderr
    )
    assert would is not None, dry.stderr
    assert not Path(would.group(1)).exists() and Path(would.group(1)).name.endswith(".jsonl")
    assert int(would.group(2)) == data["records"] and "nothing written" in dry.stderr
    assert '"uuid"' not in dry.stderr and '"parentUuid"' not in dry.stderr
    plain = run("fork", last)
    assert plain.returncode == 0 and plain.stdout.count("\n") == 1 and plain.stdout.startswith("cd ")
    new_sid = plain.stdout.split()[-1]
    assert (tmp_path / "no-claude-here" / "projects" / "-home-dev-my-app-s-dir" / f"{new_sid}.jsonl").exists()
    # the fork is remembered as forked_from its source (core.insight.memory's relations), a rebuild keeping it
    from threadloom.core.insight import memory

    recorded = memory.relations(conn, memory.Target("session", new_sid))
    assert [(r.relation, r.target_id, r.author) for r in recorded] == [
        ("forked_from", branched.session_id, "threadloom")
    ]
    # the clipboard seam
    copied = []
    monkeypatch.setattr(clipboard, "copy_with", copied.append)
    assert clipboard.copy("echo hi") == "system clipboard" and copied == ["echo hi"]

    def broken(_text: str) -> None:
        raise RuntimeError("no display")

    monkeypatch.setattr(clipboard, "copy_with", broken)
    assert clipboard.copy("echo hi") is None


def test_a_dry_run_says_the_new_id_is_not_chosen_yet(conn, branched):
    """`fork --dry-run` printed a random new session id, which a later real fork does not get: it
    says the id is chosen when the fork is written, and the same dry run says the same each time."""
    db_path = conn.execute("PRAGMA database_list").fetchone()[2]
    last = branched.lines[-1]["uuid"]

    def run(*a: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "threadloom.core.cli", "fork", last, "--db", db_path, *a],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        )

    uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    known = {branched.session_id, last}
    data = json.loads(run("--dry-run", "--json").stdout)
    assert data["new_session_id"] is None and data["dry_run"] is True
    assert "NEW-SESSION-ID" in data["command"] and Path(data["path"]).name == "NEW-SESSION-ID.jsonl"
    assert any("id is chosen when the fork is written" in note for note in data["notes"])
    dry = run("--dry-run")
    assert dry.returncode == 0 and dry.stdout.endswith("claude --resume NEW-SESSION-ID\n")
    assert "note: The new session's id is chosen when the fork is written" in dry.stderr
    assert set(uuid.findall(dry.stdout + dry.stderr + json.dumps(data))) <= known
    assert run("--dry-run").stdout == dry.stdout
    real = json.loads(run("--json").stdout)  # the fork itself: its id, as before
    assert uuid.fullmatch(real["new_session_id"]) and real["command"].endswith(real["new_session_id"])
    assert Path(real["path"]).name == f"{real['new_session_id']}.jsonl" and Path(real["path"]).exists()
    assert not any("chosen when" in note for note in real["notes"])


def test_a_fork_written_that_the_archive_cannot_take_in_now_is_no_refusal(
    conn, branched, capsys, monkeypatch
):
    """The fork's file written, the archive it is ingested into then busy or unusable: `fork --json`
    said `ok: false` and exited 1 over a fork that was there. The plan is printed, the wait said."""
    from threadloom.core.cli import main
    from threadloom.core.store.db import LedgerError

    def busy(*args: object, **kwargs: object) -> None:
        raise LedgerError("the archive is being written by another process")

    monkeypatch.setattr("threadloom.core.ingest.update.update", busy)
    db_path = conn.execute("PRAGMA database_list").fetchone()[2]
    assert main(["fork", branched.lines[-1]["uuid"], "--db", db_path, "--json"]) == 0
    out = capsys.readouterr()
    said = json.loads(out.out)
    assert said["ok"] is True and said["written"] is True and Path(said["path"]).exists()
    assert "the fork is written, but the archive could not take it in now" in out.err


@pytest.mark.corpus
@pytest.mark.skipif(not (CORPUS / "claude-code").is_dir(), reason="corpus absent")
def test_forks_of_real_sessions_are_valid(conn, tmp_path):
    import shutil

    shutil.copytree(
        CORPUS / "claude-code" / "handgemacht-ai__claude-code-log" / "test" / "test_data" / "real_projects",
        tmp_path / "projects",
    )
    ingest(conn, tmp_path / "projects")
    sessions = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM agent_sessions WHERE is_subagent = 0 AND turn_count >= 3 ORDER BY id LIMIT 6"
        )
    ]
    assert len(sessions) >= 4
    made = 0
    for sid in sessions:
        points = fork_points(conn, sid)
        for point in (points[0], points[len(points) // 2], points[-1]):
            source_files = {p: p.read_bytes() for p in (tmp_path / "projects").rglob("*.jsonl")}
            plan = plan_fork(conn, str(point.cut_entry_id))  # the turn's end, as the picker's turns fork
            path = write_fork(plan)
            check_fork_file(path, plan.new_session_id, plan.fork_point)
            assert all(p.read_bytes() == data for p, data in source_files.items())
            made += 1
    assert made >= 12


def test_gemini_fork_writes_the_branch_to_a_session_file(conn, tmp_path, monkeypatch):
    from tests.builders.gemini import chats, meta, reply, user, write_jsonl

    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "ghome"))
    root = tmp_path / "ghome" / ".gemini"
    (root / "tmp" / "webshop").mkdir(parents=True)
    (root / "tmp" / "webshop" / ".project_root").write_text("/home/dev/webshop\n")
    lines = [
        meta(),
        user("u1", "first"),
        reply("g1", "one"),
        user("u2", "second"),
        reply("g2", "two"),
        {"$rewindTo": "u2"},
        user("u3", "second, better"),
        reply("g3", "two, better"),
    ]
    write_jsonl(chats(root) / "session-2026-04-29T21-39-5f0e2a8c.jsonl", lines)
    ingest(conn, root)
    sid = conn.execute("SELECT id FROM agent_sessions WHERE source = 'gemini'").fetchone()[0]
    g3 = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND content = 'two, better'", (sid,)
    ).fetchone()[0]
    plan = plan_fork(conn, str(g3))
    doc = json.loads(Path(plan.path).read_text())
    assert [m["id"] for m in doc["messages"]] == ["u1", "g1", "u3", "g3"]  # the abandoned branch stays out
    assert stat.S_IMODE(os.stat(plan.path).st_mode) == 0o600
    assert plan.command == f"cd /home/dev/webshop && gemini --session-file {plan.path}"
    assert resume_plan(conn, sid).command.endswith(f"gemini --resume {sid}")
    Path(plan.path).unlink()


def test_codex_fork_cuts_a_legacy_rollout_after_the_turn(conn, tmp_path, monkeypatch):
    """FORK.md §2.3 recipe C: a new thread whose first line is a fresh session_meta, then the source's
    lines up to the end of the chosen turn, in $CODEX_HOME/sessions/YYYY/MM/DD/ where Codex finds it."""
    from tests.support import THREAD, full_session

    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    rollout = full_session(tmp_path / "codex")
    source = rollout.write()
    before = (source.read_bytes(), source.stat().st_mtime_ns)
    ingest(conn, tmp_path / "codex")
    sid = conn.execute("SELECT id FROM agent_sessions WHERE source = 'codex'").fetchone()[0]
    reply = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND content = 'Added the total.' ORDER BY id LIMIT 1",
        (sid,),
    ).fetchone()[0]
    now = datetime(2026, 5, 4, 12, 30, tzinfo=UTC)
    plan = plan_fork(conn, str(reply), now=now)
    path = write_fork(plan)
    local = now.astimezone()
    assert path.parent == tmp_path / "codex" / "sessions" / f"{local:%Y}" / f"{local:%m}" / f"{local:%d}"
    assert path.name == f"rollout-{local:%Y-%m-%dT%H-%M-%S}-{plan.new_session_id}.jsonl"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert (source.read_bytes(), source.stat().st_mtime_ns) == before
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    meta = lines[0]["payload"]
    assert lines[0]["type"] == "session_meta" and meta["id"] == plan.new_session_id != THREAD
    assert meta["forked_from_id"] == THREAD and meta["cwd"] == "/home/dev/shop"
    # the first turn, through its task_complete; the second turn's context and prompt are not kept
    assert lines[1:] == rollout.lines[:15] and lines[-1]["payload"]["type"] == "task_complete"
    assert plan.command == f"codex resume {plan.new_session_id} -C /home/dev/shop" and plan.tool_calls == 2
    assert any("whole chosen turn" in note for note in plan.notes)
    # "fork before" the second prompt is the same cut; a prompt given for it is sent
    second = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND uuid = turn_id ORDER BY id DESC LIMIT 1", (sid,)
    ).fetchone()[0]
    edit = plan_fork(conn, str(second), prompt="now the docs")
    assert edit.lines[1:] == plan.lines[1:] and edit.command.endswith("-C /home/dev/shop 'now the docs'")
    # ingested, the fork is a thread of its own under its source, with the first turn only
    ingest(conn, path)
    row = conn.execute(
        "SELECT kind, parent_session_id, turn_count FROM agent_sessions WHERE id = ?", (plan.new_session_id,)
    ).fetchone()
    assert row == ("fork", sid, 1)
    # it began when it was forked (its first line), not when the turns it copies were said
    span = conn.execute(
        "SELECT created_at, ended_at FROM agent_sessions WHERE id = ?", (plan.new_session_id,)
    )
    assert span.fetchone() == (int(now.timestamp() * 1000),) * 2


def test_codex_paginated_threads_keep_the_whole_session_fork(conn, tmp_path, monkeypatch):
    """A paginated rollout refers to segments in other files: no file-level cut, `codex fork` and a note."""
    from tests.support import full_session

    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    rollout = full_session(tmp_path / "codex")
    rollout.lines[0]["payload"]["history_mode"] = "paginated"
    rollout.write()
    ingest(conn, tmp_path / "codex")
    sid, cwd = conn.execute("SELECT id, project_path FROM agent_sessions WHERE source = 'codex'").fetchone()
    entry = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND turn_id IS NOT NULL LIMIT 1", (sid,)
    ).fetchone()[0]
    plan = plan_fork(conn, str(entry))
    assert (
        plan.command.endswith(f"codex fork {sid}")
        and "Esc Esc" in plan.notes[0]
        and "paginated" in plan.notes[0]
    )
    assert not plan.lines and plan.restore is None
    assert resume_plan(conn, sid).command == f"codex resume {sid} -C {cwd}"


def test_a_codex_command_given_a_missing_folder_with_c_says_so_without_a_cd(conn, tmp_path, monkeypatch):
    """`codex resume ID -C DIR` has no cd: its note said "the cd will fail" of a folder missing here."""
    from tests.support import full_session

    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    full_session(tmp_path / "codex").write()
    ingest(conn, tmp_path / "codex")
    sid, cwd = conn.execute("SELECT id, project_path FROM agent_sessions WHERE source = 'codex'").fetchone()
    assert not Path(cwd).exists()  # the fixture's folder is not on this machine
    plan = resume_plan(conn, sid)
    assert plan.command == f"codex resume {sid} -C {cwd}" and not plan.command.startswith("cd ")
    said = [n for n in plan.notes if "does not exist on this machine" in n]
    assert said == [
        f"The folder {cwd} does not exist on this machine, so the agent cannot start there (-C {cwd}): "
        "restore or recreate it first."
    ]
    assert not any("cd" in n.split() for n in plan.notes)


def test_cli_fork_prints_the_command_of_agents_that_copy_the_session_themselves(
    conn, tmp_path, monkeypatch, capsys
):
    """`threadloom fork` at a Codex or Gemini point failed ("this plan writes no file", or a traceback for
    Gemini's already written copy): only a plan holding a transcript has a file to write."""
    from threadloom.core.cli import main

    from tests.builders.gemini import chats, meta, reply, user, write_jsonl
    from tests.support import full_session

    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "ghome"))
    full_session(tmp_path / "codex").write()
    root = tmp_path / "ghome" / ".gemini"
    (root / "tmp" / "webshop").mkdir(parents=True)
    (root / "tmp" / "webshop" / ".project_root").write_text("/home/dev/webshop\n")
    write_jsonl(
        chats(root) / "session-2026-04-29T21-39-5f0e2a8c.jsonl",
        [meta(), user("u1", "hi"), reply("g1", "hello")],
    )
    ingest(conn, tmp_path / "codex", root)
    db_path = conn.execute("PRAGMA database_list").fetchone()[2]
    for agent, ends in (("codex", " -C /home/dev/shop"), ("gemini", ".json")):
        entry = conn.execute(
            "SELECT e.id FROM entries e JOIN agent_sessions s ON s.id = e.session_id "
            "WHERE s.source = ? AND e.turn_id IS NOT NULL ORDER BY e.id DESC LIMIT 1",
            (agent,),
        ).fetchone()[0]
        assert main(["fork", "--db", db_path, str(entry)]) == 0
        out = capsys.readouterr()
        assert out.out.endswith(ends + "\n") and "Traceback" not in out.err, (agent, out)
        if agent == "gemini":
            Path(out.out.split()[-1]).unlink()


def test_aider_fork_writes_a_cut_history_copy_and_others_say_what_they_can(conn, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    history = project / ".aider.chat.history.md"
    history.write_text(
        "\n# aider chat started at 2026-03-01 10:00:00\n\n#### add a readme\n\nI added README.md.\n\n"
        "#### now a license\n\nAdded LICENSE.\n\n#### and a changelog\n\nAdded CHANGELOG.md.\n"
    )
    ingest(conn, tmp_path)
    sid = conn.execute(
        "SELECT id FROM agent_sessions WHERE source = 'aider' AND message_count > 0"
    ).fetchone()[0]
    entry = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND content LIKE '%LICENSE%' ORDER BY id LIMIT 1", (sid,)
    ).fetchone()[0]
    plan = plan_fork(conn, str(entry))
    path = write_fork(plan)
    text = path.read_text()
    assert "now a license" in text and "Added LICENSE." in text and "changelog" not in text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and path.parent == project
    assert plan.command == f"cd {project} && aider --chat-history-file {path.name} --restore-chat-history"
    assert history.read_text().count("####") == 3  # the source is untouched
    with pytest.raises(ForkError):
        resume_plan(conn, sid, fork_at_end=True)


def test_a_fork_copies_records_orjson_cannot_write_and_passes_over_odd_types(conn, tmp_path):
    """A log's values are anyone's: a record nested 300 levels deep or holding an integer past 64
    bits is copied into the fork as it reads (orjson writes neither); a record whose `type` is a
    list is no conversation record, not a crash."""
    sid = "c0de0000-1111-4222-8333-000000000fff"
    t = Transcript(tmp_path / "projects" / "-srv-odd" / f"{sid}.jsonl", sid, cwd="/srv/odd")
    deep: list = []
    for _ in range(300):
        deep = [deep]
    t.user("start")
    t.assistant("first", usage={"input_tokens": 3, "output_tokens": 2})
    t.lines[-1]["extra"] = {"deep": deep, "big": 2**70}
    t.add(
        {"type": ["user"], "message": {"role": "user", "content": "odd one"}}, chain=False
    )  # no type at all
    t.user("then this")
    t.assistant("last")
    t.write()
    ingest(conn, tmp_path / "projects")
    plan = plan_fork(conn, t.lines[-1]["uuid"])
    copied = [json.loads(line) for line in write_fork(plan).read_bytes().splitlines()]
    kept = [r for r in copied if isinstance(r.get("extra"), dict)]
    assert len(kept) == 1 and kept[0]["extra"] == {"deep": deep, "big": 2**70}
    assert not any(r.get("type") == ["user"] for r in copied) and "then this" in json.dumps(copied)


def test_a_uuid_two_unrelated_sessions_hold_is_refused_naming_each(conn, tmp_path):
    """Two sessions holding the same record uuids (a session folder copied under another id):
    `fork UUID` silently forked the first; it names each session's entry id to give instead, and
    forking by entry id is the session asked for."""
    from threadloom.core.actions.fork import resolve_entry

    first, second = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{first}.jsonl", first, cwd="/srv/app")
    t.user("hello")
    t.assistant("Hi.")
    t.write()
    copy = "".join(json.dumps({**line, "sessionId": second}) + "\n" for line in t.lines)
    (tmp_path / "projects" / "-srv-app" / f"{second}.jsonl").write_text(copy)  # the same uuids
    ingest(conn, tmp_path / "projects")
    uuid = conn.execute(
        "SELECT uuid FROM entries WHERE session_id = ? AND role = 'assistant'", (first,)
    ).fetchone()[0]
    ids = dict(conn.execute("SELECT session_id, id FROM entries WHERE uuid = ?", (uuid,)).fetchall())
    assert set(ids) == {first, second}
    with pytest.raises(ForkError, match="record of several sessions") as refused:
        resolve_entry(conn, uuid)
    assert f"{ids[first]} (session {first})" in str(refused.value)
    assert f"{ids[second]} (session {second})" in str(refused.value)
    assert resolve_entry(conn, str(ids[second]))[1] == second


def test_a_session_branched_in_claude_code_keeps_its_own_turns(conn, tmp_path):
    """Claude Code's /branch and --fork-session write the conversation again under a new session
    id with every uuid kept (FORK.md): the turns are keyed by their prompt's uuid, and the copy's
    replaced the source's, whose fork picker then listed nothing and whose turns by meaning were
    gone. Each session keeps its own turns, picker and episodes."""
    from threadloom.core.insight.episodes import refresh

    source, branch = "aaaaaaaa-1111-4222-8333-0000000000c1", "bbbbbbbb-1111-4222-8333-0000000000c2"
    folder = tmp_path / "projects" / "-srv-app"
    t = Transcript(folder / f"{source}.jsonl", source, cwd="/srv/app")
    t.user("first")
    t.assistant("one")
    t.user("second")
    t.assistant("two")
    t.write()
    copied = [
        {**line, "sessionId": branch, "forkedFrom": {"sessionId": source, "messageUuid": line.get("uuid")}}
        for line in t.lines
    ]
    (folder / f"{branch}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in copied))
    ingest(conn, tmp_path / "projects")
    refresh(conn, {source, branch})
    for sid in (source, branch):
        assert [p.prompt for p in fork_points(conn, sid)] == ["first", "second"], sid
        turns = conn.execute("SELECT count(*) FROM agent_turns WHERE session_id = ?", (sid,)).fetchone()[0]
        episodes = conn.execute("SELECT count(*) FROM episodes WHERE session_id = ?", (sid,)).fetchone()[0]
        assert turns == episodes == 2, sid


def test_a_fork_of_an_old_session_starts_when_it_was_forked(conn, tmp_path):
    """Its copies keep their source's times: a fork made on 2026-05-04 of a session of 2025-01-01
    began in 2025 and lasted 488 days, whatever was done in it since."""
    t = Transcript(tmp_path / "projects" / "-p" / f"{SID}.jsonl", SID)
    t.user("old question")
    last = t.assistant("old answer")
    t.lines[0]["timestamp"], t.lines[1]["timestamp"] = "2025-01-01T10:00:00.000Z", "2025-01-01T12:00:00.000Z"
    t.write()
    ingest(conn, tmp_path / "projects")
    plan = plan_fork(conn, last, now=datetime(2026, 5, 4, 12, 30, tzinfo=UTC))
    path = write_fork(plan)
    ingest(conn, path)

    def span() -> tuple[int, int]:
        return conn.execute(
            "SELECT created_at, ended_at FROM agent_sessions WHERE id = ?", (plan.new_session_id,)
        ).fetchone()

    forked = int(datetime(2026, 5, 4, 12, 30, tzinfo=UTC).timestamp() * 1000)
    assert span() == (forked, forked)
    # resumed: what is said in it since is its own, and its source's times stay out
    fork = json.loads(path.read_text().splitlines()[-2])
    resumed = {**fork, "uuid": "r1", "parentUuid": fork["uuid"], "timestamp": "2026-05-04T13:30:00.000Z"}
    resumed.pop("forkedFrom")
    resumed["message"] = {**fork["message"], "id": "m-own", "content": [{"type": "text", "text": "new"}]}
    with path.open("a") as out:
        out.write(json.dumps(resumed) + "\n")
    ingest(conn, path)
    assert span() == (forked, forked + 3_600_000)


def test_a_fork_not_resumed_yet_counts_no_tokens_of_its_own(conn, tmp_path):
    """Its copies' usage stays with its source (counted once), so it had no usage row and read
    "? tok", as a session of an agent that records no tokens (Amazon Q) does; it reads 0."""
    from threadloom.core.read.query import get_session

    t = Transcript(tmp_path / "projects" / "-p" / f"{SID}.jsonl", SID)
    t.user("question")
    last = t.assistant("answer")
    t.write()
    ingest(conn, tmp_path / "projects")
    plan = plan_fork(conn, last)
    ingest(conn, write_fork(plan))
    source, fork = get_session(conn, SID), get_session(conn, plan.new_session_id)
    assert source is not None and fork is not None and source.total_tokens > 0
    assert (fork.total_tokens, fork.tokens_text) == (0, "0")
    # a fork of that fork: its source has no usage row of its own either
    last_of_fork = conn.execute(
        "SELECT uuid FROM entries WHERE session_id = ? AND role = 'assistant' ORDER BY seq DESC LIMIT 1",
        (plan.new_session_id,),
    ).fetchone()[0]
    again = plan_fork(conn, last_of_fork)
    ingest(conn, write_fork(again))
    twice = get_session(conn, again.new_session_id)
    assert twice is not None and (twice.total_tokens, twice.tokens_text) == (0, "0")
