"""Gemini CLI: `~/.gemini/tmp/<project>/chats/session-*.json[l]` (FORMATS.md §4).

Eras read here:
  * JSON (v0.2 … v0.38): one pretty-printed ConversationRecord per session, rewritten on every
    message. The ingest stores it as a document cut into each message's exact JSON and the bytes
    between (so it round-trips byte for byte, whether indented or on one line, and a rewrite is
    read again whole); archives written before read such a chat line by line, the messages put
    back together here from those lines;
  * JSONL (v0.39 →): a metadata line, then message lines upserted by id (a later line with the same
    id completes that message: tool results, tokens), `{"$set": …}` metadata updates (`messages`
    there replaces the whole history) and `{"$rewindTo": id}`, which drops that message and all
    after it; the next message then branches from what is left, as a Claude rewind does;
  * subagents in `chats/<parentSessionId>/<sessionId>.jsonl`, and in the JSON era
    `chats/<parentSessionId>/<sessionId>.json` (`"kind": "subagent"`): linked to the session of the
    folder's name. `chats/skill-extraction-<run>/` holds the chats of Gemini CLI's own background
    skill-extraction agent, which no session of the user's started: each is a session of its own
    (agent type "skill-extraction"), not a subagent of a session that does not exist.

Messages keep their own ids (`<session>:<message id>`), so the JSONL copy that a resumed legacy
session gets is recognised as a copy of the `.json` it came from. Project paths come from
`.project_root` or `projects.json` (slug dirs), or by hashing the known roots (sha256 dirs); with
none of these, from the workspace directories the session context a chat starts with lists.
"""

from __future__ import annotations

import hashlib
import json
import ntpath
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePath
from typing import Any

import orjson

from ..base.text import WINDOWS_FOLDER
from .base import (
    BOM,
    MIRROR_ROOT,
    SNIFF_BYTES,
    Adapter,
    Command,
    FileContext,
    ForkError,
    ImageRef,
    McpConfig,
    MessageExtras,
    RawRecord,
    Record,
    ResumeTarget,
    SessionInfo,
    SourceRef,
    ToolResult,
    ToolUse,
    Usage,
    base64_size,
    extras_of_images,
    image_of,
    parse_iso_ms,
    read_regular,
    safe_int,
)
from .claude import claude_layout
from .edits import FileEdit
from .shared import (
    JsonDocumentLines,
    as_dict,
    as_list,
    as_str,
    head_of,
    input_text,
    json_text,
    lines_of,
    merge_records,
    parse_document,
    parse_record,
    tile,
)
from .walk import walk

AGENT = "gemini"
# gemini-cli's own rule for `--session-id` (its generated ids are UUIDs), minus a leading "-" that reads as an option
GEMINI_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
NOTICE_TYPES = frozenset({"info", "error", "warning"})
DOC_ARRAYS = frozenset({"messages", "history"})
# the elements a JSON-era chat written on one line is cut into (`split`)
DOC_ELEMENTS = frozenset({(key, "[]") for key in DOC_ARRAYS})
STATUS = {"success": "completed", "error": "failed", "cancelled": "interrupted", "canceled": "interrupted"}
SESSION_NAME = re.compile(r"^session-.*\.jsonl?$")
# the folder of the chats Gemini CLI's background skill-extraction agent records (its run's id)
SKILL_EXTRACTION = "skill-extraction-"
# Qwen Code, a fork of Gemini CLI, kept chats of Gemini's JSON shape (its replies typed "qwen") in
# `~/.qwen/tmp/<hash>/chats/` before its JSONL: Qwen Code's reader takes them (`qwen_json_chat`)
QWEN_DIR = ".qwen"
# the first workspace directory the session context a chat starts with lists (2026-06 on)
# a message Gemini CLI writes for the model as a chat begins: its session context (tagged from 2026,
# as "This is the Gemini CLI. We are setting up the context for our chat." before), or any one
# tagged block
INJECTED = re.compile(
    r"\s*(?:<session_context>|This is the [\w .-]+\. We are setting up the context for our chat\.)"
    r"|\s*<([A-Za-z_][\w-]*)>.*</\1>\s*$",
    re.S,
)
WORKSPACE_DIR = re.compile(r"<session_context>.*?\*\*Workspace Directories:\*\*\s*\n\s*- ([^\n]+)", re.S)
QWEN_REPLY = re.compile(rb'"type"\s*:\s*"qwen"')


def gemini_dir() -> Path:
    """`$GEMINI_CLI_HOME/.gemini` (gemini-cli's own home override) or `~/.gemini`."""
    env = os.environ.get("GEMINI_CLI_HOME")
    return (Path(env).expanduser() if env else Path.home()) / ".gemini"


UUID_NAME = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)


# what Gemini CLI keeps in a project's folder for all its sessions (FORMATS.md §4.1), by name
PROJECT_FILES = {"logs.json": "prompt-log", "shell_history": "shell-history", ".project_root": "project-root"}


