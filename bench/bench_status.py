"""Figures for `rocmtui status` and the fleet monitor, on a real local fleet it starts itself.

    python bench/bench_status.py [--runs 5] [--json OUT]

1. `rocmtui status --json` over 3 real nodes + registry + WebDAV, wall time, against the
   slowest single probe run alone (each target probed alone in a process of its own that
   loads the same modules first, so the figure measures probing five targets at once against
   one, not import costs); target <= 1.5x. Beside it: the same inside the process (round
   duration vs the slowest probe's own duration), and against an anchor that imports only
   what its one probe needs (for information).
2. 100 configured nodes (the 3 real engines repeated, plus 10 that never answer: hung unix
   sockets and hung TCP listeners): wall time against the probe deadline + 20%; and with all
   100 answering, against 2 s.
3. CPU per refresh of the 3-node fleet in a running `FleetMonitor` at a 2 s refresh: target
   under 2% of one core (the engines' own CPU for the same rounds is shown for information).
4. Peak memory (max RSS) of `rocmtui status`: target under 80 MB.

Wall-clock figures depend on what else the 2-core machine is doing; the load average is
printed first. Nothing here asserts: it prints a table (figure, rocmtui, anchor,
ratio/target, pass/fail).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

# the dev fleet lives beside the package, not in it (it is not installed)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devfleet import DevFleet, HungTcpListener, HungUnixSocket, start_fleet
from rocmtui.core.config.fleetfile import parse_config
from rocmtui.core.probes.round import FleetMonitor
from rocmtui.core.snapshots import FleetSnapshot

DEADLINE = 3.0  # the fleet file's default probe_deadline_seconds
ONE_PROBE = """
import asyncio, json, sys, time
from pathlib import Path
from rocmtui.core.config.fleetfile import parse_config
config = parse_config(Path(sys.argv[1]))
if sys.argv[3] == "same-imports":  # what `rocmtui status` loads before it probes
    import rocmtui.cli.main
    from rocmtui.cli.status import preload
    preload(config)
from rocmtui.core.probes import probe_node, probe_registry, probe_webdav
target = sys.argv[2]
deadline = config.probe_deadline_seconds
started = time.monotonic()
if target == "registry":
    snap = asyncio.run(probe_registry(config.registry.url, deadline=deadline))
elif target == "webdav":
    snap = asyncio.run(probe_webdav(config.webdav.url, deadline=deadline))
else:
    snap = asyncio.run(probe_node(config.node(target), deadline=deadline))
print(json.dumps({"duration": time.monotonic() - started, "state": str(snap.state)}))
"""


@dataclass
class Run:
    """One child process: wall seconds, max RSS in MB, exit code, stdout."""

    wall: float
    rss_mb: float
    code: int
    out: str


def run_child(argv: list[str], env: dict[str, str]) -> Run:
    """Run `argv`, measuring wall time and the child's own peak RSS (wait4)."""
    with tempfile.TemporaryFile() as out:
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return Run(wall, usage.ru_maxrss / 1024, proc.returncode, text)


def status_argv(config: Path) -> list[str]:
    """`rocmtui status --json --config CONFIG` with this interpreter."""
    return [sys.executable, "-m", "rocmtui", "status", "--json", "--config", str(config)]


def write_config(path: Path, fleet: DevFleet, hosts: list[str]) -> Path:
    """A fleet file with the fleet's services and one node per docker host in `hosts`."""
    lines = [
        f"probe_deadline_seconds = {DEADLINE}",
        f'[registry]\nurl = "{fleet.registry.url}"',  # type: ignore[union-attr]
        f'[webdav]\nurl = "{fleet.webdav.url}"',  # type: ignore[union-attr]
    ]
    for i, host in enumerate(hosts):
        local = "true" if i == 0 else "false"
        lines.append(f'[[nodes]]\nname = "n{i:03d}"\ndocker_host = "{host}"\nlocal = {local}')
    path.write_text("\n".join(lines) + "\n")
    return path


