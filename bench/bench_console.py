"""Figures for the console, measured end to end through a pseudo-terminal, on a real fleet.

    python bench/bench_console.py [--fleet-dir DIR] [--runs 15] [--idle-seconds 60] [--json OUT]

1. Start to the first frame that shows live fleet data, beside a minimal Textual app that
   mounts one Static: target <= 1.5x (medians of `--runs` alternating starts), and the context
   rows that split that time (bench/startup.py says how).
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
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # devfleet: beside the package
import common
import startup
from tui import Pty

ROOT = Path(__file__).resolve().parents[1]

CONSOLE_FOLLOWING = """
import sys, time
from pathlib import Path
from rocmtui.console.app import RocmTui
from rocmtui.console.backend.views import JobView
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.store import JobRecord

class Bench(RocmTui):
    def on_mount(self):  # Textual runs RocmTui.on_mount too (handlers run along the MRO)
        self.call_after_refresh(self.open_pane)
    def open_pane(self):
        log = Path(sys.argv[2])  # the job folder's log, as the store keeps it
        job = JobView(JobRecord(id="bench-follow", target="demo-pytorch", arch="gfx1201",
                                node="snoc-think", endpoint="", push=False, overrides={},
                                command=(), user="", host="", bake_file="",
                                job_dir=str(log.parent), started_at=time.time()))
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


def idle(config: Path, env: dict[str, str], seconds: float) -> tuple[float, float]:
    """(CPU % of one core, terminal bytes per second) of an idle console."""
    term = Pty([sys.executable, "-m", "rocmtui", "--config", str(config)], env, 120, 40)
    try:
        term.wait_for(startup.LIVE, timeout=30)
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
            if (took := term.key_to_help(0.4)) is not None:
                samples.append(took)
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
        with common.fleet_at(args.fleet_dir, tmpdir) as fleet_file:
            text = re.sub(r"(?m)^refresh_seconds = .*$", "refresh_seconds = 2.0",
                          fleet_file.read_text())  # fmt: skip
            config = tmpdir / "fleet.toml"
            config.write_text(text)
            env = base_env(tmpdir / "state")

            rows += startup.rows(startup.measure(config, env, args.runs, tmpdir), args.runs)

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

            log = tmpdir / "follow" / "log"  # where the store keeps a job's log
            log.parent.mkdir()
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
    common.emit(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
