"""OpenCode: the JSON storage tree (≤ v1.1) and `opencode.db` (v1.2 →), FORMATS.md §8.

Both hold the same three kinds of objects, read the same way here:
  * session `{id, projectID, directory, parentID, title, time}`: project folder, title, and for a
    child session (a `task` subagent) its parent;
  * message `{id, sessionID, role, time, modelID|model, tokens, parentID, path}`: a user message
    starts a turn (its text is in its parts); an assistant message carries the tokens, which are
    counted from `message.tokens` as OpenCode's own totals do (each `step-finish` part keeps its
    step's counts too; they are stored, not added), and the cost OpenCode charged, `message.cost`,
    taken as it is (`session.cost` of the database sums it, and is not counted again);
  * part `{id, messageID, sessionID?, type, …}`: text, reasoning, tool (call and result in one
    part; a `task` tool's `metadata.sessionId` names the subagent session), file, step and patch
    parts.

`OpenCodeStorageAdapter` ("document" mode) reads `storage/{session,message,part}/…/*.json`, one
record for the object's exact JSON and one for the bytes after it; the older layout
`storage/session/{info,message,part}/…` too, which early releases kept per project in
`<data>/project/<name>/storage/` (found there by default). Files are yielded session by session,
its messages in the order they were created (`time.created`, not their names' order), each followed
by its parts (in the folder named by the message's id), so turns build in order; a replay reads the
archive's files in the same order (`replay_order`), whatever order they were stored in. A part file
that does not say its session or role is looked up in the message file it belongs to.

`OpenCodeDbAdapter` ("database" mode) reads `opencode.db` and the per-channel databases of 2026
releases (`opencode-stable.db`, `opencode-<channel>.db`) beside it (see `shared.open_sqlite`): per
session its row (rendered as JSON), then per message a key record (`{"$row": "message", …columns}`)
followed by the exact bytes of its `data`, then the same for each of its parts.

Both are found under a `--source` folder at any depth (a home folder, `.local/share`, the data
folder itself): what is skipped on the way is decided by the folder a name sits in (a storage
tree's own `share/` or `project/` index, the data folder's `snapshot/` git stores), never by a
name alone, so `.local/share` and `<data>/project` are walked.
"""

from __future__ import annotations

import glob
import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from .base import (
    BOM,
    Adapter,
    Command,
    FileContext,
    McpConfig,
    RawRecord,
    Record,
    ResumeTarget,
    SessionInfo,
    SourceRef,
    StoredFile,
    ToolResult,
    ToolUse,
    Usage,
    epoch_ms,
    read_regular,
    recorded_cost,
    safe_int,
)
from .shared import (
    RowSink,
    SqliteSource,
    as_bytes,
    as_dict,
    as_str,
    head_of,
    input_text,
    json_text,
    loads,
    open_sqlite,
    parse_document,
    plain_json,
    sqlite_tables,
    table_columns,
    tile,
    wrapped_params,
)
from .walk import walk

AGENT = "opencode"
Loader = Callable[[Path], dict[str, Any]]  # a storage file's JSON object, by its path
Facts = tuple[
    str | None, str | None, int | None, str | None, str | None
]  # a message's session, role, time, id, model
WHOLE = frozenset({()})
PART_TYPES = frozenset(
    {
        "text",
        "reasoning",
        "tool",
        "file",
        "step-start",
        "step-finish",
        "snapshot",
        "patch",
        "agent",
        "compaction",
        "subtask",
        "retry",
    }
)
TOOL_STATUS = {"completed": "completed", "success": "completed", "error": "failed"}
# the database file names OpenCode writes: `opencode.db`, and `opencode-<channel>.db` since 2026
DB_NAME = re.compile(r"^opencode(?:-[A-Za-z0-9._]+)?\.db$")
# folders a walk leaves out, by the folder they sit in: what a storage tree keeps besides sessions
# (`project/<id>.json`, shares, diffs, todos), and the data folder's git snapshots, logs and binaries
PRUNED_IN = {
    "storage": frozenset({"snapshot", "session_diff", "todo", "project", "share"}),
    "opencode": frozenset({"snapshot", "log", "bin", "tool-output"}),
}
PRUNED = frozenset({".git", "node_modules"})


