"""`threadloom export --redact` leaks no secret, in any format.

Realistic secrets (cloud, VCS, chat, payment and model-provider keys, JWTs, private keys, passwords
in URLs, `.env` assignments, auth headers), fresh values of every kind, are masked by the Redactor
wherever a session holds them: on a line, in a raw record after an escaped newline, in a JSON string
inside a JSON string, over a diff's rows, in a terminal's colours, in a one-line summary cut short.

Then they are planted in every field of Claude Code, Codex and Gemini sessions: prompts, replies,
thinking, tool inputs (Bash, Write, Edit, apply_patch, shell arguments), tool outputs (plain, in
blocks, coloured, numbered by Read), structured patches, file paths, titles and image metadata,
each field its own values. The sessions are written as the agents write them, ingested by the real
code and exported by the CLI as Markdown, HTML and JSON; no planted secret, nor any 12 characters in
a row of one, may appear in an export read as written, with JSON escapes undone, with HTML tags and
entities undone, or with Markdown's backslash escapes undone. The summary line counts what was
masked, and ordinary look-alikes (hashes, UUIDs, git SHAs, base64 data, `max_tokens=4096`) stay.

Last, a real Claude Code session (../shared/corpus; skipped without it) has nothing masked, and
secrets planted in it are all masked; and a secret that the archive's cut of a first prompt splits
is masked all the same.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
import random
import re
import string
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from threadloom.core.actions.export import export_session
from threadloom.core.base.redact import Redactor
from threadloom.core.base.text import one_line
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.query import resolve_session
from threadloom.core.store import db

from tests.builders.claude import Transcript, tool_use
from tests.support import CORPUS, Rollout

WINDOW = 12  # this many characters in a row of a secret, found in an export, is a leak
FORMATS = ("md", "html", "json")

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
UPPER = string.ascii_uppercase + string.digits


@dataclass(frozen=True)
class Planted:
    """One secret as a log holds it: `text` is what is written, `parts` what must not leak (the
    secret itself, or each line of a private key's body), `bare` says the text names itself (a
    prefixed token, not a value that only its variable's name gives away)."""

    kind: str
    text: str
    parts: tuple[str, ...]
    bare: bool = False

    @property
    def multiline(self) -> bool:
        return "\n" in self.text


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _pem(rng: random.Random, label: str, start: str, width: int, lines: int) -> Planted:
    """A private key's armour around random base64 that starts as such a key's DER does."""
    body = start + _r(rng, B64, width * lines - len(start) + rng.randrange(8, width - 8))
    rows = [body[i : i + width] for i in range(0, len(body), width)]
    rows[-1] += "=" * (-len(rows[-1]) % 4 or 0)
    text = f"-----BEGIN {label}-----\n" + "\n".join(rows) + f"\n-----END {label}-----"
    return Planted(f"pem-{label.split()[0].lower()}", text, tuple(rows))


def secrets(rng: random.Random) -> list[Planted]:
    """One fresh value of every kind of secret, written as a session would hold it."""
    aws_id = "AKIA" + _r(rng, UPPER, 16)
    aws_secret = _r(rng, B64, 40)
    sts_secret = _r(rng, B64, 40)
    gcp = "AIza" + _r(rng, URLSAFE, 35)
    gemini = "AIza" + _r(rng, URLSAFE, 35)
    gocspx = "GOCSPX-" + _r(rng, URLSAFE, 28)
    azure = _r(rng, B64, 86) + "=="
    azure_ad = _r(rng, ALNUM, 3) + str(rng.randrange(10)) + "Q~" + _r(rng, URLSAFE, 34)
    ghp = "ghp_" + _r(rng, ALNUM, 36)
    fine = "github_pat_" + _r(rng, ALNUM, 22) + "_" + _r(rng, ALNUM, 59)
    glpat = "glpat-" + _r(rng, URLSAFE, 20)
    xoxb = f"xoxb-{_r(rng, string.digits, 11)}-{_r(rng, string.digits, 13)}-{_r(rng, ALNUM, 24)}"
    xoxp = f"xoxp-{_r(rng, string.digits, 11)}-{_r(rng, string.digits, 11)}-{_r(rng, string.digits, 12)}-{_r(rng, HEX, 32)}"
    slack_hook = f"T0{_r(rng, UPPER, 8)}/B0{_r(rng, UPPER, 8)}/{_r(rng, ALNUM, 24)}"
    discord_hook = f"{_r(rng, string.digits, 19)}/{_r(rng, URLSAFE, 68)}"
    stripe_live = "sk_live_51" + _r(rng, ALNUM, 97)
    stripe_test = "sk_test_51" + _r(rng, ALNUM, 97)
    stripe_rk = "rk_live_51" + _r(rng, ALNUM, 97)
    whsec = "whsec_" + _r(rng, ALNUM, 32)
    ant = "sk-ant-api03-" + _r(rng, URLSAFE, 93) + "AA"
    proj = "sk-proj-" + _r(rng, URLSAFE, 156)
    legacy = "sk-" + _r(rng, ALNUM, 20) + "T3BlbkFJ" + _r(rng, ALNUM, 20)
    hf = "hf_" + _r(rng, string.ascii_letters, 34)
    groq = "gsk_" + _r(rng, ALNUM, 52)
    xai = "xai-" + _r(rng, ALNUM, 80)
    openrouter = "sk-or-v1-" + _r(rng, HEX, 64)
    npm = "npm_" + _r(rng, ALNUM, 36)
    claims = {"sub": _r(rng, string.digits, 10), "email": f"{_r(rng, string.ascii_lowercase, 8)}@acme.io"}
    payload, signature = _b64url(json.dumps(claims).encode()), _r(rng, URLSAFE, 43)
    jwt = f"{_b64url(json.dumps({'alg': 'HS256', 'typ': 'JWT'}).encode())}.{payload}.{signature}"
    pg_pw, redis_pw, db_pw, smtp_pw, docker_pw, curl_pw = (_r(rng, ALNUM + "-_.~", 20) for _ in range(6))
    token, bearer, api_header = _r(rng, ALNUM, 32), _r(rng, URLSAFE, 40), _r(rng, HEX, 32)
    return [
        Planted("aws-access-key-id", f"aws_access_key_id = {aws_id}", (aws_id,), bare=False),
        Planted("aws-secret-access-key", f"AWS_SECRET_ACCESS_KEY={aws_secret}", (aws_secret,)),
        Planted("aws-sts-json", f'"SecretAccessKey": "{sts_secret}",', (sts_secret,)),
        Planted("gcp-api-key", gcp, (gcp,), bare=True),
        Planted("google-ai-key", f"GEMINI_API_KEY={gemini}", (gemini,)),
        Planted("gcp-oauth-secret", gocspx, (gocspx,), bare=True),
        Planted(
            "azure-storage",
            f"DefaultEndpointsProtocol=https;AccountName=shopdata;AccountKey={azure};EndpointSuffix=core.windows.net",
            (azure,),
        ),
        Planted("azure-ad-secret", f"client secret: {azure_ad}", (azure_ad,)),
        Planted("github-classic", f"https://{ghp}@github.com/acme/shop.git", (ghp,), bare=True),
        Planted("github-fine-grained", fine, (fine,), bare=True),
        Planted("gitlab", glpat, (glpat,), bare=True),
        Planted("slack-bot", xoxb, (xoxb,), bare=True),
        Planted("slack-user", xoxp, (xoxp,), bare=True),
        Planted("slack-webhook", f"https://hooks.slack.com/services/{slack_hook}", (slack_hook,), bare=True),
        Planted(
            "discord-webhook", f"https://discord.com/api/webhooks/{discord_hook}", (discord_hook,), bare=True
        ),
        Planted("stripe-live", stripe_live, (stripe_live,), bare=True),
        Planted("stripe-test", f"STRIPE_KEY={stripe_test}", (stripe_test,)),
        Planted("stripe-restricted", stripe_rk, (stripe_rk,), bare=True),
        Planted("stripe-webhook", whsec, (whsec,), bare=True),
        Planted("anthropic", ant, (ant,), bare=True),
        Planted("openai-project", proj, (proj,), bare=True),
        Planted("openai-legacy", f"OPENAI_API_KEY={legacy}", (legacy,)),
        Planted("huggingface", hf, (hf,), bare=True),
        Planted("groq", groq, (groq,), bare=True),
        Planted("xai", xai, (xai,), bare=True),
        Planted("openrouter", openrouter, (openrouter,), bare=True),
        Planted("npm", f"//registry.npmjs.org/:_authToken={npm}", (npm,)),
        Planted("jwt", jwt, (payload, signature), bare=True),
        Planted("postgres-url", f"postgres://shop_app:{pg_pw}@db.internal:5432/shop", (pg_pw,)),
        Planted("redis-url", f"REDIS_URL=redis://:{redis_pw}@cache.internal:6379/0", (redis_pw,)),
        Planted("env-password", f"DATABASE_PASSWORD={db_pw}", (db_pw,)),
        Planted("env-export", f'export API_TOKEN="{token}"', (token,)),
        Planted("env-lowercase", f"smtp_password = '{smtp_pw}'", (smtp_pw,)),
        Planted("docker-env", f"docker run -e POSTGRES_PASSWORD={docker_pw} postgres:16", (docker_pw,)),
        Planted("curl-user", f"curl -u deploy:{curl_pw} https://ci.acme.io/api/builds", (curl_pw,)),
        Planted("bearer", f"Authorization: Bearer {bearer}", (bearer,)),
        Planted("api-key-header", f"X-Api-Key: {api_header}", (api_header,)),
        _pem(rng, "RSA PRIVATE KEY", "MIIEowIBAAKCAQEA", 64, 24),
        _pem(rng, "EC PRIVATE KEY", "MHcCAQEEI", 64, 2),
        _pem(rng, "OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", 70, 6),
    ]


# ------------------------------------------------------------------ ordinary text that must stay


def _png(rng: random.Random) -> bytes:
    """A real 24×24 PNG of noise: its base64 is long, mixed-case and must not be masked."""
    rows = b"".join(b"\x00" + bytes(rng.randrange(256) for _ in range(24 * 3)) for _ in range(24))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    ihdr = struct.pack(">IIBBBBB", 24, 24, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


ORDINARY_RNG = random.Random(7)
PNG = base64.b64encode(_png(ORDINARY_RNG)).decode()
WRAPPED = base64.encodebytes(bytes(ORDINARY_RNG.randrange(256) for _ in range(400))).decode().strip()
ORDINARY = (
    "sha256 " + _r(ORDINARY_RNG, HEX, 64),
    "commit " + _r(ORDINARY_RNG, HEX, 40),
    "request 3f2a9c0d-1e4b-4c5d-8e6f-7a8b9c0d1e2f",
    "\n".join(_r(ORDINARY_RNG, HEX, 64) for _ in range(3)),  # a column of hashes
    WRAPPED,  # `base64 file` output, wrapped at 76
    "max_tokens=4096 primary_key=True sort_key=None",
    "data:image/png;base64," + PNG[:200],
)


def _cut(p: Planted) -> str:
    """A one-line command whose 70-character summary cuts `p` after some 19 of its characters."""
    at = p.text.index(p.parts[0])
    return "cd /srv/shop && " + "x" * max(0, 34 - at) + f" {p.text} && echo deployed to production"


# ------------------------------------------------------------------ the Redactor on its own


def _contexts(p: Planted) -> Iterator[tuple[str, str, Callable[[Redactor], str]]]:
    """`p` where a session holds it, each with how the export reads it: on a line, in a raw record
    after an escaped newline, on a diff's added lines, in a terminal's colours, in a JSON string
    inside a JSON string (Codex's arguments), cut into a one-line summary."""
    text = p.text
    record = json.dumps({"type": "user", "content": f"see below\n{text}\nthanks"})
    nested = json.dumps({"arguments": json.dumps({"command": ["bash", "-lc", f"cd /app\n{text}"]})})
    rows = ["/srv/app/.env", *(f"+{line}" for line in text.splitlines())]
    yield "line", text, lambda r: r(f"deploy with\n{text}\n")
    yield "raw record", record, lambda r: r.json_text(record)
    yield "nested JSON", nested, lambda r: r.json_text(nested)
    yield "diff rows", "\n".join(rows), lambda r: "\n".join(r.lines(rows))
    yield "colours", text, lambda r: r(f"\x1b[32m\x1b[K{text}\x1b[m\x1b[K")
    if not p.multiline:
        summary = one_line(_cut(p), 70)
        yield "summary", summary, lambda r: r(summary)


def test_every_kind_of_secret_is_masked_wherever_it_stands():
    missed = []
    for p in secrets(random.Random(11)):
        for where, before, masked in _contexts(p):
            windows = [
                part[i : i + WINDOW] for part in p.parts for i in range(max(1, len(part) - WINDOW + 1))
            ]
            there = [w for w in windows if w in before]
            if not there:
                continue  # a summary cut before the secret began
            redact = Redactor()
            out = masked(redact)
            if any(w in out for w in there) or not redact.total:
                missed.append(f"{p.kind} in {where}: {out[:160]!r}")
    assert not missed, f"{len(missed)} missed:\n" + "\n".join(missed)


def test_a_raw_record_is_masked_decoded_and_one_with_nothing_to_mask_keeps_its_bytes():
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
    record = json.dumps({"type": "user", "content": f"KEY_ID=x\nAWS_SECRET_ACCESS_KEY={secret}\nok"})
    redact = Redactor()
    out = redact.json_text(record)
    assert secret not in out and json.loads(out)["content"] == (
        "KEY_ID=x\nAWS_SECRET_ACCESS_KEY=[REDACTED:env-secret]\nok"
    )
    plain = json.dumps({"type": "user", "content": "nothing here"}, indent=1)  # its spacing kept
    assert redact.json_text(plain) is plain and redact.total == 1


def test_a_json_text_in_a_string_and_a_line_that_is_no_json_are_masked_too():
    redact = Redactor()
    token = "Zq8" + "x" * 29
    arguments = json.dumps({"command": ["bash", "-lc", f'cd /app\nexport API_TOKEN="{token}"']})
    codex = json.dumps({"type": "function_call", "arguments": arguments})  # JSON inside a JSON string
    assert token not in redact.json_text(codex)
    pretty = '      "content": "deploy:\\nexport API_TOKEN=\\"' + token + '\\"\\nDone",'  # a Gemini line
    out = redact.json_text(pretty)
    assert (
        token not in out
        and out == '      "content": "deploy:\\nexport API_TOKEN=[REDACTED:env-secret]\\nDone",'
    )
    assert redact.counts == {"env-secret": 1}  # one secret, counted once wherever it was seen


def test_a_key_split_over_rows_is_masked_row_by_row():
    key = _pem(random.Random(3), "RSA PRIVATE KEY", "MIIEowIBAAKCAQEA", 64, 6)
    rows = ["/srv/.env", *(f"+{line}" for line in key.text.splitlines()), "+PORT=8080"]
    out = Redactor().lines(rows)
    assert len(out) == len(rows) and out[0] == "/srv/.env" and out[-1] == "+PORT=8080"
    assert out[1] == "+[REDACTED:private-key]" and set(out[2:-1]) == {"+"}  # the marks stay
    body = [f"-{line}" for line in key.parts[1:5]]  # a hunk inside the key: no BEGIN line in sight
    assert Redactor().lines(body) == ["-[REDACTED:private-key]", "-", "-", "-"]


def test_escape_sequences_webhooks_and_cut_keys():
    redact = Redactor()
    coloured = "\x1b[01;31m\x1b[KDB_PASSWORD\x1b[m\x1b[K=hunter2hunter2 \x1b[32mghp_" + "a1B2" * 9 + "\x1b[0m"
    out = redact(coloured)
    assert "hunter2" not in out and "a1B2" not in out and out.startswith("\x1b[01;31m")
    hook = "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/cccccccccccccccccccccccc"
    assert redact(hook) == "https://hooks.slack.com/services/[REDACTED:slack-webhook]"
    assert redact("aws s3 ls --key AKIAIOSFOD…") == "aws s3 ls --key [REDACTED:cut-key]"
    assert redact("written at the end: ghp_x1Y2z3W4v5") == "written at the end: [REDACTED:cut-key]"


def test_look_alikes_are_left():
    redact = Redactor()
    text = "\n".join(
        [
            *ORDINARY,
            "STORAGE_KEY = 'todos'",
            '"ParameterKey": "Environment"',
            "sorted(rows, key=lambda r: r.name)",
            "export MAX_THINKING_TOKENS=10000",
            "API_KEY=$API_KEY",
            "see sk-not-a-key",
        ]
    )
    assert redact(text) == text and redact.total == 0
    assert redact.json_text(json.dumps({"primaryKey": "id", "sort_key": "name", "tokens": 12})) is not None
    assert redact.total == 0


# ------------------------------------------------------------------ the sessions


@dataclass
class Field:
    agent: str
    name: str
    planted: list[Planted]


class Plan:
    """Hands out fresh secrets for each field and remembers where each went."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.fields: list[Field] = []

    def take(
        self, agent: str, name: str, *, single: bool = False, keep: Callable[[Planted], bool] | None = None
    ) -> list[Planted]:
        """Fresh secrets for field `name`: all kinds, or those on one line, or those `keep` keeps."""
        found = [p for p in secrets(self.rng) if not (single and p.multiline) and (keep is None or keep(p))]
        self.fields.append(Field(agent, name, found))
        return found

    def of(self, agent: str) -> list[Field]:
        return [f for f in self.fields if f.agent == agent]


def _block(found: list[Planted]) -> str:
    return "\n".join(p.text for p in found)


def _coloured(found: list[Planted]) -> str:
    """What `grep --color=always -rn` prints: file, line number and match each in escape sequences."""
    return "\n".join(
        f"\x1b[35m\x1b[K.env\x1b[m\x1b[K\x1b[36m\x1b[K:\x1b[m\x1b[K\x1b[32m\x1b[K{n}\x1b[m\x1b[K\x1b[36m\x1b[K:"
        f"\x1b[m\x1b[K\x1b[01;31m\x1b[K{p.text}\x1b[m\x1b[K"
        for n, p in enumerate(found, 1)
    )


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    """JSON Lines as Claude Code (JSON.stringify) and Codex (serde) write them: compact, UTF-8."""
    path.write_text(
        "".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n" for line in lines)
    )


CLAUDE_SID = "5ec7e7a1-1111-4222-8333-00000000c1a0"
CODEX_THREAD = "019a5ec7-1111-7222-8333-00000000c0de"
GEMINI_SID = "5ec7e7a1-1b2d-4e3f-9a0b-00000000ge01"


def claude_session(root: Path, plan: Plan) -> None:
    t = Transcript(
        root / "claude" / "projects" / "-srv-shop" / f"{CLAUDE_SID}.jsonl", CLAUDE_SID, cwd="/srv/shop"
    )
    t.user(
        "Set up the deploy. Everything you need:\n"
        + _block(plan.take("claude", "prompt"))
        + "\n"
        + "\n".join(ORDINARY)
    )
    images = plan.take("claude", "image metadata", single=True)
    t.add(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "text", "text": "screenshots of the dashboard"},
                    *(
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": f"image/png; {p.text}", "data": PNG},
                        }
                        for p in images
                    ),
                ],
            },
        }
    )
    t.assistant("I will use:\n" + _block(plan.take("claude", "assistant text")))
    t.assistant("Thought about it.", thinking="The user pasted:\n" + _block(plan.take("claude", "thinking")))
    t.assistant(
        None,
        tools=[
            tool_use(
                "cb1",
                "Bash",
                command="set -e\n" + _block(plan.take("claude", "bash command")),
                description="deploy",
            )
        ],
    )
    t.tool_result("cb1", _block(plan.take("claude", "bash output")))
    for n, p in enumerate(plan.take("claude", "bash one-line summary", single=True)):
        t.assistant(None, tools=[tool_use(f"cs{n}", "Bash", command=_cut(p))])
        t.tool_result(f"cs{n}", "ok")
    t.assistant(None, tools=[tool_use("cg1", "Bash", command="grep --color=always -rn KEY .")])
    t.tool_result("cg1", _coloured(plan.take("claude", "coloured output", single=True)))
    t.assistant(
        None,
        tools=[
            tool_use(
                "cw1",
                "Write",
                file_path="/srv/shop/.env",
                content=_block(plan.take("claude", "Write content")) + "\n",
            )
        ],
    )
    t.tool_result("cw1", "File created successfully at: /srv/shop/.env")
    for n, p in enumerate(plan.take("claude", "file path", keep=lambda p: p.bare and "/" not in p.text)):
        path = f"/home/dev/.cache/ci/{p.text}/config.json"
        t.assistant(None, tools=[tool_use(f"cp{n}", "Write", file_path=path, content="{}\n")])
        t.tool_result(f"cp{n}", f"File created successfully at: {path}")
    old, new = plan.take("claude", "Edit old_string"), plan.take("claude", "Edit new_string")
    t.assistant(
        None,
        tools=[
            tool_use(
                "ce1",
                "Edit",
                file_path="/srv/shop/config/secrets.txt",
                old_string=_block(old),
                new_string=_block(new),
            )
        ],
    )
    t.tool_result("ce1", "The file /srv/shop/config/secrets.txt has been updated.")
    # an Edit inside a key, rotating lines of one for lines of another: its snippets are body lines
    # whose BEGIN line is elsewhere in the file
    keys = [p for p in secrets(plan.rng) + secrets(plan.rng) if p.kind == "pem-rsa"]
    old_rows, new_rows = keys[0].parts[3:9], keys[1].parts[10:16]
    chunks = [
        Planted(f"pem-rsa-{n}-lines", "\n".join(r), r) for n, r in (("old", old_rows), ("new", new_rows))
    ]
    plan.fields.append(Field("claude", "Edit inside a key", chunks))
    t.assistant(
        None,
        tools=[
            tool_use(
                "ck1",
                "Edit",
                file_path="/srv/shop/deploy.pem",
                old_string=chunks[0].text,
                new_string=chunks[1].text,
            )
        ],
    )
    t.tool_result("ck1", "The file /srv/shop/deploy.pem has been updated.")
    # Claude Code's own record of an edit: each line of its patch a string of its own
    patched = plan.take("claude", "structuredPatch")
    lines = [line for p in patched for line in p.text.splitlines()]
    t.assistant(
        None,
        tools=[
            tool_use("cx1", "Edit", file_path="/srv/shop/.env.production", old_string="A=1", new_string="A=2")
        ],
    )
    t.tool_result(
        "cx1",
        "The file /srv/shop/.env.production has been updated.",
        tool_use_result={
            "filePath": "/srv/shop/.env.production",
            "oldString": "A=1",
            "newString": "A=2",
            "originalFile": "A=1\n",
            "structuredPatch": [
                {
                    "oldStart": 1,
                    "oldLines": 1,
                    "newStart": 1,
                    "newLines": len(lines) + 1,
                    "lines": ["-A=1", "+A=2", *(f"+{x}" for x in lines)],
                }
            ],
        },
    )
    read = plan.take("claude", "Read output")
    numbered = "\n".join(f"{n:>6}→{line}" for n, line in enumerate(_block(read).splitlines(), 1))
    t.assistant(None, tools=[tool_use("cr1", "Read", file_path="/srv/shop/.env")])
    t.tool_result("cr1", numbered)
    t.assistant(None, tools=[tool_use("cr2", "Bash", command="cat .env.staging")])
    t.add(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "cr2",
                        "content": [
                            {"type": "text", "text": _block(plan.take("claude", "tool output blocks"))}
                        ],
                    }
                ],
            },
        }
    )
    task = plan.take("claude", "Task prompt", single=True)
    t.assistant(
        None,
        tools=[
            tool_use(
                "ct1", "Task", description="Check the deploy", prompt="Check these work:\n" + _block(task)
            )
        ],
    )
    t.tool_result("ct1", "All keys work.", tool_use_result={"status": "completed", "agentId": "a5ec7e7a"})
    t.raw(
        {
            "type": "summary",
            "summary": " ".join(p.text for p in plan.take("claude", "summary title", single=True)),
            "leafUuid": t.last,
        }
    )
    t.raw(
        {
            "type": "custom-title",
            "customTitle": "deploy "
            + " ".join(p.text for p in plan.take("claude", "custom title", single=True)),
            "sessionId": CLAUDE_SID,
        }
    )
    _write(t.path, t.lines)
    sub = Transcript(
        root / "claude" / "projects" / "-srv-shop" / "agent-a5ec7e7a.jsonl",
        CLAUDE_SID,
        cwd="/srv/shop",
        isSidechain=True,
        agentId="a5ec7e7a",
    )
    sub.user("Check these work:\n" + _block(task), parent=False)
    sub.assistant("Checked:\n" + _block(plan.take("claude", "subagent reply")))
    _write(sub.path, sub.lines)


def codex_session(root: Path, plan: Plan) -> None:
    r = Rollout(root / "codex", CODEX_THREAD)
    r.meta()
    r.context()
    r.prompt("Deploy with these:\n" + _block(plan.take("codex", "prompt")) + "\n" + "\n".join(ORDINARY[:5]))
    r.add(
        "response_item",
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": _block(plan.take("codex", "reasoning summary"))}],
            "encrypted_content": "xx",
        },
    )
    r.call(
        "call_1",
        ["bash", "-lc", _block(plan.take("codex", "shell arguments"))],
        _block(plan.take("codex", "shell output")),
    )
    for n, p in enumerate(plan.take("codex", "shell one-line summary", single=True)):
        r.call(f"call_s{n}", ["bash", "-lc", _cut(p)], "ok")
    patch = "\n".join(f"+{line}" for line in _block(plan.take("codex", "apply_patch")).splitlines())
    r.add(
        "response_item",
        {
            "type": "custom_tool_call",
            "name": "apply_patch",
            "call_id": "call_p",
            "input": f"*** Begin Patch\n*** Add File: .env\n{patch}\n*** End Patch",
        },
    )
    r.add("response_item", {"type": "custom_tool_call_output", "call_id": "call_p", "output": "Success."})
    r.say("Deployed using:\n" + _block(plan.take("codex", "assistant text")))
    r.path.parent.mkdir(parents=True, exist_ok=True)
    _write(r.path, r.lines)


def gemini_session(root: Path, plan: Plan) -> None:
    """A chat of the JSON era: one pretty-printed document, stored line by line, so no raw line is
    JSON by itself."""
    project = root / "gemini" / "tmp" / "shop"
    project.mkdir(parents=True)
    (project / ".project_root").write_text("/srv/shop\n")
    shell = plan.take("gemini", "shell command")
    calls = [
        {
            "id": "t1",
            "name": "run_shell_command",
            "args": {"command": _block(shell)},
            "status": "success",
            "timestamp": "2026-04-29T21:39:35.364Z",
            "displayName": "Shell",
            "description": "deploy",
            "result": [
                {
                    "functionResponse": {
                        "id": "t1",
                        "name": "run_shell_command",
                        "response": {"output": _block(plan.take("gemini", "shell output"))},
                    }
                }
            ],
            "resultDisplay": _block(plan.take("gemini", "shell display")),
        }
    ]
    for n, p in enumerate(plan.take("gemini", "shell one-line summary", single=True)):
        calls.append(
            {
                "id": f"s{n}",
                "name": "run_shell_command",
                "args": {"command": _cut(p)},
                "status": "success",
                "timestamp": "2026-04-29T21:39:36Z",
            }
        )
    doc = {
        "sessionId": GEMINI_SID,
        "projectHash": "0" * 64,
        "startTime": "2026-04-29T21:39:22.319Z",
        "lastUpdated": "2026-04-29T21:40:22.319Z",
        "messages": [
            {
                "id": "u1",
                "timestamp": "2026-04-29T21:39:33.155Z",
                "type": "user",
                "content": [
                    {
                        "text": "Deploy:\n"
                        + _block(plan.take("gemini", "prompt"))
                        + "\n"
                        + "\n".join(ORDINARY[:5])
                    }
                ],
            },
            {
                "id": "g1",
                "timestamp": "2026-04-29T21:39:35.125Z",
                "type": "gemini",
                "content": "Using:\n" + _block(plan.take("gemini", "reply")),
                "thoughts": [
                    {
                        "subject": "Keys",
                        "description": _block(plan.take("gemini", "thoughts")),
                        "timestamp": "2026-04-29T21:39:34Z",
                    }
                ],
                "model": "gemini-3-flash-preview",
                "toolCalls": calls,
            },
        ],
        "summary": " ".join(p.text for p in plan.take("gemini", "summary title", single=True)),
    }
    path = project / "chats" / f"session-2026-04-29T21-39-{GEMINI_SID[:8]}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc, indent=2))
    old = path.stat().st_mtime - 7200  # a finished chat, not one being written
    os.utime(path, (old, old))


SESSIONS = {"claude": CLAUDE_SID, "codex": CODEX_THREAD, "gemini": GEMINI_SID}


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Plan]:
    root = tmp_path_factory.mktemp("leaks")
    plan = Plan(seed=20260301)
    claude_session(root, plan)
    codex_session(root, plan)
    gemini_session(root, plan)
    conn = db.connect(root / "ledger.db")
    report = run_ingest(conn, [root / "claude", root / "codex", root / "gemini"], include_defaults=False)
    assert not report.errors, report.errors
    for sid in SESSIONS.values():
        resolve_session(conn, sid)  # every session was read
    conn.close()
    return root, plan


# ------------------------------------------------------------------ finding leaks


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    """Every string in a decoded JSON value; a string that is JSON itself is decoded too."""
    if isinstance(value, str):
        yield value
        if depth < 4 and value.lstrip()[:1] in ("{", "["):
            with contextlib.suppress(ValueError):
                yield from _strings(json.loads(value), depth + 1)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v, depth)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, depth)


ESCAPED = re.compile(r"\\+(u[0-9a-fA-F]{4}|[nrt\"/\\])")


def _unescaped(text: str) -> str:
    """`text` with JSON's escapes undone however deep they are nested (a JSON string inside one)."""

    def one(m: re.Match[str]) -> str:
        c = m.group(1)
        return chr(int(c[1:], 16)) if c[0] == "u" else {"n": "\n", "r": "\r", "t": "\t"}.get(c, c)

    for _ in range(4):
        text, n = ESCAPED.subn(one, text)
        if not n:
            break
    return text


def views(data: bytes, fmt: str) -> list[str]:
    """The export as a reader, a browser or a program may read it."""
    text = data.decode()
    out = [text, _unescaped(text)]
    if fmt == "json":
        out.append("\n".join(_strings(json.loads(text))))
    if fmt == "html":
        out.append(html.unescape(re.sub(r"<[^>]*>", "", text)))
    if fmt == "md":
        out.append(html.unescape(re.sub(r"\\([\\`*_\[\]<>#|])", r"\1", text)))
    return out


def leaks(data: bytes, fmt: str, fields: list[Field]) -> list[str]:
    """Each planted secret of which `WINDOW` characters in a row are in the export, and where it
    was planted. Only runs of one secret count: the start every RSA key or JWT shares does not."""
    owners: dict[str, set[tuple[str, str]]] = {}
    for f in fields:
        for p in f.planted:
            for part in p.parts:
                for i in range(max(1, len(part) - WINDOW + 1)):
                    owners.setdefault(part[i : i + WINDOW], set()).add((f.name, p.kind))
    windows = {w: next(iter(o)) for w, o in owners.items() if len(o) == 1}
    found: dict[tuple[str, str], str] = {}
    for view in views(data, fmt):
        for i in range(len(view) - WINDOW + 1):
            hit = windows.get(view[i : i + WINDOW])
            if hit is not None:
                found.setdefault(hit, view[max(0, i - 30) : i + WINDOW + 30])
    return [f"{field} · {kind}: …{context!r}…" for (field, kind), context in sorted(found.items())]


def shown_secrets(data: bytes, fmt: str, fields: list[Field]) -> int:
    """How many of the planted secrets an export made without --redact shows whole."""
    seen = "\n".join(views(data, fmt))
    return sum(all(part in seen for part in p.parts) for f in fields for p in f.planted)


_EXPORTS: dict[tuple[Path, str, str, tuple[str, ...]], tuple[bytes, str]] = {}


def _export(root: Path, sid: str, fmt: str, *extra: str) -> tuple[bytes, str]:
    """What `threadloom export` wrote and said, made once a worker for each session, format and
    options: the leak test and the look-alike test read the same redacted export, the leak test and
    the test without --redact the same plain JSON (the module's archive is never changed)."""
    key = (root, sid, fmt, extra)
    if key not in _EXPORTS:
        _EXPORTS[key] = _run_export(root, sid, fmt, *extra)
    return _EXPORTS[key]


def _run_export(root: Path, sid: str, fmt: str, *extra: str) -> tuple[bytes, str]:
    out = root / f"export-{sid[:8]}.{fmt}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "threadloom.core.cli",
            "export",
            sid,
            "-f",
            fmt,
            "-o",
            str(out),
            "--force",
            "--db",
            str(root / "ledger.db"),
            *extra,
        ],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "THREADLOOM_SETTINGS": str(root / "settings.toml"),
            "CLAUDE_CONFIG_DIR": str(root / "none"),
        },
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out.read_bytes(), done.stderr


