"""`threadloom hooks install|uninstall|status --agent claude` on a made-up Claude Code settings file,
and `hooks run` as Claude Code runs it: JSON on stdin, back at once, the session archived behind."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from threadloom.core.serve import hooks

from tests.builders.claude import Transcript
from tests.support import home_env

ROOT = Path(__file__).resolve().parents[2]
SID = "99999999-aaaa-4bbb-8ccc-000000000001"
OTHERS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"], "deny": []},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/check.sh"}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "notify-send bye", "timeout": 5}]}],
    },
    "cleanupPeriodDays": 60,
    "statusLine": {"type": "command", "command": "echo hi"},
}


def cli(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "threadloom.core.cli", *args],
        env=env,
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def wait_for(what: str, check: Callable[[], object], timeout: float = 20.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return home_env(tmp_path)


def settings_file(env: dict[str, str], content: object) -> Path:
    path = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=4) if not isinstance(content, str) else content)
    return path


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob("settings.json.*.threadloom.bak"))


# ---------------------------------------------------------------------- the merge, in process


def test_install_keeps_every_key_and_hook_in_place(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    settings = json.loads(json.dumps(OTHERS))
    assert hooks.merged(settings, path, "py -m threadloom.core.cli hooks run --agent claude", ["SessionEnd"])
    assert list(settings) == list(OTHERS)  # no key lost or moved
    assert list(settings["hooks"]) == ["PreToolUse", "SessionEnd"]
    assert settings["hooks"]["PreToolUse"] == OTHERS["hooks"]["PreToolUse"]
    end = settings["hooks"]["SessionEnd"]
    assert end[0] == OTHERS["hooks"]["SessionEnd"][0]  # the user's own hook first, untouched
    assert end[1] == {
        "hooks": [
            {
                "type": "command",
                "command": "py -m threadloom.core.cli hooks run --agent claude",
                "timeout": 10,
            }
        ]
    }
    # again: nothing; another python: the command updated in place; --stop and back
    assert not hooks.merged(
        settings, path, "py -m threadloom.core.cli hooks run --agent claude", ["SessionEnd"]
    )
    assert hooks.merged(settings, path, "py3 -m threadloom.core.cli hooks run --agent claude", ["SessionEnd"])
    assert settings["hooks"]["SessionEnd"][1]["hooks"][0]["command"].startswith("py3 ")
    assert hooks.merged(
        settings, path, "py3 -m threadloom.core.cli hooks run --agent claude", ["SessionEnd", "Stop"]
    )
    assert list(settings["hooks"]) == ["PreToolUse", "SessionEnd", "Stop"]
    assert hooks.merged(settings, path, "py3 -m threadloom.core.cli hooks run --agent claude", ["SessionEnd"])
    assert "Stop" not in settings["hooks"]
    # uninstall: exactly what was there before
    assert hooks.removed(settings, path)
    assert settings == OTHERS and list(settings) == list(OTHERS)
    assert not hooks.removed(settings, path)


def test_a_hooks_object_it_made_goes_with_its_entries(tmp_path: Path) -> None:
    settings: dict = {"model": "opus"}
    assert hooks.merged(
        settings, tmp_path / "s.json", "x threadloom.core.cli hooks run", ["SessionEnd", "Stop"]
    )
    assert list(settings) == ["model", "hooks"]
    assert hooks.removed(settings, tmp_path / "s.json")
    assert settings == {"model": "opus"}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"model": "opus",}', "is not valid JSON (line 1, column 18"),
        ("[1, 2]", "holds an array, not an object"),
        ('{"hooks": []}', '"hooks" is an array, not an object'),
        ('{"hooks": {"SessionEnd": {"a": 1}}}', '"hooks.SessionEnd" is an object, not an array'),
    ],
)
def test_a_settings_file_it_cannot_merge_is_left_as_it_is(env: dict[str, str], text: str, says: str) -> None:
    path = settings_file(env, text)
    done = cli(env, "hooks", "install", "--agent", "claude")
    assert done.returncode == 1 and says in done.stderr, done.stderr
    assert done.stderr.startswith("threadloom: ") and "left as it is" in done.stderr
    gone = cli(env, "hooks", "uninstall", "--agent", "claude")  # refused, or nothing of its own found
    assert gone.returncode == 1 or "nothing to remove" in gone.stdout
    assert path.read_text() == text and backups(path) == []


# ---------------------------------------------------------------------- the commands


def test_install_backs_up_is_idempotent_and_uninstall_restores(env: dict[str, str], tmp_path: Path) -> None:
    path = settings_file(env, OTHERS)
    original = path.read_text()
    dry = cli(env, "hooks", "install", "--agent", "claude", "--dry-run")
    assert dry.returncode == 0 and "would add threadloom's SessionEnd hook" in dry.stdout
    assert path.read_text() == original and backups(path) == []

    done = cli(env, "hooks", "install", "--agent", "claude", "--db", str(tmp_path / "a.db"))
    assert done.returncode == 0, done.stderr
    [backup] = backups(path)
    assert backup.read_text() == original  # written first, byte for byte
    settings = json.loads(path.read_text())
    assert list(settings) == list(OTHERS)
    [command] = hooks.installed(settings)["SessionEnd"]
    assert command == hooks.hook_command(tmp_path / "a.db").replace(hooks.sys.executable, sys.executable)
    assert f"--db {tmp_path / 'a.db'}" in command

    again = cli(env, "hooks", "install", "--agent", "claude", "--db", str(tmp_path / "a.db"))
    assert again.returncode == 0 and "nothing to change" in again.stdout
    assert len(backups(path)) == 1  # nothing written, nothing backed up

    status = json.loads(cli(env, "hooks", "status", "--json").stdout)
    assert status == {"settings": str(path), "hooks": {"SessionEnd": [command]}}

    gone = cli(env, "hooks", "uninstall", "--agent", "claude")
    assert gone.returncode == 0 and "removed threadloom's hooks" in gone.stdout
    after = json.loads(path.read_text())
    assert after == OTHERS and list(after) == list(OTHERS)
    assert "no threadloom hook" in cli(env, "hooks", "uninstall", "--agent", "claude").stdout


def test_a_missing_settings_file_is_created_and_a_linked_one_stays_a_link(
    env: dict[str, str], tmp_path: Path
) -> None:
    done = cli(env, "hooks", "install", "--agent", "claude")
    path = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    assert done.returncode == 0 and f"wrote threadloom's SessionEnd hook in {path}" in done.stdout
    assert list(hooks.installed(json.loads(path.read_text()))) == ["SessionEnd"]

    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"model": "opus"}\n')
    os.chmod(dotfiles, 0o640)
    path.unlink()
    path.symlink_to(dotfiles)
    assert cli(env, "hooks", "install", "--agent", "claude", "--stop").returncode == 0
    assert path.is_symlink() and path.resolve() == dotfiles
    assert list(hooks.installed(json.loads(dotfiles.read_text()))) == ["SessionEnd", "Stop"]
    assert dotfiles.stat().st_mode & 0o777 == 0o640


def test_install_asks_which_agent(env: dict[str, str]) -> None:
    done = cli(env, "hooks", "install")
    assert done.returncode == 2 and "--agent claude" in done.stderr


# ---------------------------------------------------------------------- what the hook runs


def entries(db: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(
                conn.execute("SELECT count(*) FROM entries").fetchone()[0]
            )  # the session's and its subagent's
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def test_the_hook_returns_at_once_and_the_session_is_archived_behind(
    env: dict[str, str], tmp_path: Path
) -> None:
    projects = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
    t = Transcript(projects / "-home-dev-app" / f"{SID}.jsonl", SID)
    t.user("what changed?")
    t.assistant("nothing yet")
    t.write()
    sub = t.path.with_suffix("") / "subagents" / "agent-a1.jsonl"
    s = Transcript(sub, SID, isSidechain=True, agentId="a1")
    s.user("look around")
    s.write()
    db = tmp_path / "a.db"
    payload = {
        "session_id": SID,
        "transcript_path": str(t.path),
        "cwd": "/home/dev/app",
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    }
    started = time.monotonic()
    done = cli(env, "hooks", "run", "--agent", "claude", "--db", str(db), stdin=json.dumps(payload))
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert time.monotonic() - started < 10
    wait_for("the session in the archive", lambda: entries(db) == 3)
    log = tmp_path / "a-watch.log"
    wait_for("the hook's line in the log", lambda: log.exists() and f"hook: session {SID}" in log.read_text())

    # the session goes on and ends again: known files, read alone
    t.lines.clear()
    t.user("and now?")
    with t.path.open("a") as f:
        f.write(json.dumps(t.lines[-1]) + "\n")
    again = cli(env, "hooks", "run", "--agent", "claude", "--db", str(db), "--transcript", str(t.path))
    assert again.returncode == 0, again.stderr
    assert entries(db) == 4
    assert f"hook: session {SID}: 1 file read, 1 record" in log.read_text()


def test_the_hook_never_fails_the_session(env: dict[str, str], tmp_path: Path) -> None:
    for stdin in ("", "not json", '{"session_id": "x"}'):
        done = cli(env, "hooks", "run", "--agent", "claude", "--db", str(tmp_path / "a.db"), stdin=stdin)
        assert done.returncode == 0 and "no transcript_path" in done.stderr
    assert not (tmp_path / "a.db").exists()


def test_a_transcript_where_no_root_looks_is_still_archived(env: dict[str, str], tmp_path: Path) -> None:
    """Claude Code run with another CLAUDE_CONFIG_DIR than the one threadloom sees: the hook names
    the file, and it is read as named."""
    t = Transcript(tmp_path / "other-claude" / "projects" / "-srv-x" / f"{SID}.jsonl", SID)
    t.user("from elsewhere")
    t.write()
    db = tmp_path / "a.db"
    done = cli(env, "hooks", "run", "--agent", "claude", "--db", str(db), "--transcript", str(t.path))
    assert done.returncode == 0, done.stderr
    assert entries(db) == 1


def test_the_hook_command_never_imports_from_the_project_folder(tmp_path: Path) -> None:
    """The agent runs the hook in its project's folder, anyone's repository: a `threadloom` package
    planted there is not what the command runs (`python -P`)."""
    project = tmp_path / "project"
    (project / "threadloom").mkdir(parents=True)
    marker = tmp_path / "imported"
    (project / "threadloom" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    command = hooks.hook_command(tmp_path / "t.db") + " --help"
    out = subprocess.run(["bash", "-c", command], cwd=project, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "usage" in out.stdout, out.stderr
    assert not marker.exists()


def test_status_names_a_hook_an_older_threadloom_wrote_without_safe_path_and_install_replaces_it(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A hook written before threadloom ran it with `python -P` still imports from the project
    folder the agent runs it in: status says so and how to mend it; install replaces it in place."""
    old = shlex.join([sys.executable, "-m", "threadloom.core.cli", "hooks", "run", "--agent", "claude"])
    path = settings_file(env, {"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": old}]}]}})
    said = cli(env, "hooks", "status")
    assert said.returncode == 0 and f"SessionEnd: {old}" in said.stdout
    assert "without python's -P" in said.stdout and "hooks install --agent claude` replaces it" in said.stdout
    assert json.loads(cli(env, "hooks", "status", "--json").stdout)["unsafe"] == [old]

    assert cli(env, "hooks", "install", "--agent", "claude").returncode == 0
    [command] = hooks.installed(json.loads(path.read_text()))["SessionEnd"]
    assert " -P -m threadloom.core.cli hooks run" in command
    assert "without python's -P" not in cli(env, "hooks", "status").stdout
    assert "unsafe" not in json.loads(cli(env, "hooks", "status", "--json").stdout)
    for argv, safe in (
        (["py", "-P", "-m", "x"], True),
        (["py", "-IB", "-m", "x"], True),
        (["py", "-B", "-m", "x", "-P"], False),
        (["py", "--help", "-m", "x"], False),
    ):
        assert hooks._safe_path(argv) is safe, argv


