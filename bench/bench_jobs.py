"""Figures of the job layer, each beside its anchor in the same run.

1. Launch-to-return: `rocmtui bake TARGET` as a fresh process (start to exit, job started),
   beside `docker buildx bake --print TARGET` with the same environment; plus `launch_job()`
   called in-process with the bake file already loaded (what the console pays).
2. Following a log written at 20,000 lines/s: `rocmtui logs -f` beside `tail -F` in the same
   run: lag sampled every second and at the end, CPU, peak RSS, and RSS early vs late (memory
   must not grow with the length of the log).

    python bench/bench_jobs.py [--follow-seconds 60] [--rate 20000] [--launches 5]
                               [--config FLEET.toml] [--json OUT]

Without --config it starts one dockerd of its own in a network namespace (root, as the test
fleet does) and stops it at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rocmtui.core.bake.file import load_bake  # noqa: E402
from rocmtui.core.config.fleetfile import load_config  # noqa: E402
from rocmtui.core.jobs.command import node_environment  # noqa: E402
from rocmtui.core.jobs.control import cancel_job, list_jobs  # noqa: E402
from rocmtui.core.jobs.launch import launch_job  # noqa: E402
from rocmtui.core.jobs.store import JobStore  # noqa: E402

TARGET = "demo-base"
ARCH = "gfx1201"

# -- a fleet for the launch figure ---------------------------------------------------------------


@contextlib.contextmanager
def bench_fleet(workdir: Path, config: str | None) -> Iterator[Path]:
    """The fleet file to launch on: the given one, or one dockerd of our own in a netns."""
    if config:
        yield Path(config)
        return
    from devfleet import start_engine
    from devfleet.assembly import engine_kinds

    # the kind ROCMTUI_FLEET_ENGINES names (one kind for every node), else today's engine
    # with Docker 29's minimum API
    kind = engine_kinds(["bench-node"])["bench-node"]
    engine = start_engine(workdir, "bench-node", netns=True, gfx=ARCH, kind=kind)
    try:
        path = workdir / "rocmtui.toml"
        path.write_text(
            f'bake_file = "{REPO / "bake" / "demo.hcl"}"\n'
            f'state_dir = "{workdir / "state"}"\n\n'
            f'[[nodes]]\nname = "bench-node"\ndocker_host = "{engine.docker_host}"\n'
            f'gfx = "{ARCH}"\nlocal = false\n'
        )
        yield path
    finally:
        engine.stop()


def _wait_all_ended(config_path: Path, timeout: float = 120.0) -> None:
    config = load_config(config_path)
    deadline = time.monotonic() + timeout
    while any(j.ended_at is None for j in list_jobs(config, limit=20)):
        if time.monotonic() > deadline:
            for job in list_jobs(config, limit=20):
                if job.ended_at is None:
                    cancel_job(config, job.id, grace=2.0)
            return
        time.sleep(0.2)


def launch_figure(config_path: Path, launches: int, node: str | None) -> dict[str, Any]:
    """Wall time of `rocmtui bake` (fresh process) and of `bake --print`, and in-process."""
    config = load_config(config_path)
    node_name = node or config.nodes[0].name
    env = dict(os.environ)
    cli: list[float] = []
    prints: list[float] = []
    inproc: list[float] = []
    bake = load_bake(config.bake_file)
    node_cfg = config.node(node_name)
    assert node_cfg is not None
    print_env = node_environment(node_cfg, ARCH, env, {"DEMO_STEPS": "2"}, bake.variables)
    docker = shutil.which("docker") or "docker"
    for i in range(launches):
        nonce = f"bench-{os.getpid()}-{i}-{time.time_ns()}"
        argv = [sys.executable, "-m", "rocmtui", "--config", str(config_path), "bake", TARGET]
        argv += ["--arch", ARCH, "--node", node_name, "--set", "DEMO_STEPS=2"]
        argv += ["--set", f"DEMO_NONCE={nonce}"]
        t0 = time.perf_counter()
        out = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        cli.append(time.perf_counter() - t0)
        if out.returncode != 0:
            raise SystemExit(f"rocmtui bake failed: {out.stderr}")
        _wait_all_ended(config_path)
        t0 = time.perf_counter()
        subprocess.run(
            [docker, "buildx", "bake", "-f", str(config.bake_file), "--print", "--", TARGET],
            capture_output=True,
            env=print_env,
            cwd=config.bake_file.parent,
            check=True,
        )
        prints.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        launch_job(
            config,
            bake,
            TARGET,
            ARCH,
            node_name,
            env=env,
            overrides={"DEMO_STEPS": "2", "DEMO_NONCE": nonce + "-lib"},
        )
        inproc.append(time.perf_counter() - t0)
        _wait_all_ended(config_path)
    return {
        "rocmtui bake (process, median s)": statistics.median(cli),
        "rocmtui bake (process, max s)": max(cli),
        "launch_job() in-process (median s)": statistics.median(inproc),
        "docker buildx bake --print (median s)": statistics.median(prints),
        "launches": launches,
    }


# -- the follow figure ---------------------------------------------------------------------------

WRITER = r"""
import fcntl, os, sys, time
lock, log, rate, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
fd = os.open(lock, os.O_RDWR | os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX)
out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
print("ready", flush=True); sys.stdin.readline()
pad = " -DUSE_ROCM -D__HIP_PLATFORM_AMD__=1 -fPIC -O3 --offload-arch=gfx1201" * 1
t0 = time.time(); seq = 0; tick = 0.01; per = max(1, int(rate * tick))
while True:
    now = time.time()
    if now - t0 >= seconds:
        break
    due = int((now - t0) * rate)
    if due > seq:
        lines = []
        for i in range(seq, due):
            lines.append(f"#12 {now - t0:8.3f} [{i}/{int(rate*seconds)}] Building HIP object "
                         f"caffe2/aten/native/hip/k{i % 977}.hip.o seq={i} ts={now:.6f}{pad}\n")
        os.write(out, "".join(lines).encode())
        seq = due
    time.sleep(tick)
