"""The layers hold: the headless core never imports Textual or the TUI, adapters never reach the
store. Two guards: import-linter's contracts (pyproject.toml) over the import graph, and the core
imported in a fresh interpreter with nothing of Textual loaded after it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    out = subprocess.run([str(lint), "--no-cache"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 kept, 0 broken" in out.stdout


def test_a_broken_contract_is_reported(tmp_path: Path) -> None:
    """The contracts are live: a config forbidding an import the core makes fails."""
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["threadloom.core"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "core without sqlite3"\ntype = "forbidden"\n'
        'source_modules = ["threadloom.core.store.db"]\nforbidden_modules = ["threadloom.core.store.models"]\n'
    )
    lint = Path(sys.executable).parent / "lint-imports"
    out = subprocess.run([str(lint), "--no-cache", "--config", str(config)], capture_output=True, text=True)
    assert out.returncode == 1
    assert "BROKEN" in out.stdout


def test_core_never_imports_textual() -> None:
    modules = sorted(
        "threadloom.core." + ".".join(p.relative_to(ROOT / "core").with_suffix("").parts)
        for p in (ROOT / "core").rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    )
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual' or m.startswith('threadloom.tui')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", check=True)
    assert len(modules) >= 10
    assert out.stdout.strip() == "[]"
