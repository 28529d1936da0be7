"""Printed commands never run code from the log: each test RUNS the printed command with bash, with
fake agents on PATH that record where they ran and the words they got.

Logs arrive from backups and from other people, so ids, folders and file names in them are hostile
here: `$(…)`, backticks, `;`, quotes, newlines, a leading `-`. A command either runs the fake agent
with exactly the expected words, or is refused with a message; no marker file is ever created.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from threadloom.core.actions.fork import claude_folder_name
from threadloom.core.cli import main
from threadloom.core.store import db

from tests.builders.claude import Transcript
from tests.support import CORPUS, FORKED, ingest, lookups, run_printed
from tests.tui_support import run_test

MARK = "pwned"  # what every payload tries to create
PAYLOADS = [
    "$(touch pwned)",
    "`touch pwned`",
    "; touch pwned",
    "' ; touch pwned ; '",
    '" ; touch pwned ; "',
    "\ntouch pwned\n",
    "-x$(touch pwned)",
    "&& touch pwned #",
    "| touch pwned",
    "$'\\n'$(touch pwned)",
]
SID = "c0ffee00-1111-4222-8333-444455556666"
THREAD = "019a0000-1111-7222-8333-444455556666"


@pytest.fixture(autouse=True)
def agent_homes(_isolated_home: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agents' own folders, where their sessions are written: `tmp_path/projects` is Claude
    Code's (`$CLAUDE_CONFIG_DIR/projects`)."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))


def no_marker(root: Path) -> bool:
    return not any(p.name == MARK for p in root.rglob("*"))


def threadloom(
    capsys: pytest.CaptureFixture[str], dbfile: Path, command: str, *args: str
) -> tuple[int, str, str]:
    """`threadloom COMMAND --db DB ARGS…`: exit code, the printed command (one final newline off), stderr."""
    code = main([command, "--db", str(dbfile), *args])
    out = capsys.readouterr()
    printed = out.out[:-1] if out.out.endswith("\n") else out.out
    return code, printed, out.err


def claude_session(root: Path, *, sid: str = SID, cwd: str, cut_uuid: str | None = None) -> Transcript:
    """Two turns; `cut_uuid` names the last record of the first turn (where a fork is cut). Written
    where Claude Code keeps it, in `ROOT/projects/<the folder, encoded>/`."""
    t = Transcript(root / "projects" / claude_folder_name(cwd) / f"{SID}.jsonl", sid, cwd=cwd)
    t.user("first question")
    t.assistant("first answer")
    if cut_uuid:
        t.lines[-1]["uuid"] = t.last = cut_uuid
    t.user("second question")
    t.assistant("second answer")
    t.write()
    return t


def ledger(tmp_path: Path, *sources: Path) -> Path:
    dbfile = tmp_path / "ledger.db"
    conn = db.connect(dbfile)
    try:
        ingest(conn, *sources)
    finally:
        conn.close()
    return dbfile


def first_answer(dbfile: Path) -> str:
    conn = db.connect(dbfile, readonly=True)
    try:
        row = conn.execute("SELECT id FROM entries WHERE content = 'first answer'").fetchone()
    finally:
        conn.close()
    return str(row[0])


def session_id(dbfile: Path, agent: str) -> str:
    conn = db.connect(dbfile, readonly=True)
    try:
        return conn.execute(
            "SELECT id FROM agent_sessions WHERE source = ? AND is_subagent = 0", (agent,)
        ).fetchone()[0]
    finally:
        conn.close()


def written_fork(err: str) -> str:
    """The new session id, from the `wrote PATH` line."""
    line = next(line for line in err.splitlines() if line.startswith("wrote "))
    return Path(line.removeprefix("wrote ")).stem


# ---------------------------------------------------------------------- Claude Code


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_claude_session_id_that_is_not_a_uuid_is_refused(tmp_path, capsys, fake_agents, sandbox, payload):
    work = tmp_path / "work"
    work.mkdir()
    claude_session(tmp_path, sid=f"c0ffee00{payload}", cwd=str(work))
    dbfile = ledger(tmp_path, tmp_path / "projects")
    sid = session_id(dbfile, "claude-code")
    for args in (["--", sid], ["--fork-session", "--", sid]):
        code, printed, err = threadloom(capsys, dbfile, "resume", *args)
        assert (code, printed) == (1, "") and "is not a UUID" in err and "no such value in a command" in err
    code, printed, err = threadloom(
        capsys, dbfile, "fork", "--native", "--prompt", "go on", first_answer(dbfile)
    )
    assert (code, printed) == (1, "") and "is not a UUID" in err
    # threadloom's own fork names a new session: the log's id is in no command, so this one is fine
    code, printed, err = threadloom(capsys, dbfile, "fork", first_answer(dbfile))
    assert code == 0
    new = written_fork(err)
    assert run_printed(printed, fake_agents, sandbox) == [["claude", str(work), "--resume", new]]
    assert no_marker(tmp_path)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_message_uuid_that_is_not_a_uuid_never_reaches_the_native_fork(
    tmp_path, capsys, fake_agents, sandbox, payload
):
    work = tmp_path / "work"
    work.mkdir()
    claude_session(tmp_path, cwd=str(work), cut_uuid=f"abcdef00-0000-4000-8000-00000000000{payload}")
    dbfile = ledger(tmp_path, tmp_path / "projects")
    code, printed, err = threadloom(
        capsys, dbfile, "fork", "--native", "--prompt", "go on", first_answer(dbfile)
    )
    assert (code, printed) == (1, "") and "message uuid" in err and "is not a UUID" in err
    code, printed, _ = threadloom(capsys, dbfile, "resume", SID)
    assert code == 0 and run_printed(printed, fake_agents, sandbox) == [
        ["claude", str(work), "--resume", SID]
    ]
    assert no_marker(tmp_path)


def hostile_folder(tmp_path: Path, payload: str) -> Path:
    folder = tmp_path / "work" / f"my app{payload}"
    folder.mkdir(parents=True)
    return folder


@pytest.mark.parametrize("payload", [*PAYLOADS, "\n", "two\nlines", "tab\there"])
def test_a_claude_folder_is_quoted_in_every_command(tmp_path, capsys, fake_agents, sandbox, payload):
    folder = hostile_folder(tmp_path, payload)
    claude_session(tmp_path, cwd=str(folder))
    dbfile = ledger(tmp_path, tmp_path / "projects")
    entry = first_answer(dbfile)
    code, printed, err = threadloom(capsys, dbfile, "resume", SID)
    assert code == 0 and "does not exist" not in err
    assert run_printed(printed, fake_agents, sandbox) == [["claude", str(folder), "--resume", SID]]
    assert [line.split()[0] for line in lookups(fake_agents)] == ["found"]  # where Claude Code looks
    code, printed, _ = threadloom(capsys, dbfile, "resume", "--fork-session", SID)
    assert run_printed(printed, fake_agents, sandbox) == [
        ["claude", str(folder), "--resume", SID, "--fork-session"]
    ]
    code, printed, err = threadloom(capsys, dbfile, "fork", "--prompt", "try $(touch pwned) again", entry)
    new = written_fork(err)
    assert run_printed(printed, fake_agents, sandbox) == [
        ["claude", str(folder), "--resume", new, "try $(touch pwned) again"]
    ]
    assert [line.split()[0] for line in lookups(fake_agents)] == ["found"]
    cut = json.loads(main_json(capsys, dbfile, "fork", "--native", "--prompt", "x", entry))["fork_point"]
    code, printed, _ = threadloom(capsys, dbfile, "fork", "--native", "--prompt", "it's `fine`", entry)
    calls = run_printed(printed, fake_agents, sandbox)
    assert sorted(calls) == sorted(
        [
            [
                "claude",
                str(folder),
                "-p",
                "--resume",
                SID,
                "--fork-session",
                f"--resume-session-at={cut}",
                "--output-format",
                "json",
                "it's `fine`",
            ],
            ["jq", str(folder), "-r", ".session_id"],
            ["claude", str(folder), "--resume", FORKED],
        ]
    )
    assert no_marker(tmp_path)


def main_json(capsys: pytest.CaptureFixture[str], dbfile: Path, command: str, *args: str) -> str:
    code, printed, _ = threadloom(capsys, dbfile, command, "--json", *args)
    assert code == 0
    return printed


@pytest.mark.parametrize(
    "cwd",
    [
        "-P",
        "--help",
        "-rf; touch pwned",
        "proj/$(touch pwned)",
        "~/x",
        "./work",
        "/srv/app\x1b]0;owned\x07",
        "/srv/\u202eppa",
    ],
)
def test_a_folder_that_is_not_a_plain_absolute_path_gets_no_cd_and_a_note(
    tmp_path, capsys, fake_agents, sandbox, cwd
):
    claude_session(tmp_path, cwd=cwd)
    dbfile = ledger(tmp_path, tmp_path / "projects")
    code, printed, err = threadloom(capsys, dbfile, "resume", SID)
    assert code == 0 and not printed.startswith("cd")
    assert "so the command has no cd: run it from the folder the session was started in" in err
    assert "\x1b" not in printed + err and "\u202e" not in printed + err  # nothing that drives the terminal
    assert run_printed(printed, fake_agents, sandbox) == [["claude", str(sandbox), "--resume", SID]]
    code, printed, err = threadloom(capsys, dbfile, "fork", first_answer(dbfile))
    assert run_printed(printed, fake_agents, sandbox) == [
        ["claude", str(sandbox), "--resume", written_fork(err)]
    ]
    assert no_marker(tmp_path)


def test_a_folder_missing_on_this_machine_is_said(tmp_path, capsys, fake_agents, sandbox):
    gone = str(tmp_path / "gone" / "$(touch pwned)")
    claude_session(tmp_path, cwd=gone)
    dbfile = ledger(tmp_path, tmp_path / "projects")
    code, printed, err = threadloom(capsys, dbfile, "resume", SID)
    assert code == 0 and f"note: The folder {gone} does not exist on this machine, so the cd will fail" in err
    assert run_printed(printed, fake_agents, sandbox) == []  # cd fails, so the agent is not started elsewhere
    data = json.loads(main_json(capsys, dbfile, "resume", SID))
    assert any("does not exist on this machine" in note for note in data["notes"])
    assert no_marker(tmp_path)


# ---------------------------------------------------------------------- Codex, Gemini, Aider


def codex_session(home: Path, *, thread: str = THREAD, cwd: str) -> None:
    from tests.support import Rollout

    r = Rollout(home, "rollout-id")
    r.thread = thread
    r.meta(cwd=cwd)
    r.prompt("add a cart total")
    r.say("Added it.")
    r.prompt("now the tests")
    r.say("Tests pass.")
    r.write()


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_codex_id_that_is_not_a_uuid_is_refused(tmp_path, capsys, monkeypatch, payload):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    codex_session(tmp_path / "codex", thread=f"019a0000{payload}", cwd=str(tmp_path))
    dbfile = ledger(tmp_path, tmp_path / "codex")
    sid = session_id(dbfile, "codex")
    entry = (
        db.connect(dbfile, readonly=True)
        .execute("SELECT id FROM entries WHERE session_id = ? AND turn_id IS NOT NULL LIMIT 1", (sid,))
        .fetchone()[0]
    )
    for command, args in (
        ("resume", ["--", sid]),
        ("resume", ["--fork-session", "--", sid]),
        ("fork", [str(entry)]),
    ):
        code, printed, err = threadloom(capsys, dbfile, command, *args)
        assert (code, printed) == (1, "") and "is not a UUID" in err, (command, args, err)
    assert no_marker(tmp_path)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_codex_folder_is_quoted(tmp_path, capsys, monkeypatch, fake_agents, sandbox, payload):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    folder = hostile_folder(tmp_path, payload)
    codex_session(tmp_path / "codex", cwd=str(folder))
    dbfile = ledger(tmp_path, tmp_path / "codex")
    code, printed, _ = threadloom(capsys, dbfile, "resume", THREAD)
    assert run_printed(printed, fake_agents, sandbox) == [
        ["codex", str(sandbox), "resume", THREAD, "-C", str(folder)]
    ]
    code, printed, _ = threadloom(capsys, dbfile, "resume", "--fork-session", THREAD)
    assert run_printed(printed, fake_agents, sandbox) == [["codex", str(folder), "fork", THREAD]]
    entry = (
        db.connect(dbfile, readonly=True)
        .execute("SELECT id FROM entries WHERE content = 'now the tests'")
        .fetchone()[0]
    )
    code, printed, err = threadloom(capsys, dbfile, "fork", str(entry))
    assert code == 0, err
    new = written_fork(err)[-36:]  # a new thread cut at the turn, which Codex resumes
    assert run_printed(printed, fake_agents, sandbox) == [
        ["codex", str(sandbox), "resume", new, "-C", str(folder)]
    ]
    assert [line.split()[0] for line in lookups(fake_agents)] == ["found"]
    assert no_marker(tmp_path)


def gemini_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, sid: str, project: Path) -> Path:
    from tests.builders.gemini import chats, meta, reply, user, write_jsonl

    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "ghome"))
    root = tmp_path / "ghome" / ".gemini"
    (root / "tmp" / "webshop").mkdir(parents=True)
    (root / "tmp" / "webshop" / ".project_root").write_text(f"{project}\n")
    lines = [
        meta(sessionId=sid),
        user("u1", "first"),
        reply("g1", "one"),
        user("u2", "second"),
        reply("g2", "two"),
    ]
    write_jsonl(chats(root) / "session-2026-04-29T21-39-5f0e2a8c.jsonl", lines)
    return root


@pytest.mark.parametrize("payload", [p for p in PAYLOADS if p.strip() == p])
def test_gemini_ids_and_folders_from_the_log(tmp_path, capsys, monkeypatch, fake_agents, sandbox, payload):
    folder = hostile_folder(tmp_path, payload)
    root = gemini_session(tmp_path, monkeypatch, sid=f"5f0e2a8c{payload}", project=folder)
    dbfile = ledger(tmp_path, root)
    sid = session_id(dbfile, "gemini")
    code, printed, err = threadloom(capsys, dbfile, "resume", "--", sid)
    assert (code, printed) == (1, "") and "is not made of letters, digits, '-' and '_'" in err
    # a fork is a file threadloom writes: its path, not the log's id, is in the command
    for command, args in (("resume", ["--fork-session", "--", sid]), ("fork", [first_gemini_reply(dbfile)])):
        code, printed, err = threadloom(capsys, dbfile, command, *args)
        assert code == 0, err
        path = re.search(r"Wrote \d+ messages to (.+?\.json); Gemini", err)[1]
        assert Path(path).parent == Path(tempfile.gettempdir())  # the log's id cannot move it elsewhere
        assert run_printed(printed, fake_agents, sandbox) == [["gemini", str(folder), "--session-file", path]]
        Path(path).unlink()
    assert no_marker(tmp_path)


def test_a_gemini_fork_dry_run_writes_nothing(tmp_path, capsys, monkeypatch, fake_agents, sandbox):
    """Gemini imports a copy threadloom writes to a temporary file: a dry run names one, writes none."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    folder = hostile_folder(tmp_path, "")
    dbfile = ledger(tmp_path, gemini_session(tmp_path, monkeypatch, sid="5f0e2a8c", project=folder))
    entry = first_gemini_reply(dbfile)
    plan = json.loads(main_json(capsys, dbfile, "fork", entry, "--dry-run"))
    assert plan["dry_run"] and Path(plan["path"]).parent == temp and list(temp.iterdir()) == []
    code, printed, err = threadloom(capsys, dbfile, "fork", entry, "--dry-run")
    assert code == 0 and "nothing written: the command would import a new file" in err
    assert list(temp.iterdir()) == []
    written = json.loads(main_json(capsys, dbfile, "fork", entry))  # the fork itself: its copy is made
    assert [p.name for p in temp.iterdir()] == [Path(written["path"]).name]
    assert Path(written["path"]).read_bytes().count(b'"content"') >= 2  # the messages up to the reply
    assert run_printed(written["command"], fake_agents, sandbox) == [
        ["gemini", str(folder), "--session-file", written["path"]]
    ]