def side_file(path: PurePath) -> tuple[str, str | None, str] | None:
    """(what it is, its session, its project folder) of a file Gemini CLI keeps beside a session:
    a tool's output it saved whole (`tmp/<project>/tool-outputs/session-<id>/<tool>_….txt`) or a
    plan (`tmp/<project>/<id>/plans/<date>-<slug>.md`); or beside all of a project's sessions (no
    session of its own): the log of every prompt typed (`logs.json`), the `!` shell history, the
    project's folder (`.project_root`), a conversation `/chat save` kept (`checkpoint-<tag>.json`)
    and the snapshots `/restore` goes back to (`checkpoints/*.json`); and beside `tmp/`, the
    registry of projects (`projects.json`). None for anything else."""
    side = _side(path)
    return None if side is None else (side[0], side[1], path.parts[-side[2]])


def _side(path: PurePath) -> tuple[str, str | None, int] | None:
    """`side_file`, with its project folder given by how many parts from the end it is."""
    parts = path.parts
    name = path.name
    if len(parts) >= 4 and parts[-3] == "tool-outputs" and parts[-2].startswith("session-"):
        session = parts[-2][len("session-") :]
        return ("tool-output", session, 4) if UUID_NAME.match(session) else None
    if len(parts) >= 4 and parts[-2] == "plans" and UUID_NAME.match(parts[-3]) and name.endswith(".md"):
        return "plan", parts[-3], 4
    if QWEN_DIR in parts:  # Qwen Code keeps files of the same names: not read as Gemini CLI's
        return None
    if len(parts) >= 3 and parts[-3] == "tmp":
        if name in PROJECT_FILES:
            return PROJECT_FILES[name], None, 2
        if name.startswith("checkpoint-") and name.endswith(".json"):
            return "chat-save", None, 2
    if len(parts) >= 4 and parts[-4] == "tmp" and parts[-2] == "checkpoints" and name.endswith(".json"):
        return "checkpoint", None, 3
    if name == "projects.json" and len(parts) >= 2 and parts[-2] == ".gemini":
        return "project-registry", None, 2  # which folder each project is (slug → path)
    return None


def _project_depth(path: PurePath) -> int | None:
    """How many parts from the end of `path` its project's folder is (`tmp/<project>/…`): where
    the file lies in Gemini CLI's layout says, whatever the project is named (one named `chats` or
    `checkpoints` holds a folder of its own name)."""
    side = _side(path)
    if side is not None:
        return side[2]
    chats = _chats_index(path)
    if chats is not None and chats >= 1:
        return len(path.parts) - chats + 1
    return 2 if len(path.parts) >= 2 else None


def _chats_index(path: PurePath) -> int | None:
    parts = path.parts
    for i in (len(parts) - 2, len(parts) - 3):
        if i >= 0 and parts[i] == "chats":
            return i
    return None


def looks_like_gemini(head: bytes, jsonl: bool) -> bool:
    head = head.removeprefix(BOM)
    if jsonl:
        for line in head.split(b"\n")[:10]:
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(obj, dict) and (
                ("sessionId" in obj and "projectHash" in obj and "type" not in obj)
                or "$rewindTo" in obj
                or ("$set" in obj and len(obj) == 1)
                or (obj.get("type") == "gemini" and "id" in obj)
            ):
                return True
        return False
    return not QWEN_REPLY.search(head) and _json_chat_shaped(head)


def _json_chat_shaped(head: bytes) -> bool:
    """The start of a JSON-era chat (a ConversationRecord) or of a saved history, Gemini CLI's or
    its fork Qwen Code's."""
    head = head.removeprefix(BOM)
    if not head.lstrip().startswith(b"{"):
        return False
    return (b'"sessionId"' in head and (b'"messages"' in head or b'"projectHash"' in head)) or (
        b'"history"' in head and b'"parts"' in head
    )


def qwen_json_chat(path: PurePath, head: bytes) -> bool:
    """A chat Qwen Code kept in Gemini CLI's JSON shape (before its JSONL): a `session-*.json` or
    one in a `chats` folder, its replies typed "qwen", or any such chat under `.qwen` (one holding
    no reply yet says nothing else)."""
    if not path.name.endswith(".json") or (_chats_index(path) is None and not SESSION_NAME.match(path.name)):
        return False
    return _json_chat_shaped(head) and (QWEN_REPLY.search(head) is not None or QWEN_DIR in path.parts)