os.write(out, f"FINAL seq={seq} ts={time.time():.6f}\n".encode())
print(seq, flush=True)
sys.stdin.readline()
"""

_SEQ = re.compile(rb"ts=(\d+\.\d+)")


class FollowerProbe:
    """Reads a follower's stdout, tracking the write time of the newest line seen."""

    def __init__(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        self.name = name
        self.proc = proc
        self.last_ts: float | None = None
        self.final_seen_at: float | None = None
        self.bytes = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        tail = b""
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return
            self.bytes += len(chunk)
            data = tail + chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                tail = data[-65536:]
                continue
            last = data[data.rfind(b"\n", 0, cut) + 1 : cut]
            tail = data[cut + 1 :]
            m = _SEQ.search(last)
            if m:
                self.last_ts = float(m.group(1))
            if last.startswith(b"FINAL"):
                self.final_seen_at = time.time()

    def lag(self) -> float | None:
        """Seconds between now and the write time of the newest line seen."""
        return None if self.last_ts is None else time.time() - self.last_ts


def _rss(pid: int) -> tuple[int, int]:
    """(current RSS, peak RSS) in bytes from /proc."""
    cur = peak = 0
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                cur = int(line.split()[1]) * 1024
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
    return cur, peak


def follow_figure(workdir: Path, rate: int, seconds: float) -> dict[str, Any]:
    """`rocmtui logs -f` and `tail -F` following one log written at `rate` lines/s."""
    from rocmtui.core.jobs.record import JobRecord

    state = workdir / "follow-state"
    store = JobStore(state)

    def make(job_id: str, job_dir: Path) -> JobRecord:
        (job_dir / "log").touch()
        return JobRecord(
            id=job_id,
            target=TARGET,
            arch=ARCH,
            node="bench",
            endpoint="-",
            push=False,
            overrides={},
            command=(),
            user="bench",
            host="bench",
            bake_file="-",
            job_dir=str(job_dir),
            started_at=time.time(),
        )

    job = store.create(make)
    config = workdir / "follow.toml"
    config.write_text(
        f'state_dir = "{state}"\n\n[[nodes]]\nname = "bench"\ndocker_host = "unix:///x"\n'
    )
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER,
            str(job.lock_path),
            str(job.log_path),
            str(rate),
            str(seconds),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None and writer.stdout is not None
    assert writer.stdout.readline().strip() == "ready"
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    followers = {
        "rocmtui logs -f": subprocess.Popen(
            [sys.executable, "-m", "rocmtui", "--config", str(config), "logs", "-f", job.id],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
        ),
        "tail -F": subprocess.Popen(
            ["tail", "-n", "+1", "-F", str(job.log_path)],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
    }
    time.sleep(0.5)  # both started and idle before the first line
    probes = {name: FollowerProbe(name, proc) for name, proc in followers.items()}
    ps = {name: psutil.Process(proc.pid) for name, proc in followers.items()}
    cpu0 = {name: p.cpu_times() for name, p in ps.items()}
    lags: dict[str, list[float]] = {name: [] for name in followers}
    rss_early: dict[str, int] = {}
    writer.stdin.write("go\n")
    writer.stdin.flush()
    t0 = time.time()
    while time.time() - t0 < seconds:
        time.sleep(1.0)
        for name, probe in probes.items():
            lag = probe.lag()
            if lag is not None:
                lags[name].append(lag)
        if not rss_early and time.time() - t0 >= min(5.0, seconds / 4):
            rss_early = {name: _rss(proc.pid)[0] for name, proc in followers.items()}
    written = int(writer.stdout.readline())
    end_written = time.time()
    deadline = time.time() + 30
    while time.time() < deadline and not all(p.final_seen_at for p in probes.values()):
        time.sleep(0.01)
    rss_late = {name: _rss(proc.pid) for name, proc in followers.items()}
    cpu1 = {name: p.cpu_times() for name, p in ps.items()}
    elapsed = time.time() - t0
    # end the job: the writer records nothing, so mark it finished as a supervisor would
    from rocmtui.core.states import JobState

    store.update(job.id, state=JobState.SUCCEEDED, exit_code=0, ended_at=time.time())
    writer.stdin.write("done\n")
    writer.stdin.flush()
    writer.wait(10)
    rocmtui_exit = followers["rocmtui logs -f"].wait(30)
    followers["tail -F"].terminate()
    followers["tail -F"].wait(10)
    out: dict[str, Any] = {
        "lines written": written,
        "rate (lines/s)": rate,
        "seconds": seconds,
        "log bytes": job.log_path.stat().st_size,
        "rocmtui logs -f exit": rocmtui_exit,
    }
    for name, probe in probes.items():
        busy = (cpu1[name].user + cpu1[name].system) - (cpu0[name].user + cpu0[name].system)
        final_lag = (probe.final_seen_at - end_written) if probe.final_seen_at else None
        samples = sorted(lags[name])
        out[name] = {
            "lag at end (s)": None if final_lag is None else round(max(0.0, final_lag), 3),
            "lag p95 during (s)": round(samples[int(len(samples) * 0.95) - 1], 3)
            if samples
            else None,
            "lag max during (s)": round(max(samples), 3) if samples else None,
            "CPU (% of a core)": round(100 * busy / elapsed, 1),
            "RSS early (MB)": round(rss_early.get(name, 0) / 1e6, 1),
            "RSS late (MB)": round(rss_late[name][0] / 1e6, 1),
            "peak RSS (MB)": round(rss_late[name][1] / 1e6, 1),
            "bytes out": probe.bytes,
        }
    return out


def figures(
    follow_seconds: float = 60.0,
    rate: int = 20_000,
    launches: int = 5,
    config: str | None = None,
    node: str | None = None,
    launch: bool = True,
    follow: bool = True,
) -> dict[str, Any]:
    """Every figure of this file as a dict (what a suite runner calls)."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as tmp:
        work = Path(tmp)
        os.environ.setdefault("ROCMTUI_LOCK_DIR", str(work / "locks"))
        os.environ.pop("ROCMTUI_STATE_DIR", None)
        if launch:
            with bench_fleet(work, config) as config_path:
                results["launch"] = launch_figure(config_path, launches, node)
            print(json.dumps({"launch": results["launch"]}, indent=2), flush=True)
        if follow:
            results["follow"] = follow_figure(work, rate, follow_seconds)
            print(json.dumps({"follow": results["follow"]}, indent=2), flush=True)
    results["load average at end"] = os.getloadavg()
    return results


def main(argv: list[str] | None = None) -> int:
    """Run the figures and print them (and write JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--follow-seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=int, default=20_000, help="lines per second")
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--config", help="a fleet file to launch on (default: own engine)")
    parser.add_argument("--node", help="node of --config to launch on (default: the first)")
    parser.add_argument("--skip-launch", action="store_true")
    parser.add_argument("--skip-follow", action="store_true")
    parser.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    results = figures(
        args.follow_seconds,
        args.rate,
        args.launches,
        args.config,
        args.node,
        launch=not args.skip_launch,
        follow=not args.skip_follow,
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
