"""What the console attached to a running monitor imports on its way to its first frame.

The real `python -m rocmtui --config FLEET` runs on a pty beside a real `rocmtui monitor`. An
audit hook logs every module as it is loaded (and by which thread); the fleet screen's first
frame, and the frame that paints its first round, mark the log as each is handed to Textual's
writer. The attached console's first frame needs Textual, the fleet file and the socket;
nothing that probes (the monitor does that), nothing that reads the bake file, none of the
screens and dialogs opened later, not the panels and the footer mounted right after it: each
costs start-up time the operator waits for (bench/bench_monitor.py's attached start figure).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devfleet import ServiceHandle, start_monitor
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.hostmonitor import client
from tests.support.jobs import engineless_fleet, wait_for
from tests.support.pty import Pty

# the order of imports across threads: a loaded machine reorders them
pytestmark = pytest.mark.alone

# Modules that must not be loaded, by any thread, before the first frame with the monitor's
# round is painted (a name covers its submodules).
NOT_BEFORE_THE_FRAME = (
    "docker",
    "httpx",
    "httpcore",
    "paramiko",
    "psutil",
    "prometheus_client",
    "_hashlib",  # OpenSSL, for a socket name: rocmtui.core.digests hashes without it
    "rocmtui.core.probes.round",
    "rocmtui.core.probes",
    "hcl2",
    "lark",
    "rocmtui.core.bake.file",
    "rocmtui.core.bake.resolve",
    "rocmtui.core.matrix",
    "rocmtui.console.dialogs",
    "rocmtui.console.screens.logs",
    "rocmtui.console.screens.published",
    "rocmtui.console.screens.help",
    "rocmtui.console.widgets.logview",
    "rocmtui.console.widgets.matrix",
    "rocmtui.console.widgets.footer",  # mounted after the first frame, with the other panels
    "textual.widgets._footer",
)
# ... and these not before the screen's first frame, whatever it shows (the job store is read
# by a worker started once that frame is painted)
NOT_BEFORE_ANY_FRAME = ("rocmtui.core.jobs.store", "rocmtui.core.jobs.control", "sqlite3")

CONSOLE = """
import json, sys, threading
loaded = []
def log(event, args):
    if event == "import":
        loaded.append((args[0], threading.current_thread().name))
sys.addaudithook(log)
out = sys.argv.pop(1)
import rocmtui.console.run as run  # imports no Textual: patched before the console starts
console = run.run_console
def run_console(args, link=None):
    from rocmtui.console.screens.fleet import FleetScreen  # run_console's next import brings it
    show, paint = FleetScreen.show_fleet, FleetScreen._compositor_refresh
    marks = {}
    def compositor_refresh(screen):
        paint(screen)  # a frame goes to the terminal
        marks.setdefault("frame", len(loaded))
        if "round" in marks and "painted" not in marks:  # the first with the round
            marks["painted"] = len(loaded)
            with open(out, "w") as f:
                json.dump({"loaded": loaded, "marks": marks, "source": screen.source}, f)
    def show_fleet(screen, snapshot):
        if "round" not in marks:
            marks["round"] = len(loaded)
        show(screen, snapshot)
    FleetScreen.show_fleet, FleetScreen._compositor_refresh = show_fleet, compositor_refresh
    return console(args, link)
run.run_console = run_console
import rocmtui.cli.main as cli
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.fixture
def monitor(tmp_path: Path) -> Iterator[Path]:
    """A fleet file with `rocmtui monitor` running for it, its first round taken."""
    fleet = engineless_fleet(tmp_path, refresh_seconds=1.0)
    handle: ServiceHandle = start_monitor(tmp_path / "monitor", fleet)
    try:
        config = load_config(fleet)

        def ready() -> bool:
            return client.query(config).snapshot_age() is not None

        wait_for("the monitor's first round", ready, 30)
        yield fleet
    finally:
        handle.stop()


def under(name: str, roots: tuple[str, ...]) -> bool:
    return any(name == root or name.startswith(root + ".") for root in roots)


def test_the_attached_console_imports_nothing_it_does_not_draw_before_its_first_frame(
    monitor: Path, tmp_path: Path
) -> None:
    out = tmp_path / "loaded.json"
    term = Pty([sys.executable, "-c", CONSOLE, str(out), "--config", str(monitor)], 120, 40)
    try:
        term.read_until(b"probed", timeout=60)  # the status line, once a round is on screen
        deadline = time.monotonic() + 10
        while not out.exists():
            assert time.monotonic() < deadline, "the painted frame was never reported"
            time.sleep(0.05)
        assert b"shared monitor" in term.out
    finally:
        term.close()
    seen = json.loads(out.read_text())
    assert seen["source"] == "monitor"  # attached, not probing with a child of its own
    loaded = [(name, thread) for name, thread in seen["loaded"]]
    painted, frame = seen["marks"]["painted"], seen["marks"]["frame"]
    assert frame <= painted
    assert any(name == "textual.app" for name, _ in loaded[:frame])  # the log is the real one
    early = [f"{name} ({thread})" for name, thread in loaded[:painted]
             if under(name, NOT_BEFORE_THE_FRAME)]  # fmt: skip
    assert early == [], f"loaded before the first frame: {early}"
    store = [f"{name} ({thread})" for name, thread in loaded[:frame]
             if under(name, NOT_BEFORE_ANY_FRAME)]  # fmt: skip
    assert store == [], f"loaded before the first frame: {store}"
