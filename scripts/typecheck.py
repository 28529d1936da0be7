"""Type-check threadloom with mypy, under the names it installs as (`threadloom.core`, `threadloom.tui`).

    python scripts/typecheck.py [MYPY OPTIONS ...]

mypy cannot follow the import hook of an editable install, and the checkout's folders are named
`core/` and `tui/`: a temporary folder holding `threadloom` → this checkout gives mypy the same map
the installed package has. The configuration (strict on the core) is in pyproject.toml.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="threadloom-typecheck-") as shim:
        (Path(shim) / "threadloom").symlink_to(ROOT, target_is_directory=True)
        command = [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "-p",
            "threadloom.core",
            "-p",
            "threadloom.tui",
            "--cache-dir",
            os.devnull,  # a fresh run each time: writing a cache nobody reads costs a second
            *argv,
        ]
        env = {"MYPYPATH": shim, "PATH": "/usr/bin:/bin"}
        return subprocess.run(command, cwd=shim, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
