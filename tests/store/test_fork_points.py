"""Fork and resume you can trust (issue 16): at the exact message, every parallel tool call kept,
written where the agent looks, and a resume that says when its transcript must be restored first."""

from __future__ import annotations

import json
import random
import shutil
import stat
from pathlib import Path

import pytest
from threadloom.core.actions.fork import (
    ForkError,
    claude_folder_name,
    claude_restore_step,
    fork_messages,
    fork_points,
    plan_fork,
    resume_plan,
    write_fork,
)
from threadloom.core.cli import main
from threadloom.core.store import db

from tests.conftest import CORPUS, Transcript, ingest, tool_use
from tests.support import check_fork_file, lookups, run_printed

SID = "a1600000-0000-4000-8000-000000000016"
HOOK = {
    "type": "attachment",
    "attachment": {"type": "hook_success", "hookName": "PostToolUse:Agent", "content": ""},
}


def parallel_session(root: Path, cwd: str) -> Transcript:
    """One prompt whose answer is one API message with three parallel calls, written as Claude Code
    2.1 writes it: a record per block, chained; each result hanging off its own call, in the order the
    calls ended, with a hook's attachment after each; then a text reply, a message of a text and a
    call, a last reply, and a second turn."""
    t = Transcript(root / "-anywhere" / f"{SID}.jsonl", SID, cwd=cwd)
    t.user("research three things")
    t.assistant(thinking="three agents at once", msg_id="m1")
    calls = [
        t.assistant(msg_id="m1", tools=[tool_use(f"t{n}", "Agent", description=f"topic {n}", prompt="go")])
        for n in (1, 2, 3)
    ]
    for n in (3, 1, 2):
        t.tool_result(f"t{n}", f"topic {n} done", parent=calls[n - 1], sourceToolAssistantUUID=calls[n - 1])
        t.add(dict(HOOK))
        t.raw({"type": "last-prompt", "lastPrompt": "research three things", "sessionId": SID})
    t.assistant("All three are done.", msg_id="m2")
    t.assistant("Checking the log.", msg_id="m3")
    t.assistant(msg_id="m3", tools=[tool_use("t4", "Bash", command="git log")])
    t.tool_result("t4", "3 commits")
    t.assistant("Here is the log.", msg_id="m4")
    t.user("thanks, now the summary")
    t.assistant("Summary: three topics.", msg_id="m5")
    t.write()
    return t


def uuid_of(t: Transcript, predicate) -> str:
    return next(r["uuid"] for r in t.lines if predicate(r))


def blocks(rec: dict) -> list[dict]:
    content = rec.get("message", {}).get("content")
    return content if isinstance(content, list) else []


def tool_ids(records: list[dict], kind: str) -> list[str]:
    key = "id" if kind == "tool_use" else "tool_use_id"
    return [b[key] for r in records for b in blocks(r) if b.get("type") == kind]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work" / "shop"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def session(conn, tmp_path, work) -> Transcript:
    """Read from a folder Claude Code never looks in (as with `--source`)."""
    t = parallel_session(tmp_path / "backup", str(work))
    ingest(conn, tmp_path / "backup")
    return t


def agent_folder(tmp_path: Path, cwd: Path | str) -> Path:
    return tmp_path / "no-claude-here" / "projects" / claude_folder_name(str(cwd))


# ---------------------------------------------------------------------- whole API messages, exact cut


def test_a_fork_after_parallel_calls_keeps_all_three_with_their_results(conn, session, tmp_path, work):
    """The ancestor walk from the next message reaches only the call whose result came last: 2 of
    the 3 calls, their results and their hooks' records vanished."""
    reply = uuid_of(session, lambda r: blocks(r) and blocks(r)[0].get("text") == "All three are done.")
    plan = plan_fork(conn, reply)
    transcript = check_fork_file(write_fork(plan), plan.new_session_id, reply)
    assert sorted(tool_ids(transcript, "tool_use")) == ["t1", "t2", "t3"]
    assert tool_ids(transcript, "tool_result") == ["t3", "t1", "t2"]  # file order
    assert sum(1 for r in transcript if r["type"] == "attachment") == 3
    upto = next(i for i, r in enumerate(session.lines) if r.get("uuid") == reply)
    # everything before, in file order, the metadata lines (last-prompt) left out
    assert [r["forkedFrom"]["messageUuid"] for r in transcript] == [
        r["uuid"] for r in session.lines[: upto + 1] if r.get("uuid")
    ]
    assert plan.tool_calls == 3 and plan.records == len(transcript)


