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
from typing import TYPE_CHECKING

from rocmtui.cli.main import EXIT_OK, config_from

if TYPE_CHECKING:  # imported when a command runs, not for `rocmtui --help`
    from rocmtui.core.history.outside import OutsideBuild
    from rocmtui.core.jobs.record import JobRecord


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `jobs` subcommand."""
    parser = sub.add_parser(
        "jobs",
        help="list bake jobs (newest first) with state and duration",
        description="List bake jobs of every operator, newest first, with their live state.",
    )
    parser.add_argument("--json", action="store_true", help="a JSON list instead of a table")
    parser.add_argument(
        "--limit", type=int, default=50, metavar="N", help="at most N jobs (default 50)"
    )


def _info(record: JobRecord) -> str:
    # on first use: kept off `--help`
    from rocmtui.core.jobs.images import read_cache_stats, read_push_check
    from rocmtui.core.text.sanitize import sanitize_line

    text = _outcome(record)
    if record.outside is not None:
        text = f"{_elsewhere(record.outside)} · {text}".rstrip(" ·")
    check = read_push_check(record.job_dir)
    if check is not None:  # the closed loop: what the registry holds under the pushed tags
        text = f"{text} · {check.describe()}".lstrip(" ·")
    stats = read_cache_stats(record.job_dir)
    if stats is not None:
        text = f"{text} · {stats.describe()}".lstrip(" ·")
    return sanitize_line(text, 240)


def _outcome(record: JobRecord) -> str:
    # on first use: kept off `--help`
    from rocmtui.core.states import JobState

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
    return text


def _elsewhere(out: OutsideBuild) -> str:
    """What BuildKit knows of a build started elsewhere, in a few words."""
    parts = ["started elsewhere", out.name or ""]
    if out.client:
        parts.append(f"by {out.client}")
    if out.cached_percent is not None:
        parts.append(f"{out.cached_percent}% of steps cached")
    if out.follow_note:
        parts.append(out.follow_note)
    return ": ".join(parts[:2]).rstrip(": ") + "".join(f" · {p}" for p in parts[2:])


def _images(record: JobRecord) -> list[str]:
    """A job of several targets (a group): one line per target with its own digest and the
    registry's word on it."""
    # on first use: kept off `--help`
    from rocmtui.core.jobs.images import job_images, read_push_check
    from rocmtui.core.states import LOOP_SYMBOLS
    from rocmtui.core.text.sanitize import sanitize_line

    images = job_images(record.job_dir, record.target, record.arch)
    if len(images) < 2:
        return []
    check = read_push_check(record.job_dir)
    words = {i.target: i.state for i in check.images} if check is not None else {}
    lines = []
    for image in images:
        word = words.get(image.target)
        loop = f"  {LOOP_SYMBOLS.get(word, '?')} {word}" if word else ""
        line = f"    {image.target}  {image.digest or 'no digest'}{loop}"
        lines.append(sanitize_line(line, 240))
    return lines


def _failure(record: JobRecord) -> list[str]:
    """A failed job's two lines under its row: why it failed, and what to do next."""
    # on first use: kept off `--help`
    from rocmtui.core.jobs.evidence import failure_of
    from rocmtui.core.text.sanitize import sanitize_line

    why = failure_of(record)
    if why is None:
        return []
    return [sanitize_line(f"    why: {why.why}", 300), sanitize_line(f"    next: {why.next}", 300)]


def _extras(record: JobRecord) -> dict[str, object]:
    """The JSON fields beside the record: each target's image, the loop, cache statistics,
    and for a failed job why it failed (`cause`, `why`, `next`, `evidence`)."""
    # on first use: kept off `--help`
    from msgspec import to_builtins

    # on first use: kept off `--help`
    from rocmtui.core.jobs.evidence import failure_of
    from rocmtui.core.jobs.images import job_images, read_cache_stats, read_push_check

    check = read_push_check(record.job_dir)
    stats = read_cache_stats(record.job_dir)
    why = failure_of(record)
    return {
        "images": [to_builtins(i) for i in job_images(record.job_dir, record.target, record.arch)],
        "registry": to_builtins(check) if check is not None else None,
        "sccache": stats.to_json() if stats is not None else None,
        "failure": to_builtins(why) if why is not None else None,
    }


def run(args: argparse.Namespace) -> int:
    """Print the job list."""
    # on first use: kept off `--help`
    from rocmtui.core.jobs.control import list_jobs
    from rocmtui.core.jobs.store import JobStore
    from rocmtui.core.text.units import fmt_age, fmt_when
    from rocmtui.core.verdicts.oneshot import one_shot_judge

    config = config_from(args)
    store = JobStore.for_config(config)
    judge = one_shot_judge(config, store)  # vitals once, of the nodes with silent builds
    now = time.time()
    records = list_jobs(config, store, limit=max(1, args.limit), with_evidence=True, judge=judge)
    if args.json:
        from rocmtui.core.jobs.views import record_json  # start-up: not for `jobs --help`

        out = []
        for r in records:
            data = record_json(r)
            data["duration"] = round(r.duration(now), 3)
            data["log"] = str(r.log_path)
            data.update(_extras(r))
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
                "(elsewhere)" if r.outside is not None else r.user,
                fmt_when(r.started_at, now),
                fmt_age(r.duration(now)),
                _info(r),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for index, row in enumerate(rows):
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        print("  ".join([*cells, row[-1]]).rstrip())
        if index:
            for line in [*_images(records[index - 1]), *_failure(records[index - 1])]:
                print(line)
    return EXIT_OK
