"""`threadloom service install|uninstall|status`: `threadloom watch` started at login.

A systemd user unit on Linux (`~/.config/systemd/user/threadloom-watch.service`) and a launchd agent
on macOS (`~/Library/LaunchAgents/org.threadloom.watch.plist`), each running the interpreter that
runs this command (`python -P -m threadloom.core.cli watch`), so the service reads with the same
threadloom that was installed. The variables that move where agents keep their files (and the
database) are written into it as they are set now: a service does not see the shell's environment.

Every step is said before it is taken, `--dry-run` says them without taking them, installing twice
changes nothing, and uninstall removes only a file that carries this module's mark.
"""

from __future__ import annotations

import os
import plistlib
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

UNIT_NAME = "threadloom-watch.service"
LABEL = "org.threadloom.watch"
MARK = "written by `threadloom service install`"
MANAGERS = ("systemd", "launchd")
# what moves where threadloom's database, or every agent's files, are looked for (each adapter names
# its own agent's variables in `env_vars`)
OWN_ENV = ("THREADLOOM_DB", "XDG_DATA_HOME", "XDG_CONFIG_HOME")


def carried_names() -> tuple[str, ...]:
    """Every variable the service carries into the watch it starts."""
    from ..adapters import carried_env as agents_env

    return tuple(dict.fromkeys((*OWN_ENV, *agents_env())))


COMMAND_SECONDS = 30


class ServiceError(RuntimeError):
    """What stops an install or uninstall, said in one line."""


def this_manager() -> str | None:
    """The service manager of this system: systemd on Linux, launchd on macOS, None elsewhere."""
    if sys.platform == "darwin":
        return "launchd"
    if sys.platform.startswith("linux"):
        return "systemd"
    return None


def watch_argv(db: Path | None) -> list[str]:
    """The command the service runs: this interpreter (as named, not resolved: a virtual
    environment's python is a link out of it) and this threadloom."""
    argv = [sys.executable, "-P", "-m", "threadloom.core.cli", "watch"]  # -P: nothing from its folder
    return argv + (["--db", str(db)] if db is not None else [])


def carried_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    environ = dict(os.environ) if environ is None else environ
    return {name: environ[name] for name in carried_names() if environ.get(name)}


@dataclass
class Plan:
    """What install writes and runs, for one service manager."""

    manager: str
    path: Path
    content: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


def plan(
    manager: str, db: Path | None, *, home: Path | None = None, environ: dict[str, str] | None = None
) -> Plan:
    """The file for `manager` (its path and text), running `threadloom watch` on `db`."""
    home = home or Path.home()
    environ = dict(os.environ) if environ is None else environ
    argv = watch_argv(db)
    env = carried_env(environ)
    if manager == "systemd":
        config = Path(environ["XDG_CONFIG_HOME"]) if environ.get("XDG_CONFIG_HOME") else home / ".config"
        return Plan(manager, config / "systemd" / "user" / UNIT_NAME, systemd_unit(argv, env), argv, env)
    if manager == "launchd":
        path = home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
        return Plan(manager, path, launchd_plist(argv, env, _log_folder(db, environ, home)), argv, env)
    raise ServiceError(f"no service manager named {manager!r} (choose {' or '.join(MANAGERS)})")


def _log_folder(db: Path | None, environ: dict[str, str], home: Path) -> Path:
    """Where launchd writes what the watch says on stderr before its own log is open: beside the
    database, as that log is."""
    if db is not None:
        return db.parent
    if environ.get("THREADLOOM_DB"):
        return Path(environ["THREADLOOM_DB"]).expanduser().parent
    return home / "Library" / "Application Support" / "threadloom"


# ---------------------------------------------------------------------- the files


def systemd_word(word: str) -> str:
    """One word of a unit file's command line or assignment, quoted as systemd reads it: `%` is a
    specifier and `$` a variable unless doubled; a space, quote or backslash needs double quotes,
    and a control character (a line break in a folder's name) a C escape, or the line would end."""
    word = word.replace("%", "%%").replace("$", "$$")
    if word and re.fullmatch(r"[A-Za-z0-9_@+=:,./%$-]+", word):
        return word
    quoted = word.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", quoted) + '"'


