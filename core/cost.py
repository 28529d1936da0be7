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

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any

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


def _rate(price: tuple[float, tuple[tuple[int, float], ...]], total_input: int) -> float:
    base, tiers = price
    for start, tier_price in reversed(tiers):
        if total_input > start:
            return tier_price
    return base


def prices_version() -> str:
    """Which price data the stored costs were computed with: when it changes they are recomputed."""
    from importlib.metadata import version

    return f"genai-prices {version('genai-prices')}"


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
    day = datetime.fromtimestamp(timestamp_ms / 1000, UTC).strftime("%Y-%m-%d") if timestamp_ms else None
    found = rates(model, day)
    return None if found is None else found.cost(input_tokens, output_tokens, cache_write, cache_read)
