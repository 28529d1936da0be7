"""Embeddings computed here, offline: a static embedding model whose weights ship in a PyPI wheel.

The model is WordLlama's `l2_supercat` (256 dimensions, MIT): token embeddings taken from large
language models' input layers and trained to be averaged, 16 MB of weights inside the `wordllama`
wheel with its tokenizer. Chosen by measuring (bench/recall/: hit@10 on queries written for real
sessions, README "Recall by meaning"); a static model embeds thousands of turns a second on one
core, where a transformer takes tens of milliseconds a turn. Only the files are used: the package's
loader looks for the tokenizer where the wheel does not put it and would go to the network.

Vectors are stored as int8 (256 bytes a turn), scaled per vector; cosine ranking does not need the
scale back because each stored vector is normalized again when loaded.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# One thread for numpy's BLAS: a search's product of the query with every stored vector is a few
# million multiplications, and OpenBLAS's threads waiting on a busy 2-core machine made it take
# 2-7 ms instead of 0.16 (set before numpy is first imported, which only these modules do)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

MODEL = "wordllama-l2-supercat-256"  # the key in ledger_meta: vectors by another model are computed again
MODEL_KEY = "embed_model"
DIMENSIONS = 256
MAX_TOKENS = 512  # an episode's text is cut here: averaged, later words add little
_lock = threading.Lock()


class EmbeddingUnavailable(RuntimeError):
    """The model's files could not be read (a broken install): search falls back to words."""


def _package_dir() -> Path:
    """Where the wordllama wheel put its files, found without importing it (its __init__ loads
    pydantic and compiled helpers: 0.6 s that a search would pay for nothing)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise OSError("the wordllama package is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


@lru_cache(maxsize=1)
def _model() -> tuple[Any, NDArray[np.float16]]:
    try:
        from tokenizers import Tokenizer

        package = _package_dir()
        tokenizer = Tokenizer.from_file(str(package / "tokenizers" / "l2_supercat_tokenizer_config.json"))
        table = _mapped_table(package / "weights" / "l2_supercat_256.safetensors")
    except Exception as exc:  # any failure (a broken install): no meaning search, words still work
        raise EmbeddingUnavailable(
            f"the embedding model could not be loaded ({type(exc).__name__}: {exc}); "
            "reinstall threadloom (`pip install --force-reinstall wordllama`)"
        ) from exc
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()
    return tokenizer, table


def _mapped_table(path: Path) -> NDArray[np.float16]:
    """The embedding table, mapped from the safetensors file rather than read: a query touches the
    pages of its few tokens only (a short-lived `threadloom search` never reads the 16 MB).
    safetensors: an 8-byte little-endian header length, a JSON header, then the raw tensors."""
    import json

    import numpy as np

    with path.open("rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    name, info = next((k, v) for k, v in header.items() if k != "__metadata__")
    if info["dtype"] != "F16" or len(info["shape"]) != 2 or info["shape"][1] != DIMENSIONS:
        raise ValueError(f"unexpected tensor {name}: {info['dtype']} {info['shape']}")
    start, end = info["data_offsets"]
    rows = info["shape"][0]
    if end - start != rows * DIMENSIONS * 2:
        raise ValueError(f"tensor {name} holds {end - start} bytes, not {rows}×{DIMENSIONS}×2")
    table: NDArray[np.float16] = np.memmap(
        path, dtype=np.float16, mode="r", offset=8 + size + start, shape=(rows, DIMENSIONS)
    )
    return table


def loaded() -> bool:
    """Whether this process has the model in memory already (embedding more costs little then)."""
    return _model.cache_info().currsize > 0


def available() -> bool:
    try:
        _model()
    except EmbeddingUnavailable:
        return False
    return True


# the mean length of the pieces the model cuts a word into, from which it reads a word it has no
# whole token for: "rounding" is round+ing (4), "serializer" serial+izer (5), "Fehlerbehandlung" six
# pieces of 2.67, where a keyboard mash falls apart into letters and pairs ("qwerty" q+wer+ty 2,
# "zzqv" z+z+q+v 1, "blorp" bl+orp 2.5)
WORD_PIECE_CHARS = 2.6


def is_word(word: str) -> bool:
    """Whether the model reads `word` as a word: one whole token of its vocabulary, or pieces long
    enough to carry meaning (`WORD_PIECE_CHARS`). A keyboard mash it reads as letters, whose
    vectors match turns that share letters, not meaning. A word of other scripts (数据库, миграция)
    is taken as one: the model cuts what it lacks of them into bytes, which say nothing of a word."""
    if not word.isascii():
        return True
    with _lock:  # the tokenizer is shared (see `embed`)
        tokenizer, _ = _model()
        if any(tokenizer.token_to_id("\u2581" + w) is not None for w in {word, word.lower()}):
            return True
        cut = tokenizer.encode(word, add_special_tokens=False).tokens
    pieces = [p.removeprefix("\u2581") for p in cut]
    pieces = [p for p in pieces if p]
    return bool(pieces) and sum(map(len, pieces)) / len(pieces) >= WORD_PIECE_CHARS


def embed(texts: list[str]) -> NDArray[np.float32]:
    """Unit vectors, one row a text (the mean of its tokens' embeddings, normalized)."""
    import itertools

    import numpy as np

    with _lock:  # the tokenizer is shared; a search thread and an ingest may embed at once
        tokenizer, table = _model()
        encodings = tokenizer.encode_batch([t or " " for t in texts], add_special_tokens=False)
    ids = [enc.ids for enc in encodings]
    lengths = [len(i) for i in ids]
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    if not any(lengths):
        return _unit(out)
    # the rows this batch uses, once each, as float32 (a few MB), summed in the same order as from
    # the float32 copy of the whole table an ingest once kept (32 MB for the process's life, most
    # of what embedding added to a cold ingest's peak memory): the same vectors, bit for bit, for
    # ~1.6x that copy's summing time (a few hundredths of a second a thousand texts)
    flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=sum(lengths))
    used, where = np.unique(flat, return_inverse=True)
    rows = np.asarray(table[used], dtype=np.float32)
    at = 0
    for i, n in enumerate(lengths):
        if n:
            out[i] = rows[where[at : at + n]].mean(axis=0, dtype=np.float32)
        at += n
    return _unit(out)


