"""Running an agent in this terminal: the terminal handed over to a command and taken back when
it ends (the fork picker and the new-session dialog both do it)."""

from __future__ import annotations

import contextlib
import os
import subprocess

from textual.app import App

# The seam tests replace: `hand_over` gives the terminal away (Textual's suspend), `run_in_shell`
# starts the command in it and waits.


def hand_over(app: App) -> contextlib.AbstractContextManager[None]:
    """The terminal handed to another program for the `with` block (SuspendNotSupported headless)."""
    return app.suspend()


def run_in_shell(command: str) -> int:
    """Run `command` (already quoted by core) with the user's shell, in the foreground; its exit code."""
    shell = os.environ.get("SHELL") or "/bin/sh"
    print(f"threadloom: {command}\n(threadloom comes back when this ends)\n", flush=True)
    code = subprocess.run([shell, "-c", command], check=False).returncode
    if code != 0:  # what went wrong stays on screen until read
        print(
            f"\nthreadloom: the command ended with exit status {code}; press Enter to go back to threadloom.",
            flush=True,
        )
        with contextlib.suppress(EOFError, OSError):
            input()
    return code
