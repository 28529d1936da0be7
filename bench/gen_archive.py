"""Deterministic generator of realistic Claude Code archives for the benchmarks.

    python bench/gen_archive.py OUT --size 1G [--seed 1] [--jobs 2]

writes `OUT/projects/<project-slug>/<session-uuid>.jsonl` plus subagent files (2.1.x layout
`<session>/subagents/agent-<id>.jsonl` + `.meta.json`, legacy 2.0.x `agent-<8hex>.jsonl` beside the
session, 1.0.x inline sidechains) and `OUT/manifest.json` (written last: its presence marks a
complete archive).

What the files contain, per FORMATS.md §1: user / assistant / system / summary /
file-history-snapshot / attachment / queue-operation / custom-title / last-prompt lines; uuid →
parentUuid chains; assistant responses split over one line per content block (thinking, text,
tool_use) sharing message.id and requestId, usage copied with output_tokens growing; tool results
with a tool-specific `toolUseResult`; Task/Agent calls that spawn subagent files (linked by
`toolUseResult.agentId`); rewinds (a second child of an earlier node); compactions
(`compact_boundary` with parentUuid null + logicalParentUuid, then an `isCompactSummary` user
line); big tool outputs (0.1 % of 200-300 KB, ~1 % of 20-60 KB); base64 images; log-normal session
sizes plus a few sessions of 20,000+ records; a few empty and summary-only files.

Text comes from a Zipf-weighted vocabulary (real English and programming words at the top ranks,
synthetic words in the long tail) and code-like lines with identifiers. The vocabulary and the text
pools use a fixed seed (TEXT_SEED), so `bench/queries.txt` matches every archive; `--seed` decides
everything else. The output depends only on (size, seed), not on the number of worker processes.

Sizes use binary units: 5M = 5 MiB, 1G = 1 GiB.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import calendar
import math
import os
import random
import sys
import time
import uuid as uuidlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import orjson

GEN_VERSION = 1
TEXT_SEED = 7_340_033  # fixed on purpose: see the module docstring
VOCAB_SIZE = 30_000
ZIPF_S = 1.0
TEXT_POOL_WORDS = 1_200_000
CODE_POOL_LINES = 80_000
HOME = "/home/dev"


def _words(text: str) -> list[str]:
    return text.split()


# The top of the vocabulary: real words, roughly by frequency (English first, then programming).
ENGLISH = _words(
    "the of and to a in is it that for you this on with be as are not have was but at or can we "
    "if from by an will so what all there they do one would about which when up out more use "
    "need like just should then also now how some any make sure here only other first new see "
    "could into because after check let its them our where way before still same each file run "
    "time change look think get add because where why does work working problem fix fixed issue "
    "again please looks good right instead without while every both those these through might "
    "already actually maybe rather since until back over under between again most much many "
    "well better best last next small large simple current correct wrong different possible"
)
PROGRAMMING = _words(
    "function error test tests code value return data type string list file files session "
    "database query table index config configuration import module class method object user "
    "request response server client api endpoint handler callback async await promise thread "
    "process memory cache key field column row schema migration commit branch merge build "
    "deploy release version package dependency install script command output input path "
    "directory parser token tokens message messages log logs debug warning exception stack "
    "trace timeout retry connection socket port http json yaml sql sqlite postgres redis "
    "docker container image kubernetes cluster node worker queue event events state store "
    "component props render view model controller route router middleware auth login password "
    "secret environment variable variables default option options argument arguments parameter "
    "loop iterator generator buffer stream reader writer encoder decoder hash checksum lock "
    "transaction rollback insert update delete select join filter sort search match pattern "
    "regex format template layout style widget screen terminal keyboard scroll refactor "
    "rename extract inline performance benchmark profile latency throughput ingest archive "
    "snapshot fixture mock assert coverage lint typecheck compile compiler runtime binary"
)
SYLLABLES = _words(
    "ka ro mi ten dor ex vel sa lin qu or an bri co du fel gra hin jo lum mar nex ot pra ri sto tur "
    "u vi wex yo zan bel cor dim eth fra gol hes ix jun kel lor mev nor osh pel quin rav sel tov "
    "ul ven wor xan yel zor al ben cal den el fim gar hul ir jas kop lan mol nim oro pim ruk sov "
    "tal umb vor wyn zek"
)
FAMOUS_IDENTIFIERS = _words(
    "handleSubmit useEffect useState ECONNRESET ENOENT TypeError KeyError ValueError "
    "NullPointerException parse_args __init__ setUp tearDown getServerSideProps onClick "
    "componentDidMount fetchData run_ingest IngestReport SessionManager DatabaseError "
    "asyncio.gather subprocess.run os.path.join JSON.parse Array.prototype.map sqlite3.connect"
)
PROJECT_NAMES = _words(
    "webapp api-server infra data-pipeline mobile-app threadloom docs-site ml-experiments cli-tool "
    "billing-service auth-gateway search-indexer design-system dotfiles game-engine chat-bot "
    "analytics-dashboard payment-worker scheduler notebook-tools compiler-playground blog "
    "inventory-service k8s-manifests terraform-modules rust-parser go-proxy ios-client "
    "android-client etl-jobs feature-flags email-service image-resizer video-transcoder "
    "log-shipper metrics-agent backup-tool vscode-extension browser-extension slack-bot "
    "recommendation-engine geo-service ledger-core accounting crm-sync pdf-renderer "
    "audio-tools sensor-hub home-automation trading-bot quiz-app todo-app portfolio-site "
    "wiki-sync chess-engine robot-controller firmware"
)
MODELS_BY_ERA = {
    "1.0": ("claude-sonnet-4-20250514", "claude-opus-4-20250514", "claude-3-7-sonnet-20250219"),
    "2.0": ("claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-haiku-4-5-20251001"),
    "2.1": ("claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929", "claude-opus-4-6"),
}
VERSIONS = (
    ("1.0.43", "1.0", 0.06),
    ("1.0.98", "1.0", 0.09),
    ("2.0.28", "2.0", 0.08),
    ("2.0.42", "2.0", 0.12),
    ("2.0.55", "2.0", 0.15),
    ("2.1.14", "2.1", 0.15),
    ("2.1.42", "2.1", 0.15),
    ("2.1.114", "2.1", 0.20),
)
TOOL_WEIGHTS = (
    ("Bash", 30),
    ("Read", 25),
    ("Edit", 15),
    ("Grep", 8),
    ("Glob", 5),
    ("Write", 5),
    ("TodoWrite", 5),
    ("WebSearch", 2),
    ("Task", 1.5),
)
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
HEX = "0123456789abcdef"
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """`5M` → 5 MiB, `1G` → 1 GiB, `123456` → bytes."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    if text and text[-1] in UNITS:
        return int(float(text[:-1]) * UNITS[text[-1]])
    return int(text)


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


# ---------------------------------------------------------------------- text pools


