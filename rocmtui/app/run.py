"""Start the console: `rocmtui` with no subcommand (rocmtui/cli/main.py calls `run_console`)."""

from __future__ import annotations

import argparse
import sys

from rocmtui.core.config import load_config


def run_console(args: argparse.Namespace) -> int:
    """Open the console on the fleet file the arguments name; print what keeps running."""
    config = load_config(getattr(args, "config", None))  # ConfigError: main() reports it
    from rocmtui.app import probeproc

    child = probeproc.start(config.source)  # probes on the other core while Textual imports
    try:
        from rocmtui.app.app import RocmTui
        from rocmtui.app.dialogs.quit import farewell

        app = RocmTui(config, read_only=bool(getattr(args, "read_only", False)))
        app.backend.adopt_monitor(child)
        running = app.run()
    finally:
        probeproc.stop(child, grace=1.0)
    if app.return_code not in (None, 0):
        return int(app.return_code or 1)
    message = farewell(running or [])
    if message:
        print(message, file=sys.stderr)
    return 0
