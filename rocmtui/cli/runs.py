"""`rocmtui runs [--json|--csv]`, `rocmtui runs show ID [--json]`.

Every fleet run, newest first: rocmtui's own (`rocmtui run`) and those adopted from builds one
bake invocation started elsewhere across nodes. `show` draws one: a lane per node, a bar per
build, wall time, each node's busy and idle time, the chain that set the run's length, and
what changed against the run before it. Exit 0; 2 for a usage error or an unknown run.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from typing import TYPE_CHECKING

from rocmtui.cli.main import EXIT_OK, EXIT_USAGE, config_from

if TYPE_CHECKING:
    from rocmtui.core.runs.book import RunBook
    from rocmtui.core.runs.run import Run


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `runs` subcommand."""
    parser = sub.add_parser(
        "runs",
        help="fleet runs, newest first; `runs show ID` draws one",
        description="Every fleet run, newest first; `rocmtui runs show ID` draws one.",
    )
    parser.add_argument("action", nargs="?", choices=("show",), help="show one run")
    parser.add_argument("run_id", nargs="?", metavar="ID", help="a run id (or its end)")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="JSON")
    out.add_argument("--csv", action="store_true", help="one CSV line per build")


def run(args: argparse.Namespace) -> int:
    """List or show runs."""
    # on first use: kept off `--help`
    from rocmtui.core.jobs.store import JobStore
    from rocmtui.core.runs.book import RunBook
    from rocmtui.core.runs.chart import chart

    config = config_from(args)
    now = time.time()
    book = RunBook(JobStore.for_config(config), config.stall_after_seconds)
    book.bring_up_to_date(config.history_retention_days, now)
    fleet = [n.name for n in config.nodes]
    if args.action == "show":
        if not args.run_id:
            print("rocmtui runs show: which run? (rocmtui runs lists them)", file=sys.stderr)
            return EXIT_USAGE
        try:
            the_run = book.get(args.run_id, now)
        except LookupError as exc:
            print(f"rocmtui runs show: {exc}", file=sys.stderr)
            return EXIT_USAGE
        drawn = chart(the_run, now, fleet)
        previous = _previous(book, the_run, now)
        if args.json:
            # on first use: kept off `--help`
            from msgspec import json as mjson

            # on first use: kept off `--help`
            from rocmtui.core.runs.chart import compare
            from rocmtui.core.runs.views import RunView

            changes = compare(previous, the_run, now) if previous is not None else []
            view = RunView.of(drawn, now, previous, changes)
            sys.stdout.write(mjson.format(mjson.encode(view), indent=2).decode() + "\n")
        else:
            # on first use: kept off `--help`
            from rocmtui.cli.runs_text import render_chart

            render_chart(drawn, previous, now)
        return EXIT_OK
    runs = book.runs(None, now)
    charts = [chart(r, now, fleet) for r in runs]
    if args.json:
        # on first use: kept off `--help`
        from msgspec import json as mjson

        # on first use: kept off `--help`
        from rocmtui.core.runs.views import RunSummaryView

        views = [RunSummaryView.of(c) for c in charts]
        sys.stdout.write(mjson.format(mjson.encode(views), indent=2).decode() + "\n")
    elif args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["run_id", "job_id", "node", "target", "arch", "started_at",
                         "ended_at", "duration", "state", "condition"])  # fmt: skip
        for c in charts:
            for lane in c.lanes:
                for bar in lane.bars:
                    b = bar.build
                    writer.writerow([c.run.id, b.job_id, b.node, b.target, b.arch,
                                     b.started_at, b.ended_at, round(b.duration(now), 1),
                                     b.state, b.condition])  # fmt: skip
    else:
        # on first use: kept off `--help`
        from rocmtui.cli.runs_text import render_list

        render_list(charts)
    return EXIT_OK


def _previous(book: RunBook, the_run: Run, now: float) -> Run | None:
    """The run of the same target just before `the_run`, if any."""
    earlier = [r for r in book.runs(None, now) if r.target == the_run.target]
    earlier = [r for r in earlier if (r.started_at, r.id) < (the_run.started_at, the_run.id)]
    return earlier[0] if earlier else None
