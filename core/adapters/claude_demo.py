"""A demo archive in Claude Code's on-disk format, written from scratch and fully deterministic.

`threadloom --demo` ingests it into a temporary database so a newcomer sees every feature at once:
several projects, a rewound branch, a compaction, subagents (one nested in another), failed and
rejected tool calls, edits with structured patches, thinking, an image, system events, a Warmup
agent and one long session of several thousand messages. Every id and timestamp comes from a
seeded generator and a fixed date, so two runs write byte-identical files.
"""

from __future__ import annotations

import base64
import difflib
import json
import os
import random
import shutil
import struct
import tempfile
import time
import uuid
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# The demo's "now" (tests freeze the clock here so humanized times are stable).
DEMO_NOW = datetime(2025, 6, 13, 10, 0, tzinfo=UTC)
VERSION = "2.1.17"
SONNET = "claude-sonnet-4-5-20250929"
OPUS = "claude-opus-4-1-20250805"
HAIKU = "claude-haiku-4-5-20251001"
OPUS47 = "claude-opus-4-7"
TODO_OK = "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress."
LONG_SESSION_TURNS = 500


DEMO_DIR_PREFIX = "threadloom-demo-"
OWNER_FILE = "owner.pid"
UNOWNED_GRACE_SECONDS = 86400


def claim_demo_dir(parent: Path | None = None) -> Path:
    """A fresh folder for one demo run (its archive and database), marked with this process's id.

    The demo removes its folder when it ends; a run killed with its terminal cannot, so the
    folders of demo runs whose process is gone are removed here, at the next demo's start."""
    parent = Path(tempfile.gettempdir()) if parent is None else parent
    for folder in parent.glob(DEMO_DIR_PREFIX + "*"):
        if folder.is_dir() and not _owner_alive(folder):
            shutil.rmtree(folder, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=DEMO_DIR_PREFIX, dir=parent))
    (folder / OWNER_FILE).write_text(str(os.getpid()))
    return folder


def _owner_alive(folder: Path) -> bool:
    try:
        pid = int((folder / OWNER_FILE).read_text())
    except (OSError, ValueError):  # not marked (an older threadloom's): gone after a day
        try:
            return time.time() - folder.stat().st_mtime < UNOWNED_GRACE_SECONDS
        except OSError:
            return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def write_demo_archive(dest: Path, *, long_turns: int = LONG_SESSION_TURNS) -> Path:
    """Write the demo archive under `dest` and return its `projects` root (what --source takes)."""
    root = Path(dest) / "projects"
    ids = _Ids(20250613)
    _acme_checkout(root, ids)
    _acme_header(root, ids)
    _ledger_migration(root, ids, long_turns)
    _ledger_health(root, ids)
    _dotfiles_tmux(root, ids)
    _dotfiles_prompt(root, ids)
    _blog_proofread(root, ids)
    return root


# ---------------------------------------------------------------------------- building blocks


class _Ids:
    """Seeded ids in the shapes Claude Code uses (uuid4, msg_…, req_…, toolu_…, agent ids)."""

    ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _token(self, n: int) -> str:
        return "".join(self.rng.choice(self.ALPHABET) for _ in range(n))

    def msg(self) -> str:
        return "msg_01" + self._token(22)

    def req(self) -> str:
        return "req_011C" + self._token(20)

    def tool(self) -> str:
        return "toolu_01" + self._token(22)

    def agent(self) -> str:
        return "a" + f"{self.rng.getrandbits(64):016x}"


def _slug(path: str) -> str:
    """Claude Code's folder name for a working directory (every non-alphanumeric becomes '-')."""
    return "".join(c if c.isalnum() else "-" for c in path)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


@dataclass
class _Call:
    """A tool call to make inside an assistant turn, with the result the tool gives back."""

    name: str
    input: dict[str, Any]
    output: str | list[dict[str, Any]]
    result: Any = None  # the top-level toolUseResult
    is_error: bool = False
    seconds: float = 1.0
    text_before: str | None = None  # assistant text on the same API message, before the call


