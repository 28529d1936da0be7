"""The first sync's question (core.ingest.sync): nothing of this machine leaves it until a person says
what. `U` (or "Sync" in the palette) syncs with the hub; the first time, this screen lists the
machine's projects, none checked, and asks which are shared (or all of them), with the hub's URL
when none is remembered yet. What is chosen is remembered, as `threadloom sync --share` does, and
later syncs just run."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, SelectionList, Static

from ..core.base.text import printable
from ..core.ingest.sync import ProjectChoice


@dataclass(frozen=True)
class SyncChoice:
    """What the first sync was told: the hub, and the sharing rules (none: pull only)."""

    url: str
    rules: list[str]


class SyncScreen(ModalScreen[SyncChoice | None]):
    """Which projects leave this machine. Dismissed with the choice, or None (Esc: nothing syncs)."""

    DEFAULT_CSS = """
    SyncScreen { align: center middle; background: $background 60%; }
    #sync-box { width: 100; max-width: 95%; height: auto; max-height: 90%; border: round $accent;
        background: $surface; padding: 0 1; }
    #sync-why { color: $text-muted; margin-bottom: 1; }
    #sync-projects { height: auto; max-height: 16; }
    #sync-said { color: $warning; }
    """
    BINDINGS = [
        Binding("ctrl+s", "sync", "Sync", id="sync.start"),
        Binding("escape", "dismiss_none", "Cancel", id="sync.cancel"),
    ]

    def __init__(self, url: str | None, projects: list[ProjectChoice]) -> None:
        super().__init__()
        self.url = url
        self.projects = projects

    def compose(self) -> ComposeResult:
        with Vertical(id="sync-box") as box:
            box.border_title = "First sync: what leaves this machine"
            box.border_subtitle = "Space checks · Ctrl+S syncs · Esc cancels"
            yield Static(
                Text(
                    "Nothing is shared until you choose. The projects checked are pushed to the hub with "
                    "their sessions' tags, notes and entries; the others stay here. None checked: this "
                    "machine only pulls what others share. Remembered (`threadloom sync --share` and "
                    "`--exclude` change it)."
                ),
                id="sync-why",
            )
            if self.url is None:
                yield Input(placeholder="the hub: postgresql://you@host/db or service=NAME", id="sync-url")
            else:
                yield Static(Text(f"hub: {printable(self.url)}"), id="sync-hub")
            yield SelectionList[str](
                *[
                    (
                        f"{printable(p.path)} · {p.sessions} session{'' if p.sessions == 1 else 's'} · {printable(p.agents)}",
                        p.rule,
                    )
                    for p in self.projects
                ],
                id="sync-projects",
            )
            yield Checkbox(
                "every project, and those started later (and global memory entries)", id="sync-all"
            )
            yield Static("", id="sync-said")

    def on_mount(self) -> None:
        if self.url is None:
            self.query_one("#sync-url", Input).focus()
        else:
            self.query_one(SelectionList).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_sync()

    def action_sync(self) -> None:
        url = self.url or self.query_one("#sync-url", Input).value.strip()
        if not url:
            self.query_one("#sync-said", Static).update(
                "Give the hub's URL first (its owner made it with --init)."
            )
            return
        everything = self.query_one("#sync-all", Checkbox).value
        rules = ["all"] if everything else list(self.query_one(SelectionList).selected)
        self.dismiss(SyncChoice(url, rules))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
