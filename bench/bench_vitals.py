"""Figures for node vitals (issue 35), on a dev fleet this script starts (its real shape:
snoc-strix with a node_exporter, snoc-think over ssh, snoc-gaming over TLS).

    python bench/bench_vitals.py [--quick] [--json OUT]

1. The monitor (a `FleetMonitor` at a 2 s refresh in a process of its own) with vitals, beside
   the same monitor with vitals off, run one after the other for the same length: CPU of the
   process and its reaped children (its ssh sessions), % of one core. Target: vitals add
   under 2% of a core.
2. ssh logins to snoc-think while the monitor with vitals runs (sshd's `Accepted publickey`
   lines), after its first round: target 0 (one kept connection carries probes and vitals).
   The issue asks for 10 minutes; `--quick` watches 60 s and says so.
3. 100 nodes with vitals (the three real ones repeated: exporter, ssh, TLS), 10 of them hung
   (5 engines that accept and never answer, 5 whose node_exporter does the same): one probe
   round's wall time, beside the same round with vitals off; target: within the 3 s deadline
   plus the round's 0.5 s margin.

Nothing asserts; rows go to stdout and `BENCH_RESULTS` (bench/README.md). The machine may be
shared: figures are indicative, each beside its anchor from the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # devfleet: beside the package
import common

from devfleet import DevFleet, HungTcpListener, HungUnixSocket, start_fleet
from rocmtui.core.config.fleetfile import parse_config
from rocmtui.core.probes import HttpClients, NodeProber
from rocmtui.core.probes.round import Probers, probe_fleet

REFRESH = 2.0
DEADLINE = 3.0
MARGIN = 0.5  # probes.round.ROUND_MARGIN
CHILD = """
import asyncio, sys
from pathlib import Path
from rocmtui.core.config.fleetfile import parse_config
from rocmtui.core.probes.round import FleetMonitor

config = parse_config(Path(sys.argv[1]))
monitor = FleetMonitor(config, lambda s: print(len(s.nodes), flush=True),
                       history=False, vitals=sys.argv[2] == "on")

async def main():
    task = asyncio.ensure_future(monitor.run())
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    monitor.stop()
    await task

asyncio.run(main())
"""


def cpu_of(pid: int) -> float:
    """User+system CPU seconds of a process and its reaped children."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def fleet_file(fleet: DevFleet, tmp: Path) -> Path:
    """The fleet's real shape at a 2 s refresh and a 3 s deadline."""
    text = fleet.config_path.read_text()
    text = re.sub(r"(?m)^refresh_seconds = .*$", f"refresh_seconds = {REFRESH}", text)
    path = tmp / "fleet.toml"
    path.write_text(f"probe_deadline_seconds = {DEADLINE}\n" + text)
    return path


def monitor_run(
    config: Path, fleet: DevFleet, vitals: bool, seconds: float
) -> tuple[float, int, int]:
    """(CPU % of a core, ssh logins to snoc-think after the first round, rounds) of a monitor
    process with vitals on or off, watched for `seconds` after its first round."""
    sshd = fleet.remote("snoc-think").sshd
    assert sshd is not None
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(config), "on" if vitals else "off"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert child.stdout is not None and child.stdin is not None
    rounds = 0
    try:
        child.stdout.readline()  # the first round: imports and the login are done
        before = sshd.logins()
        cpu0, t0 = cpu_of(child.pid), time.monotonic()
        while time.monotonic() < t0 + seconds:
            if child.stdout.readline():
                rounds += 1
        cpu1, t1 = cpu_of(child.pid), time.monotonic()
        logins = sshd.logins() - before
    finally:
        with contextlib.suppress(OSError):
            child.stdin.close()  # the monitor ends its rounds and its ssh connection
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return 100 * (cpu1 - cpu0) / (t1 - t0), logins, rounds


