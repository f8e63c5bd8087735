"""What a build costs (issue 29): the history screen and `rocmtui history` over 10,000 builds.

    python bench/bench_history_cost.py [--quick]

A state folder holds 10,000 finished builds (jobs and their cost-book rows, as a long-lived
fleet's store would: tests/support/history's recorded shapes, four targets × two arches × two
nodes under the four conditions) and one running build whose log a writer process appends
ninja lines to (5,000 lines/s) while holding its lock, so the console follows it. Then:

- `rocmtui history --json` over the 10,000 (a process, median of 7) beside `sqlite3 -json`
  reading the same rows from the same file in the same run. Target: <= 0.5 s.
- The console (a real process on a pty, 120×40): `h` to the history screen's first frame
  (its status line) and to its data (`16 target×arch×node`), a fresh console each run (so each pays
  the screen's first import: textual-plotext and the cost modules), beside `?` to the help
  text in the same console. Target: data on screen <= 0.3 s.
- Key to screen on the history screen while the build follows: `?` to help text (and escape),
  p95 over the presses, beside the same presses with no build following. Target: < 50 ms.
- Start-up unchanged: modules imported on the way to the console's first frame (`import
  rocmtui.cli.main, rocmtui.console.app`) with this tree beside main's tree (`git archive
  main`), in the same run. Target: equal.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))
import common  # noqa: E402
from tui import Pty  # noqa: E402

# the status line once the data is in (`· 10000 builds · 16 target×arch×node`); the running
# build's row makes the count vary, the groups' words do not
DATA_MARKER = "target×arch×node".encode()
BUILDS = 10_000
WRITER = textwrap.dedent(
    """
    import fcntl, os, sys, time
    lock = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)
    log = open(sys.argv[2], "a", buffering=1 << 16)
    log.write("#7 [demo-pytorch 2/3] RUN fake-compile pytorch 2.15.0\\n")
    print("holding", flush=True)
    n, total, rate = 0, 10_000_000, float(sys.argv[3])
    start = time.monotonic()
    while True:
        due = int((time.monotonic() - start) * rate)
        while n < due:
            n += 1
            log.write(f"#7 {time.monotonic() - start:.3f} [{n}/{total}] Building HIP object "
                      f"caffe2/CMakeFiles/torch_hip.dir/src/kernel_{n}.hip.o\\n")
        log.flush()
        time.sleep(0.02)
    """
)


def make_store(state: Path) -> Path:
    """10,000 finished jobs with their cost rows, and the schema of this tree."""
    from rocmtui.core.costbook.book import CostBook
    from rocmtui.core.jobs.store import JobStore
    from tests.support.history import recorded_rows

    store = JobStore(state)
    store.list()  # makes the database at this tree's schema
    rows = recorded_rows(BUILDS)
    with store.connect(write=True) as conn:
        conn.executemany(
            "INSERT INTO jobs (id, target, arch, node, endpoint, push, overrides, command, "
            "user, host, bake_file, job_dir, started_at, ended_at, state) "
            "VALUES (?, ?, ?, ?, '', 0, '{}', '[]', 'ci', 'snoc-strix', '', ?, ?, ?, ?)",
            [
                (r.job_id, r.target, r.arch, r.node, str(state / "jobs" / r.job_id),
                 r.started_at, r.ended_at, r.outcome)
                for r in rows
            ],
        )  # fmt: skip
    CostBook(store, retention_days=3650).add(rows)
    return store.db_path


def running_job(state: Path) -> tuple[Path, Path]:
    """One running build of a recorded group: its lock and log."""
    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.jobs.store import JobStore

    def make(job_id: str, job_dir: Path) -> JobRecord:
        return JobRecord(
            id=job_id, target="pytorch", arch="gfx1201", node="snoc-think", endpoint="",
            push=False, overrides={}, command=(), user="ci", host="snoc-strix", bake_file="",
            job_dir=str(job_dir), started_at=time.time() - 600,
        )  # fmt: skip

    job = JobStore(state).create(make)
    return job.lock_path, job.log_path


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
        "TERM": "xterm-256color",
        "TZ": "UTC",
    }


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    took = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{argv[:5]} exited {done.returncode}: {done.stderr[-500:]}")
    return took


def json_figures(config: Path, db: Path, env: dict[str, str], runs: int) -> list[common.Row]:
    ours = [
        timed([sys.executable, "-m", "rocmtui", "--config", str(config), "history", "--json"], env)
        for _ in range(runs)
    ]
    sql = "SELECT * FROM build_costs ORDER BY started_at, job_id"
    anchor = [timed(["sqlite3", "-json", str(db), sql], env) for _ in range(runs)]
    mine, theirs = common.median(ours), common.median(anchor)
    return [
        common.row(
            f"rocmtui history --json over {BUILDS:,} builds, s",
            mine,
            theirs,
            unit="s",
            anchor_name="sqlite3 -json, the same rows",
            target="<= 0.5 s",
            ok=mine <= 0.5,
            note=f"median of {runs} processes; runs {min(ours):.3f}-{max(ours):.3f} s",
        )
    ]


def console(config: Path, env: dict[str, str]) -> Pty:
    term = Pty([sys.executable, "-m", "rocmtui", "--config", str(config)], env, 120, 40)
    if term.wait_for(b"rocmtui", timeout=60) is None:
        term.stop()
        raise RuntimeError("the console never drew")
    time.sleep(2.0)  # its first rounds and the bake file: start-up is not what is measured
    return term


def open_figures(config: Path, env: dict[str, str], runs: int) -> list[common.Row]:
    frames, data, helps = [], [], []
    for _ in range(runs):
        term = console(config, env)
        try:
            if (took := term.key_to_help(0.5)) is not None:
                helps.append(took)
            mark = term.size
            sent = time.monotonic()
            term.type(b"h")
            frame = term.wait_for(b"history", mark, timeout=20)
            shown = term.wait_for(DATA_MARKER, mark, timeout=20)
            if frame is not None:
                frames.append(frame - sent)
            if shown is not None:
                data.append(shown - sent)
        finally:
            term.stop()
    help_median = common.median(helps)
    shown_median = common.median(data)
    return [
        common.row(
            f"h to the history screen's data ({BUILDS:,} builds), s",
            shown_median,
            help_median,
            unit="s",
            anchor_name="? to help text, same console",
            target="<= 0.3 s",
            ok=shown_median <= 0.3,
            note=f"median of {len(data)}/{runs} fresh consoles (each imports the screen and "
            f"textual-plotext); runs {min(data, default=0):.3f}-{max(data, default=0):.3f} s",
        ),
        common.row(
            "  h to the history screen's first frame (status line), s",
            common.median(frames),
            help_median,
            unit="s",
            anchor_name="? to help text, same console",
            note=f"median of {len(frames)}/{runs}",
        ),
    ]


def key_samples(config: Path, env: dict[str, str], presses: int) -> list[float]:
    term = console(config, env)
    samples: list[float] = []
    try:
        mark = term.size
        term.type(b"h")
        term.wait_for(DATA_MARKER, mark, timeout=30)
        time.sleep(1.0)
        for _ in range(presses):
            if (took := term.key_to_help(0.25)) is not None:
                samples.append(took)
    finally:
        term.stop()
    return samples


def key_figures(
    config: Path, env: dict[str, str], presses: int, lock: Path, log: Path
) -> list[common.Row]:
    idle = key_samples(config, env, presses)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(lock), str(log), "5000"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "holding"
        busy = key_samples(config, env, presses)
    finally:
        writer.send_signal(signal.SIGTERM)
        writer.wait(timeout=10)
    mine, anchor = common.p95(busy) * 1000, common.p95(idle) * 1000
    return [
        common.row(
            "history screen: key to screen p95 while a build follows (5,000 lines/s), ms",
            mine,
            anchor,
            unit="ms",
            anchor_name="same keys, no build following",
            target="< 50 ms",
            ok=mine < 50,
            note=f"{len(busy)}/{presses} presses of ? seen (idle {len(idle)}/{presses}); "
            f"median {common.median(busy) * 1000:.1f} ms (idle {common.median(idle) * 1000:.1f})",
        )
    ]


START_MODULES = "import sys, rocmtui.cli.main, rocmtui.console.app; print(len(sys.modules))"


def startup_figures(tmp: Path) -> list[common.Row]:
    """Modules imported on the way to the console, this tree beside main's."""
    main_src = tmp / "main-src"
    main_src.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "main", "rocmtui"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(main_src)], input=archive, check=True)

    def count(path: Path) -> int:
        env = {**os.environ, "PYTHONPATH": str(path), "PYTHONDONTWRITEBYTECODE": "1"}
        out = subprocess.run(
            [sys.executable, "-c", START_MODULES], env=env, capture_output=True, text=True,
            check=True, cwd=tmp,
        )  # fmt: skip
        return int(out.stdout.strip())

    ours, theirs = count(REPO), count(main_src)
    return [
        common.row(
            "modules imported on the way to the console's first frame",
            ours,
            theirs,
            anchor_name="main's tree (git archive main)",
            target="equal",
            ok=ours == theirs,
            note="import rocmtui.cli.main, rocmtui.console.app; the history screen, its plots "
            "and the cost modules are imported when h is first pressed",
        )
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs (also BENCH_QUICK=1)")
    args = parser.parse_args(argv)
    quick = args.quick or common.quick()
    runs = 3 if quick else 7
    presses = 12 if quick else 40
    with tempfile.TemporaryDirectory(prefix="rocmtui-bench-cost-") as name:
        tmp = Path(name)
        state = tmp / "state"
        db = make_store(state)
        lock, log = running_job(state)
        config = fleet_file(tmp, state)
        env = env_for(tmp)
        with sqlite3.connect(db) as conn:  # the store as the readers find it
            count = conn.execute("SELECT COUNT(*) FROM build_costs").fetchone()[0]
        print(json.dumps({"builds": count, "db_bytes": db.stat().st_size}), flush=True)
        rows = [
            *json_figures(config, db, env, runs),
            *open_figures(config, env, 3 if quick else 5),
            *key_figures(config, env, presses, lock, log),
            *startup_figures(tmp),
        ]
    common.emit(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
