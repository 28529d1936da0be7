"""Kimi Code (MoonshotAI/kimi-code, the `kimi` command that followed Kimi CLI) session logs.

Where: `$KIMI_CODE_HOME/sessions/<work dir key>/<session id>/` (`~/.kimi-code` by default; the key
is `wd_<slug>_<12 hex of the work dir's sha256>`, the id `session_<uuid>`), holding `state.json`
(`{title, isCustomTitle, workDir, lastPrompt, createdAt, updatedAt, agents: {<agent id>: {type: main |
sub, parentAgentId}}, forkedFrom?}`; agent-core-v2 writes `cwd` for `workDir`, and `titleKind`) and one log per agent, `agents/<agent id>/wire.jsonl`: `main` is
the session's own, `agent-0`, `agent-1`, … its subagents'. Checked against kimi-code d723cc47
(2026-08-22): `docs/en/configuration/data-locations.md`, `docs/en/guides/sessions.md` and
`packages/agent-core-v2/docs/wire-manifest.d.ts` (protocol 1.5), and against real logs of protocol
1.4 published as test fixtures.

`wire.jsonl` opens with `{type: "metadata", protocol_version, created_at}`, then one record a line,
`{type, ...payload, time (epoch ms)}`:
  * `context.append_message {message {role: user | assistant | tool | system, content [{type: text,
    text} | {type: think, think} | {type: image_url, …}], toolCalls [{id, name, arguments (a JSON
    text)}], toolCallId, isError, origin {kind}}}`: what enters the model's context. A user's prompt
    has origin `user`; kimi's own reminders `injection`, a subagent's task `system_trigger`.
  * `context.append_loop_event {event}`: the replies, as the loop made them: `step.begin`,
    `content.part {uuid, stepUuid, part {type: text | think}}`, `tool.call {toolCallId, name, args,
    stepUuid}`, `tool.result {toolCallId, result {output, isError}}`, `step.end {usage, messageId}`.
    A step's parts and calls are one reply (its `stepUuid`).
  * `usage.record {model, usage {inputOther, output, inputCacheRead, inputCacheCreation}, usageScope}`:
    one request's tokens (a step's, or a compaction's with scope `session`), the same as its
    `step.end` says: read here alone, so none is counted twice.
  * `llm.request {model, …}` (the model each request went to), `config.update` and `profile.bind`
    (`cwd` or `environmentDisclosure.cwd`), `context.apply_compaction {summary | contextSummary}`,
    `turn.prompt` and `turn.steer` (the prompt again, before its message), and the rest
    (`permission.*`, `plan_mode.*`, `tools.*`, `goal.*`, `token_counting.*`, …) kept as events.
  * `context.undo {agentId, count}`: `/undo` withdrew the last `count` prompts (each with what
    followed it) from the model's context; `context.clear {agentId}`: the context was emptied. The
    log keeps what was withdrawn; each is shown as a line where it happened, an undo naming the
    first message it withdrew (`ref_uuid`: from there to the undo, shown as withdrawn). A prompt
    counts as kimi counts it (`isUndoAnchor`: typed, or a command the user ran), and none from
    before a clear or a compaction (an undo stops there).
An `Agent` call's result starts `agent_id: <agent id>`: the subagent whose log it reports on. An
`AgentSwarm {description, prompt_template, items, subagent_type}` call starts one subagent per item
at once; its result is `<agent_swarm_result>`, a `<summary>` and one `<subagent agent_id="…"
item="…" outcome="…">` element a subagent, and state.json gives each of them its item (`labels.
swarmItem`).

A log is written in order and its records name no parent: each record with an id follows the one
before it (a prompt starts a turn after the last one, its replies are in its turn), as a Codex
rollout's lines are read.

A fork (`/fork`) is a new session folder whose agents' logs are copies of the source's (whole, or
cut at a turn), each ended by a `{type: "forked", agentId, time}` record, and whose state.json
names the source in `forkedFrom` (its `createdAt` the fork's own time: epoch ms, or ISO text in
the older agent-core). The fork is shown under its source from that record on; the copied
`usage.record`s, older than `createdAt`, are the source's requests and not counted again.

`session_index.jsonl` beside `sessions/` lists every session, one line each, `{sessionId,
sessionDir, workDir}` when it is made (or forked) and `{sessionId, deleted: true}` when deleted: no
titles (those are state.json's). `kimi --session ID` finds a session there. It is kept whole (kind
`index`, `restore --as-of` gives any version of it back) but restored with no session: it is every
session's, grows with each, and a restore never writes over a file (into a home that has one, every
session's restore was refused).

Kept whole with the session (side files, restored with it): the plans Plan mode writes
(`agents/<agent>/plans/<id>.md`, each version noted by a `plan.revision {id, version, path, sha256}`
record; `ExitPlanMode` ends planning) and background tasks' state and output (`tasks/<id>.json`,
`tasks/<id>/output.log`).

Resume: `kimi --session <session id>` from the session's work dir (kimi refuses a session of
another folder). A fork is made inside the session only (`/fork`).
"""

