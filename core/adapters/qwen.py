"""Qwen Code (a Gemini CLI fork) chat recordings.

Where: `~/.qwen/projects/<encoded cwd>/chats/<session id>.jsonl` (JSONL since qwen-code #1100);
`--source` folders at any depth (`.qwen` backups). Checked against qwen-code's
`packages/core/src/services/chatRecordingService.ts` (the `ChatRecord` type).

One record a line, Claude Code's envelope with Gemini's content: `uuid`, `parentUuid` (a tree, for
branching), `sessionId`, `timestamp`, `type` (`user` | `assistant` | `tool_result` | `system`),
`subtype` (chat_compression, slash_command, custom_title, ui_telemetry, … kept as events), `cwd`,
`version`, `gitBranch`, and `message`, a Gemini `Content` (`role` user/model, `parts`: `text`,
`thought: true` text, `functionCall {id, name, args}`, `functionResponse {id, name, response}`).
An assistant record carries `model` and `usageMetadata` (promptTokenCount with
cachedContentTokenCount inside it, candidatesTokenCount, thoughtsTokenCount); a tool result
carries `toolCallResult` (callId, status success/error/cancelled, resultDisplay: for an edit the
file before and after). Subagent records are sidechains (`isSidechain`, `agentId`).

Before its JSONL (2025), Qwen Code kept each chat as Gemini CLI's JSON era did, its fork's format:
`~/.qwen/tmp/<sha256 of the project's folder>/chats/session-<time>-<id8>.json`, one document
`{sessionId, projectHash, startTime, lastUpdated, messages}` rewritten whole on every message, its
model's messages typed "qwen" where Gemini's say "gemini". Read by the Gemini reader with Qwen's
names (`QwenJsonChats`): messages by id, thoughts, tool calls with their results, tokens, model. The
project's folder is the one whose hash names its folder: `.project_root` when there is one, else
the folder a JSONL session of Qwen Code's ran in (`cwd`), matched by its hash.

Resume: `qwen --resume <session id>` from the session's folder (its project's sessions). It looks
for `<id>.jsonl` in the project's `chats` folder only (qwen-code's SessionService), so a chat of the
JSON era cannot be resumed: refused with that reason.
"""

from __future__ import annotations

import glob
import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .base import (
    SNIFF_BYTES,
    UUID,
    Adapter,
    Command,
    FileContext,
    ForkError,
    MessageExtras,
    RawRecord,
    Record,
    ResumeTarget,
    SessionInfo,
    SourceRef,
    ToolResult,
    ToolUse,
    Usage,
    parse_iso_ms,
    safe_int,
)
from .claude import looks_like_qwen
from .edits import FileEdit
from .gemini import GeminiAdapter, qwen_json_chat
from .shared import head_of, json_text, parse_record
from .walk import walk

AGENT = "qwen-code"
STATUS = {"success": "completed", "error": "failed", "cancelled": "interrupted"}
TITLE_SUBTYPES = {"custom_title": "custom-title"}


def qwen_home() -> Path:
    return Path.home() / ".qwen"


class QwenJsonChats(GeminiAdapter):
    """Qwen Code's chats of its JSON era, read as Gemini CLI's of the same format are: only the
    agent's name and its model's message type differ. Used by `QwenAdapter`, never listed itself."""

    name = AGENT
    reply_type = "qwen"
    message_types = frozenset({"user", "qwen"})

    def _known_roots(self, ctx: FileContext) -> dict[str, str]:
        """sha256(folder) → folder for the folders Qwen Code's JSONL sessions ran in (the `cwd` of
        a project's session), beside `tmp/`: Qwen Code named a project's `tmp` folder by that hash
        and kept no registry of them. A replay reads the sessions as the archive holds them (the
        disk's gone perhaps), the disk's where it holds none."""
        home = next((parent.parent for parent in ctx.path.parents if parent.name == "tmp"), None)
        if home is None:
            return {}
        projects = home / "projects"
        if ctx.archived is not None:
            if "known_roots" not in ctx.state:
                ctx.state["known_roots"] = _archived_roots(ctx.archived, projects)
            kept: dict[str, str] = ctx.state["known_roots"]
            if kept:
                return kept
        try:
            mtime = projects.stat().st_mtime
            cached = self._roots_cache.get(str(projects))
            if cached and cached[0] == mtime:
                return cached[1]
            folders = sorted(p for p in projects.iterdir() if p.is_dir())
        except OSError:
            return {}
        mapping: dict[str, str] = {}
        for folder in folders:
            cwd = _session_folder(folder / "chats")
            if cwd:
                mapping[hashlib.sha256(cwd.encode()).hexdigest()] = cwd
        self._roots_cache[str(projects)] = (mtime, mapping)
        return mapping


def _source(path: Path) -> SourceRef:
    """A chat found; one of the JSON era is rewritten whole, read as a document its messages are
    cut from (`QwenAdapter.split`)."""
    kind = "document" if path.name.endswith(".json") else "transcript"
    return SourceRef(path, AGENT, kind, path.parent.parent.name)