def first_gemini_reply(dbfile: Path) -> str:
    row = db.connect(dbfile, readonly=True).execute("SELECT id FROM entries WHERE content = 'one'").fetchone()
    return str(row[0])


def test_a_gemini_id_as_gemini_writes_it_is_resumed(tmp_path, capsys, monkeypatch, fake_agents, sandbox):
    folder = hostile_folder(tmp_path, "")
    for sid in (
        "5f0e2a8c-1b2d-4e3f-9a0b-c1d2e3f4a5b6",
        "my_named-session",
    ):  # generated, and --session-id's rule
        shutil.rmtree(tmp_path / "ghome", ignore_errors=True)
        (tmp_path / "ledger.db").unlink(missing_ok=True)
        dbfile = ledger(tmp_path, gemini_session(tmp_path, monkeypatch, sid=sid, project=folder))
        code, printed, _ = threadloom(capsys, dbfile, "resume", sid)
        assert run_printed(printed, fake_agents, sandbox) == [["gemini", str(folder), "--resume", sid]]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_an_aider_history_in_a_hostile_folder(tmp_path, capsys, fake_agents, sandbox, payload):
    folder = hostile_folder(tmp_path, payload)
    (folder / ".aider.chat.history.md").write_text(
        "\n# aider chat started at 2026-03-01 10:00:00\n\n#### add a readme\n\nI added README.md.\n\n"
        "#### now a license\n\nAdded LICENSE.\n"
    )
    dbfile = ledger(tmp_path, folder)
    sid = session_id(dbfile, "aider")
    code, printed, _ = threadloom(capsys, dbfile, "resume", "--", sid)
    assert run_printed(printed, fake_agents, sandbox) == [["aider", str(folder), "--restore-chat-history"]]
    entry = (
        db.connect(dbfile, readonly=True)
        .execute("SELECT id FROM entries WHERE content LIKE '%LICENSE%' ORDER BY id LIMIT 1")
        .fetchone()[0]
    )
    plan = json.loads(main_json(capsys, dbfile, "fork", str(entry)))
    name = Path(plan["path"]).name
    assert plan["written"] and Path(plan["path"]) == folder / name and (folder / name).is_file()
    assert run_printed(plan["command"], fake_agents, sandbox) == [
        ["aider", str(folder), "--chat-history-file", name, "--restore-chat-history"]
    ]
    assert no_marker(tmp_path)


