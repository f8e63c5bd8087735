"""`rocmtui versions [--json]` (placeholder until the version check lands)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `versions` subcommand."""
    parser = sub.add_parser("versions", help="each pin beside the newest upstream release")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    """Not yet."""
    return 2
