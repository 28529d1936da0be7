"""The house rules hold: ruff's lint and format, and the type checks (strict on the core)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import kept

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT)


def test_ruff_lint_and_format_are_clean() -> None:
    lint = run(str(BIN / "ruff"), "check", ".")
    assert lint.returncode == 0, lint.stdout
    formatted = run(str(BIN / "ruff"), "format", "--check", ".")
    assert formatted.returncode == 0, formatted.stdout + "\n(run `ruff format .`)"


@pytest.mark.long(12)
def test_the_code_passes_the_type_checks() -> None:
    """mypy keeps its cache in the suite's kept folder (tests.support.kept): a run checks again only
    the modules that changed since the last (and what depends on them), ~2 s instead of ~15 s, even in
    a fresh checkout; `python scripts/typecheck.py` alone makes a fresh run."""
    checked = run(sys.executable, "scripts/typecheck.py", "--cache-dir", str(kept("mypy")))
    assert checked.returncode == 0, checked.stdout[-4000:]
    assert "Success: no issues found" in checked.stdout
