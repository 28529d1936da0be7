"""OpenHands (the V1 CLI, OpenHands/OpenHands-CLI, on OpenHands/software-agent-sdk) conversations.

Where: `$OPENHANDS_CONVERSATIONS_DIR`, else `$OPENHANDS_PERSISTENCE_DIR/conversations`, else
`~/.openhands/conversations`; one folder per conversation, named by its id, holding
`base_state.json` (the conversation's state, rewritten whole on every change) and
`events/event-<index, 5+ digits>-<event id>.json` (one event a file, written once; the first SDK
releases named them `event-<index>.json`). Checked against software-agent-sdk's source (2026):
`conversation/persistence_const.py`, `event_store.py`, `state.py`, `event/base.py`,
`event/llm_convertible/{message,action,observation}.py`, and OpenHands-CLI's `locations.py` and its
resume docs.

An event is one JSON object `{kind, id, timestamp (local ISO time), source: user|agent|environment,
…}`: `MessageEvent {llm_message {role, content: [{type: text, text} | {type: image, …}],
reasoning_content}, llm_response_id, activated_skills, extended_content}`, `ActionEvent {thought:
[TextContent], reasoning_content, thinking_blocks, action, tool_name, tool_call_id, tool_call {id,
name, arguments (a JSON text)}, llm_response_id}` (the calls of one reply share its
`llm_response_id`), `ObservationEvent {tool_name, tool_call_id, observation {kind, content:
[TextContent], is_error, …}, action_id}`, `UserRejectObservation {rejection_reason}`,
`AgentErrorEvent {error}` (both answer a call), `SystemPromptEvent`, `Condensation`,
`CondensationSummaryEvent`, `ConversationStateUpdateEvent`, `PauseEvent`, … Every file is stored
whole; a kind not listed here is kept as an unknown record.

`base_state.json`: `{id, agent {kind, llm {model, …}, tools, …}, workspace {working_dir, …},
execution_status, stats {usage_to_metrics: {<usage id>: {model_name, accumulated_cost,
accumulated_token_usage {prompt_tokens, completion_tokens, cache_read_tokens, cache_write_tokens,
…}}}}, …}`: the folder, the model and the conversation's running token and cost totals.

Resume: `openhands --resume ID`, from the conversation's folder.

The app before the SDK (OpenHands 0.x, its web GUI and server, through 2025) kept a conversation in
`<file store>/sessions/<id, 32 hex digits>/` (`~/.openhands/sessions` for a local or docker run):
`metadata.json {conversation_id, title, selected_repository, selected_branch, trigger, created_at,
last_updated_at, llm_model, accumulated_cost, prompt_tokens, completion_tokens, total_tokens}` and
`events/<id>.json`, one event a file, `{id (0, 1, …), timestamp, source, message, action, args}` for
an action (`message`, `run`, `read`, `edit`, `browse_interactive`, `call_tool_mcp`, `think`,
`finish`, `system`, `recall`, `change_agent_state`, `condensation`, …) and `{…, observation, content,
extras, cause (the action's id), success}` for an observation; a call the model made carries
`tool_call_metadata {function_name, tool_call_id, model_response {id, model, usage}}`.
`event_cache/<from>-<to>.json` repeats 25 events in one list, and `agent_state.pkl`,
`conversation_stats.pkl` are Python pickles: none is read, each is kept whole with its conversation
(a side file), as is any other file of the folder; so is a metadata.json that is no JSON object, read
as it can be. Checked on a real 2025 file store (16 conversations) in a public repository.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

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
    ToolResult,
    ToolUse,
    Usage,
    parse_iso_ms,
    recorded_cost,
    safe_int,
)
from .edits import FileEdit
from .shared import (
    as_dict,
    as_list,
    as_str,
    head_of,
    json_text,
    parse_document,
    parse_record,
)
from .walk import walk

AGENT = "openhands"
BASE_STATE = "base_state.json"
EVENTS = "events"
_EVENT_NAME = re.compile(r"event-(\d{5,})(?:-[0-9a-fA-F-]{8,})?\.json")
KINDS = frozenset(
    {
        "MessageEvent",
        "ActionEvent",
        "ObservationEvent",
        "UserRejectObservation",
        "AgentErrorEvent",
        "SystemPromptEvent",
        "Condensation",
        "CondensationRequest",
        "CondensationSummaryEvent",
        "ConversationStateUpdateEvent",
        "ConversationErrorEvent",
        "PauseEvent",
        "TokenEvent",
    }
)
_COMPACTION = frozenset({"Condensation", "CondensationSummaryEvent"})
# the 0.x app's file store (module docstring)
APP_METADATA = "metadata.json"
_APP_ID = re.compile(r"[0-9a-f]{32}")  # the app names a conversation's folder by `uuid4().hex`
# how deep below its conversation's folder a file the app left there is kept (`event_cache/<n>.json`)
APP_SIDE_DEPTH = 3
_APP_EVENT_NAME = re.compile(r"[0-9]{1,9}\.json")  # ASCII digits: `\d` takes "٣.json" too
_APP_SOURCE = re.compile(rb'"source":\s*"(?:user|agent|environment)"')
# its events that are the app's own bookkeeping, not the conversation
APP_QUIET_ACTIONS = frozenset({"recall", "change_agent_state"})
APP_QUIET_OBSERVATIONS = frozenset({"agent_state_changed", "recall", "null", "condensation"})
# its actions that say something rather than call a tool
APP_SPEAKING_ACTIONS = frozenset({"message", "finish", "system", "condensation"})


def openhands_app_sessions_dir() -> Path:
    """Where the 0.x app kept its conversations when run on this machine (its file store's `sessions`)."""
    base = os.environ.get("OPENHANDS_PERSISTENCE_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".openhands") / "sessions"


def openhands_conversations_dir() -> Path:
    value = os.environ.get("OPENHANDS_CONVERSATIONS_DIR")
    if value:
        return Path(value).expanduser()
    base = os.environ.get("OPENHANDS_PERSISTENCE_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".openhands") / "conversations"


def event_index(path: Path) -> int | None:
    m = _EVENT_NAME.fullmatch(path.name)
    return int(m.group(1)) if m and path.parent.name == EVENTS else None


def app_event_index(path: Path) -> int | None:
    """The id of a 0.x app's event file (`events/<id>.json`); None for any other name."""
    if path.parent.name != EVENTS or not _APP_EVENT_NAME.fullmatch(path.name):
        return None
    return int(path.name[: -len(".json")])


def conversation_of(path: Path) -> str:
    """The conversation a file belongs to: the folder holding it (or holding its `events/`)."""
    return (path.parents[1] if path.parent.name == EVENTS else path.parent).name


def _texts(parts: Any) -> str | None:
    texts = [
        p["text"]
        for p in as_list(parts)
        if isinstance(p, dict) and p.get("type", "text") == "text" and isinstance(p.get("text"), str)
    ]
    return "\n".join(texts) or None


class OpenHandsAdapter(Adapter):
    """Reads OpenHands' conversation folders; see the module docstring."""

    name = AGENT
    env_vars = ("OPENHANDS_CONVERSATIONS_DIR", "OPENHANDS_PERSISTENCE_DIR")
    mode = "document"
    display_name = "OpenHands"
    program = "openhands"
    fork_style = "whole-session-resume"
    # the SDK's tools, and their names before the 1.0 renames
    edit_tools = frozenset({"file_editor", "str_replace_editor"})
    shell_tools = frozenset({"terminal", "execute_bash", "bash"})
    todo_tools = frozenset({"task_tracker"})

    def default_roots(self) -> list[Path]:
        return [openhands_conversations_dir(), openhands_app_sessions_dir()]

    def claims(self, path: Path) -> bool:
        if path.name == BASE_STATE:
            head = head_of(path, 16384).removeprefix(BOM).lstrip()
            return head.startswith(b"{") and b'"agent"' in head and b'"workspace"' in head
        if path.name == APP_METADATA and self.is_app_conversation(path.parent):
            return True
        if event_index(path) is not None:
            head = head_of(path, 4096).removeprefix(BOM).lstrip()
            return head.startswith(b"{") and b'"kind"' in head and b'"source"' in head
        if app_event_index(path) is not None:
            head = head_of(path, 4096).removeprefix(BOM).lstrip()
            # `action` or `observation` may come after a long `message` (the system prompt's)
            if head.startswith(b"{") and _APP_SOURCE.search(head) is not None:
                return True
            # one that says nothing of itself (empty, cut short, a list) in a conversation's folder
            # is still that conversation's: kept with it, read as it can be
            return self.is_app_conversation(path.parent.parent)
        return self.app_side_folder(path) is not None

    @staticmethod
    def _app_metadata_head(path: Path) -> bool:
        head = head_of(path, 4096).removeprefix(BOM).lstrip()
        return head.startswith(b"{") and b'"conversation_id"' in head and b'"title"' in head

    def is_app_conversation(self, folder: Path) -> bool:
        """A conversation's folder in the 0.x app's file store: it holds a metadata.json that says
        so, or any metadata.json beside `events/` when the folder is named as the app names them."""
        metadata = folder / APP_METADATA
        if not metadata.is_file():
            return False
        named = _APP_ID.fullmatch(folder.name) is not None and (folder / EVENTS).is_dir()
        return named or self._app_metadata_head(metadata)

    def app_side_folder(self, path: Path) -> Path | None:
        """The app's conversation folder that `path`, a file it does not read (an event cache, a
        pickle), lies in: kept whole with that conversation. None for any other file."""
        for folder in path.parents[:APP_SIDE_DEPTH]:
            # a name first: most files asked about lie in no such folder, and it costs no look
            if _APP_ID.fullmatch(folder.name) is None or not self.is_app_conversation(folder):
                continue
            own = (path.parent == folder and path.name == APP_METADATA) or (
                path.parent == folder / EVENTS and app_event_index(path) is not None
            )
            return None if own else folder  # its own records are read, not kept aside
        return None

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root):
                side = self.app_side_folder(root)
                if side is not None:
                    yield SourceRef(root, AGENT, "side", side.name)
                else:
                    yield SourceRef(root, AGENT, "document", conversation_of(root))
            return
        for dirpath, dirnames, filenames in walk(root):
            dirnames.sort()
            folder = Path(dirpath)
            if folder.name == EVENTS:
                continue  # read with its conversation's folder
            found: list[Path] = []
            for state in (BASE_STATE, APP_METADATA):
                if state in filenames and self.claims(folder / state):
                    found.append(folder / state)
            if EVENTS in dirnames:
                events = [
                    (index, folder / EVENTS / e.name)
                    for e in os.scandir(folder / EVENTS)
                    if (index := event_index(folder / EVENTS / e.name)) is not None
                    or (index := app_event_index(folder / EVENTS / e.name)) is not None
                ]
                found += [p for _, p in sorted(events) if self.claims(p)]
            for path in found:
                yield SourceRef(path, AGENT, "document", folder.name)
            if self.is_app_conversation(folder):
                yield from self._app_side_files(folder)
                dirnames.clear()  # its subfolders were walked for it

    def _app_side_files(self, folder: Path) -> Iterator[SourceRef]:
        """The files of an app's conversation folder that are not its records, kept whole with it."""
        for dirpath, dirnames, filenames in walk(folder):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if self.app_side_folder(path) == folder:
                    yield SourceRef(path, AGENT, "side", folder.name)

    def split(self, data: bytes) -> list[RawRecord]:
        parse_document(data)  # an event caught mid-write is read again later
        return [RawRecord(0, 1, data, newline=False)]

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        if ctx.kind == "side":  # kept whole with its conversation (the folder it lies in), not read
            what = (
                "event-cache"
                if ctx.path.parent.name == "event_cache"
                else ctx.path.stem.replace("_", "-")
                if ctx.path.suffix == ".pkl"
                else "file"
            )
            return Record(entry_type="side-file", subtype=what, session_id=ctx.project_key, side_file=True)
        obj, error = parse_record(rec.raw.removeprefix(BOM))
        sid = conversation_of(ctx.path)
        info = SessionInfo(source=AGENT, external_id=sid)
        if not isinstance(obj, dict):
            return Record(
                entry_type="invalid",
                known=False,
                parse_error=error or "not a JSON object",
                session_id=sid,
                session=info,
            )
        out = Record(session_id=sid, session=info, parse_error=error)
        if ctx.path.name == BASE_STATE:
            self._state(out, obj, sid)
        elif ctx.path.name == APP_METADATA:
            self._app_metadata(out, obj, sid)
        elif "kind" not in obj and ("action" in obj or "observation" in obj):
            self._app_event(out, obj, sid)
        else:
            self._event(out, obj)
        return out

    def _app_metadata(self, out: Record, obj: dict[str, Any], sid: str) -> None:
        """The 0.x app's `metadata.json`: the title it gave, when, the model and its running totals."""
        out.entry_type, out.is_meta = "metadata", True
        out.timestamp = parse_iso_ms(obj.get("created_at"))
        out.model = as_str(obj.get("llm_model"))
        title = as_str(obj.get("title"))
        if title:
            out.entry_type, out.content, out.title = "ai-title", title, ("ai-title", title)
        prompt, completion = safe_int(obj.get("prompt_tokens")), safe_int(obj.get("completion_tokens"))
        cost = recorded_cost(obj.get("accumulated_cost"))
        if prompt or completion or cost:
            out.usage = Usage(f"{AGENT}:{sid}:metadata", None, prompt, completion, cost_usd=cost or None)

    def _app_event(self, out: Record, obj: dict[str, Any], sid: str) -> None:
        """An event of the 0.x app (module docstring): an action or the observation answering one.
        A call and its result are joined by the action's id (`cause`), unique in a conversation
        where the model's own call ids need not be."""
        action, observation = as_str(obj.get("action")), as_str(obj.get("observation"))
        args = as_dict(obj.get("args"))
        source = as_str(obj.get("source"))
        metadata = as_dict(obj.get("tool_call_metadata"))
        response = as_dict(metadata.get("model_response"))
        out.entry_type = action or f"observation:{observation}"
        out.uuid = f"{sid}:{obj.get('id')}"
        out.timestamp = parse_iso_ms(obj.get("timestamp"))
        out.model = as_str(response.get("model"))
        if action is not None:
            out.known = True
            if action in APP_QUIET_ACTIONS:
                out.is_meta = True
            elif action == "system":
                out.role, out.is_meta, out.content = "system", True, as_str(args.get("content"))
            elif action == "condensation":
                out.is_meta = out.is_compaction = True
                out.content = as_str(args.get("summary"))
            elif action == "message" and source == "user":
                out.role, out.content = "user", as_str(args.get("content"))
                out.is_message = out.is_prompt = out.content is not None
            elif action in ("message", "finish"):
                out.role = "assistant"
                out.content = as_str(args.get("content")) or as_str(args.get("final_thought"))
                out.content = out.content or as_str(obj.get("message"))
                out.message_id = as_str(response.get("id")) or out.uuid
                out.is_message = out.content is not None
            else:
                self._app_call(out, obj, action, args, metadata, response)
            return
        out.known = observation is not None
        cause = obj.get("cause")
        if observation in APP_QUIET_OBSERVATIONS or observation is None:
            out.is_meta = True
        elif not isinstance(cause, int):
            # an error the app met on its own (a call the model wrote wrong): said where it happened
            out.role, out.is_message = "system", True
            out.content = as_str(obj.get("content")) or as_str(obj.get("message"))
        else:
            out.role = "user"
            content = as_str(obj.get("content"))
            out.tool_text = content
            exit_code = as_dict(as_dict(obj.get("extras")).get("metadata")).get("exit_code")
            failed = (
                observation == "error"
                or obj.get("success") is False
                or (isinstance(exit_code, int) and exit_code not in (0, -1))
            )
            status = "failed" if failed else "completed"
            out.tool_results.append(ToolResult(f"{sid}:{cause}", json_text(content), status))
            working = as_dict(as_dict(obj.get("extras")).get("metadata")).get("working_dir")
            out.cwd = as_str(working)

    def _app_call(
        self,
        out: Record,
        obj: dict[str, Any],
        action: str,
        args: dict[str, Any],
        metadata: dict[str, Any],
        response: dict[str, Any],
    ) -> None:
        """A tool the model called (or the user ran): its words before the call, and the call."""
        out.role, out.is_message = "assistant", True
        out.content = as_str(args.get("thought")) or None
        out.message_id = as_str(response.get("id")) or out.uuid
        params = {
            k: v for k, v in args.items() if k not in ("thought", "security_risk", "confirmation_state")
        }
        tool = ToolUse(out.uuid or "?", as_str(metadata.get("function_name")) or action, json_text(params))
        out.tool_uses.append(tool)
        out.tool_text = tool.input_json

    def _state(self, out: Record, obj: dict[str, Any], sid: str) -> None:
        out.entry_type, out.is_meta = "base_state", True
        out.cwd = as_str(as_dict(obj.get("workspace")).get("working_dir"))
        out.model = as_str(as_dict(as_dict(obj.get("agent")).get("llm")).get("model"))
        metrics = [as_dict(m) for m in as_dict(as_dict(obj.get("stats")).get("usage_to_metrics")).values()]
        if metrics:
            tokens = [as_dict(m.get("accumulated_token_usage")) for m in metrics]
            costs = [c for m in metrics if (c := recorded_cost(m.get("accumulated_cost"))) is not None]
            out.usage = Usage(
                f"{AGENT}:{sid}:stats",
                None,
                input_tokens=sum(safe_int(t.get("prompt_tokens")) for t in tokens),
                output_tokens=sum(safe_int(t.get("completion_tokens")) for t in tokens),
                cache_creation_tokens=sum(safe_int(t.get("cache_write_tokens")) for t in tokens),
                cache_read_tokens=sum(safe_int(t.get("cache_read_tokens")) for t in tokens),
                cost_usd=sum(costs) if costs else None,
            )

    def _event(self, out: Record, obj: dict[str, Any]) -> None:
        kind = as_str(obj.get("kind"))
        out.entry_type, out.known = kind, kind in KINDS
        out.uuid = as_str(obj.get("id"))
        out.timestamp = parse_iso_ms(obj.get("timestamp"))
        source = as_str(obj.get("source"))
        if kind == "MessageEvent":
            message = as_dict(obj.get("llm_message"))
            text = _texts(message.get("content"))
            if source == "agent" or message.get("role") == "assistant":
                out.role, out.content = "assistant", text
                out.thinking = as_str(message.get("reasoning_content"))
                out.message_id = as_str(obj.get("llm_response_id")) or out.uuid
            else:
                out.role, out.content = "user", text
                out.is_prompt = source == "user" and text is not None
            out.is_message = text is not None or out.thinking is not None
        elif kind == "ActionEvent":
            out.role = "assistant"
            out.content = _texts(obj.get("thought"))
            out.thinking = as_str(obj.get("reasoning_content"))
            out.message_id = as_str(obj.get("llm_response_id")) or out.uuid
            call = as_dict(obj.get("tool_call"))
            arguments = call.get("arguments")
            params: Any = arguments
            if isinstance(arguments, str):
                try:
                    params = orjson.loads(arguments)
                except orjson.JSONDecodeError:
                    params = arguments
            if not isinstance(params, dict):
                params = as_dict(obj.get("action")) or {"arguments": params}
            tool = ToolUse(
                as_str(obj.get("tool_call_id")) or as_str(call.get("id")) or f"{out.uuid}:0",
                as_str(obj.get("tool_name")) or as_str(call.get("name")) or "?",
                json_text(params),
            )
            out.tool_uses.append(tool)
            out.tool_text = tool.input_json
            out.is_message = True
        elif kind in ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent"):
            out.role = "user"
            call_id = as_str(obj.get("tool_call_id")) or ""
            if kind == "ObservationEvent":
                observation = as_dict(obj.get("observation"))
                out.tool_text = _texts(observation.get("content"))
                status = "failed" if observation.get("is_error") is True else "completed"
                result = json_text(observation)
            elif kind == "UserRejectObservation":
                out.tool_text = as_str(obj.get("rejection_reason"))
                status, result = "rejected", json_text(out.tool_text)
            else:
                out.tool_text = as_str(obj.get("error"))
                status, result = "failed", json_text(out.tool_text)
            out.tool_results.append(ToolResult(call_id, result, status))
        elif kind == "SystemPromptEvent":
            out.role, out.is_meta = "system", True
            out.content = _texts([obj.get("system_prompt")])
        elif kind in _COMPACTION:
            out.is_compaction = True
            out.is_meta = True
            out.content = as_str(obj.get("summary"))
        else:
            out.is_meta = True

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """`file_editor {command: create | str_replace | insert | undo_edit | view, path, file_text,
        old_str, new_str, insert_line}`: read as its parameters say (`edits.generic_edits`)."""
        if name in self.edit_tools and not self.is_edit(name, params):
            return []  # view: no change
        return super().file_edits(name, params, result)

    def is_edit(self, name: str, params: dict[str, Any]) -> bool:
        if name in self.edit_tools:
            return params.get("command") in ("create", "str_replace", "insert", "undo_edit")
        return super().is_edit(name, params)

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """`openhands --resume ID`, run in the conversation's folder. A conversation of the 0.x app
        (its file store's `sessions/`, none of the CLI's own) is refused, saying where it opens:
        the CLI looks only among its own and would not find it."""
        sid = self.checked_id(target.external_id)
        if (openhands_app_sessions_dir() / sid).is_dir() and not (
            openhands_conversations_dir() / sid
        ).exists():
            raise ForkError(
                "this is a conversation of the OpenHands app before its CLI (0.x, kept in "
                f"{openhands_app_sessions_dir()}): `openhands --resume` finds only the CLI's own; "
                "open it in the OpenHands app"
            )
        return Command([self.program, "--resume", sid])
