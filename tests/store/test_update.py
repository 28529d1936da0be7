"""`core.ingest.update`, the one way the command line and the TUI bring an archive up to date: the
writer lock once, the logs read, the records said to be in, then the search index."""

from __future__ import annotations

import sys
import threading
from contextlib import closing
from pathlib import Path

from threadloom.core.ingest.pipeline import Phase
from threadloom.core.ingest.update import Listener, update
from threadloom.core.store import search_index
from threadloom.core.store.db import connect
from threadloom.core.store.writer_lock import writer_lock

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import gen_archive  # noqa: E402  (bench/gen_archive.py: the bench's archive, made small)


def _archive(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    gen_archive.generate(root, 1 << 20, seed=3, jobs=1)
    (root / "manifest.json").unlink()
    return root


def test_a_first_load_says_reading_then_loaded_then_indexing_and_ends_with_the_index_whole(tmp_path):
    root = _archive(tmp_path)
    db = tmp_path / "t.db"
    said: list[object] = []
    pending_when_loaded: list[object] = []

    def loaded(report) -> None:
        said.append("loaded")
        with closing(connect(db, readonly=True)) as reader:  # browsable now; the index still behind
            pending_when_loaded.append(search_index.pending(reader))

    listener = Listener(
        reading=lambda conn: said.append("reading"),
        progress=lambda p: said.append(p.phase),
        loaded=loaded,
        indexing=lambda: said.append("indexing"),
    )
    report = update(db, [root], include_defaults=False, listener=listener)
    assert report.records_added > 0 and report.index_complete and not report.cancelled
    words = [s for s in said if isinstance(s, str)]
    assert words == ["reading", "loaded", "indexing"]
    start = said.index("indexing")
    assert Phase.FILES in said[: said.index("loaded")]
    # the index, then the turns read for search by meaning
    phases = said[start + 1 :]
    assert phases and set(phases) == {Phase.INDEXING, Phase.EMBEDDING}
    assert phases == sorted(phases, key=[Phase.INDEXING, Phase.EMBEDDING].index)
    assert pending_when_loaded[0] is not None  # the records came first, the index after
    with closing(connect(db)) as conn:
        assert search_index.pending(conn) is None

    said.clear()
    again = update(db, [root], include_defaults=False, listener=listener)
    assert again.records_added == 0 and "indexing" not in said  # nothing left behind: no index phase


def test_an_update_waiting_for_another_writer_says_so_and_a_cancel_ends_the_wait(tmp_path):
    db = tmp_path / "t.db"
    connect(db).close()
    cancel = threading.Event()
    waited: list[str] = []

    def waiting(text: str) -> None:
        waited.append(text)
        cancel.set()

    with writer_lock(db):
        done: list[object] = []
        thread = threading.Thread(
            target=lambda: done.append(
                update(db, [], include_defaults=False, listener=Listener(waiting=waiting), cancel=cancel)
            )
        )
        thread.start()
        thread.join(30)
    assert waited and done and done[0].cancelled


def test_known_files_are_read_alone_and_the_ones_the_archive_does_not_read_are_named(tmp_path):
    """The watch and the hooks: the files an agent just wrote, read without a walk when the archive
    knows them; a new one is left out and named, for a full update. `locked` is said once the lock
    is this update's, before anything is read."""
    root = _archive(tmp_path)
    db = tmp_path / "t.db"
    first = update(db, [root], include_defaults=False, remember=False)
    log = next(p for p in sorted(root.rglob("*.jsonl")) if p.stat().st_size)
    with log.open("ab") as f:
        f.write(log.read_bytes().splitlines(keepends=True)[-1])
    stranger = tmp_path / "elsewhere" / "new.jsonl"
    stranger.parent.mkdir()
    stranger.write_bytes(log.read_bytes())
    said: list[str] = []
    listener = Listener(locked=lambda: said.append("locked"), reading=lambda conn: said.append("reading"))
    report = update(db, known=[str(log), str(stranger)], listener=listener)
    assert said == ["locked", "reading"]
    assert report.files_seen == 1 and report.files_read == 1 and report.unknown_paths == [str(stranger)]
    assert 0 < report.records_added < first.records_added
    assert "unknown_paths" not in report.as_dict()  # not part of `ingest --json`