def kept_folders(dirpath: str, dirnames: list[str], data: bool = False) -> list[str]:
    """The subfolders of `dirpath` a walk for OpenCode's files goes into, sorted (`data`: it is a
    data folder, whatever its name)."""
    pruned = PRUNED | PRUNED_IN.get("opencode" if data else os.path.basename(dirpath), frozenset())
    return sorted(d for d in dirnames if d not in pruned)


def opencode_data_dir() -> Path:
    """OpenCode follows XDG on every platform: `$XDG_DATA_HOME/opencode` or `~/.local/share/opencode`."""
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share") / "opencode"


def kind_of(path: Path) -> str | None:
    """session | message | part, from where the file lies in a storage tree."""
    parts = path.parts
    if len(parts) >= 3 and parts[-3] == "message":
        return "message"
    if (
        (len(parts) >= 3 and parts[-3] == "part")
        or parts[-2:-1] == ("part",)
        or (len(parts) >= 4 and parts[-4] == "part")
    ):
        return "part"
    if len(parts) >= 3 and parts[-3] == "session":
        return "session"
    return None


STORAGE_FOLDERS = ("session", "message", "part")  # what a storage folder holds


def storage_root(path: Path) -> Path | None:
    """The folder holding `session/`, `message/` and `part/` (the old layout keeps them in `session/`)."""
    for parent in path.parents:
        if (parent / "message").is_dir() or (parent / "part").is_dir():
            return parent
    return None


def _root_by_name(path: Path) -> Path | None:
    """`storage_root` told by the path alone: the folder above the nearest `part/` or `message/`."""
    for parent in path.parents:
        if parent.name in ("part", "message"):
            return parent.parent
    return None


# ---------------------------------------------------------------------- shared meaning


def session_record(s: dict[str, Any], raw_kind: str = "session") -> Record:
    sid = as_str(s.get("id"))
    out = Record(
        entry_type=raw_kind, session_id=sid, cwd=as_str(s.get("directory")), version=as_str(s.get("version"))
    )
    time = as_dict(s.get("time"))
    out.timestamp = epoch_ms(time.get("created") or s.get("time_created"))
    info = SessionInfo(
        source=AGENT, external_id=sid, project_key=as_str(s.get("projectID") or s.get("project_id"))
    )
    parent = as_str(s.get("parentID") or s.get("parent_id"))
    if parent:
        info.kind, info.is_subagent, info.parent_session_id, info.agent_id, info.spawn_key = (
            "subagent",
            1,
            parent,
            sid,
            sid,
        )
    out.session = info
    title = as_str(s.get("title"))
    if title:
        out.content, out.title, out.subtype, out.entry_type = (
            title,
            ("ai-title", title),
            out.entry_type,
            "ai-title",
        )
    return out


def message_record(m: dict[str, Any], mid: str | None, sid: str | None) -> Record:
    role = as_str(m.get("role"))
    out = Record(
        entry_type="message",
        subtype=role,
        known=role in ("user", "assistant"),
        session_id=sid,
        uuid=mid,
        message_id=mid,
        role=role,
        session=SessionInfo(source=AGENT, external_id=sid) if sid else None,
    )
    time = as_dict(m.get("time"))
    out.timestamp = epoch_ms(time.get("created"))
    model = as_dict(m.get("model"))
    out.model = as_str(m.get("modelID")) or as_str(model.get("modelID"))
    path = as_dict(m.get("path"))
    out.cwd = as_str(path.get("cwd"))
    if role == "user":
        out.is_prompt = True  # its text arrives in its parts, which are placed in this turn
    else:
        out.parent_uuid = as_str(m.get("parentID"))
        tokens = m.get("tokens")
        if isinstance(tokens, dict) and mid:
            cache = as_dict(tokens.get("cache"))
            usage = Usage(
                f"opencode:{mid}",
                None,
                safe_int(tokens.get("input")),
                safe_int(tokens.get("output")) + safe_int(tokens.get("reasoning")),
                safe_int(cache.get("write")),
                safe_int(cache.get("read")),
                # what OpenCode charged for it, by its own prices (0: it knew none, so priced here)
                recorded_cost(m.get("cost")) or None,
            )
            if (
                usage.input_tokens
                or usage.output_tokens
                or usage.cache_read_tokens
                or usage.cache_creation_tokens
                or usage.cost_usd
            ):
                out.usage = usage
        error = m.get("error")
        if isinstance(error, dict):
            data = as_dict(error.get("data"))
            out.content = as_str(data.get("message")) or as_str(error.get("name"))
            out.is_message = out.content is not None
    return out


