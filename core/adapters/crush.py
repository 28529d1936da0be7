"""Crush (charmbracelet/crush) sessions, kept in a SQLite database per project.

Where: `<project>/.crush/crush.db` (the `data_directory` option moves it; `~/.crush/crush.db` when
crush ran in the home folder); `--source` folders are walked for `crush.db` at any depth. Checked
against charmbracelet/crush 37f36e93 (2026-08-21): `internal/db/migrations/`, `internal/db/models.go`,
`internal/message/message.go` and `content.go`, `internal/session/session.go`, `internal/agent/`,
`internal/cmd/root.go`.

Tables read (never written: see `shared.open_sqlite`): `sessions (id, parent_session_id, title,
message_count, prompt_tokens, completion_tokens, cost, updated_at, created_at, summary_message_id,
todos)`, `messages (id, session_id, role user|assistant|tool|system, parts, model, provider,
created_at, updated_at, finished_at, is_summary_message)` and `files (id, session_id, path, content,
version, …)`, the versions of the files crush wrote, and `read_files (session_id, path,
read_at)`. Each row is a key record (its columns as JSON,
but for the large one); a message's `parts` and a file version's `content` follow it, exact. File
versions and reads are kept with their session as side files.

`parts`: `[{type, data}]`, type `text {text}`, `reasoning {thinking, signature, started_at,
finished_at}`, `image_url`, `binary`, `tool_call {id, name, input (JSON text), finished}`,
`tool_result {tool_call_id, name, content, metadata, is_error}` (in a `tool` message), `finish
{reason, time}`, `shell_command {command, output, exit_code}` (the user's `!` commands).

Subagents: the `agent` tool runs in a session `<message id>$$<tool call id>` whose
`parent_session_id` is the caller's; a session's title is generated in `title-<session id>`. Tokens:
a session's `prompt_tokens`/`completion_tokens` are its last request's (not totals) and are not
counted; `cost` is the running total, a parent's including its subagents', so only sessions without
a parent count theirs.

Resume: `crush --session ID` (`-s`), in the project's folder (the database is the project's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import (
    Command,
    FileContext,
    ForkError,
    RawRecord,
    Record,
    ResumeTarget,
    SessionInfo,
    ToolResult,
    ToolUse,
    Usage,
    parse_iso_ms,
    recorded_cost,
)
from .edits import RESTORE, FileEdit, string_param
from .shared import (
    RowSink,
    SqliteSource,
    as_bytes,
    as_dict,
    as_list,
    as_str,
    input_text,
    json_text,
    loads,
    open_sqlite,
    plain_json,
    sqlite_tables,
    table_columns,
)

AGENT = "crush"
DB = "crush.db"
DB_NAMES = (DB, "opencode.db")  # Crush's, and the Go OpenCode's it began as (OpenCodeGoAdapter)
# the ends of a request that gave no answer (Crush's message.FinishReason)
FAILED_FINISH = frozenset({"error", "canceled", "cancelled", "permission_denied"})
PART_TYPES = frozenset(
    {"text", "reasoning", "image_url", "binary", "tool_call", "tool_result", "finish", "shell_command"}
)
# a row's columns held apart from its key record, exact: (table, column)
BULK = {"messages": "parts", "files": "content"}


def project_of(path: Path, data_folder: str = ".crush") -> str | None:
    """The folder crush ran in: the one holding `.crush/` (`data_folder`)."""
    return str(path.parent.parent) if path.parent.name == data_folder else None


class CrushAdapter(SqliteSource):
    """Reads Crush's project databases; see the module docstring."""

    name = AGENT
    mode = "database"
    db_name = DB
    finds_at_any_depth = True  # `<repo>/.crush/crush.db` under a folder given, at any depth
    display_name = "Crush"
    program = "crush"
    fork_style = "whole-session-resume"
    edit_tools = frozenset({"edit", "multiedit"})
    write_tools = frozenset({"write"})
    read_tools = frozenset({"view"})
    shell_tools = frozenset({"bash"})
    todo_tools = frozenset({"todos"})

    data_folder = ".crush"  # a project's database is `<project>/<data_folder>/<db_name>`

    def default_roots(self) -> list[Path]:
        return [Path.home() / self.data_folder / self.db_name]

    def claims(self, path: Path, explicit: bool = False) -> bool:
        named = path.name == self.db_name
        if not named and not (explicit and path.suffix in (".db", ".sqlite", ".sqlite3")):
            return False
        if not named and path.name in DB_NAMES:  # the other reader's, by its name
            return False
        if not {"sessions", "messages"} <= sqlite_tables(path):
            return False
        try:
            with open_sqlite(path) as conn:
                cols = set(table_columns(conn, "messages"))
                return {"parts", "session_id", "finished_at"} <= cols
        except Exception:
            return False

    def project_key_of(self, path: Path) -> str:
        """A project's `.crush/crush.db` is filed under the project's folder, not `.crush`."""
        project = project_of(path, self.data_folder)
        return Path(project).name if project else path.parent.name

    def read_rows(self, path: Path) -> list[RawRecord]:
        sink = RowSink()
        with open_sqlite(path) as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            order = {
                "sessions": "created_at, id",
                "messages": "created_at, rowid",
                "files": "created_at, rowid",
                "read_files": "rowid",
            }
            for table in order:
                if table not in tables:
                    continue
                cols = table_columns(conn, table)
                bulk = BULK.get(table)
                for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY {order[table]}'):
                    values = dict(zip(cols, row, strict=True))
                    held = values.pop(bulk, None) if bulk else None
                    sink.add(plain_json({"$row": table, **values}))
                    data = as_bytes(held)
                    if data is not None:
                        sink.add(data)
        return sink.records

    # ------------------------------------------------------------------ records

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        st = ctx.state
        if "cwd" not in st:
            st.update(cwd=project_of(ctx.path, self.data_folder), held=None, parents={})
        obj, error = loads(rec.raw)
        row = as_str(obj.get("$row")) if isinstance(obj, dict) else None
        if row is not None and isinstance(obj, dict):
            st["held"] = (row, obj) if row in BULK else None
            if row == "sessions":
                return self._session(obj, st)
            sid = as_str(obj.get("session_id"))
            out = Record(entry_type="row", subtype=row, session_id=sid, session=self._info(sid, st))
            out.side_file = row in ("files", "read_files")
            return out
        held, st["held"] = st["held"], None
        if held is None:
            return Record(entry_type="unknown", known=False, parse_error=error)
        table, key = held
        sid = as_str(key.get("session_id"))
        if table == "files":
            out = Record(entry_type="file-version", session_id=sid, session=self._info(sid, st))
            out.side_file = True
            return out
        return self._message(key, obj, error, st)

    def _info(self, sid: str | None, st: dict[str, Any]) -> SessionInfo | None:
        if not sid:
            return None
        info = SessionInfo(source=self.name, external_id=sid)
        parent = st["parents"].get(sid)
        if parent:
            info.kind, info.is_subagent, info.parent_session_id, info.agent_id = "subagent", 1, parent, sid
            if "$$" in sid:
                info.tool_call_id = sid.split("$$", 1)[1]
                info.agent_type = "agent"
            elif sid.startswith("title-"):
                info.agent_type = "title"
        return info

    def _session(self, row: dict[str, Any], st: dict[str, Any]) -> Record:
        sid = as_str(row.get("id"))
        parent = as_str(row.get("parent_session_id"))
        if sid and parent:
            st["parents"][sid] = parent
        out = Record(entry_type="row", subtype="sessions", session_id=sid, session=self._info(sid, st))
        out.timestamp = parse_iso_ms(row.get("created_at"))
        out.cwd = st["cwd"]
        out.is_sidechain = bool(parent)
        title = as_str(row.get("title"))
        if title:
            out.entry_type, out.content, out.title = "ai-title", title, ("ai-title", title)
        cost = recorded_cost(row.get("cost"))
        if sid and not parent and cost:
            out.usage = Usage(f"{self.name}:session:{sid}", None, cost_usd=cost)
        return out

    def _message(self, key: dict[str, Any], parts: Any, error: str | None, st: dict[str, Any]) -> Record:
        sid = as_str(key.get("session_id"))
        role = as_str(key.get("role"))
        uid = as_str(key.get("id"))
        out = Record(
            entry_type=role or "message",
            known=role in ("user", "assistant", "tool", "system") and isinstance(parts, list),
            parse_error=error,
            session_id=sid,
            session=self._info(sid, st),
            uuid=uid,
            parent_uuid=st.get(f"last:{sid}"),
            timestamp=parse_iso_ms(key.get("created_at")),
            model=as_str(key.get("model")),
            cwd=st["cwd"],
        )
        out.is_sidechain = bool(sid and sid in st["parents"])
        st[f"last:{sid}"] = uid
        texts: list[str] = []
        thoughts: list[str] = []
        tool_texts: list[str] = []
        failure: str | None = None  # why the request ended without an answer, if it did
        for number, part in enumerate(as_list(parts)):
            part = as_dict(part)
            kind, data = as_str(part.get("type")), as_dict(part.get("data"))
            if kind not in PART_TYPES:
                out.known = False
            reason = as_str(data.get("reason")) if kind == "finish" else None
            if reason in FAILED_FINISH:
                said = [t for t in (as_str(data.get("message")), as_str(data.get("details"))) if t]
                failure = ": ".join(said) or f"request {reason}"
            elif kind == "text" and isinstance(data.get("text"), str):
                texts.append(data["text"])
            elif kind == "reasoning" and isinstance(data.get("thinking"), str):
                thoughts.append(data["thinking"])
            elif kind == "tool_call":
                raw_input = data.get("input")
                params, _ = loads(raw_input.encode()) if isinstance(raw_input, str) else (raw_input, None)
                params = params if isinstance(params, dict) else {"input": raw_input}
                use = ToolUse(
                    as_str(data.get("id")) or f"{uid}:{number}",
                    as_str(data.get("name")) or "?",
                    json_text(params),
                    number,
                )
                if isinstance(params.get("prompt"), str):
                    use.prompt = params["prompt"]
                out.tool_uses.append(use)
                tool_texts.append(f"{use.name} {input_text(use.input_json)}")
            elif kind == "tool_result":
                status = "failed" if data.get("is_error") is True else "completed"
                body = {k: data[k] for k in ("content", "metadata", "mime_type") if data.get(k)}
                out.tool_results.append(
                    ToolResult(as_str(data.get("tool_call_id")) or "", json_text(body), status)
                )
                if isinstance(data.get("content"), str):
                    tool_texts.append(data["content"])
            elif kind == "shell_command":
                call = f"{uid}:shell:{number}"
                out.tool_uses.append(
                    ToolUse(call, "bash", json_text({"command": data.get("command")}), number)
                )
                failed = data.get("exit_code") not in (0, None)
                output = {"output": data.get("output"), "exit_code": data.get("exit_code")}
                out.tool_results.append(
                    ToolResult(call, json_text(output), "failed" if failed else "completed")
                )
                tool_texts.extend(t for t in (as_str(data.get("command")), as_str(data.get("output"))) if t)
        out.content = "\n".join(texts) or None
        out.thinking = "\n".join(thoughts) or None
        out.tool_text = "\n".join(tool_texts) or None
        if role in ("user", "assistant"):
            out.role = role
        elif role == "tool":
            out.role = "user"
        elif role == "system":
            out.role, out.is_meta = "system", True
        out.message_id = uid if role == "assistant" else None
        out.is_compaction = key.get("is_summary_message") in (1, True)
        out.is_message = bool(out.content or out.thinking or out.tool_uses or out.tool_results)
        if failure and not out.is_message:
            # a request that failed (no quota, a model not found) or was cancelled answers with this
            # alone: shown where it happened, or the prompt looks unanswered
            out.role, out.content, out.is_message = "system", failure, True
        out.is_prompt = role == "user" and bool(out.content) and not out.is_sidechain
        return out

    # ------------------------------------------------------------------ capabilities

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """multiedit's replaced texts, all of them; edit and write as their parameters say."""
        path = string_param(params, ("file_path", "path"))
        if name == "multiedit" and path:
            strings: list[tuple[str, str, bool]] = []
            for one in map(as_dict, as_list(params.get("edits"))):
                old, new = as_str(one.get("old_string")), as_str(one.get("new_string"))
                if old is not None and new is not None:
                    strings.append((old, new, one.get("replace_all") is True))
            edit = FileEdit(path, name, strings=strings)
            edit.why = "the records hold the replaced texts but not the file around them" + RESTORE
            return [edit]
        return super().file_edits(name, params, result)

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """`crush --session ID`, run in the project's folder (its database is the project's)."""
        return Command([self.program, "--session", self.checked_id(target.external_id)])


class OpenCodeGoAdapter(CrushAdapter):
    """OpenCode's Go release (opencode-ai/opencode, to mid-2025), which became Crush: the same
    database, kept as `<project>/.opencode/opencode.db` (77 public repositories hold one). The
    TypeScript OpenCode's own `opencode.db` (session, message and part tables) is not this one."""

    name = "opencode-go"
    db_name = "opencode.db"
    data_folder = ".opencode"
    display_name = "OpenCode (Go)"
    program = "opencode"

    def claims(self, path: Path, explicit: bool = False) -> bool:
        return (explicit or path.parent.name == self.data_folder) and super().claims(path, explicit)

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """Its CLI opens no session by id (Crush, which took its place, reads only `.crush/`)."""
        raise ForkError(
            "OpenCode's Go release has no command that opens a session by id: run `opencode` in the "
            "project's folder and pick the session from its list (its sessions are read here as they are)"
        )
