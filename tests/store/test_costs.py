"""Costs kept with the usage rows: every API message priced once from the offline price table (or
from the cost its agent recorded), sessions summed, unknown models counted apart, and everything
priced again when the price data changes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
from threadloom.core.insight import cost
from threadloom.core.store.sql import set_meta

from tests.builders.claude import Transcript
from tests.support import ingest

SID = "c0571111-1111-4222-8333-000000000c01"
SONNET = "claude-sonnet-4-5-20250929"
USAGE = {
    "input_tokens": 12,
    "output_tokens": 700,
    "cache_creation_input_tokens": 3000,
    "cache_read_input_tokens": 40000,
}


def session(root) -> Transcript:
    t = Transcript(root / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID)
    t.user("price this")
    t.assistant("one", model=SONNET, usage=USAGE)
    t.assistant("two", model="my-local-llama", usage=USAGE)
    t.assistant("three", model=SONNET, usage=USAGE)
    t.lines[-1]["costUSD"] = 0.5  # an old Claude Code's own figure
    return t


def test_messages_are_priced_and_sessions_summed(conn, tmp_path):
    session(tmp_path).write()
    ingest(conn, tmp_path / "projects")
    rows = conn.execute(
        "SELECT model, cost_usd, priced, timestamp FROM agent_usage ORDER BY timestamp"
    ).fetchall()
    expected = cost.message_cost(SONNET, 12, 700, 3000, 40000, rows[0][3])
    assert expected is not None and expected > 0
    assert [(m, c) for m, c, _, _ in rows] == [
        (SONNET, pytest.approx(expected)),
        ("my-local-llama", None),
        (SONNET, 0.5),
    ]
    assert all(p == 1 for _, _, p, _ in rows)
    total, unpriced = conn.execute(
        "SELECT cost_usd, unpriced_messages FROM agent_sessions WHERE id = ?", (SID,)
    ).fetchone()
    assert total == pytest.approx(expected + 0.5) and unpriced == 1


def test_an_append_prices_only_what_is_new_without_loading_the_table_again(conn, tmp_path, monkeypatch):
    t = session(tmp_path)
    t.write()
    ingest(conn, tmp_path / "projects")
    looked_up: list[tuple[str | None, str | None]] = []
    real = cost.rates
    monkeypatch.setattr(
        cost, "rates", lambda model, day=None: looked_up.append((model, day)) or real(model, day)
    )
    t.user("and this")
    t.assistant("four", model=SONNET, usage=USAGE)
    t.write()
    ingest(conn, tmp_path / "projects")
    assert looked_up == []  # the model's prices for that day come from the ledger
    assert conn.execute("SELECT count(*) FROM agent_usage WHERE priced = 1").fetchone()[0] == 4
    assert cost.price_pending(conn) == set()  # nothing left: a run with nothing new prices nothing


def test_a_later_day_in_the_same_price_period_is_priced_without_loading_the_table(
    conn, tmp_path, monkeypatch
):
    """Prices change only on the dates the table gives: a new day's messages of a model seen in
    the same period (and of a model the table does not know) are priced from the ledger's rows,
    without the 0.2 s and 80 MB of loading the table. A row kept before periods were stored holds
    for its own day only."""
    t = session(tmp_path)
    t.write()
    ingest(conn, tmp_path / "projects")
    sonnet = cost.rates(SONNET, "2026-03-01")
    assert sonnet is not None
    april = cost.message_cost(SONNET, 12, 700, 3000, 40000, 1775120400000)  # 2026-04-02 09:00 UTC
    loads: list[str] = []
    real = cost._snapshot
    monkeypatch.setattr(cost, "_snapshot", lambda: loads.append("loaded") or real())
    cost.priced_period.cache_clear()  # as a new process starts
    t.user("a month later")
    t.assistant("five", model=SONNET, usage=USAGE)
    t.lines[-1]["timestamp"] = "2026-04-02T09:00:00.000Z"
    t.assistant("six", model="my-local-llama", usage=USAGE)
    t.lines[-1]["timestamp"] = "2026-04-02T09:00:01.000Z"
    t.write()
    ingest(conn, tmp_path / "projects")
    assert loads == []
    rows = dict(conn.execute("SELECT model, cost_usd FROM agent_usage WHERE timestamp >= 1775000000000"))
    assert rows == {
        SONNET: pytest.approx(april),
        "my-local-llama": None,
    }

    # a row of the older kind (the rates alone, for one day) is read for that day, not another
    conn.execute("DELETE FROM model_rates")
    conn.execute(
        "INSERT INTO model_rates (model, day, rates) VALUES (?, '2026-03-01', ?)",
        (SONNET, json.dumps(sonnet.as_list())),
    )
    cost.priced_period.cache_clear()
    stored = cost._StoredRates(conn)
    assert stored.get(SONNET, "2026-03-01") == sonnet and loads == []
    assert stored.get(SONNET, "2026-03-02") == sonnet and loads == ["loaded"]


def test_new_price_data_prices_everything_again(conn, tmp_path):
    session(tmp_path).write()
    ingest(conn, tmp_path / "projects")
    conn.execute(
        "UPDATE agent_usage SET cost_usd = 99 WHERE cost_usd IS NOT NULL AND recorded_cost_usd IS NULL"
    )
    set_meta(conn, cost.PRICES_KEY, "genai-prices 0.0.1")
    assert cost.price_pending(conn) == {SID}  # its three API messages priced again
    assert conn.execute("SELECT count(*) FROM agent_usage WHERE cost_usd = 99").fetchone()[0] == 0


def test_a_damaged_price_row_is_looked_up_again_and_replaced(conn, tmp_path):
    """`model_rates` is threadloom's own cache, but a database can be damaged or edited: a row that
    cannot be read is as if it were not there (priced from the table, the row written anew)."""
    session(tmp_path).write()
    ingest(conn, tmp_path / "projects")
    expected = conn.execute("SELECT sum(cost_usd) FROM agent_usage").fetchone()[0]
    conn.execute("UPDATE model_rates SET rates = 'not json' WHERE model = ?", (SONNET,))
    conn.execute('UPDATE model_rates SET rates = \'{"rates": 7, "until": []}\' WHERE model != ?', (SONNET,))
    conn.execute("UPDATE agent_usage SET priced = 0, cost_usd = NULL")
    cost.priced_period.cache_clear()
    assert cost.price_pending(conn) == {SID}
    assert conn.execute("SELECT sum(cost_usd) FROM agent_usage").fetchone()[0] == pytest.approx(expected)
    rows = dict(conn.execute("SELECT model, rates FROM model_rates"))
    assert json.loads(rows[SONNET])["rates"][0] == "claude-sonnet-4-5"


def test_an_ingest_looks_prices_up_in_a_process_of_its_own(tmp_path):
    """The price table, once imported, stays for a process's life (~30 MB): an ingest whose
    process has not loaded it asks a process of its own, and prices as the table does here."""
    import subprocess
    import sys

    session(tmp_path).write()
    db = tmp_path / "t.db"
    script = (
        "import sys; from pathlib import Path; from threadloom.core.ingest.update import update; "
        f"update(Path({str(db)!r}), [Path({str(tmp_path / 'projects')!r})], include_defaults=False, "
        "remember=False); print('genai_prices.data' in sys.modules)"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}  # no periods known yet
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]  # never loaded in the ingest's process
    import sqlite3

    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT model, cost_usd, timestamp FROM agent_usage ORDER BY timestamp"
        ).fetchall()
        periods = conn.execute("SELECT count(*) FROM model_rates").fetchone()[0]
    expected = cost.message_cost(SONNET, 12, 700, 3000, 40000, rows[0][2])
    assert [(m, c) for m, c, _ in rows] == [
        (SONNET, pytest.approx(expected)),
        ("my-local-llama", None),
        (SONNET, 0.5),
    ]
    assert periods == 2  # Sonnet's period and the unknown model's, kept for the next run
    assert cost.periods_for(
        [(SONNET, "2026-03-01"), (SONNET, "2026-03-02"), ("my-local-llama", "2026-03-01")]
    )[1:] == [("my-local-llama", "", None, None)]


def test_the_price_data_is_named_by_its_version_not_by_where_it_is_installed(tmp_path, monkeypatch):
    """Two installs of one genai-prices (pipx's and a project's venv, their files of different
    times) that share a database: neither prices every message again after the other ingests.
    A new version does; an install without its metadata folder is named by its data file."""
    import importlib.machinery
    import importlib.util
    import os

    def install(where: str, version: str | None, mtime: int) -> None:
        package = tmp_path / where / "genai_prices"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data.py").write_text("data = 1\n")
        os.utime(package / "data.py", (mtime, mtime))
        if version:
            (tmp_path / where / f"genai_prices-{version}.dist-info").mkdir()

    def version_in(where: str) -> str:
        origin = str(tmp_path / where / "genai_prices" / "__init__.py")
        spec = importlib.machinery.ModuleSpec("genai_prices", None, origin=origin)
        monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
        cost.prices_version.cache_clear()
        return cost.prices_version()

    install("pipx", "0.2.3", 1_700_000_000)
    install("venv", "0.2.3", 1_750_000_000)
    install("newer", "0.2.4", 1_700_000_000)
    install("bare", None, 1_700_000_000)
    install("upgraded", "0.2.4", 1_700_000_000)
    (tmp_path / "upgraded" / "genai_prices-0.2.3.dist-info").mkdir()  # left behind: which one is it?
    try:
        assert version_in("pipx") == version_in("venv") == f"genai-prices 0.2.3 {cost.RESOLVER}"
        assert version_in("newer") != version_in("pipx")
        assert (
            version_in("bare") == version_in("upgraded") == f"genai-prices data 9:1700000000 {cost.RESOLVER}"
        )
    finally:
        cost.prices_version.cache_clear()


PRICING = """
import sys
from pathlib import Path
from threadloom.core.insight import cost
from threadloom.core.ingest.update import update
asked, started = [], []
look_up, start = cost._periods, cost._start_lookup
cost._periods = lambda pairs: asked.append(pairs) or look_up(pairs)