def part_record(
    p: dict[str, Any],
    pid: str | None,
    mid: str | None,
    sid: str | None,
    role: str | None,
    message_ms: int | None = None,
    model: str | None = None,
) -> Record:
    """A part, timed by its own `time` or else by its message's (`message_ms`): a user's text part
    has no time of its own, and its prompt was shown with none. A tool part is not: its call and
    result are one record, and the message's time on both would be read as a call of 0 s. An
    assistant's part is its message's model's (`model`): a part names none, and a session that
    switched models showed every reply with none."""
    ptype = as_str(p.get("type"))
    out = Record(
        entry_type="part",
        subtype=ptype,
        known=ptype in PART_TYPES,
        session_id=sid,
        uuid=pid,
        parent_uuid=mid,
        role=role,
        session=SessionInfo(source=AGENT, external_id=sid) if sid else None,
    )
    time = as_dict(p.get("time"))
    out.timestamp = epoch_ms(time.get("start") or time.get("created"))
    if out.timestamp is None and ptype != "tool":
        out.timestamp = message_ms
    if role == "assistant":
        out.model = model
    if ptype == "text":
        out.content = as_str(p.get("text")) or None
        if p.get("synthetic"):
            out.is_meta = True  # injected by OpenCode (file contents, reminders): searchable, not shown
        else:
            out.is_message = out.content is not None
    elif ptype == "reasoning":
        out.thinking = as_str(p.get("text")) or None
        out.role = "assistant"
        out.is_message = out.thinking is not None
    elif ptype == "tool":
        _tool(out, p)
    elif ptype in ("compaction", "subtask", "agent"):
        out.content = as_str(p.get("prompt")) or as_str(p.get("description")) or as_str(p.get("name"))
        out.is_compaction = ptype == "compaction"
    elif ptype == "file":
        out.content = as_str(p.get("filename")) or as_str(p.get("url"))
    return out


def _tool(out: Record, p: dict[str, Any]) -> None:
    state = as_dict(p.get("state"))
    call_id = as_str(p.get("callID")) or out.uuid or "?"
    name = as_str(p.get("tool")) or "?"
    params = wrapped_params(state.get("input"), "input")
    out.role = "assistant"
    out.is_message = True
    out.tool_uses.append(
        ToolUse(
            call_id,
            name,
            json_text(params),
            0,
            as_str(params.get("description")),
            as_str(params.get("prompt")),
        )
    )
    status = TOOL_STATUS.get(as_str(state.get("status")) or "")
    if status is not None:
        output = state.get("output") if state.get("output") is not None else state.get("error")
        metadata = as_dict(state.get("metadata"))
        if status == "completed" and isinstance(metadata.get("exit"), int) and metadata["exit"] != 0:
            status = "failed"
        child = as_str(metadata.get("sessionId")) if name == "task" else None
        out.tool_results.append(ToolResult(call_id, json_text(output), status, child))
        out.tool_text = "\n".join(
            t
            for t in (f"{name} {input_text(json_text(params))}", output if isinstance(output, str) else None)
            if t
        )
    else:
        out.tool_text = f"{name} {input_text(json_text(params))}"


# ---------------------------------------------------------------------- the JSON storage tree


class OpenCodeCommands(Adapter):
    """What both of OpenCode's stores can do: `opencode -s ID` resumes a session, `--fork` copies it."""

    program = "opencode"
    fork_style = "whole-session-copy"
    edit_tools = frozenset({"edit", "multiedit", "patch"})
    write_tools = frozenset({"write"})
    read_tools = frozenset({"read"})
    shell_tools = frozenset({"bash"})

    def mcp_config(self) -> McpConfig:
        """`$XDG_CONFIG_HOME/opencode/opencode.json` (its `.jsonc` when that is the one there)."""
        base = os.environ.get("XDG_CONFIG_HOME")
        folder = (Path(base).expanduser() if base else Path.home() / ".config") / "opencode"
        plain, commented = folder / "opencode.json", folder / "opencode.jsonc"
        path = commented if commented.exists() and not plain.exists() else plain
        return McpConfig(path, "mcp", new_file=(("$schema", "https://opencode.ai/config.json"),))

    def mcp_entry(self, command: list[str]) -> dict[str, Any]:
        return {"type": "local", "command": command, "enabled": True}

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        argv = [self.program, "-s", self.checked_id(target.external_id)]
        return Command(argv + (["--fork"] if fork else []))


