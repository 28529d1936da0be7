"""`threadloom mcp` started as a process and driven by the MCP SDK's own client over stdio: every tool
called, answers kept within their budget and paged past it, errors that say what to do, reads while
an ingest holds the archive, and memory written by agents and people alike."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from threadloom.core.serve.mcp_server import DEFAULT_TOKENS, MIN_TOKENS, tokens_of
from threadloom.core.store.writer_lock import writer_lock

from tests.builders.claude import Transcript, tool_use
from tests.support import copy_database, isolated, run

ROOT = Path(__file__).resolve().parents[2]
API = "a1000000-0000-4000-8000-0000000000a1"
TOOLS = {
    "search",
    "recent_sessions",
    "session_outline",
    "get_turn",
    "file_history",
    "signals",
    "stats",
    "remember",
    "recall",
    "tag",
    "context",
}


def write_archive(root: Path) -> Path:
    projects = root / "projects"
    t = Transcript(projects / "-srv-api" / f"{API}.jsonl", API, cwd="/srv/api")
    t.user("Make the dates timezone aware")
    t.assistant("Reading it", tools=[tool_use("r1", "Read", file_path="/srv/api/dates.py")])
    t.tool_result("r1", "def now():\n    return datetime.now()\n" * 400)  # a long output: cut in answers
    t.assistant(
        "Editing",
        tools=[
            tool_use(
                "e1",
                "Edit",
                file_path="/srv/api/dates.py",
                old_string="datetime.now()",
                new_string="datetime.now(UTC)",
            )
        ],  # fmt: skip
    )
    t.tool_result("e1", "ok")
    t.assistant("Dates are UTC now.")
    for n in range(30):  # a long session: its outline pages
        t.user(f"step {n}: run the timezone tests again and explain the result in detail")
        t.assistant(f"step {n} done: all timezone tests pass " + "and the offsets hold " * 20)
    t.write()
    for n in range(14):  # many sessions: recent_sessions pages
        sid = f"c{n:07d}-0000-4000-8000-000000000000"
        s = Transcript(projects / "-srv-web" / f"{sid}.jsonl", sid, cwd="/srv/web")
        s.user(f"web task {n}: " + "bundle the assets and measure them " * 30)
        s.assistant("Bundled.")
        s.write()
    return projects


def ingested(root: Path, **env_extra: str) -> Path:
    """`write_archive` under `root`, ingested by a `threadloom ingest` process into root/t.db."""
    projects = write_archive(root)
    path = root / "t.db"
    res = run("ingest", "--db", str(path), "--only", "--source", str(projects), "-q", env_extra=env_extra)
    assert res.returncode == 0, res.stderr
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The archive ingested once a module (and worker), in a home of its own as each test's is
    (conftest.py `_isolated_home`): each test reads and writes a copy of it (`archive`)."""
    root = tmp_path_factory.mktemp("mcp-archive")
    return ingested(root, **isolated(root))


@pytest.fixture
def archive(tmp_path: Path, built: Path) -> Path:
    """A copy of the module's archive, this test's own."""
    return copy_database(built, tmp_path / "t.db")


@pytest.fixture
def own_archive(tmp_path: Path) -> Path:
    """The archive ingested from this test's own folder (tmp_path/projects), for a test that adds
    sessions there and ingests them again: the copy's database names the module's folder."""
    return ingested(tmp_path)


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "HOME": str(tmp_path / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "home" / ".claude"),
        "CODEX_HOME": str(tmp_path / "home" / ".codex"),
        "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config"),
        "PYTHONPATH": str(ROOT),
        **extra,
    }


@asynccontextmanager
async def server(db: Path, **extra: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "threadloom.core.cli", "mcp", "--db", str(db)],
        env=env(db.parent, **extra),
        cwd=str(ROOT),
    )
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def reader(tmp_path_factory: pytest.TempPathFactory, built: Path) -> AsyncIterator[Client]:
    """One server, a module's, on a copy of the module's archive, for the tests that only read
    (they write nothing another test reads: a call refused changes nothing). It is started and
    stopped by a task of its own: the client's task group is left in the task that entered it,
    where pytest-asyncio sets a fixture up and tears it down in two."""
    db = copy_database(built, tmp_path_factory.mktemp("mcp-reader") / "t.db")
    started: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()

    async def hold() -> None:
        async with server(db) as client:
            started.set_result(client)
            await stop.wait()

    task = asyncio.create_task(hold())
    await asyncio.wait([started, task], return_when=asyncio.FIRST_COMPLETED)
    if task.done():  # the server did not start: its error
        task.result()
    yield started.result()
    stop.set()
    await task


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, text
    return json.loads(text)


