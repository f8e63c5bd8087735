"""Start the console: `rocmtui` with no subcommand (rocmtui/cli/main.py calls `run_console`)."""

from __future__ import annotations

import argparse
import subprocess
import sys

from rocmtui.core.config import load_config


def run_console(args: argparse.Namespace, child: subprocess.Popen[bytes] | None = None) -> int:
    """Open the console on the fleet file the arguments name; print what keeps running.

    `child` is the monitor process `main` started first thing (rocmtui.cli.main.start_monitor);
    without one it is started here, and stopped again when the console ends."""
    config = load_config(getattr(args, "config", None))  # ConfigError: main() reports it
    from rocmtui.core import debuglog

    debuglog.setup(config)  # with --debug / ROCMTUI_DEBUG=1 only
    from rocmtui.app import probeproc

    own = child is None
    if child is None:
        child = probeproc.start(config.source)
    try:
        from rocmtui.app.app import RocmTui
        from rocmtui.app.dialogs.quit import farewell

        app = RocmTui(config, read_only=bool(getattr(args, "read_only", False)))
        app.backend.adopt_monitor(child)
        running = app.run()
    finally:
        if own:
            probeproc.stop(child, grace=1.0)
    if app.return_code not in (None, 0):
        return int(app.return_code or 1)
    message = farewell(running or [])
    if message:
        print(message, file=sys.stderr)
    return 0
