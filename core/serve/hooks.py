"""`threadloom hooks install|uninstall|status --agent A`, and `hooks run`, which the hook runs.

An agent whose adapter has `session_hooks` (Claude Code so far) runs a command at a session's end
(and after each reply, with `--stop`): the command archives that session, even when neither the TUI
nor `threadloom watch` runs. The agent gives it a JSON object on stdin naming the transcript, and
little time before it exits: `hooks run` reads that object, starts the ingest as a process of its
own (detached, so that it outlives the agent) and returns at once. The ingest reads the transcript
and its session's folder (subagents, tool results) through `core.ingest.pipeline`: just those files when the
archive knows them, the incremental walk otherwise; it waits its turn for the writer lock (at most
HOOK_WAIT_SECONDS) and logs beside the database, as `threadloom watch` does.

The settings file (where the adapter says) is the user's: install adds one entry to each event's
list and changes nothing else (no key lost or moved), after writing a backup of the file; a second
install changes nothing; uninstall removes only entries whose command runs `threadloom ... hooks
run`, and the lists and `hooks` object they leave empty. A file that is not valid JSON is refused
and left as it is.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..adapters.base import Adapter, SessionHooks

if TYPE_CHECKING:
    from ..ingest.pipeline import IngestReport

OWN = "threadloom.core.cli hooks run"  # in the command of every entry this module writes
HOOK_TIMEOUT_SECONDS = 10  # what the agent allows the command (it only starts the ingest)
HOOK_WAIT_SECONDS = 300.0  # how long the detached ingest waits for another writer
MAX_INPUT = 1 << 20


class HooksError(RuntimeError):
    """A settings file that cannot be changed safely (not JSON, an unexpected shape): left as it is."""


def hooked_agent(name: str | None = None) -> Adapter:
    """The adapter of the agent called `name` (its registry name or its program) that runs hooks;
    without a name, the first one that does. HooksError when there is none."""
    from ..adapters import ADAPTERS

    hooked = [a for a in ADAPTERS.values() if a.session_hooks() is not None]
    found = next((a for a in hooked if name is None or name in (a.name, a.program)), None)
    if found is None:
        known = ", ".join(a.program for a in hooked) or "none"
        raise HooksError(f"no agent {name!r} runs threadloom's hooks: --agent one of {known}")
    return found


def hooks_of(agent: Adapter) -> SessionHooks:
    found = agent.session_hooks()
    assert found is not None  # hooked_agent chose it for having them
    return found


def settings_path(agent: str | None = None) -> Path:
    return hooks_of(hooked_agent(agent)).settings


def hook_command(db: Path | None, agent: str | None = None) -> str:
    """The command the agent runs: this interpreter and this threadloom, as a shell line."""
    argv = [
        sys.executable,
        "-P",  # run in the agent's project folder: a module planted there is never imported
        "-m",
        "threadloom.core.cli",
        "hooks",
        "run",
        "--agent",
        hooked_agent(agent).program,
    ]
    return shlex.join(argv + (["--db", str(db)] if db is not None else []))


def _kind(value: object) -> str:
    """A JSON value's type, as JSON names it."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def is_own(hook: object) -> bool:
    return isinstance(hook, dict) and OWN in str(hook.get("command", ""))


# ---------------------------------------------------------------------- the settings file