def systemd_unit(argv: list[str], env: dict[str, str]) -> str:
    lines = [
        f"# {UNIT_NAME}: {MARK}; `threadloom service uninstall` removes it.",
        "# It keeps threadloom's archive current while you are logged in (see `threadloom watch --help`).",
        "[Unit]",
        "Description=threadloom watch: archive coding-agent sessions as they are written",
        "",
        "[Service]",
        "Type=simple",
        "ExecStart=" + " ".join(systemd_word(a) for a in argv),
        *(f"Environment={systemd_word(f'{k}={v}')}" for k, v in env.items()),
        "Restart=on-failure",
        "RestartSec=30",
        "Nice=10",
        "IOSchedulingClass=idle",
        "TimeoutStopSec=60",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


def launchd_plist(argv: list[str], env: dict[str, str], log_folder: Path) -> str:
    spec: dict[str, Any] = {
        "Label": LABEL,
        "ProgramArguments": argv,
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},  # started again after a crash, not after a clean stop
        "ProcessType": "Background",
        "LowPriorityIO": True,
        "Nice": 10,
        "StandardErrorPath": str(log_folder / "threadloom-watch.stderr.log"),
    }
    if env:
        spec["EnvironmentVariables"] = env
    text = plistlib.dumps(spec, sort_keys=False).decode()
    head, _, body = text.partition("<plist")
    return f"{head}<!-- {LABEL}: {MARK}; `threadloom service uninstall` removes it. -->\n<plist{body}"


def ours(path: Path) -> bool:
    """Whether the file at `path` was written by install (it carries the mark)."""
    try:
        return MARK in path.read_text(errors="replace")
    except OSError:
        return False


# ---------------------------------------------------------------------- the commands


def manager_commands(
    manager: str, action: str, *, changed: bool = True, existed: bool = False
) -> list[list[str]]:
    """What is asked of the service manager for `action`: install (the file `changed` or not, and
    whether it `existed` before: a running service is restarted on its new file), uninstall, the
    steps after it, or the status queries."""
    if manager == "systemd":
        ctl = ["systemctl", "--user"]
        if action == "install":
            start = ctl + ["restart" if changed and existed else "start", UNIT_NAME]
            return ([ctl + ["daemon-reload"]] if changed else []) + [ctl + ["enable", UNIT_NAME], start]
        if action == "uninstall":
            return [ctl + ["disable", "--now", UNIT_NAME]]
        if action == "after-uninstall":
            return [ctl + ["daemon-reload"]]
        return [ctl + ["is-enabled", UNIT_NAME], ctl + ["is-active", UNIT_NAME]]
    domain = f"gui/{os.getuid()}"
    if action == "install":
        stop = [["launchctl", "bootout", f"{domain}/{LABEL}"]] if changed and existed else []
        return stop + [["launchctl", "bootstrap", domain, "{path}"]]
    if action == "uninstall":
        return [["launchctl", "bootout", f"{domain}/{LABEL}"]]
    if action == "after-uninstall":
        return []
    return [["launchctl", "print", f"{domain}/{LABEL}"]]


@dataclass
class Ran:
    argv: list[str]
    code: int | None  # None: the program is not on this system
    output: str

    @property
    def ok(self) -> bool:
        return self.code == 0


def run_command(argv: list[str]) -> Ran:
    program = shutil.which(argv[0])
    if program is None:
        return Ran(argv, None, f"{argv[0]} not found")
    try:
        done = subprocess.run(
            [program, *argv[1:]],
            capture_output=True,
            text=True,
            timeout=COMMAND_SECONDS,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Ran(argv, -1, str(exc))
    return Ran(argv, done.returncode, (done.stdout + done.stderr).strip())


def shown(argv: list[str]) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in argv)


# ---------------------------------------------------------------------- install, uninstall, status


@dataclass
class Outcome:
    """What an action did (or, on a dry run, would do), line by line, and whether it all worked."""

    lines: list[str] = field(default_factory=list)
    ok: bool = True
    data: dict[str, Any] = field(default_factory=dict)

    def say(self, line: str) -> None:
        self.lines.append(line)


def install(p: Plan, *, dry_run: bool = False, start: bool = True) -> Outcome:
    out = Outcome()
    existing = p.path.read_text(errors="replace") if p.path.exists() else None
    if existing is not None and MARK not in existing:
        raise ServiceError(
            f"{p.path} exists and was not written by threadloom: left as it is (move it away to install)"
        )
    changed = existing != p.content
    commands = [
        [a.replace("{path}", str(p.path)) for a in argv]
        for argv in manager_commands(p.manager, "install", changed=changed, existed=existing is not None)
    ]
    if dry_run:
        out.say(f"would write {p.path}:" if changed else f"{p.path} is up to date; would leave it as it is:")
        out.say("")
        out.lines += p.content.rstrip("\n").splitlines()
        out.say("")
        if start:
            out.say("and would run:")
            out.lines += [f"  {shown(argv)}" for argv in commands]
        return out
    if changed:
        p.path.parent.mkdir(parents=True, exist_ok=True)
        temp = p.path.with_name(p.path.name + ".tmp")
        temp.write_text(p.content)
        os.replace(temp, p.path)
        out.say(f"{'updated' if existing is not None else 'wrote'} {p.path}")
    else:
        out.say(f"{p.path} is already installed and up to date")
    out.say(f"it runs: {shown(p.argv)}")
    for name, value in p.env.items():
        out.say(f"  with {name}={value}")
    if not start:
        out.say(f"not started (--no-start): {' && '.join(shown(a) for a in commands)} starts it")
        return out
    if p.manager == "launchd" and not changed and run_command(manager_commands(p.manager, "status")[0]).ok:
        out.say("launchd has it loaded already")
        return out
    done = False  # whether the manager took any of the commands
    for argv in commands:
        ran = run_command(argv)
        if p.manager == "launchd" and argv[1] == "bootout" and not ran.ok:
            continue  # it was not loaded: nothing to stop
        out.say(f"ran {shown(argv)}" + ("" if ran.ok else f": failed ({ran.output or f'exit {ran.code}'})"))
        if not ran.ok:
            out.ok = False
            out.say(
                "the service could not be started. Without a service manager for your session, start "
                "`threadloom watch` from your shell's or desktop's startup instead."
            )
            if changed:
                _take_back(p, existing, done, out)
            return out
        done = True
    out.say("threadloom watch is running, and starts at each login")
    return out