@dataclass
class _Transcript:
    """The lines of one JSONL file, with its uuid chain and its own clock."""

    ids: _Ids
    session_id: str
    cwd: str
    git_branch: str
    clock: datetime
    model: str = SONNET
    agent_id: str | None = None
    lines: list[dict[str, Any]] = field(default_factory=list)
    parent: str | None = None

    def tick(self, seconds: float) -> None:
        self.clock += timedelta(seconds=seconds)

    def _envelope(self, type_: str, parent: str | None) -> dict[str, Any]:
        line: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": self.agent_id is not None,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": VERSION,
            "gitBranch": self.git_branch,
        }
        if self.agent_id:
            line["agentId"] = self.agent_id
        line["type"] = type_
        return line

    def _emit(self, line: dict[str, Any], **after: Any) -> str:
        uid = self.ids.uuid()
        line.update(after)
        line["uuid"] = uid
        line["timestamp"] = _iso(self.clock)
        self.lines.append(line)
        self.parent = uid
        return uid

    def user(
        self,
        content: str | list[dict[str, Any]],
        *,
        parent: str | None | bool = True,
        seconds: float = 20,
        **extra: Any,
    ) -> str:
        """A user line; `parent=True` continues the chain, a uuid or None sets it explicitly."""
        self.tick(seconds)
        line = self._envelope("user", self.parent if parent is True else parent or None)
        line["message"] = {"role": "user", "content": content}
        line.update(extra)
        return self._emit(line)

    def assistant(
        self,
        blocks: list[dict[str, Any]],
        *,
        out_tokens: int = 300,
        in_tokens: int = 8,
        cache_read: int = 18000,
        cache_write: int = 900,
        seconds: float = 4,
        model: str | None = None,
    ) -> list[str]:
        """One API response written as Claude Code does: one line per content block, one message id."""
        msg_id, req_id = self.ids.msg(), self.ids.req()
        uids = []
        for i, block in enumerate(blocks):
            self.tick(seconds if i == 0 else 0.4)
            last = i == len(blocks) - 1
            line = self._envelope("assistant", self.parent)
            line["message"] = {
                "model": model or self.model,
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": ("tool_use" if block.get("type") == "tool_use" else "end_turn")
                if last
                else None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": in_tokens,
                    "cache_creation_input_tokens": cache_write,
                    "cache_read_input_tokens": cache_read,
                    "output_tokens": out_tokens if last else max(1, out_tokens // 10),
                    "service_tier": "standard",
                },
            }
            line["requestId"] = req_id
            uids.append(self._emit(line))
        return uids

    def say(self, text: str, *, thinking: str | None = None, **kw: Any) -> list[str]:
        blocks: list[dict[str, Any]] = []
        if thinking is not None:
            blocks.append({"type": "thinking", "thinking": thinking, "signature": self._signature()})
        blocks.append({"type": "text", "text": text})
        return self.assistant(blocks, **kw)

    def _signature(self) -> str:
        return "Eq" + self.ids._token(86)

    def call(self, call: _Call, *, thinking: str | None = None, **kw: Any) -> str:
        """An assistant tool_use line and the user line carrying its result; returns the tool id.
        `thinking=""`: the empty (omitted) thinking block Claude Opus 4.7 opens its messages with."""
        tool_id = self.ids.tool()
        blocks: list[dict[str, Any]] = []
        if thinking is not None:
            blocks.append({"type": "thinking", "thinking": thinking, "signature": self._signature()})
        if call.text_before:
            blocks.append({"type": "text", "text": call.text_before})
        blocks.append({"type": "tool_use", "id": tool_id, "name": call.name, "input": call.input})
        uids = self.assistant(blocks, **kw)
        result_block: dict[str, Any] = {"tool_use_id": tool_id, "type": "tool_result", "content": call.output}
        if call.is_error:
            result_block["is_error"] = True
        self.user(
            [result_block], seconds=call.seconds, toolUseResult=call.result, sourceToolAssistantUUID=uids[-1]
        )
        return tool_id

    def system(
        self,
        subtype: str,
        content: str | None,
        *,
        parent: str | None | bool = True,
        seconds: float = 1,
        **fields: Any,
    ) -> str:
        self.tick(seconds)
        line = self._envelope("system", self.parent if parent is True else parent or None)
        line["subtype"] = subtype
        if content is not None:
            line["content"] = content
        line["isMeta"] = False
        line.update(fields)
        return self._emit(line)

    def hook(self, kind: str, event: str, *, seconds: float = 0.1, **fields: Any) -> str:
        """A hook Claude Code ran, as 2.1 records it: an `attachment` in the uuid chain."""
        self.tick(seconds)
        line = self._envelope("attachment", self.parent)
        line["attachment"] = {"type": kind, "hookEvent": event, "hookName": event, **fields}
        return self._emit(line)

    def compact(self, summary: str, pre_tokens: int) -> None:
        """A compaction: a new root that points back logically, then the synthetic summary."""
        before = self.parent
        self.system(
            "compact_boundary",
            "Conversation compacted",
            parent=None,
            seconds=30,
            logicalParentUuid=before,
            level="info",
            compactMetadata={"trigger": "auto", "preTokens": pre_tokens},
        )
        self.user(
            "This session is being continued from a previous conversation that ran out of context. "
            "The conversation is summarized below:\n" + summary,
            seconds=0.1,
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        )

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            for line in self.lines:
                f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")


