"""Compare threadloom's daily tokens and cost with ccusage's on the same Claude Code files.

    python scripts/vs_ccusage.py [--corpus ../shared/corpus/claude-code] [--ccusage PATH]

ccusage (npm: `npm install ccusage`) is the most used report of Claude Code's token cost. Both read
a copy of the corpus's Claude Code files laid out as a Claude config folder, both in UTC; ccusage
with `--offline` (its bundled prices). Prints one row per day and how many days agree:
input and cache tokens equal, output tokens at least ccusage's, cost within 10 %.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def claude_folder(corpus: Path, into: Path) -> Path:
    """The corpus's Claude Code logs copied into `into/projects/p<N>/`, one folder per source folder."""
    projects = into / "projects"
    folders: dict[Path, Path] = {}
    for log in sorted(corpus.rglob("*.jsonl")):
        target = folders.setdefault(log.parent, projects / f"p{len(folders)}")
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, target / log.name)
    return into


def ccusage_days(ccusage: str, config: Path) -> dict[str, dict]:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config), "TZ": "UTC"}
    out = subprocess.run(
        [ccusage, "daily", "--offline", "--json", "--timezone", "UTC"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {d["date"]: d for d in json.loads(out)["daily"]}


def threadloom_days(config: Path, work: Path) -> dict[str, dict]:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(work / "none"), "TZ": "UTC"}
    db = str(work / "threadloom.db")
    command = [sys.executable, "-m", "threadloom.core.cli", "--db", db]
    subprocess.run([*command, "ingest", "--only", "--source", str(config / "projects")], env=env, check=True,
                   capture_output=True)  # fmt: skip
    out = subprocess.run([*command, "stats", "--by", "day", "--json"], env=env, capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    return {row["period"]: row for row in json.loads(out)}


def extra_output_cost(theirs: dict, extra_tokens: int, day: str) -> float:
    """What the output tokens threadloom counts beyond ccusage's cost, at the day's one model's output
    price (0 for a day of several models or an unknown one: not told apart)."""
    from threadloom.core.insight.cost import rates

    models = theirs.get("modelsUsed") or []
    price = rates(models[0], day) if len(models) == 1 else None
    return extra_tokens * price.output[0] / 1e6 if price is not None and extra_tokens > 0 else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus" / "claude-code")
    parser.add_argument("--ccusage", default=shutil.which("ccusage") or "ccusage")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vs-ccusage-") as tmp:
        config = claude_folder(args.corpus, Path(tmp) / "claude")
        theirs = ccusage_days(args.ccusage, config)
        ours = threadloom_days(config, Path(tmp))
    agree = dict.fromkeys(
        (
            "input and cache equal",
            "output at least theirs",
            "cost within 10 %",
            "within 10 % beyond the extra output",
        ),
        0,
    )
    priced = 0
    print(f"{'day':<11}{'input':>9}{'cache w':>11}{'cache r':>12}{'output':>10}{'theirs':>10}"
          f"{'cost':>10}{'theirs':>10}")  # fmt: skip
    for day in sorted(set(theirs) | set(ours)):
        t, o = theirs.get(day), ours.get(day)
        if t is None or o is None:
            print(f"{day:<11} only in {'threadloom' if t is None else 'ccusage'}")
            continue
        same = (o["input_tokens"], o["cache_creation_tokens"], o["cache_read_tokens"]) == (
            t["inputTokens"],
            t["cacheCreationTokens"],
            t["cacheReadTokens"],
        )
        agree["input and cache equal"] += same
        agree["output at least theirs"] += o["output_tokens"] >= t["outputTokens"]
        cost = o["cost_usd"]
        if cost is not None and t["totalCost"]:
            priced += 1
            agree["cost within 10 %"] += abs(cost - t["totalCost"]) <= 0.10 * t["totalCost"]
            extra = extra_output_cost(t, o["output_tokens"] - t["outputTokens"], day)
            agree["within 10 % beyond the extra output"] += (
                abs(cost - extra - t["totalCost"]) <= 0.10 * t["totalCost"]
            )
        print(
            f"{day:<11}{o['input_tokens']:>9,}{o['cache_creation_tokens']:>11,}{o['cache_read_tokens']:>12,}"
            f"{o['output_tokens']:>10,}{t['outputTokens']:>10,}"
            f"{'?' if cost is None else f'${cost:.4f}':>10}{'$' + format(t['totalCost'], '.4f'):>10}"
            + ("" if same else "   input/cache differ")
        )
    both = len(set(theirs) & set(ours))
    print(
        f"\n{both} days in both; "
        + "; ".join(f"{k}: {v}" for k, v in agree.items())
        + f" (of {priced} priced)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