def load(path: Path) -> dict[str, Any] | None:
    """The settings (None when there is no file yet), in the file's order."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise HooksError(f"{path} cannot be read ({exc}): left as it is") from None
    if not text.strip():
        return {}
    try:
        settings = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HooksError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}): left as it is. "
            "Fix it (its agent cannot read it either), then install again."
        ) from None
    if not isinstance(settings, dict):
        raise HooksError(f"{path} holds {_kind(settings)}, not an object: left as it is")
    return settings


def _event_lists(settings: dict[str, Any], path: Path, *, create: bool) -> dict[str, Any] | None:
    hooks = settings.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = settings["hooks"] = {}  # a new key goes last: none of the others moves
    if not isinstance(hooks, dict):
        raise HooksError(f'{path}: "hooks" is {_kind(hooks)}, not an object: left as it is')
    return hooks


def merged(settings: dict[str, Any], path: Path, command: str, events: list[str]) -> bool:
    """Make this module's entries in `settings` exactly one per event of `events`, running
    `command`; everything else stays as it is, in its place. Returns whether anything changed."""
    changed = False
    hooks = _event_lists(settings, path, create=True)
    assert hooks is not None
    for event in dict.fromkeys([*events, *hooks]):
        groups = hooks.get(event)
        if event not in events and not isinstance(groups, list):
            continue  # another event's entries, none of them ours
        if groups is not None and not isinstance(groups, list):
            raise HooksError(f'{path}: "hooks.{event}" is {_kind(groups)}, not an array: left as it is')
        own = [
            hook
            for group in groups or []
            if isinstance(group, dict) and isinstance(group.get("hooks"), list)
            for hook in group["hooks"]
            if is_own(hook)
        ]
        if event not in events:
            continue  # removed below, with the entries of events no longer asked for
        if own:
            for hook in own:  # updated in place (another python, another --db)
                if hook.get("command") != command:
                    hook["command"] = command
                    changed = True
            continue
        if groups is None:
            groups = hooks[event] = []
        groups.append({"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECONDS}]})
        changed = True
    unwanted = [e for e in hooks if e not in events]
    return _remove_own(settings, path, unwanted) or changed


def _remove_own(settings: dict[str, Any], path: Path, events: list[str] | tuple[str, ...]) -> bool:
    """Remove this module's entries from `events`, and the groups, lists and `hooks` object that
    held nothing else."""
    hooks = _event_lists(settings, path, create=False)
    if hooks is None:
        return False
    changed = False
    for event in events:
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list) and any(is_own(h) for h in inner):
                group["hooks"] = [h for h in inner if not is_own(h)]
                changed = True
                if not group["hooks"]:
                    continue  # the group was ours alone
            kept_groups.append(group)
        if len(kept_groups) != len(groups):
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if changed and not hooks:
        del settings["hooks"]
    return changed


def removed(settings: dict[str, Any], path: Path) -> bool:
    hooks = settings.get("hooks")
    return _remove_own(settings, path, list(hooks) if isinstance(hooks, dict) else [])


def installed(settings: dict[str, Any] | None) -> dict[str, list[str]]:
    """The commands of this module's entries, by event."""
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    found: dict[str, list[str]] = {}
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hook in inner if isinstance(inner, list) else []:
                if is_own(hook):
                    found.setdefault(event, []).append(str(hook.get("command")))
    return found


def dumps(settings: dict[str, Any]) -> str:
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def backup(path: Path) -> Path:
    """A copy of the settings file beside it, `settings.json.<time>.threadloom.bak`, never over
    an earlier one."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    data = path.read_bytes()
    n = 1
    while True:
        target = path.with_name(f"{path.name}.{stamp}{'' if n == 1 else f'-{n}'}.threadloom.bak")
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            n += 1
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return target


def write(path: Path, text: str) -> None:
    """Replace the file's text in one step (a reader never sees half of it), keeping its mode; a
    settings file that is a link (dotfiles) is written where it points, and stays a link."""
    real = Path(os.path.realpath(path))
    real.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = real.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o600
    temp = real.with_name(f".{real.name}.threadloom-{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, mode)
        os.replace(temp, real)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


@dataclass
class Outcome:
    lines: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


def install(
    db: Path | None,
    *,
    agent: str | None = None,
    stop: bool = False,
    dry_run: bool = False,
    path: Path | None = None,
) -> Outcome:
    """Add the hook at a session's end (and, with `stop`, after each reply) to the agent's settings."""
    adapter = hooked_agent(agent)
    spec = hooks_of(adapter)
    events = [spec.session_end, *([spec.reply_end] if stop and spec.reply_end else [])]
    path = path or spec.settings
    out = Outcome()
    settings = load(path)
    existed = settings is not None
    settings = {} if settings is None else settings
    command = hook_command(db, adapter.program)
    changed = merged(settings, path, command, events)
    names = " and ".join(events)
    if not changed:
        out.lines.append(f"{path} already has threadloom's {names} hook: nothing to change")
        return out
    if dry_run:
        out.lines.append(f"would add threadloom's {names} hook to {path}; its hooks would read:")
        out.lines += json.dumps(
            {"hooks": settings.get("hooks", {})}, indent=2, ensure_ascii=False
        ).splitlines()
        return out
    if existed:
        out.lines.append(f"backed up {path} to {backup(path)}")
    write(path, dumps(settings))
    out.lines.append(f"{'added' if existed else 'wrote'} threadloom's {names} hook in {path}:")
    out.lines.append(f"  {command}")
    out.lines.append(
        f"{adapter.display_name} runs it when a session ends"
        + (" and after each reply" if len(events) > 1 else "")
        + f": the session is archived then. `threadloom hooks uninstall --agent {adapter.program}` removes it."
    )
    return out


def uninstall(*, agent: str | None = None, dry_run: bool = False, path: Path | None = None) -> Outcome:
    path = path or settings_path(agent)
    out = Outcome()
    settings = load(path)
    if settings is None or not removed(settings, path):
        out.lines.append(f"no threadloom hook in {path}: nothing to remove")
        return out
    if dry_run:
        out.lines.append(f"would remove threadloom's hooks from {path}, leaving everything else as it is")
        return out
    out.lines.append(f"backed up {path} to {backup(path)}")
    write(path, dumps(settings))
    out.lines.append(f"removed threadloom's hooks from {path}")
    return out


def status(path: Path | None = None, agent: str | None = None) -> Outcome:
    adapter = hooked_agent(agent)
    path = path or hooks_of(adapter).settings
    out = Outcome()
    try:
        found = installed(load(path))
    except HooksError as exc:
        out.lines.append(str(exc))
        out.data = {"settings": str(path), "error": str(exc), "hooks": {}}
        return out
    out.data = {"settings": str(path), "hooks": found}
    if not found:
        out.lines.append(
            f"no threadloom hook in {path}: `threadloom hooks install --agent {adapter.program}` adds one"
        )
    stale = []
    for event, commands in found.items():
        for command in commands:
            argv = shlex.split(command)
            missing = "" if argv and os.path.exists(argv[0]) else " (its python is not there: install again)"
            out.lines.append(f"{event}: {command}{missing}")
            if not _safe_path(argv):
                stale.append(command)
    if stale:
        out.data["unsafe"] = stale
        out.lines.append(
            "  written by an older threadloom, without python's -P: the agent runs it in its project's "
            "folder, from which a planted `threadloom` module would be imported; "
            f"`threadloom hooks install --agent {adapter.program}` replaces it"
        )
    return out


def _safe_path(argv: list[str]) -> bool:
    """Whether python runs this command line with -P or -I (nothing imported from the folder it
    starts in): an option before `-m`, alone or in a cluster of short ones (-IP, -PB)."""
    for word in argv[1 : argv.index("-m") if "-m" in argv else len(argv)]:
        if word.startswith("-") and not word.startswith("--") and {"P", "I"} & set(word[1:]):
            return True
    return False


# ---------------------------------------------------------------------- what the hook runs


def transcript_of(payload: bytes, agent: str | None = None) -> str | None:
    """The transcript the JSON the agent gives its hook names (None when it names none)."""
    try:
        data = json.loads(payload)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    key = hooks_of(hooked_agent(agent)).transcript_key
    path = data.get(key) if isinstance(data, dict) else None
    return path if isinstance(path, str) and path else None


def start_detached(transcript: str, db: Path | None, agent: str | None = None) -> None:
    """The ingest as a process of its own session, free of the agent's terminal and exit."""
    program = hooked_agent(agent).program
    argv = [sys.executable, "-P", "-m", "threadloom.core.cli", "hooks", "run", "--agent", program]
    argv += ["--transcript", transcript] + (["--db", str(db)] if db is not None else [])
    subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def session_files(transcript: Path) -> list[str]:
    """The transcript and the files of its session's folder (`<id>/subagents/…`, tool results)."""
    files = [str(transcript)]
    folder = transcript.with_suffix("")
    if folder.is_dir():
        for dirpath, _, names in os.walk(folder):
            files += [os.path.join(dirpath, name) for name in sorted(names)]
    return files