def _take_back(p: Plan, existing: str | None, done: bool, out: Outcome) -> None:
    """An install that failed leaves nothing of itself: its new file removed (and disabled, when
    the manager took some of it), or the file it replaced put back. A unit left written had said
    only "the service file is written", and a later login's manager would find it half set up."""
    try:
        if existing is None:
            if done:  # an enable that worked would start it at the next login
                for argv in manager_commands(p.manager, "uninstall"):
                    run_command(argv)
            p.path.unlink(missing_ok=True)
            said = f"removed {p.path} again: nothing of the install is left"
        else:
            temp = p.path.with_name(p.path.name + ".tmp")
            temp.write_text(existing)
            os.replace(temp, p.path)
            said = f"put the previous {p.path} back"
    except OSError as exc:
        out.say(
            f"{p.path} is left written ({exc.strerror or exc}): `threadloom service uninstall` removes it"
        )
        return
    if done:
        for argv in manager_commands(p.manager, "after-uninstall"):
            run_command(argv)
    out.say(said)


def uninstall(p: Plan, *, dry_run: bool = False) -> Outcome:
    out = Outcome()
    if not p.path.exists():
        out.say(f"nothing to remove: {p.path} is not there")
        return out
    if not ours(p.path):
        raise ServiceError(f"{p.path} was not written by threadloom: left as it is")
    before = manager_commands(p.manager, "uninstall")
    after = manager_commands(p.manager, "after-uninstall")
    if dry_run:
        out.say("would run:")
        out.lines += [f"  {shown(a)}" for a in before]
        out.say(f"would remove {p.path}")
        out.lines += [f"and run {shown(a)}" for a in after]
        return out
    for argv in before:
        ran = run_command(argv)
        out.say(f"ran {shown(argv)}" + ("" if ran.ok else f" ({ran.output or f'exit {ran.code}'}; going on)"))
    p.path.unlink()
    out.say(f"removed {p.path}")
    for argv in after:
        ran = run_command(argv)
        out.say(f"ran {shown(argv)}" + ("" if ran.ok else f" ({ran.output or f'exit {ran.code}'})"))
    return out


def status(p: Plan, log_path: Path) -> Outcome:
    """Whether the file is there and ours, whether it still runs what install would write now, what
    the service manager says, and the log's last line."""
    out = Outcome()
    data: dict[str, Any] = {"manager": p.manager, "path": str(p.path), "log": str(log_path)}
    if not p.path.exists():
        data["installed"] = False
        out.say(f"not installed ({p.path} is not there): `threadloom service install` sets it up")
    elif not ours(p.path):
        data["installed"] = False
        out.say(f"{p.path} exists but was not written by threadloom")
    else:
        data["installed"] = True
        data["up_to_date"] = p.path.read_text(errors="replace") == p.content
        out.say(f"installed: {p.path}")
        out.say(
            "  it runs this threadloom, as install would write it now"
            if data["up_to_date"]
            else "  it differs from what install would write now (another python, --db or environment): "
            "`threadloom service install` updates it"
        )
        states: dict[str, str] = {}
        for argv in manager_commands(p.manager, "status"):
            ran = run_command(argv)
            key = argv[2] if p.manager == "systemd" else "loaded"
            if p.manager == "launchd":
                running = ran.ok and "state = running" in ran.output
                states[key] = "running" if running else ("loaded" if ran.ok else "not loaded")
            else:
                states[key] = ran.output.splitlines()[0] if ran.output else f"exit {ran.code}"
            out.say(f"  {shown(argv)}: {states[key]}")
        data["manager_says"] = states
    last = _last_line(log_path)
    data["last_log_line"] = last
    out.say(f"log: {log_path}" + (f"\n  last: {last}" if last else " (nothing logged yet)"))
    out.data = data
    return out


def _last_line(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - 4096))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return None
    return lines[-1] if lines else None
