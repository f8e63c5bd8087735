"""`rocmtui jobs [--json] [--limit N]`: every operator's jobs, newest first, with live state.

State is computed on read: `stalled` (with its evidence) for a running job whose log has been
silent past the fleet file's `stall_after_seconds`, `lost` for a job whose supervisor is gone
without an outcome. Text from outside (error steps, evidence) is sanitised before printing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from rocmtui.cli.main import EXIT_OK, config_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `jobs` subcommand."""
    parser = sub.add_parser(
        "jobs",
        help="list bake jobs (newest first) with state and duration",
        description="List bake jobs of every operator, newest first, with their live state.",
    )
    parser.add_argument("--json", action="store_true", help="a JSON list instead of a table")
    parser.add_argument("--limit", type=int, default=50, metavar="N", help="at most N jobs")


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _info(record: object) -> str:
    from rocmtui.core.jobs.store import JobRecord
    from rocmtui.core.sanitize import sanitize_line
    from rocmtui.core.states import JobState

    assert isinstance(record, JobRecord)
    if record.state is JobState.STALLED or (record.state is JobState.RUNNING and record.evidence):
        text = record.evidence or ""  # stalled, or the link to its remote node is down
    elif record.state is JobState.SUCCEEDED:
        text = f"digest {record.digest}" if record.digest else ""
    elif record.state is JobState.FAILED:
        text = f"exit {record.exit_code}" + (
            f" at {record.error_step}" if record.error_step else ""
        )
        if record.message:
            text += f"; {record.message}"
    else:
        text = record.message or ""
    return sanitize_line(text, 160)


def run(args: argparse.Namespace) -> int:
    """Print the job list."""
    from rocmtui.core.display import fmt_age
    from rocmtui.core.jobs import list_jobs

    config = config_from(args)
    now = time.time()
    records = list_jobs(config, limit=max(1, args.limit), with_evidence=True)
    if args.json:
        out = []
        for r in records:
            data = r.to_json()
            data["duration"] = round(r.duration(now), 3)
            data["log"] = str(r.log_path)
            out.append(data)
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    if not records:
        print("no jobs")
        return EXIT_OK
    rows = [("ID", "STATE", "TARGET", "ARCH", "NODE", "USER", "STARTED", "TOOK", "")]
    for r in records:
        rows.append(
            (
                r.id,
                str(r.state),
                r.target,
                r.arch,
                r.node,
                r.user,
                _when(r.started_at),
                fmt_age(r.duration(now)),
                _info(r),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        print("  ".join([*cells, row[-1]]).rstrip())
    return EXIT_OK
