"""Factory Droid session logs.

Where: `~/.factory/sessions/<cwd with separators as '-'>/<session id>.jsonl` (older releases: directly
in `sessions/`), each beside `<session id>.settings.json`; `--source` folders at any depth. Droid is
closed source: the shapes below are from real files described in public repositories (a 320-line
real session's record counts and keys, the entireio/cli reader of `callingSessionId`) and Factory's
CLI reference (`droid --resume`, `droid --fork`).

One record a line:
* `session_start` first: `id` (the session), `title`, `sessionTitle` (the generated title), `owner`,
  `version`, `cwd`, `hostId`, `isSessionTitleManuallySet`, `sessionTitleAutoStage`; a session the
  Task tool started also has `callingSessionId` and `callingToolUseId` (its parent and the call);
* `message`: `id`, `parentId`, `timestamp`, `message {role: user|assistant, content: [text |
  thinking | tool_use {id, name, input} | tool_result {tool_use_id, content, is_error} | image],
  modelId, reasoningEffort, visibility}` (one line per message; `visibility: "llm_only"` is context
  the user never saw);
* `todo_state` (`todos`), `compaction_state` (`summaryText`), `agent_turn_outcome`; anything else
  kept as an event.

No record holds tokens: `<id>.settings.json` holds the session's running totals (`model`,
`tokenUsage {inputTokens, outputTokens, cacheCreationTokens, cacheReadTokens, thinkingTokens}`),
read as a document of its session, its newest totals counted once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .base import (
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
    parse_iso_ms,
    safe_int,
)
from .edits import FileEdit, string_param
from .shared import (
    as_dict,
    as_list,
    as_str,
    head_lines,
    head_of,
    json_text,
    parse_record,
    text_of_blocks,
    wrapped_params,
)
from .walk import walk

AGENT = "factory-droid"
SETTINGS = ".settings.json"
KNOWN = frozenset({"session_start", "message", "todo_state", "compaction_state", "agent_turn_outcome"})
# keys only Droid's header has (other agents' `session_start` lines have none of them)
HEADER_KEYS = ("sessionTitle", "isSessionTitleManuallySet", "sessionTitleAutoStage", "owner", "hostId")
_REMINDER = re.compile(r"^\s*<system-reminder>.*?</system-reminder>\s*", re.S)


def factory_home() -> Path:
    return Path.home() / ".factory"


def droid_header(head: bytes) -> dict[str, Any] | None:
    """A file's first record when it is Droid's `session_start`."""
    obj = head_lines(head, 1)[0]  # read leniently: a byte no UTF-8 has, an id of another type
    if not isinstance(obj, dict) or obj.get("type") != "session_start" or "id" not in obj:
        return None
    return obj if any(key in obj for key in HEADER_KEYS) else None


class DroidAdapter(Adapter):
    """Reads Factory Droid's session logs; see the module docstring."""

    name = AGENT
    mode = "lines"
    display_name = "Droid"
    program = "droid"
    id_shape = (UUID, "a UUID")
    fork_style = "whole-session-copy"
    resumes_subagents = True
    edit_tools = frozenset({"Edit", "MultiEdit"})
    write_tools = frozenset({"Create"})
    patch_tools = frozenset({"ApplyPatch"})
    read_tools = frozenset({"Read"})
    shell_tools = frozenset({"Execute"})
    todo_tools = frozenset({"TodoWrite"})
    # `Task` starts a subagent in a session of its own, which names its calling session and call

    def default_roots(self) -> list[Path]:
        return [factory_home() / "sessions"]

    def claims(self, path: Path) -> bool:
        name = path.name
        if name.endswith(SETTINGS):
            log = path.with_name(name[: -len(SETTINGS)] + ".jsonl")
            return log.is_file() and self.claims(log)
        if not name.endswith(".jsonl"):
            return False
        head = head_of(path, 16384)
        if droid_header(head) is not None:
            return True
        # a header cut short (a crash): still Droid's beside its own settings file
        return head_lines(head, 1)[0] is None and path.with_name(name[: -len(".jsonl")] + SETTINGS).is_file()

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root):
                yield self._ref(root)
            return
        for dirpath, dirnames, filenames in walk(root):
            dirnames.sort()
            for fname in sorted(filenames):
                if fname.endswith(".jsonl") or fname.endswith(SETTINGS):
                    path = Path(dirpath) / fname
                    if self.claims(path):
                        yield self._ref(path)

    def _ref(self, path: Path) -> SourceRef:
        kind = "document" if path.name.endswith(SETTINGS) else "transcript"
        return SourceRef(path, AGENT, kind, path.parent.name)

    # ------------------------------------------------------------------ records

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        obj, error = parse_record(rec.raw)
        if not isinstance(obj, dict):
            return Record(entry_type="invalid", known=False, parse_error=error or "not a JSON object")
        if ctx.kind == "document":
            return self._settings(obj, ctx)
        st = ctx.state
        kind = as_str(obj.get("type"))
        if kind == "session_start":
            st["sid"] = as_str(obj.get("id"))
            st["info"] = SessionInfo(
                source=AGENT,
                external_id=st["sid"],
                project_key=ctx.project_key,
            )
            parent, call = as_str(obj.get("callingSessionId")), as_str(obj.get("callingToolUseId"))
            if parent:
                info = st["info"]
                info.kind, info.is_subagent, info.parent_session_id = "subagent", 1, parent
                info.agent_id, info.tool_call_id = st["sid"], call
        sid = st.get("sid") or ctx.path.stem
        info = st.get("info") or SessionInfo(source=AGENT, external_id=sid, project_key=ctx.project_key)
        out = Record(
            entry_type=kind,
            known=kind in KNOWN,
            parse_error=error,
            uuid=as_str(obj.get("id")) if kind != "session_start" else None,
            parent_uuid=as_str(obj.get("parentId")),
            timestamp=parse_iso_ms(obj.get("timestamp")),
            session_id=sid,
            session=info,
            is_sidechain=bool(info.is_subagent),
        )
        if kind == "session_start":
            out.cwd = as_str(obj.get("cwd"))
            version = obj.get("version")
            out.version = (
                str(version) if isinstance(version, (str, int)) and not isinstance(version, bool) else None
            )
            # the title a user gave or Droid generated (`title` alone is the first prompt's opening);
            # named as the ledger reads a session's titles: by the kind of its record
            manual = obj.get("isSessionTitleManuallySet") is True
            title = as_str(obj.get("title")) if manual else as_str(obj.get("sessionTitle"))
            if title:
                out.entry_type = "custom-title" if manual else "ai-title"
                out.content = title
                out.title = (out.entry_type, title)
        elif kind == "message":
            self._message(out, as_dict(obj.get("message")))
        elif kind == "compaction_state":
            out.is_compaction = True
            out.content = as_str(obj.get("summaryText"))
        elif kind == "todo_state":
            todos = as_dict(obj.get("todos")).get("todos")
            out.content = todos if isinstance(todos, str) else None
        return out

    def _message(self, out: Record, message: dict[str, Any]) -> None:
        role = as_str(message.get("role"))
        out.role = role if role in ("user", "assistant") else None
        out.model = as_str(message.get("modelId"))
        out.message_id = out.uuid
        texts: list[str] = []
        thoughts: list[str] = []
        results: list[str] = []
        for number, block in enumerate(as_list(message.get("content"))):
            block = as_dict(block)
            btype = block.get("type")
            if btype == "text" and isinstance(block.get("text"), str):
                text = _REMINDER.sub("", block["text"]) if role == "user" else block["text"]
                if text.strip():
                    texts.append(text)
            elif btype == "thinking" and isinstance(block.get("thinking"), str):
                thoughts.append(block["thinking"])
            elif btype == "tool_use":
                params = wrapped_params(block.get("input"), "input")
                call = ToolUse(
                    as_str(block.get("id")) or f"{out.uuid}:{number}",
                    as_str(block.get("name")) or "?",
                    json_text(params),
                    number,
                )
                out.tool_uses.append(call)
                results.append(call.input_json)
            elif btype == "tool_result":
                body = block.get("content")
                status = "failed" if block.get("is_error") is True else "completed"
                out.tool_results.append(
                    ToolResult(as_str(block.get("tool_use_id")) or "", json_text(body), status)
                )
                text = text_of_blocks(body)
                if text:
                    results.append(text)
        out.content = "\n".join(texts) or None
        out.thinking = "\n".join(thoughts) or None
        out.tool_text = "\n".join(results) or None
        hidden = message.get("visibility") == "llm_only"
        out.is_meta = hidden
        out.is_message = bool(out.content or out.thinking or out.tool_uses)
        out.is_prompt = role == "user" and bool(out.content) and not hidden and not out.is_sidechain

    def _settings(self, obj: dict[str, Any], ctx: FileContext) -> Record:
        """The sidecar: the session's model and running token totals (one usage, its newest)."""
        sid = ctx.path.name[: -len(SETTINGS)]
        out = Record(entry_type="settings", session_id=sid, model=as_str(obj.get("model")))
        usage = as_dict(obj.get("tokenUsage"))
        if usage:
            reads = safe_int(usage.get("cacheReadTokens"))
            out.usage = Usage(
                f"{AGENT}:settings:{sid}",
                None,
                input_tokens=safe_int(usage.get("inputTokens")),
                output_tokens=safe_int(usage.get("outputTokens")) + safe_int(usage.get("thinkingTokens")),
                cache_creation_tokens=safe_int(usage.get("cacheCreationTokens")),
                cache_read_tokens=reads,
            )
        return out

    # ------------------------------------------------------------------ capabilities

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """MultiEdit's replaced texts, all of them; the other tools as their parameters say."""
        edits = list(as_list(params.get("edits")))
        path = string_param(params, ("file_path", "path"))
        if name == "MultiEdit" and edits and path:
            strings: list[tuple[str, str, bool]] = []
            for one in edits:
                one = as_dict(one)
                old = string_param(one, ("old_str", "old_string"))
                new = string_param(one, ("new_str", "new_string"))
                if old is not None and new is not None:
                    strings.append((old, new, bool(one.get("replace_all"))))
            edit = FileEdit(path, name, strings=strings)
            edit.why = "the records hold the replaced texts but not the file around them" + (
                "; restore it by hand (from git, a backup, or the editor's history)"
            )
            return [edit]
        return super().file_edits(name, params, result)

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """`droid --resume ID`, or `droid --fork ID` (a copy of the whole session, resumed)."""
        return Command([self.program, "--fork" if fork else "--resume", self.checked_id(target.external_id)])
