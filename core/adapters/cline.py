"""Cline, Roo Code (and Kilo Code): VS Code extension task folders and the Cline SDK sessions.

FORMATS.md §5. Every file here is a JSON document rewritten whole, so this is a "document"
adapter: `split` cuts a file into one record per message (its exact JSON) plus the bytes between,
and a file caught mid-write (Cline writes without a rename) waits for the next run.

Extension storage (`<User>/globalStorage/<extension id>/`, any VS Code-family editor, Linux,
macOS and Windows folders):
  * `tasks/<taskId>/ui_messages.json`: the UI stream, shown as the conversation: `task` and
    `user_feedback` start turns; tool, command, browser and MCP asks/says are tool calls (with
    synthetic ids, results from `command_output`, `browser_action_result`, `mcp_server_response`);
    tokens from the JSON text of `api_req_started` (plus `deleted_api_reqs`, `subagent_usage`:
    Cline's own totals count those too);
  * `tasks/<taskId>/api_conversation_history.json`: the model-facing history. Kept record by
    record; it becomes the shown conversation (with native tool_use ids and `metrics.tokens`)
    only when the task has no `ui_messages.json`, so nothing is shown or counted twice; a native
    call's result is a `tool_result` block or (Cline 3.x, 2026) a `[tool for 'x'] Result:` text block
    of the next user message, which leaves a call it does not answer interrupted;
  * `task_metadata.json` (models, Cline version), `history_item.json` / `tasks/_index.json` (Roo:
    workspace, parent task → subtask tree) and `state/taskHistory.json` (Cline: the working
    folder a task started in).
Cline SDK / CLI (`~/.cline/data/sessions/<id>/`): `<id>.json` manifest, `<id>.messages.json`
and subagents' `<agent>.messages.json` (session `<root>__<agent>`), tokens from each assistant
message's `metrics` (input counted with the cache, as the SDK reports it) and, after a compaction
rewrote the file, from the compaction message's `usageBefore`; the `<id>.compaction.json`
sidecar is kept without being shown.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..base.text import count_of
from .base import (
    BOM,
    Adapter,
    Command,
    FileContext,
    ForkError,
    RawRecord,
    Record,
    ResumeTarget,
    SessionInfo,
    SourceRef,
    SpawnFacts,
    ToolResult,
    ToolUse,
    Usage,
    epoch_ms,
    parse_iso_ms,
    read_regular,
    recorded_cost,
    safe_int,
)
from .edits import RESTORE, FileEdit, string_param
from .shared import (
    as_dict,
    as_list,
    as_str,
    editor_user_dirs,
    head_of,
    input_text,
    json_text,
    loads,
    parse_document,
    scalar_members,
    tile,
    wrapped_params,
)
from .walk import walk

EXTENSIONS = {
    "saoudrizwan.claude-dev": "cline",
    "rooveterinaryinc.roo-cline": "roo-code",
    "kilocode.kilo-code": "kilo-code",
}
TASK_FILES = frozenset(
    {"api_conversation_history.json", "ui_messages.json", "task_metadata.json", "history_item.json"}
)
UI_SPEC = frozenset({("[]",)})
SDK_SPEC = frozenset({("messages", "[]")})
INDEX_SPEC = frozenset({("entries", "[]"), ("[]",)})
WHOLE = frozenset({()})
PRUNE = frozenset({"checkpoints", "puppeteer", "cache", ".git", "node_modules", "settings", "mcp", "logs"})
UUID_DIR = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
CWD_IN_TEXT = re.compile(r"# Current (?:Working|Workspace) Directory \((.+?)\)")
TAGGED_PROMPT = re.compile(r"<(task|feedback|answer|user_message)>\s*(.*?)\s*</\1>", re.S)
ENV_DETAILS = re.compile(r"<environment_details>.*?</environment_details>", re.S)
# a native tool call's result as Cline 3.x (2026) sends it back: a text block of the next user
# message, `[read_file for 'src/a.ts'] Result:\n…`, one per call in call order (no tool_result block)
TEXT_RESULT = re.compile(r"^\[([A-Za-z_][\w-]*)\b.*?\] Result:[ \t]*\n?", re.S)
# how Cline words a result that is no success (formatResponse.toolError, toolDenied*)
TOOL_ERROR = "The tool execution failed with the following error:"
TOOL_DENIED = "The user denied this operation"
# Cline's reminders to the model about its todo list (the `task_progress` parameter), a text block
# it adds to a user message after the tool results: context for the model, never the person's words
REMINDER = re.compile(r"^\s*# (?:TODO LIST UPDATE REQUIRED|task_progress\b)")
# the SDK's note, once a compaction removed a turn's calls, of what they did ("Earlier context was
# compacted. Summary of your actions after the request above: …"): a text block it adds to the
# turn's prompt, for the model, never the person's words
SYSTEM_NOTICE = re.compile(r"^\s*<SYSTEM_NOTICE>.*</SYSTEM_NOTICE>\s*$", re.S)
USER_INPUT = re.compile(r"^\s*<user_input[^>]*>\s*(.*?)\s*</user_input>\s*$", re.S)

# ui_messages.json: what each ask/say means (ExtensionMessage.ts of Cline and Roo Code)
PROMPT_SAYS = frozenset({"task", "user_feedback"})
ASSISTANT_SAYS = frozenset(
    {"text", "completion_result", "subtask_result", "info", "task_progress", "generate_explanation"}
)
SYSTEM_SAYS = frozenset(
    {
        "error",
        "diff_error",
        "clineignore_error",
        "rooignore_error",
        "api_req_retried",
        "error_retry",
        "shell_integration_warning",
        "condense_context_error",
        "api_req_retry_delayed",
        "too_many_tools_warning",
    }
)
SYSTEM_ASKS = frozenset({"api_req_failed", "mistake_limit_reached", "auto_approval_max_req_reached"})
USAGE_SAYS = frozenset({"api_req_started", "deleted_api_reqs", "subagent_usage"})
META_NAMES = frozenset(
    {
        "api_req_finished",
        "checkpoint_created",
        "checkpoint_saved",
        "resume_task",
        "resume_completed_task",
        "hook_status",
        "hook",
        "load_mcp_documentation",
        "mcp_notification",
        "mcp_server_request_started",
        "api_req_deleted",
        "user_edit_todos",
        "codebase_search_result",
        "image",
        "report_bug",
        "command_permission",
    }
)
KNOWN_UI = (
    PROMPT_SAYS
    | ASSISTANT_SAYS
    | SYSTEM_SAYS
    | SYSTEM_ASKS
    | USAGE_SAYS
    | META_NAMES
    | frozenset(
        {
            "reasoning",
            "followup",
            "plan_mode_respond",
            "tool",
            "command",
            "command_output",
            "browser_action_launch",
            "browser_action",
            "browser_action_result",
            "use_mcp_server",
            "mcp_server_response",
            "new_task",
            "user_feedback_diff",
            "condense_context",
            "condense",
            "summarize_task",
            "compaction",
            "subagent",
            "use_subagents",
        }
    )
)


def cline_data_dir() -> Path:
    """The Cline CLI / SDK data folder: `$CLINE_DIR/data` or `~/.cline/data`."""
    env = os.environ.get("CLINE_DIR")
    return (Path(env).expanduser() if env else Path.home() / ".cline") / "data"


def agent_of(path: Path) -> str | None:
    """Which extension wrote a file, from its path; None when the path does not say."""
    for part in path.parts:
        agent = EXTENSIONS.get(part.lower())
        if agent:
            return agent
    if ".cline" in path.parts:
        return "cline"
    return None


def _task_dir(path: Path) -> Path | None:
    parent = path.parent
    return parent if parent.parent.name == "tasks" else None


def _loose_task_dir(path: Path) -> Path | None:
    """The folder of a task file found outside `tasks/` (a task folder copied or exported anywhere)."""
    return path.parent if path.name in TASK_FILES and _task_dir(path) is None else None


def looks_like_task_file(path: Path, kind: str) -> bool:
    """A task file away from `tasks/<id>/`, by its first bytes: a UI stream or an API history is a
    JSON array of `say`/`ask` or `role` objects; metadata files count beside one of those."""
    if kind in ("task-meta", "history-item"):
        return any(
            (path.parent / name).is_file() for name in ("ui_messages.json", "api_conversation_history.json")
        )
    head = head_of(path, 4096).removeprefix(BOM).lstrip()
    if not head.startswith(b"["):
        return False
    if head[1:].lstrip().startswith(b"]"):
        return True  # an empty task, as Cline writes it first
    if kind == "ui":
        return bool(re.search(rb'"type"\s*:\s*"(?:say|ask)"', head)) and b'"ts"' in head
    return b'"role"' in head


def kind_of(path: Path, head: bytes | None = None) -> str | None:
    """ui | api | task-meta | history-item | task-index | task-history | sdk-messages | sdk-manifest."""
    name = path.name
    if name == "ui_messages.json":
        return "ui"
    if name == "api_conversation_history.json":
        return "api"
    if name == "task_metadata.json":
        return "task-meta"
    if name == "history_item.json":
        return "history-item"
    if name == "_index.json" and path.parent.name == "tasks":
        return "task-index"
    if name == "taskHistory.json":
        return "task-history"
    if name.endswith((".messages.json", ".compaction.json")):
        return "sdk-messages"
    if head is None:
        return None
    head = head.removeprefix(BOM)
    text = head.lstrip()
    if text.startswith(b"{"):
        if b'"messages_path"' in head and b'"session_id"' in head:
            return "sdk-manifest"
        if (
            b'"messages"' in head
            and b'"version"' in head
            and (b'"agent"' in head or b'"sessionId"' in head)
            and b'"role"' in head
        ):
            return "sdk-messages"
        if b'"entries"' in head and b'"tokensIn"' in head:
            return "task-index"
    if text.startswith(b"["):
        if re.search(rb'"type"\s*:\s*"(?:say|ask)"', head) and b'"ts"' in head:
            return "ui"
        if b'"role"' in head and b'"content"' in head:
            return "api"
        if b'"tokensIn"' in head and b'"task"' in head:
            return "task-history"
    return None


EXTENSION_NAMES = {"cline": "Cline", "roo-code": "Roo Code", "kilo-code": "Kilo Code"}

# the tools whose change is SEARCH/REPLACE blocks: `------- SEARCH … ======= … +++++++ REPLACE`
# (Cline 3.x), `<<<<<<< SEARCH … >>>>>>> REPLACE` (older Cline, Roo Code, whose blocks may open with
# `:start_line:` hints and a `-------` line)
SEARCH_REPLACE_TOOLS = frozenset({"replace_in_file", "apply_diff", "editedExistingFile", "appliedDiff"})
SEARCH_MARK = re.compile(r"^(?:-{3,}|<{3,}) SEARCH\s*$")
DIVIDER_MARK = re.compile(r"^={3,}\s*$")
REPLACE_MARK = re.compile(r"^(?:\+{3,}|>{3,}) REPLACE\s*$")
LINE_HINT = (":start_line:", ":end_line:")
# what Cline appends to a completion's text when the task changed files (COMPLETION_RESULT_CHANGES_FLAG)
CHANGES_FLAG = "HAS_CHANGES"


class ClineAdapter(Adapter):
    """Reads one Cline-family agent's files; see the module docstring."""

    mode = "document"
    spawn_tools = frozenset({"newTask", "new_task"})  # the UI log's tool, the API history's
    # the API history's tools and the UI log's (ClineSayTool / Roo's `tool` says) of the same calls
    edit_tools = frozenset(
        {"replace_in_file", "apply_diff", "insert_content", "search_and_replace"} | SEARCH_REPLACE_TOOLS
    )
    write_tools = frozenset({"write_to_file", "newFileCreated"})
    read_tools = frozenset({"read_file"})
    shell_tools = frozenset({"execute_command"})

    def __init__(self, name: str, extensions: tuple[str, ...], sdk: bool = False) -> None:
        self.name = name
        self.extensions = extensions
        self.sdk = sdk
        # the CLI (`sdk`) resumes a task by id; the extensions' tasks only from their History view
        self.fork_style = "whole-session-resume" if sdk else None
        self.env_vars = ("CLINE_DIR",) if sdk else ()

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """An edit's SEARCH/REPLACE blocks (`diff` in the API history, `content` or `diff` in the UI
        log) as the texts it replaced: it changed 0 lines in the stats and drew no diff."""
        if name in SEARCH_REPLACE_TOOLS:
            path = string_param(params, ("path", "file_path", "absolutePath"))
            text = params.get("diff") if isinstance(params.get("diff"), str) else params.get("content")
            blocks = replaced_blocks(text) if isinstance(text, str) else []
            if path is not None and blocks:
                edit = FileEdit(path, name, strings=[(old, new, False) for old, new in blocks])
                edit.why = (
                    "the records hold the replaced text but not the file around it, so where it sits "
                    "is not known" + RESTORE
                )
                return [edit]
        return super().file_edits(name, params, result)

    def spawn_facts(self, params: dict[str, Any]) -> SpawnFacts:
        """A subtask's first prompt is `new_task`'s `message` (`content` in the UI log)."""
        prompt = params.get("message") or params.get("content")
        return SpawnFacts(prompt if isinstance(prompt, str) else None)

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        if not self.sdk:
            raise ForkError(
                f"{EXTENSION_NAMES.get(self.name, self.name)} tasks resume from the extension's History view "
                "(open History, pick the task, Resume)"
            )
        if fork:
            return super().resume_command(target, fork=fork)
        return Command(
            [self.program, "--id", self.checked_id(target.external_id)],
            notes=[
                "`cline --id` resumes Cline CLI sessions; tasks of the VS Code extension resume from its History view."
            ],
        )

    def default_roots(self) -> list[Path]:
        """Extension folders that exist (in every VS Code-family editor); the VS Code one if none."""
        candidates = [user / "globalStorage" / ext for user in editor_user_dirs() for ext in self.extensions]
        roots = [p for p in candidates if p.is_dir()] or candidates[:1]
        if self.sdk:
            roots.append(cline_data_dir())
        return roots

    def _owns(self, path: Path) -> bool:
        agent = agent_of(path)
        if agent is not None:
            return agent == self.name
        task = _task_dir(path) or _loose_task_dir(path)
        if task is not None:  # no extension folder in the path: Cline names tasks by ms time, Roo by uuid
            return (self.name == "roo-code") == bool(UUID_DIR.match(task.name))
        return self.name == "cline"

    def claims(self, path: Path, explicit: bool = False) -> bool:
        name = path.name
        if not name.endswith(".json") or not self._owns(path):
            return False
        kind = kind_of(path)
        if kind in ("ui", "api", "task-meta", "history-item"):
            # under `tasks/<id>/` by name; a task folder anywhere else (a --source of an export) by content
            return _task_dir(path) is not None or explicit or looks_like_task_file(path, kind)
        if kind == "task-index":
            return True
        if kind == "task-history":
            return path.parent.name == "state" or explicit
        in_sessions = "sessions" in path.parts
        if kind == "sdk-messages":  # a distinctive name: outside a sessions folder its content decides
            return in_sessions or kind_of(path, head_of(path, 4096)) == "sdk-messages"
        if path.parent.name == path.name[: -len(".json")] or name == "session.json":
            return kind_of(path, head_of(path, 8192)) == "sdk-manifest"
        if explicit:
            return kind_of(path, head_of(path, 8192)) is not None
        return False

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root, explicit=True):
                yield self._ref(root)
            return
        if not root.is_dir():
            return
        for dirpath, dirnames, filenames in walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in PRUNE)
            for fname in sorted(filenames):
                if fname.endswith(".json"):
                    path = Path(dirpath) / fname
                    if self.claims(path):
                        yield self._ref(path)

    def _ref(self, path: Path) -> SourceRef:
        task = _task_dir(path)
        project_key = task.parent.parent.name if task is not None else path.parent.name
        return SourceRef(path, self.name, "document", project_key)

    # ------------------------------------------------------------------ split

    def split(self, data: bytes) -> list[RawRecord]:
        """One record per message (or history item), plus the bytes between them."""
        doc = parse_document(data)
        if isinstance(doc, list):
            return tile(data, UI_SPEC)
        if isinstance(doc, dict):
            if isinstance(doc.get("messages"), list):
                return tile(data, SDK_SPEC)
            if isinstance(doc.get("entries"), list):
                return tile(data, INDEX_SPEC)
        return tile(data, WHOLE)

    # ------------------------------------------------------------------ normalize

    @staticmethod
    def _head(ctx: FileContext) -> bytes:
        """The head of a file whose name does not tell what it is: a replay's as the archive holds
        it (the file gone from the disk perhaps)."""
        data = ctx.stored() if ctx.stored is not None else None
        return data[:8192] if data is not None else head_of(ctx.path, 8192)

    def _start(self, ctx: FileContext) -> dict[str, Any]:
        st = ctx.state
        if "kind" in st:
            return st
        path = ctx.path
        kind = kind_of(path) or kind_of(path, self._head(ctx)) or "unknown"
        task = _task_dir(path)
        agent = agent_of(path)
        if agent is None:
            agent = "roo-code" if task is not None and UUID_DIR.match(task.name) else self.name
        sid = task.name if task is not None else None
        if kind == "sdk-messages" and path.name.endswith((".messages.json", ".compaction.json")):
            stem = path.name.rsplit(".", 2)[0]
            parent = path.parent.name
            sid = stem if stem == parent or "sessions" not in path.parts else f"{parent}__{stem}"
        elif kind in ("ui", "api", "task-meta", "history-item") and sid is None:
            sid = path.parent.name
        st.update(
            kind=kind,
            agent=agent,
            sid=sid,
            header={},
            n=0,
            last=None,
            seen={},
            open={},
            sidecar=False,
            cwd=None,
            started=False,
            ui_seen=False,
        )
        if kind == "api":
            # looked at once per read of the file, never cached: the ui file may appear later; a
            # replay's is whether the archive holds it (the disk's gone perhaps), else the disk's
            ui = path.with_name("ui_messages.json")
            kept = ctx.archived(glob.escape(str(ui)), None) if ctx.archived is not None else {}
            st["shown"] = not kept and not ui.exists()
        if kind == "ui":
            st["apart"] = _cache_apart(ctx)
        return st

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        st = self._start(ctx)
        obj, error = loads(rec.raw)
        kind = st["kind"]
        if obj is None:  # the bytes between elements (or a document kept whole while unfinished)
            if rec.offset == 0 or not st["started"]:
                st["header"].update(scalar_members(rec.raw))
                if kind == "sdk-messages":
                    st["sid"] = as_str(st["header"].get("sessionId")) or st["sid"]
                    st["sidecar"] = "source_message_count" in st["header"]
            return Record(entry_type="json-gap", session_id=st["sid"], session=self._info(st))
        st["started"] = True
        if kind == "ui":
            return self._ui(obj, rec, st)
        if kind == "api":
            return self._api(obj, rec, st)
        if kind == "sdk-messages":
            return self._sdk_message(obj, rec, st)
        if kind == "sdk-manifest":
            return self._manifest(obj, st)
        if kind == "task-meta":
            return self._task_meta(obj, st)
        if kind in ("history-item", "task-index", "task-history"):
            return self._history_item(obj, ctx, st)
        return Record(entry_type="document", known=False, session_id=st["sid"], session=self._info(st))

    def _info(self, st: dict[str, Any], **extra: Any) -> SessionInfo | None:
        sid = st["sid"]
        if sid is None:
            return None
        info = SessionInfo(source=st["agent"], external_id=sid, **extra)
        if "__" in sid and st["kind"] == "sdk-messages":
            root, _, agent = sid.partition("__")
            info.kind = "teammate" if agent.startswith("teamtask__") else "subagent"
            info.is_subagent = 1
            info.parent_session_id = root
            info.agent_id = agent
        return info

    def _uuid(self, st: dict[str, Any], key: str) -> str:
        base = f"{st['sid']}:{key}"
        count = st["seen"].get(base, 0)
        st["seen"][base] = count + 1
        return base if count == 0 else f"{base}:{count}"

    def _chain(self, out: Record, st: dict[str, Any]) -> None:
        out.parent_uuid = st["last"]
        st["last"] = out.uuid

    # ------------------------------------------------------------------ ui_messages.json

    def _ui(self, m: Any, rec: RawRecord, st: dict[str, Any]) -> Record:
        sid = st["sid"]
        if not isinstance(m, dict):
            return Record(entry_type="non-object", known=False, session_id=sid, session=self._info(st))
        mtype = as_str(m.get("type")) or "?"
        name = as_str(m.get("say") if mtype == "say" else m.get("ask")) or "?"
        ts = m.get("ts")
        out = Record(
            entry_type=mtype,
            subtype=name,
            known=name in KNOWN_UI,
            session_id=sid,
            timestamp=epoch_ms(ts),
            session=self._info(st),
        )
        out.uuid = self._uuid(st, str(ts) if ts is not None else f"i{rec.line_number}")
        self._chain(out, st)
        info = m.get("modelInfo")
        if isinstance(info, dict):
            out.model = as_str(info.get("modelId"))
        text = as_str(m.get("text")) or ""
        # a task opens with the person's prompt: `say: "task"`, or `say: "text"` as Cline, Roo and
        # Kilo write it (`startTask`): the first message of the file is that prompt, not a reply
        opening = not st["ui_seen"] and mtype == "say" and name == "text"
        st["ui_seen"] = True
        if name in PROMPT_SAYS or opening:
            out.role = "user"
            out.is_message = True
            images = as_list(m.get("images"))
            out.content = text or (f"[{count_of(len(images), 'image')}]" if images else None)
            out.is_prompt = bool(out.content)
        elif name == "user_feedback_diff":
            out.role, out.is_message, out.content = "user", True, text or None
        elif name == "reasoning":
            out.role, out.is_message, out.thinking = "assistant", bool(text), text or None
        elif name in ASSISTANT_SAYS or name in ("followup", "plan_mode_respond"):
            out.role = "assistant"
            out.content = _ui_text(name, text)
            out.is_message = out.content is not None
        elif name in SYSTEM_SAYS or name in SYSTEM_ASKS:
            out.role, out.is_message = "system", True
            out.content = _system_text(name, text) or name.replace("_", " ")
        elif name in USAGE_SAYS:
            self._ui_usage(out, text, st, name, as_str(as_dict(m.get("modelInfo")).get("providerId")))
        elif name in ("condense_context", "condense", "summarize_task", "compaction"):
            condense = as_dict(m.get("contextCondense"))
            out.role, out.is_message = "system", True
            out.is_compaction = out.segment_marker = True
            out.content = as_str(condense.get("summary")) or text or "context condensed"
        elif name in ("command_output", "browser_action_result", "mcp_server_response"):
            family = {
                "command_output": "command",
                "browser_action_result": "browser",
                "mcp_server_response": "mcp",
            }[name]
            call = st["open"].get(family)
            if call is not None:
                out.tool_results.append(ToolResult(call, json_text(text)))
            out.tool_text = text or None
        elif name in (
            "tool",
            "command",
            "browser_action_launch",
            "browser_action",
            "use_mcp_server",
            "new_task",
            "subagent",
            "use_subagents",
        ):
            self._ui_tool(out, name, text, st)
        else:
            out.content = text or None  # known bookkeeping or a new kind: kept, searchable, not shown
        return out

    def _ui_tool(self, out: Record, name: str, text: str, st: dict[str, Any]) -> None:
        obj, _ = loads(text.encode()) if text[:1] in ("{", "[") else (None, None)
        params: dict[str, Any]
        if name == "tool" and isinstance(obj, dict):
            tool, params = as_str(obj.get("tool")) or "tool", obj
        elif name == "command":
            tool, params = "execute_command", {"command": text}
        elif name == "browser_action_launch":
            tool, params = "browser_action", {"action": "launch", "url": text}
        elif name == "use_mcp_server" and isinstance(obj, dict):
            tool = f"mcp:{obj.get('serverName', '?')}/{obj.get('toolName') or obj.get('uri') or '?'}"
            params = obj
        else:
            tool, params = name, obj if isinstance(obj, dict) else {"text": text}
        call_id = out.uuid or ""
        out.role = "assistant"
        out.is_message = True
        out.tool_uses.append(
            ToolUse(call_id, tool, json_text(params), description=as_str(params.get("description")))
        )
        out.tool_text = f"{tool} {input_text(json_text(params))}"
        family = {
            "command": "command",
            "browser_action_launch": "browser",
            "browser_action": "browser",
            "use_mcp_server": "mcp",
        }.get(name)
        if family:
            st["open"][family] = call_id  # its output comes in a later message
        else:
            # a file tool's ask/say already carries what it did (content, diff): it is its own result
            result = params.get("content") if "content" in params else params.get("diff")
            out.tool_results.append(ToolResult(call_id, json_text(result if result is not None else params)))

    def _ui_usage(self, out: Record, text: str, st: dict[str, Any], name: str, provider: str | None) -> None:
        data, _ = loads(text.encode()) if text else (None, None)
        if not isinstance(data, dict):
            return
        request = as_str(data.get("request"))
        if request and st["cwd"] is None:
            m = CWD_IN_TEXT.search(request)
            if m:
                st["cwd"] = out.cwd = m.group(1).strip()
        usage = _api_usage(data, f"{st['agent']}:{out.uuid}", provider in st["apart"])
        if usage is not None:
            out.usage = usage
        if name != "api_req_started":
            out.content = None

    # ------------------------------------------------------------------ api_conversation_history.json

    def _api(self, m: Any, rec: RawRecord, st: dict[str, Any]) -> Record:
        sid = st["sid"]
        st["n"] += 1
        if not isinstance(m, dict):
            return Record(entry_type="non-object", known=False, session_id=sid, session=self._info(st))
        role = as_str(m.get("role"))
        out = Record(
            entry_type="api-message",
            subtype=as_str(m.get("type")) or role,
            known=role in ("user", "assistant"),
            session_id=sid,
            role=role,
            timestamp=epoch_ms(m.get("ts")),
            session=self._info(st),
        )
        out.uuid = self._uuid(st, f"api:{st['n']}")
        info = m.get("modelInfo")
        if isinstance(info, dict):
            out.model = as_str(info.get("modelId"))
        if not st["shown"]:
            out.is_meta = True  # the task's ui_messages.json is the conversation shown
            return out
        self._chain(out, st)
        content = m.get("content")
        open_calls: list[tuple[str, str]] = st.setdefault("api_open", [])
        result_texts: list[str] = []
        if role == "user":
            content, result_texts = _text_results(out, content, open_calls)
        _blocks(out, content, role)
        if result_texts:
            out.tool_text = "\n".join(t for t in (out.tool_text, *result_texts) if t) or None
        answered = {r.tool_use_id for r in out.tool_results}
        unanswered: list[tuple[str, str]] = []
        if role == "assistant":
            open_calls.extend((u.id, u.name) for u in out.tool_uses)
        if role == "user":
            # the calls this message does not answer never got a result (a `[TASK RESUMPTION]`
            # tells the model to take them as unsuccessful): closed here, so that no later result
            # of the same tool is taken for theirs
            unanswered = [c for c in open_calls if c[0] not in answered]
            open_calls.clear()
            out.is_prompt, out.content = _api_prompt(content)
            if st["cwd"] is None:
                texts = _all_text(m.get("content"))
                found = CWD_IN_TEXT.search(texts) if texts else None
                if found:
                    st["cwd"] = out.cwd = found.group(1).strip()
        out.is_message = bool(out.content or out.thinking or out.tool_uses or out.tool_results)
        out.tool_results.extend(ToolResult(c[0], "null", "interrupted") for c in unanswered)
        metrics = m.get("metrics")
        tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
        if isinstance(tokens, dict):
            cached = safe_int(tokens.get("cached"))
            out.usage = Usage(
                f"{st['agent']}:{out.uuid}",
                None,
                max(0, safe_int(tokens.get("prompt")) - cached),
                safe_int(tokens.get("completion")),
                0,
                cached,
            )
        if m.get("isSummary"):
            out.is_compaction = out.segment_marker = True
        return out

    # ------------------------------------------------------------------ Cline SDK

    def _sdk_message(self, m: Any, rec: RawRecord, st: dict[str, Any]) -> Record:
        sid = st["sid"]
        st["n"] += 1
        if not isinstance(m, dict):
            return Record(entry_type="non-object", known=False, session_id=sid, session=self._info(st))
        role = as_str(m.get("role"))
        meta = as_dict(m.get("metadata"))
        msg_id = as_str(m.get("id"))
        out = Record(
            entry_type="message",
            subtype=as_str(meta.get("kind")),
            known=role in ("user", "assistant"),
            session_id=sid,
            role=role,
            message_id=msg_id,
            timestamp=epoch_ms(m.get("ts")),
            session=self._info(st),
        )
        out.uuid = self._uuid(st, msg_id or f"m{st['n']}")
        info = m.get("modelInfo")
        if isinstance(info, dict):
            out.model = as_str(info.get("id")) or as_str(info.get("modelId"))
        if st["sidecar"]:
            out.entry_type = "compaction-state"
            out.is_meta = True  # the compacted copy the model sees; the transcript holds the messages
            return out
        self._chain(out, st)
        content = m.get("content")
        if role == "user" and isinstance(content, list):
            content = [
                b
                for b in content
                if not (isinstance(b, dict) and SYSTEM_NOTICE.match(str(b.get("text") or "")))
            ]
        _blocks(out, content, role)
        kind = as_str(meta.get("kind"))
        if kind == "compaction_summary":
            out.role = "system"
            out.is_compaction = out.segment_marker = True
            out.content = as_str(meta.get("summary")) or out.content
        elif role == "user" and out.content:
            wrapped = USER_INPUT.match(out.content)
            if wrapped:
                out.content = wrapped.group(1)
            out.is_prompt = True
            out.is_compaction = kind == "compaction"
        out.is_message = bool(out.content or out.thinking or out.tool_uses or out.tool_results)
        metrics = m.get("metrics")
        before = meta.get("usageBefore")
        if isinstance(metrics, dict):
            out.usage = _sdk_usage(metrics, f"cline:{out.uuid}")
        elif isinstance(before, dict):
            # a compaction dropped the earlier messages and their metrics: this is what they had used
            out.usage = _sdk_usage(before, f"cline:{out.uuid}:before")
        return out

    def _manifest(self, obj: Any, st: dict[str, Any]) -> Record:
        if not isinstance(obj, dict):
            return Record(entry_type="manifest", known=False)
        sid = as_str(obj.get("session_id"))
        st["sid"] = sid
        meta = as_dict(obj.get("metadata"))
        out = Record(
            entry_type="manifest",
            session_id=sid,
            model=as_str(obj.get("model")),
            cwd=as_str(obj.get("cwd")) or as_str(obj.get("workspace_root")),
            session=self._info(st),
        )
        out.timestamp = parse_iso_ms(obj.get("started_at"))
        title = as_str(meta.get("title"))
        if title:
            out.content, out.title, out.entry_type = title, ("ai-title", title), "ai-title"
        fork = meta.get("fork")
        if isinstance(fork, dict):
            out.forked_from_session_id = as_str(fork.get("forkedFromSessionId"))
        parent = as_str(obj.get("parent_session_id")) or as_str(meta.get("parentSessionId"))
        if parent and out.session is not None:
            out.session.kind, out.session.is_subagent, out.session.parent_session_id = "subagent", 1, parent
        return out

    # ------------------------------------------------------------------ task metadata and history

    def _task_meta(self, obj: Any, st: dict[str, Any]) -> Record:
        out = Record(entry_type="task-metadata", session_id=st["sid"], session=self._info(st))
        if isinstance(obj, dict):
            usage = obj.get("model_usage")
            if isinstance(usage, list) and usage and isinstance(usage[-1], dict):
                out.model = as_str(usage[-1].get("model_id"))
            env = obj.get("environment_history")
            if isinstance(env, list) and env and isinstance(env[-1], dict):
                out.version = as_str(env[-1].get("cline_version"))
        return out

    def _history_item(self, item: Any, ctx: FileContext, st: dict[str, Any]) -> Record:
        """A HistoryItem: working folder, model and (Roo) the parent task of a subtask."""
        if not isinstance(item, dict) or not as_str(item.get("id")):
            return Record(
                entry_type="history",
                known=isinstance(item, dict),
                session_id=st["sid"] if st["kind"] == "history-item" else None,
            )
        tid = str(item["id"])
        if st["kind"] != "history-item":
            tasks = ctx.path.parent if st["kind"] == "task-index" else ctx.path.parent.parent / "tasks"
            if not _is_dir(tasks / tid):  # an id too long to be a folder's name is no task's
                return Record(entry_type="history-item", subtype="no-task-folder")  # kept, not a session
        sub = {"sid": tid, "agent": st["agent"], "kind": "history"}
        out = Record(
            entry_type="history-item",
            session_id=tid,
            session=self._info(sub),
            cwd=as_str(item.get("cwdOnTaskInitialization")) or as_str(item.get("workspace")),
            model=as_str(item.get("modelId")),
        )
        parent = as_str(item.get("parentTaskId"))
        if parent and out.session is not None:
            out.session.kind, out.session.is_subagent, out.session.parent_session_id = "subagent", 1, parent
            out.session.agent_id = tid
        return out


