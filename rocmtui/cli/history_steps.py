"""`rocmtui history show ID [--json]`: one build's steps, each with its wait before it started
and its run, cached ones marked, and the critical path (the chain of dependent steps that set
the build's length) summed. Steps are read from the job store, else replayed from BuildKit's
history on the build's node (`history.stepstore`), and kept. Exit 0; 1 when the steps cannot
be had (the reason on stderr); 2 for an unknown job or a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, EXIT_USAGE, config_from
from rocmtui.core.history.baseline import diff_jobs
from rocmtui.core.history.stepreport import StepReport, shown_name
from rocmtui.core.history.stepstore import StepsUnavailable, export_record, steps_of
from rocmtui.core.history.stepviews import diff_json, steps_json
from rocmtui.core.jobs.control import get_job
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.text.units import fmt_seconds

#: A running build's stream is read this long: the steps so far (a live timeline follows it).
LIVE_PEEK = 3.0
SHOWN_STEPS = 400  # text mode; --json gives every step


def load_report(args: argparse.Namespace, job: str) -> tuple[JobRecord, StepReport] | int:
    """(the job's record, its step report), or an exit code with the reason printed."""
    config = config_from(args)
    store = JobStore.for_config(config)
    try:
        record = get_job(job, config, store)
    except LookupError as exc:
        print(f"rocmtui history: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return EXIT_USAGE
    running = record.ended_at is None
    try:
        kept = steps_of(config, store, record, timeout=LIVE_PEEK if running else 120.0)
    except StepsUnavailable as exc:
        print(f"rocmtui history: {exc}", file=sys.stderr)
        return EXIT_UNHEALTHY
    return record, StepReport.build(kept.steps, time.time(), running, kept.dropped)


def run_show(args: argparse.Namespace) -> int:
    """Print one build's steps."""
    loaded = load_report(args, args.job)
    if isinstance(loaded, int):
        return loaded
    record, report = loaded
    if args.json:
        out = {"job_id": record.id, "target": record.target, "arch": record.arch}
        out |= {"node": record.node, "state": str(record.state), **steps_json(report)}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return EXIT_OK
    render(record.id, f"{record.target} {record.arch or '-'} on {record.node}", report)
    return EXIT_OK


def render(job_id: str, what: str, report: StepReport) -> None:
    """The text: a head line, one line per step, the critical path."""
    cached = sum(1 for s in report.steps if s.cached)
    live = " · running" if report.running else ""
    print(
        f"job {job_id}: {what}{live} · {len(report.steps)} steps, {cached} cached · "
        f"{fmt_seconds(report.span)} from the first step's start to the last's end"
    )
    if report.dropped:
        print(f"({report.dropped} more steps were not kept: the bound is steps, not lines)")
    print(f"{'':1} {'START':>7} {'WAIT':>7} {'RUN':>7}  STEP")
    shown = report.steps[:SHOWN_STEPS]
    for s in shown:
        mark = "*" if s.critical else " "
        start = "-" if s.start is None else f"+{fmt_seconds(s.start)}"
        if s.cached:
            run = "cached"
        elif s.run is None:
            run = "?skew" if s.skewed else "-"
        else:
            run = fmt_seconds(s.run) + ("…" if s.open else "")
        tail = f"  ERROR: {s.error}" if s.error else ""
        print(f"{mark} {start:>7} {fmt_seconds(s.wait):>7} {run:>7}  {shown_name(s.name)}{tail}")
    if len(report.steps) > SHOWN_STEPS:
        print(f"(the first {SHOWN_STEPS} of {len(report.steps)} steps; --json for all)")
    path = report.critical_steps
    if path:
        print(
            f"critical path (*): {len(path)} steps, {fmt_seconds(report.path.run)} of "
            f"{fmt_seconds(report.span)}: " + " → ".join(shown_name(s.name) for s in path)
        )
    if report.path.note:
        print(f"note: {report.path.note}")


def run_diff(args: argparse.Namespace) -> int:
    """Print a build against its baseline (or another build)."""
    config = config_from(args)
    try:
        diff = diff_jobs(config, JobStore.for_config(config), args.job, args.other)
    except StepsUnavailable as exc:
        print(f"rocmtui history: {exc}", file=sys.stderr)
        return EXIT_UNHEALTHY
    except LookupError as exc:
        print(f"rocmtui history: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        sys.stdout.write(json.dumps(diff_json(diff), indent=2) + "\n")
        return EXIT_OK
    print(
        f"job {diff.now_job} ({fmt_seconds(diff.now_span)}) against {diff.then_job} "
        f"({fmt_seconds(diff.then_span)})"
    )
    print(f"  {'THEN':>8} {'NOW':>8}  STEP")

    def cell(run: float | None, cached: bool | None) -> str:
        if cached is None:
            return "-"
        return "cached" if cached else fmt_seconds(run)

    for s in diff.steps[:SHOWN_STEPS]:
        mark = "!" if s.missed else " "
        then, now = cell(s.then_run, s.then_cached), cell(s.now_run, s.now_cached)
        print(f"{mark} {then:>8} {now:>8}  {shown_name(s.name)}")
    if len(diff.steps) > SHOWN_STEPS:
        print(f"(the first {SHOWN_STEPS} of {len(diff.steps)} steps; --json for all)")
    print(diff.verdict)
    return EXIT_OK


def run_export(args: argparse.Namespace) -> int:
    """Write a build's record where buildx can; say why not where it cannot."""
    config = config_from(args)
    try:
        record = get_job(args.job, config, JobStore.for_config(config))
    except LookupError as exc:
        print(f"rocmtui history: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return EXIT_USAGE
    out = os.path.abspath(args.output)
    try:
        export_record(config, record, out)
    except StepsUnavailable as exc:
        print(f"rocmtui history: cannot export: {exc}", file=sys.stderr)
        return EXIT_UNHEALTHY
    print(f"job {record.id}: its build record written to {out}")
    print(IMPORT_NOTE)
    return EXIT_OK


#: Why the bundle is not imported back here: buildx's `history import` posts it to Docker
#: Desktop's build server (`~/.docker/desktop/docker-desktop-build.sock`), not to an engine;
#: without Docker Desktop it fails ("check if Docker Desktop is running"). Checked against
#: buildx 0.29 by tests/fleet/test_timeline_real.py.
IMPORT_NOTE = (
    "it imports into Docker Desktop only (`docker buildx history import -f FILE` sends it to "
    "Desktop's build socket; no engine takes a build record back)"
)