async def refused(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error, text
    assert "Traceback" not in text
    return text


async def test_every_tool_answers_within_its_budget(archive: Path) -> None:
    async with server(archive) as client:
        listed = await client.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        assert all(t.description and len(t.description) > 80 for t in listed.tools)
        sizes: dict[str, int] = {}

        async def answer(tool: str, **args: Any) -> dict[str, Any]:
            result = await client.call_tool(tool, args)
            text = result.content[0].text  # type: ignore[union-attr]
            assert not result.is_error, text
            sizes[tool] = max(sizes.get(tool, 0), tokens_of(text))
            assert tokens_of(text) <= args.get("max_tokens", DEFAULT_TOKENS), (tool, tokens_of(text))
            return json.loads(text)

        found = await answer("search", query="timezone aware")
        assert found["hits"][0]["session_id"] == API and found["hits"][0]["show"] == f"threadloom show {API}"
        assert found["hits"][0]["at"] == "#0" and found["mode"] == "hybrid"
        by_meaning = await answer("search", query="clock offsets of stored dates", mode="meaning")
        assert by_meaning["hits"][0]["session_id"] == API and by_meaning["hits"][0]["why"] == "meaning"
        context = await answer("context", task="make stored dates timezone aware", max_tokens=600)
        assert context["turns"] and context["turns"][0]["session_id"] == API
        assert context["budget"] == 600 and context["turns"][0]["show"].startswith(f"threadloom show '{API}#")

        recent = await answer("recent_sessions", project="api")
        assert [s["id"] for s in recent["sessions"]] == [API]
        assert recent["sessions"][0]["show"] == f"threadloom show {API}"

        outline = await answer("session_outline", session=API[:8])
        first = outline["turns"][0]
        assert first["turn"] == "#0" and first["prompt"] == "Make the dates timezone aware"
        assert first["tool_calls"] == 2 and first["files_changed"] == ["/srv/api/dates.py +1 -1"]
        assert outline["total"] == 31 and outline["next_cursor"]  # 31 turns do not fit in 2,000 tokens

        turn = await answer("get_turn", session=API[:8], turn=2)  # any message of the turn names it
        assert turn["turn"] == "#0"
        calls = [c for m in turn["messages"] for c in m["tool_calls"]]
        assert [c["name"] for c in calls] == ["Read", "Edit"]
        assert "more characters]" in calls[0]["output"] and len(calls[0]["output"]) < 1_600  # bounded output

        history = await answer("file_history", path="dates.py")
        kinds = [(e["kind"], e["tool"]) for e in history["events"]]
        assert ("changed", "Edit") in kinds and ("read", "Read") in kinds
        changed = next(e for e in history["events"] if e["kind"] == "changed")
        assert "+    return datetime.now(UTC)" in changed["diff"] or "+datetime.now(UTC)" in changed["diff"]
        assert changed["turn"] == "#0" and changed["prompt"] == "Make the dates timezone aware"
        assert (await answer("file_history", path="/srv/api/dates.py", project="web"))["events"] == []

        assert "sessions" in await answer("signals")
        assert (await answer("signals", session=API[:8]))["session"]["id"] == API
        day = await answer("stats")
        assert day["rows"][0]["period"] == "2026-03-01" and day["totals"]["sessions"] == 15
        mine = await answer("stats", session=API[:8])
        assert mine["files"] == [{"path": "/srv/api/dates.py", "added": 1, "removed": 1, "calls": 1}]

        kept = await answer(
            "remember",
            title="Dates",
            content="Store UTC",
            kind="decision",
            project="/srv/api",
            reason="bug 12",
        )
        assert kept["new"] and kept["scope_key"] == "/srv/api" and kept["updated_by"] == "agent"
        assert (await answer("recall", project="/srv/api/billing"))["entries"][0]["id"] == kept["id"]
        tagged = await answer(
            "tag", target=API[:8], tags=["Time Zones"], note="UTC fixed here", author_session=API
        )
        assert tagged == {
            "target": API,
            "target_type": "session",
            "tags": ["time-zones"],
            "notes": 1,
            "changed": 2,
            "show": f"threadloom show {API}",
            "find": "search 'tag:time-zones' finds it",
        }
        assert {h["session_id"] for h in (await answer("search", query="tag:time-zones"))["hits"]} == {API}
        assert set(sizes) == TOOLS
        print("answer sizes (tokens):", sizes)


@pytest.mark.asyncio(loop_scope="module")  # reads only: the module's server (`reader`)
async def test_paging_past_the_budget(reader: Client) -> None:
    client = reader
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        args: dict[str, Any] = {"max_tokens": 600}
        if cursor:
            args["cursor"] = cursor
        answer = await call(client, "recent_sessions", **args)
        pages += 1
        assert tokens_of(json.dumps(answer, separators=(",", ":"))) <= 600
        seen += [s["id"] for s in answer["sessions"]]
        if answer["next_cursor"] is None:
            assert answer["left_out"] is None
            break
        assert "more sessions past this page" in answer["left_out"]
        cursor = answer["next_cursor"]
    assert pages > 3 and len(seen) == len(set(seen)) == 15

    turns: list[str] = []
    cursor = None
    while True:
        answer = await call(client, "session_outline", session=API, **({"cursor": cursor} if cursor else {}))
        turns += [t["turn"] for t in answer["turns"]]
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert len(turns) == len(set(turns)) == 31
    # a bigger budget holds more
    whole = await call(client, "session_outline", session=API, max_tokens=20_000)
    assert whole["returned"] == 31 and whole["next_cursor"] is None


@pytest.mark.asyncio(loop_scope="module")  # reads only: the module's server (`reader`)
async def test_errors_say_what_to_do(reader: Client, tmp_path: Path) -> None:
    client = reader
    assert "no session matches 'nope'" in await refused(client, "session_outline", session="nope")
    assert "is not one recent_sessions gave" in await refused(client, "recent_sessions", cursor="search@3")
    assert "max_tokens is 5" in await refused(client, "search", query="dates", max_tokens=5)
    assert "has no message #999" in await refused(client, "get_turn", session=API, turn=999)
    assert "not a date" in await refused(client, "search", query="after:someday dates")
    assert "not a scope" in await refused(client, "remember", title="t", content="c", scope="galaxy")
    assert "query is empty" in await refused(client, "search", query="  ")
    # found by an MCP sweep: context answered turns of any time, with a note, where search's
    # after: and the CLI's context --since refuse a date they cannot read
    said = await refused(client, "context", task="dates", since="banana")
    assert "since 'banana' is not a date: give 2026-03-01, yesterday or 7d" in said
    assert (await call(client, "context", task="dates", since="2026-01-01"))["turns"]
    assert await client.call_tool("no_such_tool", {})  # the SDK's own error, no crash
    # found by a sweep of hostile arguments: each said, none a failure or a rebuild to run
    # at the smallest budget the outline's page moves on, where it answered nothing with a
    # cursor that never moved
    page = await call(client, "session_outline", session=API, max_tokens=MIN_TOKENS)
    assert page["returned"] > 0 and page["next_cursor"] != "session_outline@0"
    huge = await client.call_tool("search", {"query": "x" * 3_000_000})
    assert huge.is_error and len(huge.content[0].text) < 2_000  # type: ignore[union-attr]
    assert "at most 10000 characters" in huge.content[0].text  # type: ignore[union-attr]
    long_id = await refused(client, "session_outline", session="a" * 9_999)
    assert "rebuild" not in long_id and "threadloom failed" not in long_id
    assert "out of range" in await refused(client, "get_turn", session=API, turn=2**63)
    assert "out of range" in await refused(client, "recent_sessions", since="99999999d")
    async with server(tmp_path / "missing.db") as client:
        assert "no threadloom archive at" in await refused(client, "search", query="dates")


async def test_reads_while_an_ingest_writes_and_memory_waits(archive: Path) -> None:
    async with server(archive, THREADLOOM_MCP_WAIT="0.3") as client:
        with writer_lock(archive, wait=False):  # as an ingest holds it for its whole run
            found = await call(client, "search", query="timezone")
            assert found["hits"]
            said = await refused(client, "remember", title="t", content="c", scope="global")
            assert "being written by another process" in said
        assert (await call(client, "remember", title="t", content="c", scope="global"))["new"]


async def test_remember_takes_a_projects_name_or_part_of_its_path_and_refuses_a_relative_one(
    archive: Path,
) -> None:
    """A name or `.` was kept as written, a scope recall (by path, or a folder above) never reads."""
    async with server(archive) as client:
        kept = await call(client, "remember", title="Name", content="c", project="api")
        assert kept["scope_key"] == "/srv/api"
        assert [e["id"] for e in (await call(client, "recall", project="/srv/api"))["entries"]] == [
            kept["id"]
        ]
        assert [e["id"] for e in (await call(client, "recall", project="api"))["entries"]] == [kept["id"]]
        said = await refused(client, "remember", title="t", content="c", project="srv")
        assert "matches several projects: /srv/api, /srv/web" in said
        assert "no project in the archive" in await refused(
            client, "remember", title="t", content="c", project="x"
        )
        for relative in (".", "../../etc/passwd"):
            said = await refused(client, "remember", title="t", content="c", project=relative)
            assert "is a relative path" in said
        assert (await call(client, "remember", title="New", content="c", project="/srv/new"))[
            "scope_key"
        ] == "/srv/new"


async def test_a_rebuilt_archive_is_read_without_a_restart(own_archive: Path) -> None:
    # found by an MCP sweep: `ingest --rebuild` puts a new file in the archive's place; the server
    # went on reading the old one while its memory writes went to the new one (remember, then
    # recall: nothing), and sessions ingested since were not seen until it was started again
    archive = own_archive
    async with server(archive) as client:
        assert (await call(client, "recall"))["entries"] == []
        sid = "d1000000-0000-4000-8000-0000000000d1"
        late = Transcript(archive.parent / "projects" / "-srv-late" / f"{sid}.jsonl", sid, cwd="/srv/late")
        late.user("a session written after the server started")
        late.assistant("Noted.")
        late.write()
        res = run("ingest", "--db", str(archive), "--rebuild", "-q", env_extra=env(archive.parent))
        assert res.returncode == 0, res.stderr
        await call(client, "remember", title="After the rebuild", content="kept", scope="global")
        assert [e["title"] for e in (await call(client, "recall"))["entries"]] == ["After the rebuild"]
        assert [s["id"] for s in (await call(client, "recent_sessions", project="late"))["sessions"]] == [sid]


async def test_a_long_memory_and_note_are_written(archive: Path) -> None:
    # found by an MCP sweep: a second LONG_TEXT (300, for lists) capped what remember and tag
    # write at 300 characters, where the CLI takes the same text
    content = "Use UTC everywhere in the API layer; convert only at the edge. " * 80  # 5,040 characters
    async with server(archive) as client:
        kept = await call(client, "remember", title="Time zones", content=content, scope="global")
        assert kept["new"]
        found = await call(client, "recall", text="convert only at the edge", max_tokens=5_000)
        assert found["entries"][0]["content"] == content
        tagged = await call(client, "tag", target=kept["id"], note="why: " + "x" * 2_000)
        assert tagged["notes"] == 1
        assert "at most 10000 characters" in await refused(client, "recall", text="x" * 10_001)


async def test_an_older_archive_is_brought_up_to_date(archive: Path) -> None:
    # found by an MCP sweep: the server's start adapted an archive one layout older and left its
    # sessions to rebuild, then refused every call saying "layout 17, this one reads 17"; now it
    # is brought up to date as the CLI's reading commands do, and answers
    import sqlite3

    from threadloom.core.store import db

    conn = sqlite3.connect(archive)
    conn.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION - 1}")
    conn.close()
    async with server(archive) as client:
        found = await call(client, "search", query="timezone aware")
        assert found["hits"][0]["session_id"] == API
        assert (await call(client, "recent_sessions", project="api"))["total"] == 1
    assert db.upgrade_due(archive) is None


