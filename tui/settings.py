"""What the TUI remembers between runs: a small TOML file beside the keymap.

    # ~/.config/threadloom/settings.toml (or $THREADLOOM_SETTINGS), written by threadloom
    hide_short_sessions = true
    projects_width = 30
    sessions_width = 52

It is read at start and written whenever a remembered setting changes. A damaged file (or a value
of the wrong type) gives the defaults and a warning, never a crash: the user's keys still work.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from .keymap import config_dir


@dataclass(slots=True)
class Settings:
    """Remembered choices; None for a width means the stylesheet's own."""

    hide_short_sessions: bool = False
    projects_width: int | None = None
    sessions_width: int | None = None


def settings_path() -> Path:
    """`$THREADLOOM_SETTINGS`, else `settings.toml` in the config folder (`config_dir`)."""
    env = os.environ.get("THREADLOOM_SETTINGS")
    return Path(env).expanduser() if env else config_dir() / "settings.toml"


def load_settings(path: Path) -> tuple[Settings, list[str]]:
    """The settings in `path` and the problems found (a missing file is not one; a key this
    version does not know is left alone, for a newer one that wrote it)."""
    settings = Settings()
    if not path.exists():
        return settings, []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return settings, [f"{path}: {exc}; using the defaults"]
    problems = []
    for f in fields(Settings):
        if f.name not in data:
            continue
        value = data[f.name]
        wanted = bool if f.name == "hide_short_sessions" else int
        if type(value) is not wanted or (wanted is int and not 10 <= value <= 1000):
            problems.append(
                f"{path}: {f.name} = {value!r} is not a {'true/false' if wanted is bool else 'width'}"
            )
            continue
        setattr(settings, f.name, value)
    return settings, problems


def save_settings(path: Path, settings: Settings) -> str | None:
    """Write `settings` (a temporary file renamed over the old one, so a crash never leaves half
    a file); returns the problem when it cannot be written, else None."""
    lines = ["# threadloom's remembered settings (written by threadloom; edit freely)"]
    for f in fields(Settings):
        value = getattr(settings, f.name)
        if value is not None:
            lines.append(f"{f.name} = {str(value).lower() if isinstance(value, bool) else value}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(path.name + ".tmp")
        temp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        temp.replace(path)
    except OSError as exc:
        return f"{path}: {exc}"
    return None
