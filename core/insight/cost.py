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
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..store.sql import get_meta, set_meta, transaction
from .stats import mark_since, quarter_hour

PRICES_KEY = "prices_version"  # ledger_meta: the price data the stored costs come from
# how a recorded model name is found in the table: a change prices every message again (r2: names
# prefixed with their provider, as Aider writes them; r3: an hour's cache writes at their own price, and
# the searches a provider ran for a message)
RESOLVER = "r3"

# the table's token prices, in USD per million tokens
_FIELDS = ("input_mtok", "output_mtok", "cache_write_mtok", "cache_read_mtok", "cache_write_1h_mtok")
SEARCHES_FIELD = "web_searches_kcount"  # USD per thousand searches the provider ran (Anthropic's web search)

Price = tuple[float, tuple[tuple[int, float], ...]]


@dataclass(frozen=True, slots=True)
class Rates:
    """A model's prices in USD per million tokens, each as (base, ((start, price), ...)): past a
    tier's start in total input tokens, every token of the request costs the tier's price. A cache
    write kept an hour has a price of its own where the table gives one (Anthropic's: twice the
    input's, where five minutes' cost 1.25 times), else the cache write's; a search the provider ran
    for the message (Anthropic's web search) its price apiece, given per thousand."""

    model_id: str
    provider_id: str
    input: Price
    output: Price
    cache_write: Price
    cache_read: Price
    cache_write_1h: Price | None = None
    searches: float = 0.0  # USD per thousand searches

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        cache_write: int,
        cache_read: int,
        cache_write_1h: int = 0,
        searches: int = 0,
    ) -> float:
        """`cache_write_1h`: of the `cache_write` tokens, those kept an hour; `searches`: the
        searches the provider ran for the message."""
        total_input = input_tokens + cache_write + cache_read
        hour = min(max(cache_write_1h, 0), cache_write)
        tokens = (
            input_tokens * _rate(self.input, total_input)
            + output_tokens * _rate(self.output, total_input)
            + (cache_write - hour) * _rate(self.cache_write, total_input)
            + hour * _rate(self.cache_write_1h or self.cache_write, total_input)
            + cache_read * _rate(self.cache_read, total_input)
        ) / 1_000_000
        return tokens + max(searches, 0) * self.searches / 1_000

    def as_list(self) -> list[Any]:
        return list(astuple(self))

    @classmethod
    def from_list(cls, data: list[Any] | None) -> Rates | None:
        """Rates from `as_list`'s list; one written before the hour's cache had a price holds four."""
        if data is None:
            return None
        model_id, provider_id, *prices = data
        if len(prices) not in (4, 5, 6):
            raise ValueError(f"{len(prices)} prices, not 4 to 6")
        inp, out, write, read, *later = prices
        hour = later[0] if later else None
        searches = float(later[1]) if len(later) > 1 else 0.0
        return cls(
            model_id,
            provider_id,
            _from_list(inp),
            _from_list(out),
            _from_list(write),
            _from_list(read),
            None if hour is None else _from_list(hour),
            searches,
        )


def _from_list(price: list[Any]) -> Price:
    base, tiers = price
    return (float(base), tuple((int(start), float(rate)) for start, rate in tiers))


def _rate(price: Price, total_input: int) -> float:
    base, tiers = price
    for start, tier_price in reversed(tiers):
        if total_input > start:
            return tier_price
    return base


@lru_cache(maxsize=1)
def prices_version() -> str:
    """Which price data the stored costs were computed with: when it changes they are recomputed.

    The installed genai-prices' version, as the folder of its metadata names it (a listing: the
    package's own `__version__` asks importlib.metadata, 25 ms of an ingest with nothing new).
    Two installs of one version (pipx and a project's venv) share a database without pricing
    every message again each time the other one ingests, as their files' times made them. The
    bundled data file's size and time stand in for an install without that folder (or with two)."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("genai_prices")
    if spec is None or spec.origin is None:
        return "genai-prices missing"
    package = Path(spec.origin).parent
    with os.scandir(package.parent) as entries:
        found = [
            e.name for e in entries if e.name.startswith("genai_prices-") and e.name.endswith(".dist-info")
        ]
    if len(found) == 1:  # two (an upgrade left one behind) cannot say which is installed
        return f"genai-prices {found[0][len('genai_prices-') : -len('.dist-info')]} {RESOLVER}"
    data = (package / "data.py").stat()
    return f"genai-prices data {data.st_size}:{int(data.st_mtime)} {RESOLVER}"


def _snapshot() -> Any:
    """genai-prices' whole table: 0.2 s and 80 MB to load, so loaded only for a model or a price
    period the ledger's `model_rates` does not hold yet."""
    from genai_prices import data_snapshot

    return data_snapshot.get_snapshot()


