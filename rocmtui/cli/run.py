"""`rocmtui run TARGET [--nodes A,B,...] [--set VAR=VALUE] [--push --yes] [--json]`.

A fleet run: the target or group on every chosen node at once (default: every node), each
node at its own GFX arch, under one run id printed on stdout (a human line per node on
stderr). Each build is an ordinary job (`rocmtui logs -f JOB`, `rocmtui cancel JOB`). A node
that is down, or whose launch was refused, does not start, and the run records why.
Exit 0 when every chosen node started, 1 when some did not, 2 for a usage or configuration
error (unknown target, node or variable; bad bake file).
"""

from __future__ import annotations

import argparse
import os
import sys

from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, EXIT_USAGE, config_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `run` subcommand."""
    parser = sub.add_parser(
        "run",
        help="a fleet run: a target or group on every node at once; print its run id",
        description="Start TARGET on every chosen node at once, each at its own GFX arch, "
        "under one run id (`rocmtui runs show ID` draws it).",
    )
    parser.add_argument("target", metavar="TARGET", help="a bake target or group")
    parser.add_argument(
        "--nodes", metavar="A,B", help="comma-separated fleet nodes (default: every node)"
    )
    parser.add_argument("--push", action="store_true", help="push the images (needs --yes)")
    parser.add_argument("--yes", action="store_true", help="confirm a run that pushes")
    parser.add_argument("--json", action="store_true", help="the run and each node's start")
    parser.add_argument(
        "--set",
        metavar="VAR=VALUE",
        action="append",
        default=[],
        dest="overrides",
        help="override a variable the bake file declares (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    """Start the run; print its id."""
    # on first use: kept off `--help`
    from rocmtui.cli.bake import load_bake_cached
    from rocmtui.core.bake.file import BakeError
    from rocmtui.core.bake.find import check_found
    from rocmtui.core.jobs.command import parse_overrides
    from rocmtui.core.jobs.refusals import LaunchError, ReadOnlyRefused
    from rocmtui.core.placement.fleetsource import fleet_snapshot
    from rocmtui.core.runs.launch import launch_run
    from rocmtui.core.text.sanitize import one_line

    config = config_from(args)
    nodes = [n.strip() for n in (args.nodes or "").split(",") if n.strip()] or None
    try:
        check_found(config)
        bake = load_bake_cached(config.bake_file)
        overrides = parse_overrides(args.overrides)
        snapshot, _ = fleet_snapshot(config)
        the_run, starts = launch_run(
            config, bake, args.target, nodes, overrides, args.push, args.yes, os.environ, snapshot
        )
    except ReadOnlyRefused as exc:
        print(f"rocmtui run: refused: {exc}", file=sys.stderr)
        return EXIT_UNHEALTHY
    except (LaunchError, BakeError) as exc:
        print(f"rocmtui run: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        # on first use: kept off `--help`
        from msgspec import json as mjson

        # on first use: kept off `--help`
        from rocmtui.core.runs.views import RunStartView

        print(mjson.encode(RunStartView.of(the_run, starts)).decode(), flush=True)
    else:
        print(the_run.id, flush=True)
    for s in starts:
        if s.job is not None:
            said = f"{s.node}: {s.job.target} for {s.job.arch or 'no arch'}: job {s.job.id}"
        else:
            said = f"{s.node}: not started: {s.why_not}"
        print(f"  {one_line(said)}", file=sys.stderr)
    print(f"rocmtui run: follow it: rocmtui runs show {the_run.id}", file=sys.stderr)
    return EXIT_OK if all(s.job is not None for s in starts) else EXIT_UNHEALTHY