# ------------------------------------------------------------------ the tests


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("agent", sorted(SESSIONS))
def test_no_planted_secret_leaks(planted, agent, fmt):
    root, plan = planted
    data, said = _export(root, SESSIONS[agent], fmt, "--redact")
    fields = plan.of(agent)
    found = leaks(data, fmt, fields)
    total = sum(len(f.planted) for f in fields)
    assert not found, f"{len(found)} of {total} planted secrets leak in {agent} {fmt}:\n" + "\n".join(found)
    # what was masked is said, by kind: as many as were planted where this format shows them
    masked = re.search(r"(\d+) secrets? masked \((.*)\)", said)
    assert masked is not None, said
    shown = shown_secrets(_export(root, SESSIONS[agent], fmt)[0], fmt, fields)
    if fmt == "json":  # which shows every field: each secret counted once, cut or whole
        assert int(masked.group(1)) == shown == total, said
    else:  # a secret in a part of a call's result the page does not show is masked all the same
        assert shown <= int(masked.group(1)) <= total, said
    kinds = {k.split(" ", 1)[1] for k in masked.group(2).split(", ")}
    assert {
        "aws-access-key",
        "github-token",
        "slack-webhook",
        "private-key",
        "env-secret",
        "url-password",
    } <= kinds


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("agent", sorted(SESSIONS))
def test_ordinary_text_is_not_masked(planted, agent, fmt):
    root, _ = planted
    data, _ = _export(root, SESSIONS[agent], fmt, "--redact")
    seen = views(data, fmt)
    for text in ORDINARY[:5]:
        assert any(text in view for view in seen), text
    if agent == "claude":
        assert any(ORDINARY[5] in view for view in seen)
        if fmt != "md":  # the page embeds the image, the JSON keeps its record: base64 unmasked
            assert PNG in data.decode()