@pytest.mark.parametrize("which", [1, 2, 3])
def test_a_fork_at_one_parallel_call_keeps_its_whole_message_and_stops_at_the_last_result(
    conn, session, which
):
    call = uuid_of(session, lambda r: any(b.get("id") == f"t{which}" for b in blocks(r)))
    plan = plan_fork(conn, call)
    last_result = uuid_of(session, lambda r: any(b.get("tool_use_id") == "t2" for b in blocks(r)))
    assert plan.fork_point == last_result  # the results of its API message come with it, and nothing after
    transcript = check_fork_file(write_fork(plan), plan.new_session_id, last_result)
    assert sorted(tool_ids(transcript, "tool_use")) == ["t1", "t2", "t3"]
    assert transcript[-1]["type"] == "user" and "All three" not in json.dumps(transcript)


def test_a_fork_at_a_text_reply_mid_turn_ends_on_that_reply(conn, session):
    """A fork was cut at the end of the turn: here two API messages and a tool call too many."""
    reply = uuid_of(session, lambda r: blocks(r) and blocks(r)[0].get("text") == "All three are done.")
    plan = plan_fork(conn, reply)
    assert plan.fork_point == reply
    text = b"\n".join(plan.lines)
    assert b"git log" not in text and b"Checking the log" not in text and b"Here is the log" not in text


def test_a_fork_at_the_text_of_a_message_with_a_call_keeps_the_call_and_its_result(conn, session):
    """`Checking the log.` and the Bash call are one API message in two records: forking at either
    keeps both and the call's result, and nothing after."""
    result = uuid_of(session, lambda r: any(b.get("tool_use_id") == "t4" for b in blocks(r)))
    for chosen in (
        uuid_of(session, lambda r: blocks(r) and blocks(r)[0].get("text") == "Checking the log."),
        uuid_of(session, lambda r: any(b.get("id") == "t4" for b in blocks(r))),
        result,
    ):
        plan = plan_fork(conn, chosen)
        assert plan.fork_point == result and plan.tool_calls == 4
        assert b"Here is the log" not in b"\n".join(plan.lines)


def test_fork_before_a_prompt_and_at_a_prompt(conn, session, work):
    prompt = uuid_of(session, lambda r: r.get("message", {}).get("content") == "thanks, now the summary")
    here = plan_fork(conn, prompt)
    assert here.fork_point == prompt and any("before its answer" in n for n in here.notes)
    before = plan_fork(conn, prompt, before=True)
    assert before.fork_point == uuid_of(
        session, lambda r: blocks(r) and blocks(r)[0].get("text") == "Here is the log."
    )
    assert before.command.endswith(f"claude --resume {before.new_session_id}")
    edited = plan_fork(conn, prompt, before=True, prompt="now a table instead")
    assert edited.fork_point == before.fork_point and edited.command.endswith("'now a table instead'")
    dashed = plan_fork(conn, prompt, before=True, prompt="-v please")
    assert dashed.command.endswith("-- '-v please'")  # never read as an option
    with pytest.raises(ForkError, match="only a prompt"):
        plan_fork(conn, before.fork_point, before=True)


