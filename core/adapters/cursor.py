"""Cursor: the IDE's `state.vscdb` databases and the cursor-agent CLI's chats (FORMATS.md §7).

Databases ("database" mode; see `shared.open_sqlite` for how they are opened without writing):
  * global `globalStorage/state.vscdb`, table cursorDiskKV: `composerData:<composer>` (one per
    chat) and `bubbleId:<composer>:<bubble>` (one per message), put in the order of the
    composer's `fullConversationHeadersOnly` (header ids are matched to row keys, then to the
    bubble's own `bubbleId`); bubbles no header names are kept after them. Tool calls come from
    `toolFormerData`, tokens from a bubble's `tokenCount`. Older composers hold their messages
    inline in `conversation`; the global ItemTable's `composer.composerHeaders` (2026) tells a
    composer's workspace and whether it is a subagent;
  * workspace `workspaceStorage/<id>/state.vscdb` (ItemTable): the legacy chat panel
    (`workbench.panel.aichat.view.aichat.chatdata`: tabs of bubbles, one session per tab) and the
    workspace's composer list (`composer.composerData`), which in the inline era (late 2024,
    composerDataVersion 0) holds each composer's messages in `conversation`: one session per
    composer; `workspace.json` beside it names the project folder, which is how composers of
    builds without `workspaceIdentifier` get their project (it is kept whole, a "side" file). Its prompt history
    (`aiService.prompts`, timed by `aiService.generations`) is a session `cursor-prompts:<id>` only
    where nothing else holds the chats (no chat tabs, no composers in the global database);
  * cursor-agent `~/.cursor/chats/<md5(cwd)>/<agent id>/store.db`: the `meta` row (hex JSON) and the
    content-addressed `blobs`, message blobs (JSON) in row order; the chat's folder and start time
    are read from the `meta.json` beside it.
Each row read becomes a key record (the row's key, exact) followed by its value: the exact JSON
bytes as one record, or, for a value that holds a whole conversation (inline composer, chat
tabs), records that tile it — one per message and the bytes between, cut where a tab or composer
ends, so no record holds the fields of two. Offsets run over that
sequence, so `file_bytes` gives back every key and value read, in order. Other cursorDiskKV
families (checkpoints, diffs, request context) are not read.

cursor-agent transcripts (`~/.cursor/projects/<slug>/agent-transcripts/<id>.jsonl`, "lines"
mode, `CursorAgentAdapter`): `{role, message: {content: [...]}}` lines with no ids or times; the
chat's folder and start time are its `chats/<md5(cwd)>/<id>/meta.json`'s. cursor-agent deletes that
folder with the chat, so its `meta.json` is kept whole, a side file of the chat (found beside its
transcript or store.db), and a replay reads it from the archive.
"""

from __future__ import annotations

import glob
import re
import sqlite3
from collections.abc import Callable, Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import orjson

from .base import (
    SNIFF_BYTES,
    Adapter,
    Command,
    FileContext,
    ForkError,
    McpConfig,
    RawRecord,
    Record,
    ResumeTarget,
    SessionInfo,
    SourceRef,
    ToolResult,
    ToolUse,
    Usage,
    parse_iso_ms,
    read_regular,
    safe_int,
)
from .claude import claude_layout
from .shared import (
    Spec,
    app_config_dirs,
    as_bytes,
    as_str,
    element_spans,
    head_of,
    input_text,
    json_text,
    loads,
    open_sqlite,
    parse_record,
    scalar_members,
    sqlite_tables,
    text_bytes,
    wrapped_params,
)
from .walk import walk

AGENT = "cursor"
WORKSPACE_FILE = "workspace.json"
CHAT_META = "meta.json"
CHAT_DATA = "workbench.panel.aichat.view.aichat.chatdata"
ITEM_KEYS = (
    CHAT_DATA,
    "composer.composerData",
    "composer.composerHeaders",
    "aiService.prompts",
    "aiService.generations",
)
CHAT_SPECS: frozenset[Spec] = frozenset({("tabs", "[]", "bubbles", "[]"), ("tabs", "[]", "messages", "[]")})
# each tab too, so its fields written after its messages (`lastSendTime`) are in its own record
TAB_SPECS: frozenset[Spec] = frozenset({("tabs", "[]")})
LIST_SPEC: frozenset[Spec] = frozenset({("[]",)})
# ItemTable rows in reading order: the chat tabs before the prompt history, whose session is made
# only when nothing else holds the chats; the generations (with times) before the prompts (without)
ITEM_ORDER = (
    "composer.composerHeaders",
    "composer.composerData",
    CHAT_DATA,
    "aiService.generations",
    "aiService.prompts",
)
INLINE_SPEC: frozenset[Spec] = frozenset({("conversation", "[]")})
# a workspace's composer list of the inline era (composerDataVersion 0): each composer holds its
# messages in `conversation`; cut at each composer's bounds too, so the bytes of one composer's
# fields are never in the record of another's
WORKSPACE_COMPOSERS: frozenset[Spec] = frozenset({("allComposers", "[]")})
WORKSPACE_INLINE_SPEC: frozenset[Spec] = frozenset({("allComposers", "[]", "conversation", "[]")})
CONVERSATION_OPEN = re.compile(rb'"conversation"\s*:\s*\[\s*$')
# how a value is cut into records: at the bounds of the elements of each set of places
Cuts = tuple[frozenset[Spec], ...]
Row = tuple[bytes, bytes | None, Cuts]
TOOL_STATUS = {
    "completed": "completed",
    "success": "completed",
    "error": "failed",
    "failed": "failed",
    "cancelled": "interrupted",
    "canceled": "interrupted",
    "rejected": "rejected",
    "aborted": "interrupted",
}
USER_QUERY = re.compile(r"^\s*<user_query>\s*(.*?)\s*</user_query>\s*$", re.S)
# cursor-agent 3.x starts a prompt with its local time: `<timestamp>Friday, Sep 4, 2026, 2:21 AM
# (UTC+8)</timestamp>` (the transcripts hold no other time)
TIMESTAMP_TAG = re.compile(r"^\s*<timestamp>(.*?)</timestamp>\s*", re.S)
# what Cursor adds to a turn by itself, written as a user line of its own (a branch's diff the user
# picked with @Branch, attached files, links): context for the model, not something typed
CONTEXT_BLOCK = re.compile(
    r"^\s*<(git_diff_from_branch_to_main|git_diff|git_status|attached_files|external_links|image_files|"
    r"open_and_recently_viewed_files|system_reminder)>"
)
ABSOLUTE = re.compile(r"^(?:/|[A-Za-z]:[\\/])")
TAG_TIME = re.compile(r"^(.*?)\s*\(UTC(?:([+-])(\d{1,2})(?::?(\d\d))?)?\)\s*$")
KEY_RECORD = re.compile(rb"^(composerData|bubbleId|workbench\.|aiService\.|composer\.|meta:|blob:)")
TABS_OPEN = re.compile(rb'"(?:bubbles|messages)"\s*:\s*\[')
TAB_ID = re.compile(rb'"(?:tabId|id)"\s*:\s*"((?:[^"\\]|\\.)*)"')


def cursor_user_dirs() -> list[Path]:
    return [base / "Cursor" / "User" for base in app_config_dirs()]


def cursor_home() -> Path:
    return Path.home() / ".cursor"


