"""What the suite keeps from run to run is kept: not in the throwaway cache folder each worker gets."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support import kept


def test_what_the_suite_keeps_outlives_the_run() -> None:
    """The README says the agents' CLIs and mypy's cache are installed once, into
    ~/.cache/threadloom-tests: `kept` resolved inside the worker's temporary cache folder (moved
    there for the price table), so every run and every worker started from scratch."""
    throwaway = Path(os.environ["XDG_CACHE_HOME"]).resolve()
    folder = kept("npm-agents").resolve()
    assert not folder.is_relative_to(throwaway), folder
