"""`rocmtui` entry point: the console with no subcommand, headless commands otherwise.

Each subcommand lives in its own module with `register(subparsers)` and `run(args) -> int`;
modules are imported only when needed so `rocmtui status` never pays for Textual.
Exit codes: 0 healthy / done, 1 something is not healthy, 2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, cast

from rocmtui import __version__

if TYPE_CHECKING:  # the console starts its monitor before importing these (see main)
    from subprocess import Popen

    from rocmtui.core.config import FleetConfig

EXIT_OK = 0
EXIT_UNHEALTHY = 1
EXIT_USAGE = 2

# subcommand -> (module, one-line help); order is the order of `rocmtui --help`. Only the
# module of the command being run is imported, so `rocmtui bake` and the console never pay for
# the others' imports (the docker SDK, httpx, asyncio ...).
COMMANDS: dict[str, tuple[str, str]] = {
    "status": ("rocmtui.cli.status", "probe every node, the registry and WebDAV once"),
    "vars": (
        "rocmtui.cli.vars",
        "every bake variable: default, effective value and where it comes from",
    ),
    "bake": ("rocmtui.cli.bake", "start a build detached; print its job id"),
    "jobs": ("rocmtui.cli.jobs", "list bake jobs (newest first) with state and duration"),
    "logs": ("rocmtui.cli.logs", "print a job's log (sanitised); -f follows it until the job ends"),
    "cancel": ("rocmtui.cli.cancel", "cancel a running build"),
    "matrix": (
        "rocmtui.cli.matrix",
        "every buildable target × arch: what the registry holds, the last job, a verdict",
    ),
    "versions": (
        "rocmtui.cli.versions",
        "each pin beside the newest upstream release and what the registry's images carry",
    ),
}


class Command(Protocol):
    """What a subcommand module provides."""

    def register(self, sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def add_config_option(parser: argparse.ArgumentParser) -> None:
    """Every subcommand takes --config."""
    parser.add_argument(
        "--config",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="fleet file (default: $ROCMTUI_CONFIG, ./rocmtui.toml, "
        "$XDG_CONFIG_HOME/rocmtui/config.toml, then the built-in default)",
    )


def config_from(args: argparse.Namespace) -> FleetConfig:
    """Load the fleet file the arguments point at (raises ConfigError)."""
    from rocmtui.core.config import load_config

    return load_config(getattr(args, "config", None))


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand named in `argv` (the first word that is not an option), if any."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--config":
            skip = True
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(only: str | None = None, *, all_commands: bool = True) -> argparse.ArgumentParser:
    """The whole command line. With `all_commands=False`, only the `only` command's module is
    imported; the others appear in `--help` from their one-line help."""
    parser = argparse.ArgumentParser(
        prog="rocmtui",
        description="Console for the rocm-bake BuildKit fleet. With no command, opens the "
        "full-screen console.",
    )
    parser.add_argument("--version", action="version", version=f"rocmtui {__version__}")
    parser.add_argument(
        "--config",
        metavar="PATH",
        default=None,
        help="fleet file (default: $ROCMTUI_CONFIG, ./rocmtui.toml, "
        "$XDG_CONFIG_HOME/rocmtui/config.toml, then the built-in default)",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="console: refuse every action that starts or stops a build",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        if not all_commands and name != only:
            sub.add_parser(name, help=help_text)
            continue
        module = cast(Command, importlib.import_module(module_name))
        before = set(sub.choices)
        module.register(sub)
        for added in set(sub.choices) - before:
            add_config_option(sub.choices[added])
        assert name in sub.choices, f"{module_name} did not register {name}"
    return parser


def config_word(argv: Sequence[str]) -> str | None:
    """The value of `--config PATH` or `--config=PATH` in `argv`, if any."""
    for index, word in enumerate(argv):
        if word == "--config" and index + 1 < len(argv):
            return argv[index + 1]
        if word.startswith("--config="):
            return word.split("=", 1)[1]
    return None


def start_monitor(argv: Sequence[str]) -> Popen[bytes] | None:
    """For the console (no subcommand, no --help or --version): start its monitor process now.

    Its first probe round (docker SDK and httpx imports, then every engine and service) is the
    long pole of the console's first frame with fleet data, so it starts before this process
    imports anything else: the fleet file, argparse's parser and Textual follow on the other
    core. The child reads the same fleet file (the same `--config`, or the same search). None
    when it cannot be started: the console then starts it as before, and says why not.
    """
    if chosen_command(argv) is not None or {"-h", "--help", "--version"} & set(argv):
        return None
    from rocmtui.app import probeproc

    try:
        return probeproc.start(config_word(argv))
    except OSError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (also used as the process's)."""
    words = list(sys.argv[1:] if argv is None else argv)
    monitor = start_monitor(words)
    try:
        from rocmtui.core.config import ConfigError

        parser = build_parser(chosen_command(words), all_commands=False)
        args = parser.parse_args(words)
        try:
            if args.command is None:
                from rocmtui.app.run import run_console

                return int(run_console(args, monitor))
            from rocmtui.core.jobs.store import JobStoreError

            module = cast(Command, importlib.import_module(COMMANDS[args.command][0]))
            try:
                return module.run(args)
            except JobStoreError as exc:  # a corrupt or unwritable database: named, no traceback
                print(f"rocmtui: job store {exc}", file=sys.stderr)
                return EXIT_UNHEALTHY
            except OSError as exc:  # the machine's, not a bug: its text names the file
                print(f"rocmtui: {exc}", file=sys.stderr)
                return EXIT_UNHEALTHY
        except ConfigError as exc:
            print(f"rocmtui: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            return 130
    finally:
        if monitor is not None:
            from rocmtui.app import probeproc

            probeproc.stop(monitor, grace=1.0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