# ---------------------------------------------------------------------- real sessions

CD_RECORDER = 'cd() { printf "%s\\0" cd "$@" $\'\\036\' >> "$FAKE_LOG"; builtin cd "$HOME"; }\n'


def run_elsewhere(command: str, fake_agents: Path, sandbox: Path) -> list[list[str]]:
    """Run `command` with `cd` recorded (the real sessions' folders are not on this machine)."""
    return run_printed(CD_RECORDER + command, fake_agents, sandbox)


@pytest.mark.corpus
@pytest.mark.skipif(not (CORPUS / "claude-code").is_dir(), reason="corpus absent")
def test_real_claude_sessions_resume_and_fork_with_their_own_ids(tmp_path, capsys, fake_agents, sandbox):
    real = [
        CORPUS / "claude-code" / "handgemacht-ai__claude-code-log" / "test" / "test_data" / "real_projects",
        CORPUS / "claude-code" / "d-kimuson__claude-code-viewer",
    ]
    for source in real:
        shutil.copytree(source, tmp_path / "real" / source.parent.name / source.name)
    dbfile = ledger(tmp_path, tmp_path / "real")
    conn = db.connect(dbfile, readonly=True)
    sessions = conn.execute(
        "SELECT id, project_path FROM agent_sessions WHERE source = 'claude-code' "
        "AND is_subagent = 0 AND message_count > 0 ORDER BY id"
    ).fetchall()
    assert len(sessions) >= 20
    forked = 0
    cd = lambda folder: [["cd", folder]] if folder.startswith("/") else []  # noqa: E731 (some were anonymized to "-x/y")
    for sid, folder in sessions:
        code, printed, err = threadloom(capsys, dbfile, "resume", sid)
        if code:  # read from a folder Claude Code does not look in (the copy above): refused, then restored
            assert "not where claude looks for it" in err and "--restore" in err and printed == ""
            code, printed, err = threadloom(capsys, dbfile, "resume", "--restore", sid)
            assert "restored " in err
        assert code == 0, err
        assert run_elsewhere(printed, fake_agents, sandbox) == [
            *cd(folder),
            ["claude", str(sandbox), "--resume", sid],
        ]
        if folder.startswith("/"):  # the transcript is where Claude Code looks, byte for byte
            placed = tmp_path / "projects" / claude_folder_name(folder) / f"{sid}.jsonl"
            source = conn.execute(
                "SELECT f.path FROM agent_sessions s JOIN source_files f ON f.id = s.source_file_id "
                "WHERE s.id = ?",
                (sid,),
            ).fetchone()[0]
            assert placed.read_bytes() == Path(source).read_bytes()
        code, printed, err = threadloom(capsys, dbfile, "resume", "--fork-session", sid)
        assert run_elsewhere(printed, fake_agents, sandbox) == [
            *cd(folder),
            ["claude", str(sandbox), "--resume", sid, "--fork-session"],
        ]
        turn = conn.execute(
            "SELECT e.id FROM entries e JOIN agent_turns t ON t.last_entry_uuid = e.uuid "
            "AND t.session_id = e.session_id WHERE e.session_id = ? AND e.dup_of IS NULL AND t.last_entry_uuid != t.id "
            "ORDER BY t.sequence LIMIT 1",
            (sid,),
        ).fetchone()
        if turn is None:
            continue
        plan = json.loads(main_json(capsys, dbfile, "fork", "--dry-run", str(turn[0])))
        calls = run_elsewhere(plan["command"], fake_agents, sandbox)
        # a dry run's new id is chosen when the fork is written: a word that stands for it
        assert calls == [*cd(plan["cwd"]), ["claude", str(sandbox), "--resume", "NEW-SESSION-ID"]]
        code, printed, err = threadloom(capsys, dbfile, "fork", "--native", "--prompt", "go on", str(turn[0]))
        assert code == 0, err
        calls = run_elsewhere(printed, fake_agents, sandbox)
        skip = len(cd(plan["cwd"]))
        assert calls[:skip] == cd(plan["cwd"]) and sorted(calls[skip:]) == sorted(
            [
                [
                    "claude",
                    str(sandbox),
                    "-p",
                    "--resume",
                    sid,
                    "--fork-session",
                    f"--resume-session-at={plan['fork_point']}",
                    "--output-format",
                    "json",
                    "go on",
                ],
                ["jq", str(sandbox), "-r", ".session_id"],
                ["claude", str(sandbox), "--resume", FORKED],
            ]
        )
        forked += 1
    conn.close()
    assert forked >= 20
    assert no_marker(tmp_path)