class _Session:
    """A main session file plus the subagent files that live in its folder."""

    def __init__(
        self, root: Path, ids: _Ids, cwd: str, git_branch: str, start: datetime, model: str = SONNET
    ) -> None:
        self.root, self.ids = root, ids
        self.main = _Transcript(ids, ids.uuid(), cwd, git_branch, start, model=model)
        self.folder = root / _slug(cwd)
        self.agents: list[tuple[_Transcript, dict[str, Any]]] = []

    def subagent(
        self,
        parent: _Transcript,
        description: str,
        agent_type: str,
        prompt: str,
        work: Any,
        answer: str,
        *,
        seconds: float = 40,
    ) -> str:
        """Spawn a subagent from `parent` (the main file or another agent): Task call + its file."""
        agent = _Transcript(
            self.ids,
            self.main.session_id,
            parent.cwd,
            parent.git_branch,
            parent.clock + timedelta(seconds=5),
            model=HAIKU if agent_type == "Explore" else parent.model,
            agent_id=self.ids.agent(),
        )
        agent.user(prompt, parent=None, seconds=1)
        work(agent)
        agent.say(answer, out_tokens=700)
        self.agents.append((agent, {"agentType": agent_type, "description": description}))
        elapsed = (agent.clock - parent.clock).total_seconds() + 2
        tool_count = sum(1 for line in agent.lines for b in _blocks(line) if b.get("type") == "tool_use")
        parent.call(
            _Call(
                "Task",
                {"description": description, "prompt": prompt, "subagent_type": agent_type},
                [{"type": "text", "text": answer}, {"type": "text", "text": f"agentId: {agent.agent_id}"}],
                result={
                    "status": "completed",
                    "prompt": prompt,
                    "agentId": agent.agent_id,
                    "agentType": agent_type,
                    "content": [{"type": "text", "text": answer}],
                    "totalDurationMs": int(elapsed * 1000),
                    "totalTokens": 24000 + 900 * tool_count,
                    "totalToolUseCount": tool_count,
                },
                seconds=elapsed,
            )
        )
        assert agent.agent_id is not None
        return agent.agent_id

    def write(self) -> None:
        self.main.write(self.folder / f"{self.main.session_id}.jsonl")
        for agent, meta in self.agents:
            base = self.folder / self.main.session_id / "subagents" / f"agent-{agent.agent_id}"
            agent.write(base.with_suffix(".jsonl"))
            base.with_suffix(".meta.json").write_text(
                json.dumps(meta, separators=(",", ":")), encoding="utf-8"
            )


def _blocks(line: dict[str, Any]) -> list[dict[str, Any]]:
    content = line.get("message", {}).get("content")
    return content if isinstance(content, list) else []


def _patch(original: str, old: str, new: str) -> list[dict[str, Any]]:
    """Claude Code's `structuredPatch`: unified-diff hunks with three lines of context."""
    before = original.splitlines()
    after = original.replace(old, new, 1).splitlines()
    hunks = []
    for group in difflib.SequenceMatcher(None, before, after).get_grouped_opcodes(3):
        lines: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + s for s in before[i1:i2]]
            else:
                lines += ["-" + s for s in before[i1:i2]]
                lines += ["+" + s for s in after[j1:j2]]
        first, last = group[0], group[-1]
        hunks.append(
            {
                "oldStart": first[1] + 1,
                "oldLines": last[2] - first[1],
                "newStart": first[3] + 1,
                "newLines": last[4] - first[3],
                "lines": lines,
            }
        )
    return hunks


def _edit(path: str, original: str, old: str, new: str, seconds: float = 0.3) -> _Call:
    return _Call(
        "Edit",
        {"file_path": path, "old_string": old, "new_string": new},
        f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n"
        + "\n".join(f"{i + 1:6}\t{s}" for i, s in enumerate(original.replace(old, new, 1).splitlines()[:12])),
        result={
            "filePath": path,
            "oldString": old,
            "newString": new,
            "originalFile": original,
            "structuredPatch": _patch(original, old, new),
            "userModified": False,
            "replaceAll": False,
        },
        seconds=seconds,
    )


def _read(path: str, text: str) -> _Call:
    numbered = "\n".join(f"{i + 1:6}\t{s}" for i, s in enumerate(text.splitlines()))
    return _Call(
        "Read",
        {"file_path": path},
        numbered,
        result={
            "type": "text",
            "file": {
                "filePath": path,
                "content": text,
                "numLines": text.count("\n") + 1,
                "startLine": 1,
                "totalLines": text.count("\n") + 1,
            },
        },
        seconds=0.1,
    )


