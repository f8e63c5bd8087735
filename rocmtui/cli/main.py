"""`rocmtui` entry point: the console with no subcommand, headless commands otherwise.

Each subcommand lives in its own module with `register(subparsers)` and `run(args) -> int`;
modules are imported only when needed so `rocmtui status` never pays for Textual.
Exit codes: 0 healthy / done, 1 something is not healthy, 2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import sys
from collections.abc import MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from rocmtui import __version__

if TYPE_CHECKING:  # the console starts its monitor before importing these (see main)
    from subprocess import Popen

    from rocmtui.core.config.fleetfile import FleetConfig
    from rocmtui.core.hostmonitor.sources import ProbeSource

EXIT_OK = 0
EXIT_UNHEALTHY = 1
EXIT_USAGE = 2
EXIT_PIPE = 141  # what a shell reports for a tool ended by SIGPIPE (128 + 13): `| head` closed
READ_ONLY_HELP = "refuse every action that starts or stops a build (as read_only = true does)"

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
    "prune": ("rocmtui.cli.prune", "show, then prune a node's build cache"),
    "matrix": (
        "rocmtui.cli.matrix",
        "every buildable target × arch: what the registry holds, the last job, a verdict",
    ),
    "versions": (
        "rocmtui.cli.versions",
        "each pin beside the newest upstream release and what the registry's images carry",
    ),
    "config": ("rocmtui.cli.configcmd", "the fleet file in effect, why, and its settings"),
    "doctor": ("rocmtui.cli.doctor", "check docker, buildx, every node, logins, the bake file"),
    "completion": ("rocmtui.cli.completion", "print a bash, zsh or fish completion script"),
    "history": (
        "rocmtui.cli.history",
        "every build of each target × arch × node: duration, outcome, cache condition",
    ),
    "monitor": (
        "rocmtui.cli.monitor",
        "the probe loop as one long-running process: consoles attach, Prometheus scrapes",
    ),
    "serve": ("rocmtui.cli.serve", "the console in a browser, read-only unless --allow-actions"),
    "run": ("rocmtui.cli.run", "a fleet run: a target or group on every node at once"),
    "runs": ("rocmtui.cli.runs", "fleet runs, newest first; `runs show ID` draws one"),
}


class Command(Protocol):
    """What a subcommand module provides."""

    def register(self, sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


CONFIG_HELP = (
    "fleet file (default: $ROCMTUI_CONFIG, ./rocmtui.toml, $XDG_CONFIG_HOME/rocmtui/config.toml, "
    "$XDG_CONFIG_DIRS/rocmtui/config.toml, then the built-in default)"
)


def add_config_option(parser: argparse.ArgumentParser) -> None:
    """Every subcommand takes --config, --color, --debug and --read-only (after its name too)."""
    add_common_options(parser, default=argparse.SUPPRESS)
    parser.add_argument(
        "--read-only", action="store_true", default=argparse.SUPPRESS, help=READ_ONLY_HELP
    )


def add_common_options(parser: argparse.ArgumentParser, default: object) -> None:
    """--config, --color and --debug; a subcommand's copies default to SUPPRESS so that the
    value given before the subcommand's name is kept."""
    parser.add_argument("--config", metavar="PATH", default=default, help=CONFIG_HELP)
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default=default,
        help="colour in output: auto (a terminal, unless NO_COLOR is set; FORCE_COLOR forces "
        "it), always (kept through a pipe: `| less -R`) or never",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=default,
        help="write a debug log under the state folder (also: ROCMTUI_DEBUG=1)",
    )


def apply_color(choice: str | None, env: MutableMapping[str, str] | None = None) -> None:
    """`--color` as the environment every colour decision already reads: `always` sets
    FORCE_COLOR (and drops NO_COLOR), `never` sets NO_COLOR; `auto` leaves both alone."""
    env = os.environ if env is None else env
    if choice == "always":
        env.pop("NO_COLOR", None)
        env["FORCE_COLOR"] = "1"
    elif choice == "never":
        env.pop("FORCE_COLOR", None)
        env["NO_COLOR"] = "1"


