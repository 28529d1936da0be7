"""How well each search mode finds the turn a person remembers: hit@1, hit@10 and MRR over the
queries in queries.tsv, written in people's words for turns of ../shared/corpus's real sessions.

    python bench/recall/evaluate.py [--db PATH] [--json]

Ingests the corpus into a fresh database (or uses --db), then asks each query in every mode. A
query counts as found at rank r when any of its target turns is the r-th distinct turn among the
hits. The corpus is read in place and never copied into the repository.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parents[1].parent / "shared" / "corpus"
MODES = ("words", "meaning", "hybrid")


def load_queries(path: Path = HERE / "queries.tsv") -> list[tuple[str, set[str]]]:
    queries = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        text, targets = line.split("\t")
        queries.append((text, set(targets.split())))
    return queries


def ingest(db: Path, corpus: Path = CORPUS) -> None:
    home = db.parent / "home"
    home.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(home / ".codex"),
    }
    subprocess.run(
        [
            sys.executable,
            "-m",
            "threadloom.core.cli",
            "--db",
            str(db),
            "ingest",
            "--source",
            str(corpus),
        ],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )


def rank_of(conn: sqlite3.Connection, hits: list, targets: set[str]) -> int | None:
    """The 1-based rank of the first target among the hits' distinct turns."""
    from threadloom.core.insight.recall import _turns_of

    turn_of = _turns_of(conn, [h.entry_id for h in hits])
    seen: list[str] = []
    for hit in hits:
        turn = hit.turn_id or turn_of.get(hit.entry_id) or f"entry:{hit.entry_id}"
        if turn in seen:
            continue
        seen.append(turn)
        if turn in targets:
            return len(seen)
    return None


def evaluate(conn: sqlite3.Connection, queries: list[tuple[str, set[str]]]) -> dict[str, dict[str, float]]:
    from threadloom.core.insight.recall import search_recall

    scores: dict[str, dict[str, float]] = {}
    for mode in MODES:
        ranks = [rank_of(conn, search_recall(conn, q, mode=mode, limit=50).hits, t) for q, t in queries]
        n = len(ranks)
        scores[mode] = {
            "hit@1": round(sum(1 for r in ranks if r == 1) / n, 3),
            "hit@10": round(sum(1 for r in ranks if r is not None and r <= 10) / n, 3),
            "mrr": round(sum(1 / r for r in ranks if r is not None) / n, 3),
            "queries": n,
        }
    return scores


def use_model(name: str) -> None:
    """Embed with another bundled model for comparison (its package must be importable)."""
    if name == "wordllama":
        return
    import numpy as np
    from threadloom.core.base import embed

    if name != "tokenlearn-static-model":
        raise SystemExit(f"unknown model {name}")
    from static_model import get_embeddings  # the tokenlearn-static-model wheel (64 dimensions, int8)

    def embed_with(texts: list[str]) -> np.ndarray:
        rows = np.array(get_embeddings([t or " " for t in texts]), dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return rows / norms

    embed.embed = embed_with
    embed.DIMENSIONS = embed_with(["x"]).shape[1]
    embed.MODEL = name
    embed.available = lambda: True  # the shipped model's own files are not read (another width)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, help="an archive of the corpus already ingested")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--model", default="wordllama", help="wordllama (shipped) or tokenlearn-static-model")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db
        if db is None:
            if not CORPUS.is_dir():
                print(f"no corpus at {CORPUS}", file=sys.stderr)
                return 2
            db = Path(tmp) / "corpus.db"
            ingest(db)
        conn = sqlite3.connect(db)
        conn.isolation_level = None
        if args.model != "wordllama":
            from threadloom.core.insight import episodes

            use_model(args.model)
            episodes.embed_pending(conn)  # another model: every vector again
        scores = evaluate(conn, load_queries())
    if args.json:
        print(orjson.dumps(scores, option=orjson.OPT_INDENT_2).decode())
    else:
        print("| mode | hit@1 | hit@10 | MRR |\n|---|---|---|---|")
        for mode, s in scores.items():
            print(f"| {mode} | {s['hit@1']:.2f} | {s['hit@10']:.2f} | {s['mrr']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
