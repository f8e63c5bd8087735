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
from typing import Protocol, cast

from rocmtui import __version__
from rocmtui.core.config import ConfigError, FleetConfig, load_config

EXIT_OK = 0
EXIT_UNHEALTHY = 1
EXIT_USAGE = 2

# subcommand -> module; order is the order of `rocmtui --help`
COMMANDS: dict[str, str] = {
    "status": "rocmtui.cli.status",
    "vars": "rocmtui.cli.vars",
    "bake": "rocmtui.cli.bake",
    "jobs": "rocmtui.cli.jobs",
    "logs": "rocmtui.cli.logs",
    "cancel": "rocmtui.cli.cancel",
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
    return load_config(getattr(args, "config", None))


def build_parser() -> argparse.ArgumentParser:
    """The whole command line."""
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
    for name, module_name in COMMANDS.items():
        module = cast(Command, importlib.import_module(module_name))
        before = set(sub.choices)
        module.register(sub)
        for added in set(sub.choices) - before:
            add_config_option(sub.choices[added])
        assert name in sub.choices, f"{module_name} did not register {name}"
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (also used as the process's)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command is None:
            from rocmtui.app.run import run_console

            return int(run_console(args))
        module = cast(Command, importlib.import_module(COMMANDS[args.command]))
        return module.run(args)
    except ConfigError as exc:
        print(f"rocmtui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