def folder_of_uri(uri: Any) -> str | None:
    """`file:///home/me/app` → `/home/me/app` (Windows `file:///c%3A/x` → `c:/x`)."""
    if isinstance(uri, dict):
        uri = uri.get("fsPath") or uri.get("external") or uri.get("path")
    if not isinstance(uri, str) or not uri:
        return None
    if not uri.startswith("file:"):
        return uri
    path = unquote(urlparse(uri).path)
    if re.match(r"^/[A-Za-z]:", path):
        path = path[1:]
    return path or None


# ---------------------------------------------------------------------- the IDE's databases


class CursorTools(Adapter):
    """The tools of Cursor's chats and of cursor-agent (whose sessions are Cursor's too)."""

    edit_tools = frozenset({"edit_file", "search_replace", "str_replace", "multi_edit"})
    write_tools = frozenset({"write", "create_file"})
    read_tools = frozenset({"read_file"})
    shell_tools = frozenset({"run_terminal_cmd"})


class CursorAdapter(CursorTools):
    """Reads Cursor's state.vscdb databases and cursor-agent store.db files."""

    name = AGENT
    mode = "database"

    def mcp_config(self) -> McpConfig:
        """The user's servers, which the editor and cursor-agent both read."""
        return McpConfig(cursor_home() / "mcp.json")

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        raise ForkError(
            "Cursor IDE chats can only be reopened from Cursor's own chat history; no command opens one"
        )

    def __init__(self) -> None:
        self._folders: dict[str, tuple[float, dict[str, str], dict[str, str]]] = {}
        self._composers: dict[str, tuple[int, bool]] = {}

    def default_roots(self) -> list[Path]:
        roots = []
        for user in cursor_user_dirs():
            for p in (user / "globalStorage" / "state.vscdb", user / "workspaceStorage"):
                if p.exists():
                    roots.append(p)
        chats = cursor_home() / "chats"
        if chats.is_dir():
            roots.append(chats)
        return roots or [cursor_user_dirs()[0] / "globalStorage" / "state.vscdb"]

    def claims(self, path: Path, explicit: bool = False) -> bool:
        name = path.name
        if name == WORKSPACE_FILE:
            return _workspace_side(path)
        if name == "state.vscdb" and "Cursor" in path.parts:
            return True
        if name == "store.db" and "chats" in path.parts and ".cursor" in path.parts:
            return True
        if name.endswith(".vscdb"):  # another editor's state database has no cursorDiskKV table
            return _has_table(path, ("cursorDiskKV",) if not explicit else ("cursorDiskKV", "ItemTable"))
        if name.endswith("store.db") or (explicit and path.suffix == ".db"):
            return _has_table(path, ("blobs",)) and (explicit or _has_table(path, ("meta",)))
        return False

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if root.name == WORKSPACE_FILE:
                if _workspace_side(root):
                    yield SourceRef(root, AGENT, "side", root.parent.name)
            elif self.claims(root, explicit=True):
                yield SourceRef(root, AGENT, "database", root.parent.name)
            return
        if not root.is_dir():
            return
        if (root / "User").is_dir():
            root = root / "User"
        for dirpath, dirnames, filenames in walk(root):
            # a User folder also holds file history and every extension's storage: only these matter
            dirnames[:] = sorted(
                d
                for d in dirnames
                if d not in ("History", "logs", "CachedData", "snippets")
                and not (Path(dirpath).name == "globalStorage" and "." in d)
            )
            for fname in filenames:
                path = Path(dirpath) / fname
                if fname.endswith((".vscdb", "store.db")):
                    if self.claims(path):
                        yield SourceRef(path, AGENT, "database", path.parent.name)
                elif fname == WORKSPACE_FILE and _workspace_side(path):
                    yield SourceRef(path, AGENT, "side", path.parent.name)

    side_files = True

    def stat_paths(self, path: Path) -> list[Path]:
        return [] if path.name == WORKSPACE_FILE else [Path(str(path) + "-wal")]

    # ------------------------------------------------------------------ reading rows

    def read_rows(self, path: Path) -> list[RawRecord]:
        """Key and value records of the chat rows (see the module docstring for the order)."""
        out: list[RawRecord] = []
        with open_sqlite(path) as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "blobs" in tables and "meta" in tables:
                rows = _agent_store_rows(conn)
            else:
                rows = _state_rows(conn, tables)
        pos = 0
        for key, value, cuts in rows:
            out.append(RawRecord(pos, len(out) + 1, key, newline=False))
            pos += len(key)
            if value is None:
                continue
            parts = _tile_value(value, cuts) if cuts else [value]
            for part in parts:
                out.append(RawRecord(pos, len(out) + 1, part, newline=False))
                pos += len(part)
        return out

    # ------------------------------------------------------------------ normalize

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        if ctx.kind == "side":  # a workspace's workspace.json: kept whole with the database beside it
            return Record(entry_type="side-file", subtype="workspace", side_file=True)
        st = ctx.state
        if "key" not in st:
            st.update(
                key=None,
                family=None,
                composer=None,
                last={},
                heads={},
                children={},
                tab=None,
                tabs=0,
                meta={},
                agent_last=None,
                n=0,
                first=False,
            )
            st["workspace"] = _workspace_folder(ctx, ctx.path)
            st["db_dir"] = ctx.path.parent.name
            chat = ctx.path.parent  # a cursor-agent chat's folder, `chats/<md5(cwd)>/<agent id>/`
            st["agent_cwd"], st["agent_created"] = _chat_facts(
                ctx, chat.parent.parent, chat.name, glob.escape(chat.parent.name)
            )
        raw = rec.raw
        if KEY_RECORD.match(raw) and raw not in (b"true", b"false", b"null"):
            return self._key(raw.decode("utf-8", "replace"), st)
        family = st["family"]
        obj, error = loads(raw)
        if family == "composer":
            return self._composer_part(obj, raw, ctx, st)
        if family == "bubble":
            cid, bid = st["key"]
            return self._bubble(obj, error, cid, bid, st)
        if family == CHAT_DATA:
            return self._chat_part(obj, raw, st)
        if family == "composer.composerData":
            return self._workspace_composer_part(obj, raw, error, ctx, st)
        if family in ("aiService.generations", "aiService.prompts"):
            return self._prompt_history(family, obj, error, ctx, st)
        if family == "composer.composerHeaders":
            self._headers(obj, st)
            return Record(entry_type="composer-headers", parse_error=error)
        if family == "agent-meta":
            return self._agent_meta(raw, st)
        if family == "agent-blob":
            return self._agent_blob(obj, error, st)
        return Record(entry_type=str(family or "value"), parse_error=error, known=obj is not None)

    def _key(self, key: str, st: dict[str, Any]) -> Record:
        out = Record(entry_type="row-key", subtype=key.split(":", 1)[0])
        st["tab"] = st["ws_composer"] = None
        if key.startswith("composerData:"):
            cid = key.split(":", 1)[1]
            st.update(key=cid, family="composer", composer=cid, first=True)
            st["heads"][cid] = True
            out.session_id = cid
        elif key.startswith("bubbleId:"):
            _, cid, bid = (key.split(":", 2) + ["", ""])[:3]
            st.update(key=(cid, bid), family="bubble")
            out.session_id = cid if cid in st["heads"] else None  # bubbles whose composer row is gone
        elif key.startswith("meta:"):
            st.update(key=key, family="agent-meta")
        elif key.startswith("blob:"):
            st.update(key=key, family="agent-blob")
            out.session_id = st["meta"].get("agentId")
        else:
            st.update(key=key, family=key, tabs=0)
            if key == CHAT_DATA:
                st["chat_tabs"] = True
        if out.session_id:
            out.session = SessionInfo(source=AGENT, external_id=out.session_id)
        return out

    def _headers(self, obj: Any, st: dict[str, Any]) -> None:
        """composer.composerHeaders: each composer's workspace and subagent flag (2026 builds)."""
        items = obj.get("allComposers") if isinstance(obj, dict) else obj
        for head in items if isinstance(items, list) else []:
            if isinstance(head, dict) and isinstance(head.get("composerId"), str):
                st.setdefault("composer_heads", {})[head["composerId"]] = head

    def _composer_part(self, obj: Any, raw: bytes, ctx: FileContext, st: dict[str, Any]) -> Record:
        cid = st["composer"]
        first, st["first"] = st["first"], False
        if first and isinstance(obj, dict):  # the whole value in one record
            children = obj.get("subComposerIds")
            for child in children if isinstance(children, list) else []:
                if isinstance(child, str):
                    st["children"][child] = cid
            out = Record(entry_type="composer", subtype=str(obj.get("_v", "")) or None, session_id=cid)
            self._composer_facts(out, obj, cid, ctx, st)
            return out
        if isinstance(obj, dict):  # a message held inline in `conversation`
            st["n"] += 1
            return self._bubble(obj, None, cid, as_str(obj.get("bubbleId")) or f"i{st['n']}", st)
        # the bytes around inline messages hold the composer's own fields
        out = Record(entry_type="composer-part", session_id=cid, session=self._info(cid, st))
        fields = scalar_members(raw)
        if first or "name" in fields or "createdAt" in fields:
            self._composer_facts(out, fields, cid, ctx, st)
            if not first:
                out.cwd = None
        return out

    def _composer_facts(
        self, out: Record, c: dict[str, Any], cid: str, ctx: FileContext, st: dict[str, Any]
    ) -> None:
        out.session = self._info(cid, st)
        out.timestamp = parse_iso_ms(c.get("createdAt"))
        name = as_str(c.get("name"))
        if name:
            out.content, out.title = name, ("ai-title", name)
            out.subtype, out.entry_type = out.entry_type, "ai-title"
        config = c.get("modelConfig")
        if isinstance(config, dict):
            out.model = as_str(config.get("modelName"))
        workspace = c.get("workspaceIdentifier")
        folder = folder_of_uri(workspace.get("uri") if isinstance(workspace, dict) else None)
        head = st.get("composer_heads", {}).get(cid)
        if folder is None and isinstance(head, dict):
            folder = self._folders_of(ctx)[0].get(str(head.get("workspaceId")))
        out.cwd = folder or self._folders_of(ctx)[1].get(cid)

    def _info(self, cid: str, st: dict[str, Any]) -> SessionInfo:
        info = SessionInfo(source=AGENT, external_id=cid)
        head = st.get("composer_heads", {}).get(cid)
        parent = st["children"].get(cid)
        if parent or (isinstance(head, dict) and head.get("isSubagent")):
            info.kind, info.is_subagent, info.agent_id = "subagent", 1, cid
            info.parent_session_id = parent
            info.agent_type = as_str(head.get("subagentTypeName")) if isinstance(head, dict) else None
        return info

    def _bubble(self, b: Any, error: str | None, cid: str, bid: str, st: dict[str, Any]) -> Record:
        known_composer = cid in st["heads"]
        sid = cid if known_composer else None
        out = Record(
            entry_type="bubble",
            session_id=sid,
            parse_error=error,
            session=self._info(cid, st) if sid else None,
        )
        if not known_composer:
            out.subtype = "no-composer"
        if not isinstance(b, dict):
            out.known = b is None and error is None
            return out
        out.uuid = f"{cid}:{bid}"
        out.parent_uuid = st["last"].get(cid)
        st["last"][cid] = out.uuid
        btype = b.get("type")
        out.timestamp = bubble_time(b)
        info = b.get("modelInfo")
        if isinstance(info, dict):
            out.model = as_str(info.get("modelName"))
        out.request_id = as_str(b.get("requestId"))
        text = as_str(b.get("text")) or ""
        thinking = b.get("thinking")
        out.thinking = as_str(thinking.get("text")) if isinstance(thinking, dict) else as_str(thinking)
        if btype in (1, "user"):
            out.role = "user"
            out.content = text or None
            out.is_prompt = bool(text)
        else:
            out.role = "assistant" if btype in (2, "ai", "assistant") else None
            out.known = out.role is not None
            out.content = text or None
        tool = b.get("toolFormerData")
        if isinstance(tool, dict) and (tool.get("name") or tool.get("tool") is not None):
            self._tool(out, tool, f"{cid}:{bid}")
        out.is_message = bool(out.content or out.thinking or out.tool_uses)
        tokens = b.get("tokenCount")
        if isinstance(tokens, dict) and (
            safe_int(tokens.get("inputTokens")) or safe_int(tokens.get("outputTokens"))
        ):
            out.usage = Usage(
                f"cursor:{cid}:{bid}",
                out.request_id,
                safe_int(tokens.get("inputTokens")),
                safe_int(tokens.get("outputTokens")),
            )
        return out

    def _tool(self, out: Record, tool: dict[str, Any], fallback_id: str) -> None:
        call_id = as_str(tool.get("toolCallId")) or fallback_id
        name = as_str(tool.get("name")) or str(tool.get("tool"))
        params = tool.get("params") if tool.get("params") is not None else tool.get("rawArgs")
        if isinstance(params, str):
            parsed, _ = loads(params.encode())
            params = parsed if isinstance(parsed, dict) else {"args": params}
        if not isinstance(params, dict):
            params = {"args": params}
        out.tool_uses.append(
            ToolUse(call_id, name, json_text(params), description=as_str(params.get("explanation")))
        )
        out.tool_text = f"{name} {input_text(json_text(params))}"
        status = TOOL_STATUS.get(str(tool.get("status") or "").lower())
        result = tool.get("result")
        if status is not None or result is not None:
            out.tool_results.append(ToolResult(call_id, json_text(result), status or "completed"))

    def _workspace_composer_part(
        self, obj: Any, raw: bytes, error: str | None, ctx: FileContext, st: dict[str, Any]
    ) -> Record:
        """A workspace's composer list. In the inline era (composerDataVersion 0) each composer
        holds its messages in `conversation`: one session per composer, its fields in the record
        that opens the conversation, its messages the records after; later lists hold only heads
        (the global database holds the chats) and are one record read for nothing else."""
        cid = st.get("ws_composer")
        if isinstance(obj, dict):
            if cid is None:  # the whole list of heads, or a composer with no message
                return Record(entry_type="composer-head" if "allComposers" not in obj else "composer-list")
            st["n"] += 1
            return self._bubble(obj, error, cid, as_str(obj.get("bubbleId")) or f"i{st['n']}", st)
        opened = CONVERSATION_OPEN.search(raw)
        if opened is None:  # the bytes between messages, or the fields after a conversation
            out = Record(
                entry_type="composer-part", session_id=cid, session=self._info(cid, st) if cid else None
            )
            if cid is not None and raw.lstrip().startswith(b"]"):  # the composer's fields after its messages
                st["ws_composer"] = None  # what follows is no part of it
                fields = scalar_members(raw)
                if "name" in fields or "createdAt" in fields:
                    self._composer_facts(out, fields, cid, ctx, st)
                    out.cwd = None
            return out
        fields = scalar_members(raw[: opened.start()])
        st["ws_composers"] = number = st.get("ws_composers", 0) + 1
        cid = as_str(fields.get("composerId")) or f"{st['db_dir']}#composer{number}"
        st["ws_composer"] = cid
        st["heads"][cid] = True
        st["inline_composers"] = True
        out = Record(entry_type="composer", subtype="inline", session_id=cid)
        self._composer_facts(out, fields, cid, ctx, st)
        out.cwd = out.cwd or st["workspace"]
        return out

    def _chat_part(self, obj: Any, raw: bytes, st: dict[str, Any]) -> Record:
        """The legacy chat panel: tabs of bubbles, one session per tab (`cursor-chat:<tabId>`)."""
        if isinstance(obj, dict):
            sid = st["tab"]
            out = Record(
                entry_type="chat-bubble",
                session_id=sid,
                session=SessionInfo(source=AGENT, external_id=sid) if sid else None,
            )
            st["n"] += 1
            out.uuid = f"{sid}:{as_str(obj.get('id')) or as_str(obj.get('bubbleId')) or st['n']}"
            out.parent_uuid = st["last"].get(sid)
            st["last"][sid] = out.uuid
            kind = obj.get("type") or obj.get("role")
            out.role = "user" if kind == "user" else "assistant" if kind in ("ai", "assistant") else None
            out.known = out.role is not None
            out.content = as_str(obj.get("text")) or as_str(obj.get("rawText")) or as_str(obj.get("content"))
            out.timestamp = parse_iso_ms(obj.get("timestamp") or obj.get("createdAt"))
            out.model = as_str(obj.get("modelType"))
            out.is_message = bool(out.content)
            out.is_prompt = out.role == "user" and out.is_message
            return out
        out = Record(entry_type="chat-part", session_id=st["tab"])
        opened = TABS_OPEN.search(raw)
        if opened is None:
            if st["tab"] is not None and raw.lstrip().startswith(b"]"):
                # the tab's fields written after its messages (`lastSendTime` is): its own
                self._tab_fields(out, scalar_members(raw), st)
                st["tab"] = None  # what follows is no part of it
            return out
        # a tab (cut at its bounds) whose messages open here: named by the id before them
        ids = TAB_ID.findall(raw, 0, opened.start())
        st["tabs"] += 1
        # a tab whose id is written after its messages is named by the workspace and its place
        tab = ids[-1].decode("utf-8", "replace") if ids else f"{st['db_dir']}#{st['tabs']}"
        st["tab"] = f"cursor-chat:{tab}"
        out.session_id = st["tab"]
        out.cwd = st["workspace"]
        self._tab_fields(out, scalar_members(raw), st)
        if not raw.rstrip().endswith(b"["):  # a tab with no message: the whole tab in this record
            st["tab"] = None
        return out

    def _tab_fields(self, out: Record, fields: dict[str, Any], st: dict[str, Any]) -> None:
        """A chat tab's title and time, from the fields before or after its messages."""
        out.session = SessionInfo(source=AGENT, external_id=st["tab"].split(":", 1)[1])
        title = as_str(fields.get("chatTitle")) or as_str(fields.get("title"))
        if title:
            out.content, out.title, out.entry_type = title, ("ai-title", title), "ai-title"
        out.timestamp = parse_iso_ms(fields.get("lastSendTime") or fields.get("createdAt"))

    def _prompt_history(
        self, family: str, obj: Any, error: str | None, ctx: FileContext, st: dict[str, Any]
    ) -> Record:
        """`aiService.generations` and `aiService.prompts`: what a workspace keeps of its prompts (the
        last hundred or so, with the time of each generation). A session of their own only where no
        other record holds the chats: no chat tabs here, no composers in the global database."""
        kind = "generation" if family == "aiService.generations" else "prompt"
        if "prompts_sid" not in st:
            alone = (
                not st.get("chat_tabs") and not st.get("inline_composers") and not self._global_composers(ctx)
            )
            st["prompts_sid"] = f"cursor-prompts:{st['db_dir']}" if alone else None
            st["gen_times"] = {}
        sid = st["prompts_sid"]
        info = SessionInfo(source=AGENT, external_id=st["db_dir"]) if sid else None
        if not isinstance(obj, dict):  # the bytes between elements
            return Record(entry_type=f"{kind}s-part", session_id=sid, session=info)
        out = Record(
            entry_type=kind,
            subtype=as_str(obj.get("type")) or str(obj.get("commandType", "")) or None,
            session_id=sid,
            session=info,
        )
        if kind == "generation":
            out.timestamp = safe_int(obj.get("unixMs")) or None
            text = as_str(obj.get("textDescription"))
            if text and out.timestamp:
                st["gen_times"].setdefault(text, []).append(out.timestamp)
            return out
        text = as_str(obj.get("text"))
        times = st["gen_times"].get(text) if text else None
        out.timestamp = times.pop(0) if times else None
        if sid is None or not text:
            return out
        st["prompts_n"] = number = st.get("prompts_n", 0) + 1
        out.uuid = f"{sid}:{number}"
        out.parent_uuid = st["last"].get(sid)
        st["last"][sid] = out.uuid
        out.role = "user"
        out.content = text
        out.is_message = out.is_prompt = True
        if number == 1:
            out.cwd = st["workspace"]
        return out

    def _global_composers(self, ctx: FileContext) -> bool:
        """Whether the global database of this Cursor install holds composer chats: in a replay,
        whether the archive's copy does (the disk's gone perhaps), where the archive holds one."""
        db_path = ctx.path
        user = (
            db_path.parent.parent if db_path.parent.name == "globalStorage" else db_path.parent.parent.parent
        )
        path = user / "globalStorage" / "state.vscdb"
        if ctx.archived is not None:
            held = ctx.archived(glob.escape(str(path)), b"composerData:")
            if held:  # the archive holds it: whether it holds a composer's row
                return any(held.values())
        try:
            stamp = path.stat().st_mtime_ns
        except OSError:
            return False
        cached = self._composers.get(str(path))
        if cached is not None and cached[0] == stamp:
            return cached[1]
        found = False
        if "cursorDiskKV" in sqlite_tables(path):
            try:
                with open_sqlite(path) as conn:
                    found = (
                        conn.execute(
                            "SELECT 1 FROM cursorDiskKV WHERE key >= 'composerData:' "
                            "AND key < 'composerData;' LIMIT 1"
                        ).fetchone()
                        is not None
                    )
            except sqlite3.Error:
                found = False
        self._composers[str(path)] = (stamp, found)
        return found

    # ------------------------------------------------------------------ cursor-agent store.db

    def _agent_meta(self, raw: bytes, st: dict[str, Any]) -> Record:
        text = raw.decode("ascii", "replace").strip()
        try:
            meta = orjson.loads(bytes.fromhex(text))
        except (ValueError, orjson.JSONDecodeError):
            meta, _ = loads(raw)
        out = Record(entry_type="agent-meta", known=isinstance(meta, dict))
        if isinstance(meta, dict):
            st["meta"] = meta
            sid = as_str(meta.get("agentId"))
            out.session_id = sid
            out.session = SessionInfo(source=AGENT, external_id=sid) if sid else None
            out.model = as_str(meta.get("lastUsedModel"))
            out.timestamp = parse_iso_ms(meta.get("createdAt"))
            name = as_str(meta.get("name"))
            if name and name not in ("New Agent", "New Chat"):
                out.content, out.title, out.entry_type, out.subtype = (
                    name,
                    ("ai-title", name),
                    "ai-title",
                    "agent-meta",
                )
            out.cwd = st["agent_cwd"]
        return out

    def _agent_blob(self, obj: Any, error: str | None, st: dict[str, Any]) -> Record:
        meta = st["meta"] if isinstance(st["meta"], dict) else {}
        # a store with no meta row is still its folder's chat, the folder named by its agent id
        sid = as_str(meta.get("agentId")) or st["db_dir"] or None
        out = Record(
            entry_type="blob",
            session_id=sid,
            session=SessionInfo(source=AGENT, external_id=sid) if sid else None,
        )
        if not meta and not st.get("told"):  # what the meta row would have said, from meta.json
            out.timestamp, out.cwd, st["told"] = st["agent_created"], st["agent_cwd"], True
        if not isinstance(obj, dict) or "role" not in obj:
            out.known = obj is not None
            out.parse_error = None if obj is not None else "not a JSON message (tree node or binary)"
            return out
        st["n"] += 1
        out.uuid = f"{sid}:blob{st['n']}"
        out.parent_uuid = st["agent_last"]
        st["agent_last"] = out.uuid
        _agent_message(out, obj, st)
        return out

    # ------------------------------------------------------------------ project folders

    def _folders_of(self, ctx: FileContext) -> tuple[dict[str, str], dict[str, str]]:
        """(workspace id → folder, composer id → folder) from the workspaceStorage beside this
        database: in a replay as the archive holds it (its workspace.json files, its databases'
        composer lists), the disk's gone perhaps; otherwise, or where the archive holds none of
        its workspace.json files (not read, or not kept then), from the disk."""
        storage = ctx.path.parent.parent / "workspaceStorage"
        if ctx.archived is not None:
            if "archived_folders" not in ctx.state:
                ctx.state["archived_folders"] = _archived_folders(ctx.archived, storage)
            kept: tuple[dict[str, str], dict[str, str]] = ctx.state["archived_folders"]
            if kept[0]:
                return kept
        try:
            stamp = storage.stat().st_mtime
        except OSError:
            return {}, {}
        cached = self._folders.get(str(storage))
        if cached and cached[0] == stamp:
            return cached[1], cached[2]
        by_workspace: dict[str, str] = {}
        by_composer: dict[str, str] = {}
        for ws in sorted(storage.iterdir()):
            try:
                folder = _workspace_json_folder(read_regular(ws / WORKSPACE_FILE))
            except OSError:
                folder = None
            if folder is None:
                continue
            by_workspace[ws.name] = folder
            db = ws / "state.vscdb"
            if not db.is_file():
                continue
            try:
                with open_sqlite(db) as conn:
                    row = conn.execute(
                        "SELECT value FROM ItemTable WHERE key = 'composer.composerData'"
                    ).fetchone()
            except (sqlite3.Error, OSError):
                continue
            for cid in _composer_ids(as_bytes(row[0]) if row else None):
                by_composer.setdefault(cid, folder)
        self._folders[str(storage)] = (stamp, by_workspace, by_composer)
        return by_workspace, by_composer