# ---------------------------------------------------------------------- helpers


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def replaced_blocks(diff: str) -> list[tuple[str, str]]:
    """(searched, replacement) texts of the SEARCH/REPLACE blocks in `diff`; an unfinished block
    (a call cut short) ends the list."""
    lines = diff.split("\n")
    blocks: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        if not SEARCH_MARK.match(lines[i]):
            i += 1
            continue
        start = i + 1
        while start < len(lines) and lines[start].startswith(LINE_HINT):
            start += 1
        if start > i + 1 and start < len(lines) and lines[start].strip() == "-------":
            start += 1
        middle = next((j for j in range(start, len(lines)) if DIVIDER_MARK.match(lines[j])), None)
        end = (
            next((j for j in range(middle + 1, len(lines)) if REPLACE_MARK.match(lines[j])), None)
            if middle is not None
            else None
        )
        if middle is None or end is None:
            break
        blocks.append(("\n".join(lines[start:middle]), "\n".join(lines[middle + 1 : end])))
        i = end + 1
    return blocks


def _ui_text(name: str, text: str) -> str | None:
    """Followups and plan responses are JSON ({question|response, options}); the rest is text, a
    completion's without the flag Cline appends when the task changed files."""
    if name == "completion_result" and text.endswith(CHANGES_FLAG):
        text = text[: -len(CHANGES_FLAG)].rstrip()
    if name in ("followup", "plan_mode_respond") and text[:1] == "{":
        obj, _ = loads(text.encode())
        if isinstance(obj, dict):
            body = as_str(obj.get("question")) or as_str(obj.get("response")) or ""
            options = as_list(obj.get("options"))
            labels = [
                o if isinstance(o, str) else as_str(o.get("answer")) if isinstance(o, dict) else None
                for o in options
            ]
            choices = "\n".join(f"- {x}" for x in labels if x)
            return "\n".join(x for x in (body, choices) if x) or None
    return text or None


