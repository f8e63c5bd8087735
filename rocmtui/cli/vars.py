"""`rocmtui vars` (placeholder until its issue lands: registers the command, refuses to run)."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `vars` subcommand."""
    sub.add_parser("vars", help="(not yet built)")


def run(args: argparse.Namespace) -> int:
    """Not built yet."""
    print("rocmtui vars: not built yet", file=sys.stderr)
    return 2
