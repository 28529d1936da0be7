"""Kiro CLI session logs (its V2 engine, the default of kiro-cli 2.x).

Where: `$KIRO_HOME/sessions/cli/` (`~/.kiro` by default), a session being `<id>.jsonl` (the log),
`<id>.json` (its metadata, rewritten as the session goes), `<id>.history` (the lines typed, slash
commands included: not read) and `<id>.lock` while it runs; `--source` folders at any depth. Kiro's
older store, `data.sqlite3` (kiro-cli's and Amazon Q's), is read by `core.adapters.amazon_q`.
Checked on a real session's three files quoted in a public repository (kiro-cli 2.x, 2026-06), on
Kiro's CLI docs and issues (`kiro-cli chat --resume-id ID`, `$KIRO_HOME`), and on other readers'
notes on the format.

A log line is `{version: "v1", kind, data: {message_id, content: [blocks], meta: {timestamp}}}`,
`meta.timestamp` in seconds (prompts have it, replies often not):
* `Prompt`: the user's `text` blocks;
* `AssistantMessage`: `text`, `thinking {text, signature, modelId}`, `toolUse {toolUseId, name,
  input}` blocks (an input's `__tool_use_purpose` is Kiro's note for its UI);
* `ToolResults`: `toolResult {toolUseId, content: [text | json blocks], status}` blocks, and the
  same results again under `results {<id>: {tool, result: {Success | Error: {items}}}}`.
Any other kind is kept as an event.

The metadata file: `session_id`, `cwd`, `created_at`, `updated_at`, `title` (the first prompt, cut),
`parent_session_id` (a subagent's parent: subagents are sessions of their own in the same folder),
`session_created_reason`, `session_state.rts_model_state.model_info.model_id`. It is stored as a
document of its session; the log reads the parent and the folder from it when it starts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

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
    epoch_ms,
    parse_iso_ms,
)
from .shared import (
    as_dict,
    as_list,
    as_str,
    head_of,
    json_text,
    parse_record,
    wrapped_params,
)
from .walk import walk

AGENT = "kiro-cli"
KINDS = frozenset({"Prompt", "AssistantMessage", "ToolResults"})
META_LIMIT = 1 << 20  # a metadata file is a few KB; one larger is not read for the log's sake
PURPOSE = "__tool_use_purpose"


def kiro_home() -> Path:
    """`$KIRO_HOME`, else `~/.kiro` (kiro-cli 2.3+ moves all of it, sessions included)."""
    value = os.environ.get("KIRO_HOME")
    return Path(value).expanduser() if value else Path.home() / ".kiro"


def looks_like_kiro(head: bytes) -> bool:
    """Whether a log's first line is Kiro's envelope: `{version, kind, data}` of a known kind."""
    line = head.lstrip(b"\x00").removeprefix(b"\xef\xbb\xbf").split(b"\n", 1)[0]
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return (
        isinstance(obj, dict)
        and obj.get("kind") in KINDS
        and isinstance(obj.get("data"), dict)
        and isinstance(obj.get("version"), str)
    )


def _metadata(ctx: FileContext) -> dict[str, Any]:
    """A log's metadata file beside it (`<id>.json`), or {} when there is none to read: a replay's
    as the archive kept it, the disk's gone perhaps."""
    try:
        obj = orjson.loads(ctx.read_beside(ctx.path.with_suffix(".json"), META_LIMIT))
    except (OSError, orjson.JSONDecodeError):
        return {}
    return obj if isinstance(obj, dict) else {}


