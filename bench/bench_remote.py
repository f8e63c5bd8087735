"""Figures for remote nodes (issue 16), on the dev fleet's real shape: snoc-strix through its
unix socket, snoc-think over ssh (sshd in its namespace), snoc-gaming over mutual TLS.

    python bench/bench_remote.py [--quick] [--fleet-dir DIR] [--json OUT]

1. A refresh of the 3-node fleet: wall time of one probe round (the console's monitor: kept ssh
   connection, pooled TLS client; registry and WebDAV included), beside `docker -H URL version`
   of the slowest node run in the same loop (alternating; the docker CLI logs in over ssh each
   time, as a person's shell would): target <= 1.5x (medians). And CPU per refresh of the
   monitor process at a 2 s refresh (`python -m rocmtui.core.hostmonitor.ownchild`, its reaped ssh
   children included): target < 2% of a core.
2. ssh logins per node over 10 minutes of console idle (the monitor process at a 2 s refresh),
   counted in snoc-think's sshd log (`LogLevel VERBOSE`: one `Accepted publickey` line per
   login): target <= 2. Beside it the same probes without the kept connection, which log in
   once per refresh. `--quick` watches 60 s and says so (the count is per window, not scaled:
   a kept connection logs in once whatever the length).
3. snoc-think's link black-holed (its veth end down, no reset) under the real console (a pty,
   120x40, 2 s refresh, 3 s deadline): seconds from the cut to `✗ down` on the terminal, beside
   the deadline. A probe can only start at the next refresh, so the bound is refresh + deadline
   + 20%; key to screen (`?` to the help text) p95 meanwhile: target < 50 ms.

Nothing asserts; rows go to stdout and `BENCH_RESULTS` (bench/README.md). The machine may be
shared: the figures are indicative, each beside its anchor from the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # devfleet: beside the package
import common
from tui import Pty

from devfleet import DevFleet, start_fleet
from rocmtui.core.config.fleetfile import FleetConfig, parse_config
from rocmtui.core.probes import HttpClients, NodeProber
from rocmtui.core.probes.round import Probers, probe_fleet

DOWN_MARKER = "✗ down".encode()
REFRESH = 2.0
DEADLINE = 3.0


def fleet_file(fleet: DevFleet, tmp: Path) -> Path:
    """The fleet's real shape at a 2 s refresh and a 3 s deadline."""
    text = fleet.config_path.read_text()
    text = re.sub(r"(?m)^refresh_seconds = .*$", f"refresh_seconds = {REFRESH}", text)
    path = tmp / "fleet.toml"
    path.write_text(f"probe_deadline_seconds = {DEADLINE}\n" + text)
    return path


def docker_version(url: str, env: dict[str, str]) -> float:
    """Seconds `docker -H URL version` takes (it must succeed)."""
    started = time.perf_counter()
    done = subprocess.run(
        ["docker", "-H", url, "version", "--format", "{{.Server.Version}}"],
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"docker -H {url} version: {done.stderr.decode()[-300:]}")
    return took


def cli_env(fleet: DevFleet, tls: bool) -> dict[str, str]:
    """The docker CLI's environment for a node: the fleet's ssh wrapper first on PATH (it adds
    `-F <the fleet's ssh config>`), or the TLS client's files."""
    env = dict(os.environ)
    env["PATH"] = f"{fleet.ssh.bin}:{env.get('PATH', '')}"
    for key in ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
        env.pop(key, None)
    if tls:
        env.update(DOCKER_TLS_VERIFY="1", DOCKER_CERT_PATH=str(fleet.tls_client.cert.parent))
    return env


