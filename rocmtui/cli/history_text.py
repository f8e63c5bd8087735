"""`rocmtui history`'s text: builds (newest last, as a log reads), then one line per condition
of each target × arch × node, regressions marked `!`."""

from __future__ import annotations

from rocmtui.core.costbook.cost import CONDITIONS
from rocmtui.core.costbook.report import HistoryReport
from rocmtui.core.text.sanitize import sanitize_line
from rocmtui.core.text.units import fmt_age, fmt_when

SHOWN_BUILDS = 200  # the newest; --json and --csv give every one


def render(report: HistoryReport, now: float) -> None:
    """Print the report."""
    rows = [("STARTED", "TARGET", "ARCH", "NODE", "TOOK", "OUTCOME", "BY", "")]
    builds = list(report.builds[-SHOWN_BUILDS:])
    for row in (*builds, *report.running):
        evidence = row.describe()
        if row.ended_at is None:
            evidence = f"running · {report.running_note(row) or 'no earlier build'}"
        rows.append(
            (
                fmt_when(row.started_at, now),
                row.target,
                row.arch or "-",
                row.node,
                fmt_age(row.duration),
                row.outcome,
                sanitize_line(row.started_by, 40),
                sanitize_line(evidence, 160),
            )
        )
    if len(rows) == 1:
        print("no builds recorded")
        return
    if len(report.builds) > SHOWN_BUILDS:
        print(f"(the newest {SHOWN_BUILDS} of {len(report.builds)} builds; --json for all)")
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join([*(c.ljust(widths[i]) for i, c in enumerate(r[:-1])), r[-1]]).rstrip())
    print()
    for group in report.groups:
        head = f"{group.target} {group.arch or '-'} on {group.node}"
        est = f" · next {group.estimate.describe()}" if group.estimate else ""
        count = "1 build" if group.builds == 1 else f"{group.builds} builds"
        print(f"{head}: {count}{est}")
        for condition in CONDITIONS:
            stats = group.stats.get(condition)
            if stats is None:
                continue
            print(
                f"  {condition!s:<8} {stats.count:>4}×  median {fmt_age(stats.median):>7}  "
                f"p90 {fmt_age(stats.p90):>7}  last {fmt_age(stats.last):>7}"
            )
        for regression in group.regressions:
            print(f"  ! {regression.describe()}")