def hundred_file(fleet: DevFleet, tmp: Path, hung: list[str], hung_exporters: list[str]) -> Path:
    """100 nodes: the real shape's three repeated (30 each), 5 hung engines, 5 nodes whose
    node_exporter hangs (their engine real)."""
    text = fleet.config_path.read_text()
    head, _, rest = text.partition("[[nodes]]")
    blocks = ["[[nodes]]" + b for b in ("[[nodes]]" + rest).split("[[nodes]]")[1:]]
    lines = [f"probe_deadline_seconds = {DEADLINE}", head.strip()]
    count = 0

    def add(block: str, extra: str = "") -> None:
        nonlocal count
        body = re.sub(r'(?m)^name = ".*"$', f'name = "n{count:03d}"', block.strip())
        lines.append(body + ("\n" + extra if extra else ""))
        count += 1

    for i in range(90):
        add(blocks[i % 3])
    for host in hung:
        add(f'[[nodes]]\nname = "x"\ndocker_host = "{host}"\nlocal = false')
    for url in hung_exporters:
        block = re.sub(r"(?m)^node_exporter = .*\n?", "", blocks[2])  # the TLS node
        add(block, f'node_exporter = "{url}/metrics"')
    path = tmp / "hundred.toml"
    path.write_text("\n\n".join(lines) + "\n")
    return path


async def hundred_rounds(
    config_path: Path, vitals: bool, rounds: int
) -> tuple[list[float], dict[str, int]]:
    """Wall times of `rounds` rounds after a first one, and the sources of the last round."""
    config = parse_config(config_path)
    probers = Probers(nodes=NodeProber(count_containers=False), http=HttpClients(),
                      with_vitals=vitals)  # fmt: skip
    walls: list[float] = []
    try:
        snap = await probe_fleet(config, probers=probers)
        for _ in range(rounds):
            started = time.perf_counter()
            snap = await probe_fleet(config, probers=probers, previous=snap)
            walls.append(time.perf_counter() - started)
    finally:
        if probers.http is not None:
            await probers.http.aclose()
        if probers.vitals is not None:
            await probers.vitals.aclose()
        probers.nodes.close()
    sources: dict[str, int] = {}
    for node in snap.nodes:
        word = node.vitals.source if node.vitals is not None else "none"
        if node.vitals is not None and node.vitals.error:
            word += " (error)"
        sources[word] = sources.get(word, 0) + 1
    return walls, sources


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    quick = args.quick or common.quick()
    window = 60.0 if quick else 600.0
    print(f"load average: {os.getloadavg()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="rt-bv-") as tmp_name:
        tmp = Path(tmp_name)
        fleet = start_fleet(tmp / "fleet")
        try:
            time.sleep(5)  # the engines finish starting up
            config = fleet_file(fleet, tmp)
            off_cpu, off_logins, off_rounds = monitor_run(config, fleet, False, window)
            on_cpu, on_logins, on_rounds = monitor_run(config, fleet, True, window)
            added = on_cpu - off_cpu
            rows.append(common.row(
                "monitor CPU at a 2 s refresh, 3 nodes, vitals on",
                on_cpu, off_cpu, unit="% of a core", anchor_name="the same monitor, vitals off",
                target="adds < 2% of a core", ok=added < 2.0,
                note=f"adds {added:.2f}%; {on_rounds} and {off_rounds} rounds in {window:.0f}s "
                     "each",
            ))  # fmt: skip
            rows.append(common.row(
                f"ssh logins to snoc-think in {window / 60:.0f} min with vitals",
                on_logins, off_logins, unit="logins", anchor_name="vitals off",
                target="0 after the first round", ok=on_logins == 0,
                note="the issue asks for 10 min" if quick else "",
            ))  # fmt: skip
            with contextlib.ExitStack() as stack:
                hung = [stack.enter_context(HungUnixSocket()) for _ in range(3)]
                hung_tcp = [stack.enter_context(HungTcpListener()) for _ in range(2)]
                exporters = [stack.enter_context(HungTcpListener()) for _ in range(5)]
                path = hundred_file(
                    fleet, tmp, [h.docker_host for h in [*hung, *hung_tcp]],
                    [x.url for x in exporters],
                )  # fmt: skip
                runs = 2 if quick else 5
                off, _ = asyncio.run(hundred_rounds(path, False, runs))
                on, sources = asyncio.run(hundred_rounds(path, True, runs))
            wall = max(on)
            rows.append(common.row(
                "100 nodes with vitals, 10 hung: slowest round (s)",
                wall, max(off), unit="s", anchor_name="the same rounds, vitals off",
                target=f"<= {DEADLINE + MARGIN:g} s (deadline + margin)",
                ok=wall <= DEADLINE + MARGIN,
                note=f"median {statistics.median(on):.2f}s of {runs}; sources "
                     + json.dumps(sources, sort_keys=True),
            ))  # fmt: skip
        finally:
            fleet.stop()
    common.emit(rows, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