async def refresh_loop(
    config: FleetConfig, fleet: DevFleet, rounds: int
) -> tuple[list[float], list[float]]:
    """(round wall times, slowest `docker -H URL version` per iteration), alternating."""
    probers = Probers(nodes=NodeProber(count_containers=False), http=HttpClients())
    urls = []
    for node in config.nodes:
        url = node.docker_host or ""
        urls.append((url, cli_env(fleet, bool(node.tls_cert))))
    previous = await probe_fleet(config, probers=probers)  # the first round logs in
    walls: list[float] = []
    slowest: list[float] = []
    try:
        for _ in range(rounds):
            started = time.perf_counter()
            previous = await probe_fleet(config, probers=probers, previous=previous)
            walls.append(time.perf_counter() - started)
            bad = [n.name for n in previous.nodes if str(n.state) != "ok"]
            if bad:
                raise RuntimeError(f"nodes not ok during the loop: {bad}")
            loop = asyncio.get_running_loop()
            times = [
                await loop.run_in_executor(None, docker_version, url, env) for url, env in urls
            ]
            slowest.append(max(times))
            await asyncio.sleep(0.2)
    finally:
        if probers.http is not None:
            await probers.http.aclose()
        probers.nodes.close()
    return walls, slowest


def cpu_of(pid: int) -> float:
    """User+system CPU seconds of a process and its reaped children."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def monitor_idle(
    config: Path, fleet: DevFleet, seconds: float, env: dict[str, str]
) -> tuple[int, float, int]:
    """Run the console's monitor process for `seconds` in `env` (its state, and so its log, in
    this run's folder): (ssh logins to snoc-think, CPU % of a core, rounds seen)."""
    sshd = fleet.remote("snoc-think").sshd
    assert sshd is not None
    before = sshd.logins()
    child = subprocess.Popen(
        [sys.executable, "-m", "rocmtui.core.hostmonitor.ownchild", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert child.stdout is not None
    rounds = 0
    try:
        child.stdout.readline()  # the first round is out: its imports and login are done
        cpu0, t0 = cpu_of(child.pid), time.monotonic()
        end = t0 + seconds
        while time.monotonic() < end:
            if child.stdout.readline():
                rounds += 1
        cpu1, t1 = cpu_of(child.pid), time.monotonic()
    finally:
        with contextlib.suppress(OSError):
            assert child.stdin is not None
            child.stdin.close()  # the monitor ends its rounds and its ssh connections
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return sshd.logins() - before, 100 * (cpu1 - cpu0) / (t1 - t0), rounds


async def logins_without_reuse(config: FleetConfig, fleet: DevFleet, refreshes: int) -> float:
    """Logins per refresh when every probe logs in (no kept connection)."""
    sshd = fleet.remote("snoc-think").sshd
    assert sshd is not None
    node = next(n for n in config.nodes if n.name == "snoc-think")
    prober = NodeProber(count_containers=False, ssh_reuse=False)
    await prober.probe(node, deadline=10)  # its first round also asks the static facts
    before = sshd.logins()
    try:
        for _ in range(refreshes):
            snap = await prober.probe(node, deadline=DEADLINE)
            if str(snap.state) != "ok":
                raise RuntimeError(f"snoc-think not ok: {snap.reason}")
    finally:
        prober.close()
    return (sshd.logins() - before) / refreshes


def black_hole(
    config: Path, fleet: DevFleet, presses: int, env: dict[str, str]
) -> dict[str, float]:
    """The console in a pty; snoc-think's link cut; seconds to `✗ down` and key latencies."""
    term = Pty([sys.executable, "-m", "rocmtui", "--config", str(config)], env, 120, 40)
    link = fleet.remote("snoc-think").link
    samples: list[float] = []
    try:
        if term.wait_for(b"probed", timeout=60) is None:
            raise RuntimeError("the console never showed a live round")
        time.sleep(2 * REFRESH)  # all three ok, a few rounds in
        if DOWN_MARKER in bytes(term.buffer):
            raise RuntimeError("a node is down before the cut")
        mark = term.size
        link.down()
        cut = time.monotonic()
        seen = term.wait_for(DOWN_MARKER, mark, timeout=60)
        down_after = (seen - cut) if seen is not None else float("nan")
        for _ in range(presses):  # the link stays down: keys meanwhile
            if (took := term.key_to_help(0.3)) is not None:
                samples.append(took)
    finally:
        link.up()
        term.stop()
    return {
        "down_after": down_after,
        "p95_ms": common.p95(samples) * 1000 if samples else float("nan"),
        "median_ms": common.median(samples) * 1000 if samples else float("nan"),
        "seen": float(len(samples)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    quick = common.quick()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleet-dir", type=Path, help="a running dev fleet (else one is started)")
    parser.add_argument("--rounds", type=int, default=10 if quick else 30)
    parser.add_argument("--idle-seconds", type=float, default=60.0 if quick else 600.0)
    parser.add_argument("--presses", type=int, default=15 if quick else 40)
    parser.add_argument("--quick", action="store_true", help="short runs (also BENCH_QUICK=1)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.idle_seconds, args.presses = 10, 60.0, 15
    print(f"load average: {os.getloadavg()}")
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="rocmtui-bench-remote-") as tmp:
        tmpdir = Path(tmp)
        fleet: DevFleet | None = None
        if args.fleet_dir:
            loaded = DevFleet.load(args.fleet_dir.resolve())
            if loaded is None:
                raise SystemExit(f"no dev fleet recorded in {args.fleet_dir}")
            fleet = loaded
            owned = False
        else:
            fleet = start_fleet(tmpdir / "fleet")
            owned = True
            time.sleep(5)  # the engines finish starting in the background
        try:
            config_path = fleet_file(fleet, tmpdir)
            config = parse_config(config_path)
            env = {k: v for k, v in os.environ.items() if not k.startswith("TEXTUAL")}
            env.update(TERM="xterm-256color", TZ="UTC", ROCMTUI_STATE_DIR=str(tmpdir / "state"))

            walls, slowest = asyncio.run(refresh_loop(config, fleet, args.rounds))
            wall, anchor = common.median(walls), common.median(slowest)
            rows.append(common.row(
                "refresh of the 3-node fleet (unix, ssh, tls), wall", wall * 1000, anchor * 1000,
                unit="ms", anchor_name="docker -H URL version, slowest node",
                target="<= 1.5x", ok=wall <= 1.5 * anchor,
                note=f"medians of {args.rounds} alternating; round p95 "
                f"{common.p95(walls) * 1000:.0f} ms; includes registry and WebDAV",
            ))  # fmt: skip

            logins, cpu_pct, rounds = monitor_idle(config_path, fleet, args.idle_seconds, env)
            rows.append(common.row(
                "monitor CPU per refresh at 2 s (3 nodes: unix, ssh, tls)", cpu_pct,
                unit="% of a core", target="< 2%", ok=cpu_pct < 2.0,
                note=f"{rounds} rounds in {args.idle_seconds:.0f} s; the monitor process and "
                "its reaped ssh children",
            ))  # fmt: skip
            per_refresh = asyncio.run(logins_without_reuse(config, fleet, 10))
            window = "10 min" if args.idle_seconds >= 600 else f"{args.idle_seconds:.0f} s"
            rows.append(common.row(
                f"ssh logins to snoc-think over {window} of console idle", float(logins),
                per_refresh * args.idle_seconds / REFRESH,
                unit="logins", anchor_name="the same probes, no kept connection",
                target="<= 2", ok=logins <= 2,
                note=f"sshd's log; without reuse {per_refresh:.2f} logins per refresh (10 "
                f"measured), scaled to the window's {args.idle_seconds / REFRESH:.0f} refreshes"
                + ("" if args.idle_seconds >= 600 else "; --quick: a shorter window, a kept "
                   "connection logs in once whatever its length"),
            ))  # fmt: skip

            hole = black_hole(config_path, fleet, args.presses, env)
            bound = REFRESH + DEADLINE * 1.2
            rows.append(common.row(
                "link black-holed: cut to '✗ down' on screen", hole["down_after"], DEADLINE,
                unit="s", anchor_name="the probe deadline",
                target=f"<= refresh + deadline + 20% = {bound:.1f} s",
                ok=hole["down_after"] <= bound,
                note="snoc-think's veth end down; a probe starts at the next 2 s refresh",
            ))  # fmt: skip
            rows.append(common.row(
                "key to screen p95 while a link is black-holed", hole["p95_ms"],
                unit="ms", target="< 50 ms", ok=hole["p95_ms"] < 50,
                note=f"{hole['seen']:.0f}/{args.presses} presses of ? seen; median "
                f"{hole['median_ms']:.0f} ms",
            ))  # fmt: skip
        finally:
            if owned:
                fleet.stop()
    common.emit(rows, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