def _session_folder(chats: Path) -> str | None:
    """The folder the first readable JSONL session in `chats` ran in (its first record's `cwd`)."""
    try:
        names = sorted(p for p in chats.iterdir() if p.name.endswith(".jsonl"))
    except OSError:
        return None
    for chat in names[:FOLDER_TOLD_BY]:
        cwd = _cwd_of(head_of(chat, SNIFF_BYTES).split(b"\n", 1)[0])
        if cwd:
            return cwd
    return None


# how many of a project's sessions are looked at for the folder it ran in
FOLDER_TOLD_BY = 5


def _cwd_of(first: bytes) -> str | None:
    """The folder a JSONL session ran in, from its first record's `cwd`."""
    obj, _ = parse_record(first.rstrip(b"\r\n"))
    if isinstance(obj, dict) and isinstance(obj.get("cwd"), str) and obj["cwd"]:
        return str(obj["cwd"])
    return None


def _archived_roots(
    archived: Callable[[str, bytes], dict[str, list[bytes]]], projects: Path
) -> dict[str, str]:
    """`QwenJsonChats._known_roots` from the JSONL sessions as the archive holds them (the first
    record of each, read no further)."""
    firsts: dict[str, list[bytes]] = {}
    for name, records in sorted(archived(f"{glob.escape(str(projects))}/*/chats/*.jsonl", b"{").items()):
        firsts.setdefault(Path(name).parent.parent.name, []).append(records[0] if records else b"")
    mapping: dict[str, str] = {}
    for _, heads in sorted(firsts.items()):
        cwd = next(filter(None, map(_cwd_of, heads[:FOLDER_TOLD_BY])), None)
        if cwd:
            mapping[hashlib.sha256(cwd.encode()).hexdigest()] = cwd
    return mapping


