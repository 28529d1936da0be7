"""`threadloom export --redact`: the Redactor masks every kind of secret wherever a session holds it.

Realistic secrets (cloud, VCS, chat, payment and model-provider keys, JWTs, private keys, passwords
in URLs, `.env` assignments, auth headers), fresh values of every kind, are masked wherever a
session holds them: on a line, in a raw record after an escaped newline, in a JSON string inside a
JSON string, over a diff's rows, in a terminal's colours, in a one-line summary cut short; ordinary
look-alikes (hashes, UUIDs, git SHAs, base64 data, `max_tokens=4096`) stay.
"""

from __future__ import annotations

import base64
import json
import random
import string
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from threadloom.core.redact import Redactor
from threadloom.core.text import one_line

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