@pytest.mark.asyncio(loop_scope="module")  # reads only: the module's server (`reader`)
async def test_every_tool_answers_at_the_smallest_budget_it_offers(reader: Client) -> None:
    # found by an MCP sweep: max_tokens=300 was offered to every tool, but session_outline needed
    # 600, stats of a session 500, signals 400, recent_sessions 350 (their headers, or their first
    # item cut as far as it goes, did not fit)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("recent_sessions", {}),
        ("recent_sessions", {"project": "web"}),
        ("search", {"query": "timezone"}),
        ("context", {"task": "timezone aware dates"}),
        ("session_outline", {"session": API}),
        ("get_turn", {"session": API, "turn": 0}),
        ("file_history", {"path": "dates.py"}),
        ("signals", {}),
        ("signals", {"session": API}),
        ("stats", {"by": "session"}),
        ("stats", {"session": API}),
        ("recall", {}),
    ]
    client = reader
    listed = {t.name: t for t in (await client.list_tools()).tools}
    for tool, args in calls:
        offered = listed[tool].input_schema["properties"]["max_tokens"]["description"]
        assert f"{MIN_TOKENS}-" in offered
        result = await client.call_tool(tool, {**args, "max_tokens": MIN_TOKENS})
        text = result.content[0].text  # type: ignore[union-attr]
        assert not result.is_error, (tool, text)
        assert tokens_of(text) <= MIN_TOKENS, (tool, tokens_of(text))
    assert f"give {MIN_TOKENS} to" in await refused(client, "search", query="x", max_tokens=MIN_TOKENS - 1)


