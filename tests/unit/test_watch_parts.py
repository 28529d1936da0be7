"""The parts of `threadloom watch` that decide: which places are watched and how, what a change
means (read one known file, or walk), when a batch is read, and where it logs."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from threadloom.core.ingest.pipeline import KnownSource
from threadloom.core.serve import watch
from threadloom.core.serve.watch import (
    ADDED,
    DELETED,
    MODIFIED,
    Batch,
    EventSource,
    EventsUnavailable,
    Known,
    PollSource,
    Roots,
    choose_source,
    filesystem_type,
    log_path_for,
)

MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:35 / /home/dev/nfs rw,relatime shared:20 - nfs4 server:/export rw,vers=4.2
41 40 0:36 / /home/dev/nfs/local\\040disk rw - ext4 /dev/sdb1 rw
42 22 0:37 / /mnt/c rw - 9p drvfs rw
"""


def test_the_file_system_of_a_path_is_its_longest_mount_point() -> None:
    assert filesystem_type("/home/dev/.claude", MOUNTINFO) == "ext4"
    assert filesystem_type("/home/dev/nfs/.claude/projects", MOUNTINFO) == "nfs4"
    assert filesystem_type("/home/dev/nfs/local disk/x", MOUNTINFO) == "ext4"  # \040 is a space
    assert filesystem_type("/home/dev/nfsother", MOUNTINFO) == "ext4"  # a prefix of a name is not a folder
    assert filesystem_type("/mnt/c/Users", MOUNTINFO) == "9p"


def test_roots_watch_each_folder_once_and_look_for_the_absent(tmp_path: Path) -> None:
    claude = tmp_path / ".claude"
    (claude / "projects").mkdir(parents=True)
    history = tmp_path / ".aider.chat.history.md"
    history.write_text("# aider chat started at 2026-03-01 10:00:00\n")
    roots = Roots.of(
        [
            str(claude / "projects"),
            str(claude),
            str(history),
            str(tmp_path / ".codex" / "sessions"),
            str(claude),
        ]
    )
    assert roots.folders == [str(claude)]  # projects is inside it: one recursive watch
    assert roots.files == [str(history)]
    assert roots.missing == [str(tmp_path / ".codex" / "sessions")]
    assert roots.holds(str(claude / "projects" / "p" / "s.jsonl")) and roots.holds(str(history))
    assert not roots.holds(str(tmp_path / ".claudette" / "x.jsonl"))


def test_an_event_under_a_linked_folder_is_named_as_the_root_names_it(tmp_path: Path) -> None:
    real = tmp_path / "data" / "claude"
    (real / "projects").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".claude").symlink_to(real)
    root = str(tmp_path / "home" / ".claude" / "projects")
    roots = Roots.of([root])
    assert roots.as_named(str(real / "projects" / "p" / "s.jsonl")) == f"{root}/p/s.jsonl"  # as FSEvents says
    assert roots.as_named(f"{root}/p/s.jsonl") == f"{root}/p/s.jsonl"
    assert roots.as_named("/elsewhere/x.jsonl") == "/elsewhere/x.jsonl"


def test_a_change_to_a_known_file_or_its_wal_names_that_file(tmp_path: Path) -> None:
    store = tmp_path / "state.vscdb"
    known = Known(
        {
            "/h/.claude/projects/p/s.jsonl": KnownSource("claude-code", 10, 1),
            str(store): KnownSource("cursor", 10, 1),
        }
    )
    assert known.source_of("/h/.claude/projects/p/s.jsonl") == "/h/.claude/projects/p/s.jsonl"
    assert known.source_of(f"{store}-wal") == str(store)
    assert known.source_of("/h/.claude/projects/p/new.jsonl") is None


