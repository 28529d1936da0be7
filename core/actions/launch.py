"""A new session started from a context (seed 003's smart fork): the context written to a file only
its owner reads, and the command that starts the agent in the folder with it as the first message."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from ..insight.recall import Context
from .fork import in_folder, usable_folder

PROMPT_SLOT = "\x00threadloom-context\x00"  # where the agent's argv takes its first prompt


@dataclass
class ContextLaunch:
    """A new session started with a context as its first message: the file the context was written
    to (owner-only) and the command that starts the agent in the folder, reading the file."""

    path: Path
    command: str
    agent: str
    folder: str | None
    notes: list[str]


def launchable_agents() -> list[str]:
    """The agents a new session can be started for with a first message."""
    from ..adapters import agents_where

    return agents_where(lambda a: a.starts_with_prompt)


def default_folder(conn: sqlite3.Connection, turn_ids: list[str]) -> tuple[str | None, str | None]:
    """Where and with which agent a new session from these turns would start: the folder and agent
    of the newest of their sessions (a subagent's main session's folder)."""
    row = conn.execute(
        "SELECT coalesce(s.project_path, m.project_path), coalesce(m.source, s.source) FROM episodes ep "
        "JOIN agent_sessions s ON s.id = ep.session_id "
        "LEFT JOIN agent_sessions m ON m.id = s.parent_session_id "
        "WHERE ep.turn_id IN (SELECT value FROM json_each(?)) ORDER BY ep.started_at DESC LIMIT 1",
        (orjson.dumps(turn_ids).decode(),),
    ).fetchone()
    return (row[0], row[1]) if row else (None, None)


def context_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("threadloom", appauthor=False)) / "context"


def write_context_file(context: Context, directory: Path | None = None) -> Path:
    """The context as Markdown in a new file only its owner can read (0600, never over a file)."""
    import os

    folder = directory or context_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    data = context.as_text().encode()
    for n in range(1000):
        path = folder / (f"context-{stamp}.md" if n == 0 else f"context-{stamp}-{n}.md")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return path
    raise OSError(f"no free file name for the context in {folder}")


def launch_command(agent: str, context_file: Path, folder: object) -> ContextLaunch:
    """The command that starts `agent` in `folder` with the context file as its first prompt. The
    file is read by the shell when the command runs (`"$(cat FILE)"`): no text from the logs is
    ever part of the command line itself, and the folder is quoted (or left out, with a note)."""
    import shlex

    from ..adapters import adapter_for

    try:
        adapter = adapter_for(agent)
    except KeyError as exc:
        raise ValueError(f"no agent named {agent!r}") from exc
    argv = adapter.launch_command([PROMPT_SLOT]).argv if adapter.starts_with_prompt else []
    if PROMPT_SLOT not in argv:
        raise ValueError(
            f"{adapter.display_name} cannot be started with a first message: copy the context "
            f"({context_file}) and paste it as your first message"
        )
    read = f'"$(cat {shlex.quote(str(context_file))})"'
    words = [read if word == PROMPT_SLOT else shlex.quote(word) for word in argv]
    notes: list[str] = []
    command = in_folder(folder, " ".join(words), notes)
    return ContextLaunch(context_file, command, agent, usable_folder(folder, []), notes)