class KiroAdapter(Adapter):
    """Reads Kiro CLI's session logs and their metadata files; see the module docstring."""

    name = AGENT
    env_vars = ("KIRO_HOME",)
    mode = "lines"
    display_name = "Kiro CLI"
    program = "kiro-cli"
    id_shape = (UUID, "a UUID")
    fork_style = "whole-session-resume"
    edit_tools = frozenset({"write"})
    read_tools = frozenset({"read"})
    shell_tools = frozenset({"shell"})

    def default_roots(self) -> list[Path]:
        return [kiro_home() / "sessions" / "cli"]

    def claims(self, path: Path) -> bool:
        if path.suffix == ".json":
            log = path.with_suffix(".jsonl")
            return log.is_file() and looks_like_kiro(head_of(log, 65536)) and b'"session_id"' in head_of(path)
        return path.suffix == ".jsonl" and looks_like_kiro(head_of(path, 65536))

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root):
                yield self._ref(root)
            return
        for dirpath, dirnames, filenames in walk(root):
            dirnames.sort()
            for fname in sorted(filenames):
                if fname.endswith((".jsonl", ".json")):
                    path = Path(dirpath) / fname
                    if self.claims(path):
                        yield self._ref(path)

    def _ref(self, path: Path) -> SourceRef:
        return SourceRef(
            path, AGENT, "document" if path.suffix == ".json" else "transcript", path.parent.name
        )

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """`kiro-cli chat --resume-id ID` (Kiro finds the session by its id from any folder)."""
        return Command([self.program, "chat", "--resume-id", self.checked_id(target.external_id)])

    # ------------------------------------------------------------------ records

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        obj, error = parse_record(rec.raw)
        if not isinstance(obj, dict):
            return Record(entry_type="invalid", known=False, parse_error=error or "not a JSON object")
        if ctx.kind == "document":
            return self._metadata_record(obj, ctx)
        st = ctx.state
        first = "info" not in st
        if first:
            st["info"], st["last"] = self._session(_metadata(ctx), ctx), None
        info: SessionInfo = st["info"]
        sid = info.external_id or ctx.path.stem
        kind = as_str(obj.get("kind"))
        data = as_dict(obj.get("data"))
        message = as_str(data.get("message_id"))
        out = Record(
            entry_type=kind,
            known=kind in KINDS,
            parse_error=error,
            uuid=f"{sid}:{message}" if message else None,
            parent_uuid=st["last"],
            message_id=message,
            timestamp=_seconds(data),
            session_id=sid,
            session=info,
            is_sidechain=bool(info.is_subagent),
        )
        if out.uuid:
            st["last"] = out.uuid
        if first:
            out.cwd = st.get("folder")
        version = obj.get("version")
        out.version = version if isinstance(version, str) else None
        blocks = [as_dict(b) for b in as_list(data.get("content"))]
        if kind == "Prompt":
            out.role = "user"
            out.content = _texts(blocks)
            out.is_message = out.content is not None
            out.is_prompt = out.is_message and not info.is_subagent  # a subagent's prompt is its task
        elif kind == "AssistantMessage":
            self._reply(out, blocks)
        elif kind == "ToolResults":
            self._results(out, blocks, as_dict(data.get("results")))
        return out

    def _session(self, meta: dict[str, Any], ctx: FileContext) -> SessionInfo:
        """The session a log belongs to, as its metadata file names it (its parent, its folder)."""
        sid = as_str(meta.get("session_id")) or ctx.path.stem
        info = SessionInfo(source=AGENT, external_id=sid, project_key=ctx.project_key)
        parent = as_str(meta.get("parent_session_id"))
        if parent and parent != sid:
            info.kind, info.is_subagent, info.parent_session_id, info.agent_id = "subagent", 1, parent, sid
            info.task_description = as_str(meta.get("title"))
        ctx.state["folder"] = as_str(meta.get("cwd"))
        return info

    def _reply(self, out: Record, blocks: list[dict[str, Any]]) -> None:
        out.role = "assistant"
        thoughts: list[str] = []
        inputs: list[str] = []
        for number, block in enumerate(blocks):
            data = block.get("data")
            if block.get("kind") == "thinking":
                body = as_dict(data)
                if isinstance(body.get("text"), str) and body["text"].strip():
                    thoughts.append(body["text"])
                out.model = out.model or as_str(body.get("modelId"))
            elif block.get("kind") == "toolUse":
                body = as_dict(data)
                params = {k: v for k, v in wrapped_params(body.get("input"), "input").items() if k != PURPOSE}
                purpose = as_dict(body.get("input")).get(PURPOSE)
                call = ToolUse(
                    as_str(body.get("toolUseId")) or f"{out.uuid}:{number}",
                    as_str(body.get("name")) or "?",
                    json_text(params),
                    number,
                    purpose if isinstance(purpose, str) else None,
                )
                out.tool_uses.append(call)
                inputs.append(call.input_json)
        out.content = _texts(blocks)
        out.thinking = "\n".join(thoughts) or None
        out.tool_text = "\n".join(inputs) or None
        out.is_message = bool(out.content or out.thinking or out.tool_uses)

    def _results(self, out: Record, blocks: list[dict[str, Any]], results: dict[str, Any]) -> None:
        """Each `toolResult` block joined to its call; a result given under `results` alone too."""
        out.role = "user"
        texts: list[str] = []
        seen: set[str] = set()
        for block in blocks:
            if block.get("kind") != "toolResult":
                continue
            body = as_dict(block.get("data"))
            call = as_str(body.get("toolUseId"))
            if not call:
                continue
            seen.add(call)
            failed = body.get("status") not in (None, "success") or "Error" in as_dict(
                as_dict(results.get(call)).get("result")
            )
            content = body.get("content")
            out.tool_results.append(ToolResult(call, json_text(content), "failed" if failed else "completed"))
            texts.append(_result_text(content))
        for call, entry in results.items():
            if call in seen or not isinstance(entry, dict):
                continue
            outcome = as_dict(entry.get("result"))
            failed = "Success" not in outcome
            items = next((as_dict(v).get("items") for v in outcome.values()), None)
            out.tool_results.append(ToolResult(call, json_text(items), "failed" if failed else "completed"))
            texts.append(_result_text(items))
        out.tool_text = "\n".join(t for t in texts if t) or None
        out.is_message = bool(out.tool_results)

    def _metadata_record(self, obj: dict[str, Any], ctx: FileContext) -> Record:
        """The metadata file: its session's folder and model (the log reads its parent)."""
        info = self._session(obj, ctx)
        state = as_dict(as_dict(obj.get("session_state")).get("rts_model_state"))
        model = as_str(as_dict(state.get("model_info")).get("model_id"))
        return Record(
            entry_type="session-metadata",
            session_id=info.external_id,
            session=info,
            cwd=as_str(obj.get("cwd")),
            model=model if model != "auto" else None,  # "auto": Kiro picks per request, unnamed
            timestamp=parse_iso_ms(obj.get("updated_at")),
        )


def _seconds(data: dict[str, Any]) -> int | None:
    """A record's time: `meta.timestamp`, seconds since 1970."""
    value = as_dict(data.get("meta")).get("timestamp")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return epoch_ms(value * 1000)
    return None


def _texts(blocks: list[dict[str, Any]]) -> str | None:
    parts = [b["data"] for b in blocks if b.get("kind") == "text" and isinstance(b.get("data"), str)]
    return "\n".join(p for p in parts if p.strip()) or None


def _result_text(content: Any) -> str:
    """A result's text: its text blocks, and a command's output from its json block."""
    parts: list[str] = []
    for item in as_list(content):
        item = as_dict(item)
        value = item.get("data", item.get("Text", item.get("Json")))
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, dict):
            parts += [value[k] for k in ("stdout", "stderr") if isinstance(value.get(k), str) and value[k]]
            if not any(k in value for k in ("stdout", "stderr")):
                parts.append(json_text(value))
    return "\n".join(parts)
