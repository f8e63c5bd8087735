"""`rocmtui jobs` (placeholder until its issue lands: registers the command, refuses to run)."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `jobs` subcommand."""
    sub.add_parser("jobs", help="(not yet built)")


def run(args: argparse.Namespace) -> int:
    """Not built yet."""
    print("rocmtui jobs: not built yet", file=sys.stderr)
    return 2
