"""Amazon Q Developer CLI (and Kiro CLI) conversations, FORMATS.md §9.

`/save <file>` writes the ConversationState as pretty JSON (whatever the file is named, `.md`
included), rewritten whole by `/save -f`: a "document" source, cut into one record per message —
each element of `history` — plus the bytes between. Both history shapes are read:
  * 2025 saves: `history` entries are `[UserMessage, AssistantMessage]` pairs;
  * current source: `{user, assistant, request_metadata}` objects; `request_metadata` gives the
    request's time and model.
A user message holds a `Prompt` (a turn starts), `ToolUseResults` or `CancelledToolUses`; an
assistant message is a `Response` or a `ToolUse` with its calls. `latest_summary` (`/compact`) is a
compaction summary. The saves hold no token counts, so none are recorded. The session is the
`conversation_id`; saving the same conversation again gives the same message ids (assistant
`message_id`s, and for user messages a hash chained over the history), so copies are counted once.

`AmazonQDbAdapter` reads the CLI's own store, `data.sqlite3` (`conversations`, Kiro's
`conversations_v2`: key = working folder, value = the same ConversationState) in both its folders:
`amazon-q` and, since the CLI was renamed Kiro CLI, `kiro-cli` (kiro-cli 2.x's own session logs are
`core.adapters.kiro`'s), read-only (see
`shared.open_sqlite`): per row a key record (`{"$row", "key"}`) and the value cut like a save file.
The credentials tables of that database are never read.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
    epoch_ms,
    parse_iso_ms,
)
from .shared import (
    RowSink,
    SqliteSource,
    app_config_dirs,
    as_bytes,
    as_dict,
    as_list,
    as_str,
    head_of,
    input_text,
    json_text,
    loads,
    open_sqlite,
    parse_document,
    plain_json,
    scalar_members,
    sqlite_tables,
    tile,
    wrapped_params,
)
from .walk import walk

AGENT = "amazon-q"
SPECS = frozenset(
    {
        ("history", "[]", "[]"),  # 2025: [user, assistant] pairs
        ("history", "[]", "user"),
        ("history", "[]", "assistant"),
        ("history", "[]", "request_metadata"),
        ("latest_summary",),
    }
)
TABLES = ("conversations", "conversations_v2")
STATUS = {"Success": "completed", "Error": "failed"}


def looks_like_q(head: bytes) -> bool:
    head = head.removeprefix(BOM)
    text = head.lstrip()
    return text.startswith(b"{") and b'"conversation_id"' in head[:4096] and b'"history"' in head


class AmazonQTools(Adapter):
    """The tools of Amazon Q's conversations, saved or in its database (Kiro CLI's too)."""

    edit_tools = frozenset({"fs_write"})
    read_tools = frozenset({"fs_read"})
    shell_tools = frozenset({"execute_bash"})

    def call_gist(self, name: str, params: dict[str, Any]) -> str | None:
        """`use_aws` by what it is for (its label), `fs_write` by its file: its `command` is the
        kind of write (str_replace, create, append), which says less."""
        key = {"use_aws": "label", "fs_write": "path"}.get(name)
        value = params.get(key) if key is not None else None
        return value if isinstance(value, str) and value else None


class AmazonQAdapter(AmazonQTools):
    """Amazon Q `/save` files; see the module docstring."""

    name = AGENT
    mode = "document"

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        raise ForkError("Amazon Q /save files are not resumable; `q chat` starts a new conversation")

    def default_roots(self) -> list[Path]:
        return []  # saves are written wherever the person chose: found under --source folders

    def claims(self, path: Path, explicit: bool = False) -> bool:
        suffix = path.suffix.lower()
        if explicit:
            return suffix in (".json", ".md", ".txt", "") and looks_like_q(head_of(path, 8192))
        # on a walk: a save starts with `{` and names its conversation within its first bytes
        return suffix in (".json", ".md") and looks_like_q(head_of(path, 512))

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root, explicit=True):
                yield SourceRef(root, AGENT, "document", root.parent.name)
            return
        if not root.is_dir():
            return

        for dirpath, dirnames, filenames in walk(root):
            dirnames[:] = sorted(
                d for d in dirnames if not d.startswith(".") and d not in ("node_modules", "venv")
            )
            for fname in sorted(filenames):
                if fname.endswith((".json", ".md")):
                    path = Path(dirpath) / fname
                    if self.claims(path):
                        yield SourceRef(path, AGENT, "document", path.parent.name)

    def split(self, data: bytes) -> list[RawRecord]:
        parse_document(data)
        return tile(data, SPECS)

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        return conversation_record(rec, ctx.state)


def conversation_record(rec: RawRecord, st: dict[str, Any]) -> Record:
    """One record of a ConversationState cut by `SPECS` (a save file or a database value)."""
    if "sid" not in st:
        st.update(sid=None, last=None, calls={}, ts=None, model=None, n=0)
    obj, error = loads(rec.raw)
    if obj is None:  # the bytes between messages: the header names the conversation
        fields = scalar_members(rec.raw)
        if st["sid"] is None and as_str(fields.get("conversation_id")):
            st["sid"] = fields["conversation_id"]
        out = Record(entry_type="json-gap", session_id=st["sid"], session=_info(st))
        model = as_str(fields.get("model")) or as_str(fields.get("model_id"))
        if model:
            out.model = model
        return out
    if isinstance(obj, str) or (isinstance(obj, list) and obj and isinstance(obj[0], str)):
        summary = obj if isinstance(obj, str) else obj[0]
        return Record(
            entry_type="latest_summary",
            session_id=st["sid"],
            session=_info(st),
            role="system",
            content=summary or None,
            is_message=bool(summary),
            is_compaction=True,
            segment_marker=True,
            uuid=f"{st['sid']}:summary",
            parent_uuid=st["last"],
        )
    if not isinstance(obj, dict):
        return Record(entry_type="unknown", known=False, parse_error=error, session_id=st["sid"])
    if "content" in obj and ("env_context" in obj or "additional_context" in obj or "images" in obj):
        return _user(obj, rec, st)
    if "Response" in obj or "ToolUse" in obj:
        return _assistant(obj, st)
    if "request_start_timestamp_ms" in obj or "message_meta_tags" in obj or "model_id" in obj:
        out = Record(
            entry_type="request_metadata",
            session_id=st["sid"],
            session=_info(st),
            timestamp=epoch_ms(obj.get("request_start_timestamp_ms")),
            model=as_str(obj.get("model_id")),
        )
        out.request_id = as_str(obj.get("request_id"))
        return out
    return Record(entry_type="unknown", known=False, session_id=st["sid"], session=_info(st))


def _info(st: dict[str, Any]) -> SessionInfo | None:
    return SessionInfo(source=AGENT, external_id=st["sid"]) if st["sid"] else None


def _user(m: dict[str, Any], rec: RawRecord, st: dict[str, Any]) -> Record:
    sid = st["sid"]
    digest = hashlib.sha256((st["last"] or "").encode() + b"\n" + rec.raw).hexdigest()[:16]
    out = Record(
        entry_type="user",
        session_id=sid,
        session=_info(st),
        role="user",
        uuid=f"{sid}:u:{digest}",
        parent_uuid=st["last"],
        timestamp=parse_iso_ms(m.get("timestamp")),
    )
    st["last"] = out.uuid
    env = as_dict(m.get("env_context"))
    state = as_dict(env.get("env_state"))
    out.cwd = as_str(state.get("current_working_directory"))
    content = m.get("content")
    kind, body = next(iter(content.items())) if isinstance(content, dict) and content else (None, None)
    body = body if isinstance(body, dict) else {}
    out.subtype = kind
    out.known = kind in ("Prompt", "ToolUseResults", "CancelledToolUses")
    prompt = as_str(body.get("prompt"))
    results = as_list(body.get("tool_use_results"))
    texts = []
    for r in results:
        if not isinstance(r, dict) or not as_str(r.get("tool_use_id")):
            continue
        status = (
            "interrupted"
            if kind == "CancelledToolUses"
            else STATUS.get(as_str(r.get("status")) or "", "completed")
        )
        out.tool_results.append(ToolResult(r["tool_use_id"], json_text(r.get("content")), status))
        texts.append(_result_text(r.get("content")))
    if results:
        out.tool_text = "\n".join(t for t in texts if t) or None
    if prompt:
        out.content = prompt
        out.is_prompt = True
    out.is_message = bool(prompt or out.tool_results)
    return out


def _assistant(m: dict[str, Any], st: dict[str, Any]) -> Record:
    sid = st["sid"]
    kind = "ToolUse" if "ToolUse" in m else "Response"
    body = as_dict(m.get(kind))
    st["n"] += 1
    msg_id = as_str(body.get("message_id"))
    out = Record(
        entry_type="assistant",
        subtype=kind,
        session_id=sid,
        session=_info(st),
        role="assistant",
        message_id=msg_id,
        uuid=f"{sid}:{msg_id or 'a' + str(st['n'])}",
        parent_uuid=st["last"],
    )
    st["last"] = out.uuid
    out.content = as_str(body.get("content")) or None
    calls = body.get("tool_uses")
    for number, call in enumerate(calls if isinstance(calls, list) else []):
        if not isinstance(call, dict) or not as_str(call.get("id")):
            continue
        args = wrapped_params(call.get("args"), "args")
        out.tool_uses.append(
            ToolUse(
                call["id"],
                as_str(call.get("name")) or as_str(call.get("orig_name")) or "?",
                json_text(args),
                number,
                as_str(args.get("summary")) or as_str(args.get("description")),
            )
        )
    if out.tool_uses:
        out.tool_text = "\n".join(f"{u.name} {input_text(u.input_json)}" for u in out.tool_uses)
    out.is_message = bool(out.content or out.tool_uses)
    return out


def _result_text(content: Any) -> str:
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, dict):
            if isinstance(block.get("Text"), str):
                parts.append(block["Text"])
            elif "Json" in block:
                value = block["Json"]
                parts.append(json_text(value) if not isinstance(value, str) else value)
    return "\n".join(parts)


# ---------------------------------------------------------------------- data.sqlite3


def q_data_dirs() -> list[Path]:
    """`dirs::data_local_dir()`: ~/.local/share, ~/Library/Application Support or LOCALAPPDATA."""
    import os

    home = Path.home()
    if sys.platform == "darwin":
        base = [home / "Library" / "Application Support"]
    elif sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        base = [Path(local)] if local else app_config_dirs()
    else:
        xdg = os.environ.get("XDG_DATA_HOME")
        base = [Path(xdg).expanduser() if xdg else home / ".local" / "share"]
    return [b / name for b in base for name in ("amazon-q", "kiro-cli")]


class AmazonQDbAdapter(SqliteSource, AmazonQTools):
    """The Amazon Q / Kiro CLI database of conversations (one per working folder)."""

    name = "amazon-q-db"
    db_name = "data.sqlite3"
    mode = "database"

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        raise ForkError("Amazon Q conversations resume with `q chat --resume` from the same folder")

    def default_roots(self) -> list[Path]:
        return [d / "data.sqlite3" for d in q_data_dirs()]

    def claims(self, path: Path, explicit: bool = False) -> bool:
        if path.name != "data.sqlite3" and not (explicit and path.suffix in (".sqlite3", ".db", ".sqlite")):
            return False
        tables = sqlite_tables(path)
        return any(t in tables for t in TABLES)

    def read_rows(self, path: Path) -> list[RawRecord]:
        sink = RowSink()
        with open_sqlite(path) as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for table in TABLES:
                if table not in tables:
                    continue
                for key, value in conn.execute(f"SELECT key, value FROM {table} ORDER BY rowid"):
                    parts = [plain_json({"$row": table, "key": key})]
                    data = as_bytes(value)
                    if data is not None:
                        try:
                            parse_document(data)
                            parts += [r.raw for r in tile(data, SPECS)]
                        except Exception:  # a value that is not a whole JSON document: kept as it is
                            parts.append(data)
                    for raw in parts:
                        sink.add(raw)
        return sink.records

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        obj, _ = loads(rec.raw)
        if isinstance(obj, dict) and isinstance(obj.get("$row"), str) and "key" in obj:
            ctx.state["conv"] = {}  # a new row: a new conversation state
            return Record(entry_type="row", subtype=obj["$row"], cwd=as_str(obj.get("key")))
        st = ctx.state.setdefault("conv", {})
        return conversation_record(rec, st)
