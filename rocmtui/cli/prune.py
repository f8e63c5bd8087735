"""`rocmtui prune NODE [--keep-storage SIZE] [--until AGE] [--yes]`: a node's build cache,
shown, asked, pruned.

Shows what BuildKit would remove from NODE's build cache and how much, asks (unless `--yes`;
with no terminal to ask on, nothing is pruned), then prunes that node's build cache only and
records who pruned what and when in the job store. Refused in read-only mode and while a build
runs on the node (unless `--allow-running`). Exit codes: 0 pruned (or nothing to prune, or the
answer was no), 1 refused or the engine did not answer, 2 a usage error or an unknown node.
"""

from __future__ import annotations

import argparse
import json
import sys

from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, EXIT_USAGE, config_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `prune` subcommand."""
    parser = sub.add_parser(
        "prune",
        help="show, then prune a node's build cache",
        description="Show what BuildKit would remove from a node's build cache and how much, "
        "ask, then prune that node's build cache only. Refused read-only and while a build runs "
        "there.",
    )
    parser.add_argument("node", metavar="NODE", help="the node, by its name in the fleet file")
    parser.add_argument(
        "--keep-storage", metavar="SIZE", help="keep this much cache (e.g. 10GB): oldest go first"
    )
    parser.add_argument("--until", metavar="AGE", help="only records unused for AGE (e.g. 24h)")
    parser.add_argument("--yes", action="store_true", help="prune without asking")
    parser.add_argument(
        "--allow-running", action="store_true", help="prune even while a build runs there"
    )
    parser.add_argument("--json", action="store_true", help="the plan and the result as JSON")


def run(args: argparse.Namespace) -> int:
    """Plan, ask, prune."""
    # on first use: kept off `--help`
    from rocmtui.core.jobs.refusals import ReadOnlyRefused
    from rocmtui.core.prune.action import PruneRefused, prune_node
    from rocmtui.core.prune.engine import EngineUnreachable
    from rocmtui.core.prune.plan import PruneFilters, PrunePlan, parse_age, parse_size, summary
    from rocmtui.core.text.sanitize import one_line

    config = config_from(args)
    try:
        filters = PruneFilters(
            keep_storage=parse_size(args.keep_storage) if args.keep_storage else None,
            until_seconds=parse_age(args.until) if args.until else None,
        )
    except ValueError as exc:
        print(f"rocmtui prune: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if config.node(args.node) is None:
        print(f"rocmtui prune: no node named {args.node!r} in the fleet file", file=sys.stderr)
        return EXIT_USAGE

    def confirm(plan: PrunePlan) -> bool:
        out = sys.stderr if args.json else sys.stdout
        for line in summary(plan):
            print(line, file=out)
        if not plan.records:
            return False
        if args.yes:
            return True
        if not sys.stdin.isatty():
            print("rocmtui prune: not pruned: no terminal to ask on (--yes)", file=sys.stderr)
            return False
        answer = input(f"Prune these from {plan.node}? [y/N] ").strip().lower()
        return answer in ("y", "yes")

    try:
        outcome = prune_node(config, args.node, filters, confirm, allow_running=args.allow_running)
    except (ReadOnlyRefused, PruneRefused, EngineUnreachable) as exc:
        print(f"rocmtui prune: refused: {one_line(str(exc))}", file=sys.stderr)
        if args.json:
            print(json.dumps({"pruned": False, "reason": one_line(str(exc))}))
        return EXIT_UNHEALTHY
    plan, result = outcome.plan, outcome.result
    if args.json:
        print(
            json.dumps(
                {
                    "pruned": result is not None,
                    "node": plan.node,
                    "planned_records": [r.id for r in plan.records],
                    "planned_bytes": plan.bytes,
                    "deleted_records": list(result.deleted) if result else [],
                    "reclaimed_bytes": result.reclaimed_bytes if result else 0,
                },
                indent=2,
            )
        )
    elif result is not None:
        # on first use: kept off `--help`
        from rocmtui.core.text.units import fmt_bytes

        print(f"pruned {len(result.deleted)} records, {fmt_bytes(result.reclaimed_bytes)}")
    elif plan.records:
        print("not pruned")
    return EXIT_OK