def test_a_batch_is_read_once_quiet_or_after_the_longest_delay() -> None:
    batch = Batch()
    assert not batch and not batch.due(100.0, 1.0, 5.0)
    batch.add_file("/a", 100.0)
    assert not batch.due(100.5, 1.0, 5.0)
    assert batch.due(101.0, 1.0, 5.0)  # quiet for a second
    for t in (100.5, 101.0, 101.5, 102.0, 102.5, 103.0, 103.5, 104.0, 104.5):
        batch.add_file("/a", t)  # an agent writing without a pause
        assert not batch.due(t, 1.0, 5.0)
    assert batch.due(105.0, 1.0, 5.0)  # five seconds after its first change, however busy
    batch.add_full("added /b", 105.0)
    batch.add_full("deleted /c", 105.1)
    assert batch.full == "added /b" and batch.files == {"/a"}


def test_changes_become_one_file_to_read_or_a_walk(tmp_path: Path) -> None:
    options = watch.WatchOptions(db_path=tmp_path / "a.db", log_path=tmp_path / "a-watch.log")
    w = watch.Watcher(options, threading.Event(), watch.open_log(options.log_path))
    known = "/h/.claude/projects/p/s.jsonl"
    w.known = Known({known: KnownSource("claude-code", 10, 1)})
    w._absorb({(MODIFIED, known), (MODIFIED, "/h/.claude/projects/p/notes.txt")}, 1.0)
    assert w.batch.files == {known} and not w.batch.full  # an unclaimed file's change: nothing to read
    w._absorb({(ADDED, "/h/.claude/projects/p/t.jsonl")}, 1.1)
    assert w.batch.full == "added /h/.claude/projects/p/t.jsonl"
    w.batch = Batch()
    w._absorb({(MODIFIED, str(tmp_path / "a.db-wal")), (ADDED, str(tmp_path / "a-watch.log.1"))}, 2.0)
    assert not w.batch  # its own database and log never wake it
    w._absorb({(DELETED, known)}, 3.0)
    assert w.batch.files == {known}  # read, or found gone by the walk that follows
    watch.close_log(w.log)


def test_events_unavailable_means_polling_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(self: EventSource) -> None:
        raise EventsUnavailable("OS file watch limit reached")

    monkeypatch.setattr(EventSource, "start", refused)
    stop = threading.Event()
    source = choose_source([str(tmp_path)], stop, lambda: Known(), poll=False, interval=2.0)
    assert isinstance(source, PollSource)
    assert source.detail == "polling every 2 s (file system events unavailable: OS file watch limit reached)"

    monkeypatch.setattr(watch, "filesystem_type", lambda path: "nfs4")
    source = choose_source([str(tmp_path)], stop, lambda: Known(), poll=False)
    assert isinstance(source, PollSource) and "a network file system (nfs4)" in source.detail


def test_polling_finds_appends_and_new_files(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "p"
    project.mkdir(parents=True)
    session = project / "s.jsonl"
    session.write_text("{}\n")
    st = session.stat()
    known = Known({str(session): KnownSource("claude-code", st.st_size, st.st_mtime_ns)})
    source = PollSource([str(tmp_path / "projects")], threading.Event(), lambda: known, 1.0, "a test")
    assert source.poll() == set()  # as archived
    with session.open("a") as f:
        f.write("{}\n")
    assert source.poll() == {(MODIFIED, str(session))}
    assert source.poll() == set()  # said once
    (project / "t.jsonl").write_text("{}\n")
    st = project.stat()
    os.utime(project, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # two changes within a tick
    assert source.poll() == {(ADDED, str(tmp_path / "projects"))}


def test_the_log_sits_beside_the_database_and_is_private(tmp_path: Path) -> None:
    assert log_path_for(tmp_path / "threadloom.db") == tmp_path / "threadloom-watch.log"
    log = watch.open_log(tmp_path / "sub" / "w.log")
    log.info("hello")
    watch.close_log(log)
    path = tmp_path / "sub" / "w.log"
    assert path.read_text().endswith("INFO hello\n")
    assert path.stat().st_mode & 0o777 == 0o600