@pytest.mark.corpus
@pytest.mark.skipif(not (CORPUS / "codex").is_dir(), reason="corpus absent")
def test_codex_and_gemini_corpus_ids_resume_or_are_refused_as_not_theirs(
    tmp_path, capsys, monkeypatch, fake_agents, sandbox
):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "no-gemini"))
    dbfile = ledger(tmp_path, CORPUS / "codex", CORPUS / "gemini")
    conn = db.connect(dbfile, readonly=True)
    rows = conn.execute(
        "SELECT id, source, COALESCE(external_id, id) FROM agent_sessions "
        "WHERE source IN ('codex', 'gemini') AND is_subagent = 0 ORDER BY id"
    ).fetchall()
    conn.close()
    resumed, refused = set(), set()
    for sid, agent, external in rows:
        code, printed, err = threadloom(capsys, dbfile, "resume", "--restore", "--", sid)
        if code:
            refused.add(sid)
            assert "not a UUID" in err and agent == "codex"
            continue
        resumed.add(sid)
        calls = run_elsewhere(printed, fake_agents, sandbox)
        words = {
            "codex": ["codex", str(sandbox), "resume", external],
            "gemini": ["gemini", str(sandbox), "--resume", external],
        }[agent]
        assert calls[-1][: len(words)] == words, calls
    # the real-derived Codex session (values trimmed, ids kept) and every UUID resume; what is refused are
    # the hand-written fixtures' names, which Codex never writes
    assert {
        "019fc8be-3658-7ca3-9e29-000000000000",
        "019b2ea4-aaaa-bbbb-cccc-58208e1f0000",
        "44444444-4444-4444-8444-444444444444",
        "gemini_stage0_jsonl",
    } <= resumed
    assert refused == {
        "test-legacy-session",
        "test-usage-session",
        "test-raw-session",
        "test-ratelimit-session",
        "codex:schema_drift",
        "codex:session-alpha",
    }
    assert no_marker(tmp_path)


