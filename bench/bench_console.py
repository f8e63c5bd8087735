"""Figures for the console, measured end to end through a pseudo-terminal, on a real fleet.

    python bench/bench_console.py [--fleet-dir DIR] [--runs 15] [--idle-seconds 60] [--json OUT]

1. Start to the first frame that shows live fleet data (the status line's "probed Ns ago",
   drawn only once a real probe round came back), beside a minimal Textual app that mounts one
   Static: target <= 1.5x the minimal app's time (medians of `--runs` alternating runs: the
   minimal app alone moved 0.26-0.47 s between runs of 5 on this machine, so 15 by default).
   Two context rows (no target): that minimal app again with the console's monitor process
   starting beside it (on a 2-core machine the two start-ups slow each other), and the
   monitor process alone, spawn to its first round, with its CPU: the live frame's floor.
   Two more split the console's own cost from the probes': the same console with its monitor
   process replaced by one replaying a recorded round (taken from the real monitor at the
   start of the run) at once, and again after importing the probe libraries first.
   A last context row measures how much of a second core this machine gives two CPU-bound
   processes at once: the console's start-up is two such processes, its anchor one.
2. Idle on the 3-node fleet at a 2 s refresh for `--idle-seconds`: CPU of the console process
   (% of one core) and bytes written to the terminal per second: targets < 2% and < 2 KB/s.
3. Key-press to screen update while a log pane follows a log written at 20,000 lines/s: `?`
   is typed and the time until the help screen's text reaches the terminal is taken, 40 times;
   p95 target < 50 ms. Beside it the same measurement with Textual's own `Log` widget following
   the same file (HAZARDS.md measured ~80 ms p95 for that).

Every number comes from bytes read off the pty master, so it includes Textual's rendering and
the terminal writes. Nothing asserts; it prints a table and can write it as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
from tui import Pty, cpu_seconds

ROOT = Path(__file__).resolve().parents[1]
HELP_MARKER = b"remap any of them"

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
# what the monitor's first round imports (rocmtui.core.monitor brings asyncio)
PROBE_LIBRARIES = "rocmtui.core.monitor,docker,httpx,psutil"

CONSOLE_FOLLOWING = """
import sys, time
from pathlib import Path
from rocmtui.app.app import RocmTui
from rocmtui.app.model import JobView
from rocmtui.core.config import load_config

class Bench(RocmTui):
    def on_mount(self):  # Textual runs RocmTui.on_mount too (handlers run along the MRO)
        self.call_after_refresh(self.open_pane)
    def open_pane(self):
        job = JobView(id="bench-follow", target="demo-pytorch", arch="gfx1201",
                      node="snoc-think", state="running", started_at=time.time(),
                      log_path=Path(sys.argv[2]))
        self.logs_screen.open_job(job)
        self.push_screen(self.logs_screen)

Bench(load_config(sys.argv[1])).run()
"""

LOG_WIDGET_FOLLOWING = """
import sys, threading, time
from textual.app import App
from textual.screen import ModalScreen
from textual.widgets import Log, Static

class Help(ModalScreen):
    BINDINGS = [("escape", "app.pop_screen", "close")]
    def compose(self):
        yield Static("Keys - remap any of them")