class GeminiAdapter(Adapter):
    """Reads Gemini CLI chat recordings of both eras; see the module docstring."""

    name = AGENT
    writes_undos = True  # a rewind to the first message (`$rewindTo`)
    env_vars = ("GEMINI_CLI_HOME",)
    mode = "lines"
    id_shape = (GEMINI_ID, "made of letters, digits, '-' and '_'")
    fork_style = "session-file"
    resumes_subagents = True
    edit_tools = frozenset({"replace"})
    write_tools = frozenset({"write_file"})
    read_tools = frozenset({"read_file"})
    plan_tools = frozenset({"exit_plan_mode"})
    shell_tools = frozenset({"run_shell_command"})

    # the `type` of the model's messages in a chat (Qwen Code's fork of the format writes "qwen")
    reply_type = "gemini"
    message_types = frozenset({"user", "gemini"})

    def fork_file_command(self, path: str) -> Command:
        """`gemini --session-file PATH` imports a session file as a new session (v0.42+)."""
        return Command([self.program, "--session-file", path])

    def edit_result(self, record: dict[str, Any], tool_id: str) -> Any:
        """The call's `resultDisplay`, in the message record that holds the call."""
        for call in record.get("toolCalls") or []:
            if isinstance(call, dict) and call.get("id") == tool_id:
                return call.get("resultDisplay")
        return None

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """replace / write_file from their parameters, with the file before and after that the
        call's `resultDisplay` holds."""
        edits = super().file_edits(name, params, result)
        if edits and isinstance(result, dict) and isinstance(result.get("newContent"), str):
            edits[0].after = result["newContent"]
            if "originalContent" in result:  # null: a new file
                original = result["originalContent"]
                edits[0].before = original if isinstance(original, str) else None
        return edits

    def mcp_config(self) -> McpConfig:
        return McpConfig(gemini_dir() / "settings.json")

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """`gemini --resume ID`. Gemini forks by importing a session file, which threadloom writes."""
        if fork:
            raise ForkError("Gemini forks by importing a session file: `threadloom fork` writes one")
        return Command([self.program, "--resume", self.checked_id(target.external_id)])

    def __init__(self) -> None:
        self._roots_cache: dict[str, tuple[float, dict[str, str]]] = {}

    def default_roots(self) -> list[Path]:
        return [gemini_dir() / "tmp"]

    def side_roots(self) -> list[Path]:
        """The registry of projects beside `tmp/` (slug → the folder it names)."""
        return [gemini_dir() / "projects.json"]

    def project_folder(self, parts: Sequence[str], key: str) -> int | None:
        """Where the file lies in the layout says (`_project_depth`): a project named `chats` holds
        a folder `chats` of its own, which the nearest folder of its name would be."""
        depth = _project_depth(PurePath(*[p for p in parts if p]))
        at = len(parts) - depth if depth is not None else -1
        return at if 0 <= at < len(parts) and parts[at] == key else super().project_folder(parts, key)

    def claims(self, path: Path, explicit: bool = False) -> bool:
        name = path.name
        if side_file(path) is not None:
            return True
        jsonl = name.endswith(".jsonl")
        if not (jsonl or name.endswith(".json")):
            return False
        if QWEN_DIR in path.parts:
            return False  # Qwen Code's chats (a fork of Gemini CLI's format): not read as Gemini's
        chats = _chats_index(path)
        if chats is not None:
            if SESSION_NAME.match(name):
                return True
            if chats == len(path.parts) - 3:
                # chats/<parent session>/<session>.jsonl; a `.json` there (the JSON era) is looked
                # at, as only a chat recording is taken
                return jsonl or looks_like_gemini(head_of(path, SNIFF_BYTES), False)
        # never open other tools' files on a walk: Claude Code's own, or any JSON document (a
        # legacy session elsewhere is known by its name); a subagent's `<uuid>.jsonl` outside a
        # `chats` folder is looked at
        stranger = not jsonl or claude_layout(path)
        if not explicit and not SESSION_NAME.match(name) and stranger:
            return False
        return looks_like_gemini(head_of(path, SNIFF_BYTES), jsonl)

    def stranger(self, path: Path) -> str | None:
        """A chat of Gemini CLI's JSONL shape in Qwen Code's folder, which Qwen Code is not known
        to write (its JSON chats are read by its own reader): said as such where it is listed."""
        if not path.name.endswith(".jsonl") or _chats_index(path) is None or QWEN_DIR not in path.parts:
            return None
        if looks_like_gemini(head_of(path, SNIFF_BYTES), True):
            return "a chat of Gemini CLI's JSONL format in Qwen Code's folder: Qwen Code is not known to write one"
        return None

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            side = side_file(root)
            if side is not None:
                yield SourceRef(root, AGENT, "side", side[2])
            elif self.claims(root, explicit=True):
                yield SourceRef(root, AGENT, _kind(root), _project_key(root))
            return
        if not root.is_dir():
            return
        if (root / "tmp").is_dir() and root.name == ".gemini":
            if (root / "projects.json").is_file():
                yield from self.discover(root / "projects.json")
            root = root / "tmp"
        for dirpath, dirnames, filenames in walk(root):
            dirnames.sort()
            for fname in sorted(filenames):
                path = Path(dirpath) / fname
                if self.claims(path):
                    side = side_file(path)
                    if side is not None:  # kept whole with its session (a restore puts it back)
                        yield SourceRef(path, AGENT, "side", side[2])
                    else:
                        yield SourceRef(path, AGENT, _kind(path), _project_key(path))

    def split(self, data: bytes) -> list[RawRecord]:
        """A JSON-era chat, indented (as Gemini CLI writes it) or on one line (as other tools save
        it): each message's exact JSON and the bytes between, read by the document reader
        (`_document_line`). One caught mid-write waits (SourceIncomplete), as the ingest does for
        any document."""
        doc = parse_document(data)
        return tile(data, DOC_ELEMENTS) if isinstance(doc, dict) else [RawRecord(0, 1, data, newline=False)]

    def split_unfinished(self, data: bytes) -> list[RawRecord]:
        """A chat its writer never finished: the messages it holds whole, each its own record as in
        a finished one (read as one record, they ran together into one message)."""
        return tile(data, DOC_ELEMENTS)

    # ------------------------------------------------------------------ normalize

    def start_file(self, ctx: FileContext, first_offset: int) -> None:
        path = ctx.path
        chats = _chats_index(path)
        parent = path.parts[-2] if chats == len(path.parts) - 3 else None
        ctx.state.update(
            started=True,
            sid=None,
            meta={},
            seen={},
            live=[],
            last_uuid=None,
            parent=parent,
            cwd=self._project_root(ctx, chats),
            doc=None,
        )
        if path.name.endswith(".json"):
            ctx.state["doc"] = JsonDocumentLines(DOC_ARRAYS)
        if first_offset > 0:
            self._resume_state(ctx, first_offset)

    def _resume_state(self, ctx: FileContext, end: int) -> None:
        """Rebuild the per-file state from the bytes before `end` (an append read on its own)."""
        try:
            data = read_regular(ctx.path, end)
        except OSError:
            return
        for rec in lines_of(data):
            self._normalize(rec, ctx)

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        side = side_file(ctx.path) if ctx.kind == "side" else None
        if side is not None:  # kept whole, not read
            return Record(entry_type="side-file", subtype=side[0], session_id=side[1], side_file=True)
        if "started" not in ctx.state:
            self.start_file(ctx, rec.offset)
        return self._normalize(rec, ctx)

    def _normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        st = ctx.state
        if st["doc"] is not None:
            return self._document_line(rec, ctx)
        obj, error = parse_record(rec.raw)
        if not isinstance(obj, dict):
            etype = "invalid" if error else ("blank" if obj is None else "non-object")
            return Record(
                entry_type=etype,
                known=False,
                parse_error=error or (None if obj is None else "not a JSON object"),
                session_id=st["sid"] or self._sid(ctx),
                parent_uuid=st["last_uuid"],
            )
        if isinstance(obj.get("$rewindTo"), str):
            return self._rewind(obj["$rewindTo"], ctx, error)
        if isinstance(obj.get("$set"), dict):
            return self._set(obj["$set"], ctx, rec, error)
        if isinstance(obj.get("id"), str) and ("type" in obj or "content" in obj):
            out = self._message(obj, ctx, rec)
            out.parse_error = error
            return out
        if isinstance(obj.get("sessionId"), str):
            return self._metadata(obj, ctx, error)
        return Record(
            entry_type=as_str(obj.get("type")) or "unknown",
            known=False,
            parse_error=error,
            session_id=self._sid(ctx),
            parent_uuid=st["last_uuid"],
        )

    # the images a message embeds: `inlineData` parts of its content or of its tool calls' results
    image_marker = b'"inlineData"'
    images_in_replies = True

    def message_extras(self, raw: bytes, entry_type: str | None) -> MessageExtras | None:
        return extras_of_images(raw, _images) if self.image_marker in raw else None

    def image_data(self, raw: bytes, index: int) -> tuple[str, str] | None:
        return image_of(raw, index, _images)

    # ------------------------------------------------------------------ sessions

    def _sid(self, ctx: FileContext) -> str:
        st = ctx.state
        sid: str | None = st["sid"]
        if sid is None:
            sid = as_str(st["meta"].get("sessionId"))
            if sid is None:
                name = ctx.path.name
                sid = name[: name.rindex(".")] if "." in name else name
            st["sid"] = sid
        return sid

    def _info(self, ctx: FileContext) -> SessionInfo:
        st = ctx.state
        sid = self._sid(ctx)
        info = SessionInfo(source=self.name, external_id=sid, project_key=ctx.project_key)
        parent = st["parent"]
        if parent and parent.startswith(SKILL_EXTRACTION):
            # a background run of Gemini CLI's own, started by no session: shown as a session
            info.agent_type = "skill-extraction"
            info.agent_id = parent
            return info
        if parent or st["meta"].get("kind") == "subagent":
            info.kind = "subagent"
            info.is_subagent = 1
            info.parent_session_id = st["parent"]
            info.agent_id = sid
            info.spawn_key = sid
        return info

    def _cwd(self, ctx: FileContext) -> str | None:
        st = ctx.state
        cwd: str | None = st["cwd"]
        if cwd:
            return self._as_the_user_wrote(cwd, st)
        dirs = st["meta"].get("directories")
        if isinstance(dirs, list) and dirs and isinstance(dirs[0], str):
            return dirs[0]
        project_hash = as_str(st["meta"].get("projectHash"))
        root = self._known_roots(ctx).get(project_hash) if project_hash else None
        return root or st.get("context_dir")

    @staticmethod
    def _as_the_user_wrote(root: str, st: dict[str, Any]) -> str:
        """The project's folder in the user's casing. On Windows Gemini CLI writes it lowercased
        (`.project_root`, projects.json); the log names it as the user wrote it in the session's
        workspace folders (`directories`), and in the paths its tools were given, taken when their
        folder hashes to the session's `projectHash` (the hash of the folder as Gemini CLI was
        started in it)."""
        cased: str | None = st.get("cased")
        if cased or not WINDOWS_FOLDER.match(root):
            return cased or root
        folded = ntpath.normcase(root.rstrip("\\/"))
        digest = as_str(st["meta"].get("projectHash"))
        dirs = [d for d in as_list(st["meta"].get("directories")) if isinstance(d, str)]
        noted: list[str] = st.get("paths", [])
        # the tools' paths looked at before, against the same folder and hash, are not looked at
        # again: this is asked a record (a session of 8,000 calls took 51 s when each ask went
        # through every path so far)
        key = (folded, digest)
        start = st.get("paths_seen", 0) if st.get("paths_key") == key else 0
        st["paths_key"], st["paths_seen"] = key, len(noted)
        for path, trusted in [*((d, True) for d in dirs), *((p, False) for p in noted[start:])]:
            head = path[: len(folded)]
            if ntpath.normcase(head) != folded or path[len(folded) : len(folded) + 1] not in ("", "\\", "/"):
                continue
            if trusted or (digest and hashlib.sha256(head.encode()).hexdigest() == digest):
                st["cased"] = head
                return head
        return root

    @staticmethod
    def _note_paths(tools: list[dict[str, Any]], st: dict[str, Any]) -> None:
        """Windows paths the tools were given (`file_path`, `dir_path`, …), while the project's
        folder is known only lowercased (`_as_the_user_wrote`)."""
        root = st["cwd"]
        if st.get("cased") or not root or not WINDOWS_FOLDER.match(root):
            return
        paths = st.setdefault("paths", [])
        for call in tools:
            for value in as_dict(call.get("args")).values():
                if isinstance(value, str) and WINDOWS_FOLDER.match(value):
                    paths.append(value)

    def _project_root(self, ctx: FileContext, chats: int | None) -> str | None:
        """The project a chats folder belongs to: `.project_root`, or projects.json by slug or hash.
        A replay reads them as the archive kept them (Gemini CLI removes a project's folder with
        its sessions), another machine's as the archive holds it too."""
        if chats is None:
            return None
        id_dir = Path(*ctx.path.parts[:chats])
        try:
            marker = ctx.read_beside(id_dir / ".project_root").decode("utf-8").strip()
        except (OSError, UnicodeDecodeError):
            marker = ""
        if marker:
            return marker
        return self._known_roots(ctx).get(id_dir.name)

    def _known_roots(self, ctx: FileContext) -> dict[str, str]:
        """slug → root and sha256(root) → root, from the projects.json next to `tmp/` (a replay's as
        the archive kept it)."""
        path = ctx.path
        home = None
        for parent in path.parents:
            if parent.name == "tmp":
                home = parent.parent
                break
        if home is None:
            return {}
        registry = home / "projects.json"
        if ctx.archived is not None:  # a replay's: read once a file, the disk's copy gone perhaps
            if "known_roots" not in ctx.state:
                try:
                    ctx.state["known_roots"] = _roots_of(ctx.read_beside(registry))
                except OSError:
                    ctx.state["known_roots"] = {}
            kept: dict[str, str] = ctx.state["known_roots"]
            return kept
        mirrored = str(registry).startswith(MIRROR_ROOT + "/")  # another machine's: from the archive
        try:
            mtime = -1.0 if mirrored else registry.stat().st_mtime
        except OSError:
            return {}
        cached = self._roots_cache.get(str(registry))
        if cached and cached[0] == mtime and not mirrored:
            return cached[1]
        try:
            mapping = _roots_of(read_regular(registry))
        except OSError:
            mapping = {}
        self._roots_cache[str(registry)] = (mtime, mapping)
        return mapping

    # ------------------------------------------------------------------ record kinds

    def _metadata(self, obj: dict[str, Any], ctx: FileContext, error: str | None) -> Record:
        st = ctx.state
        st["meta"].update(obj)
        out = Record(
            entry_type="metadata",
            parse_error=error,
            session_id=self._sid(ctx),
            timestamp=parse_iso_ms(obj.get("startTime")),
            cwd=self._cwd(ctx),
            session=self._info(ctx),
        )
        summary = as_str(obj.get("summary"))
        if summary:
            out.content = summary_title(summary)
            out.title = ("ai-title", out.content)
            out.entry_type = "ai-title"
            out.subtype = "metadata"
        return out

    def _set(self, values: dict[str, Any], ctx: FileContext, rec: RawRecord, error: str | None) -> Record:
        st = ctx.state
        sid = self._sid(ctx)
        out = Record(
            entry_type="set",
            parse_error=error,
            session_id=sid,
            parent_uuid=st["last_uuid"],
            timestamp=parse_iso_ms(values.get("lastUpdated")),
        )
        for key in ("summary", "directories", "kind", "memoryScratchpad", "projectHash"):
            if key in values:
                st["meta"][key] = values[key]
        if "directories" in values:  # may name the project's folder in the user's casing
            out.cwd = self._cwd(ctx)
        summary = as_str(values.get("summary"))
        if summary:
            out.entry_type = "ai-title"
            out.subtype = "$set"
            out.content = summary_title(summary)
            out.title = ("ai-title", out.content)
        messages = values.get("messages")
        if isinstance(messages, list):
            self._checkpoint(out, [m for m in messages if isinstance(m, dict)], ctx, rec)
        return out

    def _checkpoint(
        self, out: Record, messages: list[dict[str, Any]], ctx: FileContext, rec: RawRecord
    ) -> None:
        """`$set.messages`: the whole history replaced (compression, masking); new parts are shown.
        Only one that drops messages is a compaction: a chat begins by setting its history to the
        session's context (2026-06 on), which drops nothing."""
        st = ctx.state
        sid = self._sid(ctx)
        uuid = f"{sid}:L{rec.line_number}"
        ids = [m["id"] for m in messages if isinstance(m.get("id"), str)]
        new = [m for m in messages if isinstance(m.get("id"), str) and m["id"] not in st["seen"]]
        dropped = [i for i in st["live"] if i not in set(ids)]
        out.subtype = "messages"
        if new or dropped:
            out.uuid = uuid
            out.role = "system"
            out.is_message = True
            out.is_compaction = out.segment_marker = bool(dropped)
            out.content = "\n".join(t for t in (_message_text(m) for m in new) if t) or None
            if not dropped and all(_injected(m) for m in new):
                # the context Gemini gives the model as a chat begins: kept, not a message (as
                # Codex's injected context and Claude Code's reminders are not)
                out.is_message, out.is_meta = False, True
                st.setdefault("context", set()).update(m["id"] for m in new)
        for m in new:
            tools = _tool_calls(m)
            text = _message_text(m)
            st["seen"][m["id"]] = {"uuid": uuid, "text": text, "tools": {t["id"] for t in tools}}
            found = WORKSPACE_DIR.search(text or "") if m.get("type") == "user" else None
            if found and not st.get("context_dir"):  # where the session ran, when no marker says
                st["context_dir"] = found.group(1).strip()
            out.tool_uses += [_tool_use(t, i) for i, t in enumerate(tools)]
        st["live"] = ids
        st["last_uuid"] = (
            st["seen"][ids[-1]]["uuid"] if ids and ids[-1] in st["seen"] else (out.uuid or st["last_uuid"])
        )

    def _rewind(self, target: str, ctx: FileContext, error: str | None) -> Record:
        st = ctx.state
        live = st["live"]
        context = st.get("context", ())
        # the first message of the conversation, past the session context Gemini set its history to
        first = next((i for i in live if i not in context), None)
        if target in live:
            del live[live.index(target) :]
        else:
            live.clear()  # gemini-cli drops everything when the id is unknown
        st["last_uuid"] = st["seen"][live[-1]]["uuid"] if live else None
        out = Record(
            entry_type="rewind",
            parse_error=error,
            session_id=self._sid(ctx),
            ref_uuid=target,
            parent_uuid=st["last_uuid"],
        )
        if first in st["seen"] and all(i in context for i in live):
            # back to before the first message (the session context alone left): the next starts
            # a tree of its own, no prompt held by both branches to read a rewind from; shown as an
            # undo of what it dropped
            out.subtype, out.ref_uuid = "undo", st["seen"][first]["uuid"]
            out.role, out.is_meta, out.is_message = "system", True, True
            out.content = "rewound to the start: the model goes on without what is above"
        return out

    def _message(self, m: dict[str, Any], ctx: FileContext, rec: RawRecord) -> Record:
        st = ctx.state
        sid = self._sid(ctx)
        msg_id = as_str(m.get("id"))
        mtype = as_str(m.get("type")) or as_str(m.get("role"))
        text = _message_text(m)
        tools = _tool_calls(m)
        self._note_paths(tools, st)
        seen = st["seen"].get(msg_id) if msg_id else None
        out = Record(
            entry_type=mtype or "message",
            known=mtype in self.message_types or mtype in NOTICE_TYPES,
            session_id=sid,
            message_id=msg_id,
            timestamp=parse_iso_ms(m.get("timestamp") or m.get("ts")),
            model=as_str(m.get("model")),
            cwd=self._cwd(ctx),
            session=self._info(ctx),
        )
        replied = mtype in (self.reply_type, "model")
        thinking = _thoughts(m.get("thoughts")) if replied else None
        if seen is None:
            out.uuid = f"{sid}:{msg_id}" if msg_id else f"{sid}:L{rec.line_number}"
            out.parent_uuid = st["last_uuid"]
            new_tools = tools
            out.content = text
            out.thinking = thinking
            out.is_message = True
            if msg_id:
                st["seen"][msg_id] = {"uuid": out.uuid, "text": text, "thinking": thinking, "tools": set()}
                st["live"].append(msg_id)
            st["last_uuid"] = out.uuid
            seen = st["seen"].get(msg_id, {"tools": set()})
        else:
            # A later line for the same message is that message rewritten whole (its tool calls
            # added, their results, tokens): an update, not a second message. Its new calls are
            # shown on the message; only text or thoughts it changes are shown, as a part of it.
            out.uuid = f"{sid}:{msg_id}:{rec.line_number}"
            out.parent_uuid = seen["uuid"]
            out.update_of = seen["uuid"]
            new_tools = [t for t in tools if t["id"] not in seen["tools"]]
            out.content = text if text and text != seen["text"] else None
            out.thinking = thinking if thinking and thinking != seen.get("thinking") else None
            out.is_message = bool(out.content or out.thinking)
            out.is_meta = not out.is_message
            seen["text"] = text or seen["text"]
            seen["thinking"] = thinking or seen.get("thinking")
            if msg_id not in st["live"]:
                st["live"].append(msg_id)
                st["last_uuid"] = seen["uuid"]
        seen["tools"].update(t["id"] for t in new_tools)
        if mtype == "user":
            out.role = "user"
            out.is_prompt = (
                out.is_message and out.uuid == seen.get("uuid", out.uuid) and bool(text) and _has_text(m)
            )
        elif replied:
            out.role = "assistant"
            fresh = {t["id"] for t in new_tools}
            # numbered by place in the message, so calls added by later lines keep their order
            out.tool_uses = [_tool_use(t, i) for i, t in enumerate(tools) if t["id"] in fresh]
            out.tool_results = [r for r in (_tool_result(t) for t in tools) if r is not None]
            if out.tool_uses:
                out.tool_text = "\n".join(f"{u.name} {input_text(u.input_json)}" for u in out.tool_uses)
            elif out.tool_results:
                out.tool_text = "\n".join(filter(None, (_result_text(t) for t in tools))) or None
            tokens = m.get("tokens")
            if isinstance(tokens, dict) and msg_id:
                out.usage = _usage(tokens, f"{self.name}:{sid}:{msg_id}")
        elif mtype in NOTICE_TYPES:
            out.role = "system"
        return out

    def _document_line(self, rec: RawRecord, ctx: FileContext) -> Record:
        """A line of a JSON-era session file; the line closing a message carries that message."""
        st = ctx.state
        out: Record | None = None
        subtype = None
        summary = None
        keys: set[str | None] = set()
        for kind, key, value, error in st["doc"].feed(rec.raw):
            if kind == "member":
                subtype = key
                keys.add(key)
                if key:
                    st["meta"][key] = value
                if key == "summary" and isinstance(value, str) and value:
                    summary = value
                continue
            if not isinstance(value, dict):
                part = Record(
                    entry_type="invalid",
                    known=False,
                    parse_error=error or "not a JSON object",
                    session_id=self._sid(ctx),
                    parent_uuid=st["last_uuid"],
                )
            else:
                part = self._message(value, ctx, rec)
            out = part if out is None else merge_records(out, part)
        if out is not None:
            return out
        sid = st["sid"] or as_str(st["meta"].get("sessionId"))
        out = Record(entry_type="json-line", subtype=subtype, session_id=sid)
        # (a one-line chat's first piece holds every member before its messages)
        if sid and "sessionId" in keys:
            st["sid"] = sid
            out.session = self._info(ctx)
            out.cwd = self._cwd(ctx)
        if sid and "directories" in keys:
            out.cwd = self._cwd(ctx)
        if sid and "startTime" in keys:
            out.timestamp = parse_iso_ms(st["meta"].get("startTime"))
        if sid and summary:
            out.entry_type = "ai-title"
            out.content = summary_title(summary)
            out.title = ("ai-title", out.content)
        return out