def rates(model: str | None, day: str | None = None) -> Rates | None:
    """The prices of `model` on `day` (YYYY-MM-DD, UTC; today when None), or None when the table
    does not know the model."""
    return priced_period(model, day)[0] if model else None


@lru_cache(maxsize=4096)
def priced_period(model: str, day: str | None = None) -> tuple[Rates | None, str, str | None]:
    """`model`'s prices on `day` and the days they hold for: (rates, first day, the day after the
    last). A price changes only on the start dates the table gives the model, so every day between
    two of them has the same prices; "" and None stand for no start and no end."""
    try:
        provider, info = _find(_snapshot(), model)
    except LookupError:
        return None, "", None  # unknown on every day, until the price data changes
    when = datetime.fromisoformat(day).replace(tzinfo=UTC) if day else datetime.now(UTC)
    prices = info.get_prices(when)
    inp, out, write, read, write_1h = (getattr(prices, name, None) for name in _FIELDS)
    # a model priced with no cache write (or read) rate bills those tokens as plain input
    found = Rates(
        info.id,
        provider.id,
        _price(inp),
        _price(out),
        _price(write if write is not None else inp),
        _price(read if read is not None else inp),
        None if write_1h is None else _price(write_1h),
        _price(getattr(prices, SEARCHES_FIELD, None))[0],  # a tiered price's base (none is tiered today)
    )
    conditions = info.prices if isinstance(info.prices, list) else []
    starts = sorted(
        {start.isoformat() for c in conditions if (start := getattr(c.constraint, "start_date", None))}
    )
    today = when.date().isoformat()
    first = max((s for s in starts if s <= today), default="")
    until = min((s for s in starts if s > today), default=None)
    return found, first, until


def _find(snapshot: Any, model: str) -> tuple[Any, Any]:
    """The table's provider and model for a model name as an agent recorded it. Aider (through
    LiteLLM) writes `provider/model`, `openrouter/anthropic/claude-3.5-sonnet`: a name the table
    does not know whole is looked up as that provider's model, then as the model alone."""
    found: tuple[Any, Any]
    try:
        found = snapshot.find_provider_model(model, None, None, None)
        return found
    except LookupError:
        pass
    provider_id, _, rest = model.partition("/")
    for ref, provider in ((rest, provider_id), (rest, None)):
        if not ref:
            break
        try:
            found = snapshot.find_provider_model(ref, None, provider, None)
            return found
        except LookupError:
            continue
    raise LookupError(model)


def _price(value: Any) -> Price:
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
    cache_write_1h: int = 0,
    searches: int = 0,
) -> float | None:
    """One API message's cost in USD (None: a model the price table does not know)."""
    found = rates(model, _day(timestamp_ms))
    if found is None:
        return None
    return found.cost(input_tokens, output_tokens, cache_write, cache_read, cache_write_1h, searches)


def _day(timestamp_ms: int | None) -> str:
    moment = datetime.fromtimestamp(timestamp_ms / 1000, UTC) if timestamp_ms else datetime.now(UTC)
    return moment.strftime("%Y-%m-%d")


