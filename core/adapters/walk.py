"""One directory walk per root and ingest run, shared by every adapter.

Each adapter discovers its files with `os.walk`-style loops; with a dozen adapters over the same
--source folder that meant a dozen walks. `walk` lists each folder once per root and replays the
listing with `os.walk` semantics (top-down, and a caller that prunes `dirnames` is not descended).
Folders unchanged since the last run can be `seed`ed so that only the changed ones offer files.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

_listing: dict[str, tuple[list[str], list[str], frozenset[str]]] = {}
# folders that could not be listed since the last reset, with why: their files are not offered, so
# the run must say so (and not take the root's snapshot as the last word on what it holds)
_unlisted: dict[str, str] = {}


def reset() -> None:
    """Forget the listings (and seeds): called before each root is walked, so new files are seen."""
    _listing.clear()
    _unlisted.clear()


def unlisted() -> dict[str, str]:
    """The folders the walks since the last reset could not list: path → the reason."""
    return dict(_unlisted)


def seed(path: str, dirs: list[str]) -> None:
    """Stand in for listing a folder the run knows to be unchanged since the last one: its
    subfolders are walked as usual, but its files are not offered again (the ledger already knows
    which of them are sources, and the adapters' per-file checks were most of a walk's cost)."""
    _listing[path] = (dirs, [], frozenset())


def listed_files(path: str) -> list[str]:
    """The names of the files in a folder, as the walks will offer them (listed once per run)."""
    return list(_list(path)[1])


def withhold(path: str, names: set[str]) -> None:
    """Offer a changed folder's files minus `names`: those the run already knows (a folder of
    20,000 sessions that gained one offers that one, not 20,001 files for every adapter to open)."""
    dirs, files, links = _list(path)
    _listing[path] = (dirs, [name for name in files if name not in names], links)


def _list(path: str) -> tuple[list[str], list[str], frozenset[str]]:
    cached = _listing.get(path)
    if cached is None:
        dirs, files, links = [], [], set()
        try:
            with os.scandir(path) as it:
                for entry in it:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    if is_dir:
                        dirs.append(entry.name)
                        if entry.is_symlink():
                            links.add(entry.name)  # listed, as os.walk does, but not descended
                    else:
                        files.append(entry.name)
        except (FileNotFoundError, NotADirectoryError):
            pass  # nothing there to read (an agent's usual folder that this machine does not have)
        except OSError as exc:
            _unlisted[path] = exc.strerror or str(exc)
        cached = (dirs, files, frozenset(links))
        _listing[path] = cached
    return cached


def walk(top: str | os.PathLike[str]) -> Iterator[tuple[str, list[str], list[str]]]:
    """Like `os.walk(top)` (top-down, symlinked folders not followed), from a per-run cache."""
    stack = [os.fspath(top)]
    while stack:
        path = stack.pop()
        dirs, files, links = _list(path)
        dirnames, filenames = list(dirs), list(files)
        yield path, dirnames, filenames
        stack.extend(os.path.join(path, d) for d in reversed(dirnames) if d not in links)
