"""`rocmtui history [--json|--csv] [--target T] [--arch A] [--node N] [--since 7d]`.

Every build of each target × arch × node, whoever started it, with start, duration, outcome,
who started it, its cache condition and the evidence for it; then per target × arch × node the
median, p90 and last duration per condition, regressions and what the next build is expected
to take. The JSON shape is documented in the README and only ever extended. Exit 0, 1 when a
regression is shown, 2 for a usage or configuration error.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, add_config_option, config_from

_SPAN = re.compile(r"^(\d+(?:\.\d+)?)([mhdw])$")
_UNIT = {"m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}


def since_seconds(text: str) -> float:
    """`7d`, `12h`, `30m`, `2w` as seconds; or a date `2026-12-01` (UTC) as an epoch (a
    negative number says 'absolute'). argparse turns the ValueError into exit 2."""
    m = _SPAN.match(text.strip())
    if m:
        return float(m.group(1)) * _UNIT[m.group(2)]
    try:
        stamp = time.strptime(text.strip(), "%Y-%m-%d")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a span such as 7d, 12h, 30m or 2w, or a date such as 2026-12-01"
        ) from None
    # on first use: kept off `--help`
    import calendar

    return -float(calendar.timegm(stamp))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `history` subcommand."""
    parser = sub.add_parser(
        "history",
        help="every build of each target × arch × node: duration, outcome, cache condition",
        description="Every build of each target × arch × node, whoever started it (rocmtui "
        "or BuildKit's history), with duration, outcome and cache condition (frozen, hot, "
        "warm, cold, unknown) with its evidence; per target × arch × node the median, p90 and "
        "last duration per condition, regressions and an estimate. Exit 1 when a regression "
        "is shown.",
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="the documented JSON shape")
    out.add_argument("--csv", action="store_true", help="one CSV line per build")
    parser.add_argument("--target", metavar="T", help="only this bake target")
    parser.add_argument("--arch", metavar="A", help="only this arch (gfx950 ...)")
    parser.add_argument("--node", metavar="N", help="only this node")
    parser.add_argument(
        "--since",
        type=since_seconds,
        metavar="SPAN",
        help="only builds started in the last SPAN (7d, 12h, 30m, 2w) or since a date",
    )
    register_actions(parser)


def register_actions(parser: argparse.ArgumentParser) -> None:
    """`history show|diff|export`: one build's steps, two builds compared, a build's record."""
    actions = parser.add_subparsers(dest="action", metavar="[ACTION]", required=False)
    show = actions.add_parser(
        "show",
        help="one build's steps: wait and run, cached, the critical path",
        description="One build's steps (BuildKit's vertices), each with its wait before it "
        "started and its run, cached ones marked, and the critical path summed.",
    )
    show.add_argument("job", metavar="ID", help="a job id, unique prefix or suffix")
    show.add_argument("--json", action="store_true", help="every step, as JSON")
    add_config_option(show)
    diff = actions.add_parser(
        "diff",
        help="a build against the one before it: per step then and now, the first miss, why",
        description="A build (ID) against OTHER, by default its baseline: the last successful "
        "build of the same target × arch before it, on the same node when there is one. Per "
        "step its time then and now, cached then and not now (!), the first step whose cache "
        "missed and why: build args, bake variables, materials (base image digests) that "
        "differ, sccache's hit rate; 'unknown' with what was compared when none differs.",
    )
    diff.add_argument("job", metavar="ID", help="the build: a job id, unique prefix or suffix")
    diff.add_argument("other", metavar="OTHER", nargs="?", help="the build to compare with")
    diff.add_argument("--json", action="store_true", help="as JSON")
    add_config_option(diff)
    export = actions.add_parser(
        "export",
        help="a build's record as `docker buildx history export` writes it (Docker Desktop)",
        description="Write a build's record with `docker buildx history export` on its node "
        "(the bundle Docker Desktop imports), where the builder can (buildx 0.29 and a "
        "BuildKit that keeps history); says plainly why not where it cannot.",
    )
    export.add_argument("job", metavar="ID", help="a job id, unique prefix or suffix")
    export.add_argument("-o", "--output", metavar="FILE", required=True, help="where to write")
    add_config_option(export)


def run(args: argparse.Namespace) -> int:
    """Print the history, or run its action."""
    action = getattr(args, "action", None)
    if action == "show":
        # on first use: kept off `--help`
        from rocmtui.cli.history_steps import run_show

        return run_show(args)
    if action == "export":
        # on first use: kept off `--help`
        from rocmtui.cli.history_steps import run_export

        return run_export(args)
    if action == "diff":
        # on first use: kept off `--help`
        from rocmtui.cli.history_steps import run_diff

        return run_diff(args)
    # on first use: kept off `--help`
    from rocmtui.core.costbook.book import CostFilter, load_history
    from rocmtui.core.costbook.report import HistoryReport
    from rocmtui.core.jobs.store import JobStore

    config = config_from(args)
    now = time.time()
    since = None
    if args.since is not None:
        since = -args.since if args.since < 0 else now - args.since
    which = CostFilter(target=args.target, arch=args.arch, node=args.node, since=since)
    rows, running = load_history(
        JobStore.for_config(config),
        config.history_retention_days,
        which,
        config.stall_after_seconds,
        now,
    )
    report = HistoryReport.build(rows, running, now)
    if args.json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
    elif args.csv:
        sys.stdout.write(report.to_csv())
    else:
        # on first use: kept off `--help`
        from rocmtui.cli.history_text import render

        render(report, now)
    return EXIT_UNHEALTHY if any(g.regressions for g in report.groups) else EXIT_OK