def test_the_help_says_install_needs_agent_as_install_does(tmp_path: Path) -> None:
    """Installing into an agent's settings names the agent (refused without --agent, on purpose):
    the help says so, not that it defaults to one."""
    env = home_env(tmp_path)
    text = " ".join(cli(env, "hooks", "--help").stdout.split())
    assert "(default claude)" not in text
    assert "needed by install and uninstall, which write that agent's settings" in text
    for action in ("install", "uninstall"):
        refused = cli(env, "hooks", action, "--dry-run")
        assert refused.returncode == 2 and "which agent's settings: --agent claude" in refused.stderr
    assert cli(env, "hooks", "status").returncode == 0  # status takes claude


def test_an_archive_named_by_threadloom_db_is_named_in_the_hook(env: dict[str, str], tmp_path: Path) -> None:
    """With $THREADLOOM_DB set and no --db, the hook was written without the archive's path: an
    agent started from a launcher or an IDE, without the variable, archived into the default one."""
    path = settings_file(env, OTHERS)
    mine = tmp_path / "elsewhere" / "mine.db"
    done = cli({**env, "THREADLOOM_DB": str(mine)}, "hooks", "install", "--agent", "claude")
    assert done.returncode == 0, done.stderr
    [command] = hooks.installed(json.loads(path.read_text()))["SessionEnd"]
    assert f"--db {mine}" in command