def mix(first: NDArray[np.float32], second: NDArray[np.float32], weight: float) -> NDArray[np.float32]:
    """Unit rows of weight·first + (1 − weight)·second (a zero row on one side leaves the other)."""

    return _unit(weight * first + (1.0 - weight) * second)


def _unit(rows: NDArray[np.float32]) -> NDArray[np.float32]:
    """Each row divided by its length (a zero row stays zero)."""
    import numpy as np

    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: NDArray[np.float32] = (rows / norms).astype(np.float32, copy=False)
    return unit


def to_bytes(vectors: NDArray[np.float32]) -> list[bytes]:
    """Each vector as int8, scaled so its largest component is ±127."""
    import numpy as np

    peak = np.abs(vectors).max(axis=1, keepdims=True)
    peak[peak == 0] = 1.0
    return [row.tobytes() for row in np.round(vectors / peak * 127).astype(np.int8)]


def packed(blobs: list[bytes]) -> tuple[NDArray[np.int8], NDArray[np.float32]]:
    """Stored vectors as they are kept in memory for search: the int8 rows (256 bytes each, a
    quarter of float32's) and the inverse of each row's length (a wrong-sized blob: a zero row)."""
    import numpy as np

    rows = np.zeros((len(blobs), DIMENSIONS), dtype=np.int8)
    for i, blob in enumerate(blobs):
        if blob is not None and len(blob) == DIMENSIONS:
            rows[i] = np.frombuffer(blob, dtype=np.int8)
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float32))
    norms[norms == 0] = 1.0
    inverse: NDArray[np.float32] = (1.0 / norms).astype(np.float32)
    return rows, inverse


def cosines(
    rows: NDArray[np.int8], inverse: NDArray[np.float32], query: NDArray[np.float32]
) -> NDArray[np.float32]:
    """Each packed row's cosine with a unit query, a block of rows at a time (a block's float32 copy
    is 8 MB, whatever the archive's size)."""
    import numpy as np

    out = np.empty(len(rows), dtype=np.float32)
    for start in range(0, len(rows), COSINE_BLOCK):
        block = rows[start : start + COSINE_BLOCK].astype(np.float32)
        out[start : start + len(block)] = block @ query
    result: NDArray[np.float32] = out * inverse
    return result


COSINE_BLOCK = 8192


def from_bytes(blobs: list[bytes]) -> NDArray[np.float32]:
    """Stored vectors as unit float32 rows (a blob of the wrong size reads as a zero row)."""
    import numpy as np

    out = np.zeros((len(blobs), DIMENSIONS), dtype=np.float32)
    for i, blob in enumerate(blobs):
        if blob is not None and len(blob) == DIMENSIONS:
            out[i] = np.frombuffer(blob, dtype=np.int8)
    return _unit(out)