# 2000-01-01 in unix ms: a bubble's time before it is no wall-clock time (see `bubble_time`)
EARLIEST_MS = 946_684_800_000
# a bubble's `timingInfo` fields, the wall-clock ones first: 1.x builds write `clientStartTime` as
# performance.now() (ms since the window opened), the others as unix ms
TIMING_KEYS = ("clientRpcSendTime", "clientSettleTime", "clientEndTime", "clientStartTime")


def bubble_time(bubble: dict[str, Any]) -> int | None:
    """A bubble's time (unix ms): its `createdAt`, else the first of its `timingInfo` times that is a
    wall-clock time; None when it has none (the composer's own times stand for it)."""
    timing = bubble.get("timingInfo")
    values = [bubble.get("createdAt")] + (
        [timing.get(k) for k in TIMING_KEYS] if isinstance(timing, dict) else []
    )
    for value in values:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < EARLIEST_MS:
            continue  # a count of ms since something else than the epoch, read as seconds by parse_iso_ms
        ms = parse_iso_ms(value)
        if ms is not None and ms >= EARLIEST_MS:
            return ms
    return None


def _meta_json(meta: bytes) -> tuple[str | None, int | None]:
    """(working folder, time the chat was started) from a chat's `meta.json` (`{schemaVersion, cwd,
    createdAtMs, updatedAtMs, hasConversation}`); None for what it does not hold."""
    try:
        data = orjson.loads(meta)
    except orjson.JSONDecodeError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    return as_str(data.get("cwd")), parse_iso_ms(data.get("createdAtMs"))


