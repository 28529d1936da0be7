"""`threadloom service install|uninstall|status` in a made-up home, with fake systemctl and
launchctl on PATH that record what they are asked (the real ones are never called)."""

from __future__ import annotations

import json
import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import home_env

ROOT = Path(__file__).resolve().parents[2]
FAKE = """#!/bin/sh
printf '%s\\n' "$(basename "$0") $*" >> "$FAKE_CALLS"
case "$*" in
  *is-enabled*) echo enabled ;;
  *is-active*) echo active ;;
  print*) [ -n "$FAKE_LOADED" ] && echo "state = running" ;;
esac
[ -n "$FAKE_LOADED" ] || [ "$1" != print ] || exit 113
exit "${FAKE_EXIT:-0}"
"""


class Sandbox:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        for name in ("systemctl", "launchctl"):
            (self.bin / name).write_text(FAKE)
            (self.bin / name).chmod(0o755)
        self.calls = tmp_path / "calls.log"
        self.env = home_env(tmp_path, FAKE_CALLS=str(self.calls))
        self.env["PATH"] = f"{self.bin}:{self.env.get('PATH', '/usr/bin:/bin')}"
        self.home = Path(self.env["HOME"])
        self.unit = Path(self.env["XDG_CONFIG_HOME"]) / "systemd" / "user" / "threadloom-watch.service"
        self.plist = self.home / "Library" / "LaunchAgents" / "org.threadloom.watch.plist"

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "threadloom.core.cli", "service", *args],
            env={**self.env, **env},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def took_calls(self) -> list[str]:
        calls = self.calls.read_text().splitlines() if self.calls.exists() else []
        self.calls.unlink(missing_ok=True)
        return calls


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def test_dry_run_prints_the_unit_and_commands_and_writes_nothing(box: Sandbox) -> None:
    db = box.tmp / "my archive.db"
    done = box.run("install", "--dry-run", "--manager", "systemd", "--db", str(db))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"would write {box.unit}:" in out
    assert f'ExecStart={sys.executable} -P -m threadloom.core.cli watch --db "{db}"' in out
    for name in ("THREADLOOM_DB", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        assert f"Environment={name}={box.env[name]}" in out  # what a service would not see otherwise
    assert "WantedBy=default.target" in out and "Restart=on-failure" in out
    assert "systemctl --user enable threadloom-watch.service" in out
    assert not box.unit.exists() and box.took_calls() == []


def test_install_is_idempotent_status_says_so_and_uninstall_removes_it(box: Sandbox) -> None:
    done = box.run("install", "--manager", "systemd")
    assert done.returncode == 0, done.stderr
    assert f"wrote {box.unit}" in done.stdout and "starts at each login" in done.stdout
    assert box.took_calls() == [
        "systemctl --user daemon-reload",
        "systemctl --user enable threadloom-watch.service",
        "systemctl --user start threadloom-watch.service",
    ]
    written = box.unit.read_text()
    assert written.startswith("# threadloom-watch.service: written by `threadloom service install`")

    again = box.run("install", "--manager", "systemd")
    assert again.returncode == 0 and "already installed and up to date" in again.stdout
    assert box.unit.read_text() == written
    assert box.took_calls() == [  # no reload, no restart: enabled and started as before
        "systemctl --user enable threadloom-watch.service",
        "systemctl --user start threadloom-watch.service",
    ]

    status = box.run("status", "--manager", "systemd", "--json")
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert data["installed"] is True and data["up_to_date"] is True
    assert data["manager_says"] == {"is-enabled": "enabled", "is-active": "active"}
    assert data["log"] == str(box.tmp / "default-watch.log")  # beside $THREADLOOM_DB
    box.took_calls()

    moved = box.run("status", "--manager", "systemd", CODEX_HOME=str(box.tmp / "elsewhere"))
    assert "differs from what install would write now" in moved.stdout
    box.took_calls()

    gone = box.run("uninstall", "--manager", "systemd")
    assert gone.returncode == 0, gone.stderr
    assert not box.unit.exists() and f"removed {box.unit}" in gone.stdout
    assert box.took_calls() == [
        "systemctl --user disable --now threadloom-watch.service",
        "systemctl --user daemon-reload",
    ]
    twice = box.run("uninstall", "--manager", "systemd")
    assert twice.returncode == 0 and "nothing to remove" in twice.stdout


def test_a_unit_threadloom_did_not_write_is_never_touched(box: Sandbox) -> None:
    box.unit.parent.mkdir(parents=True)
    box.unit.write_text("[Service]\nExecStart=/usr/bin/true\n")
    for action in ("install", "uninstall"):
        done = box.run(action, "--manager", "systemd")
        assert done.returncode == 1 and "was not written by threadloom" in done.stderr
    assert box.unit.read_text() == "[Service]\nExecStart=/usr/bin/true\n"
    assert box.took_calls() == []


def test_a_session_without_a_service_manager_is_told_what_to_do(box: Sandbox) -> None:
    done = box.run("install", "--manager", "systemd", FAKE_EXIT="1")
    assert done.returncode == 1
    assert "could not be started" in done.stdout and "threadloom watch" in done.stdout
    assert not box.unit.exists()  # nothing of the install is left


def test_launchd_agent_install_twice_and_uninstall(box: Sandbox) -> None:
    done = box.run("install", "--manager", "launchd", "--db", str(box.tmp / "a.db"))
    assert done.returncode == 0, done.stderr
    spec = plistlib.loads(box.plist.read_bytes())
    assert spec["Label"] == "org.threadloom.watch"
    assert spec["ProgramArguments"] == [
        sys.executable,
        "-P",
        "-m",
        "threadloom.core.cli",
        "watch",
        "--db",
        str(box.tmp / "a.db"),
    ]
    assert spec["RunAtLoad"] is True and spec["KeepAlive"] == {"SuccessfulExit": False}
    assert spec["EnvironmentVariables"]["CLAUDE_CONFIG_DIR"] == box.env["CLAUDE_CONFIG_DIR"]
    assert box.took_calls() == [f"launchctl bootstrap gui/{os.getuid()} {box.plist}"]

    again = box.run("install", "--manager", "launchd", "--db", str(box.tmp / "a.db"), FAKE_LOADED="1")
    assert "loaded already" in again.stdout
    assert box.took_calls() == [f"launchctl print gui/{os.getuid()}/org.threadloom.watch"]

    status = box.run("status", "--manager", "launchd", "--db", str(box.tmp / "a.db"), FAKE_LOADED="1")
    assert "installed" in status.stdout and "running" in status.stdout
    box.took_calls()

    gone = box.run("uninstall", "--manager", "launchd")
    assert gone.returncode == 0 and not box.plist.exists()
    assert box.took_calls() == [f"launchctl bootout gui/{os.getuid()}/org.threadloom.watch"]


@pytest.mark.parametrize(
    "name",
    ['an "odd" 100% $name.db', "a line\nbreak\tand a tab/t.db"],  # quotes, a specifier, a variable; controls
)
def test_the_unit_passes_systemd_analyze_verify(box: Sandbox, name: str) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed here")
    odd = box.tmp / name  # escaped
    odd.parent.mkdir(parents=True, exist_ok=True)
    done = box.run("install", "--no-start", "--manager", "systemd", "--db", str(odd))
    assert done.returncode == 0, done.stderr
    checked = subprocess.run([analyze, "verify", str(box.unit)], capture_output=True, text=True, timeout=60)
    said = checked.stdout + checked.stderr
    if checked.returncode != 0 and "Failed to" in said and box.unit.name not in said:
        pytest.skip(f"systemd-analyze cannot run here: {said.strip()}")
    assert checked.returncode == 0, said
    assert box.unit.name not in said, said  # not a warning about any line of it


def test_an_install_that_fails_leaves_nothing_of_itself(box: Sandbox) -> None:
    """systemctl missing, or failing once it took part of the install: the unit was left written
    ("the service file is written"), enabled if enable had worked; it is taken back and said so."""
    done = box.run("install", "--manager", "systemd", PATH="/nonexistent")  # no systemctl at all
    assert done.returncode == 1 and "systemctl not found" in done.stdout
    assert not box.unit.exists() and f"removed {box.unit} again" in done.stdout
    # enable works, start fails: it is disabled and removed, and systemd told
    (box.bin / "systemctl").write_text(
        FAKE.replace('exit "${FAKE_EXIT:-0}"', 'case "$*" in *" start "*) exit 1;; esac')
    )
    done = box.run("install", "--manager", "systemd")
    assert done.returncode == 1 and not box.unit.exists(), done.stdout
    calls = box.took_calls()
    assert calls[-2:] == [
        "systemctl --user disable --now threadloom-watch.service",
        "systemctl --user daemon-reload",
    ]
    # a unit installed before is put back as it was when its update fails
    (box.bin / "systemctl").write_text(FAKE)
    assert box.run("install", "--manager", "systemd").returncode == 0
    before = box.unit.read_text()
    done = box.run("install", "--manager", "systemd", THREADLOOM_DB=str(box.tmp / "other.db"), FAKE_EXIT="1")
    assert done.returncode == 1 and "put the previous" in done.stdout and box.unit.read_text() == before
