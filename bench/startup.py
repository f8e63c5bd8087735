"""The console's start-up figure and its context rows (issue 4), for bench_console.py.

Start to the first frame that shows live fleet data (the status line's "probed Ns ago", drawn
only once a real probe round came back), beside a minimal Textual app that mounts one Static:
target <= 1.5x the minimal app's time, medians of `runs` alternating starts (the minimal app
alone moved 0.26-0.47 s between runs of 5 on this machine, so 15 by default).

The console attached to a running monitor (`rocmtui monitor`, for a copy of the same fleet file
so that the other rows still start their own monitor process), to the first frame with the
monitor's snapshot: target <= 1.2x the same minimal app; nothing probes in its path.

The context rows (no targets) split that time. In the same alternating loop: the minimal app
again with the console's monitor process starting beside it; the console with its monitor
process replaced by one that replays a recorded round (taken from the real monitor at the
start) at once, and again after importing the probe libraries; the monitor process alone,
spawn to its first whole round, with its CPU; and two CPU-bound loops alone and at once, for
how much of a second core the machine gives (the console starts two processes, its anchor
one). Every time comes from bytes read off a pty master.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import common
import psutil
from tui import Pty, cpu_seconds

MINIMAL_APP = """
from textual.app import App
from textual.widgets import Static
class Minimal(App):
    def compose(self):
        yield Static("rocmtui-bench-ready")