def test_cli_fork_entry_means_the_exact_message_and_before_the_prompt(
    conn, session, tmp_path, work, capsys, fake_agents, sandbox
):
    db_path = conn.execute("PRAGMA database_list").fetchone()[2]
    prompt = conn.execute("SELECT id FROM entries WHERE content = 'thanks, now the summary'").fetchone()[0]
    assert main(["fork", "--db", db_path, "--json", "--before", str(prompt)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["written"] and data["tool_calls"] == 4 and data["restore"] is None
    path = Path(data["path"])
    assert path.parent == agent_folder(tmp_path, work) and stat.S_IMODE(path.stat().st_mode) == 0o600
    last = json.loads(path.read_text().splitlines()[-2])
    assert last["message"]["content"][0]["text"] == "Here is the log."
    assert run_printed(data["command"], fake_agents, sandbox) == [
        ["claude", str(work), "--resume", data["new_session_id"]]
    ]
    assert lookups(fake_agents) == [f"found {path}"]  # where Claude Code itself would look
    reply = conn.execute("SELECT id FROM entries WHERE content = 'Here is the log.'").fetchone()[0]
    assert main(["fork", "--db", db_path, "--before", str(reply)]) == 1
    assert "only a prompt can be forked before" in capsys.readouterr().err


# ---------------------------------------------------------------------- where the agent looks


def test_a_fork_of_a_session_read_from_elsewhere_goes_where_claude_looks(conn, session, tmp_path, work):
    source = session.path
    before = (source.read_bytes(), source.stat().st_mtime_ns)
    plan = plan_fork(conn, session.lines[-1]["uuid"])
    path = write_fork(plan)
    assert path == agent_folder(tmp_path, work) / f"{plan.new_session_id}.jsonl"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert (source.read_bytes(), source.stat().st_mtime_ns) == before
    assert list(source.parent.iterdir()) == [source]  # nothing beside the copy, where claude never looks
    with pytest.raises(FileExistsError):  # created exclusively: never over another file
        write_fork(plan)


def test_claude_folder_names_as_claude_code_writes_them(tmp_path, monkeypatch):
    assert claude_folder_name("/Users/a/my_proj.v2") == "-Users-a-my-proj-v2"
    assert claude_folder_name("C:\\x") == "C--x"
    assert claude_folder_name("/tmp/\U0001f600") == "-tmp---"  # beyond the BMP: two UTF-16 units
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    long = "/" + "/".join(["segment"] * 40)
    from threadloom.core.actions.fork import claude_project_dir

    notes: list[str] = []
    guessed = claude_project_dir(long, None, notes)
    assert (
        guessed.name.startswith(claude_folder_name(long)[:200] + "-") and notes
    )  # a hash that may differ: said
    existing = tmp_path / "cfg" / "projects" / (claude_folder_name(long)[:200] + "-abc123")
    existing.mkdir(parents=True)
    notes = []
    assert claude_project_dir(long, None, notes) == existing and not notes  # the folder Claude Code made


def test_resume_of_a_session_read_from_elsewhere_is_refused_until_restored(
    conn, session, tmp_path, work, capsys, fake_agents, sandbox
):
    sub = Transcript(
        session.path.parent / SID / "subagents" / "agent-a1.jsonl",
        SID,
        cwd=str(work),
        isSidechain=True,
        agentId="a1",
    )
    sub.user("topic 1", parent=False)
    sub.assistant("topic 1 done")
    sub.write()
    (session.path.parent / SID / "subagents" / "agent-a1.meta.json").write_text(
        '{"agentType": "general-purpose"}'
    )
    ingest(conn, tmp_path / "backup")
    db_path = conn.execute("PRAGMA database_list").fetchone()[2]
    plan = resume_plan(conn, SID)
    assert plan.restore is not None and "does not look there" in plan.restore.reason
    assert plan.restore.question.startswith("The transcript is not where claude looks for it")
    assert any("must be restored" in note for note in plan.notes)  # the TUI shows this, and asks
    for args in ([SID], ["--fork-session", SID]):
        assert main(["resume", "--db", db_path, *args]) == 1
        out = capsys.readouterr()
        assert out.out == "" and "not where claude looks for it" in out.err and "--restore" in out.err
        assert str(agent_folder(tmp_path, work)) in out.err
    assert not agent_folder(tmp_path, work).exists()  # nothing written without --restore
    assert main(["resume", "--db", db_path, "--restore", SID]) == 0
    out = capsys.readouterr()
    placed = agent_folder(tmp_path, work)
    assert (placed / f"{SID}.jsonl").read_bytes() == session.path.read_bytes()
    assert (placed / SID / "subagents" / "agent-a1.jsonl").read_bytes() == sub.path.read_bytes()
    assert (placed / SID / "subagents" / "agent-a1.meta.json").is_file()
    assert out.err.count("restored ") == 3
    assert run_printed(out.out.strip(), fake_agents, sandbox) == [["claude", str(work), "--resume", SID]]
    assert lookups(fake_agents) == [f"found {placed / f'{SID}.jsonl'}"]
    assert main(["resume", "--db", db_path, SID]) == 0  # in place now: nothing to restore
    assert "restored" not in capsys.readouterr().err


def test_resume_of_a_session_the_agent_deleted_restores_it_and_never_overwrites(conn, tmp_path, work, capsys):
    t = parallel_session(tmp_path / "no-claude-here" / "projects", str(work))
    # written where Claude Code keeps it, then deleted by it (cleanupPeriodDays): the archive kept it
    home_copy = agent_folder(tmp_path, work) / f"{SID}.jsonl"
    home_copy.parent.mkdir(parents=True)
    t.path.rename(home_copy)
    original = home_copy.read_bytes()
    ingest(conn, home_copy)
    assert claude_restore_step(conn, SID, str(work)) is None  # in place
    home_copy.unlink()
    step = claude_restore_step(conn, SID, str(work))
    assert (
        step is not None
        and "claude deleted it" in step.reason
        and step.files == {str(home_copy): str(home_copy)}
    )
    db_path = conn.execute("PRAGMA database_list").fetchone()[2]
    assert main(["resume", "--db", db_path, SID]) == 1
    assert "claude deleted it; threadloom's archive kept it" in capsys.readouterr().err
    assert main(["resume", "--db", db_path, "--restore", "--json", SID]) == 0
    assert home_copy.read_bytes() == original and stat.S_IMODE(home_copy.stat().st_mode) == 0o600
    assert json.loads(capsys.readouterr().out)["restore"] is None


def test_a_missing_folder_is_said_plainly_and_restore_still_offered(conn, tmp_path, capsys):
    gone = tmp_path / "gone" / "app"
    parallel_session(tmp_path / "backup", str(gone))
    ingest(conn, tmp_path / "backup")
    plan = resume_plan(conn, SID)
    assert any(f"The folder {gone} does not exist on this machine" in note for note in plan.notes)
    assert plan.restore is not None


def test_codex_resume_of_a_rollout_read_from_elsewhere(
    conn, tmp_path, monkeypatch, capsys, fake_agents, sandbox
):
    from tests.unit.test_adapter_codex import THREAD, full_session

    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    rollout = full_session(tmp_path / "backup-codex")  # a copy of someone's ~/.codex, not this one
    rollout.write()
    ingest(conn, tmp_path / "backup-codex")
    db_path = conn.execute("PRAGMA database_list").fetchone()[2]
    assert main(["resume", "--db", db_path, THREAD]) == 1
    assert "not where codex looks for it" in capsys.readouterr().err
    assert main(["resume", "--db", db_path, "--restore", THREAD]) == 0
    out = capsys.readouterr()
    placed = tmp_path / "codex" / "sessions" / "2026" / "03" / "02" / rollout.path.name
    assert placed.read_bytes() == rollout.path.read_bytes()
    assert run_printed(out.out.strip(), fake_agents, sandbox) == [
        ["codex", str(sandbox), "resume", THREAD, "-C", "/home/dev/shop"]
    ]
    assert lookups(fake_agents) == [f"found {placed}"]
    assert main(["resume", "--db", db_path, THREAD]) == 0  # found now


# ---------------------------------------------------------------------- the picker's API


def test_fork_messages_lists_every_message_of_the_turns(conn, session):
    points = fork_points(conn, SID)
    assert [p.prompt for p in points] == ["research three things", "thanks, now the summary"]
    messages = fork_messages(conn, SID, [p.turn_id for p in points])
    kinds = [(m.kind, m.label) for m in messages]
    assert kinds == [
        ("prompt", "research three things"),
        ("thinking", "three agents at once"),
        ("tool call", "Agent: topic 1"),
        ("tool call", "Agent: topic 2"),
        ("tool call", "Agent: topic 3"),
        ("reply", "All three are done."),
        ("reply", "Checking the log."),
        ("tool call", "Bash: git log"),
        ("reply", "Here is the log."),
        ("prompt", "thanks, now the summary"),
        ("reply", "Summary: three topics."),
    ]
    assert [m.can_fork_before for m in messages].count(True) == 2 and all(m.exact for m in messages)
    assert {m.tool_status for m in messages if m.kind == "tool call"} == {"completed"}
    assert len({m.message_id for m in messages[1:5]}) == 1  # one API message: they fork as one
    # each entry id is a fork point at that exact message
    reply = next(m for m in messages if m.label == "All three are done.")
    plan = plan_fork(conn, str(reply.entry_id))
    assert json.loads(plan.lines[-2])["message"]["content"][0]["text"] == "All three are done."
    # a turn's point keeps the turn: what the picker's turn rows fork at
    assert plan_fork(conn, str(points[0].cut_entry_id)).fork_point == uuid_of(
        session, lambda r: blocks(r) and blocks(r)[0].get("text") == "Here is the log."
    )


def test_the_pickers_turns_and_messages_read_claude_codes_markup(conn, tmp_path):
    """Turn rows and message rows read what each thing is: /model opus, the prompt (not its IDE
    note), ! commands; a command's output and the caveat as notes (↳), an empty output and the
    empty thinking lines that open Opus 4.7's replies left out; TodoWrite by its list."""
    from tests.conftest import markup_session

    t = markup_session(tmp_path)
    ingest(conn, tmp_path / "projects")
    points = fork_points(conn, t.session_id)
    assert [p.prompt for p in points] == [
        "/model opus",
        "Why does the tokenizer drop the last token?",
        "! uv run pytest -q tests/test_split.py",
        "/context",
        "Fix it and run the tests again.",
    ]  # the `!` command's output is in its command's turn, not a turn of its own
    messages = fork_messages(conn, t.session_id, [p.turn_id for p in points])
    assert [(m.kind, m.label) for m in messages] == [
        ("prompt", "/model opus"),
        ("note", "↳ Set model to opus (claude-opus-4-7)"),
        ("prompt", "Why does the tokenizer drop the last token?"),
        ("reply", "Looking at the loop in `split.py`."),
        ("tool call", "TodoWrite: 0 of 3 done · ◐ Reproducing the dropped token"),
        ("reply", "Found it: the loop stops one short."),
        ("tool call", "TodoWrite: 1 of 4 done · ◐ Fixing the loop bound"),
        ("prompt", "! uv run pytest -q tests/test_split.py"),
        (
            "note",
            "↳ F.... === FAILURES === _ test_last_token _ assert ['a'] == ['a', 'b'] 1 failed, 4 passed in 0.12s",
        ),
        ("prompt", "/context"),
        ("prompt", "Fix it and run the tests again."),
        ("reply", "Fixed the bound; the suite passes."),
        ("event", "stop_hook_summary"),
    ]


def test_codex_messages_are_turn_level_fork_points(conn, tmp_path, monkeypatch):
    from tests.unit.test_adapter_codex import full_session

    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    full_session(tmp_path / "codex").write()
    ingest(conn, tmp_path / "codex")
    sid = conn.execute("SELECT id FROM agent_sessions WHERE source = 'codex'").fetchone()[0]
    messages = fork_messages(conn, sid, [p.turn_id for p in fork_points(conn, sid)])
    assert [m.kind for m in messages][:2] == ["prompt", "thinking"] and not any(m.exact for m in messages)
    assert [m.tool_name for m in messages if m.kind == "tool call"] == ["shell", "apply_patch"]


# ---------------------------------------------------------------------- real sessions

REAL = [
    CORPUS / "claude-code" / "handgemacht-ai__claude-code-log" / "test" / "test_data" / "real_projects",
    CORPUS / "claude-code" / "d-kimuson__claude-code-viewer",
]


@pytest.mark.corpus
@pytest.mark.skipif(not all(p.is_dir() for p in REAL), reason="corpus absent")
def test_forks_at_random_mid_turn_points_of_real_sessions(tmp_path):
    for source in REAL:
        shutil.copytree(source, tmp_path / "real" / source.name)
    sources = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (tmp_path / "real").rglob("*.jsonl")}
    dbfile = tmp_path / "ledger.db"
    conn = db.connect(dbfile)
    ingest(conn, tmp_path / "real")
    rng = random.Random(1616)
    candidates = conn.execute(
        "SELECT e.id, e.session_id, e.uuid, e.role FROM entries e JOIN agent_sessions s ON s.id = e.session_id "
        "WHERE s.source = 'claude-code' AND s.is_subagent = 0 AND e.seq IS NOT NULL AND e.uuid IS NOT NULL "
        "AND e.dup_of IS NULL AND e.uuid != e.turn_id ORDER BY e.id"
    ).fetchall()  # mid-turn: not prompts
    picks = rng.sample(candidates, 60)
    kinds = {"text": 0, "tool_use": 0, "parallel": 0}
    for entry_id, sid, chosen, _ in picks:
        by_uuid = {}
        for (raw,) in conn.execute("SELECT raw FROM entries WHERE session_id = ? AND dup_of IS NULL", (sid,)):
            rec = json.loads(raw)
            if isinstance(rec, dict) and isinstance(rec.get("uuid"), str):
                by_uuid.setdefault(rec["uuid"], rec)
        plan = plan_fork(conn, str(entry_id))
        path = write_fork(plan)
        transcript = check_fork_file(
            path, plan.new_session_id, plan.fork_point
        )  # linear, every call answered
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        if str(plan.cwd).startswith("/"):
            assert path.parent == agent_folder(tmp_path, plan.cwd)
        originals = [by_uuid[r["forkedFrom"]["messageUuid"]] for r in transcript]
        kept = {r["uuid"] for r in originals}
        messages = {
            r["message"]["id"] for r in originals if r["type"] == "assistant" and r["message"].get("id")
        }
        # no block of a kept API message is left out
        assert {
            u
            for u, r in by_uuid.items()
            if r.get("type") == "assistant"
            and not r.get("isSidechain")
            and r.get("message", {}).get("id") in messages
        } <= kept
        # the last record is the chosen message, a block of its API message, or a result of it
        chosen_rec = by_uuid[chosen]
        own = chosen_rec.get("message", {}).get("id") if chosen_rec["type"] == "assistant" else None
        answered = set(tool_ids([chosen_rec], "tool_result"))
        if answered:
            own = next(
                r["message"].get("id")
                for r in by_uuid.values()
                if r["type"] == "assistant" and answered & set(tool_ids([r], "tool_use"))
            )
        calls = {
            t
            for r in by_uuid.values()
            if r["type"] == "assistant" and own and r["message"].get("id") == own
            for t in tool_ids([r], "tool_use")
        }
        last = originals[-1]
        assert (
            last["uuid"] == chosen
            or (own and last.get("message", {}).get("id") == own)
            or set(tool_ids([last], "tool_result")) & calls
        ), (sid, chosen, last["uuid"])
        assert plan.tool_calls == len(tool_ids(transcript, "tool_use"))
        kinds["text" if any(b.get("type") == "text" for b in blocks(chosen_rec)) else "tool_use"] += bool(
            blocks(chosen_rec)
        )
        kinds["parallel"] += len(calls) > 1
        ingest(conn, path)
        stored = conn.execute(
            "SELECT tool_call_count FROM agent_sessions WHERE id = ?", (plan.new_session_id,)
        ).fetchone()[0]
        assert stored == plan.tool_calls
    assert all(data == (p.read_bytes(), p.stat().st_mtime_ns) for p, data in sources.items())
    assert kinds["text"] >= 5 and kinds["tool_use"] >= 5 and kinds["parallel"] >= 1, kinds
    conn.close()


def test_an_ingested_fork_shows_exactly_the_tool_calls_it_holds(conn, session):
    plan = plan_fork(conn, session.lines[-1]["uuid"])
    ingest(conn, write_fork(plan))
    count = conn.execute(
        "SELECT count(*) FROM agent_tool_calls WHERE session_id = ?", (plan.new_session_id,)
    ).fetchone()[0]
    assert count == plan.tool_calls == 4


def test_fork_messages_of_a_compacted_session_and_a_fork_at_the_summary(conn, tmp_path, work):
    t = Transcript(tmp_path / "backup" / "-p" / f"{SID}.jsonl", SID, cwd=str(work))
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
    summary = t.add(
        {
            "type": "user",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "Summary of before"},
        },
        parent=boundary,
    )
    t.user("new work")
    t.assistant("done")
    t.write()
    ingest(conn, tmp_path / "backup")
    messages = fork_messages(conn, SID, [p.turn_id for p in fork_points(conn, SID)])
    assert [m.kind for m in messages if m.label == "Summary of before"] == ["summary"]
    at = next(m for m in messages if m.label == "Summary of before")
    plan = plan_fork(conn, str(at.entry_id))
    assert plan.fork_point == summary and [json.loads(line).get("subtype") for line in plan.lines[:1]] == [
        "compact_boundary"
    ]  # from the compaction on, as Claude Code loads it


def test_a_native_fork_needs_the_source_where_claude_looks(
    conn, session, tmp_path, work, capsys, fake_agents, sandbox
):
    """`claude -p --resume SRC --fork-session …` reads SRC itself: refused until it is restored."""
    db_path = conn.execute("PRAGMA database_list").fetchone()[2]
    reply = conn.execute("SELECT id FROM entries WHERE content = 'Here is the log.'").fetchone()[0]
    args = ["fork", "--db", db_path, "--native", "--prompt", "go on", str(reply)]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "not where claude looks for it" in err and "--restore" in err
    assert main([*args, "--restore"]) == 0
    out = capsys.readouterr()
    assert (agent_folder(tmp_path, work) / f"{SID}.jsonl").read_bytes() == session.path.read_bytes()
    calls = run_printed(out.out.strip(), fake_agents, sandbox)  # the calls of a pipe run at once: any order
    assert ["claude", str(work), "-p", "--resume", SID] in [call[:5] for call in calls]