# ---------------------------------------------------------------------- helpers


SUBAGENT_RESPONSE = re.compile(r'\s*\{\s*"response"\s*:\s*"')
# an escape cut in half at the text's end (a lone `\\`, `\\u00e`), after the whole ones before it
CUT_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\(?:u[0-9A-Fa-f]{0,3})?\Z")


def summary_title(summary: str) -> str:
    """The title a chat's `summary` gives. A subagent's summary is its final output, the JSON
    `{"response": "…"}` cut to 200-odd characters: its response's words are the title, not the
    JSON's braces and escapes (`\\n`, `\\"`)."""
    start = SUBAGENT_RESPONSE.match(summary)
    if start is None:
        return summary
    body = summary[start.end() :]
    try:
        value, _ = json.JSONDecoder().raw_decode('"' + body)
    except ValueError:
        try:
            value = json.loads('"' + CUT_ESCAPE.sub(r"\1", body) + '"')  # cut short before its closing quote
        except ValueError:
            return summary
    if not isinstance(value, str) or not value.strip():
        return summary
    # a lone surrogate (`\\ud800`, an emoji cut in half) can be decoded but not stored
    return value.strip().encode("utf-8", "replace").decode("utf-8")


def _roots_of(registry: bytes) -> dict[str, str]:
    """slug → root and sha256(root) → root, from a projects.json (`{"projects": {root: slug}}`)."""
    try:
        data = orjson.loads(registry)
    except orjson.JSONDecodeError:
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    mapping: dict[str, str] = {}
    for root, slug in projects.items() if isinstance(projects, dict) else ():
        if isinstance(root, str):
            mapping[hashlib.sha256(root.encode()).hexdigest()] = root
            if isinstance(slug, str):
                mapping[slug] = root
    return mapping


