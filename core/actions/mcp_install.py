"""`threadloom mcp install --agent A` / `uninstall`: threadloom's MCP server registered in an agent's
own configuration file, as that agent documents it, merged with what the file holds (every other key
kept, the file's other servers untouched), idempotent, `--dry-run` printing the change.

Each agent's adapter says where its file is and how it spells a server (`Adapter.mcp_config`,
`mcp_entry`); `--agent` names the agent by its program. A TOML file is edited with tomlkit, which
keeps the rest of the file as written (comments, order, spacing); a JSON file keeps its indent. Keys
the user added to threadloom's entry (a timeout, env) are kept: install updates only its own. A file
is replaced whole at once (written beside it, then renamed over it), keeping its permissions; a link
(dotfiles) is written where it points."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..adapters.base import Adapter, McpConfig
from ..base.text import json_indent

NAME = "threadloom"


class InstallError(RuntimeError):
    """The configuration cannot be changed as asked; the message says why and what to do."""


@dataclass(frozen=True)
class Change:
    agent: str
    path: Path
    action: str  # "added" | "updated" | "unchanged" | "removed" | "absent"
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=str(self.path),
                tofile=f"{self.path} (after)",
            )
        )

    def as_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "path": str(self.path), "action": self.action, "changed": self.changed}


def server_command(db: Path | None = None) -> list[str]:
    """The command an agent runs to start the server: this threadloom's own executable (found by
    the name it was run as, else on PATH, else this Python with the module), then `mcp`."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "threadloom" and argv0.exists():
        head = [str(argv0.resolve())]
    elif found := shutil.which("threadloom"):
        head = [str(Path(found).resolve())]
    else:
        head = [sys.executable, "-P", "-m", "threadloom.core.cli"]  # started in a project: nothing from it
    return [*head, "mcp", *(["--db", str(db.expanduser().resolve())] if db is not None else [])]


def mcp_agents() -> dict[str, Adapter]:
    """The agents threadloom can register itself with, by program (the first adapter of each)."""
    from ..adapters import ADAPTERS

    found: dict[str, Adapter] = {}
    for adapter in ADAPTERS.values():
        if adapter.mcp_config() is not None:
            found.setdefault(adapter.program, adapter)
    return found


def _agent(name: str) -> tuple[Adapter, McpConfig]:
    agents = mcp_agents()
    adapter = agents.get(name)
    config = adapter.mcp_config() if adapter is not None else None
    if adapter is None or config is None:
        raise InstallError(f"no agent {name!r}: one of {', '.join(agents)}")
    return adapter, config


def config_path(agent: str) -> Path:
    return _agent(agent)[1].path


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError(f"cannot read {path}: {exc}") from exc


def _json(path: Path, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = (
            " (comments or trailing commas: add the entry by hand, or remove them)"
            if path.suffix == ".jsonc" or "//" in text
            else ""
        )
        raise InstallError(
            f"{path} is not JSON threadloom can rewrite{hint}: {exc}; it was left as it is"
        ) from exc
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; it was left as it is")
    return data


def _edit_json(config: McpConfig, text: str, entry: dict[str, Any] | None) -> tuple[str, str]:
    path, key = config.path, config.key
    data = _json(path, text)
    servers = data.get(key)
    if servers is None:
        servers = {}
    if not isinstance(servers, dict):
        raise InstallError(f"{path}: {key!r} is not an object; it was left as it is")
    had = servers.get(NAME)
    if entry is None:
        if had is None:
            return text, "absent"
        servers = {k: v for k, v in servers.items() if k != NAME}
        data[key] = servers
        action = "removed"
    else:
        # keys the user added to the entry (a timeout, env) stay: threadloom owns only its own
        merged = {**had, **entry} if isinstance(had, dict) else entry
        if had == merged:
            return text, "unchanged"
        data[key] = {**servers, NAME: merged}
        action = "updated" if had is not None else "added"
    if not text.strip():
        data = {**dict(config.new_file), **data}
    return json.dumps(data, indent=json_indent(text), ensure_ascii=False) + "\n", action


def _edit_toml(config: McpConfig, text: str, entry: dict[str, Any] | None) -> tuple[str, str]:
    from tomlkit.exceptions import TOMLKitError

    try:
        return _edit_toml_doc(config, text, entry)
    except (TOMLKitError, ValueError, TypeError) as exc:  # a layout tomlkit cannot extend: never a traceback
        raise InstallError(
            f"{config.path}: cannot add threadloom's entry to {config.key} as it is written ({exc}); "
            f"write each server as a [{config.key}.NAME] table and install again, or add the entry by hand; "
            "it was left as it is"
        ) from exc


def _edit_toml_doc(config: McpConfig, text: str, entry: dict[str, Any] | None) -> tuple[str, str]:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError
    from tomlkit.items import InlineTable

    path, key = config.path, config.key
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise InstallError(f"{path} is not TOML threadloom can read: {exc}; it was left as it is") from exc
    servers = doc.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise InstallError(f"{path}: {key} is not a table; it was left as it is")
    had = servers.get(NAME) if servers is not None else None
    if entry is None:
        if had is None:
            return text, "absent"
        assert servers is not None
        del servers[NAME]
        if not servers:
            del doc[key]
        return tomlkit.dumps(doc), "removed"
    if isinstance(had, dict):
        # update only the keys threadloom owns, in place: the user's own (a timeout, env) stay
        if all(k in had and had[k] == v for k, v in entry.items()):  # tomlkit's values compare as plain ones
            return text, "unchanged"
        for k, v in entry.items():
            had[k] = v
        return tomlkit.dumps(doc), "updated"
    if isinstance(servers, InlineTable):  # `mcp_servers = { docs = {...} }`: the entry joins it inline
        inline = tomlkit.inline_table()
        inline.update(entry)
        servers[NAME] = inline
        return tomlkit.dumps(doc), "updated" if had is not None else "added"
    table = tomlkit.table()
    for k, v in entry.items():
        table[k] = v
    table.add(tomlkit.nl())  # a blank line before the table after it
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        if text and not text.endswith("\n\n"):
            doc.add(tomlkit.nl())
        doc[key] = servers
    servers[NAME] = table
    return tomlkit.dumps(doc).rstrip("\n") + "\n", "updated" if had is not None else "added"


def plan(agent: str, *, remove: bool = False, db: Path | None = None) -> Change:
    """What installing (or, with `remove`, uninstalling) would do to the agent's file."""
    adapter, config = _agent(agent)
    path = config.path
    before = _read(path)
    entry = None if remove else adapter.mcp_entry(server_command(db))
    if config.toml:
        after, action = _edit_toml(config, before, entry)
    else:
        after, action = _edit_json(config, before, entry)
    return Change(agent, path, action, before, after)


def apply(change: Change) -> None:
    """Write the change: the new text beside the file, then renamed over it (its mode kept). A file
    that is a link (dotfiles) is written where it points, and stays a link."""
    if not change.changed:
        return
    path = Path(os.path.realpath(change.path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".threadloom")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(change.after)
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise InstallError(f"cannot write {path}: {exc.strerror or exc}") from exc
