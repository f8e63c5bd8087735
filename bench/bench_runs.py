"""Fleet runs and placement (issue 39): the Runs screen over 200 earlier runs, switching runs,
and what `--node auto` adds to a launch.

    python bench/bench_runs.py [--quick]

A state folder holds 201 recorded runs of 24 builds each (tests/support/runs' nightly shape:
4,824 jobs, their run rows, and their cost-book rows), on a fleet file whose one node has no
engine (nothing here builds). Then:

- The console (a real process on a pty, 120×40): `u` to the Runs screen showing its data
  (`201 runs` on the status line), a fresh console each run, beside `?` to the help text in the
  same console. Target: < 0.3 s.
- Switching runs: `down` in the runs table to the comparison naming the next run's baseline,
  p95 over the presses, beside `?` to help text in the same console. Target: < 50 ms.
- `--node auto`: what it adds to a launch, in-process: the running monitor's latest snapshot
  (`rocmtui monitor` started here for the fleet file) and the placement over this store (its
  cost book brought up to date, its running jobs read), beside the launch itself (`launch_job`
  of demo-base on the node named: slots, record, the supervisor spawned; its build then fails
  for want of an engine). Target: < 50 ms added.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))
import common  # noqa: E402
from tui import Pty  # noqa: E402

RUNS = 201  # the newest and 200 earlier
BUILDS = 24
DATA_MARKER = f"runs · {RUNS} runs".encode()


def make_store(state: Path) -> list[str]:
    """The runs, their jobs and cost rows; the run ids newest first."""
    from rocmtui.core.costbook.book import CostBook, CostRow
    from rocmtui.core.costbook.cost import BuildEvidence, Condition
    from rocmtui.core.jobs.store import JobStore
    from rocmtui.core.runs.book import RunBook
    from tests.support.runs import recorded_run

    evidence = {
        Condition.FROZEN: BuildEvidence(10, 10),
        Condition.HOT: BuildEvidence(10, 8),
        Condition.WARM: BuildEvidence(10, 0, 95, 5),
        Condition.COLD: BuildEvidence(10, 0, 5, 95),
    }
    store = JobStore(state)
    store.list()
    book = RunBook(store)
    runs = [recorded_run(i, BUILDS) for i in range(RUNS)]
    jobs, costs = [], []
    for run in runs:
        for b in run.builds:
            jobs.append((b.job_id, b.target, b.arch, b.node, str(state / "jobs" / b.job_id),
                         b.started_at, b.ended_at, b.state))  # fmt: skip
            costs.append(
                CostRow(
                    b.job_id,
                    b.target,
                    b.arch,
                    b.node,
                    b.started_at,
                    b.ended_at,
                    b.duration(b.started_at),
                    b.state,
                    "rocmtui",
                    "ci@snoc-strix",
                    evidence.get(b.condition, BuildEvidence()),
                )
            )
    with store.connect(write=True) as conn:
        conn.executemany(
            "INSERT INTO jobs (id, target, arch, node, endpoint, push, overrides, command, "
            "user, host, bake_file, job_dir, started_at, ended_at, state) "
            "VALUES (?, ?, ?, ?, '', 0, '{}', '[]', 'ci', 'snoc-strix', '', ?, ?, ?, ?)",
            jobs,
        )
    CostBook(store, retention_days=3650).add(costs)
    for run in runs:
        book.create(run)
        book.add_jobs(run.id, [(b.job_id, b.node) for b in run.builds])
    return [r.id for r in reversed(runs)]


def fleet_file(tmp: Path, state: Path) -> Path:
    path = tmp / "fleet.toml"
    path.write_text(
        f'bake_file = "{REPO / "bake" / "demo.hcl"}"\nstate_dir = "{state}"\n'
        "history_retention_days = 3650\nrefresh_seconds = 2.0\n"
        '[registry]\nurl = "http://127.0.0.1:9"\n[webdav]\nurl = "http://127.0.0.1:9/"\n'
        f'[[nodes]]\nname = "snoc-think"\ndocker_host = "unix://{tmp}/none.sock"\n'
        'gfx = "gfx1201"\n'
    )
    return path


def env_for(tmp: Path) -> dict[str, str]:
    keep = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
    return {
        **keep,
        "HOME": str(tmp / "home"),
        "XDG_STATE_HOME": str(tmp / "xdg"),
        "XDG_CONFIG_HOME": str(tmp / "xdgc"),
        "XDG_RUNTIME_DIR": str(tmp / "run"),
        "ROCMTUI_LOCK_DIR": str(tmp / "locks"),
        "TERM": "xterm-256color",
        "TZ": "UTC",
    }


def console(config: Path, env: dict[str, str]) -> Pty:
    term = Pty([sys.executable, "-m", "rocmtui", "--config", str(config)], env, 120, 40)
    if term.wait_for(b"rocmtui", timeout=60) is None:
        term.stop()
        raise RuntimeError("the console never drew")
    time.sleep(2.0)  # its first rounds: start-up is not what is measured
    return term


def screen_figures(config: Path, env: dict[str, str], ids: list[str], runs: int,
                   presses: int) -> list[common.Row]:  # fmt: skip
    opens, helps, switches, switch_helps = [], [], [], []
    for attempt in range(runs):
        term = console(config, env)
        try:
            if (took := term.key_to_help(0.5)) is not None:
                helps.append(took)
            mark = term.size
            sent = time.monotonic()
            term.type(b"u")
            shown = term.wait_for(DATA_MARKER, mark, timeout=30)
            if shown is not None:
                opens.append(shown - sent)
            if attempt:
                continue
            time.sleep(1.0)
            # down from run i: the comparison names run i+2, the baseline of run i+1
            for i in range(presses):
                baseline = ids[i + 2].removeprefix("run-").encode()
                mark = term.size
                sent = time.monotonic()
                term.type(b"\x1b[B")
                seen = term.wait_for(b"against " + baseline, mark, timeout=10)
                if seen is not None:
                    switches.append(seen - sent)
                time.sleep(0.1)
            for _ in range(min(presses, 12)):
                if (took := term.key_to_help(0.25)) is not None:
                    switch_helps.append(took)
        finally:
            term.stop()
    opened, anchor = common.median(opens), common.median(helps)
    switch_p95 = common.p95(switches) * 1000
    return [
        common.row(
            f"u to the Runs screen's data ({RUNS} runs × {BUILDS} builds), s",
            opened,
            anchor,
            unit="s",
            anchor_name="? to help text, same console",
            target="< 0.3 s",
            ok=opened < 0.3,
            note=f"median of {len(opens)}/{runs} fresh consoles; runs "
            f"{min(opens, default=0):.3f}-{max(opens, default=0):.3f} s",
        ),
        common.row(
            "Runs screen: switch to the next run (down), key to screen p95, ms",
            switch_p95,
            common.p95(switch_helps) * 1000,
            unit="ms",
            anchor_name="? to help text p95, same console",
            target="< 50 ms",
            ok=switch_p95 < 50,
            note=f"{len(switches)}/{presses} switches seen; median "
            f"{common.median(switches) * 1000:.1f} ms",
        ),
    ]


def monitor(config: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocmtui", "--config", str(config), "monitor", "--no-metrics"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    return proc


def settle(config: object) -> None:
    """Wait (60 s at most) for the launches' supervisors to record their builds' end (no
    engine: they fail at once), so nothing writes in the folder while it is removed."""
    from rocmtui.core.jobs.control import list_jobs

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if all(j.ended_at is not None for j in list_jobs(config, limit=50)):  # type: ignore[arg-type]
            return
        time.sleep(0.5)


def auto_figures(config_path: Path, env: dict[str, str], runs: int) -> list[common.Row]:
    os.environ.update(env)
    from rocmtui.cli.bake import load_bake_cached
    from rocmtui.core.config.fleetfile import load_config
    from rocmtui.core.jobs.launch import launch_job
    from rocmtui.core.jobs.refusals import LaunchError
    from rocmtui.core.placement.fleetsource import from_monitor
    from rocmtui.core.placement.gather import placement_for

    config = load_config(str(config_path))
    bake = load_bake_cached(config.bake_file)
    proc = monitor(config_path, env)
    added, launches, via, reads = [], [], [], []
    try:
        deadline = time.monotonic() + 60
        while from_monitor(config) is None:
            if time.monotonic() > deadline:
                raise RuntimeError("the monitor never sent a snapshot")
            time.sleep(0.2)
        for _ in range(runs):
            started = time.monotonic()
            snap = from_monitor(config)
            read = time.monotonic()
            placement_for(config, snap, "demo-base", "gfx1201", bake.arches)
            added.append(time.monotonic() - started)
            reads.append(read - started)
            via.append(snap is not None)
            started = time.monotonic()
            # a slot still held by the previous launch refuses it: timed all the same
            with contextlib.suppress(LaunchError):
                launch_job(config, bake, "demo-base", "gfx1201", "snoc-think", env=env)
            launches.append(time.monotonic() - started)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        settle(config)
    mine, anchor = common.median(added) * 1000, common.median(launches) * 1000
    return [
        common.row(
            "--node auto: added to a launch (monitor snapshot + placement), ms",
            mine,
            anchor,
            unit="ms",
            anchor_name="the launch itself (--node NAME)",
            target="< 50 ms",
            ok=mine < 50,
            note=f"median of {runs} (the monitor's snapshot "
            f"{common.median(reads) * 1000:.1f} ms of it); {sum(via)}/{runs} from the "
            f"monitor; store of {RUNS * BUILDS:,} builds; without a monitor a probe round "
            "replaces the read",
        )
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs (also BENCH_QUICK=1)")
    args = parser.parse_args(argv)
    quick = args.quick or common.quick()
    with tempfile.TemporaryDirectory(
        prefix="rocmtui-bench-runs-", ignore_cleanup_errors=True
    ) as name:
        tmp = Path(name)
        for sub in ("home", "xdg", "xdgc", "run", "locks"):
            (tmp / sub).mkdir(mode=0o700)
        state = tmp / "state"
        ids = make_store(state)
        config = fleet_file(tmp, state)
        env = env_for(tmp)
        print(json.dumps({"runs": len(ids), "builds": len(ids) * BUILDS}), flush=True)
        rows = [
            *screen_figures(config, env, ids, 2 if quick else 5, 15 if quick else 40),
            *auto_figures(config, env, 5 if quick else 15),
        ]
    common.emit(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
