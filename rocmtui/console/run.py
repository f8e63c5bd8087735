"""Start the console: `rocmtui` with no subcommand (rocmtui/cli/main.py calls `run_console`)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import TYPE_CHECKING

from rocmtui.core.config.fleetfile import FleetConfig, load_config
from rocmtui.core.hostmonitor.sources import ProbeSource, as_source, open_source

if TYPE_CHECKING:
    from rocmtui.console.app import RocmTui


def console_for(args: argparse.Namespace, config: FleetConfig | None = None) -> RocmTui:
    """The console the command line's arguments describe (`--config`, `--read-only`), not yet
    running; `config` is the fleet file already loaded from them."""
    # Textual with it: run_console opens the feed first, so its first round is on the way
    from rocmtui.console.app import RocmTui

    if config is None:
        config = load_config(getattr(args, "config", None))
    return RocmTui(config, read_only=bool(getattr(args, "read_only", False)))


def run_console(
    args: argparse.Namespace, early: ProbeSource | subprocess.Popen[bytes] | None = None
) -> int:
    """Open the console on the fleet file the arguments name; print what keeps running.

    `early` is where rounds come from, opened by `main` first thing (rocmtui.cli.main
    .start_monitor): the host's monitor, or a child of the console's own. Without one it is
    opened here, and closed again when the console ends."""
    config = load_config(getattr(args, "config", None))  # ConfigError: main() reports it
    # on first use: kept off the console's start
    from rocmtui.core import debuglog

    debuglog.setup(config)  # with --debug / ROCMTUI_DEBUG=1 only

    own = early is None
    source = open_source(config.source) if early is None else as_source(early)
    try:
        app = console_for(args, config)
        app.backend.adopt_monitor(source)
        running = app.run()
    finally:
        if own:
            source.stop(grace=1.0)
    if app.return_code not in (None, 0):
        return int(app.return_code or 1)
    from rocmtui.console.dialogs.quit import farewell  # after the console: not on its way up

    message = farewell(running or [])
    if message:
        print(message, file=sys.stderr)
    return 0