def _bash(
    command: str,
    stdout: str,
    *,
    exit_code: int = 0,
    stderr: str = "",
    seconds: float = 2.0,
    description: str | None = None,
) -> _Call:
    params: dict[str, Any] = {"command": command}
    if description:
        params["description"] = description
    if exit_code:
        text = f"Exit code {exit_code}\n{stdout}{stderr}".rstrip()
        return _Call("Bash", params, text, result=f"Error: {text}", is_error=True, seconds=seconds)
    return _Call(
        "Bash",
        params,
        stdout.rstrip() or "(no output)",
        result={"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False},
        seconds=seconds,
    )


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A small valid PNG (a header bar over a grey page) so the image block is a real image."""
    rows = []
    for y in range(height):
        colour = rgb if y < height // 5 else (236, 236, 236)
        rows.append(b"\x00" + bytes(colour) * width)
    raw = zlib.compress(b"".join(rows), 9)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


# ---------------------------------------------------------------------------- acme-shop

ACME = "/home/dev/src/acme-shop"
TAX_TS = """import { Money } from "../money";

export interface TaxRule {
  region: string;
  rate: number;
}

export function applyTax(subtotal: Money, rule: TaxRule): Money {
  const tax = subtotal.amount * rule.rate;
  return { amount: subtotal.amount + tax, currency: subtotal.currency };
}

export function taxLine(subtotal: Money, rule: TaxRule): string {
  return `${rule.region} VAT ${(rule.rate * 100).toFixed(0)}%`;
}
"""
JEST_FAIL = """> acme-shop@3.4.0 test
> jest checkout

 FAIL  src/checkout/__tests__/total.test.ts
  ● checkout total › adds 19% VAT for DE

    expect(received).toEqual(expected) // deep equality

    - Expected  - 1
    + Received  + 1

      Object {
    -   "amount": 11.9,
    +   "amount": 11.899999999999999,
        "currency": "EUR",
      }

      21 |     const total = checkoutTotal(cart, rules.DE);
    > 22 |     expect(total).toEqual({ amount: 11.9, currency: "EUR" });
         |                   ^

Tests:       1 failed, 23 passed, 24 total
Time:        2.31 s
"""
JEST_PASS = """> acme-shop@3.4.0 test
> jest checkout

 PASS  src/checkout/__tests__/total.test.ts
 PASS  src/checkout/__tests__/cart.test.ts

Tests:       24 passed, 24 total
Time:        2.18 s
"""


def _acme_checkout(root: Path, ids: _Ids) -> None:
    """Failing tests, an edit, a subagent that spawns another one, and a rewound prompt."""
    s = _Session(root, ids, ACME, "fix/checkout-tax", datetime(2025, 6, 12, 14, 5, tzinfo=UTC), model=OPUS)
    m = s.main
    m.lines.append(
        {
            "type": "file-history-snapshot",
            "messageId": ids.uuid(),
            "snapshot": {"messageId": ids.uuid(), "trackedFileBackups": {}, "timestamp": _iso(m.clock)},
            "isSnapshotUpdate": False,
        }
    )
    m.user(
        "The checkout tests started failing after yesterday's tax change. Find out why and fix it.",
        parent=None,
    )
    m.call(
        _bash("npm test -- checkout", JEST_FAIL, exit_code=1, seconds=2.3, description="Run checkout tests"),
        thinking="The failure is probably floating point: 10 * 1.19 is not exactly 11.9 in binary. "
        "Let me confirm by running the suite before touching anything.",
        out_tokens=180,
    )

    def explore(agent: _Transcript) -> None:
        agent.call(
            _Call(
                "Grep",
                {"pattern": "applyTax", "path": "src", "output_mode": "files_with_matches"},
                "Found 3 files\nsrc/checkout/tax.ts\nsrc/checkout/total.ts\nsrc/webhooks/stripe.ts",
                result={
                    "mode": "files_with_matches",
                    "filenames": ["src/checkout/tax.ts", "src/checkout/total.ts", "src/webhooks/stripe.ts"],
                    "numFiles": 3,
                },
                seconds=0.2,
            )
        )
        agent.call(_read("src/checkout/tax.ts", TAX_TS))

        def webhooks(inner: _Transcript) -> None:
            inner.call(_read("src/webhooks/stripe.ts", STRIPE_TS))
            inner.call(
                _bash(
                    "git log --oneline -3 -- src/webhooks/stripe.ts",
                    "9c1e2f4 Pass tax rule to invoice builder\n41aa0d2 Retry webhook on 409\n"
                    "0b7d3e1 Stripe webhooks: first version\n",
                    seconds=0.1,
                )
            )

        s.subagent(
            agent,
            "Check how Stripe webhooks apply tax",
            "general-purpose",
            "Read src/webhooks/stripe.ts and report whether invoice amounts are rounded before or after "
            "tax is applied. Do not change any file.",
            webhooks,
            "The webhook builds the invoice from `applyTax(...)` directly and never rounds, so invoices "
            "carry amounts like 11.899999999999999. Commit 9c1e2f4 introduced this.",
        )

    s.subagent(
        m,
        "Map the checkout and tax modules",
        "Explore",
        "Find every place that computes checkout totals or applies tax, and summarize the data flow.",
        explore,
        "Tax is applied in `src/checkout/tax.ts#applyTax`, used by `total.ts` and by the Stripe webhook. "
        "Nothing rounds to cents after multiplying by the rate, which explains the failing equality.",
    )
    m.call(
        _edit(
            "src/checkout/tax.ts",
            TAX_TS,
            "  const tax = subtotal.amount * rule.rate;\n  return { amount: subtotal.amount + tax, currency: subtotal.currency };",
            "  const tax = Math.round(subtotal.amount * rule.rate * 100) / 100;\n"
            "  const amount = Math.round((subtotal.amount + tax) * 100) / 100;\n"
            "  return { amount, currency: subtotal.currency };",
        ),
        out_tokens=420,
        cache_read=41000,
    )
    m.call(_bash("npm test -- checkout", JEST_PASS, seconds=2.2))
    answer = m.say(
        "Fixed. `applyTax` now rounds the tax and the total to cents, so 10 EUR at 19% is exactly "
        "11.90. All 24 checkout tests pass. The Stripe webhook uses the same function, so invoices "
        "are rounded too.",
        out_tokens=160,
    )[-1]
    # the first follow-up, later rewound (Esc Esc) and replaced by another prompt on the same parent
    m.user("Also round to cents in the invoice summary email.", seconds=90)
    m.call(_read("src/email/invoice.ts", INVOICE_TS))
    m.say("The email formats amounts with `toFixed(2)` already, so it shows 11.90. No change needed there.")
    m.user("Instead, add a test for zero-rated items so this cannot regress.", parent=answer, seconds=140)
    test_path = "src/checkout/__tests__/zero-rated.test.ts"
    test_src = (
        'import { applyTax } from "../tax";\n\n'
        'test("zero-rated items keep their price", () => {\n'
        '  expect(applyTax({ amount: 4.99, currency: "EUR" }, { region: "DE", rate: 0 }))\n'
        '    .toEqual({ amount: 4.99, currency: "EUR" });\n});\n'
    )
    m.call(
        _Call(
            "Write",
            {"file_path": test_path, "content": test_src},
            f"File created successfully at: {test_path}",
            result={"type": "create", "filePath": test_path, "content": test_src, "structuredPatch": []},
            seconds=0.2,
        )
    )
    m.call(_bash("npm test -- checkout", JEST_PASS.replace("24", "25"), seconds=2.4))
    m.say("Added `zero-rated.test.ts`; 25 tests pass.")
    m.system("turn_duration", None, durationMs=412000, messageCount=len(m.lines))
    s.write()


STRIPE_TS = """import { applyTax } from "../checkout/tax";
import { buildInvoice } from "../billing/invoice";

export async function onPaymentSucceeded(event: StripeEvent) {
  const rule = rules[event.data.region];
  const total = applyTax(event.data.subtotal, rule);
  await buildInvoice({ customer: event.data.customer, total });
}
"""
INVOICE_TS = """export function formatAmount(m: Money): string {
  return `${m.amount.toFixed(2)} ${m.currency}`;
}
"""
HEADER_CSS = """.site-header {
  display: flex;
  align-items: center;
  padding: 0 24px;
  height: 64px;
}

.site-header .logo {
  margin-top: 12px;
}
"""


def _acme_header(root: Path, ids: _Ids) -> None:
    """A pasted screenshot, a rejected command, and a legacy Warmup agent beside the session."""
    s = _Session(root, ids, ACME, "main", datetime(2025, 6, 10, 11, 20, tzinfo=UTC))
    m = s.main
    png = _png(96, 48, (36, 99, 235))
    m.user(
        [
            {
                "type": "text",
                "text": "The header is misaligned on mobile, see the screenshot. Can you fix it?",
            },
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": "image/png",
                    "data": base64.b64encode(png).decode(),
                },
            },
        ],
        parent=None,
    )
    m.call(
        _read("src/styles/header.css", HEADER_CSS),
        thinking="The logo sits lower than the nav links: something adds vertical offset on the logo only.",
    )
    m.call(_edit("src/styles/header.css", HEADER_CSS, "  margin-top: 12px;\n", "  margin-top: 0;\n"))
    m.call(
        _Call(
            "Bash",
            {"command": "rm -rf node_modules && npm ci", "description": "Reinstall dependencies"},
            "The user doesn't want to proceed with this tool use. The tool use was rejected.",
            result="User rejected tool use",
            is_error=True,
            seconds=6,
        )
    )
    m.user("No need to reinstall, just check it in the browser.", seconds=12)
    m.say(
        "Understood. The logo had a stray `margin-top: 12px`; with it removed the header items share one "
        "baseline at every width. Reload the page at 390px to confirm."
    )
    s.write()
    # 2.0.x pre-spawned "Warmup" agent: a legacy agent-<id>.jsonl beside the session, never linked to a call
    warm = _Transcript(
        ids,
        m.session_id,
        ACME,
        "main",
        datetime(2025, 6, 10, 11, 19, 58, tzinfo=UTC),
        model=HAIKU,
        agent_id=f"{ids.rng.getrandbits(32):08x}",
    )
    warm.user("Warmup", parent=None, seconds=0)
    warm.say("I'm ready to help you search and explore the codebase.", out_tokens=14)
    warm.write(s.folder / f"agent-{warm.agent_id}.jsonl")


# ---------------------------------------------------------------------------- ledger-api

LEDGER = "/home/dev/src/ledger-api"
MODULES = [
    "accounts",
    "journal",
    "postings",
    "currencies",
    "budgets",
    "reports",
    "imports",
    "users",
    "audit",
    "tags",
    "rules",
    "exports",
    "sessions",
    "payees",
    "schedules",
    "attachments",
]
VERBS = ["select", "insert", "update", "delete", "count", "exists"]


def _repo_source(module: str, step: int) -> str:
    cls = module.title().rstrip("s")
    return (
        f"from sqlalchemy.orm import Session\n\nfrom ledger.models import {cls}\n\n\n"
        f"class {cls}Repository:\n    def __init__(self, session: Session) -> None:\n        self.session = session\n\n"
        f"    def get(self, id_: int) -> {cls} | None:\n        return self.session.query({cls}).get(id_)\n\n"
        f"    def list(self, limit: int = {50 + step}) -> list[{cls}]:\n"
        f"        return self.session.query({cls}).order_by({cls}.id).limit(limit).all()\n"
    )


def _ledger_migration(root: Path, ids: _Ids, turns: int) -> None:
    """The long session: hundreds of turns over two days, two compactions, a subagent, failures."""
    s = _Session(root, ids, LEDGER, "sqlalchemy-2", datetime(2025, 6, 5, 8, 30, tzinfo=UTC))
    m = s.main
    m.user(
        "We're moving the repository layer to SQLAlchemy 2.0 style, one module at a time. For each module: "
        "read it, switch `session.query()` to `select()`, run its tests, and commit. Start with accounts.",
        parent=None,
    )
    m.say(
        "Plan: I'll go module by module, keeping each commit small so the history stays bisectable. "
        "I'll stop and ask if a module needs a schema change.",
        thinking="Sixteen modules. Each one follows the same pattern, so a checklist per module keeps this "
        "predictable. Tests exist per module under tests/repositories.",
        out_tokens=240,
    )
    rng = random.Random(7)
    compactions = {turns // 3, (2 * turns) // 3}
    for turn in range(turns):
        module = MODULES[turn % len(MODULES)]
        path = f"ledger/repositories/{module}.py"
        source = _repo_source(module, turn)
        cls = module.title().rstrip("s")
        if turn in compactions:
            m.compact(
                f"1. The user asked to migrate every repository module to SQLAlchemy 2.0 `select()` style.\n"
                f"2. Done so far: {turn} steps across {min(turn, len(MODULES))} modules; each step read the "
                f"module, rewrote queries, ran pytest and committed.\n3. Pending: continue with {module}.",
                pre_tokens=150000 + turn * 10,
            )
        if turn == turns // 2:
            m.system(
                "api_error",
                None,
                level="error",
                retryInMs=2000,
                retryAttempt=1,
                maxRetries=10,
                error={
                    "status": 529,
                    "error": {
                        "type": "error",
                        "error": {"type": "overloaded_error", "message": "Overloaded"},
                    },
                },
            )
        if turn == 40:

            def suite(agent: _Transcript) -> None:
                agent.call(
                    _bash(
                        "pytest -q tests/repositories",
                        "........F.....\n1 failed, 13 passed in 4.02s\n",
                        exit_code=1,
                        seconds=4.1,
                    )
                )
                agent.call(
                    _read(
                        "tests/repositories/test_journal.py",
                        "def test_list_orders_by_date(repo):\n    assert repo.list()[0].date <= repo.list()[1].date\n",
                    )
                )

            s.subagent(
                m,
                "Run the repository tests and summarize failures",
                "general-purpose",
                "Run pytest on tests/repositories and summarize each failure in one line with its cause.",
                suite,
                "One failure: test_journal.py::test_list_orders_by_date expects date order, but the "
                "repository now orders by id. Everything else passes.",
            )
        prompt = rng.choice(
            [
                f"Next: {module}.",
                f"Good. Continue with {module}.",
                f"Do {module} now, and keep the public method names.",
                f"Migrate {module}; watch out for the lazy-loaded relationships.",
            ]
        )
        m.user(prompt, seconds=rng.randint(30, 400))
        read = _read(path, source)
        read.text_before = f"Reading the {module} repository."
        m.call(read, out_tokens=60, cache_read=20000 + turn * 40)
        new = f"        return list(self.session.scalars(select({cls}).order_by({cls}.id).limit(limit)))"
        old = f"        return self.session.query({cls}).order_by({cls}.id).limit(limit).all()"
        m.call(_edit(path, source, old, new), out_tokens=rng.randint(200, 900), cache_read=20000 + turn * 40)
        failed = rng.random() < 0.12
        verb = rng.choice(VERBS)
        if failed:
            m.call(
                _bash(
                    f"pytest -q tests/repositories/test_{module}.py",
                    f"..F\nFAILED tests/repositories/test_{module}.py::test_{verb} - "
                    f"AttributeError: 'Select' object has no attribute 'all'\n1 failed, 2 passed in 0.41s\n",
                    exit_code=1,
                    seconds=rng.uniform(0.8, 3.0),
                )
            )
            m.call(
                _bash(
                    f"sed -n 1,40p ledger/repositories/{module}.py | grep -n query",
                    f"12:        return self.session.query({cls}).get(id_)\n",
                    seconds=0.1,
                )
            )
            m.say(
                f"`get()` still used the legacy API; switched it to `session.get({cls}, id_)`.",
                out_tokens=rng.randint(80, 300),
            )
        m.call(
            _bash(
                f"pytest -q tests/repositories/test_{module}.py",
                "...\n3 passed in 0.38s\n",
                seconds=rng.uniform(0.5, 2.5),
            )
        )
        m.call(
            _bash(
                f'git commit -am "{module}: SQLAlchemy 2.0 select() style"',
                f"[sqlalchemy-2 {rng.getrandbits(28):07x}] {module}: SQLAlchemy 2.0 select() style\n"
                " 1 file changed, 2 insertions(+), 2 deletions(-)\n",
                seconds=0.3,
            )
        )
        m.say(
            f"{module.title()} is migrated and committed ({'after one fix, ' if failed else ''}tests green).",
            out_tokens=rng.randint(40, 200),
        )
    m.user("That's all of them. Open a PR.", seconds=600)
    m.call(_bash("gh pr create --fill", "https://github.com/acme/ledger-api/pull/214\n", seconds=3.2))
    m.say("Opened https://github.com/acme/ledger-api/pull/214.")
    s.write()


# an answer written in Markdown, as agents write them: the viewer and `show` render it
HEALTH_ANSWER = """## Why /health returns 503

The app itself is fine: **staging's Postgres refuses connections**, and the health handler answers `503` *on purpose* when its database ping fails:

```ts
export async function health(db: Pool): Promise<number> {
  const ok = await db.query("SELECT 1").catch(() => null);
  return ok ? 200 : 503; // a dependency is down
}
```

| check | result |
|:--|--:|
| `GET /health` | 503 |
| database ping | refused (`10.0.4.12:5432`) |
| ingress | ok |

Next:

1. Look at the database pod:
   ```bash
   kubectl get pods -n staging -l app=postgres
   ```
2. If it runs, check its service and the network policy.

> The [staging runbook](https://wiki.acme.dev/ledger/staging) has the rest."""


def _ledger_health(root: Path, ids: _Ids) -> None:
    """A short debugging session with a failing curl and a local command."""
    s = _Session(root, ids, LEDGER, "main", datetime(2025, 6, 11, 16, 40, tzinfo=UTC))
    m = s.main
    m.user(
        "<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args></command-args>",
        parent=None,
        seconds=0,
    )
    m.user(
        "<local-command-stdout>Set model to opus (claude-opus-4-1-20250805)</local-command-stdout>", seconds=1
    )
    m.model = OPUS
    m.user("Why does /health return 503 on staging?", seconds=15)
    m.call(
        _bash(
            "curl -sS -o /dev/null -w '%{http_code}' https://staging.ledger.internal/health",
            "",
            exit_code=22,
            stderr="curl: (22) The requested URL returned error: 503\n",
            seconds=1.4,
        )
    )
    m.call(
        _bash(
            "kubectl logs deploy/ledger-api --tail=5",
            "2025-06-11T16:39:58Z ERROR health: database ping failed: connection refused (10.0.4.12:5432)\n"
            "2025-06-11T16:39:59Z ERROR health: database ping failed: connection refused (10.0.4.12:5432)\n",
            seconds=2.0,
        )
    )
    m.say(
        HEALTH_ANSWER,
        thinking="503 comes from our own handler when a dependency ping fails, not from the ingress.",
    )
    s.write()


# ---------------------------------------------------------------------------- dotfiles and blog

TMUX_CONF = """set -g prefix C-a
unbind C-b
bind C-a send-prefix

# vim keys between panes
bind h select-pane -L
bind j select-pane -D
bind k select-pane -U
bind l select-pane -R

set -g mouse on
set -g history-limit 50000
"""


def _dotfiles_tmux(root: Path, ids: _Ids) -> None:
    s = _Session(
        root, ids, "/home/dev/dotfiles", "master", datetime(2025, 6, 8, 21, 2, tzinfo=UTC), model=HAIKU
    )
    m = s.main
    m.user("Add a tmux config with vim keys for moving between panes and Ctrl-a as prefix.", parent=None)
    m.call(
        _Call(
            "Write",
            {"file_path": "/home/dev/dotfiles/tmux.conf", "content": TMUX_CONF},
            "File created successfully at: /home/dev/dotfiles/tmux.conf",
            result={
                "type": "create",
                "filePath": "/home/dev/dotfiles/tmux.conf",
                "content": TMUX_CONF,
                "structuredPatch": [],
            },
            seconds=0.2,
        )
    )
    m.call(_bash("tmux source-file ~/dotfiles/tmux.conf", "", seconds=0.2))
    m.system(
        "stop_hook_summary",
        None,
        hookCount=1,
        hookInfos=[{"command": "~/bin/notify-done"}],
        hookErrors=[],
        preventedContinuation=False,
        stopReason="",
        hasOutput=False,
        level="suggestion",
    )
    m.say(
        "Created `tmux.conf`: prefix is Ctrl-a, `h j k l` move between panes, mouse on, 50k lines of history."
    )
    s.write()


ZSHRC = """export EDITOR=nvim
setopt prompt_subst
autoload -Uz vcs_info
PROMPT='%~ %# '
"""
ZSHRC_NEW = """export EDITOR=nvim
setopt prompt_subst
autoload -Uz vcs_info
precmd() { vcs_info }
zstyle ':vcs_info:git:*' formats ' (%b)'
PROMPT='%~${vcs_info_msg_0_} %# '
"""
PROMPT_TODOS = [
    ("Read the current prompt in zshrc", "Reading the current prompt in zshrc"),
    ("Add vcs_info to the prompt", "Adding vcs_info to the prompt"),
    ("Check it in a repository and outside one", "Checking it in a repository and outside one"),
]


def _todos(*statuses: str, extra: tuple[str, str, str] | None = None) -> list[dict[str, str]]:
    items = [
        {"content": c, "status": st, "activeForm": a}
        for (c, a), st in zip(PROMPT_TODOS, statuses, strict=True)
    ]
    if extra:
        items.append({"content": extra[0], "status": extra[2], "activeForm": extra[1]})
    return items


def _dotfiles_prompt(root: Path, ids: _Ids) -> None:
    """Claude Code 2.1's own shapes in one session: hooks, an IDE selection, Claude Opus 4.7's empty
    thinking blocks, TodoWrite updates, a `!` command with stdout and stderr, a slash command with
    its output."""
    s = _Session(
        root, ids, "/home/dev/dotfiles", "master", datetime(2025, 6, 9, 19, 30, tzinfo=UTC), model=OPUS47
    )
    m = s.main
    m.hook(
        "hook_success",
        "SessionStart",
        hookName="SessionStart:startup",
        content="",
        stdout="",
        stderr="",
        exitCode=0,
        command="~/bin/notify-session start",
        durationMs=41,
    )
    m.user(
        [
            {
                "type": "text",
                "text": "<ide_selection>The user selected the lines 4 to 4 from /home/dev/dotfiles/zshrc:\n"
                "PROMPT='%~ %# '\n\nThis may or may not be related to the current task.</ide_selection>",
            },
            {"type": "text", "text": "Show the git branch in my prompt, only inside repositories."},
        ],
        parent=True,
        seconds=12,
    )
    m.hook(
        "hook_success",
        "UserPromptSubmit",
        content="",
        stdout="",
        stderr="",
        exitCode=0,
        command="~/bin/notify-session busy",
        durationMs=38,
    )
    m.call(
        _Call(
            "TodoWrite",
            {"todos": _todos("in_progress", "pending", "pending")},
            TODO_OK,
            result={"oldTodos": [], "newTodos": _todos("in_progress", "pending", "pending")},
            seconds=0.1,
            text_before="zsh's `vcs_info` does this; I'll add it to the prompt.",
        ),
        thinking="",
    )
    m.call(_read("/home/dev/dotfiles/zshrc", ZSHRC), thinking="")
    m.call(
        _edit("/home/dev/dotfiles/zshrc", ZSHRC, "PROMPT='%~ %# '\n", ZSHRC_NEW.split("vcs_info\n", 1)[1]),
        thinking="",
    )
    m.hook(
        "hook_non_blocking_error",
        "PostToolUse",
        hookName="PostToolUse:Edit",
        stdout="",
        stderr="zshrc:6: SC2016: Expressions don't expand in single quotes (vcs_info expands them at each prompt)\n",
        exitCode=1,
        command="shellcheck --shell=bash ~/dotfiles/zshrc",
        durationMs=212,
    )
    before = _todos("in_progress", "pending", "pending")
    after = _todos(
        "completed",
        "completed",
        "in_progress",
        extra=(
            "Keep the prompt fast in big repositories",
            "Keeping the prompt fast in big repositories",
            "pending",
        ),
    )
    m.call(
        _Call(
            "TodoWrite",
            {"todos": after},
            TODO_OK,
            result={"oldTodos": before, "newTodos": after},
            seconds=0.1,
        ),
        thinking="",
    )
    m.say(
        "Added `vcs_info`: the branch shows as ` (master)` inside a repository and nothing outside one. "
        "shellcheck's warning is expected here: `vcs_info` expands the prompt itself.",
        thinking="",
    )
    m.system(
        "stop_hook_summary",
        None,
        hookCount=1,
        hookInfos=[{"command": "~/bin/notify-session idle", "durationMs": 35}],
        hookErrors=[],
        preventedContinuation=False,
        stopReason="",
        hasOutput=False,
        level="suggestion",
    )
    m.user("<bash-input>source ~/.zshrc && git -C ~/dotfiles status -sb</bash-input>", seconds=40)
    m.user(
        "<bash-stdout>## master...origin/master\n M zshrc\n?? notes.md</bash-stdout>"
        "<bash-stderr>zsh: compinit: insecure directories, run compaudit for list.</bash-stderr>",
        seconds=0.4,
    )
    m.user(
        "<command-name>/cost</command-name>\n            <command-message>cost</command-message>\n"
        "            <command-args></command-args>",
        seconds=15,
    )
    m.user(
        "<local-command-stdout>Total cost:            $0.0912\nTotal duration (API):  24.6s\n"
        "Total code changes:    3 lines added, 1 line removed</local-command-stdout>",
        seconds=0.2,
    )
    s.write()


DRAFT = """# What WAL mode really buys you

SQLite's write-ahead log lets readers keep reading while a writer commits.
Its not magic: checkpoints still block, and a long reader can make the WAL grow without bound.

In practise you want `synchronous=NORMAL` with WAL.
"""


def _blog_proofread(root: Path, ids: _Ids) -> None:
    s = _Session(root, ids, "/home/dev/notes/blog", "drafts", datetime(2025, 6, 3, 7, 45, tzinfo=UTC))
    m = s.main
    m.user("Proofread posts/wal.md and fix typos only, no rewording.", parent=None)
    m.call(_read("posts/wal.md", DRAFT))
    edits = [
        {"old_string": "Its not magic", "new_string": "It's not magic"},
        {"old_string": "In practise", "new_string": "In practice"},
    ]
    fixed = DRAFT.replace("Its not magic", "It's not magic").replace("In practise", "In practice")
    m.call(
        _Call(
            "MultiEdit",
            {"file_path": "posts/wal.md", "edits": edits},
            "Applied 2 edits to posts/wal.md",
            result={
                "filePath": "posts/wal.md",
                "edits": edits,
                "originalFileContents": DRAFT,
                "structuredPatch": _patch(DRAFT, DRAFT, fixed),
                "userModified": False,
            },
            seconds=0.2,
        ),
        thinking='Two typos: the missing apostrophe in "Its" and the British/American mix-up "practise" '
        '(a verb in British English; the noun is "practice").',
    )
    m.say('Fixed two typos: "Its" → "It\'s" and "practise" → "practice". Nothing else changed.')
    s.write()
