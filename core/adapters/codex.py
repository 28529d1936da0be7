"""OpenAI Codex CLI: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl` (FORMATS.md §3).

Eras read here:
  * bare (Rust CLI ≤ Sept 2025): a `{id, timestamp, instructions, git}` header, then bare ResponseItems;
  * wrapped (Sept 2025 →): `{timestamp, type, payload}` lines, incl. the 2026 meta drift and `ordinal`;
  * TypeScript snapshots (spring 2025): pretty-printed `rollout-<date>-<uuid>.json`, one new file per
    save. The ingest cuts them into lines like any log (so they round-trip byte for byte); the items
    are reassembled here from those lines, and their ids are chained over content, so the many
    snapshots of one conversation collapse into one session;
  * `.jsonl.zst` (v0.137 →): kept whole as one document entry (its exact bytes stay restorable),
    and its decompressed log is read line by line like a plain rollout (the ingest's `decode` hook),
    so every message is browsable and searchable. Its lines get the same ids as the plain file's
    had, so a session read from both (plain first, compressed after the worker replaced it) counts
    each record once.

Every ResponseItem is shown: messages (also in the Responses API's short `{role, content}` form with
no type), reasoning (a step kept only encrypted says so), each kind of call and its output, and an
item of a kind not known here, dimmed, with its text or fields.

Codex lines carry no per-record ids, so each line gets `<thread>:<line>` and the previous line as
its parent. Tokens come from `token_count` events, keyed by the cumulative totals they report, so a
total emitted twice, replayed after a resume, or copied into a fork is counted once; the
`token_usage_record` lines 0.15x writes before them (the same request's usage) are kept as events.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from .base import (
    BOM,
    UUID,
    Adapter,
    Command,
    FileContext,
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
    container_of,
    data_url,
    extras_of_images,
    image_of,
    parse_iso_ms,
    read_regular,
    safe_int,
)
from .claude import claude_layout
from .shared import (
    JsonDocumentLines,
    as_dict,
    as_str,
    call_params,
    head_of,
    input_text,
    json_text,
    lines_of,
    merge_records,
    parse_record,
    wrapped_params,
)
from .walk import walk

AGENT = "codex"

ROLLOUT_TYPES = frozenset(
    {
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "world_state",
        "inter_agent_communication",
        "inter_agent_communication_metadata",
        # a request's usage (0.15x), written again by the `token_count` after it: tokens are read
        # there alone, so none is counted twice
        "token_usage_record",
    }
)
ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "tool_search_call",
        "tool_search_output",
        "image_generation_call",
        "ghost_snapshot",
        "agent_message",
        "compaction",
        "context_compaction",
        "additional_tools",
    }
)
EVENT_TYPES = frozenset(
    {
        "user_message",
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "token_count",
        "task_started",
        "task_complete",
        "turn_started",
        "turn_complete",
        "turn_aborted",
        "exec_command_end",
        "exec_command_begin",
        "patch_apply_end",
        "mcp_tool_call_end",
        "web_search_end",
        "context_compacted",
        "thread_name_updated",
        "entered_review_mode",
        "exited_review_mode",
        "collab_agent_spawn_end",
        "collab_agent_interaction_end",
        "collab_waiting_end",
        "collab_close_end",
        "collab_resume_end",
        "sub_agent_activity",
        "error",
        "warning",
        "thread_rolled_back",
        "thread_goal_updated",
        "image_generation_end",
        "item_completed",
        "undo_completed",
        "guardian_assessment",
        "view_image_tool_call",
        "dynamic_tool_call_request",
        "dynamic_tool_call_response",
        "thread_settings_applied",
        "stream_error",
        "plan_update",
        "turn_diff",
        "session_configured",
    }
)
UUID_IN_NAME = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", re.I)
# Model-visible context that Codex injects as user messages: never a human prompt.
INJECTED = re.compile(r"^\s*<([A-Za-z_][\w -]*)>.*</\1>\s*$", re.S)
INJECTED_PREFIXES = ("# AGENTS.md instructions", "<environment_context>", "<user_instructions>")
ENV_CWD = re.compile(r"<environment_context>.*?<cwd>(.*?)</cwd>", re.S)
EXIT_CODE = re.compile(r"^Exit code: (-?\d+)", re.M)
# Lines that can change what later lines mean; only these are re-read to resume a file mid-way.
STATE_MARKERS = (
    b"session_meta",
    b"turn_context",
    b"token_count",
    b"user_message",
    b"thread_rolled_back",
    b'"role":"user"',
    b'"role": "user"',
)
ENCRYPTED_REASONING = "[encrypted reasoning]"
ECHO_DISTANCE = 8  # lines between a prompt and its copy in the other stream


def codex_home() -> Path:
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


def is_injected(text: str) -> bool:
    """True for environment/instruction blocks Codex adds to the history as user messages."""
    stripped = text.lstrip()
    return stripped.startswith(INJECTED_PREFIXES) or bool(INJECTED.match(text))


# ---------------------------------------------------------------------- discovery


def _sniff_lines(head: bytes) -> Iterator[Any]:
    for line in head.removeprefix(BOM).split(b"\n")[:20]:
        line = line.strip()
        if not line:
            continue
        try:
            yield orjson.loads(line)
        except orjson.JSONDecodeError:
            continue


def looks_like_codex(head: bytes) -> bool:
    """A rollout's first lines: wrapped RolloutItems, or a bare-era header and ResponseItems. A line
    in another agent's tree (Claude's and Qwen's `uuid`/`sessionId`, pi's `parentId`) is none of
    them, whatever its type: pi's `compaction` entry has a `summary`, as a compaction item has."""
    for i, obj in enumerate(_sniff_lines(head)):
        if not isinstance(obj, dict) or "uuid" in obj or "sessionId" in obj or "parentId" in obj:
            continue
        etype = obj.get("type")
        if not isinstance(etype, (str, type(None))):
            continue  # an object or a list where the type goes: not a rollout line (nor hashable)
        if etype in ROLLOUT_TYPES and "payload" in obj:
            return True
        if etype in ITEM_TYPES and ("role" in obj or "call_id" in obj or "summary" in obj):
            return True
        if (
            i == 0
            and etype is None
            and isinstance(obj.get("id"), str)
            and "timestamp" in obj
            and ("instructions" in obj or "git" in obj)
        ):
            return True
    return False


