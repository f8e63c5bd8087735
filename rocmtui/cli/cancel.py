"""`rocmtui cancel JOB [--grace SECONDS]`: stop a running build and record `cancelled`.

SIGTERM to the job's whole process group, SIGKILL after the grace period, then any process
left in the job's session. Exit codes: 0 cancelled, 1 the job had already ended, was started
elsewhere (only the client that started it can cancel it) or the fleet is read-only, 2 no such
job.
"""

from __future__ import annotations

import argparse
import json
import sys

from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, EXIT_USAGE, config_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `cancel` subcommand."""
    parser = sub.add_parser(
        "cancel",
        help="cancel a running build",
        description="Cancel a running build: SIGTERM to its process group, SIGKILL after a "
        "grace period; `cancelled` is recorded.",
    )
    parser.add_argument("job", metavar="JOB", help="job id, unique prefix or suffix")
    parser.add_argument(
        "--grace",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="wait before SIGKILL (default 10)",
    )
    parser.add_argument(
        "--json", action="store_true", help="one JSON object on stdout: the job and its state"
    )


def run(args: argparse.Namespace) -> int:
    """Cancel the job."""
    # on first use: kept off `--help`
    from rocmtui.core.jobs.control import JobNotRunning, StartedElsewhere, cancel_job
    from rocmtui.core.jobs.refusals import ReadOnlyRefused
    from rocmtui.core.jobs.store import JobNotFound

    config = config_from(args)
    try:
        record = cancel_job(config, args.job, grace=max(0.0, args.grace))
    except StartedElsewhere as exc:
        print(f"rocmtui cancel: {exc}", file=sys.stderr)
        client = exc.record.outside.client if exc.record.outside else None
        _answer(args, {"cancelled": False, "reason": str(exc), "client": client})
        return EXIT_UNHEALTHY
    except JobNotRunning as exc:
        print(f"rocmtui cancel: {exc}", file=sys.stderr)
        _answer(args, {"cancelled": False, "reason": str(exc)})
        return EXIT_UNHEALTHY
    except ReadOnlyRefused as exc:
        print(f"rocmtui cancel: refused: {exc}", file=sys.stderr)
        _answer(args, {"cancelled": False, "reason": str(exc)})
        return EXIT_UNHEALTHY
    except LookupError as exc:
        assert isinstance(exc, JobNotFound | LookupError)
        reason = exc.args[0] if exc.args else str(exc)
        print(f"rocmtui cancel: {reason}", file=sys.stderr)
        _answer(args, {"cancelled": False, "error": reason})
        return EXIT_USAGE
    if args.json:
        _answer(args, {"cancelled": True, "job_id": record.id, "state": str(record.state)})
    else:
        print(f"{record.id} {record.state}")
    return EXIT_OK


def _answer(args: argparse.Namespace, data: dict[str, object]) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, sort_keys=True), flush=True)
