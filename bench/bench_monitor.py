"""Figures for `rocmtui monitor` (issue 20), on a real local fleet.

    python bench/bench_monitor.py [--fleet-dir DIR] [--window 60] [--scrapes 300] [--quick]

1. Engine requests per minute with 5 consoles attached to one monitor, beside the same with 1
   console attached: target equal within 5% (one probe loop, however many consoles). Every
   engine is reached through a counting proxy (devfleet/counting.py), which counts the
   HTTP request lines on their way to the engine's socket: the docker SDK's and the docker
   CLI's (buildx) alike. Windows are a whole number of the monitor's 30 s `buildx ls` period,
   so each holds as many of those as the other. Context: 5 consoles and no monitor (each
   probes with a child of its own).
2. `/metrics` scrape p95 with 100 configured nodes, 10 of which never answer (bench_status.py's
   set-up: the 3 real engines repeated, 5 hung unix sockets, 5 hung TCP listeners), scraped
   back to back while the monitor probes every 2 s: target < 50 ms. Anchor: prometheus-client's
   own HTTP server (`start_http_server`) serving the same metrics from an idle process.

3. Start to the first frame showing fleet data of a console attached to a running monitor,
   beside the bare Textual app that mounts one Static: target <= 1.2x, medians of `--starts`
   alternating starts (bench/startup.py's processes and markers; bench_console.py takes the
   same figure among its start-up rows). With `--starts-only`, only this figure (no fleet of
   100 nodes, no request windows).

Consoles run on pseudo-terminals (bench/tui.py). Nothing asserts; rows go to the table.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
import startup
from bench_console import base_env
from startup import LIVE
from tui import Pty

from devfleet import (
    CountingProxy,
    HungTcpListener,
    HungUnixSocket,
    ServiceHandle,
    start_monitor,
)

BUILDX_PERIOD = 30.0  # rocmtui.core.probes.round.BUILDER_REFRESH: the windows are multiples of it

ANCHOR_SERVER = """
import sys, time
from prometheus_client import REGISTRY, start_http_server
from prometheus_client.parser import text_string_to_metric_families

class Same:
    def __init__(self, text):
        self.families = list(text_string_to_metric_families(text))
    def collect(self):
        return iter(self.families)

for name in list(REGISTRY._names_to_collectors.values()):
    try:
        REGISTRY.unregister(name)
    except KeyError:
        pass
REGISTRY.register(Same(open(sys.argv[1]).read()))
start_http_server(int(sys.argv[2]), addr="127.0.0.1")
print("ready", flush=True)
time.sleep(3600)
"""


def engine_sockets(fleet_file: Path) -> dict[str, str]:
    """docker_host -> its unix socket path, for every unix:// node of the fleet file."""
    hosts = re.findall(r'(?m)^docker_host = "unix://([^"]+)"', fleet_file.read_text())
    return {f"unix://{path}": path for path in hosts}


def proxied(fleet_file: Path, out: Path, proxies: dict[str, CountingProxy]) -> Path:
    """The fleet file with every engine behind its counting proxy, at a 2 s refresh."""
    text = re.sub(r"(?m)^refresh_seconds = .*$", "refresh_seconds = 2.0", fleet_file.read_text())
    for host, proxy in proxies.items():
        text = text.replace(f'"{host}"', f'"{proxy.docker_host}"')
    out.write_text(text)
    return out


def rate(proxies: dict[str, CountingProxy], seconds: float) -> float:
    """Engine requests per minute over the next `seconds`."""
    before = sum(p.count() for p in proxies.values())
    time.sleep(seconds)  # the measuring window
    return (sum(p.count() for p in proxies.values()) - before) / seconds * 60


def consoles(config: Path, env: dict[str, str], count: int) -> list[Pty]:
    """`count` consoles on pseudo-terminals, each once its first frame with fleet data is up."""
    terms = [Pty([sys.executable, "-m", "rocmtui", "--config", str(config)], env, 120, 40)
             for _ in range(count)]  # fmt: skip
    for term in terms:
        term.wait_for(LIVE, timeout=60)
    return terms