class OpenCodeStorageAdapter(OpenCodeCommands):
    """OpenCode's `storage/` JSON files; see the module docstring."""

    name = AGENT
    mode = "document"

    def __init__(self) -> None:
        self._messages: dict[str, dict[str, Path]] = {}  # storage root → message id → file
        self._roles: dict[str, Facts] = {}  # message file → its facts (`_message_facts`)
        self._missing: dict[str, set[str]] = {}

    def project_folder(self, parts: Sequence[str], key: str) -> int | None:
        """A session's files are restored from the storage folder on (`storage/session/…`,
        `storage/message/…`, `storage/part/…`): the layout its reader finds them by. The outermost
        folder holding one of those, so every file of the session takes the same one."""
        for i in range(len(parts) - 2):
            if parts[i + 1] in STORAGE_FOLDERS:
                return i
        return super().project_folder(parts, key)

    def default_roots(self) -> list[Path]:
        """`<data>/storage`, and each `<data>/project/<name>/storage` of the first releases."""
        data = opencode_data_dir()
        roots = [data / "storage"]
        try:
            projects = sorted(e.name for e in os.scandir(data / "project") if e.is_dir(follow_symlinks=False))
        except OSError:
            projects = []
        roots += [data / "project" / name / "storage" for name in projects]
        return roots

    def claims(self, path: Path, explicit: bool = False) -> bool:
        if not path.name.endswith(".json"):
            return False
        kind = kind_of(path)
        if kind is None:
            return False
        if (
            not explicit
            and "opencode" not in path.parts
            and not any(p.startswith("storage") for p in path.parts)
        ):
            return False
        head = head_of(path, 4096).removeprefix(BOM)
        return head.lstrip().startswith(b"{") and (b'"id"' in head or b'"type"' in head)

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root, explicit=True):
                yield SourceRef(root, AGENT, "document", root.parent.name)
            return
        if not root.is_dir():
            return
        # a data folder (it holds `storage/`): walked whole, for the `project/<name>/storage` of
        # the first releases beside it
        data = str(root) if (root / "storage").is_dir() else None
        found: list[Path] = []
        for dirpath, dirnames, filenames in walk(root):
            dirnames[:] = kept_folders(dirpath, dirnames, dirpath == data)
            found += [p for p in (Path(dirpath) / fname for fname in sorted(filenames)) if self.claims(p)]
        for path in self._storage_order(found):
            yield SourceRef(path, AGENT, "document", path.parent.name)

    def replay_order(self, files: list[StoredFile]) -> list[StoredFile]:
        """As `discover` orders them, read from the archive: an archive stored by a release that
        numbered a session's messages by their files' names (the replies before the prompts in the
        corpus), or a message stored after the others but created before some, is replayed in the
        order a fresh ingest gives. Each folder's files are taken by name, as a walk finds them."""
        folders: dict[Path, int] = {}
        for f in files:
            folders.setdefault(f.path.parent, len(folders))
        by_path: dict[Path, list[StoredFile]] = {}
        for f in sorted(files, key=lambda f: (folders[f.path.parent], f.path.name)):
            by_path.setdefault(f.path, []).append(f)

        def load(path: Path) -> dict[str, Any]:
            return _object_of(by_path[path][0].stored())

        return [f for path in self._storage_order(list(by_path), load) for f in by_path[path]]

    def _storage_order(self, paths: list[Path], load: Loader | None = None) -> list[Path]:
        """The storage files `paths` (each folder's by name) in the order they are read: session by
        session, each message followed by its parts, the messages in the order they were written,
        so turns build in order (the archive numbers records as they land). `load` reads a file's
        JSON object (the file on disk by default), each file's once."""
        sessions: list[Path] = []
        messages: list[Path] = []
        parts: dict[str, list[Path]] = {}
        loose: list[Path] = []
        for path in paths:
            kind = kind_of(path)
            if kind == "session":
                sessions.append(path)
            elif kind == "message":
                messages.append(path)
            elif path.parent.name != "part":
                parts.setdefault(path.parent.name, []).append(path)
            else:
                loose.append(path)  # a flat part/<id>.json names its message inside
        by_message: dict[str, list[Path]] = {}
        for path in loose:  # a flat part/<id>.json: after its message too, when that is found
            mid = as_str((load or self._object)(path).get("messageID"))
            by_message.setdefault(mid or "", []).append(path)
        facts = {message: self._message_facts(message, load) for message in messages}
        order = list(sessions)
        for message in _in_time_order(messages, facts):
            order.append(message)
            stem = message.name[: -len(".json")]
            mid = facts[message][3] or stem
            # a message's parts lie in a folder named by its id (its file's name, as OpenCode writes it)
            order += parts.pop(mid, []) + (parts.pop(stem, []) if stem != mid else [])
            order += by_message.pop(mid, [])
        for rest in parts.values():
            order += rest
        for rest in by_message.values():
            order += rest
        return order

    def _object(self, path: Path) -> dict[str, Any]:
        """The JSON object of a small storage file; {} when it cannot be read as one."""
        try:
            return _object_of(read_regular(path))
        except OSError:
            return {}

    def _message_facts(self, path: Path, load: Loader | None = None) -> Facts:
        """(session, role, time created, id, model) of a message file: read once from the disk (kept for
        its parts' look-up), or as `load` gives it."""
        if load is not None:
            return _facts(path, load(path))
        key = str(path)
        facts = self._roles.get(key)
        if facts is None:
            facts = self._roles[key] = _facts(path, self._object(path))
        return facts

    def split(self, data: bytes) -> list[RawRecord]:
        parse_document(data)
        return tile(data, WHOLE)

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        obj, _ = loads(rec.raw)
        path = ctx.path
        if not isinstance(obj, dict):  # no object (a file cut short, kept once left unchanged): in the
            # session where it lies, so that restore writes it back with the session's other files
            return Record(
                entry_type="json-gap", session_id=ctx.state.get("sid") or self._session_by_place(ctx)
            )
        kind = kind_of(path)
        stem = path.name[: -len(".json")]
        if kind == "session":
            out = session_record(obj)
        elif kind == "message":
            sid: str | None = as_str(obj.get("sessionID")) or path.parent.name
            out = message_record(obj, as_str(obj.get("id")) or stem, sid)
        else:
            mid = as_str(obj.get("messageID")) or (path.parent.name if path.parent.name != "part" else None)
            sid, role, message_ms, model = self._message_of(ctx, mid, as_str(obj.get("sessionID")))
            out = part_record(obj, as_str(obj.get("id")) or stem, mid, sid, role, message_ms, model)
        ctx.state["sid"] = out.session_id
        return out

    def _session_by_place(self, ctx: FileContext) -> str | None:
        """The session a file belongs to by where it lies: `session/<project>/<id>.json`,
        `message/<session>/…`, a part by its message's folder."""
        path = ctx.path
        kind = kind_of(path)
        if kind == "session":
            return path.name[: -len(".json")]
        if kind == "message":
            return path.parent.name
        if kind == "part" and path.parent.name != "part":
            return self._message_of(ctx, path.parent.name, None)[0]
        return None

    def _message_of(
        self, ctx: FileContext, mid: str | None, sid: str | None
    ) -> tuple[str | None, str | None, int | None, str | None]:
        """(session, role, time, model) of a part's message, read from the message's own file: a
        replay's as the archive holds it (OpenCode deletes a session's files with it), the disk's
        where the archive holds none."""
        if mid is None:
            return sid, None, None, None
        root = storage_root(ctx.path)
        if root is None and ctx.archived is not None:  # a replay's: the folder gone from the disk perhaps
            root = _root_by_name(ctx.path)
        if root is None:
            return sid, None, None, None
        message_dir = root / "message"
        kept = _archived_message(ctx.archived, message_dir, mid, sid) if ctx.archived is not None else None
        if kept is not None:
            return sid or kept[0], kept[1], kept[2], kept[4]
        # the ids name a file only when they are plain names: "../.." or 300 characters from a log
        # would look outside the storage folder, or fail on a name too long
        candidate = (
            message_dir / sid / f"{mid}.json" if sid and _plain_name(sid) and _plain_name(mid) else None
        )
        if candidate is None or not _is_file(candidate):
            index = self._messages.get(str(root))
            if index is None or (mid not in index and mid not in self._missing.setdefault(str(root), set())):
                index = _message_index(message_dir)
                self._messages[str(root)] = index
                if mid not in index:
                    self._missing.setdefault(str(root), set()).add(mid)
            candidate = index.get(mid)
        if candidate is None:
            return sid, None, None, None
        found_sid, role, message_ms, _, model = self._message_facts(candidate)
        return sid or found_sid, role, message_ms, model