@pytest.mark.parametrize("agent", sorted(SESSIONS))
def test_without_redact_the_secrets_are_there(planted, agent):
    """The test can fail: the planted secrets do reach an export that is not redacted."""
    root, plan = planted
    data, _ = _export(root, SESSIONS[agent], "json")
    fields = plan.of(agent)
    assert len(leaks(data, "json", fields)) == sum(len(f.planted) for f in fields)


# ------------------------------------------------------------------ a real session

REAL = (
    CORPUS
    / "claude-code"
    / "handgemacht-ai__claude-code-log"
    / "test"
    / "test_data"
    / "real_projects"
    / "-Users-dain-workspace-claude-code-log-sample"
    / "0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl"
)
TEXT_KEYS = ("text", "thinking", "content", "command", "new_string", "old_string", "prompt")


def _plant(value: Any, found: Iterator[Planted]) -> Any:
    """`value` (a record) with a fresh secret added to each of its non-empty text fields."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in TEXT_KEYS and isinstance(v, str) and v:
                v = f"{v}\n{next(found).text}"
            out[k] = _plant(v, found)
        return out
    if isinstance(value, list):
        return [_plant(v, found) for v in value]
    return value


@pytest.mark.skipif(not REAL.is_file(), reason="no ../shared/corpus beside the repository")
def test_a_real_session_has_nothing_masked_and_every_secret_planted_in_it_is(tmp_path):
    """A 1.2 MB Claude Code session as its author's machine wrote it: redacted, nothing in it is
    masked and its records keep their bytes; with a secret added to each of its text fields (92),
    none leaks and every raw record is still JSON."""
    sid = REAL.stem
    clean = tmp_path / "clean" / "projects" / REAL.parent.name / REAL.name
    clean.parent.mkdir(parents=True)
    clean.write_bytes(REAL.read_bytes())
    conn = db.connect(tmp_path / "clean.db")
    assert not run_ingest(conn, [tmp_path / "clean"], include_defaults=False).errors
    session = resolve_session(conn, sid)
    stamp = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)  # both exports say the same time
    for fmt in FORMATS:
        done = export_session(conn, session, fmt, redact=True, now=stamp)
        assert done.redactor.total == 0, (fmt, done.redactor.summary())
        assert done.data == export_session(conn, session, fmt, now=stamp).data
    conn.close()

    plan = Plan(seed=99)
    field = Field("real", "real session", [])
    plan.fields.append(field)

    def fresh() -> Iterator[Planted]:
        while True:
            for p in secrets(plan.rng):
                field.planted.append(p)
                yield p

    found = fresh()
    planted = tmp_path / "planted" / "projects" / REAL.parent.name / REAL.name
    planted.parent.mkdir(parents=True)
    lines = [json.loads(line) for line in REAL.read_text().splitlines() if line.strip()]
    _write(planted, [_plant(line, found) for line in lines])
    conn = db.connect(tmp_path / "planted.db")
    assert not run_ingest(conn, [tmp_path / "planted"], include_defaults=False).errors
    session = resolve_session(conn, sid)
    for fmt in FORMATS:
        done = export_session(conn, session, fmt, redact=True)
        assert not leaks(done.data, fmt, [field]), fmt
        shown = shown_secrets(export_session(conn, session, fmt).data, fmt, [field])
        said = (fmt, shown, done.redactor.summary())
        assert len(field.planted) == 92 and shown > 50, said
        assert shown <= done.redactor.total <= len(field.planted), said
        if fmt == "json":  # every record of the branch it exports: each secret there counted once
            assert done.redactor.total == shown, said
        if fmt == "json":
            for record in json.loads(done.data)["records"]:
                json.loads(record["raw"])
    conn.close()


def test_a_secret_split_by_the_archives_cut_of_the_first_prompt_is_masked(conn, tmp_path):
    """The archive keeps a session's first prompt cut to 2,000 characters; a secret the cut splits
    (here a quoted token and a URL's password: no pattern knows such a stump) is masked all the same."""
    sid = "5ec7e7a1-2222-4222-8333-00000000f157"
    token, password = "Zq8" + "x" * 29, "Pw3" + "y" * 29
    for n, stump in enumerate((f'export API_TOKEN="{token}"', f"postgres://app:{password}@db:5432/shop")):
        t = Transcript(
            tmp_path / f"p{n}" / "projects" / "-srv-shop" / f"{sid[:-1]}{n}.jsonl", f"{sid[:-1]}{n}"
        )
        t.user("x" * (2000 - len(stump) + 20) + stump + "\nthanks")  # cut 20 characters before its end
        t.assistant("Noted.")
        t.write()
        assert not run_ingest(conn, [tmp_path / f"p{n}"], include_defaults=False).errors
        session = resolve_session(conn, f"{sid[:-1]}{n}")
        assert session.first_prompt is not None and len(session.first_prompt) == 2000
        data = export_session(conn, session, "json", redact=True).data.decode()
        assert token[:12] not in data and password[:12] not in data
        assert json.loads(data)["session"]["first_prompt"].startswith("x" * 100)
