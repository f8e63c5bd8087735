"""`rocmtui versions [--json] [--fresh]`: each pin beside the newest upstream release and beside
what the registry's images were built from.

Upstream is asked at the URLs of the fleet file's `[upstream]` (nothing is built in: without it
the upstream column says "not configured"), each request under a deadline, answers kept under
the state folder and reused while young (`--fresh` asks again); an upstream that cannot be
reached shows its last answer and how old it is. Exit 0 when every pin is the newest release
and every image was built from today's pins, 1 otherwise, 2 for a fleet-file or bake-file error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, EXIT_USAGE, config_from
from rocmtui.core.text.sanitize import sanitize_line

if TYPE_CHECKING:  # the report is imported when the command runs, not for its --help
    from rocmtui.core.versions.report import VersionRow


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `versions` subcommand."""
    parser = sub.add_parser(
        "versions",
        help="each pin beside the newest upstream release and what the registry's images carry",
        description="Each pinned version (the bake file's *_VERSION variables) beside the "
        "newest upstream release (from the fleet file's [upstream]) and beside the pins the "
        "registry's images were built from (their labels).",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--fresh", action="store_true", help="ask upstream even if an answer is young"
    )


def upstream_cell(row: VersionRow) -> str:
    """`2.16.0 (pre 2.17.0rc1)`, with the state when it is not a fresh answer."""
    # on first use: kept off `--help`
    from rocmtui.core.text.units import fmt_age

    answer = row.upstream
    if answer.state == "not configured":
        return "not configured"
    text = answer.newest or "—"
    if answer.newest_pre:
        text += f" (pre {answer.newest_pre})"
    if answer.state != "ok":
        old = (
            f", {fmt_age(answer.age)} old answer" if answer.age is not None else ", no answer kept"
        )
        text = f"{text} [{'unreachable' if answer.state == 'offline' else 'error'}{old}]"
    return text


def registry_cell(row: VersionRow) -> str:
    """`2.15.0 ×6` (several values: each with its count)."""
    if not row.registry:
        return "—"
    return ", ".join(f"{v} ×{n}" for v, n in sorted(row.registry.items(), key=lambda x: -x[1]))


def run(args: argparse.Namespace) -> int:
    """Print the version check."""
    # on first use: kept off `--help`
    from rocmtui.core.bake.file import BakeError
    from rocmtui.core.versions.report import compute_versions

    config = config_from(args)
    try:
        versions = compute_versions(config, fresh=args.fresh)
    except BakeError as exc:
        print(f"rocmtui: {sanitize_line(str(exc), 200)}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        sys.stdout.write(json.dumps(versions.to_json(), indent=2) + "\n")
        return EXIT_OK if versions.current else EXIT_UNHEALTHY
    # on first use: kept off `--help`
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console.width = 160
    table = Table(
        title="pinned versions", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    # "pin is" over behind/newest/ahead: a headless column read as a second upstream cell
    for name in ("pin", "pinned", "source", "newest upstream", "pin is", "registry images"):
        table.add_column(name, no_wrap=True)
    styles = {"behind": "yellow", "newest": "green", "ahead": "cyan", "unknown": "dim"}
    for row in versions.rows:
        table.add_row(
            Text(sanitize_line(str(row.variable), 40), style="bold"),
            Text(sanitize_line(str(row.pinned or "?"), 40)),
            Text(row.source, style="dim" if row.source == "default" else "yellow"),
            Text(sanitize_line(str(upstream_cell(row)), 80)),
            Text(row.compared_shown, style=styles.get(row.compared, "dim")),
            Text(sanitize_line(str(registry_cell(row)), 80)),
        )
    console.print(table)
    if not versions.upstream_configured:
        console.print(
            Text(
                "upstream not configured: add [upstream] to the fleet file (see the README)",
                style="dim",
            )
        )
    for row in versions.rows:
        if row.upstream.reason:
            console.print(
                Text(sanitize_line(f"{row.variable}: {row.upstream.reason}", 300), style="yellow")
            )
    for error in versions.errors:
        console.print(Text(sanitize_line(str(error), 300), style="red"))
    console.print(Text(f"registry column read from {versions.registry_images} images", style="dim"))
    return EXIT_OK if versions.current else EXIT_UNHEALTHY