class Pools:
    """The vocabulary, a long Zipf-sampled prose string and a code string, both sliced by offset."""

    def __init__(self) -> None:
        rng = random.Random(TEXT_SEED)
        self.vocab = build_vocab(rng)
        weights = [1.0 / (rank**ZIPF_S) for rank in range(1, len(self.vocab) + 1)]
        self.cum = list(_accumulate(weights))
        self.identifiers = self._identifiers(rng)
        self.paths = [self._path(rng) for _ in range(3000)]
        self.text, self.text_offsets = self._prose(rng)
        self.code, self.code_offsets = self._code(rng)

    def zipf_words(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.vocab, cum_weights=self.cum, k=k)

    def _identifiers(self, rng: random.Random) -> list[str]:
        out: list[str] = list(FAMOUS_IDENTIFIERS)
        while len(out) < 6000:
            a, b, c = self.zipf_words(rng, 3)
            style = rng.random()
            if style < 0.4:
                out.append(f"{a}_{b}" if rng.random() < 0.7 else f"{a}_{b}_{c}")
            elif style < 0.75:
                out.append(a + b.capitalize() + (c.capitalize() if rng.random() < 0.3 else ""))
            elif style < 0.95:
                out.append(a.capitalize() + b.capitalize())
            else:
                out.append(f"{a.upper()}_{b.upper()}")
        return out

    def ident(self, rng: random.Random) -> str:
        # earlier identifiers are more common (a rough Zipf over the list)
        n = len(self.identifiers)
        return self.identifiers[min(n - 1, int(n ** rng.random()) - 1)]

    def _path(self, rng: random.Random) -> str:
        a, b = self.zipf_words(rng, 2)
        ident = self.identifiers[rng.randrange(len(self.identifiers))].replace(".", "_")
        ext = rng.choice((".py", ".py", ".ts", ".tsx", ".go", ".rs", ".md", ".json", ".sql"))
        top = rng.choice(("src", "src", "lib", "tests", "internal", "app", "pkg", "scripts"))
        return f"{top}/{a}/{b}/{ident}{ext}" if rng.random() < 0.4 else f"{top}/{a}/{ident}{ext}"

    def _prose(self, rng: random.Random) -> tuple[str, list[int]]:
        words = self.zipf_words(rng, TEXT_POOL_WORDS)
        pieces: list[str] = []
        offsets: list[int] = []
        pos = 0
        until_end = rng.randint(6, 22)
        capital = True
        for w in words:
            r = rng.random()
            if r < 0.02:
                w = f"`{self.ident(rng)}`"
            elif r < 0.03:
                w = self.paths[rng.randrange(len(self.paths))]
            elif r < 0.045:
                w = str(rng.randint(0, 5000))
            elif capital:
                w = w.capitalize()
            capital = False
            until_end -= 1
            if until_end == 0:
                w += rng.choice((".", ".", ".", "?", ":", "!"))
                until_end = rng.randint(6, 22)
                capital = True
                w += "\n\n" if rng.random() < 0.12 else " "
            elif rng.random() < 0.06:
                w += ", "
            else:
                w += " "
            offsets.append(pos)
            pieces.append(w)
            pos += len(w)
        offsets.append(pos)
        return "".join(pieces), offsets

    def _code(self, rng: random.Random) -> tuple[str, list[int]]:
        lines: list[str] = []
        indent = ""
        for _ in range(CODE_POOL_LINES):
            line = self._code_line(rng)
            if line.endswith((":", "{")):
                lines.append(indent + line)
                indent = (indent + "    ")[:16]
            elif line == "}" or rng.random() < 0.15:
                indent = indent[:-4]
                lines.append(indent + line)
            else:
                lines.append(indent + line)
        offsets: list[int] = []
        pos = 0
        for line in lines:
            offsets.append(pos)
            pos += len(line) + 1
        offsets.append(pos)
        return "\n".join(lines) + "\n", offsets

    def _code_line(self, rng: random.Random) -> str:
        i1, i2, i3 = self.ident(rng), self.ident(rng), self.ident(rng)
        w1, w2, w3 = self.zipf_words(rng, 3)
        n = rng.randint(0, 999)
        path = self.paths[rng.randrange(len(self.paths))]
        k = rng.randrange(22)
        if k == 0:
            return f"def {i1}({w1}, {w2}={n}):"
        if k == 1:
            return f"return {i1}({w1}).{i2}({w2})"
        if k == 2:
            return f"class {i1.title().replace('_', '')}({i2.title().replace('_', '')}):"
        if k == 3:
            return f"self.{w1} = {i1}({w2}, timeout={n})"
        if k == 4:
            return f"const {i1} = await {i2}({w1}, {{ {w2}: {n} }});"
        if k == 5:
            return f"export function {i1}({w1}: {i2}): {i3} {{"
        if k == 6:
            return f"import {{ {i1}, {i2} }} from './{w1}/{w2}';"
        if k == 7:
            return f"func ({w1[0]} *{i1}) {i2}(ctx context.Context) error {{"
        if k == 8:
            return f'if err != nil {{ return fmt.Errorf("{w1} {w2}: %w", err) }}'
        if k == 9:
            return f"{path}:{n}:{rng.randint(1, 80)}: error TS2345: Argument of type '{i1}' is not assignable to '{i2}'"
        if k == 10:
            return f"FAILED tests/test_{w1}.py::test_{i1} - AssertionError: {w2} {w3} != {n}"
        if k == 11:
            return f'File "{HOME}/code/{path}", line {n}, in {i1}'
        if k == 12:
            return f"# {w1} {w2} {w3} {self.zipf_words(rng, 1)[0]} {i1}"
        if k == 13:
            return "}"
        if k == 14:
            return ""
        if k == 15:
            return f"for {w1} in {i1}.{i2}():"
        if k == 16:
            return f"let {i1} = {i2}.iter().map(|{w1}| {w1}.{i3}()).collect::<Vec<_>>();"
        if k == 17:
            return f"SELECT {w1}, {w2} FROM {i1} WHERE {w3} = ? ORDER BY {w1} LIMIT {n};"
        if k == 18:
            return f"{time_like(rng)} INFO  [{i1}] {w1} {w2} {w3} in {n} ms"
        if k == 19:
            return f"{time_like(rng)} ERROR [{i1}] {i2} failed: {FAMOUS_IDENTIFIERS[n % 8]} {w1} {w2}"
        if k == 20:
            return f"assert {i1}({w1}) == {n}, '{w2} {w3}'"
        return f"{i1} = {i2}.get('{w1}', {n})"

    def words(self, rng: random.Random, n: int) -> str:
        offs = self.text_offsets
        n = max(1, min(n, len(offs) - 2))
        i = rng.randrange(len(offs) - n - 1)
        return self.text[offs[i] : offs[i + n]].rstrip()

    def text_bytes(self, rng: random.Random, nbytes: int) -> str:
        return self.words(rng, max(1, nbytes // 7))

    def code_bytes(self, rng: random.Random, nbytes: int) -> str:
        offs = self.code_offsets
        total = offs[-1]
        nbytes = max(1, min(nbytes, total - 1))
        start_line = bisect.bisect_right(offs, rng.randrange(total - nbytes)) - 1
        start = offs[start_line]
        end_line = bisect.bisect_left(offs, start + nbytes)
        return self.code[start : offs[min(end_line, len(offs) - 1)]]


def _accumulate(values: Iterable[float]) -> Iterable[float]:
    total = 0.0
    for v in values:
        total += v
        yield total


def build_vocab(rng: random.Random) -> list[str]:
    """Real words first (the common ranks), then unique synthetic words (the long tail)."""
    seen: set[str] = set()
    vocab: list[str] = []
    for w in ENGLISH + PROGRAMMING:
        if w not in seen:
            seen.add(w)
            vocab.append(w)
    # the most frequent English words on top, then English and programming words interleaved
    english = [w for w in vocab if w in set(ENGLISH)]
    programming = [w for w in vocab if w not in set(ENGLISH)]
    vocab = english[:40]
    rest = english[40:]
    for i in range(max(len(rest), len(programming))):
        if i < len(rest):
            vocab.append(rest[i])
        if i < len(programming):
            vocab.append(programming[i])
    while len(vocab) < VOCAB_SIZE:
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 3, 4))))
        if w not in seen and len(w) > 3:
            seen.add(w)
            vocab.append(w)
    return vocab


