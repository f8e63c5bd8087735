"""`rocmtui serve`: the console in a browser (rocmtui/serve/), read-only unless asked.

Exit 0 after SIGTERM or SIGINT; 2 for a usage error (a non-loopback bind without TLS or
--insecure, an unreadable certificate, a bad --listen); 1 when it cannot start (the port is
taken, the monitor it started died).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from rocmtui.cli.main import EXIT_OK, EXIT_UNHEALTHY, EXIT_USAGE, config_from
from rocmtui.core.serveauth import (
    DEFAULT_LISTEN,
    ListenError,
    bind_problem,
    hash_password,
    parse_listen,
)

DEFAULT_MAX_SESSIONS = 8
DEFAULT_IDLE_TIMEOUT = 3600.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `serve` subcommand."""
    parser = sub.add_parser(
        "serve",
        help="the console in a browser, read-only unless --allow-actions",
        description="Serve the console to web browsers (textual-serve): one console process "
        "per browser session, each attached to the host's `rocmtui monitor` (started if none "
        "runs). Read-only unless --allow-actions, which then asks every browser for the token "
        "printed at start. Binds to loopback unless told otherwise.",
    )
    parser.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default=DEFAULT_LISTEN,
        help=f"where to listen (default {DEFAULT_LISTEN}; [::1]:PORT for IPv6); a non-loopback "
        "address needs --tls-cert/--tls-key or --insecure",
    )
    parser.add_argument(
        "--allow-actions",
        action="store_true",
        help="let logged-in browsers start and cancel builds (a token is printed at start and "
        "kept in the state folder, mode 0600)",
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=DEFAULT_MAX_SESSIONS,
        metavar="N",
        help=f"consoles open at once (default {DEFAULT_MAX_SESSIONS}); more are refused",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT,
        metavar="SECONDS",
        help=f"close a session with no key, click or resize this long (default "
        f"{DEFAULT_IDLE_TIMEOUT:g}; 0: never, for a wall display)",
    )
    parser.add_argument(
        "--spares",
        type=int,
        default=1,
        metavar="N",
        help="consoles kept started for the next browser, so its page shows the fleet sooner "
        "(default 1; 0: none)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="a host name browsers reach the server by, beside the --listen address, "
        "localhost, 127.0.0.1 and [::1] (repeatable); any other Host is refused",
    )
    parser.add_argument("--tls-cert", metavar="FILE", type=Path, help="serve https with this")
    parser.add_argument("--tls-key", metavar="FILE", type=Path, help="the certificate's key")
    parser.add_argument(
        "--hash-password",
        action="store_true",
        help="read a password (from the terminal, or one line of stdin) and print its hash for "
        "the fleet file's [serve] users table; serve nothing",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback bind without TLS (the console travels in clear text)",
    )


def run(args: argparse.Namespace) -> int:
    """Check the arguments, then serve until a signal."""
    if args.hash_password:
        return _hash_password()
    try:
        listen = parse_listen(args.listen)
    except ListenError as exc:
        print(f"rocmtui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if (args.tls_cert is None) != (args.tls_key is None):
        print("rocmtui: serve: --tls-cert and --tls-key go together", file=sys.stderr)
        return EXIT_USAGE
    if args.max_sessions < 1 or args.idle_timeout < 0 or not 0 <= args.spares <= 8:
        print("rocmtui: serve: --max-sessions must be 1 or more, --idle-timeout 0 or more, "
              "--spares 0 to 8",
              file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    tls = args.tls_cert is not None
    problem = bind_problem(listen, tls, args.insecure)
    if problem is not None:
        print(f"rocmtui: serve: {problem}", file=sys.stderr)
        return EXIT_USAGE
    config = config_from(args)
    # on first use: kept off `--help`
    from rocmtui.serve.run import ServeError, serve, tls_context
    from rocmtui.serve.server import ServeSettings, console_argv

    read_only = config.read_only or bool(getattr(args, "read_only", False))
    if args.allow_actions and read_only:
        print("rocmtui: serve: --allow-actions has no effect: this fleet is read-only "
              "(--read-only or read_only = true); serving read-only", file=sys.stderr)  # fmt: skip
    settings = ServeSettings(
        argv=list(console_argv(sys.executable, config.source, not args.allow_actions or read_only)),
        env={},
        allow_actions=args.allow_actions and not read_only,
        max_sessions=args.max_sessions,
        idle_timeout=args.idle_timeout,
        tls=tls,
        users=dict(config.serve_users),
        spares=args.spares,
        bind=listen.host,
        allowed_hosts=list(args.allow_host or []),
    )
    logging.basicConfig(level=logging.WARNING, format="rocmtui serve: %(message)s",
                        stream=sys.stderr)  # fmt: skip
    logging.getLogger("rocmtui").setLevel(logging.INFO)

    def say(line: str) -> None:
        print(line, flush=True)

    try:
        context = tls_context(args.tls_cert, args.tls_key) if tls else None
    except ServeError as exc:
        print(f"rocmtui: serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        serve(config, settings, listen, context, say)
    except (ServeError, OSError) as exc:
        print(f"rocmtui: serve: {exc}", file=sys.stderr)
        return EXIT_UNHEALTHY
    return EXIT_OK


def _hash_password() -> int:
    if sys.stdin.isatty():
        # on first use: kept off `--help`
        import getpass

        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            print("rocmtui: serve: the two passwords differ", file=sys.stderr)
            return EXIT_USAGE
    else:
        password = sys.stdin.readline().rstrip("\n")
    if len(password) < 12:
        print("rocmtui: serve: a password of 12 characters at least", file=sys.stderr)
        return EXIT_USAGE
    print(hash_password(password))
    return EXIT_OK