# ---------------------------------------------------------------------- the TUI's fork picker


async def test_the_fork_picker_refuses_a_hostile_id_and_copies_a_safe_command(
    tmp_path, monkeypatch, fake_agents, sandbox
):
    from textual.widgets import Static
    from threadloom.tui.app import ThreadloomApp
    from threadloom.tui.fork import ForkPicker

    from tests.tui_support import settle, shown

    monkeypatch.setenv("THREADLOOM_KEYMAP", str(tmp_path / "no-keymap.toml"))
    copied: list[str] = []
    monkeypatch.setattr("threadloom.core.base.clipboard.copy_with", copied.append)
    folder = hostile_folder(tmp_path, "$(touch pwned)")
    claude_session(tmp_path / "a", sid="c0ffee00$(touch pwned)", cwd=str(folder))
    claude_session(tmp_path / "b", cwd=str(folder))
    dbfile = ledger(tmp_path, tmp_path / "a" / "projects", tmp_path / "b" / "projects")
    hostile = next(
        r[0]
        for r in db.connect(dbfile, readonly=True).execute("SELECT id FROM agent_sessions")
        if r[0] != SID
    )
    app = ThreadloomApp(db_path=dbfile, ingest=False)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.open_fork_picker(hostile, None)
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ForkPicker)
        await pilot.press("r")
        await settle(pilot)
        status = shown(picker.query_one("#fork-status", Static))
        assert "Cannot resume this session" in status and "is not a UUID" in status
        assert picker.model.plan is None and copied == [] and not app.clipboard
        await pilot.press("escape")
        await pilot.pause()
        app.open_fork_picker(SID, None)
        await settle(pilot)
        picker = app.screen
        await pilot.press("r")  # read from elsewhere: the picker asks to restore it where claude looks first
        await settle(pilot)
        assert picker.model.asking == "restore" and copied == []
        await pilot.press("y")
        await settle(pilot)
        assert picker.model.plan is not None and copied == [picker.model.plan.command]
    assert run_printed(copied[0], fake_agents, sandbox) == [["claude", str(folder), "--resume", SID]]
    assert [line.split()[0] for line in lookups(fake_agents)] == ["found"]
    assert no_marker(tmp_path)