def figure_requests(fleet_file: Path, tmp: Path, window: float) -> list[common.Row]:
    proxies = {host: CountingProxy(Path(path)) for host, path in engine_sockets(fleet_file).items()}
    env = base_env(tmp / "state")
    config = proxied(fleet_file, tmp / "counted.toml", proxies)
    rows: list[common.Row] = []
    state = {"ROCMTUI_STATE_DIR": env["ROCMTUI_STATE_DIR"]}
    monitor = start_monitor(tmp / "monitor", config, state)
    try:
        time.sleep(5)  # its first rounds and its first `buildx ls`
        measured = {}
        for count in (1, 5):
            terms = consoles(config, env, count)
            try:
                measured[count] = rate(proxies, window)
            finally:
                for term in terms:
                    term.stop()
        monitor.stop(grace=5.0)  # now each console starts a child of its own
        own = consoles(config, env, 5)
        try:
            time.sleep(3)
            without = rate(proxies, window)
        finally:
            for term in own:
                term.stop()
    finally:
        monitor.stop(grace=5.0)
        for proxy in proxies.values():
            proxy.stop()
    one, five = measured[1], measured[5]
    rows.append(common.row(
        "engine requests per minute, 5 consoles attached to the monitor", five, one,
        unit="req/min", anchor_name="1 console attached", target="within 5%",
        ok=abs(five - one) <= 0.05 * one,
        note=f"{len(proxies)} engines behind counting proxies; {window:.0f} s windows; "
        "2 s refresh",
    ))  # fmt: skip
    rows.append(common.row(
        "  context: 5 consoles, no monitor (each probes with a child of its own)", without,
        one, unit="req/min", anchor_name="1 console attached",
        note="no target: what attaching saves the engines",
    ))  # fmt: skip
    return rows


def hundred_nodes(fleet_file: Path, out: Path, hung: Sequence[str]) -> Path:
    """bench_status.py's 100-node fleet file: the real engines repeated, then the hung ones."""
    real = list(engine_sockets(fleet_file)) or ["unix:///var/run/docker.sock"]
    text = fleet_file.read_text()
    head = text.split("[[nodes]]", 1)[0]
    head = re.sub(r"(?m)^refresh_seconds = .*$", "refresh_seconds = 2.0", head)
    head = re.sub(r"(?m)^probe_deadline_seconds = .*\n", "", head)
    lines = [f"probe_deadline_seconds = 3.0\n{head}"]
    hosts = [real[i % len(real)] for i in range(100 - len(hung))] + list(hung)
    for i, host in enumerate(hosts):
        lines.append(f'[[nodes]]\nname = "n{i:03d}"\ndocker_host = "{host}"\nlocal = false\n')
    out.write_text("\n".join(lines))
    return out


def scrape_times(url: str, count: int) -> tuple[list[float], bytes]:
    """Seconds each of `count` back-to-back scrapes took, and the last body."""
    times, body = [], b""
    for _ in range(count):
        started = time.perf_counter()
        with urllib.request.urlopen(url, timeout=30) as answer:
            body = answer.read()
        times.append(time.perf_counter() - started)
        time.sleep(0.02)
    return times, body


def figure_scrape(fleet_file: Path, tmp: Path, scrapes: int) -> list[common.Row]:
    with contextlib.ExitStack() as stack:
        hung = [stack.enter_context(HungUnixSocket()).docker_host for _ in range(5)]
        hung += [stack.enter_context(HungTcpListener()).docker_host for _ in range(5)]
        config = hundred_nodes(fleet_file, tmp / "hundred.toml", hung)
        env = {"ROCMTUI_STATE_DIR": str(tmp / "state-100")}
        monitor: ServiceHandle = start_monitor(tmp / "monitor-100", config, env)
        stack.callback(monitor.stop, 5.0)
        url = f"{monitor.url}/metrics"
        deadline = time.monotonic() + 60
        while b"rocmtui_probe_rounds_total 2.0" not in urllib.request.urlopen(url).read():
            if time.monotonic() > deadline:
                raise RuntimeError("the 100-node monitor finished no 2 rounds in 60 s")
            time.sleep(0.5)
        ours, body = scrape_times(url, scrapes)
        rounds = re.search(rb"(?m)^rocmtui_probe_rounds_total (\S+)", body)
        saved = tmp / "exposition.txt"
        saved.write_bytes(body)
        port = common_port()
        anchor = subprocess.Popen([sys.executable, "-c", ANCHOR_SERVER, str(saved), str(port)],
                                  stdout=subprocess.PIPE, text=True)  # fmt: skip
        stack.callback(anchor.kill)
        assert anchor.stdout is not None and anchor.stdout.readline().strip() == "ready"
        theirs, _ = scrape_times(f"http://127.0.0.1:{port}/metrics", scrapes)
    p95, anchor_p95 = common.p95(ours) * 1000, common.p95(theirs) * 1000
    samples = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    return [
        common.row(
            "/metrics scrape p95, 100 nodes (10 hung), during probe rounds", p95, anchor_p95,
            unit="ms", anchor_name="prometheus-client's start_http_server, same metrics, idle",
            target="< 50 ms", ok=p95 < 50,
            note=f"{len(ours)} scrapes back to back; median {common.median(ours) * 1000:.1f} ms; "
            f"{samples} samples, {len(body) // 1024} KiB; 2 s refresh, 3 s deadline; rounds by "
            f"then: {rounds.group(1).decode() if rounds else '?'}",
        )
    ]  # fmt: skip