class QwenAdapter(Adapter):
    """Reads Qwen Code's chat recordings; see the module docstring."""

    name = AGENT
    mode = "lines"
    display_name = "Qwen Code"
    program = "qwen"
    id_shape = (UUID, "a UUID")
    fork_style = "whole-session-resume"
    edit_tools = frozenset({"edit", "replace"})
    write_tools = frozenset({"write_file"})
    read_tools = frozenset({"read_file"})
    shell_tools = frozenset({"run_shell_command"})
    todo_tools = frozenset()
    # its `task` tool starts a subagent whose records are sidechains of the same file; not declared
    # as a spawn tool until its linking is checked on real files (the ledger's list is every agent's)

    def __init__(self) -> None:
        self._json = QwenJsonChats()

    def default_roots(self) -> list[Path]:
        return [qwen_home() / "projects", qwen_home() / "tmp"]

    def claims(self, path: Path) -> bool:
        """A JSONL whose first records are Qwen Code's, wherever it sits (told by content), or a
        chat of its JSON era (`qwen_json_chat`)."""
        if path.name.endswith(".jsonl"):
            return looks_like_qwen(head_of(path))
        return path.name.endswith(".json") and qwen_json_chat(path, head_of(path, SNIFF_BYTES))

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root):
                yield _source(root)
            return
        for dirpath, dirnames, filenames in walk(root):
            dirnames.sort()
            for fname in sorted(filenames):
                path = Path(dirpath) / fname
                if self.claims(path):
                    yield _source(path)

    def split(self, data: bytes) -> list[RawRecord]:
        return self._json.split(data)

    def split_unfinished(self, data: bytes) -> list[RawRecord]:
        return self._json.split_unfinished(data)

    # the images a JSON-era chat's message embeds (`inlineData` parts), in prompts or tool results
    image_marker = b'"inlineData"'
    images_in_replies = True

    def message_extras(self, raw: bytes, entry_type: str | None) -> MessageExtras | None:
        return self._json.message_extras(raw, entry_type)

    def image_data(self, raw: bytes, index: int) -> tuple[str, str] | None:
        return self._json.image_data(raw, index)

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        if ctx.kind == "document":
            return self._json.normalize(rec, ctx)
        # read leniently where orjson refuses (invalid UTF-8, a lone surrogate), the refusal noted
        obj, error = parse_record(rec.raw)
        if obj is None:
            return Record(entry_type="invalid", known=False, parse_error=(error or "a blank line")[:200])
        if not isinstance(obj, dict):
            return Record(entry_type="invalid", known=False, parse_error="not a JSON object")
        kind = obj.get("type") if isinstance(obj.get("type"), str) else None
        sid = obj.get("sessionId") if isinstance(obj.get("sessionId"), str) else ctx.path.stem
        out = Record(
            parse_error=error,
            entry_type=kind,
            subtype=obj.get("subtype") if isinstance(obj.get("subtype"), str) else None,
            known=kind in ("user", "assistant", "tool_result", "system"),
            uuid=obj.get("uuid") if isinstance(obj.get("uuid"), str) else None,
            parent_uuid=obj.get("parentUuid") if isinstance(obj.get("parentUuid"), str) else None,
            session_id=sid,
            timestamp=parse_iso_ms(obj.get("timestamp")),
            is_sidechain=obj.get("isSidechain") is True,
            agent_id=obj.get("agentId") if isinstance(obj.get("agentId"), str) else None,
            cwd=obj.get("cwd") if isinstance(obj.get("cwd"), str) else None,
            git_branch=obj.get("gitBranch") if isinstance(obj.get("gitBranch"), str) else None,
            version=obj.get("version") if isinstance(obj.get("version"), str) else None,
            model=obj.get("model") if isinstance(obj.get("model"), str) else None,
            session=SessionInfo(source=AGENT, external_id=sid, project_key=ctx.project_key),
        )
        texts: list[str] = []
        thoughts: list[str] = []
        tool_texts: list[str] = []
        message = obj.get("message")
        parts = message.get("parts") if isinstance(message, dict) else None
        status = STATUS.get(str((obj.get("toolCallResult") or {}).get("status")), "completed")
        for number, part in enumerate(parts if isinstance(parts, list) else []):
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                (thoughts if part.get("thought") is True else texts).append(part["text"])
            call = part.get("functionCall")
            if isinstance(call, dict):
                args = call.get("args")
                params = args if isinstance(args, dict) else {"args": args}
                tool = ToolUse(
                    str(call.get("id") or f"{out.uuid}:{number}"),
                    str(call.get("name") or "?"),
                    json_text(params),
                    number,
                )
                if tool.name in self.spawn_tools:
                    tool.description = (
                        params.get("description") if isinstance(params.get("description"), str) else None
                    )
                    tool.prompt = params.get("prompt") if isinstance(params.get("prompt"), str) else None
                out.tool_uses.append(tool)
            response = part.get("functionResponse")
            if isinstance(response, dict):
                body = response.get("response")
                failed = isinstance(body, dict) and "error" in body and "output" not in body
                out.tool_results.append(
                    ToolResult(
                        str(response.get("id") or ""),
                        json_text(body),
                        "failed" if failed and status == "completed" else status,
                    )
                )
                tool_texts.append(json_text(body))
        out.content = "\n".join(texts) or None
        out.thinking = "\n".join(thoughts) or None
        out.tool_text = "\n".join(tool_texts) or None
        if kind == "user":
            out.role = "user"
            out.is_message = bool(texts)
            out.is_prompt = bool(texts) and out.subtype is None and not out.is_sidechain
        elif kind == "assistant":
            out.role = "assistant"
            out.is_message = bool(texts or thoughts or out.tool_uses)
            out.message_id = out.uuid
            meta = obj.get("usageMetadata")
            if isinstance(meta, dict) and out.uuid:
                cached = safe_int(meta.get("cachedContentTokenCount"))
                out.usage = Usage(
                    out.uuid,
                    None,
                    input_tokens=max(0, safe_int(meta.get("promptTokenCount")) - cached),
                    output_tokens=safe_int(meta.get("candidatesTokenCount"))
                    + safe_int(meta.get("thoughtsTokenCount")),
                    cache_read_tokens=cached,
                )
        elif kind == "tool_result":
            out.role = "user"
        elif kind == "system":
            payload = obj.get("systemPayload")
            title = payload.get("customTitle") if isinstance(payload, dict) else None
            if out.subtype in TITLE_SUBTYPES and isinstance(title, str) and title:
                # named as the ledger reads a session's titles: by the kind of its record
                out.entry_type, out.content = TITLE_SUBTYPES[out.subtype], title
                out.title = (TITLE_SUBTYPES[out.subtype], title)
            out.is_compaction = out.subtype == "chat_compression"
        return out

    def edit_result(self, record: dict[str, Any], tool_id: str) -> Any:
        """The call's `resultDisplay` (the file before and after), in its tool_result record (in a
        JSON-era chat, in the message that holds the call)."""
        if "toolCalls" in record:
            return self._json.edit_result(record, tool_id)
        result = record.get("toolCallResult")
        if isinstance(result, dict) and result.get("callId") in (tool_id, None):
            return result.get("resultDisplay")
        return None

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """edit / write_file from their parameters, with the file before and after that the
        result's display holds (`originalContent` null: a new file)."""
        edits = super().file_edits(name, params, result)
        if edits and isinstance(result, dict) and isinstance(result.get("newContent"), str):
            edits[0].after = result["newContent"]
            if "originalContent" in result:
                original = result["originalContent"]
                edits[0].before = original if isinstance(original, str) else None
        return edits

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """`qwen --resume ID`, run in the session's folder (its sessions are kept per project)."""
        if target.source_path and target.source_path.endswith(".json"):
            raise ForkError(
                "Qwen Code resumes only the sessions it keeps as JSONL (`<id>.jsonl` under "
                "~/.qwen/projects/); this chat of its older JSON format cannot be resumed"
            )
        if fork:
            raise ForkError("Qwen Code has no command that copies a session; resume it instead")
        return Command([self.program, "--resume", self.checked_id(target.external_id)])