def chat_meta(path: Path, explicit: bool = False) -> bool:
    """Whether `path` is a cursor-agent chat's `meta.json` (`chats/<md5(cwd)>/<agent id>/meta.json`,
    under `.cursor` unless named on its own): kept whole as a side file of the chat."""
    parts = path.parts
    return (
        path.name == CHAT_META
        and len(parts) >= 4
        and parts[-4] == "chats"
        and (explicit or ".cursor" in parts)
    )


def _chat_facts(
    ctx: FileContext, chats: Path, agent_id: str, hashed: str = "*"
) -> tuple[str | None, int | None]:
    """(working folder, time it was started) of a chat, from the `meta.json` of its folders
    `<chats>/<hashed>/<agent id>/` (`hashed`: the md5 of the chat's folder, a glob). A replay reads
    them as the archive kept them: cursor-agent deletes the folder with the chat. The disk's are read
    otherwise, or where the archive kept none (an archive from before they were kept)."""
    found: list[bytes] = []
    if ctx.kept_with is not None:
        found = [
            data
            for name, data in sorted(ctx.kept_with(agent_id, CHAT_META).items())
            if (chat := Path(name).parent).name == agent_id
            and chat.parent.parent == chats
            and fnmatchcase(chat.parent.name, hashed)
        ]
    if not found:
        for meta in sorted(chats.glob(f"{hashed}/{glob.escape(agent_id)}/{CHAT_META}")):
            try:
                found.append(read_regular(meta))
            except OSError:
                continue
    cwd: str | None = None
    created: int | None = None
    for data in found:
        said, started = _meta_json(data)
        cwd, created = cwd or said, created or started
    return cwd, created


