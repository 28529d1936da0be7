"""The hub's URL as threadloom keeps and prints it: never with its password."""

from __future__ import annotations

import pytest
from threadloom.core.ingest import sync


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("postgresql://ana@db.example/hub", "postgresql://ana@db.example/hub"),
        ("postgresql://ana:s3cret@db.example:5433/hub", "postgresql://ana@db.example:5433/hub"),
        (
            "postgresql://ana:s3cret@db.example/hub?sslmode=require",
            "postgresql://ana@db.example/hub?sslmode=require",
        ),
        ("host=db.example user=ana password=s3cret dbname=hub", "host=db.example user=ana dbname=hub"),
        ("service=team", "service=team"),
    ],
)
def test_the_password_is_taken_out(given: str, kept: str) -> None:
    from psycopg.conninfo import conninfo_to_dict

    assert conninfo_to_dict(sync.safe_url(given)) == conninfo_to_dict(kept)
    assert "s3cret" not in sync.safe_url(given)


def test_errors_are_scrubbed() -> None:
    said = sync.mask_password('connection to "postgresql://ana:s3cret@db/hub" failed: password=s3cret wrong')
    assert "s3cret" not in said


def test_not_a_url() -> None:
    with pytest.raises(sync.SyncError):
        sync.safe_url("postgresql://[broken")


def test_rules_and_machine_names() -> None:
    assert sync.check_rule("all") == "all" and sync.check_rule("project:/srv/api")
    for bad in ("everything", "project:", "host:x", "agent:gemni"):
        with pytest.raises(sync.SyncError):
            sync.check_rule(bad)
    # an agent by its other name is kept as the archive names it; a pattern of names as given
    assert sync.check_rule("agent:gemini-cli") == "agent:gemini" and sync.check_rule("agent:claude*")
    assert sync.check_machine("laptop-2.home") == "laptop-2.home"
    for bad in ("", "../x", "a/b", "-x", "x" * 64):
        with pytest.raises(sync.SyncError):
            sync.check_machine(bad)
    rules = sync.Sharing(share=["project:/srv/*", "agent:codex"], exclude=["project:/srv/secret"])
    assert rules.takes("claude-code", {"/srv/api"})
    assert not rules.takes("claude-code", {"/srv/secret"})
    assert not rules.takes("claude-code", {"/srv/secret/sub"})  # under an excluded path
    assert rules.takes("codex", {"/home/me"}) and not rules.takes("gemini", {"/home/me"})
    # rules kept before agent names were checked: the agent they name, as the archive names it
    older = sync.Sharing(share=["agent:gemini-cli", "agent:Claude-Code", "agent:toy"])
    assert older.takes("gemini", set()) and older.takes("claude-code", set()) and older.takes("toy", set())
    assert not older.takes("codex", set())


def test_another_machines_files_are_never_read_from_this_disk() -> None:
    from threadloom.core.adapters import base
    from threadloom.core.store import db

    assert base.MIRROR_ROOT == db.MIRROR_ROOT
    name = base.MIRROR_ROOT + "/laptop/home/u/.claude/projects/p/s.jsonl"
    with pytest.raises(FileNotFoundError):
        base.read_regular(name)
    with base.reading_mirrors(lambda path: b"stored bytes" if path == name else None):
        assert base.read_regular(name) == b"stored bytes"
        assert base.read_regular(name, 6) == b"stored"
        with pytest.raises(FileNotFoundError):
            base.read_regular(base.MIRROR_ROOT + "/laptop/elsewhere")
    with pytest.raises(FileNotFoundError):
        base.read_regular(name)
