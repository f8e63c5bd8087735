"""`rocmtui vars [--json]`: every bake variable, its default, its effective value and its source.

The environment is the one `docker buildx bake` would get when launched by rocmtui from this
shell: the scrubbed launch environment (`bake_environment`) plus, as overrides, the variables of
this shell named exactly like a bake variable (bake's own override rule) and any `--env
NAME=VALUE`. Values are resolved by buildx itself (`resolved_variables`) when it is installed;
`--no-resolve`, or no buildx, shows what the file says and marks the rest unresolved rather
than guessing. Secret-looking names are redacted; nothing reaches the terminal unsanitised.

Exit 0; 2 for a fleet-file or bake-file error (one `FILE:LINE: message` line on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import msgspec
from msgspec import Struct

from rocmtui.cli.main import EXIT_OK, EXIT_USAGE, config_from
from rocmtui.core.bake.effective import (
    EffectiveVariable,
    effective_variables,
    fleet_variables,
    shell_overrides,
)
from rocmtui.core.bake.file import BakeError, load_bake
from rocmtui.core.bake.find import check_found, shown
from rocmtui.core.bake.resolve import BuildxMissing, bake_environment, resolved_variables
from rocmtui.core.text.sanitize import sanitize_line

#: How long buildx may take to answer before `vars` gives up on it.
RESOLVE_TIMEOUT = 15.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `vars` subcommand."""
    parser = sub.add_parser(
        "vars",
        help="every bake variable: default, effective value and where it comes from",
        description="List every variable of the bake file with its default (as written), the "
        "value bake will use, and where that comes from (default or environment). Values are "
        "resolved by `docker buildx bake --print` when buildx is installed.",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.add_argument(
        "--no-resolve",
        action="store_true",
        help="do not run buildx: show only what the file says (computed values unresolved)",
    )
    parser.add_argument(
        "--env",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="an override, as a launch with it would see it (repeatable)",
    )


def _parse_env(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise BakeError(f"--env {item!r}: expected NAME=VALUE", "<command line>")
        out[name] = value
    return out


def run(args: argparse.Namespace) -> int:
    """Print the variables; 2 on a fleet-file or bake-file error."""
    config = config_from(args)
    try:
        check_found(config)
        bake = load_bake(config.bake_file)
        own = shell_overrides(bake, os.environ) | _parse_env(args.env)
        from_fleet = fleet_variables(config.variables, bake)
        overrides = from_fleet | own
        env = bake_environment(os.environ, overrides, bake_variables=bake.variables)
        resolved: dict[str, str] | None = None
        note = "not resolved (--no-resolve)" if args.no_resolve else None
        if not args.no_resolve:
            try:
                resolved = resolved_variables(
                    config.bake_file, bake.variables, env, RESOLVE_TIMEOUT
                )
            except BuildxMissing as exc:
                note = f"not resolved: {exc.message}"
        rows = effective_variables(bake, env, resolved, from_fleet.keys() - own.keys())
    except BakeError as exc:
        print(f"rocmtui: {sanitize_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        sys.stdout.write(json.dumps([to_json(v) for v in rows], indent=2) + "\n")
    else:
        render(rows, shown(config.bake_file), note)
    sys.stdout.flush()
    return EXIT_OK


class VariableView(Struct, frozen=True, kw_only=True):
    """One variable as `rocmtui vars --json` prints it: `default` is the declaration's text
    (`default_source`), the evaluated default is not printed."""

    name: str
    default: str
    value: str | None
    source: str
    line: int
    file: str | None
    secret: bool
    resolved: bool


def to_json(v: EffectiveVariable) -> dict[str, Any]:
    """One variable for scripts: `value` is null when unresolved (see `resolved`)."""
    view = VariableView(
        name=v.name,
        default=v.default_source,
        value=v.value,
        source=v.source,
        line=v.line,
        file=v.file,
        secret=v.secret,
        resolved=v.resolved,
    )
    data: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(view))
    return data


def render(
    rows: list[EffectiveVariable], bake_file: str, note: str | None, width: int | None = None
) -> None:
    """A table for people (every cell is Text, never markup): overridden values stand out,
    unresolved ones say so. Piped output is drawn 160 columns wide, as `status` does."""
    # on first use: kept off `--help`
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(highlight=False, soft_wrap=False, width=width)
    if width is None and not console.is_terminal:
        console.width = 160
    title = f"bake variables — {sanitize_line(bake_file)}"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("variable", no_wrap=True)
    table.add_column("default (as written)", overflow="fold")
    table.add_column("effective value", overflow="fold")
    table.add_column("source", no_wrap=True)
    for v in rows:
        if v.value is None:
            value = Text("(unresolved)" if not v.resolved else "(null)", style="dim italic")
        elif v.value == "":
            value = Text('""', style="dim")
        else:
            value = Text(sanitize_line(v.value), style="" if v.source == "default" else "bold")
        source = Text(v.source, style="dim" if v.source == "default" else "yellow")
        table.add_row(Text(v.name), Text(sanitize_line(v.default_source)), value, source)
    console.print(table)
    if note:
        console.print(Text(note, style="dim"))