class Follow(App):
    BINDINGS = [("question_mark", "help", "help")]
    def compose(self):
        yield Log(max_lines=2000, auto_scroll=True)
    def on_mount(self):
        threading.Thread(target=self.tail, daemon=True).start()
    def action_help(self):
        self.push_screen(Help())
    def tail(self):
        path, offset, partial = sys.argv[1], 0, b""
        while True:
            with open(path, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read(4 << 20)
            offset += len(chunk)
            data = partial + chunk
            cut = data.rfind(b"\\n") + 1
            partial = data[cut:]
            lines = data[:cut].decode("utf-8", "replace").splitlines()[-2000:]
            if lines:
                self.call_from_thread(self.add, lines)
            time.sleep(0.05)
    def add(self, lines):
        log = self.query_one(Log)
        log.write_lines(lines)
        log.refresh()

Follow().run()
"""

WRITER = """
import sys, time
path, rate = sys.argv[1], int(sys.argv[2])
batch = rate // 100
n = 0
with open(path, "a", buffering=1 << 20) as fh:
    next_at = time.monotonic()
    while True:
        lines = []
        for _ in range(batch):
            n += 1
            lines.append(f"#12 {n / rate:.3f} [{n}/9999999] Building HIP object "
                         f"caffe2/CMakeFiles/torch_hip.dir/aten/src/ATen/native/hip/k{n}.hip.o\\n")
        fh.write("".join(lines))
        fh.flush()
        next_at += 0.01
        time.sleep(max(0.0, next_at - time.monotonic()))
"""


def base_env(state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL", "NO_COLOR"))}
    env.update(TERM="xterm-256color", TZ="UTC", ROCMTUI_STATE_DIR=str(state), COLUMNS="",
               LINES="")  # fmt: skip
    env.pop("COLUMNS")
    env.pop("LINES")
    return env


def monitor_argv(config: Path) -> list[str]:
    """The console's monitor process, as the console starts it (rocmtui.app.probeproc)."""
    return [sys.executable, "-m", "rocmtui.app.probeproc", str(config)]


@dataclass(frozen=True)
class Startup:
    """Medians of the start-up runs: seconds, and CPU seconds spent by the time of the frame."""

    console: float  # to the first frame with live fleet data
    minimal: float  # the minimal app, to its first frame
    beside: float  # the minimal app, its monitor process starting beside it
    replayed: float  # the console, its monitor replaying a recorded round at once
    preloaded: float  # the same, the replaying monitor importing the probe libraries first
    alone: float  # the monitor process alone, spawn to its first whole round
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
        # names what it waits for in "pending"
        while line := child.stdout.readline():
            if not json.loads(line).get("pending"):
                return time.monotonic() - started, cpu_seconds(child.pid), line
        raise RuntimeError("the monitor process ended before a whole round")
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def _live_frame(argv: Sequence[str], env: dict[str, str]) -> float | None:
    """Seconds from starting a console to its status line's 'probed' (None: not seen)."""
    term = Pty(argv, env, 120, 40)
    seen = term.wait_for(b"probed", timeout=30)
    term.stop()
    return None if seen is None else seen - term.started


def startup(config: Path, env: dict[str, str], runs: int, tmp: Path) -> Startup:
    """Medians: seconds to first live frame (console), to first frame (minimal app), and to
    the minimal app's first frame while the console's monitor process starts beside it; and
    the CPU each had used by then. Also the console with its monitor replaced by a replay of
    a recorded round, at once and after the probe libraries' imports."""
    recorded = tmp / "recorded-round.json"
    recorded.write_bytes(first_round(config, env)[2])
    replay = [sys.executable, "-c", CONSOLE_REPLAYED, str(config), REPLAY, str(recorded)]
    console, minimal, beside, replayed, preloaded = [], [], [], [], []
    console_cpu, monitor_cpu, minimal_cpu, alone, alone_cpu = [], [], [], [], []
    burns: list[tuple[float, float]] = []
    for _ in range(runs):
        burns.append(burn_pair())
        seconds, cpu, _ = first_round(config, env)
        alone.append(seconds)
        alone_cpu.append(cpu)
        for argv, into in (([*replay, ""], replayed), ([*replay, PROBE_LIBRARIES], preloaded)):
            seconds = _live_frame(argv, env)
            if seconds is not None:
                into.append(seconds)
        term = Pty([sys.executable, "-m", "rocmtui", "--config", str(config)], env, 120, 40)
        seen = term.wait_for(b"probed", timeout=30)
        own, children = _cpu_by_now(term.pid)
        term.stop()
        if seen is not None:
            console.append(seen - term.started)
            console_cpu.append(own)
            monitor_cpu.append(children)
        term = Pty([sys.executable, "-c", MINIMAL_APP], env, 120, 40)
        seen = term.wait_for(b"rocmtui-bench-ready", timeout=30)
        own, _ = _cpu_by_now(term.pid)
        term.stop()
        if seen is not None:
            minimal.append(seen - term.started)
            minimal_cpu.append(own)
        # the same minimal app, with the probe child the console starts before Textual: how
        # much the two processes' start-ups slow each other on this machine
        child = subprocess.Popen(
            monitor_argv(config),
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        term = Pty([sys.executable, "-c", MINIMAL_APP], env, 120, 40)
        seen = term.wait_for(b"rocmtui-bench-ready", timeout=30)
        term.stop()
        assert child.stdin is not None
        child.stdin.close()  # the child ends after its round
        child.wait(timeout=30)
        if seen is not None:
            beside.append(seen - term.started)
    md = statistics.median
    return Startup(
        md(console), md(minimal), md(beside), md(replayed), md(preloaded), md(alone),
        md(console_cpu), md(monitor_cpu), md(minimal_cpu), md(alone_cpu),
        2 * md(a for a, _ in burns) / md(t for _, t in burns),
        min(2 * a / t for a, t in burns), max(2 * a / t for a, t in burns),
    )  # fmt: skip


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


def idle(config: Path, env: dict[str, str], seconds: float) -> tuple[float, float]:
    """(CPU % of one core, terminal bytes per second) of an idle console."""
    term = Pty([sys.executable, "-m", "rocmtui", "--config", str(config)], env, 120, 40)
    try:
        term.wait_for(b"probed", timeout=30)
        time.sleep(5)  # the bake file and first rounds settle
        # the console and its children (the fleet monitor runs in one): all of its CPU
        procs = [psutil.Process(term.pid), *psutil.Process(term.pid).children(recursive=True)]

        def cpu() -> float:
            total = 0.0
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    total += sum(proc.cpu_times()[:2])
            return total

        cpu0, bytes0, t0 = cpu(), term.size, time.monotonic()
        time.sleep(seconds)
        cpu1, bytes1, t1 = cpu(), term.size, time.monotonic()
    finally:
        term.stop()
    return 100 * (cpu1 - cpu0) / (t1 - t0), (bytes1 - bytes0) / (t1 - t0)


def key_latency(argv: Sequence[str], env: dict[str, str], log: Path, presses: int) -> list[float]:
    """Seconds from typing `?` to the help text on the terminal, while `log` grows 20k lines/s."""
    log.write_text("")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(log), "20000"])
    term = Pty(argv, env, 120, 40)
    samples: list[float] = []
    try:
        term.wait_for(b"Building HIP object", timeout=30)
        time.sleep(2)  # following at full rate
        for _ in range(presses):
            start = term.size
            sent = time.monotonic()
            term.type(b"?")
            seen = term.wait_for(HELP_MARKER, start, timeout=10)
            if seen is not None:
                samples.append(seen - sent)
            term.type(b"\x1b")
            time.sleep(0.4)
    finally:
        term.stop()
        writer.terminate()
        writer.wait()
    return samples