def _cache_apart(ctx: FileContext) -> frozenset[str | None]:
    """The providers (None: not named) of a task's UI log whose `tokensIn` leaves the cache out: one
    of their requests cached more than it (a count with the cache inside never does), so that a
    request of theirs that cached less (its first, little cached yet) is not taken to count it in."""
    try:
        data = ctx.stored() if ctx.stored is not None else None  # a replay: the archive's bytes
        doc, _ = loads((data if data is not None else read_regular(ctx.path)).removeprefix(BOM))
    except OSError:
        return frozenset()
    apart: set[str | None] = set()
    for m in as_list(doc):
        text = as_str(m.get("text")) if isinstance(m, dict) and m.get("say") == "api_req_started" else None
        req, _ = loads(text.encode()) if text else (None, None)
        if isinstance(req, dict) and "apiProtocol" not in req:
            cached = safe_int(req.get("cacheReads")) + safe_int(req.get("cacheWrites"))
            if cached > safe_int(req.get("tokensIn")):
                apart.add(as_str(as_dict(m.get("modelInfo")).get("providerId")))
    return frozenset(apart)


def _system_text(name: str, text: str) -> str | None:
    """A retry's and a failed request's JSON (Cline 3.x) as words: `error_retry` is {attempt,
    maxAttempts, delaySeconds, failed?}, `api_req_failed` the error's {message, code, …}."""
    obj, _ = loads(text.encode()) if text[:1] == "{" else (None, None)
    if not isinstance(obj, dict):
        return text or None
    if name == "error_retry" and "attempt" in obj:
        attempt, most = safe_int(obj.get("attempt")), safe_int(obj.get("maxAttempts"))
        if obj.get("failed"):
            return f"retry {attempt} of {most} failed: no more retries"
        return f"retry {attempt} of {most} in {safe_int(obj.get('delaySeconds'))} s"
    if name == "api_req_failed":
        return as_str(obj.get("message")) or text
    return text