def _kind(path: Path) -> str:
    """How a chat is read: a JSON-era one as a "document" (`split` cuts out its messages, whether it
    is indented, as Gemini CLI writes it, or on one line, as other tools save it, and however it is
    rewritten between the two), a JSONL one by its lines. (Archives older than this read JSON-era
    chats by their lines, "transcript", and keep doing so for the files they hold.)"""
    return "document" if path.name.endswith(".json") else "transcript"


def _project_key(path: Path) -> str | None:
    depth = _project_depth(path)
    return PurePath(*path.parts[: len(path.parts) - depth + 1]).name or None if depth else None


def _parts_text(content: Any) -> str | None:
    """Text of a PartListUnion: a string, a part, or a list of parts (`{text}` ones)."""
    if isinstance(content, str):
        return content or None
    if isinstance(content, dict):
        return as_str(content.get("text")) or None
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    # lists of parts may nest without bound: walked in order with a stack, not by recursion
    stack = [iter(content)]
    while stack:
        for part in stack[-1]:
            if isinstance(part, list):
                stack.append(iter(part))
                break
            text = (
                part
                if isinstance(part, str)
                else as_str(part.get("text"))
                if isinstance(part, dict)
                else None
            )
            if text:
                texts.append(text)
        else:
            stack.pop()
    return "\n".join(texts) or None


