"""What keeping a build's steps costs a log being followed (issue 38): newest-line age at 20k
lines/s with step capture on and off, side by side in one run.

    python bench/bench_step_capture.py [--quick]

Two of today's engines (devfleet CURRENT_ENGINE, each in a network namespace of its own,
BuildKit's step log limits lifted, as in bench_history_follow). Each run starts two rocmtui
jobs at once, as `rocmtui bake flood --node nI` does:

- the followed job on n0: a flood of 20k lines/s for `SECONDS` (bench_history_follow's flood
  target: each line stamped with the kernel's boot clock);
- the captured job on n1: a shorter flood (`SHORT` s at 5k lines/s) that ends while the first
  still floods; its supervisor then keeps its steps (`history logs --progress rawjson`, which
  replays its whole log, base64, through the step collector) while the first log is written.

The figure is the age of the followed log's newest line, sampled every 25 ms from the moment
the short build ended until the flood's end (the window where capture can cost), p95 over the
runs. "off" sets ROCMTUI_KEEP_STEPS=0 (the supervisor keeps no steps); "on" is the product as
it runs. Runs alternate on and off so machine load falls on both; the ratio on/off is judged
against 1.05 ("no more than 5%").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))
from bench_history import engines, fleet_file  # noqa: E402
from bench_history_follow import UNCLIPPED, LogAges, Runs, rocmtui, write_bake_dir  # noqa: E402
from common import emit, quick, row  # noqa: E402

RATE = 20_000
SHORT_RATE = 5_000
SHORT = 6


def bake(config: Path, node: str, rate: int, seconds: int, nonce: str, env: dict[str, str]) -> Path:
    """Start one rocmtui job of the flood target; its log."""
    out = subprocess.run(
        rocmtui(
            "bake", "flood", "--node", node, "--json", "--config", str(config),
            "--set", f"FLOOD_NONCE={nonce}",
            "--set", f"FLOOD_RATE={rate}", "--set", f"FLOOD_SECONDS={seconds}",
        ),
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"rocmtui bake on {node} refused: {out.stderr.strip()[-500:]}")
    return Path(json.loads(out.stdout)["log"])


def steps_kept(config: Path, job_log: Path) -> int | None:
    """How many steps the store kept for the job whose log is `job_log` (None: none)."""
    from rocmtui.core.config.fleetfile import load_config
    from rocmtui.core.history.stepstore import load_steps
    from rocmtui.core.jobs.store import JobStore

    kept = load_steps(JobStore.for_config(load_config(config)), job_log.parent.name)
    return None if kept is None else len(kept.steps)


def one_run(config: Path, seconds: int, run: int, capture: bool) -> tuple[LogAges, Path, Path]:
    """Both jobs at once; the followed log's ages from the short build's end."""
    env = dict(os.environ)
    if not capture:
        env["ROCMTUI_KEEP_STEPS"] = "0"
    ages = LogAges(SHORT + 1.0)  # sampled from just after the short flood's end
    ages.start()
    tag = f"{'on' if capture else 'off'}-{run}-{time.time_ns()}"
    long = bake(config, "n0", RATE, seconds, f"long-{tag}", env)
    ages.add(long)
    short = bake(config, "n1", SHORT_RATE, SHORT, f"short-{tag}", env)
    deadline = time.monotonic() + seconds + 120
    while not ages.done(1) and time.monotonic() < deadline:
        time.sleep(0.1)
    ages.stop()
    return ages, long, short


def wait_ended(config: Path, log: Path, deadline: float) -> None:
    """Until the job's supervisor is done (its record says it ended and, with capture on,
    its steps are kept): the next run starts on a quiet machine."""
    from rocmtui.core.config.fleetfile import load_config
    from rocmtui.core.jobs.control import get_job

    cfg = load_config(config)
    while time.monotonic() < deadline:
        if get_job(log.parent.name, cfg).ended_at is not None:
            return
        time.sleep(0.2)


def wait_gone(log: Path, deadline: float) -> None:
    """Until no process names the job's folder (its supervisor has exited)."""
    from devfleet import processes

    while processes.pids_mentioning(f"--job {log.parent.name}") and time.monotonic() < deadline:
        time.sleep(0.2)