def _store_created(store: Path) -> int | None:
    """When a chat store's chat was started: its `meta` row's `createdAt` (hex JSON)."""
    try:
        with open_sqlite(store) as conn:
            rows = conn.execute("SELECT value FROM meta ORDER BY rowid").fetchall()
    except (sqlite3.Error, OSError):
        return None
    return _created_of_meta([as_bytes(value) for (value,) in rows])


def _created_of_meta(values: list[bytes | None]) -> int | None:
    """The first `createdAt` of a chat store's `meta` rows (hex JSON)."""
    for value in values:
        try:
            meta = orjson.loads(bytes.fromhex((value or b"").decode("ascii", "replace").strip()))
        except (ValueError, orjson.JSONDecodeError):
            continue
        created = parse_iso_ms(meta.get("createdAt")) if isinstance(meta, dict) else None
        if created is not None:
            return created
    return None


def _workspace_folder(ctx: FileContext, db_path: Path) -> str | None:
    """The folder a workspace database belongs to, from the `workspace.json` beside it (a replay's
    as the archive kept it)."""
    try:
        return _workspace_json_folder(ctx.read_beside(db_path.parent / WORKSPACE_FILE))
    except OSError:
        return None


def _workspace_json_folder(data: bytes) -> str | None:
    """The folder a `workspace.json` names (`{"folder": "file:///…"}`, a multi-root `workspace`)."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    return folder_of_uri(obj.get("folder") or obj.get("workspace"))


def _composer_ids(value: bytes | None) -> list[str]:
    """The composers a workspace's composer list (`composer.composerData`) names."""
    data, _ = loads(value or b"")
    heads = data.get("allComposers") if isinstance(data, dict) else None
    return [
        head["composerId"]
        for head in (heads if isinstance(heads, list) else [])
        if isinstance(head, dict) and isinstance(head.get("composerId"), str)
    ]