def _archived_message(
    archived: Callable[[str, bytes | None], dict[str, list[bytes]]],
    message_dir: Path,
    mid: str,
    sid: str | None,
) -> Facts | None:
    """The facts of message `mid` as the archive holds its file, `message/<session>/<mid>.json` (of
    any session where the part names none, or its own holds none); None where the archive holds none."""
    if not _plain_name(mid):
        return None
    folders = [glob.escape(sid)] if sid and _plain_name(sid) else []
    for folder in [*folders, "*"]:
        found = archived(f"{glob.escape(str(message_dir))}/{folder}/{glob.escape(mid)}.json", b"")
        for path, records in sorted(found.items()):
            return _facts(Path(path), _object_of(b"".join(records)))
    return None


def _in_time_order(messages: list[Path], facts: dict[Path, Facts]) -> list[Path]:
    """Each session's message files in the order their messages were created (`time.created`, in
    their `facts`), the sessions kept in the order found. OpenCode's ids grow with time, but names
    need not sort so (files copied, renamed, or written by another tool): by name alone a session
    showed its messages out of order. Ties, and a message without a time (placed after the one
    before it by name), keep the order of the names."""
    folders: dict[Path, list[Path]] = {}
    for path in messages:
        folders.setdefault(path.parent, []).append(path)
    ordered: list[Path] = []
    for paths in folders.values():
        keyed, last = [], None
        for i, path in enumerate(paths):
            ms = facts[path][2]
            last = ms if ms is not None else last
            keyed.append((last is not None, last or 0, i, path))
        ordered += [k[3] for k in sorted(keyed, key=lambda k: k[:3])]
    return ordered