class _StoredRates:
    """`rates` through the ledger's `model_rates` table, one row per model and price period (its
    first day, and in `rates` the day it ends): a run that prices new messages of a model seen
    before, on any day of a period seen before, reads a row, and loads the price table only for
    what is new."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.periods: dict[str, list[tuple[str, str | None, Rates | None]]] = {}
        self.new: list[tuple[str, str, str]] = []

    def get(self, model: str | None, day: str) -> Rates | None:
        if not model:
            return None
        held = self.held(model, day)
        if held is None or isinstance(held, Rates):
            return held
        found, first, until = priced_period(model, day)
        self.add(model, first, until, found)
        return found

    def held(self, model: str, day: str) -> Rates | None | object:
        """`model`'s prices on `day` as the ledger holds them (None: a model the table does not
        know), or MISSING when its rows do not cover that day."""
        periods = self.periods.get(model)
        if periods is None:
            rows = self.conn.execute("SELECT day, rates FROM model_rates WHERE model = ?", (model,))
            read = (_stored_period(first, text) for first, text in rows)
            periods = self.periods[model] = [period for period in read if period is not None]
        for first, until, found in periods:
            if first <= day and (until is None or day < until):
                return found
        return MISSING

    def add(self, model: str, first: str, until: str | None, found: Rates | None) -> None:
        """A price period looked up in the table: held from now on, and written with the prices."""
        self.periods.setdefault(model, []).append((first, until, found))
        stored = {"rates": found.as_list() if found is not None else None, "until": until}
        self.new.append((model, first, json.dumps(stored)))


MISSING = object()  # a day the ledger's price rows do not cover (`_StoredRates.held`)
Period = tuple[str, str, str | None, list[Any] | None]  # model, first day, day after the last, rates


def periods_for(pairs: list[tuple[str, str]]) -> list[Period]:
    """The price periods that hold these (model, day) pairs, found in the table, each once."""
    covered: dict[str, list[tuple[str, str | None]]] = {}
    periods: list[Period] = []
    for model, day in sorted(set(pairs)):
        if any(first <= day and (until is None or day < until) for first, until in covered.get(model, ())):
            continue
        found, first, until = priced_period(model, day)
        covered.setdefault(model, []).append((first, until))
        periods.append((model, first, until, found.as_list() if found is not None else None))
    return periods


PERIODS_MAIN = "from threadloom.core.insight.cost import periods_main; periods_main()"


def periods_main() -> None:
    """A process of its own for `periods_for` (PERIODS_MAIN): the table loaded first, then pairs
    as JSON on stdin, periods out (nothing in: nothing asked, as a prefetch no ingest used)."""
    import sys

    import orjson

    _snapshot()
    asked = sys.stdin.buffer.read()
    if asked:
        pairs = [(str(model), str(day)) for model, day in orjson.loads(asked)]
        sys.stdout.buffer.write(orjson.dumps(periods_for(pairs)))


_started: list[Any] = []  # a lookup process started ahead (`prefetch`), until it is used or dropped


def prefetch() -> None:
    """Start the lookup process now, so that it loads the table on another core while a large
    ingest reads its logs (0.3 s off a cold ingest's time on 2 cores); `price_pending` asks it, and
    `drop_prefetch` ends it when no price was looked up. Not when this user's archives have looked
    prices up in this table before (`known_periods`): the models an archive meets are mostly those."""
    if not known_periods():
        _start_lookup()


def _start_lookup() -> None:
    import contextlib
    import subprocess
    import sys

    if _started or "genai_prices.data" in sys.modules:
        return
    with contextlib.suppress(OSError):  # none: looked up in process, as before
        _started.append(
            subprocess.Popen(
                [sys.executable, "-P", "-c", PERIODS_MAIN],  # -P: nothing imported from the folder it runs in
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        )


def drop_prefetch() -> None:
    """End a lookup process started ahead that no ingest used: stopped, not waited for (it only
    loads the table; a first load with no priced message waited 0.19 s for it to finish)."""
    import contextlib

    while _started:
        process = _started.pop()
        with contextlib.suppress(OSError):
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()


def _periods(pairs: list[tuple[str, str]]) -> list[Period]:
    """`periods_for`, in a process of its own unless the table is loaded here already: once
    imported, genai-prices' table stays for the process's life (~30 MB of Python objects), a fifth
    of a cold ingest's peak memory, for prices an ingest needs once. In process when that process
    cannot run (as before)."""
    import subprocess
    import sys

    import orjson

    if "genai_prices.data" in sys.modules:
        return periods_for(pairs)
    _start_lookup()
    if not _started:
        return periods_for(pairs)
    process = _started.pop()
    try:
        out, _ = process.communicate(orjson.dumps(sorted(set(pairs))), timeout=120)
        if process.returncode != 0:
            raise subprocess.SubprocessError(f"exit {process.returncode}")
        return [(str(m), str(f), u, r) for m, f, u, r in orjson.loads(out)]
    except (OSError, subprocess.SubprocessError, orjson.JSONDecodeError, ValueError, TypeError):
        process.kill()
        process.wait()
        return periods_for(pairs)


# The price periods this user's archives looked up, in the user's cache folder: a new archive (a
# `--db` of its own, a rebuild, the demo) prices the models met before without loading the table
# (0.25 s of CPU and ~80 MB in a process of its own). Named by the table's version; a file of
# another version, or one that cannot be read, is as none (and replaced by the next lookup).
PERIODS_CACHE = "prices.json"
PERIODS_CACHE_FORMAT = "threadloom-price-periods"
PERIODS_CACHE_MAX_BYTES = 4 << 20  # more is not a list of periods this writes: left unread


def _periods_cache_path() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("threadloom", appauthor=False)) / PERIODS_CACHE


def known_periods() -> list[Period]:
    """The periods in this user's cache for the installed table (none when it holds another's)."""
    import orjson

    from ..adapters.base import read_regular

    try:
        text = read_regular(_periods_cache_path(), PERIODS_CACHE_MAX_BYTES + 1)  # never a FIFO's wait
        if len(text) > PERIODS_CACHE_MAX_BYTES:
            return []
        data = orjson.loads(text)
        if data.get("format") != PERIODS_CACHE_FORMAT or data.get("version") != prices_version():
            return []
        periods: list[Period] = []
        for model, first, until, listed in data["periods"]:
            if not (isinstance(model, str) and isinstance(first, str) and isinstance(until, str | None)):
                return []
            Rates.from_list(listed)  # raises on what no lookup wrote
            periods.append((model, first, until, listed))
        return periods
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return []


def _remember_periods(known: list[Period], found: list[Period]) -> None:
    """`found` added to the cache (written whole, then renamed over it: a reader sees the old list
    or the new one). Best effort: a cache that cannot be written is looked up again next time."""
    import contextlib
    import os
    import tempfile

    import orjson

    periods = {(m, f): (m, f, u, r) for m, f, u, r in [*known, *found]}
    data = {"format": PERIODS_CACHE_FORMAT, "version": prices_version(), "periods": sorted(periods.values())}
    with contextlib.suppress(OSError):
        path = _periods_cache_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".prices-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(orjson.dumps(data))
            os.replace(temp, path)
        except OSError:
            os.unlink(temp)
            raise


def _looked_up(pairs: list[tuple[str, str]]) -> list[Period]:
    """The periods that hold these (model, day) pairs: from the cache when it has them, the rest
    from the table (`_periods`), then kept in the cache. In the table's order (by model, then
    day), as a lookup of them all gives them: the ledger's rows come out the same either way."""
    known = known_periods()
    found: dict[tuple[str, str], Period] = {}
    left: list[tuple[str, str]] = []
    for model, day in pairs:
        period = next(
            (p for p in known if p[0] == model and p[1] <= day and (p[2] is None or day < p[2])), None
        )
        if period is None:
            left.append((model, day))
        else:
            found[(model, period[1])] = period
    if left:
        new = _periods(left)
        found.update(((p[0], p[1]), p) for p in new)
        if new:
            _remember_periods(known, new)
    return sorted(found.values(), key=lambda period: (period[0], period[1]))


