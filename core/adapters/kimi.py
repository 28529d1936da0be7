"""Kimi CLI (MoonshotAI/kimi-cli) session logs.

Where: `$KIMI_SHARE_DIR/sessions/<md5 of the work dir>/<session id>/` (`~/.kimi` by default; a
remote work dir's folder is `<kaos>_<md5>`), each holding `context.jsonl` (the conversation) and
`wire.jsonl` (the events the UI was sent, with times), a subagent's under
`subagents/<agent id>/`. The work dir itself is only in `<share dir>/kimi.json` (`work_dirs: [{path,
kaos, last_session_id}]`), which is read to name the session's folder. Checked against kimi-cli
4a550eff (2026-07-16): `src/kimi_cli/soul/context.py`, `session.py`, `metadata.py`, `share.py`,
`wire/file.py`, `wire/types.py`, `subagents/store.py`, and kosong's `Message`.

`context.jsonl`: one kosong Message a line, `{role: user|assistant|tool|system, content: str |
[{type: text, text} | {type: think, think} | {type: image_url, …}], tool_calls: [{type: function,
id, function {name, arguments (a JSON text)}}], tool_call_id}`, and bookkeeping lines `{role:
"_system_prompt", content}`, `{role: "_checkpoint", id}`, `{role: "_usage", token_count}` (the
context's size, not a request's tokens). No times: those are in the wire.

`wire.jsonl`: a `{type: "metadata", protocol_version}` line (absent in the first releases), then
`{timestamp (epoch seconds), message: {type, payload}}`: `TurnBegin {user_input}`, `StepBegin`,
`ContentPart` (streamed pieces of the reply, already whole in the context), `ToolCall`,
`ToolResult`, `StatusUpdate {token_usage {input_other, output, input_cache_read,
input_cache_creation}, message_id}` (one request's tokens), `TurnEnd`, … Its records are the
session's events: its times and tokens; the messages are read from the context.

`/clear`, a revert to a checkpoint and a compaction move `context.jsonl` aside as `context_<n>.jsonl`
(the next free number; a revert's new context starts with a copy of what it keeps) and start it
again: each is read as the conversation set aside, a child of its session ("earlier context").
Releases before subagents had folders of their own wrote a `Task` subagent's context beside the
session's as `context_sub_<n>.jsonl`: read as that subagent. (kimi-cli `soul/context.py` `clear`,
`revert_to`, `utils/path.py` `next_available_rotation`.)

Resume: `kimi -r <session id>` from the session's folder (its current context only).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from .base import (
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
    nearest_folder,
    safe_int,
)
from .edits import RESTORE, FileEdit
from .shared import as_dict, as_list, as_str, call_params, head_lines, head_of, json_text, parse_record
from .walk import walk

AGENT = "kimi-cli"
SET_ASIDE = re.compile(r"context_(\d+)\.jsonl")  # a context `/clear`, a revert or a compaction moved aside
SUB_CONTEXT = re.compile(r"context_sub_(\d+)\.jsonl")  # a `Task` subagent's, in releases before subagents/
EARLIER = "earlier context"
REGISTRY = "kimi.json"  # the share dir's work dirs: which folder each sessions folder is  # what a context set aside is, as its session's kind
ROLES = frozenset({"user", "assistant", "tool", "system", "_system_prompt", "_checkpoint", "_usage"})
_HASH = re.compile(r"(?:[\w.-]+_)?[0-9a-f]{32}")


def kimi_share_dir() -> Path:
    value = os.environ.get("KIMI_SHARE_DIR")
    return Path(value).expanduser() if value else Path.home() / ".kimi"


def place(path: Path) -> tuple[str, str | None, Path] | None:
    """(session id, subagent id or None, share dir) of a Kimi log, from where it sits:
    `<share>/sessions/<hash>/<id>/X.jsonl` or `…/<id>/subagents/<agent>/X.jsonl`."""
    parts = path.parts
    if len(parts) >= 6 and parts[-3] == "subagents" and _HASH.fullmatch(parts[-5]):
        return parts[-4], parts[-2], path.parents[5]
    if len(parts) >= 4 and _HASH.fullmatch(parts[-3]) and parts[-4] == "sessions":
        return parts[-2], None, path.parents[3]
    return None


def is_registry(path: Path) -> bool:
    """`<share dir>/kimi.json`, its work dirs (`{"work_dirs": [...]}`), by its first bytes."""
    return path.name == REGISTRY and b'"work_dirs"' in head_of(path, 4096)


def _kind(path: Path) -> tuple[str, str | None]:
    """(kind, project key) of a file the adapter reads: the registry is a side file of no project."""
    return ("side", None) if path.name == REGISTRY else ("transcript", path.parent.name)


def is_context(name: str) -> bool:
    """A file of conversation: the session's context, one set aside, or an old subagent's."""
    return name == "context.jsonl" or bool(SET_ASIDE.fullmatch(name) or SUB_CONTEXT.fullmatch(name))


def looks_like_kimi(name: str, head: bytes) -> bool:
    line = head.lstrip(b"\x00").removeprefix(b"\xef\xbb\xbf").split(b"\n", 1)[0]
    if not line.strip():
        return is_context(name) and not head.strip()  # a new session's empty context
    first, *rest = head_lines(head)
    if first is None:  # cut short or damaged: the lines after it say whose it is
        return any(_kimi_line(name, obj) for obj in rest)
    return _kimi_line(name, first)


def _kimi_line(name: str, obj: object) -> bool:
    if not isinstance(obj, dict):
        return False
    if is_context(name):
        return obj.get("role") in ROLES and "type" not in obj
    if obj.get("type") == "metadata":
        return "protocol_version" in obj
    message = obj.get("message")
    return isinstance(message, dict) and "payload" in message and "timestamp" in obj


def work_dir(ctx: FileContext, share: Path, folder: str) -> str | None:
    """The work dir whose sessions folder is `folder`, from `kimi.json` (a replay's as the archive
    kept it, the disk's changed or gone since perhaps)."""
    try:
        meta = orjson.loads(ctx.read_beside(share / "kimi.json"))
    except (OSError, orjson.JSONDecodeError):
        return None
    for wd in as_list(as_dict(meta).get("work_dirs")):
        path, kaos = as_str(as_dict(wd).get("path")), as_str(as_dict(wd).get("kaos")) or "local"
        if path:
            digest = hashlib.md5(path.encode()).hexdigest()
            if folder in (digest, f"{kaos}_{digest}"):
                return path
    return None


class KimiAdapter(Adapter):
    """Reads Kimi CLI's session logs; see the module docstring."""

    name = AGENT
    env_vars = ("KIMI_SHARE_DIR",)
    mode = "lines"
    display_name = "Kimi CLI"
    program = "kimi"
    fork_style = "whole-session-resume"
    edit_tools = frozenset({"StrReplaceFile"})
    write_tools = frozenset({"WriteFile"})
    read_tools = frozenset({"ReadFile"})
    shell_tools = frozenset({"Shell", "Bash"})
    todo_tools = frozenset({"SetTodoList"})
    # `Agent {description, prompt, subagent_type}` (`Task {description, subagent_name, prompt}` before
    # it): its subagent's context starts with the prompt
    spawn_tools = frozenset({"Agent", "Task"})

    def spawn_facts(self, params: dict[str, Any]) -> SpawnFacts:
        """`Agent` names the subagent's type too."""
        facts = super().spawn_facts(params)
        kind = params.get("subagent_type")
        return SpawnFacts(facts.prompt, facts.description, kind if isinstance(kind, str) else None)

    def default_roots(self) -> list[Path]:
        return [kimi_share_dir() / "sessions"]

    def project_folder(self, parts: Sequence[str], key: str) -> int | None:
        """A session is restored from `sessions/` on (`sessions/<md5>/<id>/…`): the only place its
        logs are read from (`place`), and beside which `kimi.json` is put back."""
        at = nearest_folder(parts, "sessions")
        return at if at is not None else super().project_folder(parts, key)

    def side_roots(self) -> list[Path]:
        """`kimi.json` beside `sessions/`: the only place a session's folder is named."""
        return [kimi_share_dir() / REGISTRY]

    def claims(self, path: Path) -> bool:
        if path.name == REGISTRY:
            return is_registry(path)
        return (
            (path.name == "wire.jsonl" or is_context(path.name))
            and place(path) is not None
            and looks_like_kimi(path.name, head_of(path, 16384))
        )

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root):
                yield SourceRef(root, AGENT, *_kind(root))
            return
        for dirpath, dirnames, filenames in walk(root):
            dirnames.sort()
            for fname in sorted(filenames):
                if fname in ("wire.jsonl", REGISTRY) or is_context(fname):
                    path = Path(dirpath) / fname
                    if self.claims(path):
                        yield SourceRef(path, AGENT, *_kind(path))

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        if ctx.kind == "side":  # kept whole, with every session beside it (a restore puts it back)
            return Record(entry_type="side-file", subtype="work-dirs", side_file=True)
        obj, error = parse_record(rec.raw)
        if not isinstance(obj, dict):
            return Record(entry_type="invalid", known=False, parse_error=error or "not a JSON object")
        st = ctx.state
        if "sid" not in st:
            where = place(ctx.path)
            sid, agent, share = where if where else (ctx.path.parent.name, None, None)
            folder = ctx.path.parents[3 if agent else 1].name if where else ""
            st["cwd"] = work_dir(ctx, share, folder) if share is not None else None
            sub = SUB_CONTEXT.fullmatch(ctx.path.name)
            if sub and not agent:
                agent = f"sub-{sub[1]}"
            st["sid"] = f"{sid}:agent-{agent}" if agent else sid
            info = SessionInfo(source=AGENT, external_id=agent or sid, project_key=folder or None)
            if agent:
                info.kind, info.is_subagent, info.parent_session_id, info.agent_id = "subagent", 1, sid, agent
            aside = SET_ASIDE.fullmatch(ctx.path.name)
            if aside:  # a child of the conversation it was set aside from
                owner = st["sid"]
                st["sid"] = f"{owner}:context-{aside[1]}"
                info = SessionInfo(
                    source=AGENT,
                    external_id=sid,
                    project_key=folder or None,
                    kind=EARLIER,
                    is_subagent=1,
                    parent_session_id=owner,
                    agent_type=EARLIER,
                )
            st["info"] = info
            st["n"] = 0
        out = Record(session_id=st["sid"], session=st["info"], parse_error=error, cwd=st.get("cwd"))
        out.is_sidechain = bool(st["info"].is_subagent)
        st["n"] += 1
        if ctx.path.name == "wire.jsonl":
            self._wire(out, obj)
        else:
            self._context(out, obj, st)
        return out

    # ------------------------------------------------------------------ the conversation

    def _context(self, out: Record, obj: dict[str, Any], st: dict[str, Any]) -> None:
        role = as_str(obj.get("role"))
        out.entry_type, out.known = role, role in ROLES
        # a message has no id: its place in the file is one (a revert rewrites the file whole)
        out.uuid = f"{st['sid']}:context:{st['n']}"
        content = obj.get("content")
        texts: list[str] = []
        thoughts: list[str] = []
        if isinstance(content, str):
            texts.append(content)
        for part in as_list(content):
            part = as_dict(part)
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif part.get("type") == "think" and isinstance(part.get("think"), str):
                thoughts.append(part["think"])
        text = "\n".join(texts) or None
        if role == "user":
            out.role, out.content = "user", text
            out.is_message = text is not None
            # kimi marks what it adds itself (`<system>…</system>` parts, checkpoints) in the text
            out.is_meta = bool(text and text.lstrip().startswith("<system>"))
            out.is_prompt = out.is_message and not out.is_meta  # a subagent's task is its session's prompt
        elif role == "assistant":
            out.role, out.content = "assistant", text
            out.thinking = "\n".join(thoughts) or None
            out.message_id = out.uuid
            inputs = []
            for number, call in enumerate(as_list(obj.get("tool_calls"))):
                call = as_dict(call)
                function = as_dict(call.get("function"))
                params = call_params(function.get("arguments"))
                tool = ToolUse(
                    as_str(call.get("id")) or f"{out.uuid}:{number}",
                    as_str(function.get("name")) or "?",
                    json_text(params),
                    number,
                )
                if isinstance(params.get("prompt"), str):
                    tool.prompt = params["prompt"]
                    tool.description = as_str(params.get("description"))
                out.tool_uses.append(tool)
                inputs.append(tool.input_json)
            out.tool_text = "\n".join(inputs) or None
            out.is_message = bool(text or out.thinking or out.tool_uses)
        elif role == "tool":
            out.role = "user"
            failed = bool(text and text.lstrip().startswith("<system>ERROR"))
            out.tool_results.append(
                ToolResult(
                    as_str(obj.get("tool_call_id")) or "",
                    json_text(content),
                    "failed" if failed else "completed",
                )
            )
            out.tool_text = text
        elif role in ("system", "_system_prompt"):
            out.role, out.content, out.is_meta = "system", text, True

    # ------------------------------------------------------------------ the events

    def _wire(self, out: Record, obj: dict[str, Any]) -> None:
        message = as_dict(obj.get("message"))
        out.entry_type = as_str(message.get("type")) or as_str(obj.get("type"))
        out.known = out.entry_type is not None
        seconds = obj.get("timestamp")
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool):
            out.timestamp = epoch_ms(seconds * 1000)
        payload = as_dict(message.get("payload"))
        if out.entry_type == "StatusUpdate":
            usage = as_dict(payload.get("token_usage"))
            key = as_str(payload.get("message_id")) or (
                f"{out.session_id}:{obj.get('timestamp')}" if usage else None
            )
            if usage and key:
                out.usage = Usage(
                    f"{AGENT}:{key}",
                    None,
                    input_tokens=safe_int(usage.get("input_other")),
                    output_tokens=safe_int(usage.get("output")),
                    cache_creation_tokens=safe_int(usage.get("input_cache_creation")),
                    cache_read_tokens=safe_int(usage.get("input_cache_read")),
                )
        elif out.entry_type in ("CompactionBegin",):
            out.is_compaction = True

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """StrReplaceFile's `edit` (one `{old, new, replace_all}` or a list of them)."""
        if name == "StrReplaceFile" and isinstance(params.get("path"), str):
            edits = params.get("edit")
            strings = [
                (e["old"], e["new"], e.get("replace_all") is True)
                for e in (edits if isinstance(edits, list) else [edits])
                if isinstance(e, dict) and isinstance(e.get("old"), str) and isinstance(e.get("new"), str)
            ]
            edit = FileEdit(params["path"], name, strings=strings)
            edit.why = "the records hold the replaced texts but not the file around them" + RESTORE
            return [edit]
        if name == "WriteFile" and params.get("mode") == "append":
            edit = FileEdit(str(params.get("path")), name)
            edit.why = "WriteFile appended to the file; the records do not hold what it held before" + RESTORE
            return [edit]
        return super().file_edits(name, params, result)

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """`kimi -r ID`, run in the session's folder (kimi keeps sessions per folder)."""
        if fork:
            raise ForkError("Kimi CLI copies a session only from inside it (/fork); resume it instead")
        return Command([self.program, "-r", self.checked_id(target.external_id)])