def _object_of(data: bytes | None) -> dict[str, Any]:
    """The JSON object a storage file holds; {} when it holds none."""
    obj = loads(data.removeprefix(BOM))[0] if data else None
    return obj if isinstance(obj, dict) else {}


def _facts(path: Path, data: dict[str, Any]) -> Facts:
    """(session, role, time created, id, model) of the message file at `path` holding `data`."""
    return (
        as_str(data.get("sessionID")) or path.parent.name,
        as_str(data.get("role")),
        epoch_ms(as_dict(data.get("time")).get("created")),
        as_str(data.get("id")),
        as_str(data.get("modelID")) or as_str(as_dict(data.get("model")).get("modelID")),
    )


def _message_index(message_dir: Path) -> dict[str, Path]:
    """Message id → file: by file name, and by the `id` inside files named otherwise."""
    index: dict[str, Path] = {}
    if not message_dir.is_dir():
        return index
    for path in sorted(message_dir.glob("*/*.json")):
        index.setdefault(path.name[: -len(".json")], path)
        try:
            data = orjson.loads(read_regular(path).removeprefix(BOM))
        except (OSError, orjson.JSONDecodeError):
            continue
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            index.setdefault(data["id"], path)
    return index


# ---------------------------------------------------------------------- opencode.db


class OpenCodeDbAdapter(SqliteSource, OpenCodeCommands):
    """OpenCode's SQLite store (v1.2 →); see the module docstring."""

    name = "opencode-db"
    db_name = "opencode.db"
    mode = "database"

    def default_roots(self) -> list[Path]:
        """Every `opencode*.db` in the data folder (`opencode.db` when there is none yet)."""
        data = opencode_data_dir()
        try:
            found = sorted(data / e.name for e in os.scandir(data) if DB_NAME.match(e.name) and e.is_file())
        except OSError:
            found = []
        return found or [data / "opencode.db"]

    def claims(self, path: Path, explicit: bool = False) -> bool:
        if not DB_NAME.match(path.name) and not (explicit and path.suffix == ".db"):
            return False
        return {"session", "message", "part"} <= sqlite_tables(path)

    def discover(self, root: Path) -> Iterator[SourceRef]:
        """The database named, or each `opencode*.db` under a folder at any depth."""
        if root.is_file():
            if self.claims(root, explicit=True):
                yield SourceRef(root, self.name, "database", root.parent.name)
            return
        if not root.is_dir():
            return
        for dirpath, dirnames, filenames in walk(root):
            dirnames[:] = kept_folders(dirpath, dirnames)
            for fname in sorted(filenames):
                if DB_NAME.match(fname):
                    path = Path(dirpath) / fname
                    if self.claims(path):
                        yield SourceRef(path, self.name, "database", path.parent.name)

    def read_rows(self, path: Path) -> list[RawRecord]:
        sink = RowSink()
        add = sink.add
        out = sink.records
        with open_sqlite(path) as conn:
            conn.row_factory = sqlite3.Row
            order = "time_created, id" if "time_created" in table_columns(conn, "session") else "id"
            m_order = "time_created, id" if "time_created" in table_columns(conn, "message") else "id"
            parts: dict[str, list[sqlite3.Row]] = {}
            for row in conn.execute("SELECT * FROM part ORDER BY id"):
                parts.setdefault(row["message_id"], []).append(row)
            messages: dict[str, list[sqlite3.Row]] = {}
            for row in conn.execute(f"SELECT * FROM message ORDER BY {m_order}"):
                messages.setdefault(row["session_id"], []).append(row)
            for srow in conn.execute(f"SELECT * FROM session ORDER BY {order}"):
                add(_row_json("session", srow))
                for mrow in messages.pop(srow["id"], []):
                    add(_row_json("message", mrow, skip="data"))
                    add(as_bytes(mrow["data"]) or b"null")
                    for prow in parts.pop(mrow["id"], []):
                        add(_row_json("part", prow, skip="data"))
                        add(as_bytes(prow["data"]) or b"null")
            for rows in messages.values():  # messages of a session row that is gone
                for mrow in rows:
                    add(_row_json("message", mrow, skip="data"))
                    add(as_bytes(mrow["data"]) or b"null")
        return out

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        st = ctx.state
        obj, error = loads(rec.raw)
        if isinstance(obj, dict) and isinstance(obj.get("$row"), str):
            st["row"] = obj
            if obj["$row"] == "session":
                return session_record(obj)
            sid = as_str(obj.get("session_id"))
            return Record(
                entry_type="row",
                subtype=obj["$row"],
                session_id=sid,
                session=SessionInfo(source=AGENT, external_id=sid) if sid else None,
            )
        row = st.get("row") or {}
        sid = as_str(row.get("session_id"))
        if not isinstance(obj, dict):
            return Record(entry_type="row-data", known=False, parse_error=error, session_id=sid)
        if row.get("$row") == "message":
            mid = as_str(row.get("id"))
            out = message_record(obj, mid, sid)
            st.setdefault("roles", {})[mid] = out.role
            st.setdefault("times", {})[mid] = out.timestamp or epoch_ms(row.get("time_created"))
            st.setdefault("models", {})[mid] = out.model
            return out
        mid = as_str(row.get("message_id"))
        message_ms = st.get("times", {}).get(mid)
        role, model = st.get("roles", {}).get(mid), st.get("models", {}).get(mid)
        return part_record(obj, as_str(row.get("id")), mid, sid, role, message_ms, model)


def _plain_name(value: str) -> bool:
    return 0 < len(value) < 200 and value not in (".", "..") and not any(c in value for c in "/\\\0")


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _row_json(table: str, row: sqlite3.Row, skip: str | None = None) -> bytes:
    """A row's columns as JSON, tagged with its table (`data` is stored next, byte for byte)."""
    values: dict[str, Any] = {"$row": table}
    for key in row.keys():  # noqa: SIM118 - a sqlite3.Row iterates its values
        if key == skip:
            continue
        value = row[key]
        values[key] = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return plain_json(values)