def _has_text(m: dict[str, Any]) -> bool:
    content = m.get("displayContent") or m.get("content") or m.get("parts")
    return _parts_text(content) is not None


def _injected(m: dict[str, Any]) -> bool:
    """A user message that is one tagged block Gemini CLI wrote for the model, not the person's words."""
    text = _message_text(m)
    return m.get("type") == "user" and text is not None and INJECTED.match(text) is not None


def _message_text(m: dict[str, Any]) -> str | None:
    if m.get("type") == "user" and m.get("displayContent"):
        return _parts_text(m.get("displayContent"))
    return _parts_text(m.get("content")) or _parts_text(m.get("parts"))


def _thoughts(thoughts: Any) -> str | None:
    if not isinstance(thoughts, list):
        return None
    lines = []
    for t in thoughts:
        if isinstance(t, dict):
            subject, description = as_str(t.get("subject")), as_str(t.get("description"))
            lines.append(": ".join(x for x in (subject, description) if x))
    return "\n".join(x for x in lines if x) or None


def _tool_calls(m: dict[str, Any]) -> list[dict[str, Any]]:
    calls = m.get("toolCalls")
    if not isinstance(calls, list):
        return []
    return [c for c in calls if isinstance(c, dict) and isinstance(c.get("id"), str)]


