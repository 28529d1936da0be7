"""What an API message cost in USD, from a price table that works offline.

The prices are genai-prices' bundled snapshot (Anthropic, OpenAI, Google and others, with cache
read and write prices and the long-context tiers), imported only here, never on the launch path.
Its own `calc_price` takes ~160 µs a message, too slow for an archive of a million messages, so a
model's prices are resolved once (per model and day: prices change on dates) into four rates and
each message is priced with a few multiplications; a test holds the result to genai-prices' own.

A model the table does not know has an unknown cost (None), never 0.

Token counts are the ledger's: `input_tokens` excludes the cache reads and writes, which are
counted apart (genai-prices counts them inside its input total).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import astuple, dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from threadloom.core.db import get_meta, set_meta
from threadloom.core.stats import mark_stale

PRICES_KEY = "prices_version"  # ledger_meta: the price data the stored costs come from

# the table's four token prices, in USD per million tokens
_FIELDS = ("input_mtok", "output_mtok", "cache_write_mtok", "cache_read_mtok")


@dataclass(frozen=True, slots=True)
class Rates:
    """A model's four prices in USD per million tokens, each as (base, ((start, price), ...)):
    past a tier's start in total input tokens, every token of the request costs the tier's price."""

    model_id: str
    provider_id: str
    input: tuple[float, tuple[tuple[int, float], ...]]
    output: tuple[float, tuple[tuple[int, float], ...]]
    cache_write: tuple[float, tuple[tuple[int, float], ...]]
    cache_read: tuple[float, tuple[tuple[int, float], ...]]

    def cost(self, input_tokens: int, output_tokens: int, cache_write: int, cache_read: int) -> float:
        total_input = input_tokens + cache_write + cache_read
        return (
            input_tokens * _rate(self.input, total_input)
            + output_tokens * _rate(self.output, total_input)
            + cache_write * _rate(self.cache_write, total_input)
            + cache_read * _rate(self.cache_read, total_input)
        ) / 1_000_000

    def to_json(self) -> str:
        return json.dumps(astuple(self))

    @classmethod
    def from_json(cls, text: str) -> Rates | None:
        data = json.loads(text)
        if data is None:
            return None
        model_id, provider_id, *prices = data
        return cls(model_id, provider_id, *(_from_list(p) for p in prices))


def _from_list(price: list[Any]) -> tuple[float, tuple[tuple[int, float], ...]]:
    base, tiers = price
    return (float(base), tuple((int(start), float(rate)) for start, rate in tiers))


def _rate(price: tuple[float, tuple[tuple[int, float], ...]], total_input: int) -> float:
    base, tiers = price
    for start, tier_price in reversed(tiers):
        if total_input > start:
            return tier_price
    return base


@lru_cache(maxsize=1)
def prices_version() -> str:
    """Which price data the stored costs were computed with: when it changes they are recomputed.

    Read from the bundled data file's size and time, not the package's metadata: that costs an
    ingest with nothing new 25 ms (importlib.metadata), this a stat."""
    import importlib.util

    spec = importlib.util.find_spec("genai_prices")
    if spec is None or spec.origin is None:
        return "genai-prices missing"
    data = Path(spec.origin).with_name("data.py").stat()
    return f"genai-prices data {data.st_size}:{int(data.st_mtime)}"


@lru_cache(maxsize=4096)
def rates(model: str | None, day: str | None = None) -> Rates | None:
    """The prices of `model` on `day` (YYYY-MM-DD, UTC; today when None), or None when the table
    does not know the model."""
    if not model:
        return None
    from genai_prices import data_snapshot

    try:
        provider, info = data_snapshot.get_snapshot().find_provider_model(model, None, None, None)
    except LookupError:
        return None
    when = datetime.fromisoformat(day).replace(tzinfo=UTC) if day else datetime.now(UTC)
    prices = info.get_prices(when)
    inp, out, write, read = (getattr(prices, name, None) for name in _FIELDS)
    # a model priced with no cache write (or read) rate bills those tokens as plain input
    return Rates(
        info.id,
        provider.id,
        _price(inp),
        _price(out),
        _price(write if write is not None else inp),
        _price(read if read is not None else inp),
    )


def _price(value: Any) -> tuple[float, tuple[tuple[int, float], ...]]:
    if value is None:
        return (0.0, ())
    if isinstance(value, Decimal):
        return (float(value), ())
    return (float(value.base), tuple((tier.start, float(tier.price)) for tier in value.tiers))


def message_cost(
    model: str | None,
    input_tokens: int,
    output_tokens: int,
    cache_write: int,
    cache_read: int,
    timestamp_ms: int | None = None,
) -> float | None:
    """One API message's cost in USD (None: a model the price table does not know)."""
    found = rates(model, _day(timestamp_ms))
    return None if found is None else found.cost(input_tokens, output_tokens, cache_write, cache_read)