def figure_single_vs_round(fleet: DevFleet, env: dict[str, str], runs: int) -> list[dict]:
    config = fleet.config_path
    targets = [n.name for n in parse_config(config).nodes] + ["registry", "webdav"]
    alone: dict[str, list[Run]] = {t: [] for t in targets}
    bare: dict[str, list[Run]] = {t: [] for t in targets}
    together: list[Run] = []
    for _ in range(runs):  # interleaved, so a burst of load hits both sides alike
        together.append(run_child(status_argv(config), env))
        for target in targets:
            argv = [sys.executable, "-c", ONE_PROBE, str(config), target]
            alone[target].append(run_child([*argv, "same-imports"], env))
            bare[target].append(run_child([*argv, "own-imports"], env))
    wall = statistics.median(r.wall for r in together)
    slowest = max(targets, key=lambda t: statistics.median(r.wall for r in alone[t]))
    anchor = statistics.median(r.wall for r in alone[slowest])
    bare_slowest = max(targets, key=lambda t: statistics.median(r.wall for r in bare[t]))
    bare_anchor = statistics.median(r.wall for r in bare[bare_slowest])
    rounds = statistics.median(json.loads(r.out)["duration"] for r in together)
    inner = {t: statistics.median(json.loads(r.out)["duration"] for r in alone[t]) for t in targets}
    inner_slowest = max(inner, key=inner.__getitem__)
    healthy = all(r.code == 0 for r in together)
    return [
        row(
            "status --json, 3 nodes + 2 services: wall (process)",
            wall,
            anchor,
            wall / anchor,
            1.5,
            f"anchor: {slowest} alone, same imports as status; every run healthy: {healthy}",
        ),
        row(
            "  same, anchor importing only what its probe needs",
            wall,
            bare_anchor,
            wall / bare_anchor,
            None,
            f"anchor: {bare_slowest}; the difference is importing docker+httpx+every command",
        ),
        row(
            "  same, inside the process: round vs slowest probe",
            rounds,
            inner[inner_slowest],
            rounds / inner[inner_slowest],
            None,
            f"slowest alone: {inner_slowest}; tens of ms of GIL-bound client CPU add up here",
        ),
        row(
            "peak memory of rocmtui status (MB)",
            max(r.rss_mb for r in together),
            None,
            max(r.rss_mb for r in together),
            80.0,
            "max RSS of the child (wait4)",
        ),
    ]


def figure_hundred(fleet: DevFleet, env: dict[str, str], runs: int, workdir: Path) -> list[dict]:
    real = [e.docker_host for e in fleet.engines]
    answering = write_config(workdir / "100-ok.toml", fleet, [real[i % 3] for i in range(100)])
    rows = []
    with contextlib.ExitStack() as stack:
        hung = [stack.enter_context(HungUnixSocket()) for _ in range(5)]
        hung += [stack.enter_context(HungTcpListener()) for _ in range(5)]
        hosts = [real[i % 3] for i in range(90)] + [h.docker_host for h in hung]
        mixed = write_config(workdir / "100-hung.toml", fleet, hosts)
        results = [run_child(status_argv(mixed), env) for _ in range(runs)]
    wall = statistics.median(r.wall for r in results)
    states = json.loads(results[-1].out)["nodes"]
    down = sum(1 for n in states if n["state"] == "down")
    rows.append(
        row(
            "100 nodes, 10 never answer: wall (s)",
            wall,
            DEADLINE,
            wall / DEADLINE,
            1.2,
            f"deadline {DEADLINE:g}s; down: {down} (expect 10)",
        )
    )
    results = [run_child(status_argv(answering), env) for _ in range(runs)]
    wall = statistics.median(r.wall for r in results)
    ok = sum(1 for n in json.loads(results[-1].out)["nodes"] if n["state"] == "ok")
    rounds = statistics.median(json.loads(r.out)["duration"] for r in results)
    rows.append(
        row(
            "100 nodes, all answering: wall (s)",
            wall,
            None,
            wall,
            2.0,
            f"ok: {ok}/100; probe round alone {rounds:.2f}s; "
            f"max RSS {max(r.rss_mb for r in results):.0f} MB",
        )
    )
    return rows


def engine_cpu(fleet: DevFleet) -> float:
    """CPU seconds used so far by every engine process (dockerd, containerd ...)."""
    total = 0.0
    for pid in fleet.pids:
        with contextlib.suppress(psutil.Error):
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
    return total


