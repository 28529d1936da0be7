"""Masking secrets in text that leaves the machine (`threadloom export --redact`).

Sessions hold whatever the agent read or ran: `.env` files cat'ed, tokens pasted into prompts,
`curl -H "Authorization: Bearer …"`. Before a session is handed to someone else each secret the
patterns below recognise is replaced by `[REDACTED:<kind>]`, and the distinct secrets masked are
counted by kind, so the user knows the export was changed and how much. Patterns favour the
providers' documented key shapes (prefixes, lengths) and the names secrets are kept under
(`DATABASE_PASSWORD=`) over entropy guesses, which would also mask hashes and ids.

Text is matched as a reader sees it, not as it is stored: a terminal's escape sequences (a
`grep --color` match) are read through, and so are JSON's escapes (`\\n`, `\\"`, however deeply a
JSON text is nested in another), so a secret after an escaped newline is found. A JSON text (a raw
record, a tool's input) is decoded and each of its strings masked on its own (`json_text`), then
written back: a record with nothing to mask keeps its bytes.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

# A name a secret is kept under, in `NAME=value`, `"name": "value"` or `name: value`: an upper-case
# name with PASSWORD, SECRET, TOKEN or CREDENTIALS in it (the .env convention: SECRET_KEY_BASE), or
# any name ending in one (db_password, accessToken, --password); not MAX_TOKENS, a count.
_SECRET_NAME = (
    r"(?:(?-i:[A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN(?!S)|CREDENTIALS?|_PWD)[A-Z0-9_]*)"
    r"|[A-Za-z0-9_.\-]*(?:password|passwd|secret|token|credentials?|_pwd))"
)
# … or a KEY (API_KEY, STRIPE_KEY, apiKey, aws_secret_access_key), whose value must then look like
# a key (see _KEY_SHAPE): STORAGE_KEY = 'todos' and "ParameterKey": "Environment" are names, not
# secrets. A bare `key` (`key=lambda …`) is no such name.
_KEY_NAME = r"(?:(?-i:[A-Z0-9_]*[A-Z0-9]_?KEY[A-Z0-9_]*)|[A-Za-z0-9_.\-]*[a-z0-9][_.\-]?key)"
_NAME = rf"(?:{_SECRET_NAME}|(?P<keyname>{_KEY_NAME}))"
_NAME_NEEDLES = "pass secret token credential pwd key"
# A value that is no secret: a boolean or null, a small number (`KEY_SIZE=2048`), a reference to
# another variable (`$API_KEY`, `${{ secrets.X }}`), a template, a lambda.
_NOT_A_VALUE = (
    r"""(?!["']?(?:true|false|none|null|nil|undefined|\d{1,5}\.?)(?![^\s"'`,;)\]}])|lambda\b|["']?[$%{<])"""
)
# A key's value: twelve characters or more, a digit among them.
_KEY_SHAPE = r"""(?=["']?[^\s"'`<>]{12})(?=["']?[^\s"'`<>]*\d)"""
# A value: quoted (or cut short by an ellipsis before its closing quote), or up to a space.
_QUOTED = r"""(?:"(?:[^"\n]{3,}"|[^"\n]*…)|'(?:[^'\n]{3,}'|[^'\n]*…))"""
_VALUE = rf"""(?P<secret>{_NOT_A_VALUE}(?(keyname){_KEY_SHAPE})(?:{_QUOTED}|[^\s'"`<>]{{3,}}))"""
_NAME_START = r"(?<![A-Za-z0-9_.\-])"
# Where a prefixed key may start: not inside a word, but after a `_` or `-` (a file name's).
_ALONE = r"(?<![A-Za-z0-9])"
# A full line of a PEM (64 characters) or OpenSSH (70) private key's base64 body, mixed case (a
# column of hex hashes is no such line), and the short line that ends one (padded, or before the
# END line); each line maybe after a diff's mark.
_MARK = r"[+\- ]?"
_KEY_LINE = r"(?=[^\n]*[a-z])(?=[^\n]*[A-Z])[A-Za-z0-9+/]{64}(?:[A-Za-z0-9+/]{6})?$"
_KEY_END = r"(?:[A-Za-z0-9+/]{1,68}={1,2}|[A-Za-z0-9+/]{1,69}(?=\n[+\- ]?-----END|\Z))$"
# The prefixes of the keys below: a key cut short ("ghp_x1Yz…") is still known by its prefix.
_PREFIXES = (
    r"sk-|gh[pousr]_|github_pat_|gl(?:pat|dt|rt|ptt)-|AKIA|ASIA|AIza|GOCSPX-|ya29\.|xox[abposre]-|xapp-"
    r"|(?:sk|rk)_(?:live|test)_|whsec_|hf_|npm_|gsk_|xai-|pplx-|r8_|eyJ|(?i:bearer\s+)"
)

# (kind, needles, pattern), in the order they are tried. The whole match is masked unless the
# pattern has a group named "secret"; an earlier pattern's mask is never masked again. `needles`
# are words one of which the text, lower-cased, must hold for the pattern to be tried at all (""
# when none is needed): most strings hold none, and `in` is far quicker than a regular expression.
PATTERNS: list[tuple[str, str, str]] = [
    # PEM and OpenSSH private keys, armour and all; one cut short (no END line) to the end of the text
    (
        "private-key",
        "private key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    ),
    # a key's body whose BEGIN line is elsewhere (an Edit inside a key file, a hunk of a diff): two
    # or more full base64 lines and the short one that ends them. It also masks a certificate's
    # body or `openssl base64` output, which wrap at 64 too.
    (
        "private-key",
        "\n",
        rf"(?m)^[+\- ]?(?P<secret>{_KEY_LINE}(?:\n{_MARK}{_KEY_LINE})+(?:\n{_MARK}{_KEY_END})?)",
    ),
    # model providers: Anthropic; OpenRouter (before OpenAI's sk-); OpenAI's sk-proj-, sk-svcacct-,
    # sk-admin- and older sk- keys; Groq, xAI, Perplexity, Replicate, Hugging Face
    ("anthropic-key", "sk-ant-", rf"{_ALONE}sk-ant-[A-Za-z0-9_\-]{{20,}}"),
    ("openrouter-key", "sk-or-", rf"{_ALONE}sk-or-v1-[A-Za-z0-9]{{32,}}"),
    ("openai-key", "sk-", rf"{_ALONE}sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{{20,}}"),
    ("groq-key", "gsk_", rf"{_ALONE}gsk_[A-Za-z0-9]{{40,}}"),
    ("xai-key", "xai-", rf"{_ALONE}xai-[A-Za-z0-9]{{40,}}"),
    ("perplexity-key", "pplx-", rf"{_ALONE}pplx-[A-Za-z0-9]{{40,}}"),
    ("replicate-token", "r8_", rf"{_ALONE}r8_[A-Za-z0-9]{{30,}}"),
    ("huggingface-token", "hf_", rf"{_ALONE}hf_[A-Za-z0-9]{{30,}}"),
    # GitHub classic (ghp_, gho_, ghu_, ghs_, ghr_) and fine-grained tokens; GitLab's personal,
    # deploy, runner and trigger tokens
    (
        "github-token",
        "ghp_ gho_ ghu_ ghs_ ghr_ github_pat_",
        rf"{_ALONE}(?:gh[pousr]_[A-Za-z0-9]{{30,}}|github_pat_[A-Za-z0-9_]{{40,}})",
    ),
    ("gitlab-token", "gl", rf"{_ALONE}gl(?:pat|dt|rt|ptt|cbt|ft|imt|soat)-[A-Za-z0-9_\-.]{{20,}}"),
    # AWS access key ids (a secret access key has no shape: its name gives it away, further down)
    (
        "aws-access-key",
        "akia asia abia acca",
        rf"{_ALONE}(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{{16}}(?![0-9A-Za-z])",
    ),
    # Google API keys (Cloud, Maps, Gemini), OAuth client secrets and access tokens
    ("google-api-key", "aiza", rf"{_ALONE}AIza[0-9A-Za-z_\-]{{35}}"),
    (
        "google-oauth",
        "gocspx- ya29.",
        rf"{_ALONE}(?:GOCSPX-[A-Za-z0-9_\-]{{20,}}|ya29\.[A-Za-z0-9_\-]{{20,}})",
    ),
    # Azure: a storage or service-bus connection string's key, a SAS URL's signature, an Entra ID
    # client secret (its `8Q~` gives it away)
    (
        "azure-key",
        "accesskey=",
        r"(?i)\b(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2}|[A-Za-z0-9+/]+…)",
    ),
    ("azure-key", "sig=", r"[?&]sig=(?P<secret>[A-Za-z0-9%+/=]{20,})"),
    (
        "azure-client-secret",
        "q~",
        r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~(?:[A-Za-z0-9_~.\-]{31,34}|[A-Za-z0-9_~.\-]*…)",
    ),
    # Slack bot, user, app and refresh tokens; Slack and Discord webhook URLs, whose path is the
    # credential (whoever holds it can post)
    (
        "slack-token",
        "xox xapp-",
        rf"{_ALONE}(?:xox[abposre]-[A-Za-z0-9\-]{{10,}}|xapp-\d-[A-Za-z0-9\-]{{10,}})",
    ),
    (
        "slack-webhook",
        "hooks.slack.com",
        r"\bhooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/\-]{20,}|[A-Za-z0-9_/\-]+…)",
    ),
    (
        "discord-webhook",
        "webhooks/",
        r"\b(?:discord|discordapp)\.com/api/(?:v\d+/)?webhooks/(?P<secret>\d+/[A-Za-z0-9_\-]{20,}|[\d/A-Za-z0-9_\-]+…)",
    ),
    # Stripe secret, restricted and publishable keys and webhook signing secrets
    (
        "stripe-key",
        "_live_ _test_ whsec_",
        rf"{_ALONE}(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{{16,}}|whsec_[A-Za-z0-9]{{24,}})",
    ),
    ("npm-token", "npm_", rf"{_ALONE}npm_[A-Za-z0-9]{{36}}(?![A-Za-z0-9])"),
    ("jwt", "eyj", rf"{_ALONE}eyJ[A-Za-z0-9_\-]{{10,}}\.eyJ[A-Za-z0-9_\-]{{10,}}\.[A-Za-z0-9_\-]{{10,}}"),
    # credentials in a request: bearer and basic Authorization headers, API-key headers, curl -u
    ("bearer", "bearer", r"(?i)\b(?:authorization\s*[:=]\s*)?bearer\s+(?P<secret>[A-Za-z0-9._~+/\-]{16,}=*)"),
    ("basic-auth", "basic", r"(?i)\bauthorization\s*[:=]\s*[\"']?basic\s+(?P<secret>[A-Za-z0-9+/]{8,}=*)"),
    ("basic-auth", "-u --user", r"(?<!\S)(?:-u|--user)[ \t]+[\"']?[^\s:'\"]+:(?P<secret>[^\s'\"@]{3,})"),
    (
        "api-key-header",
        "api-key auth-token access-token",
        r"(?i)\b(?:x-api-key|api-key|x-auth-token|x-access-token)[\"']?[ \t]*:[ \t]*[\"']?"
        r"(?P<secret>[A-Za-z0-9._~+/\-]{8,})",
    ),
    # a password in a URL: postgres://user:pw@host, redis://:pw@host (or cut short before its @)
    ("url-password", "://", r"\b[a-z][a-z0-9+.\-]*://[^\s:/@]*:(?P<secret>[^\s@/]{3,}(?=@)|[^\s@/…]+…)"),
    # a value kept under a secret's name, wherever it sits: a .env line (export FOO_TOKEN="…"), a
    # diff's added line, `docker run -e DB_PASSWORD=…`, a query string, `--password=…`
    ("env-secret", _NAME_NEEDLES, rf"(?i){_NAME_START}(?:export[ \t]+)?{_NAME}[ \t]*=(?!=)[ \t]*{_VALUE}"),
    # … in JSON or a Python dict: "SecretAccessKey": "…", 'api_key': '…'
    (
        "env-secret",
        _NAME_NEEDLES,
        rf"""(?i){_NAME_START}(["']){_NAME}\1[ \t]*:[ \t]*"""
        rf"""(?P<secret>{_NOT_A_VALUE}(?(keyname){_KEY_SHAPE}){_QUOTED})""",
    ),
    # … in YAML, on a line of its own: `  api_secret: …`
    ("env-secret", _NAME_NEEDLES, rf"(?im)^[ \t]*(?:[+\-][ \t]*)?{_NAME}:[ \t]+{_VALUE}[ \t]*$"),
    # a known key cut short by a one-line summary's ellipsis, or at the end of a stored snippet
    # (then with a capital or a digit: "sk-not-a-key" is prose): still a secret's start
    (
        "cut-key",
        "sk- gh github_pat_ gl akia asia aiza gocspx- ya29. xox xapp- _live_ _test_ whsec_ hf_ npm_ gsk_ xai- pplx- r8_ eyj bearer",
        rf"{_ALONE}(?:{_PREFIXES})(?:[A-Za-z0-9_.\-]*…|(?=[a-z_.\-]*[A-Z0-9])[A-Za-z0-9_.\-]{{8,}}\Z)",
    ),
]

_COMPILED = [
    (kind, re.compile("|".join(map(re.escape, needles.split(" ")))) if needles else None, re.compile(pattern))
    for kind, needles, pattern in PATTERNS
]

# What the patterns read through: a terminal's escape sequences (dropped) and JSON's escapes, a run
# of backslashes however deep the nesting (read as the character they stand for).
_HIDDEN = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])"
    r"|\\+u001[bB]\[[0-?]*[ -/]*[@-~]"  # … one written in JSON's escapes
    r"|\\+(?:u[0-9a-fA-F]{4}|[nrt\"/])"
)
_UNESCAPED = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "/": "/"}
_MASKED = "[REDACTED:"
_SAME = 12  # a masked value that starts another this long is a copy of it cut short
_MAX_DEPTH = 4  # a JSON text inside a string inside a JSON text …: this deep, no deeper


