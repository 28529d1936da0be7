"""Recall by meaning on a real SQLite archive: episodes and their vectors follow ingests, hybrid
search finds a paraphrase that shares no word with its turn, facets filter, similar turns and the
fork context stay within what exists and within their budget."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from threadloom.core.base import embed
from threadloom.core.insight import episodes, recall
from threadloom.core.insight.recall import build_context, search_recall, similar
from threadloom.core.store.sql import get_meta, set_meta

from tests.builders.claude import Transcript, tool_use
from tests.support import CORPUS, ingest

S_PARSER = "b0000000-0000-4000-8000-00000000b001"
S_CSS = "b0000000-0000-4000-8000-00000000b002"
S_DB = "b0000000-0000-4000-8000-00000000b003"
S_DOCS = "b0000000-0000-4000-8000-00000000b004"
S_AGAIN = "b0000000-0000-4000-8000-00000000b005"
REPO = Path(__file__).resolve().parents[2]


def write_archive(root: Path) -> Path:
    p = Transcript(root / "-srv-ingest" / f"{S_PARSER}.jsonl", S_PARSER, cwd="/srv/ingest")
    p.user("The parser crashes on malformed JSON lines; make it skip broken records and keep going")
    p.assistant(
        "I made the reader catch decode errors and store the bad line aside.",
        tools=[tool_use("tu_p1", "Edit", file_path="/srv/ingest/reader.py", old_string="a", new_string="b")],
    )
    p.tool_result("tu_p1", "The file /srv/ingest/reader.py has been updated.")
    p.assistant("Now the tests.", tools=[tool_use("tu_p2", "Bash", command="pytest tests/test_reader.py -q")])
    p.tool_result("tu_p2", "ModuleNotFoundError: No module named 'yaml'", is_error=True)
    p.assistant("Installed the missing module; every test passes.")
    p.write()
    c = Transcript(root / "-srv-web" / f"{S_CSS}.jsonl", S_CSS, cwd="/srv/web")
    c.user("Change the button colours to match the new brand palette")
    c.assistant("Updated the stylesheet with the brand's blue and orange.")
    c.write()
    d = Transcript(root / "-srv-api" / f"{S_DB}.jsonl", S_DB, cwd="/srv/api")
    d.user("Add a migration that renames the users table to accounts")
    d.assistant("Wrote migration 0042 renaming the table.")
    d.write()
    o = Transcript(root / "-srv-docs" / f"{S_DOCS}.jsonl", S_DOCS, cwd="/srv/docs")
    o.user("Fix the typo in the installation chapter of the manual")
    o.assistant("Fixed 'instalation' in chapter two.")
    o.write()
    return root


@pytest.fixture
def archive(conn, tmp_path):
    ingest(conn, write_archive(tmp_path / "projects"))
    return conn


def turn_of(conn, session_id: str) -> str:
    return conn.execute(
        "SELECT turn_id FROM episodes WHERE session_id = ? ORDER BY first_seq LIMIT 1", (session_id,)
    ).fetchone()[0]


def test_every_turn_is_an_episode_with_its_facets_and_a_vector(archive):
    rows = archive.execute(
        "SELECT session_id, files, commands, errors, tools, vector, turn_id FROM episodes"
    ).fetchall()
    assert {r[0] for r in rows} == {S_PARSER, S_CSS, S_DB, S_DOCS}
    parser = next(r for r in rows if r[0] == S_PARSER)
    assert parser[1].split("\n") == ["/srv/ingest/reader.py"]
    assert parser[2] == "pytest tests/test_reader.py -q"
    assert "ModuleNotFoundError" in parser[3]
    assert set(parser[4].split("\n")) == {"Edit", "Bash"}
    later = episodes.vectors_of(archive, [r[6] for r in rows if r[5] is None])  # a small ingest's
    assert all(len(r[5] if r[5] is not None else later[r[6]]) == embed.DIMENSIONS for r in rows)
    assert get_meta(archive, embed.MODEL_KEY) == embed.MODEL


def test_a_paraphrase_that_shares_no_word_finds_its_turn(archive):
    query = "tolerate corrupt input rows when reading logs"
    words = {w.lower() for w in query.split()}
    prompt = archive.execute(
        "SELECT content FROM entries WHERE id = (SELECT prompt_entry FROM episodes WHERE session_id = ?)",
        (S_PARSER,),
    ).fetchone()[0]
    assert not words & {w.strip(";,.").lower() for w in prompt.split()}  # no word in common
    assert search_recall(archive, query, mode="words").hits == []
    for mode in ("meaning", "hybrid"):
        hits = search_recall(archive, query, mode=mode).hits
        assert hits and hits[0].session_id == S_PARSER, mode
        assert hits[0].why == "meaning"


def test_a_word_the_model_splits_is_searched_by_meaning_when_it_reads_as_one(archive):
    """A query of no word the model reads as a word (a keyboard mash) is not searched by meaning. The
    model has no whole token for "yaml" (y+aml: pieces too short to tell from a mash) but the archive
    holds it, in a command's output only: such a word counts; so does one cut into pieces long enough
    to mean something ("refactoring": refactor+ing) though no conversation here has it."""
    assert recall.said_in_archive(archive, "yaml") and not recall.said_in_archive(archive, "qpwoeiruty")
    searched = search_recall(archive, "yaml", mode="meaning").problems  # nothing near enough, but asked
    assert searched == ["nothing is close in meaning to 'yaml'"]
    refused = search_recall(archive, "qpwoeiruty", mode="meaning")
    assert refused.hits == [] and "none of its words" in refused.problems[0]
    nothing = build_context(archive, "qpwoeiruty")  # a new session's first message says so
    assert nothing.turns == [] and "No earlier turn looks relevant" in nothing.as_text()
    assert "These are earlier turns" not in nothing.as_text()
    assert not any(b"refactoring" in r[0] for r in archive.execute("SELECT raw FROM entries"))
    said = search_recall(archive, "refactoring", mode="meaning")
    assert said.hits and not any("close in meaning" in p for p in said.problems)
    # words of other scripts, which the model cuts into bytes, were refused as keyboard mashes
    for word in ("数据库", "миграция", "Fehlerbehandlung"):
        assert embed.is_word(word), word
        assert not any(
            "none of its words" in p for p in search_recall(archive, word, mode="meaning").problems
        )


def test_hybrid_marks_why_each_hit_matched(archive):
    hits = search_recall(archive, "migration renames table", mode="hybrid").hits
    assert hits[0].session_id == S_DB and hits[0].why == "words + meaning"
    assert hits[0].highlights  # the words are highlighted


def test_facets_and_filters_work_in_every_mode(archive):
    for mode in ("words", "meaning", "hybrid"):
        found = {h.session_id for h in search_recall(archive, "fix it file:reader.py", mode=mode).hits}
        assert found <= {S_PARSER}, mode
        assert {h.session_id for h in search_recall(archive, "tests cmd:pytest", mode=mode).hits} <= {
            S_PARSER
        }
        assert {h.session_id for h in search_recall(archive, "module error:yaml", mode=mode).hits} <= {
            S_PARSER
        }
        assert search_recall(archive, "colours project:web", mode=mode).hits[0].session_id == S_CSS
        assert search_recall(archive, "colours agent:codex", mode=mode).hits == []
        # dates (every turn here is of 2026-03-01) and main sessions only
        assert search_recall(archive, "colours after:2026-03-02", mode=mode).hits == []
        assert search_recall(archive, "colours before:2026-03-02", mode=mode).hits[0].session_id == S_CSS
        assert search_recall(archive, "colours in:main project:web", mode=mode).hits[0].session_id == S_CSS
    assert {
        h.session_id for h in search_recall(archive, "broken records file:reader", mode="meaning").hits
    } == {S_PARSER}


def test_vectors_follow_appends_rewrites_and_rebuilds(conn, tmp_path):
    assert embed.available()  # the model loaded in this process: every ingest stores its vectors at once
    root = write_archive(tmp_path / "projects")
    ingest(conn, root)
    path = root / "-srv-web" / f"{S_CSS}.jsonl"
    t = Transcript(path, S_CSS, cwd="/srv/web")
    t.lines = [json.loads(line) for line in path.read_text().splitlines()]
    t.last, t.n = t.lines[-1]["uuid"], len(t.lines)
    t.user("Now make the footer sticky at the bottom of the page")
    t.assistant("The footer uses position sticky now.")
    t.write()
    ingest(conn, root)
    turns = conn.execute(
        "SELECT count(*), count(vector) FROM episodes WHERE session_id = ?", (S_CSS,)
    ).fetchone()
    assert turns == (2, 2)
    assert search_recall(conn, "pin the page bottom bar in place", mode="meaning").hits[0].session_id == S_CSS
    # a rewrite that drops the second turn: its episode goes with it
    path.write_text("\n".join(path.read_text().splitlines()[:2]) + "\n")
    ingest(conn, root)
    assert conn.execute("SELECT count(*) FROM episodes WHERE session_id = ?", (S_CSS,)).fetchone()[0] == 1
    # a run killed while embedding leaves vectors to do; the next one does them
    conn.execute("UPDATE episodes SET vector = NULL WHERE session_id = ?", (S_DB,))
    ingest(conn, root)
    assert conn.execute("SELECT count(*) FROM episodes WHERE vector IS NULL").fetchone()[0] == 0
    # another model: every vector is computed again
    set_meta(conn, embed.MODEL_KEY, "some-older-model")
    before = conn.execute("SELECT turn_id, vector FROM episodes ORDER BY turn_id").fetchall()
    ingest(conn, root)
    assert get_meta(conn, embed.MODEL_KEY) == embed.MODEL
    assert conn.execute("SELECT turn_id, vector FROM episodes ORDER BY turn_id").fetchall() == before


def test_a_small_ingest_leaves_its_vectors_for_later_and_search_by_meaning_finds_them_all_the_same(
    conn, tmp_path, monkeypatch
):
    """A few turns (an agent appending one, the TUI following a session) do not load the model:
    their vectors wait for a pass that has it, or for EMBED_LATER_MAX of them; a search by meaning
    embeds them in memory meanwhile, as they will be stored."""
    embed._model.cache_clear()
    root = write_archive(tmp_path / "projects")
    ingest(conn, root)
    assert not embed.loaded()  # the ingest never loaded the model
    monkeypatch.setattr(recall, "EMBED_LATER_MAX", 4)  # as many waiting: an unfinished pass's
    assert recall.vector_index(conn) is None and not embed.loaded()  # left out, nothing embedded
    monkeypatch.setattr(recall, "EMBED_LATER_MAX", episodes.EMBED_LATER_MAX)
    waiting = conn.execute("SELECT turn_id FROM episodes WHERE vector IS NULL ORDER BY turn_id").fetchall()
    assert len(waiting) == conn.execute("SELECT count(*) FROM episodes").fetchone()[0] == 4
    in_memory = episodes.vectors_of(conn, [t for (t,) in waiting])
    hits = search_recall(conn, "brand colour scheme for the buttons", mode="meaning").hits
    assert hits[0].session_id == S_CSS
    alike = [(h.session_id, h.score) for h in similar(conn, turn_of(conn, S_DB))]  # one left for later
    index = recall.vector_index(conn)
    assert index is not None and sorted(index.turn_ids) == sorted(t for (t,) in waiting)
    # a pass with the model loaded stores them, the same bytes the search computed
    t = Transcript(root / "-srv-web" / f"{S_CSS}.jsonl", S_CSS, cwd="/srv/web")
    t.lines = [json.loads(line) for line in t.path.read_text().splitlines()]
    t.last, t.n = t.lines[-1]["uuid"], len(t.lines)
    t.user("And the links too")
    t.write()
    ingest(conn, root)
    stored = dict(conn.execute("SELECT turn_id, vector FROM episodes WHERE vector IS NOT NULL"))
    assert len(stored) == 5 and all(stored[t] == v for t, v in in_memory.items())
    assert [(h.session_id, h.score) for h in similar(conn, turn_of(conn, S_DB))] == alike
    # without the model loaded, EMBED_LATER_MAX waiting is enough to load it
    embed._model.cache_clear()
    monkeypatch.setattr(episodes, "EMBED_LATER_MAX", 2)
    conn.execute("UPDATE episodes SET vector = NULL")
    ingest(conn, root)
    assert conn.execute("SELECT count(*) FROM episodes WHERE vector IS NULL").fetchone()[0] == 0


def test_a_replay_builds_the_episodes_again(archive):
    from threadloom.core.ingest.ledger import Ledger, replay
    from threadloom.core.ingest.pipeline import rebuild_pending

    before = archive.execute(
        "SELECT turn_id, files, commands, vector FROM episodes ORDER BY turn_id"
    ).fetchall()
    archive.execute("BEGIN")
    replay(archive, Ledger(archive), {S_PARSER})
    archive.execute("COMMIT")
    assert (
        archive.execute("SELECT count(*) FROM episodes WHERE session_id = ?", (S_PARSER,)).fetchone()[0] == 0
    )
    rebuild_pending(archive)
    ingest(archive)
    after = archive.execute(
        "SELECT turn_id, files, commands, vector FROM episodes ORDER BY turn_id"
    ).fetchall()
    assert after == before


def test_similar_turns_come_from_other_sessions(archive, tmp_path):
    again = Transcript(tmp_path / "more" / "-srv-etl" / f"{S_AGAIN}.jsonl", S_AGAIN, cwd="/srv/etl")
    again.user("Reading the export crashes on a malformed line; skip bad records instead of stopping")
    again.assistant("The loader now catches the decode error and moves on.")
    again.write()
    ingest(archive, tmp_path / "more")
    hits = similar(archive, turn_of(archive, S_AGAIN))
    assert hits[0].session_id == S_PARSER
    assert S_AGAIN not in {h.session_id for h in hits}
    entry = archive.execute("SELECT prompt_entry FROM episodes WHERE session_id = ?", (S_AGAIN,)).fetchone()[
        0
    ]
    assert similar(archive, str(entry))[0].session_id == S_PARSER  # by entry id as well
    with pytest.raises(recall.NotEmbedded):
        similar(archive, "no-such-thing")


def test_context_keeps_within_its_budget_and_cites_records_that_exist(archive):
    for budget in (200, 400, 4000):
        context = build_context(archive, "parser skipping broken JSON lines", budget=budget)
        assert context.tokens <= budget
        assert recall.tokens_of(context.as_text()) <= budget + 40  # the text's own framing
        for turn in context.turns:
            assert archive.execute("SELECT 1 FROM entries WHERE id = ?", (turn.entry_id,)).fetchone()
            assert archive.execute("SELECT 1 FROM agent_sessions WHERE id = ?", (turn.session_id,)).fetchone()
            assert turn.reference.startswith(f"threadloom show '{turn.session_id}#")
    big = build_context(archive, "parser skipping broken JSON lines", budget=4000)
    assert big.turns[0].session_id == S_PARSER
    assert big.turns[0].files == ["/srv/ingest/reader.py"]
    assert "pytest tests/test_reader.py -q" in big.turns[0].commands
    small = build_context(archive, "parser skipping broken JSON lines", budget=200)
    assert len(small.turns) + small.left_out >= 1 and len(small.turns) <= len(big.turns)
    scoped = build_context(archive, "correct a spelling mistake", budget=4000, project="docs")
    assert {t.session_id for t in scoped.turns} == {S_DOCS}


def test_cli_search_modes_similar_and_context(archive, tmp_path):
    db_path = archive.execute("PRAGMA database_list").fetchone()[2]

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "threadloom.core.cli", *args, "--db", db_path],
            capture_output=True,
            text=True,
            cwd=REPO,
            check=True,
        )

    hits = json.loads(cli("search", "tolerate corrupt input rows", "--mode", "meaning", "--json").stdout)
    assert hits[0]["session_id"] == S_PARSER and hits[0]["why"] == "meaning" and hits[0]["turn_id"]
    assert json.loads(cli("search", "tolerate corrupt input rows", "--mode", "words", "--json").stdout) == []
    printed = cli("search", "tolerate corrupt input rows").stdout
    assert "by meaning" in printed
    context = json.loads(cli("context", "parser skipping broken lines", "--budget", "300", "--json").stdout)
    assert context["tokens"] <= 300 and context["tokens_counted_as"] == "characters / 4"
    assert context["turns"][0]["session_id"] == S_PARSER
    text = cli("context", "parser skipping broken lines").stdout
    assert text.startswith("Context from past sessions") and "reader.py" in text
    similar_hits = json.loads(cli("similar", turn_of(archive, S_PARSER), "--json").stdout)
    assert S_PARSER not in {h["session_id"] for h in similar_hits}


@pytest.mark.long(6)
@pytest.mark.corpus
@pytest.mark.skipif(not (CORPUS / "aider").is_dir(), reason="corpus absent")
def test_the_evaluation_on_real_sessions_puts_meaning_ahead_of_words(tmp_path):
    sys.path.insert(0, str(REPO / "bench" / "recall"))
    try:
        import evaluate
    finally:
        sys.path.pop(0)
    db = tmp_path / "corpus.db"
    # read from a copy, elsewhere: Aider's session ids (the queries' targets) do not depend on where
    # the history sits
    copy = shutil.copytree(CORPUS, tmp_path / "elsewhere" / "corpus")
    evaluate.ingest(db, copy)
    import sqlite3

    conn = sqlite3.connect(db)
    scores = evaluate.evaluate(conn, evaluate.load_queries())
    assert scores["words"]["queries"] >= 60
    assert scores["meaning"]["hit@10"] >= 0.6
    assert scores["hybrid"]["hit@10"] >= scores["words"]["hit@10"] + 0.5
    assert scores["hybrid"]["mrr"] >= scores["meaning"]["mrr"]
    assert episodes.EPISODES_VERSION  # the registry's version key is what builds them all again


def test_a_new_session_from_context_hands_the_agent_the_file_and_runs_nothing_from_the_logs(
    conn, tmp_path, fake_agents, sandbox
):
    from threadloom.core.actions.launch import launch_command, write_context_file

    from tests.support import run_printed

    root = write_archive(tmp_path / "projects")
    evil = Transcript(root / "-srv-evil" / f"{S_AGAIN}.jsonl", S_AGAIN, cwd="/srv/evil")
    evil.user("Parser crash on broken lines again: $(touch pwned) `touch pwned2` ; touch pwned3 'quoted'")
    evil.assistant("Skipped the broken records like last time.")
    evil.write()
    ingest(conn, root)
    context = build_context(conn, "parser skipping broken lines", budget=3000)
    assert any("$(touch pwned)" in t.prompt for t in context.turns)
    path = write_context_file(context, tmp_path / "contexts")
    assert path.stat().st_mode & 0o777 == 0o600
    assert write_context_file(context, tmp_path / "contexts") != path  # never over a file
    folder = tmp_path / "we$(touch pwned4)ird 'dir' `x` ; rm -rf"
    folder.mkdir()
    for agent, program in (("claude-code", "claude"), ("codex", "codex"), ("gemini", "gemini")):
        launch = launch_command(agent, path, str(folder))
        for turn in context.turns:  # no text from the logs on the command line itself
            assert turn.prompt[:12] not in launch.command
        calls = run_printed(launch.command, fake_agents, sandbox)
        assert calls == [[program, str(folder), path.read_text().rstrip("\n")]], agent
    assert not [p for p in tmp_path.rglob("pwned*")]
    with pytest.raises(ValueError, match="cannot be started with a first message"):
        launch_command("aider", path, str(folder))
    # a folder the log gave that cannot be used: no cd, and a note that says so
    launch = launch_command("claude-code", path, "relative/dir")
    assert not launch.command.startswith("cd ") and launch.notes


def test_an_archive_from_before_episodes_is_searched_by_words_and_says_why(archive, tmp_path):
    """Opened read-only before the ingest that adds the episodes (another version's archive)."""
    import sqlite3

    path = archive.execute("PRAGMA database_list").fetchone()[2]
    archive.execute("DROP TABLE episodes")
    old = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    result = search_recall(old, "migration renames table")
    assert result.hits and result.hits[0].session_id == S_DB and result.hits[0].why == "words"
    assert any("waits for the next `threadloom ingest`" in p for p in result.problems)
    faceted = search_recall(old, "migration file:reader.py", mode="words")
    assert any("file:, cmd: and error: need the turns' facets" in p for p in faceted.problems)


def test_an_ingest_says_how_far_the_embedding_is(conn, tmp_path):
    from threadloom.core.ingest.pipeline import Phase, run_ingest

    seen = []
    report = run_ingest(
        conn, [write_archive(tmp_path / "projects")], include_defaults=False, progress=seen.append
    )
    phases = [(p.phase_done, p.phase_total) for p in seen if p.phase is Phase.EMBEDDING]
    assert phases and phases[-1][0] == phases[-1][1] == 4  # the four sessions' turns
    assert report.episodes_seconds > 0


def test_an_ingest_with_nothing_new_never_loads_the_model(archive, tmp_path):
    """The model's load (numpy, the tokenizer: 0.3 s) is for runs that have turns to embed."""
    path = archive.execute("PRAGMA database_list").fetchone()[2]
    code = (
        "import sys; from pathlib import Path; from threadloom.core.store import db; "
        "from threadloom.core.ingest.pipeline import run_ingest; "
        f"conn = db.connect(Path({path!r})); "
        f"r = run_ingest(conn, [Path({str(tmp_path / 'projects')!r})], include_defaults=False); "
        "print(r.records_added, 'numpy' in sys.modules, 'tokenizers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split() == ["0", "False", "False"], out.stderr


def test_a_text_has_the_same_vector_alone_or_in_any_batch():
    """Each batch sums from the float32 rows it uses (no whole-table copy in memory): a text's vector
    is bit for bit the same whatever else is embedded with it, and the same as the mean of its
    tokens' rows taken as float32 one by one."""
    import numpy as np

    texts = ["fix the failing migration", "", "the tokenizer " * 300, "café ünïcode ✓", "x"] * 3
    together = embed.embed(texts)
    for i, text in enumerate(texts):
        assert np.array_equal(embed.embed([text])[0], together[i])
    tokenizer, table = embed._model()
    ids = tokenizer.encode(texts[0], add_special_tokens=False).ids
    expected = np.asarray(table, dtype=np.float32)[ids].mean(axis=0, dtype=np.float32)
    assert np.array_equal(together[0], expected / np.linalg.norm(expected))


EPISODE_ROWS = (
    "SELECT turn_id, session_id, first_seq, last_seq, files, commands, errors, tools, vector FROM episodes "
    "ORDER BY turn_id"
)


def test_a_first_load_is_browsable_before_its_turns_are_read_for_meaning(tmp_path):
    """A first load makes its sessions browsable, then catches up its search index and, after it,
    the episodes (read and embedded) that meaning, facets and fork context use: what a one-pass
    ingest gives, however the catch-up is interrupted."""
    from threadloom.core.ingest.pipeline import Phase
    from threadloom.core.ingest.update import Listener, update
    from threadloom.core.insight import refresh
    from threadloom.core.store import db, search_index

    assert embed.available()  # loaded: every pass stores its vectors at once (none left for later)
    root = write_archive(tmp_path / "projects")
    one_pass = db.connect(tmp_path / "one-pass.db")
    ingest(one_pass, root)  # the index built within the ingest: episodes at once
    expected = one_pass.execute(EPISODE_ROWS).fetchall()
    assert len(expected) == 4 and all(row[-1] for row in expected)

    for name in ("caught-up", "killed"):
        path = tmp_path / f"{name}.db"
        report = update(
            path, [root], include_defaults=False, index=False
        )  # `ingest --no-index`, the TUI's load
        assert report.records_added and not report.errors
        conn = db.connect(path)
        assert conn.execute("SELECT count(*) FROM agent_sessions").fetchone()[0] == 4  # browsable
        assert conn.execute("SELECT count(*) FROM episodes").fetchone()[0] == 0
        assert episodes.left_for_index(conn) == {S_PARSER, S_CSS, S_DB, S_DOCS} and refresh.left_behind(conn)
        if name == "caught-up":  # `threadloom index`, or the TUI once the sessions show
            seen: list[tuple[int, int]] = []
            assert refresh.catch_up(conn, on_embed=lambda done, total, seen=seen: seen.append((done, total)))
            assert seen and seen[-1][0] == seen[-1][1]
        else:  # killed once the words were indexed: the next update, even one that leaves the index
            # for later (a hook's), and with nothing new, reads the rest
            assert search_index.build(conn) and refresh.left_behind(conn)
            # (as in an archive this version built episodes in before: only the marks say what is left)
            set_meta(conn, episodes.EPISODES_VERSION_KEY, episodes.EPISODES_VERSION)
            conn.commit()
            seen_phases: list[Phase] = []
            again = update(
                path,
                [root],
                include_defaults=False,
                index=False,
                listener=Listener(progress=lambda p, seen=seen_phases: seen.append(p.phase)),
            )
            assert again.records_added == 0 and Phase.EMBEDDING in seen_phases
        assert conn.execute(EPISODE_ROWS).fetchall() == expected
        assert not refresh.left_behind(conn) and not episodes.left_for_index(conn)
        conn.close()


def test_a_search_says_which_sessions_meaning_does_not_reach_yet(tmp_path):
    """Sessions a first load left to read for meaning (a catch-up killed after the index, an
    archive opened read-only before it ran): a search by meaning or by facets says so, in every
    front end's problems (CLI, TUI, MCP), until they are read; one by words alone does not."""
    from threadloom.core.ingest.update import update
    from threadloom.core.insight import refresh
    from threadloom.core.store import db, search_index

    root = write_archive(tmp_path / "projects")
    path = tmp_path / "first-load.db"
    update(path, [root], include_defaults=False, index=False)
    conn = db.connect(path)
    assert search_index.build(conn) and len(episodes.left_for_index(conn)) == 4  # killed after the index

    def notes(query: str, mode: str) -> list[str]:
        return [p for p in search_recall(conn, query, mode=mode).problems if "not read for meaning" in p]

    assert notes("parser", "hybrid") == [
        "4 sessions not read for meaning yet (a first load reads them after its search index): search by "
        "meaning and file:, cmd:, error: do not reach them until `threadloom index` or the next ingest"
    ]
    assert notes("parser", "meaning") and notes("file:parser.py", "words")
    assert notes("parser", "words") == []
    assert refresh.catch_up(conn)
    assert notes("parser", "hybrid") == notes("parser", "meaning") == notes("file:parser.py", "words") == []
    conn.close()


def test_a_session_copied_whole_is_found_beside_its_source(conn, tmp_path):
    """Claude Code's /branch writes the conversation again under a new session id, every uuid kept:
    search by words found both sessions, the default (words and meaning) one of them, its turns
    ranked by their id alone, which the two share."""
    source, branch = "aaaaaaaa-1111-4222-8333-0000000000d1", "bbbbbbbb-1111-4222-8333-0000000000d2"
    folder = tmp_path / "projects" / "-srv-app"
    t = Transcript(folder / f"{source}.jsonl", source, cwd="/srv/app")
    t.user("make the flaky clock test deterministic")
    t.assistant("Froze the clock in the fixture.")
    t.write()
    copied = [{**line, "sessionId": branch} for line in t.lines]
    (folder / f"{branch}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in copied))
    ingest(conn, tmp_path / "projects")
    for mode in ("words", "hybrid"):
        hits = search_recall(conn, "flaky clock", mode=mode).hits
        assert {h.session_id for h in hits} == {source, branch}, mode


def test_similar_to_a_turn_two_unrelated_sessions_share_names_each(archive, tmp_path):
    """A session folder copied under another id keeps every uuid (and so every turn id): `similar
    UUID` took the first session holding it; it names each session's entry id, as `fork` does, and
    SESSION#n or an entry id says which is meant."""
    copy = "c0000000-0000-4000-8000-00000000c001"
    source = next((tmp_path / "projects").rglob(f"{S_PARSER}.jsonl"))
    lines = [json.loads(line) for line in source.read_text().splitlines()]
    folder = tmp_path / "copied" / "-srv-ingest"
    folder.mkdir(parents=True)
    (folder / f"{copy}.jsonl").write_text("".join(json.dumps({**r, "sessionId": copy}) + "\n" for r in lines))
    ingest(archive, tmp_path / "copied")
    turn = turn_of(archive, S_PARSER)
    assert turn == turn_of(archive, copy)
    ids = dict(
        archive.execute("SELECT session_id, min(id) FROM entries WHERE turn_id = ? GROUP BY 1", (turn,))
    )
    for ref in (turn, lines[0]["uuid"]):
        with pytest.raises(recall.NotEmbedded, match="in several sessions") as refused:
            similar(archive, ref)
        assert f"{ids[S_PARSER]} (session {S_PARSER})" in str(refused.value)
        assert f"{ids[copy]} (session {copy})" in str(refused.value)
    # the one meant: its family is left out, so the other copy is the nearest
    assert similar(archive, f"{copy[:13]}#0")[0].session_id == S_PARSER
    assert similar(archive, str(ids[S_PARSER]))[0].session_id == copy


def test_the_count_of_hits_does_not_depend_on_the_limit(conn, tmp_path, monkeypatch):
    """Hybrid search took the messages with only some of the words only when those with all of them
    filled less than the page: `--limit 1` said "1 of 2", `--limit 50` "3 of 3" for one query."""
    folder = tmp_path / "projects" / "-srv-ui"
    for n, text in enumerate(("the vis-group hide rule", "hide the sidebar panel", "a vis-group colour")):
        sid = f"cccccccc-1111-4222-8333-00000000000{n}"
        t = Transcript(folder / f"{sid}.jsonl", sid, cwd="/srv/ui")
        t.user(text)
        t.assistant("Done.")
        t.write()
    ingest(conn, tmp_path / "projects")
    monkeypatch.setattr(
        recall, "nearest", lambda *a, **k: []
    )  # the words' side alone: meaning finds all three
    totals = {n: search_recall(conn, "vis-group hide", limit=n).total for n in (1, 2, 10, 50)}
    assert len(set(totals.values())) == 1, totals
    assert totals[1] >= 3


def test_a_hit_in_a_fork_says_fork_of_and_one_in_a_subagent_subagent_of(conn, tmp_path):
    """A fork's hit was labelled "subagent of <its source>": a fork is a session of its own."""
    from threadloom.core.actions.fork import plan_fork, write_fork

    source, forked = "aaaaaaaa-1111-4222-8333-0000000000f1", "aaaaaaaa-1111-4222-8333-0000000000f2"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{source}.jsonl", source, cwd="/srv/app")
    t.user("make the flaky clock test deterministic")
    last = t.assistant("Froze the clock in the fixture.")
    t.write()
    ingest(conn, tmp_path / "projects")
    fork = write_fork(plan_fork(conn, last, new_session_id=forked))
    resumed = Transcript(fork, forked, cwd="/srv/app")  # the agent goes on in the fork
    resumed.last = json.loads(fork.read_text().splitlines()[-2])["uuid"]
    resumed.user("now the quartz oscillator drift")
    resumed.assistant("Drift handled.")
    with fork.open("a") as f:
        f.write("".join(json.dumps(line) + "\n" for line in resumed.lines))
    ingest(conn, fork)
    db_path = conn.execute("PRAGMA database_list").fetchone()[2]
    shown = subprocess.run(
        [sys.executable, "-m", "threadloom.core.cli", "search", "quartz oscillator", "--db", db_path],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert "fork of" in shown.stdout and "subagent of" not in shown.stdout, shown.stdout + shown.stderr
    (hit,) = search_recall(conn, "quartz oscillator", mode="words").hits
    assert (hit.session_id, hit.relation, hit.main_session_id) == (forked, "fork", source)


def test_a_meaning_hit_reads_like_a_word_hit(conn, tmp_path):
    """Its snippet had been the prompt's first 200 characters: the IDE's markup raw, cut mid-word."""
    sid = "b0000000-0000-4000-8000-00000000b006"
    ide = (
        "<ide_opened_file>The user opened the file /srv/app/a.py in the IDE. This may or may not "
        "be related to the current task.</ide_opened_file>"
    )
    words = "Look at the modules and understand the purpose of different folders in this repository. " * 4
    t = Transcript(tmp_path / "p" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    t.user(ide + words)
    t.assistant("They hold the parser, the store and the screens.")
    t.write()
    ingest(conn, tmp_path / "p")
    [hit] = recall._meaning_hits(conn, [((sid, turn_of(conn, sid)), 0.9)])
    assert "ide_opened_file" not in hit.snippet and hit.snippet.startswith("Look at the modules")
    assert hit.snippet.endswith("…")
    assert all(w in words.split() for w in hit.snippet.rstrip("…").split()), hit.snippet


# keyboard mashes, random letters, made-up words: each found turns at cosine 0.2 to 0.36 by shared
# letters ("zzqv" a prompt about "TZ", "hjkl" one saying "h"), where real queries' turns sit at 0.22
NONSENSE = (
    "zzqv",
    "asdf qwerty blorp",
    "jjjjjjjj",
    "hjkl hjkl hjkl",
    "fjdksla",
    "qpwoeiruty",
    "mnbvcxz poiuy",
    "ajsdhaksjdh",
    "uioplkj",
    "nbvcx",
    "florbnax",
    "xyzzy plugh",
)


@pytest.mark.corpus
@pytest.mark.skipif(not (CORPUS / "claude-code").is_dir(), reason="corpus absent")
def test_nonsense_finds_nothing_by_meaning_where_real_queries_still_find_their_turns(
    tmp_path, claude_corpus_copy
):
    from threadloom.core.store import db

    sys.path.insert(0, str(REPO / "bench" / "recall"))
    try:
        import evaluate
    finally:
        sys.path.pop(0)
    conn = db.connect(claude_corpus_copy(tmp_path))
    held = {r[0] for r in conn.execute("SELECT turn_id FROM episodes")}
    real = [(q, targets) for q, targets in evaluate.load_queries() if targets & held]
    found = [
        evaluate.rank_of(conn, search_recall(conn, q, mode="meaning", limit=10).hits, targets)
        for q, targets in real
    ]
    answered = {q: search_recall(conn, q, mode="meaning") for q in NONSENSE}
    context = build_context(conn, "fjdksla")
    conn.close()
    # 15 of the 17 in the first ten before the nonsense was refused, and after
    assert len(real) == 17 and sum(r is not None for r in found) >= 15, found
    assert {q: len(r.hits) for q, r in answered.items()} == dict.fromkeys(NONSENSE, 0)
    assert all(any("close in meaning" in p for p in r.problems) for r in answered.values())
    assert context.turns == []  # a new session is not handed unrelated turns
