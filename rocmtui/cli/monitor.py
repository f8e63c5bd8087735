"""`rocmtui monitor [--listen HOST:PORT | --no-metrics]`: the probe loop, one per host and fleet
file, for consoles to attach to and Prometheus to scrape (rocmtui/core/hostmonitor/).

Runs until SIGTERM or SIGINT (exit 0). Exit 1 when another monitor already runs for the fleet
file (it is named) or the socket or metrics address cannot be made; 2 for a fleet-file or usage
error. Logs one line per event on stderr (the journal, under systemd).
"""

from __future__ import annotations

import argparse
import logging
import sys

from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, EXIT_USAGE, config_from

DEFAULT_LISTEN = "127.0.0.1:9464"  # rocmtui.core.hostmonitor.http.DEFAULT_LISTEN


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `monitor` subcommand."""
    parser = sub.add_parser(
        "monitor",
        help="the probe loop as one long-running process: consoles attach, Prometheus scrapes",
        description="Probe the fleet on the fleet file's refresh and keep doing it: consoles "
        "for the same fleet file attach to this process over a unix socket in the state folder "
        "instead of probing on their own, and /metrics serves Prometheus. One per fleet file: "
        "a second refuses and names the first.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default=DEFAULT_LISTEN,
        help=f"serve Prometheus metrics here (default {DEFAULT_LISTEN}; [::1]:PORT for IPv6)",
    )
    where.add_argument(
        "--no-metrics", action="store_true", help="serve no metrics, only the console socket"
    )


def run(args: argparse.Namespace) -> int:
    """Monitor until a signal; say why in one line when it cannot start."""
    config = config_from(args)
    # on first use: kept off `--help`
    from rocmtui.core.hostmonitor.http import ListenError
    from rocmtui.core.hostmonitor.service import MonitorAlreadyRunning, MonitorStartError, run

    # our own events at INFO; the libraries' (httpx logs every request at INFO) only when
    # they warn: a probe every two seconds is not news for the journal
    logging.basicConfig(
        level=logging.WARNING, format="rocmtui monitor: %(message)s", stream=sys.stderr
    )
    logging.getLogger("rocmtui").setLevel(logging.INFO)
    try:
        run(config, None if args.no_metrics else args.listen)
    except ListenError as exc:
        print(f"rocmtui: {exc}", file=sys.stderr)
        return EXIT_USAGE if str(exc).startswith("--listen") else EXIT_UNHEALTHY
    except (MonitorAlreadyRunning, MonitorStartError) as exc:
        print(f"rocmtui: {exc}", file=sys.stderr)
        return EXIT_UNHEALTHY
    return EXIT_OK