def config_from(args: argparse.Namespace) -> FleetConfig:
    """Load the fleet file the arguments point at (raises ConfigError)."""
    # on first use: kept off `--help`
    from rocmtui.core.config.fleetfile import load_config

    config = load_config(getattr(args, "config", None))
    if getattr(args, "read_only", False) and not config.read_only:
        # on first use: kept off `--help`
        from msgspec.structs import replace

        config = replace(config, read_only=True)  # the core's launch and cancel refuse
    if os.environ.get("ROCMTUI_DEBUG", "") not in ("", "0"):
        # on first use: kept off `--help` or `status`
        from rocmtui.core import debuglog

        debuglog.setup(config)
    return config


VALUE_OPTIONS = ("--config", "--color")  # top-level options followed by a value word


def first_word(argv: Sequence[str]) -> str | None:
    """The first word of `argv` that is not an option (nor an option's value), if any."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in VALUE_OPTIONS:
            skip = True
        elif not word.startswith("-"):
            return word
    return None


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand named in `argv` (the first word that is not an option), if any."""
    word = first_word(argv)
    return word if word in COMMANDS else None


def unknown_command(argv: Sequence[str]) -> str | None:
    """One line for a first word that names no command (with the nearest command, if one is
    close), or None. Answered before anything is imported or started."""
    word = first_word(argv)
    if word is None or word in COMMANDS:
        return None
    # on first use: kept off `--help`
    import difflib

    # 0.75: a typo (stauts, bkae, hisotry) is near; a word sharing three letters is not
    # (difflib's 0.6 answered "bogus" with "did you mean logs?")
    near = difflib.get_close_matches(word, list(COMMANDS), n=1, cutoff=0.75)
    hint = f" (did you mean {near[0]}?)" if near else ""
    return f"rocmtui: unknown command {word!r}{hint}; `rocmtui --help` lists them"


class _Parser(argparse.ArgumentParser):
    """Options spelled in full, as completion offers them: argparse's abbreviations (`--conf`)
    are refused. The console reads `--config` before it parses (`config_word`, to find the
    fleet's monitor at once), and an abbreviation it cannot know loaded one fleet file while
    the console attached to another fleet's monitor."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


class _ConsoleOnlyParser(_Parser):
    """The console's parser (no command's parser built): the usage a mistyped option shows
    still says that commands exist, worked out only then."""

    def format_usage(self) -> str:
        return super().format_usage().rstrip("\n") + " COMMAND ...\n"


def build_parser(
    only: str | None = None, *, all_commands: bool = True, listed: bool = True
) -> argparse.ArgumentParser:
    """The whole command line. With `all_commands=False`, only the `only` command's module is
    imported; the others appear in `--help` from their one-line help. With neither a command
    nor `listed` (the console, no `--help` asked for), no command's parser is built at all:
    twelve of them were built on the way to the console's first frame, for nothing."""
    console_only = only is None and not all_commands and not listed
    parser: argparse.ArgumentParser = (_ConsoleOnlyParser if console_only else _Parser)(
        prog="rocmtui",
        description="Console for the rocm-bake BuildKit fleet. With no command, opens the "
        "full-screen console.",
    )
    parser.add_argument("--version", action="version", version=f"rocmtui {__version__}")
    add_common_options(parser, default=None)
    parser.add_argument("--read-only", action="store_true", help=READ_ONLY_HELP)
    if console_only:
        parser.set_defaults(command=None)
        return parser
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        if not all_commands and name != only:
            sub.add_parser(name, help=help_text)
            continue
        module = cast(Command, importlib.import_module(module_name))
        before = set(sub.choices)
        module.register(sub)
        for added in set(sub.choices) - before:
            sub.choices[added].allow_abbrev = False  # as the top level (see _Parser)
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


def wants_console(argv: Sequence[str]) -> bool:
    """No subcommand, no --help or --version: these words open the console."""
    return first_word(argv) is None and not {"-h", "--help", "--version"} & set(argv)