def time_like(rng: random.Random) -> str:
    return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}"


_POOLS: Pools | None = None


def pools() -> Pools:
    global _POOLS
    if _POOLS is None:
        _POOLS = _kept_pools()
    return _POOLS


def _kept_pools() -> Pools:
    """The pools, built (about 1 s of CPU) or, where THREADLOOM_TEST_CACHE names a folder (the test
    suite sets it), read back from the copy the last build kept there: each test worker and each
    bench run a test starts built the same pools again. The copy is named by this file's bytes and
    Python's version, the two things the pools come from; any other is never read."""
    folder = os.environ.get("THREADLOOM_TEST_CACHE")
    if not folder:
        return Pools()
    import hashlib
    import pickle

    key = hashlib.sha256(Path(__file__).read_bytes() + sys.version.encode()).hexdigest()[:16]
    path = Path(folder) / "gen-pools" / f"{key}.pickle"
    try:
        kept = Pools.__new__(Pools)
        kept.__dict__.update(pickle.loads(path.read_bytes()))
        return kept
    except (OSError, pickle.UnpicklingError, EOFError):
        pass
    made = Pools()
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.{os.getpid()}")
    part.write_bytes(pickle.dumps(vars(made), protocol=pickle.HIGHEST_PROTOCOL))
    os.replace(part, path)  # whole or not there: workers build it at once
    for other in path.parent.glob("*.pickle"):  # an older file's: never read again
        if other != path:
            other.unlink(missing_ok=True)
    return made


# ---------------------------------------------------------------------- one session


@dataclass
class SessionSpec:
    index: int
    project: str  # directory name (slug)
    cwd: str
    session_id: str
    version: str
    era: str
    start: float  # unix seconds
    target_bytes: int
    min_records: int = 0
    special: str = ""  # "" | "empty" | "summary-only"
    chatty: bool = False  # a giant: many records, smaller tool outputs
    summary_leaf: str | None = None  # a uuid of another session in the project (summary.leafUuid)
    first_uuid: str = ""


def iso(t: float) -> str:
    ms = int(t * 1000) % 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{ms:03d}Z"


def rand_uuid(rng: random.Random) -> str:
    return str(uuidlib.UUID(int=rng.getrandbits(128), version=4))


def rand_id(rng: random.Random, prefix: str, n: int) -> str:
    return prefix + "".join(rng.choices(B62, k=n))


def rand_hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choices(HEX, k=n))


