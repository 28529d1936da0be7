"""Masking secrets in text that leaves the machine (`threadloom export --redact`).

Sessions hold whatever the agent read or ran: `.env` files cat'ed, tokens pasted into prompts,
`curl -H "Authorization: Bearer …"`. Before a session is handed to someone else each secret the
patterns below recognise is replaced by `[REDACTED:<kind>]`, and the count is reported, so the
user knows the export was changed and how much. Patterns favour the providers' documented key
shapes (prefixes, lengths) over entropy guesses, which would also mask hashes and ids.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import partial

# (kind, pattern): the whole match is masked unless the pattern has a group named "secret"
PATTERNS: list[tuple[str, str]] = [
    (
        "private-key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    ),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("aws-access-key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
    ("bearer", r"(?i)\b(?:authorization\s*[:=]\s*)?bearer\s+(?P<secret>[A-Za-z0-9._~+/\-]{16,}=*)"),
    ("url-password", r"\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:(?P<secret>[^\s@/]{3,})@"),
    # .env-style assignments whose name says it holds a secret: FOO_API_KEY=..., export TOKEN="..."
    (
        "env-secret",
        r"(?im)^\s*(?:export\s+)?[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|CREDENTIALS?)[A-Z0-9_]*"
        r"\s*=\s*(?P<secret>\"[^\"\n]+\"|'[^'\n]+'|[^\s#'\"]+)",
    ),
]

_COMPILED = [(kind, re.compile(pattern)) for kind, pattern in PATTERNS]


@dataclass
class Redactor:
    """Masks secrets and counts what it masked, by kind. `enabled=False` passes text through."""

    enabled: bool = True
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def __call__(self, text: str) -> str:
        if not self.enabled or not text:
            return text
        for kind, pattern in _COMPILED:
            text = pattern.sub(partial(self._mask, kind), text)
        return text

    def _mask(self, kind: str, match: re.Match[str]) -> str:
        whole = match.group(0)
        if "[REDACTED:" in whole:  # masked already, by an earlier pattern or an earlier pass
            return whole
        self.counts[kind] += 1
        if "secret" in match.re.groupindex and match.group("secret") is not None:
            start, end = match.span("secret")
            offset = match.start()
            return whole[: start - offset] + f"[REDACTED:{kind}]" + whole[end - offset :]
        return f"[REDACTED:{kind}]"

    def summary(self) -> str:
        """What was masked, for the user: "3 secrets masked (2 openai-key, 1 bearer)"."""
        if not self.total:
            return "no secrets found to mask"
        kinds = ", ".join(f"{n} {kind}" for kind, n in self.counts.most_common())
        return f"{self.total} secret{'s' if self.total != 1 else ''} masked ({kinds})"
