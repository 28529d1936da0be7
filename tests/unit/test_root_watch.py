"""The TUI's watch for new session files: folder mtimes, one stat per folder a check."""

from __future__ import annotations

import os
from pathlib import Path

from threadloom.core.ingest.pipeline import RootWatch


def touch_folder(folder: Path, step: int) -> None:
    """Move a folder's mtime on by `step` seconds: two changes within one clock tick look alike."""
    st = folder.stat()
    os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns + step * 1_000_000_000))


def test_a_file_added_anywhere_under_a_root_is_noticed_once(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    project = root / "-home-dev-app"
    project.mkdir(parents=True)
    session = project / "a.jsonl"
    session.write_text("{}\n")
    watch = RootWatch([str(root), str(tmp_path / "never-made")])
    assert watch.changed() is False  # the first check only looks
    assert watch.changed() is False
    with session.open("a") as f:  # a session that grows changes no folder: the viewer follows it
        f.write("{}\n")
    assert watch.changed() is False
    (project / "b.jsonl").write_text("{}\n")
    touch_folder(project, 1)
    assert watch.changed() is True
    assert watch.changed() is False  # said once
    (root / "-home-dev-other").mkdir()
    touch_folder(root, 2)
    assert watch.changed() is True


def test_a_root_that_appears_is_noticed(tmp_path: Path) -> None:
    root = tmp_path / ".codex" / "sessions"
    watch = RootWatch([str(root)])
    assert watch.changed() is False
    assert watch.changed() is False  # absent, and still absent: nothing to read
    root.mkdir(parents=True)
    assert watch.changed() is True
    assert watch.changed() is False
