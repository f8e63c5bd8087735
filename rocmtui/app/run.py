"""Start the console (placeholder until the console issue lands)."""

from __future__ import annotations

import argparse
import sys


def run_console(args: argparse.Namespace) -> int:
    """Not built yet."""
    print("rocmtui: the console is not built yet; try `rocmtui status`", file=sys.stderr)
    return 2