def _stored_value(records: list[bytes], key: bytes) -> bytes | None:
    """A row's value as a database's stored records give it (its key's record, then the records
    that tile its value up to the next key's), None when no row of that key was read."""
    if key not in records:
        return None
    value = []
    for part in records[records.index(key) + 1 :]:
        if KEY_RECORD.match(part):
            break
        value.append(part)
    return b"".join(value)


def _archived_folders(
    archived: Callable[[str, bytes], dict[str, list[bytes]]], storage: Path
) -> tuple[dict[str, str], dict[str, str]]:
    """(workspace id → folder, composer id → folder) of a workspaceStorage as the archive holds it:
    each workspace's workspace.json, and the composer list of the state.vscdb beside it."""
    by_workspace: dict[str, str] = {}
    by_composer: dict[str, str] = {}
    under = glob.escape(str(storage))
    databases = archived(f"{under}/*/state.vscdb", b"")
    for path, records in sorted(archived(f"{under}/*/{WORKSPACE_FILE}", b"").items()):
        folder = _workspace_json_folder(b"".join(records))
        if folder is None:
            continue
        workspace = Path(path).parent
        by_workspace[workspace.name] = folder
        composers = _stored_value(databases.get(str(workspace / "state.vscdb"), []), b"composer.composerData")
        for cid in _composer_ids(composers):
            by_composer.setdefault(cid, folder)
    return by_workspace, by_composer


def _workspace_side(path: Path) -> bool:
    """Whether `path` is the `workspace.json` of a Cursor workspace (beside its state.vscdb): it names
    the workspace's folder, which its chats are read with; kept as a side file of the archive."""
    return (
        path.name == WORKSPACE_FILE
        and "workspaceStorage" in path.parts
        and "Cursor" in path.parts
        and (path.parent / "state.vscdb").is_file()
    )


def _has_table(path: Path, names: tuple[str, ...]) -> bool:
    tables = sqlite_tables(path)
    return any(n in tables for n in names)


def _tile_value(value: bytes, cuts: Cuts) -> list[bytes]:
    """Records that tile `value` exactly, cut at the start and end of every element found at each
    set of places in `cuts` (an element inside another stays whole: its container is cut outside it)."""
    try:
        orjson.loads(value)
    except orjson.JSONDecodeError:
        return [value]
    bounds = {0, len(value)}
    for specs in cuts:
        for start, end in element_spans(value, specs):
            bounds.update((start, end))
    points = sorted(bounds)
    return [value[a:b] for a, b in zip(points, points[1:], strict=False)]


def _state_rows(conn: sqlite3.Connection, tables: set[str]) -> list[Row]:
    """(key, value, where to cut the value into records) in reading order."""
    rows: list[Row] = []
    if "ItemTable" in tables:
        marks = ", ".join("?" * len(ITEM_KEYS))
        found = {
            k: v
            for k, v in conn.execute(f"SELECT key, value FROM ItemTable WHERE key IN ({marks})", ITEM_KEYS)
        }
        for key in ITEM_ORDER:
            if key in found:
                value = as_bytes(found[key])
                rows.append((text_bytes(key), value, _item_cuts(key, value)))
    if "cursorDiskKV" not in tables:
        return rows
    composers: list[tuple[Any, str, bytes | None]] = []
    for key, value in conn.execute(
        "SELECT key, value FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;' ORDER BY rowid"
    ):
        data = as_bytes(value)
        parsed, _ = loads(data) if data else (None, None)
        created = parsed.get("createdAt") if isinstance(parsed, dict) else None
        composers.append((created if isinstance(created, (int, float)) else float("inf"), key, data))
    bubbles: dict[str, list[tuple[str, bytes | None]]] = {}
    for key, value in conn.execute(
        "SELECT key, value FROM cursorDiskKV WHERE key >= 'bubbleId:' AND key < 'bubbleId;' ORDER BY rowid"
    ):
        parts = key.split(":", 2)
        if len(parts) == 3:
            bubbles.setdefault(parts[1], []).append((parts[2], as_bytes(value)))
    # parents before their subagents: creation time, then key
    for _, key, data in sorted(composers, key=lambda c: (c[0], c[1])):
        cid = key.split(":", 1)[1]
        inline = data is not None and b'"conversation"' in data and _has_inline(data)
        rows.append((text_bytes(key), data, (INLINE_SPEC,) if inline else ()))
        for bid, value in _ordered(data, bubbles.pop(cid, [])):
            rows.append((text_bytes(f"bubbleId:{cid}:{bid}"), value, ()))
    for cid in sorted(bubbles):  # bubbles whose composer row is gone: kept, not attached
        for bid, value in bubbles[cid]:
            rows.append((text_bytes(f"bubbleId:{cid}:{bid}"), value, ()))
    return rows


def _item_cuts(key: str, value: bytes | None) -> Cuts:
    """Where an ItemTable value is cut into records: the chat tabs' messages, the prompt history's
    entries, the messages of a workspace's inline composers (none when its list holds only heads)."""
    if key == CHAT_DATA:
        return (TAB_SPECS, CHAT_SPECS)
    if key.startswith("aiService."):
        return (LIST_SPEC,)
    if key == "composer.composerData" and value is not None and _has_workspace_inline(value):
        return (WORKSPACE_COMPOSERS, WORKSPACE_INLINE_SPEC)
    return ()


def _has_workspace_inline(data: bytes) -> bool:
    """Whether a workspace's composer list holds a composer's messages (the inline era)."""
    parsed, _ = loads(data)
    composers = parsed.get("allComposers") if isinstance(parsed, dict) else None
    return isinstance(composers, list) and any(
        isinstance(c, dict) and isinstance(c.get("conversation"), list) and c["conversation"]
        for c in composers
    )


def _has_inline(data: bytes) -> bool:
    parsed, _ = loads(data)
    return (
        isinstance(parsed, dict)
        and isinstance(parsed.get("conversation"), list)
        and bool(parsed["conversation"])
    )


def _ordered(composer: bytes | None, rows: list[tuple[str, bytes | None]]) -> list[tuple[str, bytes | None]]:
    """A composer's bubbles in header order (by key, then by the bubble's own id), then the rest."""
    parsed, _ = loads(composer) if composer else (None, None)
    headers = parsed.get("fullConversationHeadersOnly") if isinstance(parsed, dict) else None
    if not isinstance(headers, list) or not rows:
        return rows
    by_key = {bid: i for i, (bid, _) in enumerate(rows)}
    own: dict[str, int] = {}
    for i, (_, value) in enumerate(rows):
        b, _ = loads(value) if value else (None, None)
        if isinstance(b, dict) and isinstance(b.get("bubbleId"), str):
            own.setdefault(b["bubbleId"], i)
    order: list[int] = []
    taken: set[int] = set()
    for head in headers:
        hid = head.get("bubbleId") if isinstance(head, dict) else None
        if not isinstance(hid, str):
            continue
        pick = by_key.get(hid) if hid in by_key and by_key[hid] not in taken else own.get(hid)
        if pick is not None and pick not in taken:
            order.append(pick)
            taken.add(pick)
    order += [i for i in range(len(rows)) if i not in taken]
    return [rows[i] for i in order]


