"""Start the console: `rocmtui` with no subcommand (rocmtui/cli/main.py calls `run_console`)."""

from __future__ import annotations

import argparse
import subprocess
import sys

from rocmtui.core.config import load_config
from rocmtui.core.hostmonitor.links import ProbeLink, as_link


def run_console(
    args: argparse.Namespace, link: ProbeLink | subprocess.Popen[bytes] | None = None
) -> int:
    """Open the console on the fleet file the arguments name; print what keeps running.

    `link` is where rounds come from, opened by `main` first thing (rocmtui.cli.main
    .start_monitor): the host's monitor, or a child of the console's own. Without one it is
    opened here, and closed again when the console ends."""
    config = load_config(getattr(args, "config", None))  # ConfigError: main() reports it
    from rocmtui.core import debuglog

    debuglog.setup(config)  # with --debug / ROCMTUI_DEBUG=1 only
    from rocmtui.core.hostmonitor.links import open_link

    own = link is None
    source = open_link(config.source) if link is None else as_link(link)
    try:
        from rocmtui.app.app import RocmTui

        app = RocmTui(config, read_only=bool(getattr(args, "read_only", False)))
        app.backend.adopt_monitor(source)
        running = app.run()
    finally:
        if own:
            source.stop(grace=1.0)
    if app.return_code not in (None, 0):
        return int(app.return_code or 1)
    from rocmtui.app.dialogs.quit import farewell  # after the console: not on its way up

    message = farewell(running or [])
    if message:
        print(message, file=sys.stderr)
    return 0