def archive_session(db_path: Path, transcript: Path, log_path: Path, wait: float = HOOK_WAIT_SECONDS) -> int:
    """Archive one session's files: just them when the archive knows them all, else the incremental
    ingest (a new session is a new file: it lists again only the folders whose mtime moved). Each
    update waits at most `wait` seconds for another writer; what it then reads is not cut short."""
    from .watch import close_log, open_log

    log = open_log(log_path)
    try:
        return _archive_session(db_path, transcript, log, wait)
    finally:
        close_log(log)


def _archive_session(db_path: Path, transcript: Path, log: logging.Logger, wait: float) -> int:
    try:
        first = _update_within(wait, log, db_path, known=session_files(transcript), remember=False)
        report = first
        if first.unknown_paths and not first.cancelled:
            report = _update_within(wait, log, db_path, remember=False)
            if str(transcript) in first.unknown_paths and transcript.is_file() and not report.cancelled:
                # a transcript where no root looks (the agent's folder moved) is read as named (one
                # stat when the ingest above found it)
                report = _update_within(
                    wait, log, db_path, transcript, include_defaults=False, remember=False
                )
    except Exception as exc:  # a process of its own, seen by no one: the log says what went wrong
        log.error("hook: session %s: %s: %s", transcript.stem, type(exc).__name__, exc)
        return 1
    if report.cancelled:
        log.info(
            "hook: session %s: another writer held the lock for %.0f s; left to the next ingest",
            transcript.stem,
            wait,
        )
    else:
        from ..base.text import count_of

        log.info(
            "hook: session %s: %s read, %s, %.2f s",
            transcript.stem,
            count_of(report.files_read, "file"),
            count_of(report.records_added, "record"),
            report.seconds,
        )
    return 1 if report.cancelled else 0


def _update_within(
    wait: float, log: logging.Logger, db_path: Path, *sources: Path, **options: Any
) -> IngestReport:
    """`update` as the hook runs it: the wait for another writer given up after `wait` seconds (a
    cancelled report), and said in the hook's log."""
    from ..ingest.update import Listener, update

    cancel = threading.Event()
    timer = threading.Timer(wait, cancel.set)
    timer.daemon = True
    timer.start()
    said = Listener(waiting=lambda text: log.info("hook: %s", text), locked=timer.cancel)
    try:
        return update(db_path, sources, listener=said, cancel=cancel, **options)
    finally:
        timer.cancel()
