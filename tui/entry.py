"""The `threadloom` console script: core's command line, with the TUI for the no-subcommand case.

The entry point lives here, not in core, so that core never imports the TUI; Textual is imported
only when the app actually opens, so subcommands start as fast as before.
"""

from __future__ import annotations

import argparse
import sys

from ..core.cli import main as cli_main


def open_app(args: argparse.Namespace) -> int:
    from .app import run_app

    return run_app(
        db_path=args.db,
        sources=args.source,
        demo=args.demo,
        ingest=not args.no_ingest,
        open_session=getattr(args, "open_session", None),
    )


def main(argv: list[str] | None = None) -> int:
    return cli_main(argv, run_tui=open_app)


if __name__ == "__main__":
    sys.exit(main())
