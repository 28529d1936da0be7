"""A Gemini CLI fork is a chat file cut at the point, which Gemini imports (`--session-file`): for
chats of both eras, and for messages orjson refuses or cannot write."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from threadloom.core.actions.fork import plan_fork

from tests.builders.gemini import PROJECT, SID, chats, jsonl_session, meta, reply, user, write_jsonl
from tests.support import ingest


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Gemini CLI home, and the fork's files written under tmp_path."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "ghome"))
    root = tmp_path / "ghome" / ".gemini"
    (root / "tmp" / "webshop").mkdir(parents=True)
    (root / "tmp" / "webshop" / ".project_root").write_text(PROJECT + "\n")
    return root


def forked_messages(conn, text: str) -> list[tuple[str, str]]:
    """The (type, text) of each message of a fork at the message holding `text`."""
    point = conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND content = ? AND seq IS NOT NULL", (SID, text)
    ).fetchone()[0]
    plan = plan_fork(conn, str(point))
    doc = json.loads(Path(plan.path).read_text())
    return [
        (m["type"], m["content"] if isinstance(m["content"], str) else m["content"][0]["text"])
        for m in doc["messages"]
    ]


@pytest.mark.parametrize("indent", [2, None], ids=["indented", "one-line"])
def test_a_json_era_chat_forks_at_its_messages(conn, home, indent):
    """Its records are the document's lines, no message each: every fork said there were no
    messages on the branch. A chat written on one line is cut into its messages: alike."""
    doc = {
        **meta(),
        "messages": [
            user("u1", "list the files"),
            reply("g1", "Two files."),
            user("u2", "and the tests?"),
            reply("g2", "None yet."),
        ],
    }
    path = chats(home) / f"session-2026-04-29T21-39-{SID[:8]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=indent))
    ingest(conn, home)
    assert forked_messages(conn, "Two files.") == [("user", "list the files"), ("gemini", "Two files.")]
    assert len(forked_messages(conn, "None yet.")) == 4
    # the raw record a viewer shows of such a message is the message, not the line closing it (`    },`)
    from threadloom.core.read.query import raw_entry

    eid = conn.execute("SELECT id FROM entries WHERE content = 'Two files.' AND seq IS NOT NULL").fetchone()[
        0
    ]
    assert json.loads(raw_entry(conn, eid)) == doc["messages"][1]


def test_a_jsonl_fork_keeps_a_message_orjson_refuses_and_one_nested_deep(conn, home):
    lines = jsonl_session()
    lines[1] = user("u1", "list the files \ud83d")  # a string cut through an emoji, as Node writes it
    deep: list = []
    for _ in range(300):
        deep = [deep]
    lines[7]["extra"] = deep  # past orjson's 255 levels
    write_jsonl(chats(home) / f"{SID}.jsonl", lines)
    ingest(conn, home)
    assert forked_messages(conn, "None yet.") == [
        ("user", "list the files ?"),
        ("gemini", "Let me look."),
        ("gemini", "Two files."),
        ("user", "and the tests?"),
        ("gemini", "None yet."),
    ]


def test_a_chat_rewritten_in_place_forks_in_its_order_and_by_uuid(conn, home):
    """Gemini CLI rewrites a JSON-era chat on every message: a message it changed is a newer record
    than the unchanged ones after it. A fork wrote the messages in the records' order (two prompts
    in a row, the answer after them), and a message's uuid named the record the rewrite set aside."""
    path = chats(home) / f"session-2026-04-29T21-39-{SID[:8]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    first = [user("u1", "one"), reply("g1", "two"), user("u2", "three")]
    path.write_text(json.dumps({**meta(), "messages": first}, indent=2))
    ingest(conn, home)
    changed = [user("u1", "one"), reply("g1", "two, updated"), user("u2", "three"), reply("g2", "four")]
    path.write_text(json.dumps({**meta(), "messages": changed}, indent=2))
    ingest(conn, home)
    assert forked_messages(conn, "four") == [
        ("user", "one"),
        ("gemini", "two, updated"),
        ("user", "three"),
        ("gemini", "four"),
    ]
    plan = plan_fork(conn, f"{SID}:g1")  # the uuid `show --json` gives
    doc = json.loads(Path(plan.path).read_text())
    assert [
        m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in doc["messages"]
    ] == [
        "one",
        "two, updated",
    ]


def test_a_first_prompt_it_cannot_send_is_refused(conn, home):
    """`--prompt` was left out of a Gemini CLI fork without a word (its command takes none): said."""
    from threadloom.core.actions.fork import ForkError

    write_jsonl(chats(home) / f"{SID}.jsonl", jsonl_session())
    ingest(conn, home)
    point = conn.execute("SELECT id FROM entries WHERE session_id = ? AND seq = 1", (SID,)).fetchone()[0]
    with pytest.raises(ForkError, match="takes no first prompt"):
        plan_fork(conn, str(point), prompt="try another way")


def test_a_chat_its_agent_deleted_is_put_back_before_it_resumes(conn, home):
    """Gemini CLI resumes a chat from where it keeps it: once it was deleted, `resume` printed a
    command that found nothing and `--restore` wrote nothing. Now the plan says it must be put back,
    and putting it back writes it where it was, byte for byte."""
    from threadloom.core.actions.fork import restore_for, resume_plan

    path = write_jsonl(chats(home) / f"{SID}.jsonl", jsonl_session())
    data = path.read_bytes()
    ingest(conn, home)
    assert resume_plan(conn, SID).restore is None
    path.unlink()
    ingest(conn, home)  # its file is gone
    plan = resume_plan(conn, SID)
    assert plan.restore is not None and plan.restore.gone
    assert any("must be restored" in note for note in plan.notes)
    restore_for(conn, plan)
    assert path.read_bytes() == data and resume_plan(conn, SID).restore is None