async def test_remembering_the_same_again_adds_no_version(archive: Path) -> None:
    # found by an MCP sweep: remember is marked idempotent, yet three identical calls wrote
    # versions 1, 2 and 3 of one entry
    same = {"title": "Idem", "content": "Same content every time", "scope": "global", "author_session": API}
    async with server(archive) as client:
        first = await call(client, "remember", **same)
        assert first["new"] and first["version"] == 1 and "unchanged" not in first
        for _ in range(2):
            again = await call(client, "remember", **same)
            assert (again["id"], again["version"], again["new"]) == (first["id"], 1, False)
            assert "no version was added" in again["unchanged"]
        by_id = await call(client, "remember", **same, entry=first["id"])
        assert by_id["version"] == 1 and by_id["unchanged"]
        changed = await call(client, "remember", **{**same, "content": "Something else"})
        assert changed["version"] == 2 and "unchanged" not in changed


async def test_wrong_arguments_and_conflicts_say_what_to_do(archive: Path) -> None:
    # found by an MCP sweep: an argument of the wrong type got pydantic's own text and a web
    # address; a conflict said to resolve it with `memory history`; search's description left out
    # the file: and cmd: filters
    async with server(archive) as client:
        for tool, args, said in [
            ("search", {"query": "x", "limit": "ten"}, "limit is 'ten': give a whole number — hits to rank"),
            ("get_turn", {"session": API, "turn": 1.5}, "turn is 1.5: give a whole number"),
            ("tag", {"target": API, "tags": "notalist"}, "tags is 'notalist': give a list of strings"),
            ("recent_sessions", {"subagents": "maybe"}, "subagents is 'maybe': give true or false"),
            ("search", {}, "query is missing: give it"),
        ]:
            text = await refused(client, tool, **args)
            assert said in text and "pydantic" not in text, text
        listed = {t.name: t for t in (await client.list_tools()).tools}
        filters = listed["search"].input_schema["properties"]["query"]["description"]
        assert "file:" in filters and "cmd:" in filters
        kept = await call(client, "remember", title="Dates", content="Store UTC", scope="global")
        later = await call(
            client, "remember", title="Dates", content="Store local", scope="global", entry=kept["id"],
            base_version=0,
        )  # fmt: skip
        assert f"`threadloom memory resolve {kept['id']}` closes it" in later["conflict"]


