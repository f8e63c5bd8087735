"""Instructions to the first frame: the console attached to a running monitor beside the bare
Textual app that mounts one Static (issue 20's attached start figure, counted, not timed).

    python bench/bench_start_instructions.py [--runs 3] [--quick]

Wall-clock start-up on a shared machine moves with its load; instructions executed do not
(much). Each process runs under `valgrind --tool=callgrind` on a pseudo-terminal and ends itself
(os._exit) once the frame is painted: the console as soon as the fleet screen has handed
Textual's writer the first frame that shows the monitor's round, the anchor once its screen
has handed over its first frame (the one Static). The monitor runs outside valgrind, for a
fleet file of one node whose engine socket does not exist, at a round a minute. Nothing
asserts; rows go to the table.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
import startup
from bench_console import base_env
from tui import Pty

# The console as `rocmtui --config FLEET` starts it, ended once its first round is painted.
CONSOLE = """
import os, sys
import rocmtui.console.run as run
console = run.run_console
def run_console(args, link=None):
    from rocmtui.console.screens.fleet import FleetScreen
    show, paint = FleetScreen.show_fleet, FleetScreen._compositor_refresh
    def show_fleet(screen, snapshot):
        screen.shown_round = True
        show(screen, snapshot)
    def compositor_refresh(screen):
        paint(screen)  # the frame goes to the terminal (Textual's writer thread)
        if getattr(screen, "shown_round", False):
            os._exit(0 if screen.source == "monitor" else 3)
    FleetScreen.show_fleet, FleetScreen._compositor_refresh = show_fleet, compositor_refresh
    return console(args, link)
run.run_console = run_console
import rocmtui.cli.main as cli
sys.exit(cli.main(sys.argv[1:]))
"""

MINIMAL = """
import os
from textual.app import App
from textual.screen import Screen
from textual.widgets import Static
paint = Screen._compositor_refresh
def compositor_refresh(screen):
    paint(screen)  # its first frame, with the Static, goes to the terminal
    os._exit(0)
Screen._compositor_refresh = compositor_refresh
class Minimal(App):
    def compose(self):
        yield Static("rocmtui-bench-ready")
Minimal().run()
"""


def instructions(argv: Sequence[str], env: dict[str, str], out: Path) -> int | None:
    """Instructions the process executed, counted by callgrind (None: it did not end well)."""
    log_file = Path(f"{out}.log")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", f"--log-file={log_file}",
           *argv]  # fmt: skip
    term = Pty(cmd, env, 120, 40)
    deadline = time.monotonic() + 600
    code = None
    while code is None and time.monotonic() < deadline:
        pid, status = os.waitpid(term.pid, os.WNOHANG)
        if pid:
            code = os.waitstatus_to_exitcode(status)
        else:
            time.sleep(0.2)  # polled: callgrind runs the start ~50 times slower
    if code is None:
        term.stop()
    else:
        os.close(term.fd)
    log = log_file.read_text() if log_file.exists() else ""
    found = re.search(r"Collected : (\d+)", log)
    if code != 0 or found is None:
        print(f"{argv[:3]} ended {code}: {log[-400:]}", file=sys.stderr)
        return None
    return int(found.group(1))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=None, help="counts of each (3; --quick 1)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--quick", action="store_true", help="one count each (also BENCH_QUICK=1)")
    args = parser.parse_args(argv)
    args.runs = args.runs or (1 if args.quick or common.quick() else 3)
    if shutil.which("valgrind") is None:
        common.emit([common.row("attached start, instructions: no valgrind", None)], args.json)
        return 0
    with tempfile.TemporaryDirectory(prefix="rtsi-", dir="/tmp") as tmpdir:
        tmp = Path(tmpdir)
        env = base_env(tmp / "state")
        fleet = tmp / "fleet.toml"
        fleet.write_text(
            # a round a minute: under callgrind the start takes ~20 s, and each 2 s round that
            # landed meanwhile was decoded too (10-25M instructions of run-to-run spread); a
            # real start (~0.2 s) sees the monitor's latest round and no other
            f'refresh_seconds = 60.0\n[[nodes]]\nname = "n1"\n'
            f'docker_host = "unix://{tmp}/no.sock"\ngfx = "gfx1201"\n'
        )
        ours: list[int] = []
        bare: list[int] = []
        monitor = startup.RunningMonitor(fleet, env)
        try:
            for run in range(args.runs):
                console = [sys.executable, "-c", CONSOLE, "--config", str(fleet)]
                got = instructions(console, env, tmp / f"console.{run}")
                if got:
                    ours.append(got)
                got = instructions([sys.executable, "-c", MINIMAL], env, tmp / f"bare.{run}")
                if got:
                    bare.append(got)
        finally:
            monitor.stop()
    if not ours or not bare:
        common.emit([common.row("attached start, instructions: not counted", None)], args.json)
        return 1
    mine, anchor = common.median(ours) / 1e9, common.median(bare) / 1e9
    common.emit([common.row(
        "instructions to the first frame with fleet data, console attached to a monitor",
        mine, anchor, unit="G instr", anchor_name=startup.MINIMAL_NAME, target="<= 1.2x",
        ok=mine <= 1.2 * anchor,
        note=f"callgrind, median of {len(ours)}: {common.median(ours):,.0f} vs "
        f"{common.median(bare):,.0f} instructions; one node, its engine absent",
    )], args.json)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