def figure_attached_start(fleet_file: Path, tmp: Path, starts: int) -> list[common.Row]:
    """The attached console's start beside the bare Textual app, alternating, `starts` each."""
    env = base_env(tmp / "state-attached")
    config = tmp / "attached.toml"
    config.write_text(
        re.sub(r"(?m)^refresh_seconds = .*$", "refresh_seconds = 2.0", fleet_file.read_text())
    )
    console = [sys.executable, "-m", "rocmtui", "--config", str(config)]
    minimal = [sys.executable, "-c", startup.MINIMAL_APP]
    attached: list[tuple[float, float, float]] = []
    bare: list[tuple[float, float, float]] = []
    monitor = startup.RunningMonitor(config, env)
    try:
        for _ in range(starts):
            for argv, marker, into in ((console, LIVE, attached), (minimal, startup.READY, bare)):
                got = startup._frame(argv, env, marker)
                if got is not None:
                    into.append(got)
    finally:
        monitor.stop()
    if not attached or not bare:
        return [common.row("attached console start: no frame seen", None, note="failed")]
    ours, anchor = common.median([a[0] for a in attached]), common.median([b[0] for b in bare])
    spread = f"{min(a[0] for a in attached):.3f}-{max(a[0] for a in attached):.3f} s"
    anchor_spread = f"{min(b[0] for b in bare):.3f}-{max(b[0] for b in bare):.3f} s"
    return [
        common.row(
            "start to first frame with fleet data, console attached to a running monitor",
            ours, anchor, unit="s", anchor_name=startup.MINIMAL_NAME, target="<= 1.2x",
            ok=ours <= 1.2 * anchor,
            note=f"median of {len(attached)} alternating starts ({spread}; anchor "
            f"{anchor_spread}); CPU by the frame {common.median([a[1] for a in attached]):.3f} s "
            f"(anchor {common.median([b[1] for b in bare]):.3f} s); load average "
            f"{os.getloadavg()[0]:.2f}",
        )
    ]  # fmt: skip


def common_port() -> int:
    from devfleet.processes import free_port

    return free_port()


def main(argv: Sequence[str] | None = None) -> int:
    quick = common.quick()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleet-dir", type=Path, help="a running dev fleet (else one is started)")
    parser.add_argument("--window", type=float, default=None, help="seconds per request count")
    parser.add_argument("--scrapes", type=int, default=None)
    parser.add_argument("--starts", type=int, default=None, help="attached starts (15)")
    parser.add_argument("--starts-only", action="store_true", help="only the attached start")
    parser.add_argument("--quick", action="store_true", help="short runs (also BENCH_QUICK=1)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    quick = quick or args.quick
    window = args.window or BUILDX_PERIOD * (1 if quick else 2)
    scrapes = args.scrapes or (100 if quick else 300)
    starts = args.starts or (5 if quick else 15)
    print(f"load average: {os.getloadavg()}")
    rows: list[common.Row] = []
    with tempfile.TemporaryDirectory(prefix="rtbm-", dir="/tmp") as tmpdir:
        tmp = Path(tmpdir)
        with common.fleet_at(args.fleet_dir, tmp) as fleet_file:
            if not args.starts_only:
                rows += figure_requests(fleet_file, tmp, window)
                rows += figure_scrape(fleet_file, tmp, scrapes)
            rows += figure_attached_start(fleet_file, tmp, starts)
    common.emit(rows, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
