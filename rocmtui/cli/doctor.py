"""`rocmtui doctor`: placeholder while it is written."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `doctor` subcommand."""
    parser = sub.add_parser(
        "doctor", help="check docker, buildx, every node, logins, the bake file"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")


def run(args: argparse.Namespace) -> int:
    return 0