def _day(timestamp_ms: int | None) -> str:
    moment = datetime.fromtimestamp(timestamp_ms / 1000, UTC) if timestamp_ms else datetime.now(UTC)
    return moment.strftime("%Y-%m-%d")


class _StoredRates:
    """`rates` through the ledger's `model_rates` table: a run that prices today's messages of a
    model seen before reads one row, and loads the price table (0.2 s) only for what is new."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.known: dict[tuple[str, str], Rates | None] = {}
        self.new: list[tuple[str, str, str]] = []

    def get(self, model: str | None, day: str) -> Rates | None:
        if not model:
            return None
        key = (model, day)
        if key in self.known:
            return self.known[key]
        row = self.conn.execute("SELECT rates FROM model_rates WHERE model = ? AND day = ?", key).fetchone()
        if row is not None:
            found = Rates.from_json(row[0])
        else:
            found = rates(model, day)
            self.new.append((model, day, found.to_json() if found is not None else "null"))
        self.known[key] = found
        return found


def price_pending(conn: sqlite3.Connection) -> set[str]:
    """Price every API message not priced yet (new, grown, or priced with older price data) and
    bring their sessions' costs up to date; returns those sessions (what else follows their costs,
    the signals' dead ends, is recomputed for them). A message whose agent recorded its cost keeps
    that cost."""
    version = prices_version()
    if get_meta(conn, PRICES_KEY) != version:
        conn.execute("BEGIN")
        conn.execute("UPDATE agent_usage SET priced = 0 WHERE priced = 1")
        conn.execute("DELETE FROM model_rates")
        set_meta(conn, PRICES_KEY, version)
        conn.execute("COMMIT")
    rows = conn.execute(
        "SELECT message_id, session_id, model, timestamp, input_tokens, output_tokens, cache_creation_tokens, "
        "cache_read_tokens, recorded_cost_usd FROM agent_usage WHERE priced = 0"
    ).fetchall()
    if not rows:
        return set()
    stored = _StoredRates(conn)
    updates: list[tuple[float | None, str]] = []
    sessions: set[str] = set()
    for message_id, session_id, model, ts, inp, out, write, read, recorded in rows:
        if recorded is not None:
            cost: float | None = recorded
        else:
            found = stored.get(model, _day(ts))
            cost = None if found is None else found.cost(inp, out, write, read)
        updates.append((cost, message_id))
        sessions.add(session_id)
    conn.execute("BEGIN")
    try:
        conn.executemany("UPDATE agent_usage SET cost_usd = ?, priced = 1 WHERE message_id = ?", updates)
        conn.executemany(
            "INSERT OR REPLACE INTO model_rates (model, day, rates) VALUES (?, ?, ?)", stored.new
        )
        conn.executemany(
            "UPDATE agent_sessions SET cost_usd = (SELECT sum(cost_usd) FROM agent_usage WHERE session_id = ?1), "
            "unpriced_messages = (SELECT count(*) FROM agent_usage WHERE session_id = ?1 AND cost_usd IS NULL) "
            "WHERE id = ?1",
            [(sid,) for sid in sessions],
        )
        mark_stale(conn, sessions)  # and their totals in the stats, which core.stats.refresh_pending sums
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return sessions