def _agent_store_rows(conn: sqlite3.Connection) -> list[Row]:
    rows: list[Row] = []
    for key, value in conn.execute("SELECT key, value FROM meta ORDER BY rowid"):
        rows.append((text_bytes(f"meta:{key}"), as_bytes(value), ()))
    for blob_id, data in conn.execute("SELECT id, data FROM blobs ORDER BY rowid"):
        rows.append((text_bytes(f"blob:{blob_id}"), as_bytes(data), ()))
    return rows


# ---------------------------------------------------------------------- cursor-agent transcripts


# content blocks of cursor-agent's messages: transcripts use Anthropic's names (`tool_use`,
# `tool_result` with `tool_use_id`, `thinking`); the chat stores' blobs use the AI SDK's (`tool-call`
# with `toolCallId`/`toolName`/`args`, `tool-result` with `toolCallId`/`result`, `reasoning`), and
# newer SDK versions `input` and `output` in place of `args` and `result`
CALL_BLOCKS = frozenset({"tool_use", "tool_call", "tool-call"})
RESULT_BLOCKS = frozenset({"tool_result", "tool-result"})
THINKING_BLOCKS = frozenset({"thinking", "reasoning", "redacted_thinking", "redacted-reasoning"})
NOT_TEXT = CALL_BLOCKS | RESULT_BLOCKS | THINKING_BLOCKS


def _agent_message(out: Record, obj: dict[str, Any], st: dict[str, Any]) -> None:
    """A `{role, message: {content}}` line or blob: text, thinking, tool calls, tool results."""
    role = as_str(obj.get("role"))
    inner = obj.get("message")
    message: dict[str, Any] = inner if isinstance(inner, dict) else obj
    content = message.get("content")
    # the chat stores' `tool` messages carry results back to the model, as Claude's user records do
    out.role = "user" if role == "tool" else role
    out.entry_type = role or out.entry_type
    out.known = role in ("user", "assistant", "system", "tool")
    out.model = as_str(obj.get("model"))
    texts: list[str] = []
    thinking: list[str] = []
    results: list[str] = []
    blocks = (
        content
        if isinstance(content, list)
        else [{"type": "text", "text": content}]
        if isinstance(content, str)
        else []
    )
    pending: list[str] = st.setdefault("pending", [])
    for number, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" or (btype not in NOT_TEXT and isinstance(block.get("text"), str)):
            texts.append(as_str(block.get("text")) or "")
        elif btype in THINKING_BLOCKS:
            thinking.append(
                as_str(block.get("thinking"))
                or as_str(block.get("text"))
                or as_str(block.get("reasoning"))
                or ""
            )
        elif btype in CALL_BLOCKS:
            call_id = as_str(block.get("toolCallId")) or as_str(block.get("id")) or f"{out.uuid}:{number}"
            raw_input = block["args"] if "args" in block else block.get("input")
            params = wrapped_params(raw_input, "input")
            out.tool_uses.append(
                ToolUse(
                    call_id,
                    as_str(block.get("toolName")) or as_str(block.get("name")) or "?",
                    json_text(params),
                    number,
                    as_str(params.get("description")),
                    as_str(params.get("prompt")),
                )
            )
            pending.append(call_id)
        elif btype in RESULT_BLOCKS:
            named = as_str(block.get("toolCallId"))
            if named is not None:  # the chat stores name the call they answer
                result_id: str | None = named
            else:
                # transcripts give results an id their calls never had: matched to the oldest open call
                wanted = as_str(block.get("tool_use_id"))
                result_id = wanted if wanted in pending else (pending[0] if pending else wanted)
            if result_id:
                if result_id in pending:
                    pending.remove(result_id)
                body = _result_body(block)
                failed = block.get("is_error") or block.get("isError")
                out.tool_results.append(
                    ToolResult(result_id, json_text(body), "failed" if failed else "completed")
                )
                results.append(_block_text(body))
    text = "\n".join(t for t in texts if t)
    if role == "user":
        stamp = TIMESTAMP_TAG.match(text)
        if stamp:
            text = text[stamp.end() :]
            out.timestamp = out.timestamp or tag_time(stamp.group(1))
        wrapped = USER_QUERY.match(text)
        text = wrapped.group(1) if wrapped else text
        out.is_meta = not wrapped and bool(CONTEXT_BLOCK.match(text))
        out.is_prompt = bool(text) and not out.is_meta
    out.content = text or None
    out.thinking = "\n".join(t for t in thinking if t) or None
    if out.tool_uses:
        out.tool_text = "\n".join(f"{u.name} {input_text(u.input_json)}" for u in out.tool_uses)
    elif results:
        out.tool_text = "\n".join(r for r in results if r) or None
    out.is_message = bool(out.content or out.thinking or out.tool_uses or out.tool_results)


def tag_time(text: str) -> int | None:
    """`Friday, Sep 4, 2026, 2:21 AM (UTC+8)` as unix ms (None for any other shape)."""
    from datetime import datetime, timedelta, timezone

    found = TAG_TIME.match(text.strip())
    if found is None:
        return None
    sign, hours, minutes = found.group(2), int(found.group(3) or 0), int(found.group(4) or 0)
    offset = timedelta(hours=hours, minutes=minutes) * (-1 if sign == "-" else 1)
    for shape in ("%A, %b %d, %Y, %I:%M %p", "%A, %B %d, %Y, %I:%M %p"):
        try:
            local = datetime.strptime(found.group(1), shape)
        except ValueError:
            continue
        return int(local.replace(tzinfo=timezone(offset)).timestamp() * 1000)
    return None


def _result_body(block: dict[str, Any]) -> Any:
    """What a result block says: `content` (transcripts), `result` or `output` (the AI SDK's; a newer
    `output` is `{type: "text" | "json" | …, value}`)."""
    for key in ("content", "result", "output"):
        if key in block:
            body = block[key]
            if key == "output" and isinstance(body, dict) and "value" in body and "type" in body:
                return body["value"]
            return body
    return None