class SessionWriter:
    """Builds the lines of one transcript (or one subagent transcript) in memory."""

    def __init__(
        self,
        rng: random.Random,
        pools: Pools,
        *,
        session_id: str,
        cwd: str,
        version: str,
        era: str,
        branch: str,
        start: float,
        agent_id: str | None = None,
        sidechain: bool = False,
        chatty: bool = False,
        allow_spawn: bool = True,
        depth: int = 0,
    ) -> None:
        self.rng = rng
        self.p = pools
        self.sid = session_id
        self.cwd = cwd
        self.version = version
        self.vt = version_tuple(version)
        self.era = era
        self.branch = branch
        self.t = start
        self.agent_id = agent_id
        self.sidechain = sidechain
        self.chatty = chatty
        self.allow_spawn = allow_spawn
        self.depth = depth
        self.model = rng.choice(MODELS_BY_ERA[era])
        self.lines: list[bytes] = []
        self.nbytes = 0
        self.parent: str | None = None
        self.prompt_parents: list[str | None] = []
        self.since_compact = 0
        self.compact_every = rng.randint(500, 1800) if not chatty else rng.randint(1500, 4000)
        self.cache_tokens = rng.randint(8000, 20000)
        self.children: list[tuple[str, list[bytes], dict[str, Any] | None]] = []  # (relpath, lines, meta)
        self.child_bytes = 0
        self.inline: list[bytes] = []  # 1.0.x inline sidechain lines, flushed after the turn

    # -------------------------------------------------------------- primitives

    def tick(self, mean: float = 6.0) -> str:
        self.t += self.rng.expovariate(1.0 / mean) + 0.05
        return iso(self.t)

    def emit(self, obj: dict[str, Any]) -> None:
        line = orjson.dumps(obj)
        self.lines.append(line)
        self.nbytes += len(line) + 1
        self.since_compact += 1

    def envelope(self, typ: str, parent: str | None) -> dict[str, Any]:
        d: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.sid,
            "version": self.version,
            "gitBranch": self.branch,
        }
        if self.agent_id is not None:
            d["agentId"] = self.agent_id
        d["type"] = typ
        return d

    def chained(self, typ: str, body: dict[str, Any], parent: str | None | bool = True) -> str:
        """Emit a line in the uuid chain (parent=True: the previous line); returns its uuid."""
        uid = rand_uuid(self.rng)
        d = self.envelope(typ, self.parent if parent is True else parent or None)
        d.update(body)
        d["uuid"] = uid
        d["timestamp"] = self.tick()
        self.emit(d)
        self.parent = uid
        return uid

    def out_size(self) -> int:
        u = self.rng.random()
        if self.chatty:
            return int(min(4000, max(20, self.rng.lognormvariate(math.log(250), 1.0))))
        if u < 0.001:
            return self.rng.randint(200_000, 300_000)
        if u < 0.011:
            return self.rng.randint(20_000, 60_000)
        return int(min(12_000, max(20, self.rng.lognormvariate(math.log(420), 1.2))))

    # -------------------------------------------------------------- whole session

    def header(self) -> None:
        """2.1.x sessions start with a SessionStart hook attachment in the chain."""
        if self.vt >= (2, 1, 114) and not self.sidechain:
            self.chained(
                "attachment",
                {
                    "attachment": {
                        "type": "hook_success",
                        "hookName": "SessionStart:startup",
                        "toolUseID": rand_uuid(self.rng),
                        "hookEvent": "SessionStart",
                        "content": "",
                        "stdout": self.p.words(self.rng, 12),
                        "stderr": "",
                        "exitCode": 0,
                        "command": "~/.claude/hooks/session-start.sh",
                        "durationMs": self.rng.randint(40, 2000),
                    }
                },
                parent=None,
            )

    def turn(self) -> None:
        rng = self.rng
        self.t += rng.expovariate(1.0 / 90.0)
        if self.vt >= (2, 0, 37) and rng.random() < 0.05 and not self.sidechain:
            content = self.p.words(rng, rng.randint(3, 25))
            for op in ("enqueue", "dequeue"):
                self.emit(
                    {
                        "type": "queue-operation",
                        "operation": op,
                        "timestamp": self.tick(1.0),
                        "content": content,
                        "sessionId": self.sid,
                    }
                )
        parent: str | None = self.parent
        if len(self.prompt_parents) >= 2 and rng.random() < 0.03:
            parent = rng.choice(self.prompt_parents[-5:-1])  # rewind: a second child of an earlier node
        self.prompt_parents.append(parent)
        prompt_uuid = rand_uuid(rng)
        if self.vt >= (2, 0, 55) and not self.sidechain:
            self.emit(
                {
                    "type": "file-history-snapshot",
                    "messageId": prompt_uuid,
                    "snapshot": {
                        "messageId": prompt_uuid,
                        "trackedFileBackups": self.backups(),
                        "timestamp": iso(self.t),
                    },
                    "isSnapshotUpdate": False,
                }
            )
        d = self.envelope("user", parent)
        d["message"] = {"role": "user", "content": self.prompt_content()}
        d["uuid"] = prompt_uuid
        d["timestamp"] = self.tick(2.0)
        if self.vt >= (2, 1, 0):
            d["permissionMode"] = "default"
        self.emit(d)
        self.parent = prompt_uuid
        if self.vt >= (2, 1, 114) and rng.random() < 0.15:
            self.chained(
                "attachment",
                {
                    "attachment": {
                        "type": rng.choice(
                            ("todo_reminder", "hook_additional_context", "nested_memory", "date_change")
                        ),
                        "content": self.p.words(rng, rng.randint(5, 60)),
                        "itemCount": rng.randint(0, 5),
                    }
                },
            )
        steps = (
            min(40, 1 + int(rng.expovariate(1 / 2.5)))
            if not self.chatty
            else min(60, 1 + int(rng.expovariate(1 / 4)))
        )
        for step in range(steps):
            self.assistant_step(last=step == steps - 1)
        if self.vt >= (2, 1, 0) and not self.sidechain and rng.random() < 0.5:
            self.chained(
                "system",
                {
                    "subtype": "turn_duration",
                    "durationMs": rng.randint(2000, 600_000),
                    "messageCount": steps * 3,
                    "isMeta": False,
                },
            )
        elif rng.random() < 0.01:
            self.chained(
                "system",
                {
                    "subtype": "api_error",
                    "level": "error",
                    "error": {
                        "status": 529,
                        "error": {
                            "type": "error",
                            "error": {"type": "overloaded_error", "message": "Overloaded"},
                        },
                    },
                    "retryInMs": rng.randint(500, 9000),
                    "retryAttempt": 1,
                    "maxRetries": 10,
                },
            )
        if self.inline:
            for line in self.inline:
                self.lines.append(line)
                self.nbytes += len(line) + 1
            self.inline = []
        if self.since_compact > self.compact_every and not self.sidechain:
            self.compact()

    def compact(self) -> None:
        rng = self.rng
        pre = rng.randint(140_000, 170_000)
        boundary = rand_uuid(rng)
        d = self.envelope("system", None)
        d.update(
            {
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "isMeta": False,
                "level": "info",
                "logicalParentUuid": self.parent,
                "compactMetadata": {"trigger": rng.choice(("auto", "auto", "manual")), "preTokens": pre},
                "uuid": boundary,
                "timestamp": self.tick(30.0),
            }
        )
        self.emit(d)
        self.parent = boundary
        summary = (
            "This session is being continued from a previous conversation that ran out of context. "
            "The conversation is summarized below:\n" + self.p.text_bytes(rng, rng.randint(2000, 9000))
        )
        self.chained(
            "user",
            {
                "message": {"role": "user", "content": summary},
                "isVisibleInTranscriptOnly": True,
                "isCompactSummary": True,
            },
        )
        self.since_compact = 0
        self.cache_tokens = rng.randint(15000, 30000)

    # -------------------------------------------------------------- pieces

    def backups(self) -> dict[str, Any]:
        rng = self.rng
        out: dict[str, Any] = {}
        for _ in range(rng.choice((0, 0, 1, 2, 3))):
            path = self.p.paths[rng.randrange(len(self.p.paths))]
            out[path] = {
                "backupFileName": f"{rand_hex(rng, 16)}@v{rng.randint(1, 9)}",
                "version": rng.randint(1, 9),
                "backupTime": iso(self.t),
            }
        return out

    def prompt_content(self) -> str | list[dict[str, Any]]:
        rng = self.rng
        r = rng.random()
        text = self.p.words(rng, int(min(400, max(3, rng.lognormvariate(math.log(25), 0.9)))))
        if r < 0.03:
            cmd = rng.choice(("review", "compact", "init", "test", "commit", "clear"))
            return (
                f"<command-message>{cmd} is running…</command-message>\n<command-name>/{cmd}</command-name>\n"
                f"<command-args>{self.p.words(rng, rng.randint(0, 8))}</command-args>"
            )
        if r < 0.18:
            text += "\n\n```\n" + self.p.code_bytes(rng, rng.randint(100, 3000)) + "```"
        if r > 0.99:  # ~1 %: a pasted screenshot
            data = base64.b64encode(rng.randbytes(rng.randint(15_000, 150_000))).decode()
            return [
                {"type": "text", "text": text},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
            ]
        return text

    def usage(self, output: int) -> dict[str, Any]:
        create = self.rng.randint(0, 3000)
        return {
            "input_tokens": self.rng.randint(1, 12),
            "cache_creation_input_tokens": create,
            "cache_read_input_tokens": self.cache_tokens,
            "cache_creation": {"ephemeral_5m_input_tokens": create, "ephemeral_1h_input_tokens": 0},
            "output_tokens": output,
            "service_tier": "standard",
        }

    def assistant_step(self, *, last: bool) -> None:
        rng = self.rng
        msg_id = rand_id(rng, "msg_01", 22)
        req_id = rand_id(rng, "req_011C", 20)
        if rng.random() < 0.004:  # an API error stands in for the answer
            self.chained(
                "assistant",
                {
                    "message": {
                        "id": msg_id,
                        "model": "<synthetic>",
                        "role": "assistant",
                        "stop_reason": "stop_sequence",
                        "stop_sequence": "",
                        "type": "message",
                        "usage": {
                            "input_tokens": 0,
                            "output_tokens": 0,
                            "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 0,
                        },
                        "content": [{"type": "text", "text": "API Error: Request timed out."}],
                    },
                    "isApiErrorMessage": True,
                    "requestId": req_id,
                },
            )
            return
        blocks: list[dict[str, Any]] = []
        if rng.random() < (0.45 if self.era != "1.0" else 0.2):
            sig = base64.b64encode(rng.randbytes(rng.randint(120, 600))).decode()
            n = int(min(1500, max(4, rng.lognormvariate(math.log(40), 0.9))))
            blocks.append({"type": "thinking", "thinking": self.p.words(rng, n), "signature": sig})
        if last or rng.random() < 0.55:
            n = int(min(900, max(2, rng.lognormvariate(math.log(32), 1.0))))
            text = self.p.words(rng, n)
            if rng.random() < 0.15:
                text += "\n\n```python\n" + self.p.code_bytes(rng, rng.randint(100, 2500)) + "```\n"
            blocks.append({"type": "text", "text": text})
        tools: list[dict[str, Any]] = []
        if not last:
            for _ in range(1 if rng.random() < 0.8 else rng.randint(2, 4)):
                tools.append(self.tool_use())
            blocks.extend(tools)
        output = rng.randint(5, 40)
        tool_line_uuids: list[str] = []
        for i, block in enumerate(blocks):
            output += rng.randint(10, 400) if block["type"] != "tool_use" else rng.randint(30, 200)
            final = i == len(blocks) - 1
            uid = self.chained(
                "assistant",
                {
                    "message": {
                        "model": self.model,
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "content": [block],
                        "stop_reason": ("tool_use" if tools else "end_turn") if final else None,
                        "stop_sequence": None,
                        "usage": self.usage(output),
                    },
                    "requestId": req_id,
                },
            )
            if block["type"] == "tool_use":
                tool_line_uuids.append(uid)
        self.cache_tokens += rng.randint(200, 4000)
        for block, source_uuid in zip(tools, tool_line_uuids, strict=True):
            self.tool_result(block, source_uuid)

    def tool_use(self) -> dict[str, Any]:
        rng = self.rng
        name = rng.choices([t for t, _ in TOOL_WEIGHTS], weights=[w for _, w in TOOL_WEIGHTS])[0]
        if name == "Task" and (not self.allow_spawn or self.depth > 0):
            name = "Bash"
        if name == "Task" and self.vt >= (2, 1, 114):
            name = "Agent"
        p = self.p
        path = f"{self.cwd}/{p.paths[rng.randrange(len(p.paths))]}"
        if name == "Bash":
            cmd = rng.choice(
                (
                    "pytest -q ",
                    "npm test -- ",
                    "git diff ",
                    "rg -n ",
                    "go test ./... ",
                    "cargo build ",
                    "ls -la ",
                    "python -m ",
                    "make ",
                )
            ) + p.ident(rng)
            inp: dict[str, Any] = {"command": cmd, "description": p.words(rng, rng.randint(3, 8))}
        elif name == "Read":
            inp = {"file_path": path}
        elif name == "Edit":
            inp = {
                "file_path": path,
                "old_string": p.code_bytes(rng, rng.randint(30, 600)),
                "new_string": p.code_bytes(rng, rng.randint(30, 800)),
            }
        elif name == "Write":
            inp = {"file_path": path, "content": p.code_bytes(rng, min(self.out_size(), 40_000))}
        elif name == "Grep":
            inp = {"pattern": p.ident(rng), "path": "src", "output_mode": "content"}
        elif name == "Glob":
            inp = {"pattern": rng.choice(("**/*.py", "src/**/*.ts", "**/test_*.py", "**/*.go"))}
        elif name == "TodoWrite":
            inp = {
                "todos": [
                    {
                        "content": p.words(rng, rng.randint(3, 10)),
                        "status": rng.choice(("pending", "in_progress", "completed")),
                        "activeForm": p.words(rng, 4),
                    }
                    for _ in range(rng.randint(1, 6))
                ]
            }
        elif name == "WebSearch":
            inp = {"query": p.words(rng, rng.randint(2, 7))}
        else:  # Task / Agent
            inp = {
                "description": p.words(rng, rng.randint(3, 6)),
                "prompt": p.words(rng, rng.randint(20, 200)),
                "subagent_type": rng.choice(
                    ("general-purpose", "general-purpose", "Explore", "code-reviewer")
                ),
            }
        return {"type": "tool_use", "id": rand_id(rng, "toolu_01", 22), "name": name, "input": inp}

    def tool_result(self, use: dict[str, Any], source_uuid: str) -> None:
        rng = self.rng
        p = self.p
        name, inp = use["name"], use["input"]
        size = self.out_size()
        is_error = False
        content: Any
        result: Any
        if name == "Bash":
            out = p.code_bytes(rng, size)
            is_error = rng.random() < 0.04
            content = ("Exit code 1\n" + out) if is_error else out
            result = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
            if is_error:
                result = "Error: Exit code 1\n" + out
        elif name == "Read":
            out = p.code_bytes(rng, size)
            n = out.count("\n")
            if rng.random() < 0.004:  # an image read back as an image block
                data = base64.b64encode(rng.randbytes(rng.randint(10_000, 90_000))).decode()
                content = [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
                ]
                result = {
                    "type": "image",
                    "file": {"base64": data, "type": "image/png", "originalSize": len(data)},
                }
            else:
                content = out
                result = {
                    "type": "text",
                    "file": {
                        "filePath": inp["file_path"],
                        "content": out,
                        "numLines": n,
                        "startLine": 1,
                        "totalLines": n,
                    },
                }
        elif name == "Edit":
            original = p.code_bytes(rng, size)
            content = (
                f"The file {inp['file_path']} has been updated. Here's the result of running `cat -n` on a "
                f"snippet of the edited file:\n" + p.code_bytes(rng, rng.randint(200, 1500))
            )
            result = {
                "filePath": inp["file_path"],
                "oldString": inp["old_string"],
                "newString": inp["new_string"],
                "originalFile": original,
                "structuredPatch": [
                    {
                        "oldStart": rng.randint(1, 400),
                        "oldLines": 3,
                        "newStart": rng.randint(1, 400),
                        "newLines": 4,
                        "lines": inp["new_string"].splitlines()[:12],
                    }
                ],
                "userModified": False,
                "replaceAll": False,
            }
        elif name == "Write":
            content = f"File created successfully at: {inp['file_path']}"
            result = {
                "type": "create",
                "filePath": inp["file_path"],
                "content": inp["content"],
                "structuredPatch": [],
            }
        elif name == "Grep":
            out = "\n".join(
                f"{p.paths[rng.randrange(len(p.paths))]}:{rng.randint(1, 900)}:"
                f"{p.code_bytes(rng, 60).strip()}"
                for _ in range(max(1, size // 90))
            )
            content = out
            result = {
                "mode": "content",
                "numFiles": 0,
                "filenames": [],
                "content": out,
                "numLines": out.count("\n") + 1,
            }
        elif name == "Glob":
            names = [f"{self.cwd}/{p.paths[rng.randrange(len(p.paths))]}" for _ in range(max(1, size // 60))]
            content = "\n".join(names)
            result = {
                "filenames": names,
                "durationMs": rng.randint(2, 300),
                "numFiles": len(names),
                "truncated": False,
            }
        elif name == "TodoWrite":
            content = (
                "Todos have been modified successfully. Ensure that you continue to use the todo list to "
                "track your progress. Please proceed with the current tasks if applicable"
            )
            result = {"oldTodos": [], "newTodos": inp["todos"]}
        elif name == "WebSearch":
            out = p.text_bytes(rng, size)
            content = f'Web search results for query: "{inp["query"]}"\n\n{out}'
            result = {"query": inp["query"], "results": [out], "durationSeconds": round(rng.uniform(1, 9), 2)}
        else:
            content, result = self.spawn(use)
        block: dict[str, Any] = {"tool_use_id": use["id"], "type": "tool_result", "content": content}
        if is_error:
            block["is_error"] = True
        body: dict[str, Any] = {"message": {"role": "user", "content": [block]}, "toolUseResult": result}
        if self.vt >= (2, 1, 14):
            body["sourceToolAssistantUUID"] = source_uuid
        self.chained("user", body)

    def spawn(self, use: dict[str, Any]) -> tuple[Any, Any]:
        """A Task/Agent call: writes the subagent transcript and returns (content, toolUseResult)."""
        rng = self.rng
        inp = use["input"]
        new_layout = self.vt >= (2, 1, 0)
        agent_id = ("a" + rand_hex(rng, 16)) if new_layout else rand_hex(rng, 8)
        inline = self.era == "1.0"
        sub = SessionWriter(
            random.Random(rng.getrandbits(64)),
            self.p,
            session_id=self.sid,
            cwd=self.cwd,
            version=self.version,
            era=self.era,
            branch=self.branch,
            start=self.t,
            agent_id=None if inline else agent_id,
            sidechain=True,
            allow_spawn=False,
            depth=self.depth + 1,
        )
        sub.chained("user", {"message": {"role": "user", "content": inp["prompt"]}}, parent=None)
        budget = int(min(2_000_000, max(2_000, rng.lognormvariate(math.log(18_000), 1.1))))
        while sub.nbytes < budget:
            sub.assistant_step(last=sub.nbytes > budget * 0.8 or rng.random() < 0.1)
        if sub.lines and b'"stop_reason":"end_turn"' not in sub.lines[-1]:
            sub.assistant_step(last=True)
        answer = self.p.words(rng, rng.randint(30, 400))
        text = answer + (
            f"\nagentId: {agent_id} (use SendMessage with to: '{agent_id}' to continue this agent)"
            if self.vt >= (2, 1, 100)
            else ""
        )
        content = [{"type": "text", "text": text}]
        result = {
            "status": "completed",
            "prompt": inp["prompt"],
            "agentId": agent_id,
            "agentType": inp["subagent_type"],
            "content": [{"type": "text", "text": answer}],
            "totalDurationMs": rng.randint(5_000, 900_000),
            "totalTokens": rng.randint(2_000, 200_000),
            "totalToolUseCount": rng.randint(1, 60),
            "usage": {"input_tokens": 10, "output_tokens": rng.randint(100, 8000)},
        }
        self.t = sub.t
        if inline:
            self.inline.extend(sub.lines)
            return content, result
        if new_layout:
            meta: dict[str, Any] | None = {
                "agentType": inp["subagent_type"],
                "description": inp["description"],
            }
            if self.vt >= (2, 1, 114):
                assert meta is not None
                meta["toolUseId"] = use["id"]
            rel = f"{self.sid}/subagents/agent-{agent_id}.jsonl"
        else:
            meta = None
            rel = f"agent-{agent_id}.jsonl"
        self.children.append((rel, sub.lines, meta))
        self.child_bytes += sub.nbytes
        return content, result

    def warmup_agent(self) -> None:
        """2.0.x pre-spawned 'Warmup' sidechains: tiny legacy agent files linked to nothing."""
        rng = self.rng
        agent_id = rand_hex(rng, 8)
        sub = SessionWriter(
            random.Random(rng.getrandbits(64)),
            self.p,
            session_id=self.sid,
            cwd=self.cwd,
            version=self.version,
            era=self.era,
            branch=self.branch,
            start=self.t,
            agent_id=agent_id,
            sidechain=True,
            allow_spawn=False,
            depth=1,
        )
        sub.chained("user", {"message": {"role": "user", "content": "Warmup"}}, parent=None)
        sub.assistant_step(last=True)
        self.children.append((f"agent-{agent_id}.jsonl", sub.lines, None))
        self.child_bytes += sub.nbytes


# ---------------------------------------------------------------------- planning and writing


def plan(total: int, seed: int) -> list[SessionSpec]:
    rng = random.Random(f"plan/{seed}")
    mb = total / 1e6
    n_projects = max(3, min(len(PROJECT_NAMES), round(math.sqrt(mb) * 1.6)))
    projects: list[tuple[str, str]] = []
    for i in range(n_projects):
        name = PROJECT_NAMES[i]
        cwd = f"{HOME}/code/{name}"
        if i % 7 == 6:
            cwd += f"/.worktrees/feature-{rng.choice(('search', 'tui', 'auth', 'perf'))}"
        projects.append((cwd.replace("/", "-").replace(".", "-").replace("_", "-"), cwd))
    project_weights = [1.0 / (i + 1) ** 0.8 for i in range(n_projects)]
    n_giants = (1 if mb >= 60 else 0) + int(mb // 400)
    end = calendar.timegm((2026, 4, 1, 0, 0, 0, 0, 0, 0))
    specs: list[SessionSpec] = []
    budget = total
    last_first: dict[str, str] = {}

    def make(target: int, min_records: int = 0, special: str = "", chatty: bool = False) -> SessionSpec:
        slug, cwd = projects[rng.choices(range(n_projects), weights=project_weights)[0]]
        start = end - rng.uniform(0, 400) * 86400
        age = (end - start) / (400 * 86400)  # 1 = oldest
        versions = [v for v in VERSIONS]
        weights = [
            w * (2.5 if (era == "1.0" and age > 0.7) or (era == "2.1" and age < 0.4) else 1.0)
            for _, era, w in versions
        ]
        version, era, _ = rng.choices(versions, weights=weights)[0]
        first = rand_uuid(rng)
        spec = SessionSpec(
            index=len(specs),
            project=slug,
            cwd=cwd,
            session_id=rand_uuid(rng),
            version=version,
            era=era,
            start=start,
            target_bytes=target,
            min_records=min_records,
            special=special,
            chatty=chatty,
            summary_leaf=last_first.get(slug),
            first_uuid=first,
        )
        last_first[slug] = first
        specs.append(spec)
        return spec

    for _ in range(n_giants):
        spec = make(0, min_records=rng.randint(20_000, 26_000), chatty=True)
        budget -= spec.min_records * 1550  # a chatty line averages ~1.55 KB
    while budget > 0:
        r = rng.random()
        if r < 0.005:
            make(0, special="empty")
            continue
        if r < 0.01:
            make(0, special="summary-only")
            budget -= 200
            continue
        size = int(min(20 << 20, max(2_000, rng.lognormvariate(math.log(60_000), 1.6))))
        size = min(size, max(2_000, budget))
        make(size)
        budget -= size + 38_000  # measured: a session overshoots its target by ~38 KB (its last turn)
    return specs


@dataclass
class FileStat:
    path: str  # relative to the archive root
    bytes: int
    lines: int
    kind: str  # transcript | subagent | meta


def write_session(spec: SessionSpec, root: Path, seed: int) -> list[FileStat]:
    rng = random.Random(f"session/{seed}/{spec.index}")
    p = pools()
    project_dir = root / "projects" / spec.project
    project_dir.mkdir(parents=True, exist_ok=True)
    path = project_dir / f"{spec.session_id}.jsonl"
    if spec.special == "empty":
        path.write_bytes(b"")
        return [FileStat(str(path.relative_to(root)), 0, 0, "transcript")]
    branch = rng.choice(("main", "main", "main", "master", "develop", f"feature/{p.ident(rng).lower()}"))
    w = SessionWriter(
        rng,
        p,
        session_id=spec.session_id,
        cwd=spec.cwd,
        version=spec.version,
        era=spec.era,
        branch=branch,
        start=spec.start,
        chatty=spec.chatty,
    )
    head: list[bytes] = []
    if spec.special == "summary-only":
        head.append(
            orjson.dumps(
                {
                    "type": "summary",
                    "summary": p.words(rng, rng.randint(3, 9)),
                    "leafUuid": spec.summary_leaf or rand_uuid(rng),
                }
            )
        )
    else:
        w.header()
        w.turn()
        first_prompt_uuid = w.parent
        while w.nbytes + w.child_bytes < spec.target_bytes or len(w.lines) < spec.min_records:
            w.turn()
        if spec.era != "2.1" and rng.random() < 0.3:
            for _ in range(rng.randint(1, 3)):
                leaf = spec.summary_leaf if spec.summary_leaf and rng.random() < 0.5 else w.parent
                head.append(
                    orjson.dumps(
                        {
                            "type": "summary",
                            "summary": p.words(rng, rng.randint(3, 9)),
                            "leafUuid": leaf or first_prompt_uuid,
                        }
                    )
                )
        if spec.era == "2.1" and rng.random() < 0.2:
            w.emit(
                {
                    "type": "custom-title",
                    "customTitle": p.words(rng, rng.randint(2, 6)),
                    "sessionId": spec.session_id,
                }
            )
        if w.vt >= (2, 1, 69) and rng.random() < 0.3:
            w.emit(
                {
                    "type": "last-prompt",
                    "lastPrompt": p.words(rng, 12),
                    "sessionId": spec.session_id,
                    "leafUuid": w.parent,
                }
            )
        if spec.era == "2.0" and w.vt >= (2, 0, 28) and rng.random() < 0.3:
            for _ in range(rng.randint(1, 3)):
                w.warmup_agent()
    lines = head + w.lines
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(data)
    stats = [FileStat(str(path.relative_to(root)), len(data), len(lines), "transcript")]
    for rel, child_lines, meta in w.children:
        child = project_dir / rel
        child.parent.mkdir(parents=True, exist_ok=True)
        blob = b"\n".join(child_lines) + b"\n"
        child.write_bytes(blob)
        stats.append(FileStat(str(child.relative_to(root)), len(blob), len(child_lines), "subagent"))
        if meta is not None:
            meta_path = child.with_name(child.name[: -len(".jsonl")] + ".meta.json")
            meta_blob = orjson.dumps(meta)
            meta_path.write_bytes(meta_blob)
            stats.append(FileStat(str(meta_path.relative_to(root)), len(meta_blob), 1, "meta"))
    return stats


_JOB: tuple[Path, int] | None = None


def _init_worker(root: str, seed: int) -> None:
    global _JOB
    _JOB = (Path(root), seed)
    pools()


def _work(spec: SessionSpec) -> list[FileStat]:
    assert _JOB is not None
    return write_session(spec, _JOB[0], _JOB[1])


def generate(
    out: Path, size: int, seed: int = 1, jobs: int | None = None, quiet: bool = True
) -> dict[str, Any]:
    """Write an archive of about `size` bytes into `out` (which must not hold a manifest yet)."""
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    (out / "manifest.json").unlink(missing_ok=True)
    specs = plan(size, seed)
    order = sorted(specs, key=lambda s: -(s.target_bytes + s.min_records * 1550))
    jobs = jobs or min(os.cpu_count() or 1, 4)
    pools()  # built once here; forked workers inherit it
    stats: list[FileStat] = []
    if jobs <= 1:
        _init_worker(str(out), seed)
        for spec in order:
            stats += _work(spec)
    else:
        with get_context("fork").Pool(jobs, initializer=_init_worker, initargs=(str(out), seed)) as pool:
            for chunk in pool.imap_unordered(_work, order, chunksize=4):
                stats += chunk
    stats.sort(key=lambda s: s.path)
    transcripts = [s for s in stats if s.kind == "transcript"]
    largest = max(transcripts, key=lambda s: s.bytes)
    # a mid-sized file for the rewrite scenario: the transcript closest to 1 MB (bigger than the
    # 68 KB head+tail fingerprint window, smaller than the giants)
    mid = min(transcripts, key=lambda s: abs(math.log(max(s.bytes, 1)) - math.log(1_000_000)))
    manifest = {
        "gen_version": GEN_VERSION,
        "seed": seed,
        "target_bytes": size,
        "bytes": sum(s.bytes for s in stats),
        "files": len(stats),
        "lines": sum(s.lines for s in stats),
        "sessions": len(specs),
        "subagent_files": sum(1 for s in stats if s.kind == "subagent"),
        "projects": len({s.project for s in specs}),
        "giant_sessions": sum(1 for s in specs if s.min_records),
        "largest": asdict(largest),
        "mid_sized": asdict(mid),
        "seconds": round(time.perf_counter() - started, 2),
        "file_list": [[s.path, s.bytes, s.lines] for s in stats],
    }
    (out / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    if not quiet:
        print(
            f"{out}: {manifest['bytes'] / 1e6:.1f} MB in {manifest['files']} files, {manifest['lines']} lines, "
            f"{manifest['sessions']} sessions, {manifest['projects']} projects, {manifest['seconds']} s",
            file=sys.stderr,
        )
    return manifest


# ---------------------------------------------------------------------- edits used by the scenarios


def _last_state(path: Path) -> dict[str, Any]:
    """sessionId, cwd, version, gitBranch, last uuid and time of a transcript, from its tail."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 2_000_000))
        tail = f.read()
    state: dict[str, Any] = {}
    for line in reversed(tail.splitlines()):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(obj, dict):
            continue
        if "uuid" not in state and obj.get("uuid") and not obj.get("isSidechain"):
            state["uuid"] = obj["uuid"]
            state["t"] = calendar.timegm(time.strptime(obj["timestamp"][:19], "%Y-%m-%dT%H:%M:%S"))
        for key in ("sessionId", "cwd", "version", "gitBranch"):
            if key not in state and isinstance(obj.get(key), str):
                state[key] = obj[key]
        if len(state) == 6:
            break
    return state


def append_records(path: Path, nbytes: int, seed: int) -> int:
    """Append about `nbytes` of new turns continuing the file's chain (no new files). Returns bytes written."""
    st = _last_state(path)
    version = st.get("version", "2.1.42")
    era = version.rsplit(".", 1)[0] if version.rsplit(".", 1)[0] in MODELS_BY_ERA else "2.1"
    w = SessionWriter(
        random.Random(f"append/{seed}/{path.name}/{nbytes}"),
        pools(),
        session_id=st.get("sessionId", path.stem),
        cwd=st.get("cwd", f"{HOME}/code/x"),
        version=version,
        era=era,
        branch=st.get("gitBranch", "main"),
        start=st.get("t", time.time()) + 60,
        allow_spawn=False,
    )
    w.parent = st.get("uuid")
    while w.nbytes < nbytes:
        w.turn()
    data = b"\n".join(w.lines) + b"\n"
    with open(path, "ab") as f:
        f.write(data)
    return len(data)


def append_prompt(path: Path, seed: int) -> int:
    """Append one line to a transcript: a user prompt continuing its chain (the smallest change an
    agent makes to a session). Returns bytes written."""
    st = _last_state(path)
    rng = random.Random(f"prompt/{seed}/{path.name}")
    line = {
        "parentUuid": st.get("uuid"),
        "isSidechain": False,
        "userType": "external",
        "cwd": st.get("cwd", f"{HOME}/code/x"),
        "sessionId": st.get("sessionId", path.stem),
        "version": st.get("version", "2.1.42"),
        "gitBranch": st.get("gitBranch", "main"),
        "type": "user",
        "message": {"role": "user", "content": pools().words(rng, 12)},
        "uuid": rand_uuid(rng),
        "timestamp": iso(st.get("t", time.time()) + 60),
    }
    data = orjson.dumps(line) + b"\n"
    with open(path, "ab") as f:
        f.write(data)
    return len(data)


def write_single_session(path: Path, nbytes: int, seed: int) -> int:
    """A new standalone transcript of about `nbytes` (no subagents). Returns its size."""
    rng = random.Random(f"single/{seed}/{nbytes}")
    sid = rand_uuid(rng)
    w = SessionWriter(
        rng,
        pools(),
        session_id=sid,
        cwd=f"{HOME}/code/webapp",
        version="2.1.42",
        era="2.1",
        branch="main",
        start=calendar.timegm((2026, 3, 1, 0, 0, 0, 0, 0, 0)),
        allow_spawn=False,
    )
    w.header()
    while w.nbytes < nbytes:
        w.turn()
    data = b"\n".join(w.lines) + b"\n"
    target = path if path.suffix == ".jsonl" else path / f"{sid}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return len(data)


def _scale_writer(rng: random.Random, sid: str, start: float) -> SessionWriter:
    """A chatty 2.1.x writer (small tool outputs): many records for few bytes, as the scale archives want."""
    return SessionWriter(
        rng,
        pools(),
        session_id=sid,
        cwd=f"{HOME}/code/webapp",
        version="2.1.42",
        era="2.1",
        branch="main",
        start=start,
        chatty=True,
        allow_spawn=False,
    )


def write_many_sessions(folder: Path, count: int, nbytes: int, seed: int) -> int:
    """`count` small transcripts of about `nbytes` each in one project folder (issue 33: a new file
    in a folder of 20,000). Returns the bytes written."""
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    start = calendar.timegm((2026, 1, 1, 0, 0, 0, 0, 0, 0))
    for i in range(count):
        rng = random.Random(f"many/{seed}/{i}")
        sid = rand_uuid(rng)
        w = _scale_writer(rng, sid, start + i * 600)
        w.turn()
        kept, size = [], 0
        for line in w.lines:  # a prefix of the chain: a session cut short is still whole
            if kept and size + len(line) + 1 > nbytes:
                break
            kept.append(line)
            size += len(line) + 1
        data = b"\n".join(kept) + b"\n"
        (folder / f"{sid}.jsonl").write_bytes(data)
        total += len(data)
    return total


def write_long_session(path: Path, records: int, seed: int) -> int:
    """One transcript of at least `records` lines with small outputs (issue 33: a 100k-message
    session), written as it is built so memory stays flat. Returns its size."""
    rng = random.Random(f"long/{seed}/{records}")
    w = _scale_writer(rng, rand_uuid(rng), calendar.timegm((2026, 2, 1, 0, 0, 0, 0, 0, 0)))
    w.header()
    written = lines = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        while lines < records:
            w.turn()
            data = b"\n".join(w.lines) + b"\n"
            f.write(data)
            written += len(data)
            lines += len(w.lines)
            w.lines.clear()
    return written


def write_giant_line(path: Path, line_bytes: int, seed: int) -> int:
    """A short transcript one of whose tool results is a single line of about `line_bytes`
    (issue 33: a 200 MB line must be stored verbatim in bounded memory). Returns the file's size."""
    rng = random.Random(f"giant/{seed}")
    sid = rand_uuid(rng)
    w = _scale_writer(rng, sid, calendar.timegm((2026, 3, 1, 0, 0, 0, 0, 0, 0)))
    w.header()
    w.turn()
    head = b"\n".join(w.lines) + b"\n"
    w.lines.clear()
    use_id = "toolu_" + rand_hex(rng, 24)
    call = w.envelope("assistant", w.parent)
    call.update(
        uuid=rand_uuid(rng),
        timestamp=w.tick(),
        message={
            "id": "msg_" + rand_hex(rng, 24),
            "type": "message",
            "role": "assistant",
            "model": w.model,
            "content": [
                {"type": "tool_use", "id": use_id, "name": "Bash", "input": {"command": "cat big.log"}}
            ],
            "usage": w.usage(40),
        },
    )
    result = w.envelope("user", call["uuid"])
    result.update(uuid=rand_uuid(rng), timestamp=w.tick())
    # the line's bulk: a log of lines, repeated from a pool so generating it is fast
    chunk = (pools().code_bytes(rng, 64_000) + "\n").encode()
    body = orjson.dumps(chunk.decode() * (line_bytes // len(chunk) + 1))[1:-1]
    result["message"] = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": use_id, "content": "@BODY@", "is_error": False}],
    }
    before, after = orjson.dumps(result).split(b'"@BODY@"')
    w.parent = result["uuid"]
    w.turn()
    tail = b"\n".join(w.lines) + b"\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(head + orjson.dumps(call) + b"\n" + before + b'"')
        f.write(body)
        f.write(b'"' + after + b"\n" + tail)
        return f.tell()


def rewrite_middle(path: Path, same_size: bool) -> tuple[int, bytes]:
    """Change one message line near the middle of the file (letters swapped in case, or words added).

    Returns (byte offset of the changed line, its new bytes). Same size keeps every other byte and
    line offset in place, the way an in-place edit of a log would.
    """
    data = path.read_bytes()
    middle = len(data) // 2
    start = data.rfind(b"\n", 0, middle) + 1
    pos = start
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        line = data[pos:end]
        obj = orjson.loads(line) if line.strip() else None
        if isinstance(obj, dict) and _edit_text(obj, same_size):
            new = orjson.dumps(obj)
            if same_size and len(new) != len(line):
                raise AssertionError("a same-size edit changed the length")
            path.write_bytes(data[:pos] + new + data[end:])
            return pos, new
        pos = end + 1
    raise ValueError(f"no message line with text after the middle of {path}")


def _edit_text(obj: dict[str, Any], same_size: bool) -> bool:
    msg = obj.get("message")
    if not isinstance(msg, dict):
        return False
    content = msg.get("content")

    def change(text: str) -> str:
        return text.swapcase() if same_size else text + " (edited: " + text[:40] + ")"

    if isinstance(content, str) and any(c.isalpha() and c.isascii() for c in content):
        if same_size and not content.isascii():
            return False
        msg["content"] = change(content)
        return True
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                text = block["text"]
                if same_size and not text.isascii():
                    continue
                block["text"] = change(text)
                return True
    return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="archive root (gets projects/ and manifest.json)")
    ap.add_argument("--size", default="100M", help="about how many bytes: 5M, 100M, 1G (binary units)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: CPUs, at most 4)")
    args = ap.parse_args(argv)
    generate(args.out, parse_size(args.size), args.seed, args.jobs, quiet=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