def main(argv: Sequence[str] | None = None) -> int:
    quick = common.quick()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleet-dir", type=Path, help="a running dev fleet (else one is started)")
    parser.add_argument("--runs", type=int, default=3 if quick else 15)
    parser.add_argument("--idle-seconds", type=float, default=20.0 if quick else 60.0)
    parser.add_argument("--presses", type=int, default=15 if quick else 40)
    parser.add_argument("--quick", action="store_true", help="short runs (also BENCH_QUICK=1)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.idle_seconds, args.presses = 3, 20.0, 15
    print(f"load average: {os.getloadavg()}")
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="rocmtui-bench-console-") as tmp:
        tmpdir = Path(tmp)
        fleet = None
        if args.fleet_dir:
            fleet_file = args.fleet_dir / "rocmtui.toml"
        else:
            from rocmtui.devfleet import start_fleet

            fleet = start_fleet(tmpdir / "fleet")
            fleet_file = fleet.config_path
            # three dockerd/containerd pairs finish starting up in the background for a few
            # seconds: start-up figures taken meanwhile measured their CPU, not the console's
            time.sleep(5)
        try:
            text = re.sub(r"(?m)^refresh_seconds = .*$", "refresh_seconds = 2.0",
                          fleet_file.read_text())  # fmt: skip
            config = tmpdir / "fleet.toml"
            config.write_text(text)
            env = base_env(tmpdir / "state")

            started = startup(config, env, args.runs, tmpdir)
            console_s, minimal_s, beside_s = started.console, started.minimal, started.beside
            rows.append(common.row(
                "start to first frame with live fleet data", console_s, minimal_s, unit="s",
                anchor_name="Textual app mounting one Static", target="<= 1.5x",
                ok=console_s <= 1.5 * minimal_s,
                note=f"median of {args.runs}; live = the status line's 'probed' after a real round",
            ))  # fmt: skip
            rows.append(common.row(
                "  context: that Textual app, its monitor process starting beside it", beside_s,
                minimal_s, unit="s", anchor_name="the same app alone",
                note="no target: what the probe process's start-up costs a Textual start here",
            ))  # fmt: skip
            both_cpu = started.console_cpu + started.monitor_cpu
            cores = os.cpu_count() or 1
            rows.append(common.row(
                "  context: CPU by the live frame, console + its monitor process", both_cpu,
                started.minimal_cpu, unit="s", anchor_name="the Textual app's, by its frame",
                note=f"no target: console {started.console_cpu:.3f} s + monitor "
                f"{started.monitor_cpu:.3f} s; spread over {cores} cores at best that is "
                f"{both_cpu / cores:.3f} s of wall time (the 1.5x budget: {1.5 * minimal_s:.3f} s)",
            ))  # fmt: skip
            rows.append(common.row(
                "  context: the console, its monitor replaying a recorded round at once",
                started.replayed, minimal_s, unit="s",
                anchor_name="Textual app mounting one Static",
                note="no target: the console's own start-up, no probing at all; the same path "
                "as the first row, the monitor process a replay of this fleet's first round",
            ))  # fmt: skip
            rows.append(common.row(
                "  context: the same, the replay importing the probe libraries first",
                started.preloaded, minimal_s, unit="s",
                anchor_name="Textual app mounting one Static",
                note="no target: the replaying process imports "
                f"{PROBE_LIBRARIES.replace(',', ', ')} before its line, as the monitor's first "
                "round does; the rest is the round itself",
            ))  # fmt: skip
            alone_s, alone_cpu = started.alone, started.alone_cpu
            rows.append(common.row(
                "  context: the monitor process alone, spawn to its first round", alone_s,
                minimal_s, unit="s", anchor_name="Textual app mounting one Static",
                note=f"no target: {alone_cpu:.3f} s of CPU (imports: docker SDK, httpx, psutil, "
                f"asyncio); the live frame cannot come before it, the 1.5x budget is "
                f"{1.5 * minimal_s:.3f} s",
            ))  # fmt: skip

            rows.append(common.row(
                "  context: this machine's second core, two CPU-bound processes at once",
                started.second_core, 2.0, unit="x", anchor_name="two whole cores",
                note=f"no target: medians of {args.runs}; single runs "
                f"{started.second_core_low:.2f}x to {started.second_core_high:.2f}x (1.0x: "
                "together they ran as on one core); "
                "the console starts two processes, the Textual app one",
            ))  # fmt: skip

            cpu_pct, rate = idle(config, env, args.idle_seconds)
            rows.append(common.row(
                f"idle {args.idle_seconds:.0f} s on the 3-node fleet, CPU", cpu_pct,
                unit="% of a core",
                target="< 2%", ok=cpu_pct < 2.0, note="2 s refresh; console + its monitor process",
            ))  # fmt: skip
            rows.append(common.row(
                f"idle {args.idle_seconds:.0f} s, bytes to the terminal", rate, unit="B/s",
                target="< 2048", ok=rate < 2048, note="read off the pty master, 120x40",
            ))  # fmt: skip

            log = tmpdir / "follow.log"
            ours = key_latency([sys.executable, "-c", CONSOLE_FOLLOWING, str(config), str(log)],
                               env, log, args.presses)  # fmt: skip
            theirs = key_latency([sys.executable, "-c", LOG_WIDGET_FOLLOWING, str(log)], env,
                                 log, args.presses)  # fmt: skip
            ours_p95, theirs_p95 = common.p95(ours) * 1000, common.p95(theirs) * 1000
            rows.append(common.row(
                "key to screen p95, log pane following 20,000 lines/s", ours_p95, theirs_p95,
                unit="ms", anchor_name="Textual Log following the same file", target="< 50 ms",
                ok=ours_p95 < 50,
                note=f"{len(ours)}/{args.presses} presses of ? seen; median "
                f"{common.median(ours) * 1000:.0f} ms (anchor {common.median(theirs) * 1000:.0f})",
            ))  # fmt: skip
        finally:
            if fleet is not None:
                fleet.stop()
    common.emit(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
