"""`rocmtui matrix [--json]`: every buildable target × arch, with the registry as the record.

For each cell: the tag bake resolves, what the registry holds under it, the last job for it and
a verdict (published, stale, moved, missing, failed, building, never built; unknown when the
registry could not say). Exit 0 when every cell is published (or building), 1 otherwise, 2 for
a fleet-file or bake-file error.
"""

from __future__ import annotations

import argparse
import json
import sys

from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, EXIT_USAGE, config_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `matrix` subcommand."""
    parser = sub.add_parser(
        "matrix",
        help="every buildable target × arch: what the registry holds, the last job, a verdict",
        description="Every buildable target of the bake file (matrix names included, groups "
        "not) for every arch: the tag bake resolves with the pins in effect now, what the "
        "fleet's registry holds under it, the last job that built it, and a verdict.",
    )
    parser.add_argument("--json", action="store_true", help="print the matrix as JSON")


def run(args: argparse.Namespace) -> int:
    """Compute and print the matrix."""
    # on first use: kept off `--help`
    from rocmtui.core.bake.file import BakeError
    from rocmtui.core.matrix.report import compute_matrix
    from rocmtui.core.matrix.views import matrix_json
    from rocmtui.core.text.sanitize import sanitize_line

    config = config_from(args)
    try:
        matrix = compute_matrix(config)
    except BakeError as exc:
        print(f"rocmtui: {sanitize_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        sys.stdout.write(json.dumps(matrix_json(matrix), indent=2) + "\n")
    else:
        # on first use: kept off `--help`
        from rocmtui.cli.matrix_text import render

        render(matrix)
    sys.stdout.flush()
    return EXIT_OK if matrix.healthy else EXIT_UNHEALTHY
