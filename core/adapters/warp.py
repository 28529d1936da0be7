"""Warp's agent conversations, from its local database `warp.sqlite`.

Where: `$XDG_STATE_HOME/warp-terminal/` (`~/.local/state/warp-terminal`, `warp-terminal-preview` for
the preview channel) on Linux, `~/Library/Group Containers/2BBY89MBSN.dev.warp/Library/Application
Support/dev.warp.Warp-Stable/` (and `-Preview`) on macOS, `%LOCALAPPDATA%\\warp\\Warp\\data` on Windows;
any `warp.sqlite` of Warp's schema under a `--source` folder. Read-only (copied with its WAL while Warp
runs). Checked on the table shapes other readers of real databases describe and on Warp's protobuf
schema as its generated TypeScript declares it (`warp.multi_agent.v1`, task.proto, 2026); no real
database was at hand.

Three tables, one conversation (`conversation_id`) a session:
* `agent_conversations (id, conversation_id, conversation_data, last_modified_at)`: the JSON holds
  `conversation_usage_metadata {credits_spent, token_usage [{model_id, warp_tokens, byok_tokens, …}]}`
  (totals only, with no input and output split: not counted) and, for a subagent's conversation,
  `parent_conversation_id`;
* `agent_tasks (id, conversation_id, task_id, task BLOB, last_modified_at)`: the transcript, a
  protobuf `Task {id 1, description 2, dependencies 3, messages 5 (repeated Message), summary 6,
  server_data 8}`; a `Message {id 1, task_id 11, request_id 13, timestamp 14 {seconds 1, nanos 2}}`
  holds one of `user_query 2 {query 1}`, `agent_output 3 {text 1}`, `tool_call 4 {tool_call_id 1, one
  tool at 2…28}`, `tool_call_result 5 {tool_call_id 1, context 11, one result}`, `server_event 6`,
  `system_query 9`, `update_todos 10`, `agent_reasoning 15 {reasoning 1}`, `summarization 16
  {conversation_summary 1 {summary 1}}`, and later kinds;
* `ai_queries (id, exchange_id, conversation_id, start_ts, input, working_directory, output_status,
  model_id, …)`: one row a request: its folder and model (and, for a conversation with no task
  stored, its prompt: `input` is `[{"Query": {"text", …}}]`).

Every row is kept as JSON of its columns, and a task's blob as its top-level protobuf fields, whose
bytes put together are the blob exactly. Warp opens conversations from its own window only: there
is no resume command. Terminal `blocks` (commands and their output, also the agent's) are not read.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from .base import (
    FileContext,
    RawRecord,
    Record,
    SessionInfo,
    ToolResult,
    ToolUse,
    epoch_ms,
    parse_iso_ms,
)
from .edits import FileEdit
from .shared import (
    RowSink,
    SqliteSource,
    as_bytes,
    as_dict,
    as_list,
    as_str,
    json_text,
    loads,
    open_sqlite,
    plain_json,
    sqlite_tables,
    table_columns,
)

AGENT = "warp"
DB = "warp.sqlite"
CONVERSATION_ROW, TASK_ROW, QUERY_ROW = "warp-conversation", "warp-task", "warp-query"
MAC_GROUP = ("Library", "Group Containers", "2BBY89MBSN.dev.warp", "Library", "Application Support")
# Message.ToolCall's tools, by field number (task.proto)
TOOLS = {
    2: "run_shell_command",
    3: "search_codebase",
    4: "server",
    5: "read_files",
    6: "apply_file_diffs",
    7: "suggest_plan",
    8: "suggest_create_plan",
    9: "grep",
    10: "file_glob",
    11: "read_mcp_resource",
    12: "call_mcp_tool",
    13: "write_to_long_running_shell_command",
    14: "suggest_new_conversation",
    15: "file_glob_v2",
    16: "suggest_prompt",
    17: "open_code_review",
    18: "init_project",
    19: "subagent",
    20: "read_documents",
    21: "edit_documents",
    22: "create_documents",
    23: "read_shell_command_output",
    24: "use_computer",
    25: "insert_review_comments",
    26: "read_skill",
    27: "request_computer_use",
    28: "fetch_conversation",
}
# the inputs read by name: (field, key, repeated, nested fields) for each tool's message
PARAMS: dict[str, tuple[tuple[int, str, bool, dict[int, str] | None], ...]] = {
    "run_shell_command": ((1, "command", False, None),),
    "read_files": ((1, "files", True, {1: "name"}),),
    "search_codebase": (
        (1, "query", False, None),
        (2, "path_filters", True, None),
        (3, "codebase_path", False, None),
    ),
    "grep": ((1, "queries", True, None), (2, "path", False, None)),
    "file_glob": ((1, "patterns", True, None), (2, "path", False, None)),
    "file_glob_v2": ((1, "patterns", True, None), (2, "search_dir", False, None)),
    "call_mcp_tool": ((1, "name", False, None), (3, "server_id", False, None)),
    "apply_file_diffs": (
        (1, "summary", False, None),
        (2, "diffs", True, {1: "file_path", 2: "search", 3: "replace"}),
        (3, "new_files", True, {1: "file_path", 2: "content"}),
        (4, "deleted_files", True, {1: "file_path"}),
        (5, "v4a_updates", True, {1: "file_path", 2: "move_to"}),
    ),
}
MESSAGE_KINDS = {
    2: "user_query",
    3: "agent_output",
    4: "tool_call",
    5: "tool_call_result",
    6: "server_event",
    9: "system_query",
    10: "update_todos",
    15: "agent_reasoning",
    16: "summarization",
}


def warp_data_dirs() -> list[Path]:
    """Where each release channel of Warp keeps `warp.sqlite` on this system."""
    home = Path.home()
    if sys.platform == "darwin":
        base = home.joinpath(*MAC_GROUP)
        return [base / "dev.warp.Warp-Stable", base / "dev.warp.Warp-Preview"]
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        base = Path(local) if local else home / "AppData" / "Local"
        return [base / "warp" / "Warp" / "data", base / "warp" / "WarpPreview" / "data"]
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state) if state and Path(state).is_absolute() else home / ".local" / "state"
    return [base / "warp-terminal", base / "warp-terminal-preview"]


# ---------------------------------------------------------------------- protobuf, read by its wire format


def fields(data: bytes) -> list[tuple[int, Any, int, int]]:
    """A protobuf message's fields in order: (number, value, start, end), a length-delimited value as
    its bytes and a number as an int. ValueError for bytes that are not one."""
    out: list[tuple[int, Any, int, int]] = []
    pos = 0
    while pos < len(data):
        start = pos
        value: int | bytes
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = int.from_bytes(data[pos : pos + 8], "little"), pos + 8
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = int.from_bytes(data[pos : pos + 4], "little"), pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        if pos > len(data):
            raise ValueError("cut short")
        out.append((number, value, start, pos))
    return out


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _message(data: Any) -> dict[int, list[Any]]:
    """A nested message's fields by number ({} for bytes that are not one)."""
    if not isinstance(data, bytes):
        return {}
    try:
        found: dict[int, list[Any]] = {}
        for number, value, _, _ in fields(data):
            found.setdefault(number, []).append(value)
        return found
    except ValueError:
        return {}


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return None
    return None