def fake_calls(log: Path) -> list[list[str]]:
    """The calls a fake agent recorded in `log` (see conftest's FAKE_AGENT)."""
    calls, call = [], []
    for word in log.read_bytes().decode().split("\0")[:-1] if log.exists() else []:
        if word == "\x1e":
            calls.append(call)
            call = []
        else:
            call.append(word)
    return calls


LATER = "c0ffee00-9999-4222-8333-444455556666"  # the session the fake agent writes while it runs


async def test_run_it_now_starts_exactly_the_plans_command_in_its_folder(tmp_path, monkeypatch, fake_agents):
    """x in the picker hands the terminal to the agent: it runs exactly the plan's command, in the
    session's folder (a hostile name), and finds the fork where it looks; what it wrote meanwhile is
    read once it ends. The terminal hand-over is the only part replaced (Pilot has no terminal)."""
    import contextlib

    from textual.widgets import Static
    from threadloom.core.read import browse
    from threadloom.tui import shell
    from threadloom.tui.app import ThreadloomApp
    from threadloom.tui.fork import ForkPicker
    from threadloom.tui.messages import MessageView

    from tests.tui_support import settle, shown

    folder = hostile_folder(tmp_path, "$(touch pwned)")
    claude_session(tmp_path, cwd=str(folder))  # where claude looks: $CLAUDE_CONFIG_DIR is tmp_path
    dbfile = ledger(tmp_path, tmp_path / "projects")
    later = Transcript(tmp_path / "later" / f"{LATER}.jsonl", LATER, cwd=str(folder))
    later.user("a question asked in the resumed agent")
    later.assistant("its answer")
    later.write()
    wrapper = tmp_path / "wrapper"  # the fake claude, which also writes a session as the real one would
    wrapper.mkdir()
    (wrapper / "claude").write_text(
        '#!/bin/sh\n"$FAKE_BIN/claude" "$@" || exit $?\n'
        f'cp "$LATER" "$CLAUDE_CONFIG_DIR/projects/{claude_folder_name(str(folder))}/"\n'
    )
    (wrapper / "claude").chmod(0o755)
    log, found = tmp_path / "calls.log", tmp_path / "lookups.log"
    for name, value in {
        "PATH": f"{wrapper}:{fake_agents}:/usr/bin:/bin",
        "FAKE_BIN": str(fake_agents),
        "FAKE_LOG": str(log),
        "FAKE_LOOKUPS": str(found),
        "SHELL": "/bin/sh",
        "LATER": str(later.path),
        "HOME": str(tmp_path / "home"),
        "THREADLOOM_KEYMAP": str(tmp_path / "no-keymap.toml"),
    }.items():
        monkeypatch.setenv(name, value)
    for name in (
        "XDG_DATA_HOME",
        "XDG_CONFIG_HOME",
        "CODEX_HOME",
        "GEMINI_CLI_HOME",
        "CLINE_DIR",
        "AIDER_CHAT_HISTORY_FILE",
    ):  # the rescan after the agent reads only this test's folders
        monkeypatch.delenv(name, raising=False)
    copied: list[str] = []
    monkeypatch.setattr("threadloom.core.base.clipboard.copy_with", copied.append)
    monkeypatch.setattr(shell, "hand_over", lambda app: contextlib.nullcontext())
    app = ThreadloomApp(db_path=dbfile, ingest=False)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(SID)
        await pilot.pause()
        app.query_one(MessageView).go_to_seq(1)  # "first answer"
        await pilot.press("f")
        await settle(pilot)
        picker = app.screen
        assert (
            isinstance(picker, ForkPicker)
            and picker.model.marked is not None
            and picker.model.marked.label == "first answer"
        )
        await pilot.press("f", "y")  # fork here, and yes: written where claude looks
        await settle(pilot)
        plan = picker.model.plan
        assert plan is not None and plan.path is not None and copied == [plan.command] and not log.exists()
        await pilot.press("x")
        await settle(pilot)
        assert fake_calls(log) == [["claude", str(folder), "--resume", plan.new_session_id]]
        assert found.read_text().split() == ["found", plan.path]
        assert "The agent ended (exit 0)" in shown(picker.query_one("#fork-status", Static))
        assert browse.get_node(app.conn, LATER) is not None  # read after the agent ended
    assert no_marker(tmp_path)
