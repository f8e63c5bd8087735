"""`rocmtui cancel` (placeholder until its issue lands: registers the command, refuses to run)."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `cancel` subcommand."""
    sub.add_parser("cancel", help="(not yet built)")


def run(args: argparse.Namespace) -> int:
    """Not built yet."""
    print("rocmtui cancel: not built yet", file=sys.stderr)
    return 2