from __future__ import annotations

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
    parse_iso_ms,
    read_regular,
    safe_int,
)
from .shared import as_dict, as_list, as_str, call_params, head_lines, head_of, json_text, parse_record
from .walk import walk

AGENT = "kimi-code"
LOG = "wire.jsonl"
STATE = "state.json"
INDEX = "session_index.jsonl"  # beside sessions/: every session's folder and work dir, by id
SIDE_ENDINGS = (".md", ".json", "output.log")  # the names of the files kept beside its logs (`side_of`)
MAIN = "main"
# the record types of protocol 1.5 (wire-manifest.d.ts), and the opening line; any other is kept unread
KNOWN = frozenset(
    {
        "metadata",
        "config.update",
        "context.append_loop_event",
        "context.append_message",
        "context.apply_compaction",
        "context.clear",
        "context.undo",
        "cron.add",
        "cron.cursor",
        "cron.delete",
        "forked",
        "full_compaction.begin",
        "full_compaction.cancel",
        "full_compaction.complete",
        "goal.clear",
        "goal.create",
        "goal.update",
        "interaction.request",
        "interaction.resolved",
        "interruptionReminder.recorded",
        "llm.request",
        "llm.tools_snapshot",
        "mcp.tools_discovered",
        "permission.record_approval_result",
        "permission.set_mode",
        "plan_mode.cancel",
        "plan_mode.enter",
        "plan_mode.exit",
        "plan.revision",
        "plugin.session_start",
        "profile.bind",
        "prompt.accepted",
        "runtime.set_binding",
        "staleGuard.cleared",
        "staleGuard.recorded",
        "swarm_mode.enter",
        "swarm_mode.exit",
        "task.started",
        "task.terminated",
        "task.waitDelivered",
        "token_counting.measured",
        "token_counting.rebased",
        "token_counting.truncated",
        "token_counting.turn_recorded",
        "tools.register_user_tool",
        "tools.reset_active_tools",
        "tools.set_active_tools",
        "tools.unregister_user_tool",
        "tools.update_store",
        "tower_mode.enter",
        "tower_mode.exit",
        "turn.cancel",
        "turn.ended",
        "turn.prompt",
        "turn.steer",
        "usage.record",
    }
)
LOOP_EVENTS = frozenset({"step.begin", "step.end", "content.part", "tool.call", "tool.result"})
_CHILD = re.compile(r"agent_id:\s*(\S+)")
# an AgentSwarm result's elements: `<subagent agent_id="…" item="…" outcome="…">` … `</subagent>`
# each on a line of its own; a subagent's output quoting one within a line is not one
_SWARM_TAG = re.compile(r'^[ \t]*<subagent\b((?:\s+[\w-]+\s*=\s*"[^"]*")*)\s*/?>', re.MULTILINE)
_ATTRIBUTE = re.compile(r'([\w-]+)\s*=\s*"([^"]*)"')