def _hides(text: str) -> bool:
    """Whether `text` may hold what the patterns read through (see _HIDDEN)."""
    return "\x1b" in text or "\\" in text


class _ReadThrough:
    """`text` as the patterns read it (escape sequences dropped, JSON escapes decoded), with the
    way back from a position in it to one in `text`."""

    def __init__(self, text: str) -> None:
        pieces: list[str] = []
        self.at: list[int] = []  # where each hidden token's stand-in starts, in `self.text`
        self.origin: list[tuple[int, int, int]] = []  # (start in `text`, length there, length here)
        last = shift = 0
        for m in _HIDDEN.finditer(text):
            token = m.group(0)
            if token[0] == "\x1b" or "[" in token:
                stand_in = ""
            else:
                code = token.lstrip("\\")
                stand_in = chr(int(code[1:], 16)) if code[0] == "u" else _UNESCAPED[code]
            pieces += [text[last : m.start()], stand_in]
            self.at.append(m.start() - shift)
            self.origin.append((m.start(), len(token), len(stand_in)))
            shift += len(token) - len(stand_in)
            last = m.end()
        pieces.append(text[last:])
        self.text = "".join(pieces)

    def start(self, pos: int) -> int:
        """Where the character at `pos` of the read text starts in the stored one."""
        i = bisect.bisect_right(self.at, pos) - 1
        if i < 0:
            return pos
        start, length, width = self.origin[i]
        if pos < self.at[i] + width:
            return start  # the stand-in of an escape: the escape itself
        return start + length + pos - self.at[i] - width

    def end(self, pos: int) -> int:
        """Where a span of the read text that ends at `pos` (exclusive) ends in the stored one."""
        i = bisect.bisect_right(self.at, pos - 1) - 1
        if i >= 0 and pos - 1 < self.at[i] + self.origin[i][2]:
            return self.origin[i][0] + self.origin[i][1]
        return self.start(pos - 1) + 1