def figure_cpu(fleet: DevFleet, rounds: int) -> list[dict]:
    config = parse_config(fleet.config_path)
    published: list[FleetSnapshot] = []
    marks: dict[int, tuple[float, float, float]] = {}

    def publish(snapshot: FleetSnapshot) -> None:
        published.append(snapshot)
        if len(published) == 2:  # after two warm-up rounds ... (our clock read last)
            engines, wall = engine_cpu(fleet), time.monotonic()
            marks[2] = (time.process_time(), engines, wall)
        elif len(published) == rounds + 2:  # ... to `rounds` rounds later (ours read first)
            ours = time.process_time()
            marks[rounds + 2] = (ours, engine_cpu(fleet), time.monotonic())

    monitor = FleetMonitor(config, publish)

    async def go() -> None:
        task = asyncio.ensure_future(monitor.run())
        while len(published) < rounds + 2:
            await asyncio.sleep(0.1)
        monitor.stop()
        await task

    asyncio.run(go())
    (c0, e0, w0), (c1, e1, w1) = marks[2], marks[rounds + 2]
    per_round = (c1 - c0) / rounds
    share = per_round / config.refresh_seconds * 100
    healthy = all(s.healthy for s in published)
    return [
        row(
            f"CPU per refresh, 3-node fleet ({rounds} rounds)",
            per_round,
            None,
            share,
            2.0,
            f"% of one core at {config.refresh_seconds:g}s refresh; all healthy: {healthy}",
        ),
        row(
            "  engines' own CPU per refresh (info)",
            (e1 - e0) / rounds,
            None,
            (e1 - e0) / rounds / config.refresh_seconds * 100,
            None,
            f"dockerd+containerd, 3 engines; {(w1 - w0) / rounds:.2f}s between rounds",
        ),
    ]


def row(
    figure: str,
    value: float,
    anchor: float | None,
    ratio: float,
    target: float | None,
    note: str = "",
) -> dict:
    """One line of the table."""
    verdict = "info" if target is None else ("pass" if ratio <= target else "FAIL")
    return {
        "figure": figure,
        "rocmtui": round(value, 4),
        "anchor": anchor and round(anchor, 4),
        "ratio": round(ratio, 3),
        "target": target,
        "result": verdict,
        "note": note,
    }


def print_table(rows: list[dict]) -> None:
    """The figures, one per line, then notes."""
    print(f"{'figure':54} {'rocmtui':>9} {'anchor':>8} {'ratio/target':>14} {'':>5}")
    for r in rows:
        anchor = f"{r['anchor']:.3f}" if r["anchor"] else "—"
        target = f"{r['ratio']:.2f}/{r['target']:g}" if r["target"] else f"{r['ratio']:.2f}"
        print(f"{r['figure']:54} {r['rocmtui']:>9.3f} {anchor:>8} {target:>14} {r['result']:>5}")
        if r["note"]:
            print(f"{'':56}{r['note']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per wall-clock figure")
    parser.add_argument("--rounds", type=int, default=10, help="monitor rounds for the CPU figure")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"cores: {os.cpu_count()}"
    )
    with tempfile.TemporaryDirectory(prefix="rtbench-") as tmp:
        root = Path(tmp)
        env = dict(os.environ)
        for var in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "DOCKER_CONFIG"):
            (root / var).mkdir()
            env[var] = os.environ[var] = str(root / var)
        for var in ("ROCMTUI_CONFIG", "DOCKER_HOST", "DOCKER_CONTEXT"):
            env.pop(var, None)
            os.environ.pop(var, None)
        started = time.monotonic()
        fleet = start_fleet(root / "fleet")
        print(
            f"fleet up in {time.monotonic() - started:.1f}s: "
            f"{', '.join(e.name for e in fleet.engines)}, registry, webdav"
        )
        try:
            rows = figure_single_vs_round(fleet, env, args.runs)
            rows += figure_hundred(fleet, env, max(1, args.runs // 2 + 1), root)
            rows += figure_cpu(fleet, args.rounds)
        finally:
            fleet.stop()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