def counted() -> None:  # each lookup process started
    before = len(cost._started)
    start()
    started.append(len(cost._started) - before)


cost._start_lookup = counted
update(Path(sys.argv[1]), [Path(sys.argv[2])], include_defaults=False, remember=False, index=False)
print(sum(started), sorted({model for pairs in asked for model, _ in pairs}), "genai_prices.data" in sys.modules)
"""


def test_a_new_archive_prices_the_models_another_looked_up_without_the_table(tmp_path):
    """The periods an ingest looks up are kept in the user's cache folder: a new archive (its own
    --db, a rebuild, the demo) prices those models without a lookup process (0.25 s of CPU, the
    table's ~80 MB); a model or a day they do not cover is looked up and added. A cache of another
    table, or one that cannot be read, is as none and is written anew."""
    session(tmp_path).write()
    cache = tmp_path / "cache" / "threadloom" / "prices.json"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def priced(name: str) -> tuple[str, list[tuple[str, float | None, int]]]:
        db = tmp_path / f"{name}.db"
        argv = [sys.executable, "-c", PRICING, str(db), str(tmp_path / "projects")]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        import sqlite3

        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT model, cost_usd, timestamp FROM agent_usage ORDER BY timestamp")
            return done.stdout.strip(), rows.fetchall()

    said, first = priced("first")
    assert said == f"1 ['{SONNET}', 'my-local-llama'] False"  # started ahead and asked
    assert first[0][1] == pytest.approx(cost.message_cost(SONNET, 12, 700, 3000, 40000, first[0][2]))
    kept = json.loads(cache.read_text())
    assert kept["version"] == cost.prices_version()
    assert sorted(p[0] for p in kept["periods"]) == [SONNET, "my-local-llama"]
    assert priced("second") == ("0 [] False", first)  # no process started, nothing asked

    # a message of a model the cache has not seen: that model alone is looked up, and kept
    t = session(tmp_path)
    t.assistant("seven", model="claude-opus-4-5", usage=USAGE)
    t.write()
    said, third = priced("third")
    assert said == "1 ['claude-opus-4-5'] False" and third[:3] == first
    assert third[3][1] == pytest.approx(
        cost.message_cost("claude-opus-4-5", 12, 700, 3000, 40000, third[3][2])
    )
    assert priced("fourth") == ("0 [] False", third)

    # a FIFO where the cache goes (nothing ever writes to it) is not waited on: a file replaces it
    cache.unlink()
    os.mkfifo(cache)
    said, rows = priced("beside-a-fifo")
    assert said.startswith("1 [") and rows == third and stat.S_ISFIFO(cache.lstat().st_mode) is False
    assert json.loads(cache.read_text())["version"] == cost.prices_version()  # replaced by the file
    # a cache that cannot be read, or of another table, is looked up again and replaced
    for damaged in (b"\x00 not json", json.dumps({**kept, "periods": [["x", 1, None, 7]]}).encode(),
                    json.dumps({**kept, "version": "genai-prices 0.0.1 r2"}).encode()):  # fmt: skip
        cache.write_bytes(damaged)
        said, rows = priced(f"again-{len(damaged)}")
        assert said.startswith("1 [") and rows == third
        assert json.loads(cache.read_text())["version"] == cost.prices_version()


STOPPED = """
import sys
from pathlib import Path
from threadloom.core.insight import cost
from threadloom.core.ingest.update import update
started = []
start = cost._start_lookup


def kept() -> None:
    start()
    started.extend(cost._started)


cost._start_lookup = kept
update(Path(sys.argv[1]), [Path(sys.argv[2])], include_defaults=False, remember=False, index=False)
print([p.returncode for p in started])
"""


def test_a_lookup_started_ahead_and_not_needed_is_stopped_not_waited_for(tmp_path):
    """A first load starts the price lookup ahead; with no message to price (no usage, or every cost
    recorded by its agent) it is stopped at once rather than left to load the table (0.19 s)."""
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID)
    t.user("nothing to price here")
    t.add({"type": "custom-title", "customTitle": "No usage at all"})
    t.write()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}  # no periods known: started ahead
    argv = [sys.executable, "-c", STOPPED, str(tmp_path / "t.db"), str(tmp_path / "projects")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[-9]"]  # killed (SIGKILL), not its own exit once the table was loaded


def test_a_negative_token_count_is_no_count(conn, tmp_path):
    """A log's usage is anyone's: -100 tokens would take 100 off the session's and price it below
    nothing. It counts as none; the record itself is kept as written."""
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID)
    t.user("price this")
    odd = {"input_tokens": -100, "output_tokens": -100, "cache_creation_input_tokens": -1.5e3}
    t.assistant("odd", model=SONNET, usage={**odd, "cache_read_input_tokens": -100})
    t.assistant("fine", model=SONNET, usage=USAGE)
    t.write()
    ingest(conn, tmp_path / "projects")
    rows = conn.execute(
        "SELECT input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, cost_usd FROM agent_usage "
        "ORDER BY timestamp"
    ).fetchall()
    assert rows[0] == (0, 0, 0, 0, 0.0)
    total = conn.execute("SELECT cost_usd, output_tokens FROM agent_sessions WHERE id = ?", (SID,)).fetchone()
    assert total[0] == pytest.approx(rows[1][4]) and total[0] > 0 and total[1] == 700
    stored = b"".join(r[0] for r in conn.execute("SELECT raw FROM entries ORDER BY id"))
    assert b"-100" in stored and b"-1500.0" in stored  # kept as written


def test_cache_writes_kept_an_hour_are_priced_at_their_own_rate(conn, tmp_path):
    """Claude Code 2.x splits a message's cache writes by how long the cache is kept: an hour's cost
    twice the input price where five minutes' cost 1.25 times (a real 2.1 session was priced 32 %
    low). A split that claims more than the writes counted in all is held to them."""
    opus = "claude-opus-4-7"
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID)
    t.user("price this")
    split = {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 3000}
    t.assistant(
        "hour", model=opus, usage={**USAGE, "cache_creation_input_tokens": 4000, "cache_creation": split}
    )
    t.assistant("five", model=opus, usage={**USAGE, "cache_creation_input_tokens": 4000})
    too_many = {"ephemeral_1h_input_tokens": 9e9}
    t.assistant(
        "odd", model=opus, usage={**USAGE, "cache_creation_input_tokens": 4000, "cache_creation": too_many}
    )
    t.write()
    ingest(conn, tmp_path / "projects")
    rows = conn.execute(
        "SELECT cache_creation_tokens, cache_write_1h_tokens, cost_usd, timestamp FROM agent_usage ORDER BY timestamp"
    ).fetchall()
    assert [r[:2] for r in rows] == [(4000, 3000), (4000, 0), (4000, 4000)]
    when = rows[0][3]
    five = cost.message_cost(opus, 12, 700, 4000, 40000, when)
    hour = cost.message_cost(opus, 12, 700, 4000, 40000, when, 3000)
    all_hour = cost.message_cost(opus, 12, 700, 4000, 40000, when, 4000)
    assert five is not None and hour is not None and all_hour is not None
    found = cost.rates(opus, "2026-05-01")
    assert found is not None and found.cache_write_1h is not None
    per_token = (found.cache_write_1h[0] - found.cache_write[0]) / 1e6  # $10 against $6.25 a million
    assert hour - five == pytest.approx(3000 * per_token) and per_token > 0
    assert [r[2] for r in rows] == [pytest.approx(hour), pytest.approx(five), pytest.approx(all_hour)]


def test_the_searches_a_message_ran_are_priced_beside_its_tokens(conn, tmp_path):
    """Claude Code's web searches run at Anthropic ($10 a thousand), counted in the message's
    `server_tool_use`: a research session's searches were left out of its cost."""
    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID)
    t.user("look it up")
    t.assistant("found", model=SONNET, usage={**USAGE, "server_tool_use": {"web_search_requests": 4}})
    t.assistant("odd", model=SONNET, usage={**USAGE, "server_tool_use": {"web_search_requests": "many"}})
    t.write()
    ingest(conn, tmp_path / "projects")
    rows = conn.execute(
        "SELECT web_searches, cost_usd, timestamp FROM agent_usage ORDER BY timestamp"
    ).fetchall()
    assert [r[0] for r in rows] == [4, 0]
    plain = cost.message_cost(SONNET, 12, 700, 3000, 40000, rows[0][2])
    assert plain is not None and rows[0][1] == pytest.approx(plain + 4 * 10 / 1000)
    assert rows[1][1] == pytest.approx(plain)