def _first_text(found: dict[int, list[Any]], number: int) -> str | None:
    values = found.get(number)
    return _text(values[0]) if values else None


def _strings(data: bytes, skip: frozenset[int] = frozenset(), depth: int = 0) -> list[str]:
    """The readable texts inside a message (a nested message read as one, a string kept as it is)."""
    found: list[str] = []
    if depth > 12:
        return found
    try:
        parts = fields(data)
    except ValueError:
        text = _text(data)
        return [text] if text and text.strip() else found
    for number, value, _, _ in parts:
        if number in skip or not isinstance(value, bytes):
            continue
        nested = _strings(value, depth=depth + 1) if value and _looks_nested(value) else []
        if nested:
            found += nested
        else:
            text = _text(value)
            if text and text.strip():
                found.append(text)
    return found


def _looks_nested(value: bytes) -> bool:
    """Whether bytes read better as a message than as text: they parse, and are not plain text."""
    text = _text(value)
    if text is not None and (text.isprintable() or "\n" in text):
        return False
    try:
        return bool(fields(value))
    except ValueError:
        return False


# ---------------------------------------------------------------------- the adapter


class WarpAdapter(SqliteSource):
    """Reads Warp's agent conversations; see the module docstring."""

    name = AGENT
    env_vars = ("XDG_STATE_HOME",)
    mode = "database"
    db_name = DB
    finds_at_any_depth = True
    display_name = "Warp"
    program = "warp-terminal"
    # a conversation is opened from Warp's own window: no command starts one with a first message
    starts_with_prompt = False
    edit_tools = frozenset({"apply_file_diffs"})
    read_tools = frozenset({"read_files"})
    shell_tools = frozenset({"run_shell_command"})

    def default_roots(self) -> list[Path]:
        return [d / DB for d in warp_data_dirs()]

    def claims(self, path: Path, explicit: bool = False) -> bool:
        if path.name != DB and not (explicit and path.suffix in (".sqlite", ".db", ".sqlite3")):
            return False
        tables = sqlite_tables(path)
        return "ai_queries" in tables and ("agent_conversations" in tables or "agent_tasks" in tables)

    def read_rows(self, path: Path) -> list[RawRecord]:
        """Per conversation: its row, its tasks (each row, then the blob's fields), its queries."""
        sink = RowSink()
        with open_sqlite(path) as conn:
            tables = sqlite_tables(path)
            rows: dict[str, dict[str, list[bytes]]] = {}

            def add(conversation: Any, part: str, raws: list[bytes]) -> None:
                kept = rows.setdefault(str(conversation), {"conversation": [], "tasks": [], "queries": []})
                kept[part] += raws

            if "agent_conversations" in tables:
                for row in conn.execute("SELECT * FROM agent_conversations ORDER BY id"):
                    values = dict(zip(table_columns(conn, "agent_conversations"), row, strict=True))
                    add(
                        values.get("conversation_id"),
                        "conversation",
                        [plain_json({"$row": CONVERSATION_ROW, **values})],
                    )
            if "agent_tasks" in tables:
                cols = [c for c in table_columns(conn, "agent_tasks") if c != "task"]
                for row in conn.execute(f"SELECT {', '.join(cols)}, task FROM agent_tasks ORDER BY id"):
                    values = dict(zip(cols, row[:-1], strict=True))
                    add(
                        values.get("conversation_id"),
                        "tasks",
                        [plain_json({"$row": TASK_ROW, **values}), *_cut(row[-1])],
                    )
            cols = table_columns(conn, "ai_queries")
            order = "start_ts, id" if "start_ts" in cols else "id"
            for row in conn.execute(f"SELECT * FROM ai_queries ORDER BY {order}"):
                values = dict(zip(cols, row, strict=True))
                add(values.get("conversation_id"), "queries", [plain_json({"$row": QUERY_ROW, **values})])
        for parts in rows.values():
            for raw in (*parts["conversation"], *parts["tasks"], *parts["queries"]):
                sink.add(raw)
        return sink.records

    # ------------------------------------------------------------------ records

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        st = ctx.state
        obj, _ = loads(rec.raw) if rec.raw[:1] == b"{" else (None, None)
        row = as_str(obj.get("$row")) if isinstance(obj, dict) else None
        if row is not None and isinstance(obj, dict):
            conversation = as_str(obj.get("conversation_id"))
            if conversation != st.get("sid"):
                st.update(
                    sid=conversation,
                    last=None,
                    tasks=False,
                    info=SessionInfo(source=AGENT, external_id=conversation),
                )
            if row == CONVERSATION_ROW:
                return self._conversation(obj, st)
            if row == TASK_ROW:
                st["tasks"] = True
                out = self._record(st, "row", subtype="agent_tasks")
                out.timestamp = parse_iso_ms(obj.get("last_modified_at"))
                return out
            if row == QUERY_ROW:
                return self._query(obj, st)
        return self._task_field(rec.raw, st)

    @staticmethod
    def _record(st: dict[str, Any], entry_type: str, **values: Any) -> Record:
        info: SessionInfo | None = st.get("info")
        return Record(
            entry_type=entry_type,
            session_id=st.get("sid"),
            session=info,
            is_sidechain=bool(info and info.is_subagent),
            **values,
        )

    def _conversation(self, row: dict[str, Any], st: dict[str, Any]) -> Record:
        data, _ = loads(str(row.get("conversation_data") or "").encode())
        parent = as_str(as_dict(data).get("parent_conversation_id"))
        info: SessionInfo = st["info"]
        if parent and parent != st.get("sid"):
            info.kind, info.is_subagent, info.parent_session_id, info.agent_id = (
                "subagent",
                1,
                parent,
                st.get("sid"),
            )
            info.agent_type = as_str(as_dict(data).get("agent_name"))
        out = self._record(st, "row", subtype="agent_conversations")
        out.timestamp = parse_iso_ms(row.get("last_modified_at"))
        return out

    def _query(self, row: dict[str, Any], st: dict[str, Any]) -> Record:
        """A request: its folder and model; its prompt too when the conversation's tasks are not kept."""
        out = self._record(st, "row", subtype="ai_queries", timestamp=parse_iso_ms(row.get("start_ts")))
        out.cwd = as_str(row.get("working_directory")) or None
        out.model = as_str(row.get("model_id")) or None
        if st.get("tasks"):
            return out
        inputs, _ = loads(str(row.get("input") or "").encode())
        texts = [
            text
            for item in (inputs if isinstance(inputs, list) else [inputs])
            if (text := as_str(as_dict(as_dict(item).get("Query")).get("text"))) and text.strip()
        ]
        if texts:
            exchange = as_str(row.get("exchange_id"))
            out.entry_type, out.role, out.content = "user_query", "user", "\n".join(texts)
            out.is_message = out.is_prompt = True
            out.uuid = f"{st.get('sid')}:{exchange}" if exchange else None
            out.parent_uuid, st["last"] = st.get("last"), out.uuid or st.get("last")
        return out

    def _task_field(self, raw: bytes, st: dict[str, Any]) -> Record:
        """One top-level field of a task's protobuf: a message (field 5), or the task's own fields."""
        try:
            [(number, value, _, _)] = fields(raw)
        except ValueError:
            return self._record(st, "task-bytes", known=False, parse_error="not one protobuf field")
        if number != 5 or not isinstance(value, bytes):
            names = {
                1: "task-id",
                2: "task-description",
                3: "task-dependencies",
                6: "task-summary",
                8: "server-data",
            }
            return self._record(st, names.get(number, f"task-field-{number}"), known=number in names)
        return self._task_message(_message(value), st)

    def _task_message(self, found: dict[int, list[Any]], st: dict[str, Any]) -> Record:
        kind_number = next((n for n in found if n in MESSAGE_KINDS or n > 14), None)
        kind = MESSAGE_KINDS.get(kind_number or 0, f"message-{kind_number}")
        message = _first_text(found, 1)
        stamp = _message((found.get(14) or [None])[0])
        seconds = (stamp.get(1) or [None])[0]
        out = self._record(
            st,
            kind,
            known=kind_number in MESSAGE_KINDS,
            uuid=f"{st.get('sid')}:{message}" if message else None,
            parent_uuid=st.get("last"),
            timestamp=epoch_ms(seconds * 1000) if isinstance(seconds, int) else None,
            request_id=_first_text(found, 13),
        )
        out.message_id = out.uuid
        if out.uuid:
            st["last"] = out.uuid
        body = (found.get(kind_number or 0) or [b""])[0]
        inner = _message(body)
        if kind == "user_query":
            out.role, out.content = "user", _first_text(inner, 1)
            out.is_message = out.is_prompt = bool(out.content and out.content.strip())
        elif kind == "system_query":
            out.role, out.is_meta = "user", True
            out.content = "\n".join(_strings(body, skip=frozenset({2}))) or None
            out.is_message = out.content is not None
        elif kind == "agent_output":
            out.role, out.content = "assistant", _first_text(inner, 1)
            out.is_message = bool(out.content)
        elif kind == "agent_reasoning":
            out.role, out.thinking = "assistant", _first_text(inner, 1)
            out.is_message = bool(out.thinking)
        elif kind == "tool_call":
            out.role = "assistant"
            call = self._tool_call(inner, out.uuid)
            out.tool_uses.append(call)
            out.tool_text = f"{call.name} {call.input_json}"
            out.is_message = True
        elif kind == "tool_call_result":
            out.role = "user"
            call_id = _first_text(inner, 1) or ""
            result = next((v for n, vs in inner.items() if n not in (1, 11) for v in vs), b"")
            text = "\n".join(_strings(result)) if isinstance(result, bytes) else ""
            out.tool_results.append(ToolResult(call_id, json_text(text)))
            out.tool_text = text or None
            out.is_message = bool(call_id)
        elif kind == "summarization":
            summary = _message((inner.get(1) or [b""])[0])
            out.role, out.content = "system", _first_text(summary, 1)
            out.is_compaction = out.segment_marker = bool(out.content)
            out.is_message = bool(out.content)
        return out

    @staticmethod
    def _tool_call(inner: dict[int, list[Any]], owner: str | None) -> ToolUse:
        call_id = _first_text(inner, 1) or f"{owner}:call"
        number = next((n for n in inner if n != 1), 0)
        name = TOOLS.get(number, f"tool-{number}")
        body = (inner.get(number) or [b""])[0]
        params = _params(name, body) if isinstance(body, bytes) else {}
        return ToolUse(call_id, name, json_text(params), 0)

    # ------------------------------------------------------------------ capabilities

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """apply_file_diffs: each search/replace pair, each new file whole, each file deleted."""
        if name != "apply_file_diffs":
            return super().file_edits(name, params, result)
        edits: list[FileEdit] = []
        for diff in as_list(params.get("diffs")):
            diff = as_dict(diff)
            path, old, new = as_str(diff.get("file_path")), diff.get("search"), diff.get("replace")
            if path and isinstance(old, str) and isinstance(new, str):
                edit = FileEdit(path, name, strings=[(old, new, False)])
                edit.why = "the records hold the replaced text but not the file around it"
                edits.append(edit)
        for new_file in as_list(params.get("new_files")):
            new_file = as_dict(new_file)
            path = as_str(new_file.get("file_path"))
            if path:
                content = new_file.get("content")
                edits.append(
                    FileEdit(path, name, before=None, after=content if isinstance(content, str) else "")
                )
        for gone in as_list(params.get("deleted_files")):
            path = as_str(as_dict(gone).get("file_path"))
            if path:
                edit = FileEdit(path, name, after=None)
                edit.why = "the records do not hold the deleted file's text"
                edits.append(edit)
        for update in as_list(params.get("v4a_updates")):
            path = as_str(as_dict(update).get("file_path"))
            if path:
                edit = FileEdit(path, name, problem="a V4A update's hunks are not read yet")
                edits.append(edit)
        return edits


def _cut(blob: Any) -> list[bytes]:
    """A task's blob as its top-level protobuf fields (their bytes put together are the blob); a
    blob that is not protobuf stays whole."""
    data = as_bytes(blob)
    if not data:
        return []
    try:
        return [data[start:end] for _, _, start, end in fields(data)]
    except ValueError:
        return [data]


def _params(name: str, body: bytes) -> dict[str, Any]:
    """A tool call's input: by name for the tools whose fields are known, else the texts it holds."""
    spec = PARAMS.get(name)
    if spec is None:
        texts = _strings(body)
        return {"texts": texts} if texts else {}
    found = _message(body)
    params: dict[str, Any] = {}
    for number, key, repeated, nested in spec:
        values = found.get(number) or []
        if nested is not None:
            items = []
            for value in values:
                inner = _message(value)
                items.append(
                    {k: _first_text(inner, n) for n, k in nested.items() if _first_text(inner, n) is not None}
                )
            read: Any = items
        else:
            texts = [t for t in (_text(v) for v in values) if t is not None]
            read = texts if repeated else (texts[0] if texts else None)
        if read not in (None, []):
            params[key] = read
    return params