def _is_snapshot(head: bytes) -> bool:
    text = head.removeprefix(BOM).lstrip()
    return text.startswith(b"{") and b'"session"' in text[:4096] and b'"items"' in head


def project_key_of(path: Path) -> str | None:
    """The part of the path a restore keeps: from `sessions`/`archived_sessions` on."""
    for name in ("archived_sessions", "sessions"):
        if name in path.parts:
            return name
    return path.parent.name or None


# in CODEX_HOME: every prompt typed, of every session (`{session_id, ts, text}` a line), which
# outlives the rollouts deleted
HISTORY = "history.jsonl"


def _codex_home(folder: Path) -> bool:
    """Whether `folder` is laid out as a CODEX_HOME: `archived_sessions/`, or `sessions/` by year."""
    if (folder / "archived_sessions").is_dir():
        return True
    try:
        return any(len(n) == 4 and n.isdigit() for n in os.listdir(folder / "sessions"))
    except OSError:
        return False


class CodexAdapter(Adapter):
    """Reads Codex CLI rollouts of every era; see the module docstring."""

    name = AGENT
    env_vars = ("CODEX_HOME",)
    mode = "lines"
    decodes = True  # an archived `.jsonl.zst` rollout
    writes_undos = True  # a rollback of every turn (`thread_rolled_back`)
    display_name = "Codex"
    program = "codex"
    id_shape = (UUID, "a UUID")
    fork_style = "rollout-copy"
    forks_before_prompt = True
    resumes_subagents = True  # a subagent is a thread of its own
    undo_style = "patch-events"  # its patch_apply_end events say whether a patch applied
    fork_copies = "before-second-meta"
    writes_aborts = True  # `turn_aborted` events (see `_event`)
    patch_tools = frozenset({"apply_patch"})
    shell_tools = frozenset(
        {"shell", "local_shell", "exec_command", "container.exec", "shell_command", "unified_exec"}
    )

    def mcp_config(self) -> McpConfig:
        return McpConfig(codex_home() / "config.toml", "mcp_servers", toml=True)

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """`codex resume ID -C DIR`; `codex fork ID` copies the thread."""
        thread = self.checked_id(target.external_id)
        if fork:
            return Command([self.program, "fork", thread])
        return Command([self.program, "resume", thread], folder_option="-C")

    def resume_root(self) -> Path:
        """`$CODEX_HOME/sessions`: where `codex resume ID` finds a rollout (in its day's folder)."""
        return codex_home() / "sessions"

    def default_roots(self) -> list[Path]:
        home = codex_home()
        return [home / "sessions", home / "archived_sessions", home / "session_index.jsonl", home / HISTORY]

    def claims(self, path: Path, explicit: bool = False) -> bool:
        name = path.name
        if name.startswith("rollout-") and name.endswith((".jsonl", ".jsonl.zst", ".json")):
            return True
        if name == "session_index.jsonl":  # `{id, thread_name, updated_at}` lines (Kimi Code has one too)
            head = head_of(path, 4096)
            if head.strip():
                return b'"thread_name"' in head or b'"id"' in head
            return _codex_home(path.parent)  # empty: told by what is beside it
        if name == HISTORY:  # the prompt log, kept whole (Claude Code keeps one of that name too)
            return _codex_home(path.parent)
        if not name.endswith(".jsonl"):
            return False
        if not explicit and claude_layout(path):
            return False  # Claude's own files: never opened here
        return looks_like_codex(head_of(path))

    def kind_of(self, path: Path) -> str:
        if path.name.endswith(".zst"):
            return "document"
        if path.name in ("session_index.jsonl", HISTORY):
            return "index"
        return "transcript"

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root, explicit=True):
                yield SourceRef(root, AGENT, self.kind_of(root), project_key_of(root))
            return
        if not root.is_dir():
            return
        roots = [root]
        if (root / "sessions").is_dir():  # a CODEX_HOME given as the source
            roots = [root / "sessions", root / "archived_sessions"]
            for index in (root / "session_index.jsonl", root / HISTORY):
                if index.is_file() and self.claims(index):
                    yield SourceRef(index, AGENT, "index", None)
        for top in roots:
            for dirpath, dirnames, filenames in walk(top):
                dirnames.sort()
                names = set(filenames)
                for fname in sorted(filenames):
                    path = Path(dirpath) / fname
                    if fname.endswith(".zst") and fname[: -len(".zst")] in names:
                        continue  # Codex itself prefers the plain file while both exist
                    if self.claims(path):
                        yield SourceRef(path, AGENT, self.kind_of(path), project_key_of(path))

    # ------------------------------------------------------------------ normalize

    def start_file(self, ctx: FileContext, first_offset: int) -> None:
        name = ctx.path.name
        st = ctx.state
        st.update(
            started=True,
            sid=None,
            own_meta=False,
            model=None,
            prev_total=None,
            prompts=[],
            branch_parent=None,
            copy=None,
            totals={},
            snapshot=name.endswith(".json"),
            chain=None,
            doc_session=None,
        )
        if st["snapshot"]:
            st["doc"] = JsonDocumentLines(frozenset({"items"}))
        if first_offset > 0 and ctx.kind in ("transcript", "decoded"):
            self._resume_state(ctx, first_offset)

    def decode(self, path: Path, data: bytes) -> bytes | None:
        """A `.jsonl.zst` rollout's log (see the module docstring); None for other documents."""
        if not path.name.endswith(".zst"):
            return None
        return _decompress(data)

    def _resume_state(self, ctx: FileContext, end: int) -> None:
        """Rebuild the per-file state from the bytes before `end` (an append read on its own)."""
        try:
            if ctx.kind == "decoded":
                container = Path(container_of(str(ctx.path)) or ctx.path)
                data = _decompress(read_regular(container))[:end]
            else:
                data = read_regular(ctx.path, end)
        except (OSError, ValueError):
            return
        snapshot = ctx.state["snapshot"]
        for rec in lines_of(data):
            if snapshot or rec.line_number == 1 or any(m in rec.raw for m in STATE_MARKERS):
                self._normalize(rec, ctx)

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        if "started" not in ctx.state:
            self.start_file(ctx, rec.offset)
        return self._normalize(rec, ctx)

    def _normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        if ctx.kind == "document":
            return self._compressed(rec, ctx)
        if ctx.kind == "index" and ctx.path.name == HISTORY:  # kept whole: each prompt is in its rollout
            return Record(entry_type="side-file", subtype="prompt-history", side_file=True)
        if ctx.kind == "index":
            return self._index_line(rec)
        if ctx.state["snapshot"]:
            return self._snapshot_line(rec, ctx)
        obj, error = parse_record(rec.raw)
        sid = self._sid(ctx, obj, rec.line_number)
        if obj is None:
            return Record(
                entry_type="invalid" if error else "blank",
                known=False,
                parse_error=error,
                session_id=sid,
                uuid=self._uuid(sid, rec),
                parent_uuid=self._parent(sid, rec),
            )
        if not isinstance(obj, dict):
            return Record(
                entry_type="non-object",
                known=False,
                parse_error=error or "not a JSON object",
                session_id=sid,
                uuid=self._uuid(sid, rec),
                parent_uuid=self._parent(sid, rec),
            )
        out = Record(
            parse_error=error, session_id=sid, uuid=self._uuid(sid, rec), parent_uuid=self._parent(sid, rec)
        )
        etype = obj.get("type") if isinstance(obj.get("type"), str) else None
        payload = obj.get("payload")
        if etype in ROLLOUT_TYPES or (etype is not None and isinstance(payload, dict) and "timestamp" in obj):
            out.timestamp = parse_iso_ms(obj.get("timestamp"))
            out.entry_type = etype
            p = payload if isinstance(payload, dict) else {}
            out.subtype = as_str(p.get("type")) or (
                "message" if isinstance(p.get("role"), str) and "content" in p else None
            )
            out.known = etype in ROLLOUT_TYPES
            if etype == "session_meta":
                self._session_meta(out, p, ctx)
            elif etype == "turn_context":
                out.model = as_str(p.get("model"))
                out.cwd = as_str(p.get("cwd"))
                if out.model:
                    ctx.state["model"] = out.model
                out.model = out.model or ctx.state.get("model")
            elif etype == "response_item":
                out.known = out.subtype in ITEM_TYPES
                self._item(out, p, ctx, wrapped=True)
            elif etype == "event_msg":
                out.known = out.subtype in EVENT_TYPES
                self._event(out, p, ctx, rec)
            elif etype == "compacted":
                out.role = "system"
                out.is_message = True
                out.is_compaction = True
                out.segment_marker = True
                out.content = as_str(p.get("message")) or None
            elif etype == "inter_agent_communication":
                out.content = _text(p.get("content")) or as_str(p.get("message"))
            if out.session is None:
                out.session = SessionInfo(source=AGENT, external_id=sid)
            return out
        # bare era (and unknown shapes): the header, ResponseItems, state placeholders
        out.timestamp = parse_iso_ms(obj.get("timestamp"))
        if rec.line_number == 1 and etype is None and isinstance(obj.get("id"), str):
            out.entry_type = "session_meta"
            out.subtype = "bare"
            self._session_meta(out, obj, ctx)
        elif etype in ITEM_TYPES or (etype is None and isinstance(obj.get("role"), str) and "content" in obj):
            out.entry_type = "response_item"
            out.subtype = etype or "message"
            self._item(out, obj, ctx, wrapped=False)
        elif obj.get("record_type") == "state":
            out.entry_type = "state"
        else:
            out.entry_type = etype or "unknown"
            out.known = False
        if out.session is None:
            out.session = SessionInfo(source=AGENT, external_id=sid)
        return out

    # the images a record embeds, as data URLs: a prompt's `images`, `input_image` parts of a
    # message or of a tool's output
    image_marker = b"data:image/"

    def message_extras(self, raw: bytes, entry_type: str | None) -> MessageExtras | None:
        return extras_of_images(raw, _images) if self.image_marker in raw else None

    def image_data(self, raw: bytes, index: int) -> tuple[str, str] | None:
        return image_of(raw, index, _images)

    # ------------------------------------------------------------------ identity

    def _sid(self, ctx: FileContext, obj: Any, line_number: int) -> str:
        st = ctx.state
        sid: str | None = st["sid"]
        if sid is None:
            if isinstance(obj, dict):
                payload = obj.get("payload")
                if obj.get("type") == "session_meta" and isinstance(payload, dict):
                    sid = as_str(payload.get("id")) or as_str(payload.get("session_id"))
                elif line_number == 1 and obj.get("type") is None:
                    sid = as_str(obj.get("id"))
            sid = sid or _name_id(ctx.path)
            st["sid"] = sid
        return sid

    @staticmethod
    def _uuid(sid: str, rec: RawRecord) -> str:
        return f"{sid}:{rec.line_number}"

    @staticmethod
    def _parent(sid: str, rec: RawRecord) -> str | None:
        return f"{sid}:{rec.line_number - 1}" if rec.line_number > 1 else None

    # ------------------------------------------------------------------ record kinds

    def _session_meta(self, out: Record, p: dict[str, Any], ctx: FileContext) -> None:
        st = ctx.state
        meta_id = as_str(p.get("id")) or as_str(p.get("session_id"))
        if st["own_meta"] or (meta_id is not None and meta_id != st["sid"]):
            # A fork (or a subagent spawned with context) copies its parent's rollout after its own
            # meta: token counts up to the second the copy was made are the parent's. Codex writes
            # the copy in one burst; threadloom's own fork copies the lines as they were, the
            # parent's meta with its old time, so the copy's second is the later of the two metas'.
            if meta_id and meta_id != st["sid"] and out.timestamp is not None:
                made = max(out.timestamp, st.get("own_meta_ms") or 0)
                st["copy"] = (meta_id, made // 1000)
            return
        st["own_meta"] = True
        out.cwd = as_str(p.get("cwd"))
        out.version = as_str(p.get("cli_version"))
        git = as_dict(p.get("git"))
        out.git_branch = as_str(git.get("branch"))
        out.timestamp = out.timestamp or parse_iso_ms(p.get("timestamp"))
        st["own_meta_ms"] = out.timestamp
        out.forked_from_session_id = as_str(p.get("forked_from_id"))
        info = SessionInfo(source=AGENT, external_id=st["sid"])
        source = p.get("source")
        parent = as_str(p.get("parent_thread_id"))
        sub = source.get("subagent") if isinstance(source, dict) else None
        if sub is not None or parent:
            info.kind = "subagent"
            info.is_subagent = 1
            info.agent_id = st["sid"]
            info.spawn_key = st["sid"]
            if isinstance(sub, dict):
                spawn = sub.get("thread_spawn")
                if isinstance(spawn, dict):
                    parent = parent or as_str(spawn.get("parent_thread_id"))
                    info.agent_type = as_str(spawn.get("agent_role")) or as_str(spawn.get("agent_nickname"))
                    info.task_description = as_str(spawn.get("agent_nickname"))
                else:
                    info.agent_type = next(iter(sub), None)
            elif isinstance(sub, str):
                info.agent_type = sub
            info.agent_type = info.agent_type or as_str(p.get("agent_role"))
            info.parent_session_id = parent
        out.session = info

    def _item(self, out: Record, p: dict[str, Any], ctx: FileContext, wrapped: bool) -> None:
        """One ResponseItem: the same shapes in every era (bare lines, payloads, snapshot items)."""
        itype = as_str(p.get("type"))
        if itype is None and isinstance(p.get("role"), str) and "content" in p:
            itype = "message"  # the Responses API's short form of a message: `{role, content}`, no type
        out.model = ctx.state.get("model")
        out.message_id = as_str(p.get("id"))
        if itype != "message":
            ctx.state["pending"] = None
        if itype == "message":
            role = as_str(p.get("role")) or "user"
            text = _text(p.get("content"))
            out.content = text
            if role == "user":
                out.role = "user"
                if text and not is_injected(text):
                    self._human(out, text, ctx)
                else:
                    # context Codex gives the model (environment, AGENTS.md): kept, not drawn as the
                    # person's words, as Cline's environment details and Claude Code's reminders are not
                    out.is_message = not text
                    out.is_meta = True
                    cwd = ENV_CWD.search(text or "")
                    out.cwd = cwd.group(1).strip() if cwd else None  # the bare era's only cwd
                return
            ctx.state["pending"] = None
            if role == "assistant":
                out.role = "assistant"
                out.is_message = True
            else:
                out.role = "system"
                out.is_meta = True
                # Codex's own instructions to the model (permissions, skills, collaboration mode),
                # a tagged block a part: kept, not a message, as its injected user context is not
                out.is_message = not _all_injected(p.get("content"))
        elif itype == "reasoning":
            out.role = "assistant"
            out.thinking = _reasoning_text(p)
            if out.thinking is None and p.get("encrypted_content"):
                out.thinking = ENCRYPTED_REASONING  # no summary asked for: the step is shown all the same
            out.is_message = out.thinking is not None
        elif itype in ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call"):
            call_id = as_str(p.get("call_id")) or as_str(p.get("id"))
            if itype == "function_call":
                params = call_params(p.get("arguments"))
            elif itype == "custom_tool_call":
                params = call_params(p.get("input"), key="input")
            elif itype == "local_shell_call":
                params = wrapped_params(p.get("action"), "action")
            else:
                params = wrapped_params(p.get("arguments"), "arguments")
            nested = p.get("function")  # Chat Completions' shape: `{"function": {"name": …}}`
            nested_name = as_str(nested.get("name")) if isinstance(nested, dict) else None
            name = (
                as_str(p.get("name"))
                or nested_name
                or ("local_shell" if itype == "local_shell_call" else "tool_search")
            )
            if isinstance(p.get("namespace"), str) and p["namespace"]:
                name = f"{p['namespace']}.{name}"
            out.role = "assistant"
            out.is_message = True
            # a call written without an id is still a call (its output cannot be matched to it)
            out.tool_uses.append(_tool_use(call_id or f"{out.uuid}:call", name, params))
            out.tool_text = f"{name} {input_text(out.tool_uses[0].input_json)}"
        elif itype in ("function_call_output", "custom_tool_call_output", "tool_search_output"):
            call_id = as_str(p.get("call_id"))
            output = p.get("output") if itype != "tool_search_output" else p.get("tools")
            out.role = "user"
            out.is_message = True
            out.tool_text = _output_text(output)
            if call_id:
                out.tool_results.append(ToolResult(call_id, json_text(output), _output_status(output)))
        elif itype in ("web_search_call", "image_generation_call"):
            call_id = as_str(p.get("call_id")) or as_str(p.get("id"))
            name = "web_search" if itype == "web_search_call" else "image_generation"
            # the search's action is passed as it is (`_tool_use` wraps what is not an object)
            action = (
                p.get("action") if itype == "web_search_call" else {"revised_prompt": p.get("revised_prompt")}
            )
            out.role = "assistant"
            out.is_message = True
            # Codex 0.116+ writes its searches with no id at all: still a call, its status its result
            call_id = call_id or f"{out.uuid}:call"
            use = _tool_use(call_id, name, action)
            out.tool_uses.append(use)
            out.tool_text = f"{name} {input_text(use.input_json)}"
            status = as_str(p.get("status"))
            if status and status not in ("in_progress", "searching", "generating"):
                out.tool_results.append(
                    ToolResult(
                        call_id,
                        json_text({"status": status}),
                        "failed" if status == "failed" else "completed",
                    )
                )
        elif itype == "agent_message":
            out.role = "user"
            out.is_meta = True
            out.is_message = True
            out.content = _text(p.get("content"))
        elif itype in ("compaction", "context_compaction"):
            out.is_compaction = False  # the `compacted` rollout item marks the boundary
        elif itype not in ITEM_TYPES:
            # an item of a kind not known here (a newer Codex, another writer): shown as it is, dimmed
            out.role = as_str(p.get("role")) or (
                "user" if itype and itype.endswith(("_output", "_result")) else "assistant"
            )
            out.is_message = True
            out.is_meta = True
            out.content = f"[{itype or 'item'}] {_item_text(p)}"

    def _human(self, out: Record, text: str, ctx: FileContext) -> None:
        """A typed prompt. Wrapped rollouts log it twice, as the `user_message` event and as the
        model's user item, in either order: the first is the prompt, the second its copy."""
        st = ctx.state
        pending = st.get("pending")
        if pending and pending[0] == text and 0 < out_line(out) - pending[1] <= ECHO_DISTANCE:
            out.is_meta = True
            st["pending"] = None
            return
        out.is_message = True
        self._prompt(out, ctx)
        st["pending"] = (text, out_line(out))

    def _prompt(self, out: Record, ctx: FileContext) -> None:
        st = ctx.state
        out.is_prompt = True
        if st["branch_parent"] is not None:
            out.parent_uuid = st["branch_parent"][0]
            st["branch_parent"] = None
        st["prompts"].append((out.uuid, out.parent_uuid))

    def _event(self, out: Record, p: dict[str, Any], ctx: FileContext, rec: RawRecord) -> None:
        kind = out.subtype
        st = ctx.state
        if kind == "user_message":
            text = as_str(p.get("message")) or ""
            msg_kind = as_str(p.get("kind"))
            out.role = "user"
            out.content = text or None
            if text and msg_kind in (None, "plain") and not is_injected(text):
                self._human(out, text, ctx)
            else:
                out.is_message = not (text and is_injected(text))  # context, as above
                out.is_meta = True
            return
        if kind in ("agent_message", "agent_reasoning", "task_complete", "turn_complete", "turn_aborted"):
            st["pending"] = None
        if kind == "agent_message":
            out.role = "assistant"
            out.is_meta = True  # the same text as the assistant ResponseItem
            out.content = as_str(p.get("message"))
        elif kind in ("agent_reasoning", "agent_reasoning_raw_content"):
            out.role = "assistant"
            out.is_meta = True
            out.thinking = as_str(p.get("text"))
        elif kind == "token_count":
            out.model = st.get("model")
            copy = st.get("copy")
            origin = st["sid"]
            if copy is not None and out.timestamp is not None and out.timestamp // 1000 <= copy[1]:
                origin = copy[0]
            else:
                st["copy"] = None
            out.usage = self._usage(p, st, out.uuid, origin)
        elif kind in ("turn.completed", "turn_completed") and isinstance(p.get("usage"), dict):
            # `codex exec --json` stream shape: the usage of that one turn
            out.model = st.get("model")
            out.usage = _usage_from(p["usage"], f"codex-line:{out.uuid}")
        elif kind == "thread_name_updated":
            name = as_str(p.get("thread_name"))
            if name:
                out.entry_type = "custom-title"
                out.content = name
                out.title = ("custom-title", name)
        elif kind == "thread_rolled_back":
            turns = safe_int(p.get("num_turns"))
            prompts = st["prompts"]
            if 0 < turns <= len(prompts):
                first = prompts[-turns]
                del prompts[-turns:]
                st["branch_parent"] = (first[1],)
                if not prompts:
                    # back to before the first prompt: the next starts a tree of its own, no turn
                    # held by both branches to read a rewind from; shown as an undo of what it took
                    out.subtype, out.ref_uuid = "undo", first[0]
                    out.role, out.is_meta, out.is_message = "system", True, True
                    out.content = "every turn rolled back: the model goes on without what is above"
        elif kind == "patch_apply_end":
            changes = as_dict(p.get("changes"))
            diffs = []
            for path, change in changes.items():
                diff = change.get("unified_diff") if isinstance(change, dict) else None
                diffs.append(f"{path}\n{diff}" if isinstance(diff, str) else str(path))
            out.tool_text = "\n".join(diffs) or None
        elif kind == "collab_agent_spawn_end":
            call_id, child = as_str(p.get("call_id")), as_str(p.get("new_thread_id"))
            if call_id:
                status = as_str(p.get("status"))
                out.tool_results.append(
                    ToolResult(call_id, json_text(p), "failed" if status == "failed" else "completed", child)
                )
        elif kind in ("error", "warning", "stream_error"):
            out.role = "system"
            out.is_message = True
            out.content = as_str(p.get("message")) or _text_or_json(p.get("error"))
        elif kind == "turn_aborted":  # a line where the turn ended: its prompt looked unanswered
            reason = as_str(p.get("reason"))
            out.role = "system"
            out.is_message = True
            out.content = ABORT_REASONS.get(reason or "", reason or "the turn ended early")
        elif kind == "item_completed":
            item = as_dict(p.get("item"))
            if item.get("type") == "Plan":
                out.role = "assistant"
                out.is_message = True
                out.content = as_str(item.get("text"))
        elif kind in ("mcp_tool_call_end", "web_search_end", "exec_command_end"):
            out.tool_text = _short(p.get("invocation") or p.get("query") or p.get("command"))

    def _usage(self, p: dict[str, Any], st: dict[str, Any], uuid: str | None, origin: str) -> Usage | None:
        """Keyed by thread and cumulative totals: a repeated or replayed total is one request."""
        info = p.get("info")
        if not isinstance(info, dict):
            if "input_tokens" in p:  # an early flat shape: the usage of the last request
                return _usage_from(p, f"codex-line:{uuid}")
            return None  # info:null lines carry rate limits only
        total = info.get("total_token_usage")
        last = info.get("last_token_usage")
        if isinstance(total, dict):
            fields = (
                "input_tokens",
                "cached_input_tokens",
                "output_tokens",
                "reasoning_output_tokens",
                "total_tokens",
            )
            values = tuple(safe_int(total.get(k)) for k in fields)
            prev = st.get("prev_total")
            st["prev_total"] = total
            seen = st.setdefault("totals", {})
            if not any(values) or seen.get(values, origin) != origin:
                return None  # nothing yet, or a resumed fork replaying its parent's last total
            seen[values] = origin
            key = f"codex:{origin}:" + ":".join(str(v) for v in values)
            if isinstance(last, dict):
                return _usage_from(last, key)
            delta = {
                k: safe_int(total.get(k)) - safe_int(prev.get(k))
                if isinstance(prev, dict)
                else safe_int(total.get(k))
                for k in ("input_tokens", "cached_input_tokens", "output_tokens", "cache_write_input_tokens")
            }
            if any(v < 0 for v in delta.values()):
                delta = {k: safe_int(total.get(k)) for k in delta}  # totals restarted
            return _usage_from(delta, key)
        if isinstance(last, dict):
            return _usage_from(last, f"codex-line:{uuid}")
        return None

    # ------------------------------------------------------------------ other file kinds

    def _index_line(self, rec: RawRecord) -> Record:
        """`session_index.jsonl`: thread names (the titles Codex shows), one line per rename."""
        obj, error = parse_record(rec.raw)
        out = Record(entry_type="session-index", parse_error=error, known=obj is not None)
        if isinstance(obj, dict):
            sid = as_str(obj.get("id")) or as_str(obj.get("thread_id"))
            name = as_str(obj.get("thread_name"))
            if sid and name:
                out.entry_type = "custom-title"
                out.session_id = sid
                out.content = name
                out.title = ("custom-title", name)
                out.session = SessionInfo(source=AGENT, external_id=sid)
        return out

    def _snapshot_line(self, rec: RawRecord, ctx: FileContext) -> Record:
        """A line of a TypeScript-era snapshot; the line that closes an item carries that item."""
        st = ctx.state
        out: Record | None = None
        subtype = None
        for kind, key, value, error in st["doc"].feed(rec.raw):
            if kind == "member":
                subtype = key
                if key == "session" and isinstance(value, dict):
                    st["header"] = value
                continue
            item = self._snapshot_item(value, error, ctx)
            out = item if out is None else merge_records(out, item)
        if out is None:
            out = Record(entry_type="json-line", subtype=subtype, session_id=st["doc_session"])
        return out

    def _snapshot_item(self, item: Any, error: str | None, ctx: FileContext) -> Record:
        st = ctx.state
        try:
            canonical = orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # nested deeper than orjson writes, or an integer beyond 64 bits
            canonical = json_text(item).encode()
        prev = st["chain"]
        digest = hashlib.sha256((prev or "").encode() + b"\n" + canonical).hexdigest()[:16]
        if prev is None:
            # the conversation is named by its first item, so every snapshot of it lands together
            st["doc_session"] = "codex-ts-" + digest
            st["sid"] = st["doc_session"]
        sid = st["doc_session"]
        out = Record(
            entry_type="response_item",
            parse_error=error,
            session_id=sid,
            uuid=f"{sid}:{digest}",
            parent_uuid=f"{sid}:{prev}" if prev else None,
        )
        st["chain"] = digest
        if prev is None:
            header = st.get("header") or {}
            out.timestamp = parse_iso_ms(header.get("timestamp"))
            out.session = SessionInfo(source=AGENT, external_id=as_str(header.get("id")))
        if isinstance(item, dict):
            out.subtype = as_str(item.get("type"))
            out.known = out.subtype in ITEM_TYPES
            self._item(out, item, ctx, wrapped=False)
        else:
            out.known = False
        return out

    def _compressed(self, rec: RawRecord, ctx: FileContext) -> Record:
        """A `.jsonl.zst` rollout stored whole: the session's facts (its messages come from the
        decoded log, read as a source of its own)."""
        out = Record(entry_type="compressed-rollout", session_id=_name_id(ctx.path))
        try:
            text = _decompress(rec.raw)
        except ValueError as exc:  # a damaged or unsupported frame: kept raw, marked
            out.known = False
            out.parse_error = f"cannot decompress: {exc}"
            return out
        inner = FileContext(ctx.path.with_name(ctx.path.name[: -len(".zst")]), "transcript", ctx.project_key)
        pos, line_number = 0, 0
        while pos < len(text):
            nl = text.find(b"\n", pos)
            nl = len(text) if nl < 0 else nl
            line_number += 1
            r = self.normalize(RawRecord(pos, line_number, text[pos:nl]), inner)
            pos = nl + 1
            if r.entry_type == "session_meta" and r.session is not None:
                out.session, out.cwd, out.version, out.git_branch = r.session, r.cwd, r.version, r.git_branch
                out.forked_from_session_id = r.forked_from_session_id
                out.timestamp = r.timestamp
                break
        out.session_id = inner.state.get("sid") or out.session_id
        return out


# ---------------------------------------------------------------------- helpers


def _decompress(data: bytes) -> bytes:
    """Every zstd frame of `data`, decompressed; ValueError when it is not (or no longer) zstd."""
    import zstandard

    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
            return reader.read()
    except zstandard.ZstdError as exc:
        raise ValueError(str(exc)) from exc


def out_line(out: Record) -> int:
    """The line number inside a `<thread>:<line>` uuid (0 for snapshot items)."""
    tail = (out.uuid or "").rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _name_id(path: Path) -> str:
    """A rollout's id when it holds none: the UUID in its file name (Codex names them so), else the
    name marked as Codex's ("codex:session-alpha"), so that it is never another agent's session
    that happens to carry the same word as its id (their records would be merged into one)."""
    m = UUID_IN_NAME.search(path.name)
    if m:
        return m.group(1).lower()
    name = path.name
    for suffix in (".jsonl.zst", ".jsonl", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return f"codex:{name}"


def _text(content: Any) -> str | None:
    """Text of a ResponseItem content list (input_text / output_text / text blocks)."""
    if isinstance(content, str):
        return content or None
    if not isinstance(content, list):
        return None
    parts = []
    for block in content:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif isinstance(block, str):
            parts.append(block)
    return "\n".join(p for p in parts if p) or None


def _item_text(p: dict[str, Any]) -> str:
    """What an unknown item says: its text where it has one, else its fields as JSON."""
    for key in ("content", "text", "output", "result", "message", "summary"):
        text = _text(p.get(key)) if not isinstance(p.get(key), dict) else None
        if text:
            return text[:4000]
    rest = {k: v for k, v in p.items() if k != "type"}
    return json_text(rest)[:4000]


def _reasoning_text(p: dict[str, Any]) -> str | None:
    parts = []
    for field_name in ("summary", "content"):
        value = p.get(field_name)
        if isinstance(value, list):
            parts += [b["text"] for b in value if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return "\n".join(t for t in parts if t) or None


def _tool_use(call_id: str, name: str, params: Any) -> ToolUse:
    params = params if isinstance(params, dict) else {"input": params}
    return ToolUse(
        id=call_id,
        name=name,
        input_json=json_text(params),
        number=0,
        description=as_str(params.get("description")),
        prompt=as_str(params.get("message")),
    )


def _output_text(output: Any) -> str | None:
    if isinstance(output, str):
        try:
            parsed = orjson.loads(output)
        except orjson.JSONDecodeError:
            return output or None
        if isinstance(parsed, dict) and isinstance(parsed.get("output"), str):
            return parsed["output"] or None
        return output or None
    if isinstance(output, dict):
        return as_str(output.get("text")) or as_str(output.get("output")) or json_text(output)
    if isinstance(output, list):
        return _text(output) or json_text(output)
    return None


def _output_status(output: Any) -> str:
    """failed when a command's exit code says so; Codex keeps it inside the output text."""
    code = None
    if isinstance(output, str):
        try:
            parsed = orjson.loads(output)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("metadata"), dict):
            code = parsed["metadata"].get("exit_code")
        else:
            m = EXIT_CODE.search(output[:200])
            code = int(m.group(1)) if m else None
            if output.startswith(("aborted", "exec command rejected", "patch rejected")):
                return "rejected"
    return "failed" if isinstance(code, int) and code != 0 else "completed"


def _usage_from(u: dict[str, Any], key: str) -> Usage:
    """OpenAI counts cached (and cache-written) input inside input_tokens; the ledger keeps them apart."""
    cached = safe_int(u.get("cached_input_tokens"))
    written = safe_int(u.get("cache_write_input_tokens"))
    return Usage(
        message_id=key,
        request_id=None,
        input_tokens=max(0, safe_int(u.get("input_tokens")) - cached - written),
        output_tokens=safe_int(u.get("output_tokens")),
        cache_creation_tokens=written,
        cache_read_tokens=cached,
    )


# what a `turn_aborted` event's reason says, in words (another reason is shown as written)
ABORT_REASONS = {
    "interrupted": "the user stopped it",
    "replaced": "a new prompt replaced it",
    "review_ended": "the review ended",
}


def _all_injected(content: Any) -> bool:
    """True when every text part of a ResponseItem's content is a block Codex injects."""
    blocks = content if isinstance(content, list) else []
    texts: list[str] = []
    for block in blocks:
        text = block.get("text") if isinstance(block, dict) else block
        if isinstance(text, str) and text.strip():
            texts.append(text)
    return bool(texts) and all(is_injected(t) for t in texts)


def _text_or_json(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        message = value.get("message")
        if isinstance(message, str):
            return message
    return json_text(value)


def _short(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else input_text(json_text(value))
    return text[:2000] or None


def _images(obj: Any) -> Iterator[tuple[ImageRef, str]]:
    """The images of a record given as data URLs: a prompt's `images` (the `user_message` event is
    the prompt shown), `input_image` parts of a message or of a tool call's output. Images named by
    a path or a web address hold nothing to show."""
    payload = obj.get("payload") if isinstance(obj, dict) else None
    if not isinstance(payload, dict):
        return
    urls: list[Any] = []
    place, call = "prompt", None
    if obj.get("type") == "event_msg" and payload.get("type") == "user_message":
        urls = payload["images"] if isinstance(payload.get("images"), list) else []
    elif obj.get("type") == "response_item":
        parts = payload.get("content")
        if not isinstance(parts, list):
            parts, place, call = payload.get("output"), "tool result", as_str(payload.get("call_id"))
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and part.get("type") == "input_image":
                urls.append(part.get("image_url"))
    index = 0
    for url in urls:
        found = data_url(url)
        if found is not None:
            yield ImageRef(found[0], base64_size(found[1]), place, index, call), found[1]
            index += 1