@pytest.mark.asyncio(loop_scope="module")  # reads only: the module's server (`reader`)
async def test_agents_are_named_as_the_archive_names_them(reader: Client) -> None:
    # found by an MCP sweep: the agent filter's description offered gemini-cli, which the archive
    # calls gemini, and an agent of no such name answered nothing, silently
    client = reader
    listed = {t.name: t for t in (await client.list_tools()).tools}
    for tool in ("recent_sessions", "stats"):
        offered = listed[tool].input_schema["properties"]["agent"]["anyOf"][0]
        about = listed[tool].input_schema["properties"]["agent"]["description"]
        assert offered["type"] == "string" and "gemini," in about and "gemini-cli" not in about
        assert "claude-code" in about and "codex" in about
    assert (await call(client, "recent_sessions", agent="claude"))["total"] == 15  # claude-code
    assert (await call(client, "stats", agent="claude"))["totals"]["sessions"] == 15
    # an agent of no such name is refused with the names there are, by every tool alike (the
    # listing and the stats answered an empty page with a note, where search refused)
    for tool in ("recent_sessions", "stats"):
        said = await refused(client, tool, agent="gemini-cli-x")
        assert "no agent is called 'gemini-cli-x': give one of claude-code," in said
    # search's agent: is read as the CLI's is (core.read.search.parse_query): an unknown one is
    # refused as an unreadable date is, an other name finds its agent's sessions
    said = await refused(client, "search", query="agent:gemini-cli-x dates")
    assert "no agent is called 'gemini-cli-x': give one of claude-code," in said
    assert (await call(client, "search", query="agent:droid dates", mode="words"))["hits"] == []
    found = await call(client, "search", query="agent:CLAUDE-CODE dates", mode="words")
    assert found["hits"] and {h["agent"] for h in found["hits"]} == {"claude-code"}