@dataclass
class Redactor:
    """Masks secrets and counts the distinct ones it masked, by kind. `enabled=False` passes
    everything through."""

    enabled: bool = True
    counts: Counter[str] = field(default_factory=Counter)
    masks: int = 0  # masks made, a secret seen twice counted twice: tells whether a text changed
    _seen: dict[str, str] = field(default_factory=dict, repr=False)  # each secret masked: its kind

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def __call__(self, text: str) -> str:
        """`text` with its secrets masked."""
        if not self.enabled or not text:
            return text
        return self._text(text, keep_lines=False)

    def lines(self, parts: list[str]) -> list[str]:
        """`parts` (a diff's rows, a patch's lines) masked as one text, so a key whose BEGIN line is
        in one part and body in the next is found; as many parts back, a masked part that spanned
        several keeping its line breaks (and a diff's +/- marks)."""
        if not self.enabled or not parts:
            return parts
        joined = "\n".join(parts)
        out = self._text(joined, keep_lines=True)
        if out == joined:
            return parts
        rows = out.split("\n")
        back, i = [], 0
        for part in parts:
            n = part.count("\n") + 1
            back.append("\n".join(rows[i : i + n]))
            i += n
        return back

    def json_text(self, text: str) -> str:
        """A JSON text (a raw record, a tool's input) with each of its strings masked as decoded
        text, written back compactly (unchanged, byte for byte, when nothing was masked). Text that
        is not JSON (a line of a pretty-printed document, a line cut short) is masked as text, its
        escapes read through."""
        if not self.enabled or not text:
            return text
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return self._text(text, keep_lines=False)
        before = self.masks
        masked = self._value(value, 1)
        return text if self.masks == before else orjson.dumps(masked).decode()

    def value(self, value: Any) -> Any:
        """A decoded JSON value with every string in it masked (see `json_text`)."""
        return self._value(value, 0) if self.enabled else value

    def summary(self) -> str:
        """What was masked, for the user: "3 secrets masked (2 openai-key, 1 bearer)"."""
        if not self.total:
            return "no secrets found to mask"
        kinds = ", ".join(f"{n} {kind}" for kind, n in self.counts.most_common())
        return f"{self.total} secret{'s' if self.total != 1 else ''} masked ({kinds})"

    # ----------------------------------------------------------------------------------------

    def _value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self._string(value, depth)
        if isinstance(value, list):
            if len(value) > 1 and all(isinstance(v, str) and v[:1] not in ("{", "[") for v in value):
                return self.lines(value)  # a file's or a patch's lines: a key spans several
            return [self._value(v, depth) for v in value]
        if isinstance(value, dict):
            return {
                self._string(k, depth): self._named(k, v, depth)
                if isinstance(v, str)
                else self._value(v, depth)
                for k, v in value.items()
            }
        return value

    def _named(self, name: str, value: str, depth: int) -> str:
        """A string under a key named like a secret's (`"password": "…"`, `env: {API_TOKEN: …}`)
        is masked whole, unless it is no value (see _NOT_A_VALUE); any other string as text."""
        named = _NAMED.fullmatch(name)
        if named and _MASKED not in value and _SECRET_VALUE[bool(named.group("keyname"))].match(value):
            self._count("env-secret", value)
            return "[REDACTED:env-secret]"
        return self._string(value, depth)

    def _string(self, text: str, depth: int) -> str:
        """A string of a JSON value: a JSON text itself (Codex's tool arguments, a stored tool
        result) is decoded too."""
        inner = text.strip()
        if depth < _MAX_DEPTH and (inner[:1], inner[-1:]) in (("{", "}"), ("[", "]"), ('"', '"')):
            try:
                value = orjson.loads(inner)
            except orjson.JSONDecodeError:
                pass
            else:
                before = self.masks
                masked = self._value(value, depth + 1)
                return text if self.masks == before else orjson.dumps(masked).decode()
        return self(text)

    def _text(self, text: str, *, keep_lines: bool) -> str:
        lower = (_ReadThrough(text).text if _hides(text) else text).lower()
        for kind, needles, pattern in _COMPILED:
            if needles is None or needles.search(lower):
                text = self._sub(kind, pattern, text, keep_lines)
        return text

    def _sub(self, kind: str, pattern: re.Pattern[str], text: str, keep_lines: bool) -> str:
        hidden = _ReadThrough(text) if _hides(text) else None
        read = hidden.text if hidden is not None else text
        out: list[str] = []
        last = 0
        for match in pattern.finditer(read):
            if _MASKED in match.group(0):  # masked already, by an earlier pattern or an earlier pass
                continue
            group = "secret" if "secret" in pattern.groupindex and match.group("secret") is not None else 0
            start, end = match.span(group)
            if hidden is not None:
                start, end = hidden.start(start), hidden.end(end)
            if start < last:
                continue
            self._count(kind, read[slice(*match.span(group))])
            out += [text[last:start], f"[REDACTED:{kind}]"]
            if keep_lines:  # the lines it spanned stay, empty but for a diff's mark
                out += [
                    "\n" + line[:1] if line[:1] in ("+", "-") else "\n"
                    for line in text[start:end].split("\n")[1:]
                ]
            last = end
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def _count(self, kind: str, secret: str) -> None:
        """One more mask, and one more secret of `kind` unless it was seen: whole, or as the start
        of one seen (a title cut short holds the key a prompt holds whole; one seen cut first
        then counts as this one)."""
        self.masks += 1
        value = secret.strip("\"'").removesuffix("…")
        if value in self._seen:
            return
        for seen, seen_kind in list(self._seen.items()):
            if seen.startswith(value) and (kind == "cut-key" or len(value) >= _SAME):
                return
            if value.startswith(seen) and (seen_kind == "cut-key" or len(seen) >= _SAME):
                del self._seen[seen]
                self.counts[seen_kind] -= 1
                self.counts += Counter()  # drops a kind counted down to nothing
        self._seen[value] = kind
        self.counts[kind] += 1


_NAMED = re.compile(rf"(?i){_NAME}")
_SECRET_VALUE = {  # a value under a secret's name, under a key's
    False: re.compile(rf"(?i){_NOT_A_VALUE}\S.{{2,}}", re.S),
    True: re.compile(rf"(?i){_NOT_A_VALUE}{_KEY_SHAPE}\S.{{2,}}", re.S),
}