def _stored_period(first: str, text: str) -> tuple[str, str | None, Rates | None] | None:
    """A `model_rates` row as (first day, day after the last, rates), or None for a row that
    cannot be read (it is then looked up again and replaced). A row written before periods were
    kept holds the rates alone, for its one day."""
    try:
        data = json.loads(text)
        if isinstance(data, dict):
            until = data.get("until")
            return first, until if isinstance(until, str) else None, Rates.from_list(data.get("rates"))
        next_day = (datetime.fromisoformat(first) + timedelta(days=1)).strftime("%Y-%m-%d")
        return first, next_day, Rates.from_list(data)
    except (ValueError, TypeError):
        return None


def price_pending(conn: sqlite3.Connection) -> set[str]:
    """Price every API message not priced yet (new, grown, or priced with older price data) and
    bring their sessions' costs up to date; returns those sessions (what else follows their costs,
    the signals' dead ends, is recomputed for them). A message whose agent recorded its cost keeps
    that cost."""
    version = prices_version()
    if get_meta(conn, PRICES_KEY) != version:
        with transaction(conn):
            conn.execute("UPDATE agent_usage SET priced = 0 WHERE priced = 1")
            conn.execute("DELETE FROM model_rates")
            set_meta(conn, PRICES_KEY, version)
    rows = conn.execute(
        "SELECT message_id, session_id, model, timestamp, input_tokens, output_tokens, cache_creation_tokens, "
        "cache_read_tokens, recorded_cost_usd, cache_write_1h_tokens, web_searches FROM agent_usage "
        "WHERE priced = 0"
    ).fetchall()
    if not rows:
        return set()
    stored = _StoredRates(conn)
    # the days the ledger's price rows do not cover, looked up in the table at once
    missing = {
        (model, day)
        for _, _, model, ts, *_, recorded, _, _ in rows
        if recorded is None and model and stored.held(model, day := _day(ts)) is MISSING
    }
    if missing:
        for model, first, until, listed in _looked_up(sorted(missing)):
            stored.add(model, first, until, Rates.from_list(listed))
    updates: list[tuple[float | None, str]] = []
    sessions: set[str] = set()
    since: dict[str, int | None] = {}  # the quarter hour each session's stats change from (None: all)
    for message_id, session_id, model, ts, inp, out, write, read, recorded, write_1h, searches in rows:
        bucket = quarter_hour(ts) if ts is not None else None
        known = since.get(session_id, bucket)
        since[session_id] = None if bucket is None or known is None else min(bucket, known)
        if recorded is not None:
            cost: float | None = recorded
        else:
            found = stored.get(model, _day(ts))
            cost = None if found is None else found.cost(inp, out, write, read, write_1h, searches)
        updates.append((cost, message_id))
        sessions.add(session_id)
    with transaction(conn):
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
        mark_since(
            conn, since
        )  # and their totals in the stats, which core.insight.stats.refresh_pending sums
        # and their signals (dead ends are priced), found next by the ingest or by the next run
        conn.executemany(
            "INSERT OR IGNORE INTO derived_pending (kind, session_id) VALUES ('signals', ?)",
            [(sid,) for sid in sessions],
        )
    return sessions
