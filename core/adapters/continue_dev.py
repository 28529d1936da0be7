"""Continue (continuedev/continue: the VS Code / JetBrains extension and the `cn` CLI) sessions.

Where: `$CONTINUE_GLOBAL_DIR/sessions/` (`~/.continue` by default), one `<session id>.json` per
session, rewritten whole on every save (a "document" source), and `sessions.json`, the list of
sessions (`[{sessionId, title, dateCreated (ms since 1970, as a string), workspaceDirectory,
messageCount}]`). Checked against continuedev/continue d0a3c0b6 (2026-06-18): `core/util/history.ts`
(`HistoryManager.save`, which writes the keys in this order), `core/util/paths.ts`, `core/index.d.ts`
(`Session`, `ChatHistoryItem`, `ChatMessage`, `ToolCallState`, `Usage`), `core/tools/definitions/`,
and the CLI's `extensions/cli/src/session.ts`, `tools/`, `index.ts`.

A session file: `{sessionId, title, workspaceDirectory (a folder, or a file:// URI from the IDE),
history: [ChatHistoryItem], mode?, chatModelTitle?, usage? (the session's running totals with
totalCost)}`, pretty-printed. It is cut into one record per history item, one for `usage`, and the
bytes between (which hold the header's fields). A ChatHistoryItem: `{message: {role: user |
assistant | thinking | system | tool, content: str | [{type: text, text} | {type: imageUrl, …}],
toolCalls?: [{id, type, function {name, arguments (JSON text)}}], usage?, toolCallId?},
contextItems, editorState?, promptLogs?, toolCallStates?: [{toolCallId, toolCall, status, parsedArgs,
output: [ContextItem]}], reasoning?: {text, startAt, endAt}, conversationSummary?}`. The items carry
no ids and no times (a reasoning's `startAt` is the only one): an item's id is its place in the
history, the session's start is `dateCreated` in `sessions.json`.

The IDE keeps a call's output in the assistant item's `toolCallStates`; the CLI also writes `tool`
messages: a call's result is taken from whichever comes first.

Resume: the CLI takes a session by id only as a copy, `cn --fork ID` (`cn --resume` reopens the
newest session of the folder), which reads the IDE's sessions too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from .base import (
    BOM,
    UUID,
    Adapter,
    Command,
    FileContext,
    RawRecord,
    Record,
    ResumeTarget,
    SessionInfo,
    SourceRef,
    ToolResult,
    ToolUse,
    Usage,
    epoch_ms,
    recorded_cost,
    safe_int,
)
from .edits import RESTORE, FileEdit, string_param
from .shared import (
    Spec,
    as_dict,
    as_list,
    as_str,
    head_of,
    input_text,
    json_text,
    loads,
    parse_document,
    scalar_members,
    tile,
)
from .walk import walk

AGENT = "continue"
INDEX = "sessions.json"
SPECS: frozenset[Spec] = frozenset({("history", "[]"), ("usage",)})
INDEX_SPECS: frozenset[Spec] = frozenset({("[]",)})
ROLES = frozenset({"user", "assistant", "thinking", "system", "tool"})
NEW_SESSION_TITLE = "New Session"  # Continue's title until one is generated
STATUS = {"done": "completed", "errored": "failed", "canceled": "interrupted"}
# a session file starts with its id (HistoryManager.save writes sessionId, title, workspaceDirectory,
# history in that order)
_HEAD = re.compile(rb'^\s*\{\s*"sessionId"\s*:\s*"[^"]*"\s*,\s*"title"\s*:')


def continue_home() -> Path:
    value = os.environ.get("CONTINUE_GLOBAL_DIR")
    return Path(value).expanduser() if value else Path.home() / ".continue"


def folder_of(value: Any) -> str | None:
    """`workspaceDirectory` as a folder: the IDE writes a `file://` URI, the CLI a path."""
    if not isinstance(value, str) or not value:
        return None
    if not value.startswith("file:"):
        return value
    path = unquote(urlparse(value).path)
    if re.match(r"^/[A-Za-z]:", path):
        path = path[1:]
    return path or None


def looks_like_session(head: bytes) -> bool:
    head = head.removeprefix(BOM)
    return bool(_HEAD.match(head)) and b'"workspaceDirectory"' in head and b'"history"' in head


def looks_like_index(head: bytes) -> bool:
    text = head.removeprefix(BOM).lstrip()
    if not text.startswith(b"["):
        return False
    rest = text[1:].lstrip()
    return rest.startswith(b"]") or (rest.startswith(b"{") and b'"sessionId"' in rest[:400])


class ContinueAdapter(Adapter):
    """Reads Continue's session files and its list of sessions; see the module docstring."""

    name = AGENT
    env_vars = ("CONTINUE_GLOBAL_DIR",)
    mode = "document"
    display_name = "Continue"
    program = "cn"
    id_shape = (UUID, "a UUID")
    fork_style = "whole-session-copy"
    # the IDE's tools, then the CLI's
    edit_tools = frozenset(
        {"edit_existing_file", "single_find_and_replace", "multi_edit", "Edit", "MultiEdit"}
    )
    write_tools = frozenset({"create_new_file", "Write"})
    read_tools = frozenset({"read_file", "read_file_range", "read_currently_open_file", "Read"})
    shell_tools = frozenset({"run_terminal_command", "Bash"})
    todo_tools = frozenset({"Checklist"})

    def default_roots(self) -> list[Path]:
        return [continue_home() / "sessions"]

    def claims(self, path: Path) -> bool:
        if path.suffix != ".json" or "kiro.kiroagent" in path.parts:  # Kiro's IDE writes this shape too
            return False
        if path.name == INDEX:
            return looks_like_index(head_of(path, 4096))
        return looks_like_session(head_of(path, 4096))

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root):
                yield SourceRef(root, AGENT, "document", root.parent.name)
            return
        for dirpath, dirnames, filenames in walk(root):
            dirnames.sort()
            # the list last: a session is made by its own file, the list only dates it
            for fname in sorted(filenames, key=lambda n: (n == INDEX, n)):
                if fname.endswith(".json"):
                    path = Path(dirpath) / fname
                    if self.claims(path):
                        yield SourceRef(path, AGENT, "document", path.parent.name)

    def split(self, data: bytes) -> list[RawRecord]:
        doc = parse_document(data)
        return tile(data, INDEX_SPECS if isinstance(doc, list) else SPECS)

    # ------------------------------------------------------------------ records

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        st = ctx.state
        if ctx.path.name == INDEX:
            return self._listed(rec)
        if "sid" not in st:
            st.update(sid=ctx.path.stem, n=0, last=None, resolved=set(), usage=False, info=None)
        obj, error = loads(rec.raw)
        if obj is None:  # the bytes around the items: the header's and the trailer's fields
            return self._between(rec.raw, st)
        if not isinstance(obj, dict):
            return Record(entry_type="unknown", known=False, parse_error=error, session_id=st["sid"])
        if "message" in obj:
            return self._item(obj, st)
        if "totalCost" in obj or "promptTokens" in obj or "completionTokens" in obj:
            return self._session_usage(obj, st)
        return Record(entry_type="unknown", known=False, session_id=st["sid"], session=self._info(st))

    def _info(self, st: dict[str, Any]) -> SessionInfo:
        if st["info"] is None:
            st["info"] = SessionInfo(source=AGENT, external_id=st["sid"])
        info: SessionInfo = st["info"]
        return info

    def _between(self, raw: bytes, st: dict[str, Any]) -> Record:
        fields = scalar_members(raw)
        sid = as_str(fields.get("sessionId"))
        if sid and st["n"] == 0 and st["info"] is None:
            st["sid"] = sid
        out = Record(entry_type="json-gap", session_id=st["sid"], session=self._info(st))
        out.cwd = folder_of(fields.get("workspaceDirectory"))
        out.model = as_str(fields.get("chatModelTitle"))
        title = as_str(fields.get("title"))
        if title and title != NEW_SESSION_TITLE:
            out.entry_type, out.content, out.title = "ai-title", title, ("ai-title", title)
        return out

    def _item(self, item: dict[str, Any], st: dict[str, Any]) -> Record:
        sid = st["sid"]
        message = as_dict(item.get("message"))
        role = as_str(message.get("role"))
        st["n"] += 1
        out = Record(
            entry_type=role or "item",
            known=role in ROLES,
            session_id=sid,
            session=self._info(st),
            uuid=f"{sid}:{st['n']}",
            parent_uuid=st["last"],
        )
        st["last"] = out.uuid
        reasoning = as_dict(item.get("reasoning"))
        out.timestamp = epoch_ms(reasoning.get("startAt"))
        text = _text(message.get("content"))
        summary = as_str(item.get("conversationSummary"))
        if summary:
            out.is_compaction = True
        if role == "user":
            out.role, out.content = "user", text
            out.is_message = out.is_prompt = text is not None
        elif role == "assistant":
            out.role, out.content, out.message_id = "assistant", text, out.uuid
            usage = as_dict(message.get("usage"))
            out.model = _model_of(item) or as_str(usage.get("model"))
            out.thinking = as_str(reasoning.get("text")) or None
            self._calls(out, message, item, st)
            if usage:
                st["usage"] = True
                out.usage = _usage(f"{AGENT}:{out.uuid}", usage)
            out.is_message = bool(text or out.thinking or out.tool_uses)
        elif role == "thinking":
            out.role, out.thinking, out.message_id = "assistant", text, out.uuid
            self._calls(out, message, item, st)
            out.is_message = bool(text or out.tool_uses)
        elif role == "tool":
            out.role = "user"
            call = as_str(message.get("toolCallId")) or ""
            if call not in st["resolved"]:
                st["resolved"].add(call)
                out.tool_results.append(ToolResult(call, json_text(message.get("content"))))
            out.tool_text = text
        elif role == "system":
            out.role, out.content, out.is_meta = "system", text, True
        return out

    def _calls(self, out: Record, message: dict[str, Any], item: dict[str, Any], st: dict[str, Any]) -> None:
        states = {
            as_str(s.get("toolCallId")) or as_str(as_dict(s.get("toolCall")).get("id")): s
            for s in map(as_dict, as_list(item.get("toolCallStates")))
        }
        calls = [as_dict(c) for c in as_list(message.get("toolCalls"))]
        named = {as_str(c.get("id")) for c in calls}
        # a state whose call the message does not list (older saves) is a call too
        calls += [as_dict(s.get("toolCall")) | {"id": k} for k, s in states.items() if k and k not in named]
        texts: list[str] = []
        for number, call in enumerate(calls):
            function = as_dict(call.get("function"))
            cid = as_str(call.get("id")) or f"{out.uuid}:{number}"
            state = states.get(cid, {})
            params: Any = state.get("parsedArgs")
            if not isinstance(params, dict):
                params, _ = loads(str(function.get("arguments") or "").encode())
            params = params if isinstance(params, dict) else {"arguments": function.get("arguments")}
            use = ToolUse(cid, as_str(function.get("name")) or "?", json_text(params), number)
            out.tool_uses.append(use)
            texts.append(f"{use.name} {input_text(use.input_json)}")
            status = STATUS.get(as_str(state.get("status")) or "")
            if status and cid not in st["resolved"]:
                st["resolved"].add(cid)
                body = state.get("output")
                out.tool_results.append(ToolResult(cid, json_text(body), status))
                texts.extend(t for t in (as_str(as_dict(o).get("content")) for o in as_list(body)) if t)
        out.tool_text = "\n".join(texts) or None

    def _session_usage(self, obj: dict[str, Any], st: dict[str, Any]) -> Record:
        """The session's totals: counted only when no message has its own (they would count twice)."""
        out = Record(entry_type="usage", session_id=st["sid"], session=self._info(st))
        if not st["usage"]:
            out.usage = _usage(f"{AGENT}:session:{st['sid']}", obj)
            out.usage.cost_usd = recorded_cost(obj.get("totalCost"))
        return out

    def _listed(self, rec: RawRecord) -> Record:
        """An entry of sessions.json: when the session was created, its folder and title."""
        obj, error = loads(rec.raw)
        if not isinstance(obj, dict):
            return Record(entry_type="json-gap" if obj is None else "unknown", known=obj is None)
        sid = as_str(obj.get("sessionId"))
        if not sid:
            return Record(entry_type="listed", known=False, parse_error=error)
        created = obj.get("dateCreated")
        if isinstance(created, str) and created.isdigit():
            created = int(created)
        out = Record(
            entry_type="listed",
            session_id=sid,
            session=SessionInfo(source=AGENT, external_id=sid),
            timestamp=epoch_ms(created),
            cwd=folder_of(obj.get("workspaceDirectory")),
        )
        return out

    # ------------------------------------------------------------------ capabilities

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """Continue's tools name the file `filepath`; `edit_existing_file` gives a sketch of the
        change (`changes`, with "existing code" markers), which is no exact diff."""
        path = string_param(params, ("filepath", "file_path"))
        if path is None:
            return super().file_edits(name, params, result)
        if name in ("multi_edit", "MultiEdit"):
            strings: list[tuple[str, str, bool]] = []
            for one in map(as_dict, as_list(params.get("edits"))):
                old, new = as_str(one.get("old_string")), as_str(one.get("new_string"))
                if old is not None and new is not None:
                    strings.append((old, new, one.get("replace_all") is True))
            edit = FileEdit(path, name, strings=strings)
            edit.why = "the records hold the replaced texts but not the file around them" + RESTORE
            return [edit]
        if name == "edit_existing_file":
            edit = FileEdit(path, name)
            edit.why = "edit_existing_file gives a sketch of the change, not the texts it replaced" + RESTORE
            return [edit]
        return super().file_edits(name, {**params, "file_path": path}, result)

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """`cn --fork ID`: the CLI opens a session by id only as a copy of it."""
        notes = (
            []
            if fork
            else [
                "Continue's CLI opens a session by id only as a copy (`cn --fork`); `cn --resume` reopens the newest one"
            ]
        )
        return Command([self.program, "--fork", self.checked_id(target.external_id)], notes=notes)


