"""`rocmtui logs JOB [-f]`: a job's log, sanitised, from any process.

Every byte goes through the project's sanitiser: what reaches the terminal is text, tabs and
the SGR colours the sanitiser re-renders (none with NO_COLOR or when not a terminal). Reads are
bounded chunks and lines are cut by the sanitiser, so memory does not grow with the log or with
a single huge line. With `-f` it follows until the job ends (surviving truncation and
rotation). Exit 0 when the job succeeded, 1 otherwise (still running, failed, cancelled ...),
2 when no job matches.
"""

from __future__ import annotations

import argparse
import sys

from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, EXIT_USAGE, config_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `logs` subcommand."""
    parser = sub.add_parser(
        "logs",
        help="print a job's log (sanitised); -f follows it until the job ends",
        description="Print a job's log through the sanitiser; with -f, follow it until the "
        "job ends.",
    )
    parser.add_argument("job", metavar="JOB", help="job id, unique prefix or suffix")
    parser.add_argument(
        "-f", "--follow", action="store_true", help="keep printing new output until it ends"
    )


def run(args: argparse.Namespace) -> int:
    """Print (and follow) the log."""
    # on first use: kept off `--help`
    from rocmtui.core.jobs.control import get_job
    from rocmtui.core.jobs.logtail import follow_job
    from rocmtui.core.jobs.store import JobStore
    from rocmtui.core.states import JobState
    from rocmtui.core.text.sanitize import StreamDecoder, color_wanted

    config = config_from(args)
    store = JobStore.for_config(config)
    try:
        record = get_job(args.job, config, store)
    except LookupError as exc:
        print(f"rocmtui logs: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return EXIT_USAGE

    def event(what: str) -> None:
        print(f"rocmtui logs: the log was {what}; reading it from its start", file=sys.stderr)

    decoder = StreamDecoder(keep_sgr=color_wanted(sys.stdout))
    out = sys.stdout.buffer
    try:
        for chunk in follow_job(store, record, follow=args.follow, on_event=event):
            lines = decoder.feed(chunk)
            if lines:
                out.write(("\n".join(lines) + "\n").encode("utf-8", "replace"))
                out.flush()
        rest = decoder.flush()
        if rest:
            out.write(("\n".join(rest) + "\n").encode("utf-8", "replace"))
        out.flush()
    except BrokenPipeError:  # `rocmtui logs JOB | head`: the reader has all it wanted
        sys.stderr.close()
        return EXIT_OK
    # the README's table: 0 for a job that succeeded, 1 for any other (running, failed ...)
    final = get_job(record.id, config, store)
    return EXIT_OK if final.state is JobState.SUCCEEDED else EXIT_UNHEALTHY