def _api_usage(data: dict[str, Any], key: str, apart: bool = False) -> Usage | None:
    """tokensIn of api_req_started: OpenAI-style providers (and newer Roo) count the cache inside it;
    without `apiProtocol`, a request is taken to when it cached no more than it, unless its provider
    is known to count it `apart` (_cache_apart)."""
    tin, tout = safe_int(data.get("tokensIn")), safe_int(data.get("tokensOut"))
    writes, reads = safe_int(data.get("cacheWrites")), safe_int(data.get("cacheReads"))
    if not (tin or tout or writes or reads):
        return None
    cached = writes + reads
    protocol = data.get("apiProtocol")
    inclusive = protocol == "openai" or (
        protocol != "anthropic" and not apart and cached > 0 and tin >= cached
    )
    cost = recorded_cost(data.get("cost"))  # what the extension itself priced the request at
    return Usage(key, None, max(0, tin - cached) if inclusive else tin, tout, writes, reads, cost)


def _sdk_usage(metrics: dict[str, Any], key: str) -> Usage | None:
    tin, tout = safe_int(metrics.get("inputTokens")), safe_int(metrics.get("outputTokens"))
    reads, writes = safe_int(metrics.get("cacheReadTokens")), safe_int(metrics.get("cacheWriteTokens"))
    if not (tin or tout or reads or writes):
        return None
    return Usage(key, None, max(0, tin - reads - writes), tout, writes, reads)