def _model_of(item: dict[str, Any]) -> str | None:
    """The model an assistant item came from, by its prompt log (`promptLogs[].modelTitle`, else
    `completionOptions.model`): a session saved without `chatModelTitle` names it nowhere else."""
    for log in reversed([as_dict(one) for one in as_list(item.get("promptLogs"))]):
        model = as_str(log.get("modelTitle")) or as_str(as_dict(log.get("completionOptions")).get("model"))
        if model:
            return model
    return None


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content or None
    parts = [
        p["text"]
        for p in map(as_dict, as_list(content))
        if p.get("type") == "text" and isinstance(p.get("text"), str)
    ]
    return "\n".join(p for p in parts if p) or None


def _usage(key: str, usage: dict[str, Any]) -> Usage:
    """Continue's `Usage`: `promptTokens` counts cached tokens in OpenAI's answers (no
    `cacheWriteTokens` then) and leaves them out in Anthropic's (which sets it). `cn` of 2026 keeps
    a reply's usage as the provider sent it, in snake_case (`prompt_tokens`, `cached_tokens`)."""
    details = as_dict(usage.get("promptTokensDetails") or usage.get("prompt_tokens_details"))
    prompt = safe_int(usage.get("promptTokens", usage.get("prompt_tokens")))
    cached = safe_int(details.get("cachedTokens", details.get("cached_tokens")))
    if "cacheWriteTokens" not in details:
        prompt = max(0, prompt - cached)
    return Usage(
        key,
        None,
        input_tokens=prompt,
        output_tokens=safe_int(usage.get("completionTokens", usage.get("completion_tokens"))),
        cache_creation_tokens=safe_int(details.get("cacheWriteTokens")),
        cache_read_tokens=cached,
    )