def capture_cpu(config: Path, log: Path) -> tuple[float, float] | None:
    """CPU seconds (its stream client's and the collector's) of one capture of the job whose
    log is `log`, as the supervisor runs it, and as it ran before (Go's defaults, no nice);
    a load-independent view of what the figure above tries to see through the machine's load."""
    import resource

    from rocmtui.core.config.fleetfile import load_config
    from rocmtui.core.history.buildx import history_argv, history_environment, node_workdir
    from rocmtui.core.history.stepstore import CAPTURE_GO_ENV, gentle, history_ref, replay
    from rocmtui.core.jobs.control import get_job
    from rocmtui.core.jobs.store import JobStore

    cfg = load_config(config)
    record = get_job(log.parent.name, cfg)
    ref = history_ref(record)
    node = cfg.node(record.node)
    if ref is None or node is None:
        return None
    env = history_environment(
        node, cfg, os.environ, node_workdir(JobStore.for_config(cfg).root, node)
    )
    argv = history_argv(node, "logs", "--progress", "rawjson", ref, env=env)
    out = []
    for how in ("capture", "defaults"):
        child = {**dict(CAPTURE_GO_ENV), **env} if how == "capture" else dict(env)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        mine = time.process_time()
        replay(gentle(argv) if how == "capture" else argv, child, 120, "bench")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        out.append(spent + time.process_time() - mine)
    return out[0], out[1]


def main() -> None:
    seconds = 12 if quick() else 20
    runs = 1 if quick() else 3
    on, off = Runs(), Runs()
    kept: list[int | None] = []
    with (
        tempfile.TemporaryDirectory(prefix="bsc") as tmp,
        engines(Path(tmp), 2, kind=UNCLIPPED) as hosts,
    ):
        work = Path(tmp)
        config = fleet_file(work, hosts, write_bake_dir(work))
        for run in range(runs):
            for capture in (run % 2 == 0, run % 2 != 0):
                ages, long, short = one_run(config, seconds, run, capture)
                (on if capture else off).add(ages)
                # both supervisors done before the next run (a node's lock is held until its
                # supervisor exits, and capture comes after the outcome): the next run starts
                # on a quiet machine
                for log in (short, long):
                    wait_ended(config, log, time.monotonic() + 120)
                    deadline = time.monotonic() + 300
                    while capture and steps_kept(config, log) is None:
                        if time.monotonic() > deadline:
                            break
                        time.sleep(0.2)
                    wait_gone(log, time.monotonic() + 120)
                if capture:
                    kept.append(steps_kept(config, short))
        cpu = capture_cpu(config, long)  # the 20 s flood's record: the heaviest replay
    ours, anchor = on.p95(), off.p95()
    ratio_ok = ours is not None and anchor is not None and anchor > 0 and ours <= anchor * 1.05
    emit(
        [
            row(
                f"a followed log at {RATE // 1000}k lines/s while another build's steps are "
                "kept: newest-line age p95 (s), step capture on",
                ours,
                anchor,
                unit="s",
                anchor_name="the same with step capture off (ROCMTUI_KEEP_STEPS=0)",
                target="<= 1.05x",
                ok=ratio_ok,
                note=f"{runs} run(s) each, alternating; each run's p95 on {on.each()} s, off "
                f"{off.each()} s; {len(on.pooled)} / {len(off.pooled)} samples from the short "
                f"build's end ({SHORT} s at {SHORT_RATE // 1000}k lines/s on the other node) to "
                f"the flood's end ({seconds} s); steps kept by each 'on' run: {kept}; today's "
                "engine, BuildKit's step log limits lifted",
            ),
            row(
                f"  one capture of a {seconds} s flood at {RATE // 1000}k lines/s: CPU seconds "
                "(stream client and collector)",
                cpu[0] if cpu else None,
                cpu[1] if cpu else None,
                unit="s",
                anchor_name="the same replay with Go's defaults, not niced",
                note=f"{RATE * seconds} lines replayed; for information: CPU taken is what a "
                f"followed log can lose, {seconds} s of flood beside it",
            ),
        ]
    )


if __name__ == "__main__":
    main()