def _all_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def _api_prompt(content: Any) -> tuple[bool, str | None]:
    """Whether a model-facing user message holds something the person typed, and that text."""
    text = _all_text(content)
    if not text:
        return False, None
    tagged = TAGGED_PROMPT.search(text)
    if tagged:
        return True, tagged.group(2) or None
    bare = ENV_DETAILS.sub("", _all_text(_without_reminders(content))).strip()
    if not bare or bare.startswith("[") or bare.startswith("<"):
        return False, bare or None  # tool results ("[read_file for 'x'] Result:") and injected context
    return True, bare


def _without_reminders(content: Any) -> Any:
    """The message's text blocks but Cline's todo-list reminders (REMINDER), left out of what is
    shown as the environment details are (the raw record keeps them; the calls carry the list)."""
    if isinstance(content, str):
        return "" if REMINDER.match(content) else content
    if isinstance(content, list):
        return [b for b in content if not (isinstance(b, dict) and REMINDER.match(str(b.get("text") or "")))]
    return content


def _labels(label: str, tool: str) -> bool:
    """Whether Cline labels a result of `tool` `[label …]`: by the tool's name, but the results of
    its subagents `[subagents]` (use_subagents) and `[subagent: x]` (use_subagent_x, a configured one)."""
    return (
        label == tool
        or (label == "subagents" and tool == "use_subagents")
        or (label == "subagent" and tool.startswith("use_subagent_"))
    )