def _block_text(body: Any) -> str:
    if isinstance(body, str):
        return body
    if isinstance(body, list):
        return "\n".join(b["text"] for b in body if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def looks_like_cursor_agent(head: bytes) -> bool:
    """Top-level `role` + `message` lines (or Cursor's bare error lines), with none of Claude's ids."""
    for line in head.split(b"\n")[:10]:
        obj, _ = parse_record(line)
        if not isinstance(obj, dict) or "uuid" in obj or "sessionId" in obj or "parentUuid" in obj:
            continue
        if isinstance(obj.get("role"), str) and isinstance(obj.get("message"), dict):
            return True
        if obj.get("type") == "error" and isinstance(obj.get("error"), str) and len(obj) == 2:
            return True
    return False


class CursorAgentAdapter(CursorTools):
    """cursor-agent's JSONL transcripts; sessions get `source = cursor` like the IDE's."""

    name = "cursor-agent"
    mode = "lines"
    program = "agent"
    fork_style = "whole-session-resume"
    resumes_own_sessions = True  # shown as Cursor's, resumed by `agent --resume`, not by the IDE

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        if fork:
            raise ForkError(
                "cursor-agent has no fork; `threadloom resume` gives the command that resumes the chat"
            )
        return Command([self.program, "--resume", self.checked_id(target.external_id)])

    def default_roots(self) -> list[Path]:
        return [cursor_home() / "projects"]

    def claims(self, path: Path, explicit: bool = False) -> bool:
        if path.name == CHAT_META:
            return chat_meta(path, explicit)
        if not path.name.endswith(".jsonl"):
            return False
        if "agent-transcripts" in path.parts:
            return True
        stem = path.name[: -len(".jsonl")]
        if not explicit and (claude_layout(path) or stem.startswith("rollout-") or stem == "history"):
            return False  # other agents' files: never opened on a walk
        return looks_like_cursor_agent(head_of(path, SNIFF_BYTES))

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if root.name == CHAT_META:
                if chat_meta(root, explicit=True):
                    yield SourceRef(root, self.name, "side", root.parent.name)
            elif self.claims(root, explicit=True):
                yield SourceRef(root, self.name, "transcript", _slug(root))
                yield from self._chat_metas(root)
            return
        if not root.is_dir():
            return
        for dirpath, dirnames, filenames in walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in (".git", "node_modules"))
            for fname in sorted(filenames):
                if fname.endswith(".jsonl"):
                    path = Path(dirpath) / fname
                    if self.claims(path):
                        yield SourceRef(path, self.name, "transcript", _slug(path))
                        yield from self._chat_metas(path)
                elif fname == CHAT_META and chat_meta(path := Path(dirpath) / fname):
                    yield SourceRef(path, self.name, "side", path.parent.name)

    def _chat_metas(self, transcript: Path) -> Iterator[SourceRef]:
        """The `meta.json` of a transcript's chat (`<home>/chats/*/<id>/`), which it is read with:
        kept whole beside it, a side file of the chat, found wherever the walk began."""
        home = _agent_home(transcript)
        if home is None or transcript.parent.name == "subagents":  # its chat is its parent's
            return
        sid = transcript.name[: -len(".jsonl")]
        for meta in sorted((home / "chats").glob(f"*/{glob.escape(sid)}/{CHAT_META}")):
            if meta.is_file():
                yield SourceRef(meta, self.name, "side", sid)

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        if ctx.kind == "side":  # a chat's meta.json: kept whole, read with the chat's transcript
            return Record(
                entry_type="side-file", subtype="chat-meta", session_id=ctx.path.parent.name, side_file=True
            )
        st = ctx.state
        if "sid" not in st:
            self._start(ctx, rec.offset)
        return self._line(rec, st)

    def _start(self, ctx: FileContext, offset: int) -> None:
        st = ctx.state
        path = ctx.path
        st.update(sid=path.name[: -len(".jsonl")], parent=None, pending=[], cwd=None, first=True)
        if path.parent.name == "subagents":
            st["parent"] = path.parent.parent.name
        st["cwd"], st["created"] = _agent_chat(ctx, st["parent"] or st["sid"])
        # without its chat's meta.json, the folder its project is named after (`projects/<slug>`)
        # is told by the first path a call names that lies in it
        st["slug"] = ctx.project_key if "agent-transcripts" in path.parts else None
        if offset > 0:  # an append read on its own: replay the earlier lines for the open tool calls
            try:
                data = read_regular(path, offset)
            except OSError:
                return
            for n, line in enumerate(data.split(b"\n")[:-1], 1):
                self._line(RawRecord(0, n, line), st)

    def _line(self, rec: RawRecord, st: dict[str, Any]) -> Record:
        sid = st["sid"]
        info = SessionInfo(source=AGENT, external_id=sid)
        if st["parent"]:
            info.kind, info.is_subagent, info.parent_session_id, info.agent_id = (
                "subagent",
                1,
                st["parent"],
                sid,
            )
        out = Record(
            session_id=sid,
            session=info,
            uuid=f"{sid}:{rec.line_number}",
            parent_uuid=f"{sid}:{rec.line_number - 1}" if rec.line_number > 1 else None,
        )
        first = st["first"]
        if first:
            out.cwd = st["cwd"]
            st["first"] = False
        obj, error = parse_record(rec.raw)
        out.parse_error = error
        if not isinstance(obj, dict):
            out.entry_type = "invalid" if error else "blank"
            out.known = False
            out.timestamp = st["created"] if first else None
            return out
        if isinstance(obj.get("role"), str):
            _agent_message(out, obj, st)
            if first and out.timestamp is None:  # when its chat was started, if its store says
                out.timestamp = st["created"]
            if st["cwd"] is None and st["slug"] and out.tool_uses:
                st["cwd"] = out.cwd = _folder_of_slug(st["slug"], out.tool_uses)
            return out
        out.entry_type = as_str(obj.get("type")) or "unknown"
        out.known = out.entry_type in ("error", "turn_ended")
        if out.entry_type == "error":
            out.role, out.is_message = "system", True
            out.content = as_str(obj.get("error")) or json_text(obj.get("error"))
        return out


def _slug(path: Path) -> str | None:
    parts = path.parts
    if "agent-transcripts" in parts:
        i = parts.index("agent-transcripts")
        return parts[i - 1] if i >= 1 else None
    return path.parent.name or None


def slug_of(folder: str) -> str:
    """A folder as cursor-agent names its project (`C:\\Users\\me\\my-app` → `c-Users-me-my-app`):
    each run of other characters than letters and digits a dash, none at the ends."""
    return re.sub(r"[^A-Za-z0-9]+", "-", folder).strip("-")


def _folder_of_slug(slug: str, calls: list[ToolUse]) -> str | None:
    """The folder named `slug` that a path in these calls' inputs lies in (as written); None when
    no path does. Only a folder whose name gives back the slug itself is taken: the slug alone
    cannot tell `a-b` from `a/b`. The shortest such: a folder below it named by punctuation alone
    (`!`, `_`) gives back the same slug, and is a folder of the project, not the project."""
    wanted = slug.lower()
    for use in calls:
        try:
            params = orjson.loads(use.input_json)
        except orjson.JSONDecodeError:
            continue
        values = params.values() if isinstance(params, dict) else ()
        for value in values:
            if not isinstance(value, str) or not ABSOLUTE.match(value) or len(value) > 4096:
                continue
            sep = "\\" if value[1:3] == ":\\" else "/"
            parts = value.split(sep)
            for end in range(1, len(parts) + 1):
                folder = sep.join(parts[:end])
                if slug_of(folder).lower() == wanted:
                    return folder
    return None


def _agent_home(path: Path) -> Path | None:
    """The cursor-agent folder a transcript lies in: `<home>/projects/<slug>/agent-transcripts/…`."""
    parts = path.parts
    if "agent-transcripts" not in parts or parts.index("agent-transcripts") < 3:
        return None
    return Path(*parts[: parts.index("agent-transcripts") - 2])


def _agent_chat(ctx: FileContext, agent_id: str) -> tuple[str | None, int | None]:
    """(working folder, time it was started) of a transcript's chat, from what cursor-agent keeps
    of it in `~/.cursor/chats/<md5(cwd)>/<agent id>/`: `meta.json`, else for the time the chat
    store beside it (`store.db`, read where it is on disk). The transcript holds neither (but 3.x
    prompts' own times)."""
    home = _agent_home(ctx.path)
    if home is None:
        return None, None
    cwd, created = _chat_facts(ctx, home / "chats", agent_id)
    if created is None and ctx.archived is not None:  # a replay's: the chat store as the archive holds it
        stores = ctx.archived(f"{glob.escape(str(home / 'chats'))}/*/{glob.escape(agent_id)}/store.db", b"")
        for _, records in sorted(stores.items()):
            created = _created_of_meta(
                [_stored_value(records, key) for key in records if key.startswith(b"meta:")]
            )
            if created is not None:
                return cwd, created
    if created is None:
        for store in sorted((home / "chats").glob(f"*/{glob.escape(agent_id)}/store.db")):
            created = _store_created(store)
            if created is not None:
                break
    return cwd, created