def _tool_use(call: dict[str, Any], number: int) -> ToolUse:
    args = call.get("args")
    params = args if isinstance(args, dict) else {"args": args}
    return ToolUse(
        id=call["id"],
        name=as_str(call.get("name")) or "?",
        input_json=json_text(params),
        number=number,
        description=as_str(call.get("description")) or as_str(params.get("description")),
        prompt=as_str(params.get("prompt")),
    )


def _tool_result(call: dict[str, Any]) -> ToolResult | None:
    status = STATUS.get(as_str(call.get("status")) or "")
    if status is None and call.get("result") is None:
        return None  # scheduled or running: the result comes on a later line
    result = call.get("result") if call.get("result") is not None else call.get("resultDisplay")
    return ToolResult(
        tool_use_id=call["id"],
        content_json=json_text(result),
        status=status or "completed",
        child_agent_id=as_str(call.get("agentId")),
    )


def _result_text(call: dict[str, Any]) -> str | None:
    display = call.get("resultDisplay")
    if isinstance(display, str) and display:
        return display
    result = call.get("result")
    if isinstance(result, list):
        for part in result:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict) and isinstance(response.get("response"), dict):
                output = response["response"].get("output")
                if isinstance(output, str):
                    return output
    return None


def _usage(tokens: dict[str, Any], key: str) -> Usage:
    """Gemini counts cached tokens inside `input`; thoughts and tool-use prompts come on top."""
    cached = safe_int(tokens.get("cached"))
    return Usage(
        message_id=key,
        request_id=None,
        input_tokens=max(0, safe_int(tokens.get("input")) + safe_int(tokens.get("tool")) - cached),
        output_tokens=safe_int(tokens.get("output")) + safe_int(tokens.get("thoughts")),
        cache_read_tokens=cached,
    )


def _images(obj: Any) -> Iterator[tuple[ImageRef, str]]:
    """The `inlineData` parts of a message record: in its content (the prompt) or in the results of
    its tool calls."""
    if not isinstance(obj, dict):
        return
    places: list[tuple[Any, str, str | None]] = [(obj.get("content"), "prompt", None)]
    for call in obj.get("toolCalls") or [] if isinstance(obj.get("toolCalls"), list) else []:
        if isinstance(call, dict):
            places.append((call.get("result"), "tool result", as_str(call.get("id"))))
    index = 0
    for parts, place, call_id in places:
        for part in parts if isinstance(parts, list) else []:
            inline = part.get("inlineData") if isinstance(part, dict) else None
            if isinstance(inline, dict) and isinstance(inline.get("data"), str):
                data = inline["data"]
                media = as_str(inline.get("mimeType")) or "image"
                yield ImageRef(media, base64_size(data), place, index, call_id), data
                index += 1