def _text_results(out: Record, content: Any, open_calls: list[tuple[str, str]]) -> tuple[Any, list[str]]:
    """The `[tool for 'x'] Result:` text blocks of a user message taken as the results of the open
    native calls they answer, those of the assistant message before it (the oldest open call of
    that tool; Cline sends one per call, in call order): (the message's other blocks, the results'
    texts). A block no open call of its tool waits for (the XML-tool era's results) stays text."""
    if not isinstance(content, list) or not open_calls:
        return content, []
    rest: list[Any] = []
    texts: list[str] = []
    for block in content:
        text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
        head = TEXT_RESULT.match(text) if isinstance(text, str) else None
        call = next((c for c in open_calls if head and _labels(head.group(1), c[1])), None)
        if head is None or call is None or not isinstance(text, str):
            rest.append(block)
            continue
        open_calls.remove(call)
        body = text[head.end() :]
        status = (
            "failed"
            if body.lstrip().startswith(TOOL_ERROR)
            else "rejected"
            if body.lstrip().startswith(TOOL_DENIED)
            else "completed"
        )
        out.tool_results.append(ToolResult(call[0], json_text(body), status))
        texts.append(body)
    return rest, texts


def _blocks(out: Record, content: Any, role: str | None) -> None:
    """Anthropic-style content: text, thinking, tool_use and tool_result blocks."""
    if isinstance(content, str):
        out.content = content or None
        return
    if not isinstance(content, list):
        return
    texts: list[str] = []
    thinking: list[str] = []
    results: list[str] = []
    for number, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif btype in ("thinking", "reasoning"):
            thinking.append(as_str(block.get("thinking")) or as_str(block.get("text")) or "")
        elif btype == "redacted_thinking":
            thinking.append("[redacted thinking]")
        elif btype == "tool_use" and block.get("id") is not None:
            params = wrapped_params(block.get("input"), "input")
            out.tool_uses.append(
                ToolUse(
                    str(block["id"]),
                    as_str(block.get("name")) or "?",
                    json_text(params),
                    number,
                    as_str(params.get("description")),
                    as_str(params.get("prompt")),
                )
            )
        elif btype == "tool_result" and block.get("tool_use_id") is not None:
            body = block.get("content")
            out.tool_results.append(
                ToolResult(
                    str(block["tool_use_id"]),
                    json_text(body),
                    "failed" if block.get("is_error") else "completed",
                )
            )
            results.append(_all_text(body) if not isinstance(body, str) else body)
    out.content = "\n".join(t for t in texts if t) or None
    out.thinking = "\n".join(t for t in thinking if t) or None
    if out.tool_uses:
        out.tool_text = "\n".join(f"{u.name} {input_text(u.input_json)}" for u in out.tool_uses)
    elif results:
        out.tool_text = "\n".join(r for r in results if r) or None