def kimi_code_home() -> Path:
    value = os.environ.get("KIMI_CODE_HOME")
    return Path(value).expanduser() if value else Path.home() / ".kimi-code"


def place(path: Path) -> tuple[str, str, str] | None:
    """(work dir key, session id, agent id) of a log at `…/<key>/<session>/agents/<agent>/wire.jsonl`."""
    parts = path.parts
    if len(parts) >= 6 and parts[-1] == LOG and parts[-3] == "agents":
        return parts[-5], parts[-4], parts[-2]
    return None


def side_of(path: Path) -> tuple[str, str] | None:
    """(what, session folder) of a file kept beside a session's logs: a plan Plan mode wrote
    (`<session>/agents/<agent>/plans/<id>.md`), a background task's state (`tasks/<id>.json`) or its
    output (`tasks/<id>/output.log`), under an agent's folder or the session's."""
    parts = path.parts
    if len(parts) >= 5 and parts[-2] == "plans" and parts[-4] == "agents" and path.suffix == ".md":
        return "plan", parts[-5]
    if len(parts) >= 3 and parts[-2] == "tasks" and path.suffix == ".json":
        what, holder = "task", parts[:-2]
    elif len(parts) >= 4 and parts[-3] == "tasks" and path.name == "output.log":
        what, holder = "task-output", parts[:-3]
    else:
        return None
    if len(holder) >= 3 and holder[-2] == "agents":  # an agent's own tasks
        return what, holder[-3]
    return what, holder[-1]


def session_folder_of(path: Path, session: str) -> Path | None:
    """The session folder named `session` above `path` (None: none is, a file at the root)."""
    return next((folder for folder in path.parents if folder.name == session), None)


def looks_like_kimi_code(head: bytes) -> bool:
    """Its first record: the metadata line, or (cut short) a `{type, …, time}` record after it."""
    lines = head_lines(head)
    for obj in lines:
        if not isinstance(obj, dict):
            continue
        if obj.get("type") == "metadata":
            return "protocol_version" in obj
        # Kimi CLI's records carry `timestamp`, not `time`: a `context.append_message` is Kimi Code's
        return isinstance(obj.get("type"), str) and "time" in obj
    return False


def read_state(ctx: FileContext, folder: Path) -> dict[str, Any]:
    """The session's `state.json` (empty when absent or unreadable): a replay's as the archive kept
    it, the disk's changed or gone since perhaps."""
    try:
        return as_dict(orjson.loads(ctx.read_beside(folder / STATE)))
    except (OSError, orjson.JSONDecodeError):
        return {}


def text_of(content: Any) -> tuple[str | None, str | None]:
    """(text, thinking) of a message's content: a string or a list of parts."""
    if isinstance(content, str):
        return content, None
    texts: list[str] = []
    thoughts: list[str] = []
    for part in as_list(content):
        part = as_dict(part)
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif part.get("type") == "think" and isinstance(part.get("think"), str):
            thoughts.append(part["think"])
    return "\n".join(texts) or None, "\n".join(thoughts) or None