Minimal().run()
"""

# The console exactly as `rocmtui --config FLEET` starts it, but for its monitor process: one
# that replays a recorded round (its times moved to now) and then waits for the end of stdin.
CONSOLE_REPLAYED = """
import subprocess, sys
import rocmtui.cli.main as cli
fleet, replay, recorded, preload = sys.argv[1:5]
cli.start_monitor = lambda argv: subprocess.Popen(
    [sys.executable, "-c", replay, recorded, preload],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
sys.exit(cli.main(["--config", fleet]))
"""

REPLAY = """
import json, sys, time
for name in filter(None, sys.argv[2].split(",")):
    __import__(name)
recorded = json.loads(open(sys.argv[1]).read())
shift = time.time() - recorded["taken_at"]
def moved(item):
    if isinstance(item, dict):
        return {k: v + shift if k.endswith("_at") and isinstance(v, float) else moved(v)
                for k, v in item.items()}
    return [moved(v) for v in item] if isinstance(item, list) else item
sys.stdout.write(json.dumps(moved(recorded)) + "\\n")
sys.stdout.flush()
sys.stdin.read()
"""
LIVE = b"probed"  # the status line's word once a real round is on screen
READY = b"rocmtui-bench-ready"  # the minimal app's Static
MINIMAL_NAME = "Textual app mounting one Static"  # the anchor
# what the monitor's first round imports (rocmtui.core.probes.round brings asyncio)
PROBE_LIBRARIES = "rocmtui.core.probes.round,docker,httpx,psutil"


def monitor_argv(config: Path) -> list[str]:
    """The console's monitor process, as the console starts it (hostmonitor.ownchild)."""
    return [sys.executable, "-m", "rocmtui.core.hostmonitor.ownchild", str(config)]


@dataclass(frozen=True)
class Startup:
    """Medians of the start-up runs: seconds, and CPU seconds spent by the time of the frame."""

    console: float  # to the first frame with live fleet data
    attached: float  # the same, attached to a running monitor
    minimal: float  # the minimal app, to its first frame
    beside: float  # the minimal app, its monitor process starting beside it
    replayed: float  # the console, its monitor replaying a recorded round at once
    preloaded: float  # the same, the replaying monitor importing the probe libraries first
    alone: float  # the monitor process alone, spawn to its first whole round
    attached_cpu: float  # the attached console, by its frame with the monitor's snapshot
    console_cpu: float  # the console process itself, by its live frame
    monitor_cpu: float  # its monitor process, by then
    minimal_cpu: float  # the minimal app, by its first frame
    alone_cpu: float  # the monitor process alone, by its first whole round
    # two CPU-bound loops at once: twice the median time of one alone over the median time of
    # the slower of the two (2.0: two whole cores; 1.0: they ran as on one), and the lowest
    # and highest of the runs' own ratios
    second_core: float
    second_core_low: float
    second_core_high: float


def _cpu_by_now(pid: int) -> tuple[float, float]:
    """CPU seconds of a process and of its children, now."""
    try:
        kids = psutil.Process(pid).children()
    except psutil.Error:
        kids = []
    return cpu_seconds(pid), sum(cpu_seconds(kid.pid) for kid in kids)


def first_round(config: Path, env: dict[str, str]) -> tuple[float, float, bytes]:
    """Seconds from spawning the console's monitor process alone to its first whole round on
    stdout, the CPU seconds it used for it, and the round's line: the floor under the
    console's first live frame, whatever the console itself does."""
    started = time.monotonic()
    child = subprocess.Popen(monitor_argv(config), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             env=env)  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    try:
        # the round's own snapshot: an interim one (a target still answering after 0.5 s)
        # names what it waits for in "probing"
        while line := child.stdout.readline():
            if not json.loads(line).get("probing"):
                return time.monotonic() - started, cpu_seconds(child.pid), line
        raise RuntimeError("the monitor process ended before a whole round")
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def _frame(
    argv: Sequence[str], env: dict[str, str], marker: bytes
) -> tuple[float, float, float] | None:
    """Seconds from starting `argv` on a pty to `marker` on its terminal, and the CPU seconds
    it and its children had used by then (None: not seen in 30 s)."""
    term = Pty(argv, env, 120, 40)
    seen = term.wait_for(marker, timeout=30)
    own, children = _cpu_by_now(term.pid)
    term.stop()
    return None if seen is None else (seen - term.started, own, children)


BURN = """
import time
started = time.perf_counter()
total = 0
for n in range(2_000_000):
    total += n
print(time.perf_counter() - started)
"""


def burn_pair() -> tuple[float, float]:
    """Seconds of one CPU-bound loop alone, and of the slower of two run at once: how much of
    a second core two processes get (the console and its monitor start up together, the
    minimal app alone)."""

    def burn(count: int) -> list[float]:
        procs = [subprocess.Popen([sys.executable, "-c", BURN], stdout=subprocess.PIPE)
                 for _ in range(count)]  # fmt: skip
        return [float(proc.communicate()[0]) for proc in procs]

    return burn(1)[0], max(burn(2))


class RunningMonitor:
    """`rocmtui monitor --no-metrics` for a fleet file, until `stop()`; ready once its socket
    serves a snapshot."""

    def __init__(self, config: Path, env: dict[str, str]) -> None:
        from rocmtui.core.config.fleetfile import load_config
        from rocmtui.core.hostmonitor.client import MonitorConnection
        from rocmtui.core.hostmonitor.place import MonitorPlace

        argv = [sys.executable, "-m", "rocmtui", "--config", str(config), "monitor",
                "--no-metrics"]  # fmt: skip
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)  # fmt: skip
        place = MonitorPlace.for_config(load_config(config), env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            conn = MonitorConnection.connect(place)
            if conn is not None:
                try:
                    if conn.handshake().latest_taken_at is not None:
                        return
                except Exception:
                    pass
                finally:
                    conn.close()
            if self.proc.poll() is not None:
                raise RuntimeError(f"rocmtui monitor exited {self.proc.returncode}")
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("rocmtui monitor served no snapshot in 60 s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def measure(config: Path, env: dict[str, str], runs: int, tmp: Path) -> Startup:
    """Medians: seconds to first live frame (console), to first frame (minimal app), and to
    the minimal app's first frame while the console's monitor process starts beside it; and
    the CPU each had used by then. Also the console with its monitor replaced by a replay of
    a recorded round, at once and after the probe libraries' imports."""
    recorded = tmp / "recorded-round.json"
    recorded.write_bytes(first_round(config, env)[2])
    replay = [sys.executable, "-c", CONSOLE_REPLAYED, str(config), REPLAY, str(recorded)]
    console = [sys.executable, "-m", "rocmtui", "--config", str(config)]
    shared = tmp / "attached-fleet.toml"  # its own monitor; the original's consoles have none
    shared.write_bytes(config.read_bytes())
    attached = [sys.executable, "-m", "rocmtui", "--config", str(shared)]
    monitor = RunningMonitor(shared, env)
    minimal = [sys.executable, "-c", MINIMAL_APP]
    frames: dict[str, list[tuple[float, float, float]]] = {}
    alone: list[tuple[float, float]] = []
    burns: list[tuple[float, float]] = []

    def frame(name: str, argv: Sequence[str], marker: bytes) -> None:
        got = _frame(argv, env, marker)
        if got is not None:
            frames.setdefault(name, []).append(got)

    try:
        _loop(runs, frame, burns, alone, config, env, replay, console, attached, minimal)
    finally:
        monitor.stop()

    def md(name: str, field: int = 0) -> float:
        return statistics.median(f[field] for f in frames[name])

    ratios = [2 * a / t for a, t in burns]
    return Startup(
        md("console"), md("attached"), md("minimal"), md("beside"), md("replayed"),
        md("preloaded"), statistics.median(a[0] for a in alone),
        md("attached", 1), md("console", 1), md("console", 2), md("minimal", 1),
        statistics.median(a[1] for a in alone),
        2 * statistics.median(a for a, _ in burns) / statistics.median(t for _, t in burns),
        min(ratios), max(ratios),
    )  # fmt: skip


def _loop(
    runs: int,
    frame: Any,
    burns: list[tuple[float, float]],
    alone: list[tuple[float, float]],
    config: Path,
    env: dict[str, str],
    replay: list[str],
    console: list[str],
    attached: list[str],
    minimal: list[str],
) -> None:
    """The alternating runs: every kind of start once per run, so load hits them alike."""
    for _ in range(runs):
        burns.append(burn_pair())
        alone.append(first_round(config, env)[:2])
        frame("replayed", [*replay, ""], LIVE)
        frame("preloaded", [*replay, PROBE_LIBRARIES], LIVE)
        frame("console", console, LIVE)
        frame("attached", attached, LIVE)
        frame("minimal", minimal, READY)
        # the same minimal app, with the probe child the console starts before Textual: how
        # much the two processes' start-ups slow each other on this machine
        child = subprocess.Popen(
            monitor_argv(config),
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        frame("beside", minimal, READY)
        assert child.stdin is not None
        child.stdin.close()  # the child ends after its round
        child.wait(timeout=30)


def rows(s: Startup, runs: int) -> list[common.Row]:
    """The figure and its context rows."""

    def beside_minimal(figure: str, seconds: float, note: str, **extra: Any) -> common.Row:
        return common.row(figure, seconds, s.minimal, unit="s", anchor_name=MINIMAL_NAME,
                          note=note, **extra)  # fmt: skip

    out: list[common.Row] = []
    out.append(beside_minimal(
        "start to first frame with live fleet data", s.console,
        f"median of {runs}; live = the status line's 'probed' after a real round",
        target="<= 1.5x", ok=s.console <= 1.5 * s.minimal,
    ))  # fmt: skip
    out.append(beside_minimal(
        "start to first frame with fleet data, console attached to a running monitor",
        s.attached,
        f"median of {runs}; `rocmtui monitor` runs for (a copy of) the fleet file; the frame "
        f"shows its latest snapshot; {s.attached_cpu:.3f} s of CPU by then (the Textual app: "
        f"{s.minimal_cpu:.3f} s)",
        target="<= 1.2x", ok=s.attached <= 1.2 * s.minimal,
    ))  # fmt: skip
    out.append(common.row(
        "  context: that Textual app, its monitor process starting beside it", s.beside,
        s.minimal, unit="s", anchor_name="the same app alone",
        note="no target: what the probe process's start-up costs a Textual start here",
    ))  # fmt: skip
    both_cpu = s.console_cpu + s.monitor_cpu
    cores = os.cpu_count() or 1
    out.append(common.row(
        "  context: CPU by the live frame, console + its monitor process", both_cpu,
        s.minimal_cpu, unit="s", anchor_name="the Textual app's, by its frame",
        note=f"no target: console {s.console_cpu:.3f} s + monitor "
        f"{s.monitor_cpu:.3f} s; spread over {cores} cores at best that is "
        f"{both_cpu / cores:.3f} s of wall time (the 1.5x budget: {1.5 * s.minimal:.3f} s)",
    ))  # fmt: skip
    out.append(beside_minimal(
        "  context: the console, its monitor replaying a recorded round at once", s.replayed,
        "no target: the console's own start-up, no probing at all; the same path as the "
        "first row, the monitor process a replay of this fleet's first round",
    ))  # fmt: skip
    out.append(beside_minimal(
        "  context: the same, the replay importing the probe libraries first", s.preloaded,
        f"no target: the replaying process imports {PROBE_LIBRARIES.replace(',', ', ')} "
        "before its line, as the monitor's first round does; the rest is the round itself",
    ))  # fmt: skip
    out.append(beside_minimal(
        "  context: the monitor process alone, spawn to its first round", s.alone,
        f"no target: {s.alone_cpu:.3f} s of CPU (imports: docker SDK, httpx, psutil, "
        f"asyncio); the live frame cannot come before it, the 1.5x budget is "
        f"{1.5 * s.minimal:.3f} s",
    ))  # fmt: skip
    out.append(common.row(
        "  context: this machine's second core, two CPU-bound processes at once",
        s.second_core, 2.0, unit="x", anchor_name="two whole cores",
        note=f"no target: medians of {runs}; single runs "
        f"{s.second_core_low:.2f}x to {s.second_core_high:.2f}x (1.0x: "
        "together they ran as on one core); "
        "the console starts two processes, the Textual app one",
    ))  # fmt: skip
    return out