def start_monitor(argv: Sequence[str]) -> ProbeSource | Popen[bytes] | None:
    """For the console (no subcommand, no --help or --version): open its source of rounds now.

    The host's monitor for the fleet file, when one runs: its latest snapshot comes at once and
    nothing probes in this console's path. Else its own monitor process, started here: its
    first probe round (docker SDK and httpx imports, then every engine and service) is the long
    pole of the console's first frame with fleet data, so it starts before this process imports
    anything else: argparse's parser and Textual follow on the other core. The child reads the
    same fleet file (the same `--config`, or the same search). None when it cannot be started:
    the console then tries again as it opens, and says why not.
    """
    if not wants_console(argv):
        return None  # a command (known or not) or a question: no console, no probes
    # on first use: kept off `--help` or `status`
    from rocmtui.core.hostmonitor.sources import open_source

    try:
        return open_source(config_word(argv))
    except OSError:
        return None


def stop_source(source: ProbeSource | Popen[bytes]) -> None:
    """End what `start_monitor` opened (a child is reaped; a session just closed)."""
    # on first use: kept off `--help` or `status`
    from rocmtui.core.hostmonitor.sources import as_source

    as_source(source).stop(grace=1.0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (also used as the process's)."""
    words = list(sys.argv[1:] if argv is None else argv)
    unknown = unknown_command(words)
    if unknown is not None and not {"-h", "--help"} & set(words):
        print(unknown, file=sys.stderr)
        return EXIT_USAGE
    if wants_console(words):
        # no cyclic collections on the console's way up: what it makes lives as long as it
        # does; the collector is back once start-up is over (console.performance.settle_heap)
        gc.disable()
    monitor = start_monitor(words)
    try:
        code = _run(words, monitor)
        sys.stdout.flush()  # here, not at exit: a closed pipe is said below, quietly
        return code
    except BrokenPipeError:
        return _closed_pipe()
    finally:
        if monitor is not None:
            stop_source(monitor)


def _run(words: list[str], monitor: ProbeSource | Popen[bytes] | None) -> int:
    """Parse `words` and run the console or the command they name."""
    command = chosen_command(words)
    listed = command is not None or bool({"-h", "--help"} & set(words))
    parser = build_parser(command, all_commands=False, listed=listed)
    try:
        args = parser.parse_args(words)
    except SystemExit:  # --help, --version, a usage error: flushed here, where a closed
        sys.stdout.flush()  # pipe is caught (see main)
        raise
    # after parsing: --version and --help answer without the fleet file's modules (msgspec)
    from rocmtui.core.config.fleetfile import ConfigError

    apply_color(getattr(args, "color", None))
    if getattr(args, "debug", False) or os.environ.get("ROCMTUI_DEBUG") not in (None, "", "0"):
        os.environ["ROCMTUI_DEBUG"] = "1"  # the monitor process and supervisors see it too
    try:
        if args.command is None:
            # on first use: kept off `--help` or `status`
            from rocmtui.console.run import run_console

            return int(run_console(args, monitor))
        module = cast(Command, importlib.import_module(COMMANDS[args.command][0]))
        try:
            return module.run(args)
        except BrokenPipeError:
            raise  # not the machine's fault: the reader left (see main)
        except OSError as exc:  # the machine's, not a bug: its text names the file
            print(f"rocmtui: {exc}", file=sys.stderr)
            return EXIT_UNHEALTHY
        except Exception as exc:
            # a corrupt or unwritable database: named, no traceback. Looked up, not
            # imported: a command that never opened the store (completion) never pays it
            store = sys.modules.get("rocmtui.core.jobs.store")
            if store is not None and isinstance(exc, store.JobStoreError):
                print(f"rocmtui: job store {exc}", file=sys.stderr)
                return EXIT_UNHEALTHY
            raise
    except ConfigError as exc:
        print(f"rocmtui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


def _closed_pipe() -> int:
    """The reader went away (`rocmtui jobs --json | head`): stop quietly, as every Unix tool
    does. stdout is pointed at /dev/null so the interpreter's last flush cannot fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return EXIT_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