class KimiCodeAdapter(Adapter):
    """Reads Kimi Code's session logs; see the module docstring."""

    name = AGENT
    env_vars = ("KIMI_CODE_HOME",)
    mode = "lines"
    display_name = "Kimi Code"
    program = "kimi"
    fork_style = "whole-session-resume"
    writes_undos = True  # `context.undo {count}` (see the module's docstring)
    edit_tools = frozenset({"Edit"})
    write_tools = frozenset({"Write"})
    read_tools = frozenset({"Read"})
    plan_tools = frozenset({"ExitPlanMode"})
    shell_tools = frozenset({"Bash"})
    todo_tools = frozenset({"TodoList"})
    # `Agent {description, prompt, subagent_type}`: its result names the subagent's folder;
    # `AgentSwarm {description, prompt_template, items, subagent_type}` starts one per item at once,
    # its result naming each (`spawned_agents`)
    spawn_tools = frozenset({"Agent", "AgentSwarm"})
    swarm_tools = frozenset({"AgentSwarm"})

    def spawned_agents(self, result: str | None) -> list[str]:
        """The agent ids an `AgentSwarm` result reports on: `<subagent agent_id="agent-1" …>`, one
        per subagent (one not started has none)."""
        if not result:
            return []
        try:
            output = orjson.loads(result)
        except orjson.JSONDecodeError:
            output = result
        text = as_str(output) or text_of(output)[0] or ""  # a string, or content parts (as `tool.result`)
        agents = (dict(_ATTRIBUTE.findall(tag.group(1))).get("agent_id") for tag in _SWARM_TAG.finditer(text))
        return [agent for agent in agents if agent]

    def spawn_facts(self, params: dict[str, Any]) -> SpawnFacts:
        """`Agent` names the subagent's type too."""
        facts = super().spawn_facts(params)
        kind = params.get("subagent_type")
        return SpawnFacts(facts.prompt, facts.description, kind if isinstance(kind, str) else None)

    def default_roots(self) -> list[Path]:
        return [kimi_code_home() / "sessions"]

    def side_roots(self) -> list[Path]:
        """`session_index.jsonl` beside `sessions/`: how kimi finds a session by its id."""
        return [kimi_code_home() / INDEX]

    def project_folder(self, parts: Sequence[str], key: str) -> int | None:
        """A session is restored from `sessions/` on (`sessions/<key>/<id>/agents/<agent>/…`), the
        layout its logs are known by (`place`)."""
        at = nearest_folder(parts, "sessions")
        return at if at is not None else super().project_folder(parts, key)

    def plans_folder(self, session_id: str) -> str:
        """Each agent writes its plans into its own folder, `<session>/agents/<agent>/plans/`: a
        subagent's (`<session>:<agent>`, a folder of no such name) and the main agent's apart."""
        session, _, agent = session_id.partition(":")
        return f"/{session}/agents/{agent or MAIN}/plans/"

    def claims(self, path: Path) -> bool:
        if path.name == INDEX:  # Codex's index has this name too: Kimi Code's says `sessionId`
            return b'"sessionId"' in head_of(path, 4096)
        side = side_of(path)
        if side is not None:  # beside a session's logs, in the folder its main log is in
            folder = session_folder_of(path, side[1])
            main = folder / "agents" / MAIN / LOG if folder is not None else None
            return main is not None and main.is_file() and place(main) is not None
        if path.name == STATE:  # beside a session's main log, as Kimi Code lays a session out
            main = path.parent / "agents" / MAIN / LOG
            return main.is_file() and place(main) is not None and b'"agents"' in head_of(path, 65536)
        return place(path) is not None and looks_like_kimi_code(head_of(path, 16384))

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root):
                yield self._ref(root)
            return
        index = root / INDEX  # a KIMI_CODE_HOME given as the source
        if index.is_file() and self.claims(index):
            yield self._ref(index)
        for dirpath, dirnames, filenames in walk(root):
            dirnames.sort()
            for fname in sorted(filenames):
                if fname in (LOG, STATE) or fname.endswith(SIDE_ENDINGS):
                    path = Path(dirpath) / fname
                    if (fname in (LOG, STATE) or side_of(path) is not None) and self.claims(path):
                        yield self._ref(path)

    @staticmethod
    def _ref(path: Path) -> SourceRef:
        if path.name == INDEX:  # kept whole; every session's, so restored with none (see the docstring)
            return SourceRef(path, AGENT, "index", None)
        side = side_of(path)
        folder = session_folder_of(path, side[1]) if side is not None else None
        if folder is not None:  # kept whole with its session
            return SourceRef(path, AGENT, "side", folder.parent.name)
        if path.name == STATE:  # kept whole with its session, its title read
            return SourceRef(path, AGENT, "side", path.parent.parent.name)
        return SourceRef(path, AGENT, "transcript", path.parents[3].name)

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        if ctx.kind == "index":
            return Record(entry_type="side-file", subtype="session-index", side_file=True)
        if ctx.kind == "side":
            side = side_of(ctx.path)
            if side is not None:  # kept whole, not read
                return Record(entry_type="side-file", subtype=side[0], session_id=side[1], side_file=True)
            return self._state(rec, ctx)
        obj, error = parse_record(rec.raw)
        if not isinstance(obj, dict):
            return Record(entry_type="invalid", known=False, parse_error=error or "not a JSON object")
        st = ctx.state
        if "sid" not in st:
            self._start(ctx)
            if rec.offset > 0:  # an append read on its own: what the lines before it left
                self._resume(ctx, rec.offset)
        out = Record(session_id=st["sid"], session=st["info"], parse_error=error, cwd=st.get("cwd"))
        out.is_sidechain = bool(st["info"].is_subagent)
        kind = as_str(obj.get("type"))
        out.entry_type, out.known = kind, kind in KNOWN
        out.timestamp = epoch_ms(obj.get("time"))
        if kind == "metadata":
            out.timestamp = epoch_ms(obj.get("created_at"))
        elif kind in ("config.update", "profile.bind"):
            cwd = as_str(obj.get("cwd")) or as_str(as_dict(obj.get("environmentDisclosure")).get("cwd"))
            if cwd and not st.get("cwd"):
                st["cwd"] = out.cwd = cwd
        elif kind == "llm.request":
            # the model as the user picked it (`moonshot-ai/kimi-k2.7-code`), as `usage.record` names it
            st["model"] = out.model = as_str(obj.get("modelAlias")) or as_str(obj.get("model"))
        elif kind == "forked":  # the end of what a fork copied from its source
            out.forked_from_session_id = st.get("forked_from")
        elif kind == "usage.record":
            usage = as_dict(obj.get("usage"))
            out.model = as_str(obj.get("model"))
            copied = st.get("forked_at") is not None and (out.timestamp or 0) < st["forked_at"]
            if usage and not copied:  # one request's: its place in the log is its key
                out.usage = Usage(
                    f"{AGENT}:{st['sid']}:{rec.offset}",
                    None,
                    input_tokens=safe_int(usage.get("inputOther")),
                    output_tokens=safe_int(usage.get("output")),
                    cache_creation_tokens=safe_int(usage.get("inputCacheCreation")),
                    cache_read_tokens=safe_int(usage.get("inputCacheRead")),
                )
        elif kind == "context.append_message":
            self._message(out, as_dict(obj.get("message")), rec, st)
        elif kind == "context.append_loop_event":
            self._loop(out, as_dict(obj.get("event")), st)
        elif kind in ("context.undo", "context.clear"):
            # shown where it happened: what the model was shown above it is no longer in its context
            out.role, out.is_meta, out.is_message = "system", True, True
            anchors = st.setdefault("anchors", [])
            if kind == "context.clear":
                anchors.clear()  # nothing before it is left to undo
                out.subtype = "clear"
                out.content = "context cleared: the model goes on without what is above"
            else:
                count = max(1, safe_int(obj.get("count")) or 1)  # a count written wrong: one at least
                if anchors:  # the first message it withdrew: from there to here is withdrawn
                    out.ref_uuid = anchors[-min(count, len(anchors))]
                    del anchors[-count:]
                what = (
                    "the last prompt and its replies"
                    if count == 1
                    else f"the last {count} prompts and their replies"
                )
                out.subtype, out.content = "undo", f"{what} withdrawn (/undo)"
        elif kind == "context.apply_compaction":
            summary = obj.get("summary")
            text = as_str(summary) or text_of(as_dict(summary).get("content"))[0]
            out.is_compaction = out.segment_marker = True
            out.role, out.is_meta = "system", True
            out.subtype = "compaction_summary"  # a compaction's line, holding its summary; a new segment
            st["anchors"] = []  # an undo stops at a compaction
            out.content = text or as_str(obj.get("contextSummary"))
            out.is_message = out.content is not None
        if out.uuid:  # the log is one line of records: each follows the one before it
            out.parent_uuid, st["last_uuid"] = st.get("last_uuid"), out.uuid
        return out

    def _resume(self, ctx: FileContext, end: int) -> None:
        """The state the lines before `end` leave (the record each next one follows, the prompts an
        undo takes back), read again as a whole read would have: an append read alone began a new
        root and an undo in it found no prompt to withdraw."""
        try:
            data = read_regular(ctx.path, end)
        except OSError:
            return
        pos = 0
        for line_number, line in enumerate(data.split(b"\n"), start=1):
            if line.strip() and pos < end:
                self.normalize(RawRecord(pos, line_number, line), ctx)
            pos += len(line) + 1

    def _start(self, ctx: FileContext) -> None:
        """The session a log is, from where it sits and its session's state.json."""
        st = ctx.state
        where = place(ctx.path)
        key, sid, agent = where if where else ("", ctx.path.parent.name, MAIN)
        state = read_state(ctx, ctx.path.parents[2]) if where else {}
        st["cwd"] = as_str(state.get("workDir")) or as_str(state.get("cwd"))  # older, and protocol 1.5's
        info = SessionInfo(source=AGENT, external_id=sid, project_key=key or None)
        st["sid"] = sid
        forked_from = as_str(state.get("forkedFrom"))
        if forked_from and forked_from != sid:
            # a fork: each of its agents' logs begins with the source's, copied; what it did itself
            # is from its `createdAt` on (the source's requests, copied, are the source's tokens)
            st["forked_at"] = parse_iso_ms(state.get("createdAt"))
            if agent == MAIN:
                st["forked_from"] = forked_from
        if agent != MAIN:
            st["sid"] = f"{sid}:{agent}"
            parent = as_str(as_dict(as_dict(state.get("agents")).get(agent)).get("parentAgentId"))
            info.external_id, info.agent_id = agent, agent
            info.kind, info.is_subagent = "subagent", 1
            info.parent_session_id = f"{sid}:{parent}" if parent and parent != MAIN else sid
            # one of a swarm: the item it was given tells it from the others of its call
            meta = as_dict(as_dict(state.get("agents")).get(agent))
            item = as_str(as_dict(meta.get("labels")).get("swarmItem")) or as_str(meta.get("swarmItem"))
            info.task_description = (item or "").strip() or None
        st["info"] = info

    def _state(self, rec: RawRecord, ctx: FileContext) -> Record:
        """`state.json`: kept whole with its session; its title is the one kimi lists it by."""
        out = Record(entry_type="side-file", subtype="session-state", side_file=True)
        out.session_id = ctx.path.parent.name
        obj, _ = parse_record(rec.raw)
        title = as_str(as_dict(obj).get("title"))
        if title and title.strip():
            source = "custom-title" if as_dict(obj).get("isCustomTitle") is True else "ai-title"
            out.entry_type, out.content, out.title = source, title, (source, title)
        return out

    # ------------------------------------------------------------------ the context

    def _message(self, out: Record, message: dict[str, Any], rec: RawRecord, st: dict[str, Any]) -> None:
        role = as_str(message.get("role"))
        out.subtype = role
        out.uuid = as_str(message.get("id")) or f"{st['sid']}:{rec.offset}"
        text, thinking = text_of(message.get("content"))
        origin = as_str(as_dict(message.get("origin")).get("kind"))
        if role == "user":
            out.role, out.content = "user", text
            out.is_message = text is not None
            # a user's prompt, or a subagent's task (its first, from its parent); the rest kimi's own
            task = origin == "system_trigger" and bool(out.session and out.session.is_subagent)
            out.is_meta = origin not in (None, "user") and not task
            out.is_prompt = out.is_message and not out.is_meta
            if _undo_anchor(message):
                st.setdefault("anchors", []).append(out.uuid)
        elif role == "assistant":
            out.role, out.content, out.thinking = "assistant", text, thinking
            out.message_id = out.uuid
            out.model = st.get("model")
            for number, call in enumerate(as_list(message.get("toolCalls"))):
                call = as_dict(call)
                self._call(
                    out, as_str(call.get("id")), as_str(call.get("name")), call.get("arguments"), number
                )
            out.tool_text = "\n".join(t.input_json for t in out.tool_uses) or None
            out.is_message = bool(text or thinking or out.tool_uses)
        elif role == "tool":
            out.role, out.tool_text = "user", text
            failed = message.get("isError") is True
            out.tool_results.append(
                ToolResult(
                    as_str(message.get("toolCallId")) or "",
                    json_text(message.get("content")),
                    "failed" if failed else "completed",
                    _child(text),
                )
            )
        elif role == "system":
            out.role, out.content, out.is_meta = "system", text, True
            out.is_message = text is not None
        else:
            out.known = False

    def _call(self, out: Record, call_id: str | None, name: str | None, arguments: Any, number: int) -> None:
        params = call_params(arguments)
        tool = ToolUse(call_id or f"{out.uuid}:{number}", name or "?", json_text(params), number)
        if isinstance(params.get("prompt"), str):
            tool.prompt = params["prompt"]
            tool.description = as_str(params.get("description"))
        out.tool_uses.append(tool)

    # ------------------------------------------------------------------ the loop's replies

    def _loop(self, out: Record, event: dict[str, Any], st: dict[str, Any]) -> None:
        kind = as_str(event.get("type"))
        out.subtype = kind
        out.known = kind in LOOP_EVENTS
        step = as_str(event.get("stepUuid"))
        if kind == "content.part":
            part = as_dict(event.get("part"))
            out.uuid = as_str(event.get("uuid"))
            out.role, out.message_id, out.model = "assistant", step, st.get("model")
            if part.get("type") == "text":
                out.content = as_str(part.get("text"))
            elif part.get("type") == "think":
                out.thinking = as_str(part.get("think"))
            else:  # an image or another part: kept in the raw record
                out.known = False
            out.is_message = bool(out.content or out.thinking)
        elif kind == "tool.call":
            out.uuid = as_str(event.get("uuid"))
            out.role, out.message_id, out.model = "assistant", step, st.get("model")
            self._call(out, as_str(event.get("toolCallId")), as_str(event.get("name")), event.get("args"), 0)
            out.tool_text = out.tool_uses[0].input_json
            out.is_message = True
        elif kind == "tool.result":
            result = event.get("result")
            output = as_dict(result).get("output")
            text = as_str(output) or text_of(output)[0]
            out.role, out.tool_text = "user", text
            failed = as_dict(result).get("isError") is True
            out.tool_results.append(
                ToolResult(
                    as_str(event.get("toolCallId")) or as_str(event.get("parentUuid")) or "",
                    json_text(output if output is not None else result),
                    "failed" if failed else "completed",
                    _child(text),
                )
            )

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """`kimi --session ID`, run in the session's work dir (kimi refuses one of another folder)."""
        if fork:
            raise ForkError("Kimi Code copies a session only from inside it (/fork); resume it instead")
        return Command([self.program, "--session", self.checked_id(target.external_id)])


def _undo_anchor(message: dict[str, Any]) -> bool:
    """A user's message that `/undo` counts (kimi-code's `isUndoAnchor`): one typed, or a skill or
    plugin command the user ran (`/skill`); kimi's own reminders and a subagent's task are not."""
    origin = as_dict(message.get("origin"))
    kind = origin.get("kind")
    return kind in (None, "user") or (
        kind in ("skill_activation", "plugin_command") and origin.get("trigger") == "user-slash"
    )


def _child(text: str | None) -> str | None:
    """The subagent an `Agent` call's result reports on (`agent_id: agent-0` on its first line)."""
    if not text or not text.startswith("agent_id:"):
        return None
    found = _CHILD.match(text)
    return found[1] if found else None
