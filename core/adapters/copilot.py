"""GitHub Copilot CLI session event logs.

Where: `$COPILOT_HOME/session-state/<session id>/events.jsonl` (`~/.copilot` by default), beside
`workspace.yaml` (cwd, branch, summary), `plan.md` and `checkpoints/`; `--source` folders at any
depth. Checked against the event schema of github/copilot-sdk
(`nodejs/src/generated/session-events.ts`, generated from the runtime's session-events schema).

One event a line: `{type, id, parentId, timestamp, data, agentId?, ephemeral?}`; `parentId` is the
chronologically preceding event (a chain, not a tree). Events marked ephemeral in the schema
(`assistant.usage`, deltas, `session.title_changed`) are not written to disk. The ones read:
`session.start` (`sessionId`, `copilotVersion`, `selectedModel`, `context {cwd, branch, gitRoot,
repository}`), `session.model_change` (`newModel`; "auto" names none),
`session.auto_mode_resolved` (`chosenModel`: the model "auto" picked), `session.tools_updated`
(`model`: the model a run uses, in 1.0.x's real events), `user.message` (`content`; `source` set for
messages a human did not type), `assistant.message` (`messageId`, `content`, `reasoningText`,
`toolRequests [{toolCallId, name, arguments}]`, `model`, `outputTokens`), `assistant.reasoning`,
`tool.execution_start` / `tool.execution_complete` (`toolCallId`, `success`, `result {content,
detailedContent}`, `error`), `tool.user_requested` (a `!` command the user ran: `toolCallId`,
`toolName`, `arguments`; its result follows with no execution_start),
`session.compaction_complete` (`summaryContent`) and
`session.shutdown` (`modelMetrics {<model>: {usage {inputTokens, outputTokens, cacheReadTokens,
cacheWriteTokens}, tokenDetails {input, cache_read, cache_write, output: {tokenCount}}}}`, written
at the end of each run of the program). Every other type is kept as an event.

Subagents (the `task` tool) write their events into the same file, each marked with the subagent's
`agentId` and, on its calls and messages, `data.parentToolCallId` (the spawning call):
`subagent.started` / `subagent.completed` carry `toolCallId`. They become a child session
`<session>:agent-<spawning call>` linked to that call.

Tokens: an assistant message records its output tokens only; a shutdown records the input and
cache tokens per model, counted from the session's start (a resumed session's shutdown repeats the
runs before it: in real 1.0.77 logs the second shutdown holds the first one's figures unchanged).
Each model a shutdown names is one usage of the session under an id of its own (the session's and
the model's), so each is priced at its model's rate and dated at its first shutdown; a later
shutdown's figures replace its earlier ones (the largest counts stand, none counted twice). Its
output tokens are the messages', not counted again. `tokenDetails` (1.0.5x
on) gives the uncached input itself, and also counts a compaction's call; without it
`usage.inputTokens` holds both cache buckets (so it is read less the reads and the writes).

Resume: `copilot --resume <session id>` (its docs and help; the id is the folder's name).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from .base import (
    UUID,
    Adapter,
    Command,
    FileContext,
    ForkError,
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
from .shared import (
    as_dict,
    as_list,
    as_str,
    head_lines,
    head_of,
    json_text,
    lines_of,
    parse_record,
    wrapped_params,
)
from .walk import walk

AGENT = "copilot-cli"
FILE_NAME = "events.jsonl"
KNOWN = frozenset(
    {
        "session.start",
        "session.resume",
        "session.model_change",
        "session.tools_updated",
        "session.mcp_server_status_changed",
        "session.info",
        "session.error",
        "session.shutdown",
        "session.truncation",
        "session.compaction_start",
        "session.compaction_complete",
        "user.message",
        "system.message",
        "assistant.message",
        "assistant.reasoning",
        "assistant.turn_start",
        "assistant.turn_end",
        "tool.execution_start",
        "tool.execution_complete",
        "tool.user_requested",
        "subagent.started",
        "subagent.completed",
        "subagent.failed",
        "abort",
        # written by 1.0.5x to 1.0.78 (seen in real logs), kept as events
        "session.auto_mode_resolved",
        "session.usage_checkpoint",
        "session.permissions_changed",
        "session.mode_changed",
        "session.task_complete",
        "system.notification",
        "permission.requested",
        "permission.completed",
        "hook.start",
        "hook.end",
        # persisted too, as the SDK's event docs say
        "session.plan_changed",
        "session.workspace_file_changed",
    }
)

# what the lines a reader's state comes from hold (see `CopilotAdapter.start_file`): the session's
# start, a subagent's start or end, an assistant's calls, a user's `!` command
# the events that name the model in use (`_READERS`)
MODEL_EVENTS = frozenset(
    {"session.start", "session.model_change", "session.auto_mode_resolved", "session.tools_updated"}
)
STATE_MARKERS = (
    b'"session.',  # its start, and the model in use (MODEL_EVENTS)
    b'"subagent.',
    b'"toolRequests"',
    b'"tool.user_requested"',
)

SESSION_FOLDER = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
# what a running copilot leaves to say it has the session open: not the session's
LOCK_FILE = re.compile(r"^inuse\.\d+\.lock$")


def side_file(path: Path) -> tuple[str, str] | None:
    """(what it is, its session) of a file Copilot CLI keeps in a session's folder beside its events:
    `workspace.yaml` (folder, branch, the session's summary), `plan.md`, the VS Code extension's
    `vscode.*.json` (the title given to it), and `checkpoints/` (what each checkpoint holds); None
    for the events, a lock or anything else."""
    parts = path.parts
    if len(parts) >= 3 and parts[-2] == "checkpoints" and SESSION_FOLDER.match(parts[-3]):
        return "checkpoint", parts[-3]
    if len(parts) < 2 or not SESSION_FOLDER.match(parts[-2]) or path.name == FILE_NAME:
        return None
    if LOCK_FILE.match(path.name):
        return None
    return (
        "workspace" if path.name == "workspace.yaml" else "plan" if path.name == "plan.md" else "file"
    ), parts[-2]


def yaml_scalar(data: bytes, key: str) -> str | None:
    """The text of a top-level `key:` in a small YAML mapping as Copilot CLI writes
    `workspace.yaml`: plain, quoted, or a block (`|`, `>` and their `-`/`+`). None when absent or
    not text. (No YAML library for one field: what it cannot read is left out, never guessed.)"""
    try:
        lines = data.decode("utf-8").removeprefix("\ufeff").splitlines()
    except UnicodeDecodeError:
        return None
    for i, line in enumerate(lines):
        if not line.startswith(key + ":"):
            continue
        value = line[len(key) + 1 :].strip()
        if value[:1] in ("|", ">"):
            body: list[str] = []
            indent: int | None = None
            for more in lines[i + 1 :]:
                if not more.strip():
                    body.append("")
                    continue
                lead = len(more) - len(more.lstrip(" "))
                if lead == 0 or (indent is not None and lead < indent):
                    break
                indent = lead if indent is None else indent
                body.append(more[indent:])
            text = ("\n" if value[0] == "|" else " ").join(body).strip("\n")
            return text.strip() or None
        if value[:1] == '"':
            try:
                decoded = orjson.loads(value)
            except orjson.JSONDecodeError:
                return None
            return decoded.strip() or None if isinstance(decoded, str) else None
        if value[:1] == "'":
            return (
                value[1:-1].replace("''", "'").strip() or None
                if value.endswith("'") and len(value) > 1
                else None
            )
        value = value.split(" #", 1)[0].strip()
        # an alias, an anchor, a tag, a list or a mapping, or null: not text, never taken for it
        return (
            None
            if value[:1] in ("*", "&", "!", "[", "{") or value in ("~", "null", "Null", "NULL")
            else value or None
        )
    return None


def _vscode_title(data: bytes) -> str | None:
    """`customTitle` of the VS Code extension's `vscode.metadata.json`."""
    try:
        meta = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return (as_str(as_dict(meta).get("customTitle")) or "").strip() or None


def _session_named(ctx: FileContext, events: Path) -> str | None:
    """The session id the `session.start` heading a folder's events names (the folder's name is
    Copilot's own, but a copied or renamed folder may say otherwise): None without one. A replay's
    as the archive holds the events (the folder deleted since perhaps), the disk's where it holds none."""
    kept = ctx.archived(glob.escape(str(events)), b"{") if ctx.archived is not None else {}
    try:
        head = next((records[0] for records in kept.values() if records), None) or head_of(events, 8192)
        first = head_lines(head, 1)
    except OSError:
        return None
    start = first[0] if first else None
    if isinstance(start, dict) and start.get("type") == "session.start":
        return as_str(as_dict(start.get("data")).get("sessionId")) or None
    return None


def copilot_home() -> Path:
    value = os.environ.get("COPILOT_HOME")
    return Path(value).expanduser() if value else Path.home() / ".copilot"


def looks_like_copilot(head: bytes) -> bool:
    """Whether a file's first line is a Copilot CLI event (a `session.start` from `copilot-agent`,
    or any event in its envelope: `type` with a dot, `data`, `id`)."""
    first, *rest = head_lines(head) or [None]
    if first is None:  # cut short or damaged: the producer's name, or the events after it
        return b'"producer":"copilot-agent"' in head.split(b"\n", 1)[0] or any(map(_copilot_event, rest))
    return _copilot_event(first)


def _copilot_event(obj: object) -> bool:
    if not isinstance(obj, dict) or not isinstance(obj.get("data"), dict):
        return False
    kind = obj.get("type")
    return isinstance(kind, str) and "." in kind and ("id" in obj or kind == "session.start")


def _input_split(row: dict[str, Any]) -> tuple[int, int, int]:
    """(uncached input, cache reads, cache writes) of one model's row of a shutdown's `modelMetrics`:
    `tokenDetails` where it is written (it counts a compaction's call too), else `usage`, whose
    `inputTokens` holds both cache buckets."""
    details = as_dict(row.get("tokenDetails"))
    if details:
        fresh, reads, writes = (
            safe_int(as_dict(details.get(key)).get("tokenCount"))
            for key in ("input", "cache_read", "cache_write")
        )
        return fresh, reads, writes
    usage = as_dict(row.get("usage"))
    reads, writes = safe_int(usage.get("cacheReadTokens")), safe_int(usage.get("cacheWriteTokens"))
    return max(0, safe_int(usage.get("inputTokens")) - reads - writes), reads, writes


def _session_folder(path: Path) -> bool:
    """A file in a session's own folder of Copilot's session state (`session-state/<uuid>/`)."""
    return SESSION_FOLDER.match(path.parent.name) is not None and path.parent.parent.name == "session-state"


class CopilotAdapter(Adapter):
    """Reads GitHub Copilot CLI's session events; see the module docstring."""

    name = AGENT
    env_vars = ("COPILOT_HOME",)
    mode = "lines"
    display_name = "Copilot CLI"
    program = "copilot"
    id_shape = (UUID, "a UUID")
    fork_style = "whole-session-resume"
    edit_tools = frozenset({"edit", "str_replace", "str_replace_editor"})
    write_tools = frozenset({"create"})
    patch_tools = frozenset({"apply_patch"})
    read_tools = frozenset({"view", "read"})
    shell_tools = frozenset({"bash", "powershell", "local_shell"})
    todo_tools = frozenset({"update_todo"})
    # `task` starts a subagent, linked by its call id (the ledger does not need its prompt)

    def default_roots(self) -> list[Path]:
        return [copilot_home() / "session-state"]

    def claims(self, path: Path) -> bool:
        if path.name == FILE_NAME:
            head = head_of(path, 8192)
            # Copilot makes a session's events file before it writes to it: one found empty or with
            # its first line half written (a run just started, a watch quick to look) is Copilot's
            # by its place, or another reader would take it (Claude Code's takes an empty JSONL)
            # and keep it for good, or none would and it was not offered again as it grew
            return looks_like_copilot(head) or (b"\n" not in head.strip() and _session_folder(path))
        return self._beside_events(path) and side_file(path) is not None

    @staticmethod
    def _beside_events(path: Path) -> bool:
        """A file of a session folder that holds Copilot's events (or held them: a folder whose
        events were deleted still has `workspace.yaml`)."""
        folder = path.parent.parent if path.parent.name == "checkpoints" else path.parent
        return (folder / FILE_NAME).is_file() or (folder / "workspace.yaml").is_file()

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root):
                kind = "transcript" if root.name == FILE_NAME else "side"
                yield SourceRef(root, AGENT, kind, self._folder_of(root))
            return
        for dirpath, dirnames, filenames in walk(root):
            dirnames.sort()
            folder = Path(dirpath)
            if FILE_NAME in filenames and self.claims(folder / FILE_NAME):
                yield SourceRef(folder / FILE_NAME, AGENT, "transcript", folder.name)
            for name in sorted(filenames):
                path = folder / name
                if name != FILE_NAME and side_file(path) is not None and self._beside_events(path):
                    yield SourceRef(path, AGENT, "side", self._folder_of(path))

    @staticmethod
    def _folder_of(path: Path) -> str:
        """The session folder a file is kept in: a restore writes it back under it."""
        return path.parent.parent.name if path.parent.name == "checkpoints" else path.parent.name

    def start_file(self, ctx: FileContext, first_offset: int) -> None:
        """A read that starts past the file's start (an append: a session followed live) first
        rebuilds what the lines before it taught (the session's id, the subagents' spawning calls,
        the calls asked for), so that it reads its lines as one read of the whole file would."""
        ctx.state["started"] = True
        if first_offset <= 0 or ctx.kind != "transcript":
            return
        try:
            data = read_regular(ctx.path, first_offset)
        except OSError:
            return
        for rec in lines_of(data):
            if any(marker in rec.raw for marker in STATE_MARKERS):
                self.normalize(rec, ctx)

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        side = side_file(ctx.path) if ctx.kind == "side" else None
        if side is not None:  # kept whole with its session (the one its folder's events name), not read
            events = ctx.path.parent.parent if side[0] == "checkpoint" else ctx.path.parent
            session = _session_named(ctx, events / FILE_NAME) or side[1]
            out = Record(entry_type="side-file", subtype=side[0], session_id=session, side_file=True)
            summary = yaml_scalar(rec.raw, "summary") if side[0] == "workspace" else None
            if summary:  # the title Copilot CLI lists the session by, its model's summary of it
                out.entry_type, out.content, out.title = "ai-title", summary, ("ai-title", summary)
            named = _vscode_title(rec.raw) if ctx.path.name == "vscode.metadata.json" else None
            if named:  # the title its user gave it in VS Code
                out.entry_type, out.content, out.title = "custom-title", named, ("custom-title", named)
            return out
        if "started" not in ctx.state:
            self.start_file(ctx, rec.offset)
        # read leniently where orjson refuses (invalid UTF-8, a lone surrogate), the refusal noted
        obj, error = parse_record(rec.raw)
        if obj is None:
            return Record(entry_type="invalid", known=False, parse_error=(error or "a blank line")[:200])
        if not isinstance(obj, dict):
            return Record(entry_type="invalid", known=False, parse_error="not a JSON object")
        st = ctx.state
        kind = as_str(obj.get("type"))
        data = as_dict(obj.get("data"))
        if kind == "session.start" and as_str(data.get("sessionId")):
            st["sid"] = data["sessionId"]
        sid = st.get("sid") or ctx.path.parent.name
        out = Record(
            parse_error=error,
            entry_type=kind,
            known=kind in KNOWN,
            uuid=as_str(obj.get("id")),
            parent_uuid=as_str(obj.get("parentId")) or None,
            timestamp=parse_iso_ms(obj.get("timestamp")),
        )
        # a subagent's events: its agentId, and on calls and messages the spawning call's id
        agent = as_str(obj.get("agentId"))
        spawn = as_str(data.get("parentToolCallId"))
        if kind in ("subagent.started", "subagent.completed", "subagent.failed"):
            call = as_str(data.get("toolCallId"))
            if agent and call:
                st.setdefault("agents", {})[agent] = call
            agent = None  # the parent's record of its subagent
        if agent and not spawn:
            spawn = st.get("agents", {}).get(agent) or agent
        if spawn:
            out.is_sidechain, out.agent_id = True, spawn
            out.session_id = f"{sid}:agent-{spawn}"
            out.session = SessionInfo(
                source=AGENT,
                external_id=spawn,
                kind="subagent",
                is_subagent=1,
                parent_session_id=sid,
                agent_id=spawn,
                tool_call_id=spawn,
                project_key=ctx.project_key,
            )
        else:
            out.session_id = sid
            out.session = SessionInfo(source=AGENT, external_id=sid, project_key=ctx.project_key)
        reader = _READERS.get(kind or "")
        if reader is not None:
            reader(self, out, data, st)
            if kind in MODEL_EVENTS and out.model:
                st["model"] = out.model  # the model in use: a reply that names none ran on it
        return out

    # ------------------------------------------------------------------ record kinds

    def _start(self, out: Record, data: dict[str, Any], st: dict[str, Any]) -> None:
        context = as_dict(data.get("context"))
        out.cwd = as_str(context.get("cwd"))
        out.git_branch = as_str(context.get("branch"))
        out.version = as_str(data.get("copilotVersion"))
        model = as_str(data.get("selectedModel"))
        out.model = model if model and model != "auto" else None

    def _model_change(self, out: Record, data: dict[str, Any], st: dict[str, Any]) -> None:
        """ "auto" is no model: the one it picks is named by `session.auto_mode_resolved`."""
        model = as_str(data.get("newModel"))
        out.model = model if model and model != "auto" else None

    def _user(self, out: Record, data: dict[str, Any], st: dict[str, Any]) -> None:
        out.role = "user"
        out.content = as_str(data.get("content")) or None
        out.is_message = out.content is not None
        source = as_str(data.get("source"))
        out.is_prompt = out.is_message and not out.is_sidechain and source in (None, "user")
        out.is_meta = source not in (None, "user")

    def _system(self, out: Record, data: dict[str, Any], st: dict[str, Any]) -> None:
        out.role = "system"
        out.content = as_str(data.get("content")) or None
        out.is_meta = True

    def _error(self, out: Record, data: dict[str, Any], st: dict[str, Any]) -> None:
        """A turn that failed (no quota, a rate limit, the model unreachable): shown where it
        happened, as other agents' errors are; without it the prompt looks unanswered."""
        out.role = "system"
        out.content = as_str(data.get("message")) or (json_text(data) if data else None)
        out.is_message = out.content is not None

    def _assistant(self, out: Record, data: dict[str, Any], st: dict[str, Any]) -> None:
        out.role = "assistant"
        out.content = as_str(data.get("content")) or None
        out.thinking = as_str(data.get("reasoningText")) or None
        # 1.0.7x replies name no model: the one in use then, so their output tokens are priced
        out.model = as_str(data.get("model")) or st.get("model")
        out.message_id = as_str(data.get("messageId")) or out.uuid
        texts: list[str] = []
        requested = st.setdefault("requested", set())
        for number, request in enumerate(as_list(data.get("toolRequests"))):
            request = as_dict(request)
            call_id = as_str(request.get("toolCallId")) or f"{out.uuid}:{number}"
            params = wrapped_params(request.get("arguments"), "input")
            out.tool_uses.append(
                ToolUse(call_id, as_str(request.get("name")) or "?", json_text(params), number)
            )
            texts.append(json_text(params))
            requested.add(call_id)
        out.tool_text = "\n".join(texts) or None
        out.is_message = bool(out.content or out.thinking or out.tool_uses)
        tokens = safe_int(data.get("outputTokens"))
        if tokens and out.message_id:
            out.usage = Usage(out.message_id, as_str(data.get("requestId")), output_tokens=tokens)

    def _reasoning(self, out: Record, data: dict[str, Any], st: dict[str, Any]) -> None:
        out.role = "assistant"
        out.thinking = as_str(data.get("content")) or None
        out.is_message = out.thinking is not None

    def _tool_start(self, out: Record, data: dict[str, Any], st: dict[str, Any]) -> None:
        """A call no assistant message asked for (the user's `!` shell commands) is one of its own."""
        call_id = as_str(data.get("toolCallId"))
        if call_id and call_id not in st.get("requested", ()):
            params = wrapped_params(data.get("arguments"), "input")
            out.tool_uses.append(ToolUse(call_id, as_str(data.get("toolName")) or "?", json_text(params)))
            out.tool_text = json_text(params)

    def _user_command(self, out: Record, data: dict[str, Any], st: dict[str, Any]) -> None:
        """A `!` command the user ran (1.0.78 on): shown as the user's, its result following."""
        call_id = as_str(data.get("toolCallId"))
        if not call_id:
            return
        params = wrapped_params(data.get("arguments"), "input")
        out.role = "user"
        out.tool_uses.append(ToolUse(call_id, as_str(data.get("toolName")) or "?", json_text(params)))
        out.tool_text = json_text(params)
        out.is_message = True
        st.setdefault("requested", set()).add(call_id)

    def _tool_complete(self, out: Record, data: dict[str, Any], st: dict[str, Any]) -> None:
        out.role = "user"
        call_id = as_str(data.get("toolCallId"))
        if not call_id:
            return
        result = data.get("result")
        error = as_dict(data.get("error"))
        body = result if result is not None else (error or None)
        status = "completed" if data.get("success") is True else "failed"
        if as_str(error.get("code")) in ("rejected", "denied"):
            status = "rejected"
        out.tool_results.append(ToolResult(call_id, json_text(body), status))
        text = as_str(as_dict(result).get("content")) or as_str(error.get("message"))
        out.tool_text = text or None

    def _compaction(self, out: Record, data: dict[str, Any], st: dict[str, Any]) -> None:
        """The summary the model goes on from: shown where the compaction happened, a new segment."""
        out.is_compaction = out.segment_marker = True
        out.role, out.is_meta = "system", True
        out.content = as_str(data.get("summaryContent")) or None
        out.is_message = out.content is not None

    def _shutdown(self, out: Record, data: dict[str, Any], st: dict[str, Any]) -> None:
        """The session's input and cache tokens so far (see the module docstring): one usage id a
        session and model, priced at that model's rate and dated at the first shutdown naming it;
        a later shutdown's larger counts replace an earlier one's."""
        split = {
            model: _input_split(as_dict(row)) for model, row in as_dict(data.get("modelMetrics")).items()
        }
        if not split or not out.session_id:
            return
        # the session's model where its messages name none: the one that read the most
        out.model = max(split, key=lambda m: sum(split[m]))
        out.more_usage = [
            Usage(
                f"{out.session_id}:shutdown:{model}",
                None,
                input_tokens=fresh,
                cache_read_tokens=reads,
                cache_creation_tokens=writes,
                model=model,
            )
            for model, (fresh, reads, writes) in split.items()
        ]

    # ------------------------------------------------------------------ capabilities

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """`copilot --resume ID`, run in the session's folder."""
        if fork:
            raise ForkError("Copilot CLI has no command that copies a session; resume it instead")
        return Command([self.program, "--resume", self.checked_id(target.external_id)])


_READERS = {
    "session.start": CopilotAdapter._start,
    "session.resume": lambda self, out, data, st: None,
    "session.model_change": CopilotAdapter._model_change,
    # the model `auto` chose for the session (1.0.77 on)
    "session.auto_mode_resolved": lambda self, out, data, st: setattr(
        out, "model", as_str(data.get("chosenModel"))
    ),
    # 1.0.x writes the model a run uses here (the start's `selectedModel` can be "auto")
    "session.tools_updated": lambda self, out, data, st: setattr(out, "model", as_str(data.get("model"))),
    "user.message": CopilotAdapter._user,
    "system.message": CopilotAdapter._system,
    "session.error": CopilotAdapter._error,
    "assistant.message": CopilotAdapter._assistant,
    "assistant.reasoning": CopilotAdapter._reasoning,
    "tool.execution_start": CopilotAdapter._tool_start,
    "tool.user_requested": CopilotAdapter._user_command,
    "tool.execution_complete": CopilotAdapter._tool_complete,
    "session.compaction_complete": CopilotAdapter._compaction,
    "session.shutdown": CopilotAdapter._shutdown,
}
