"""What the tests import: what they share from support modules, never from another test module;
Textual through its public API, never its private modules.

Importing a test module runs it again under a second name or drags its fixtures and module state
along, and ties one layer's tests to another's: what more than one module needs lives in
tests/support.py, tests/tui_support.py, tests/pg_support.py, tests/toy_agent.py or tests/builders/.
A private Textual module (`textual._wait`, `textual.widgets._footer`) can change in any release:
the tests drive the app as a user of Textual's public API can.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("tests", "scripts", "bench")


def is_test_module(module: str) -> bool:
    """A pytest module (`test_*`, a conftest) under tests/, by its dotted name."""
    parts = module.split(".")
    return parts[0] == "tests" and (parts[-1].startswith("test_") or parts[-1] == "conftest")


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """Every module an import statement anywhere in `tree` (in a function too) loads, with its line:
    `from tests.x import test_y` names the module `tests.x.test_y` as well."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def is_private_textual(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "textual" and any(part.startswith("_") for part in parts[1:])


def offences(path: Path, rule=is_test_module) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{path.relative_to(ROOT)}:{line}: imports {module}"
        for line, module in imported_modules(tree)
        if rule(module)
    ]


def scanned() -> list[Path]:
    """The project's own Python files: not those of a virtual environment inside the tree (the bench
    installs claude-code-log into bench/.venv-ccl, Textual with it)."""
    files = sorted(
        p
        for folder in SCANNED
        for p in (ROOT / folder).rglob("*.py")
        if not any((parent / "pyvenv.cfg").exists() for parent in p.parents if ROOT in parent.parents)
    )
    assert len(files) > 100  # the walk found the suite
    return files


def test_no_module_imports_a_test_module() -> None:
    found = [o for path in scanned() for o in offences(path)]
    assert not found, "move what is shared into a support module:\n" + "\n".join(found)


def test_no_module_imports_a_private_textual_module() -> None:
    found = [o for path in scanned() for o in offences(path, is_private_textual)]
    assert not found, "use Textual's public API (tests/tui_support.py has QuickPilot):\n" + "\n".join(found)


def test_the_check_sees_each_way_of_importing_one(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import tests.store.test_sync\n"
        "from tests.unit import test_adapter_gemini\n"
        "from tests.conftest import ingest\n"
        "def f():\n"
        "    from tests.unit.test_adapter_codex import full_session\n"
        "from tests.support import ingest\n"
        "from tests.builders.claude import Transcript\n"
    )
    tree = ast.parse(sample.read_text())
    flagged = sorted({line for line, module in imported_modules(tree) if is_test_module(module)})
    assert flagged == [1, 2, 3, 5]
    private = ast.parse(
        "from textual._wait import wait_for_idle\nfrom textual.widgets._footer import FooterKey\n"
        "from textual.keys import _character_to_key\nimport textual._animator\n"
        "from textual.keys import key_to_character\nfrom textual.pilot import Pilot\n"
    )
    assert sorted({line for line, module in imported_modules(private) if is_private_textual(module)}) == [
        1,
        2,
        3,
        4,
    ]
