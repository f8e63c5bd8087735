"""User actions while many log panes follow builds: the console in tmux, on a real fleet.

    python bench/bench_panes.py [--fleet-dir DIR] [--panes 20] [--repeats 3] [--quick]

Issue 17: five open log panes starved the console on 2 cores (each pane's tail held a thread
of asyncio's default pool, and the bake dialog's resolve, Start and Cancel waited behind
them). Real builds of bake/demo.hcl run slowly on the dev fleet's three engines; the console
opens a log pane on each. Measured with 1 pane open (the anchor), then with `--panes` open, in
the same run:

1. `b` to the bake dialog showing what `bake --print` resolved (its "bake --print (lines that
   differ" heading): target < 1 s with 20 panes.
2. `c` on a node row, then `y` to the toast "Job … cancelled." (the core has signalled the
   build and recorded it cancelled): target < 1 s with 20 panes.

Times run from the key reaching tmux to the first capture showing the result (medians of
`--repeats`). Nothing asserts; it prints a table and can write it as JSON.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # devfleet: beside the package
import common
from tui import Tmux

ROOT = Path(__file__).resolve().parents[1]
RESOLVED = "bake --print (lines that differ"
ARCHES = ("gfx950", "gfx1201", "gfx1250")
TARGETS = ("demo-base", "demo-pytorch", "demo-vllm")


def base_env(tmp: Path) -> dict[str, str]:
    """The console's and the CLI's environment: this run's own state, home and locks."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL", "NO_COLOR"))}
    for name, sub in (("HOME", "home"), ("XDG_STATE_HOME", "state"), ("XDG_CACHE_HOME", "cache"),
                      ("DOCKER_CONFIG", "docker"), ("ROCMTUI_LOCK_DIR", "locks")):  # fmt: skip
        (tmp / sub).mkdir(parents=True, exist_ok=True)
        env[name] = str(tmp / sub)
    env.update(TERM="xterm-256color", TZ="UTC", ROCMTUI_STATE_DIR=str(tmp / "jobs"))
    for name in ("COLUMNS", "LINES", "ROCMTUI_CONFIG", "DOCKER_HOST", "DOCKER_CONTEXT"):
        env.pop(name, None)
    return env


def cli(config: Path, env: dict[str, str], *args: str) -> str:
    """`rocmtui ARGS --config CONFIG`; its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "rocmtui", *args, "--config", str(config)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"rocmtui {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def start_builds(config: Path, env: dict[str, str], nodes: list[str], count: int) -> list[str]:
    """`count` slow builds, each its own image on its node (one slot each), oldest first.
    Past the 27 target × arch × node images, another IMAGE_PREFIX names other images."""
    combos = [(t, a, n) for t in TARGETS for a in ARCHES for n in nodes]
    nonce = f"{os.getpid()}-{time.time_ns()}"
    ids = []
    for index in range(count):
        target, arch, node = combos[index % len(combos)]
        prefix = f"rocm-bake-{index // len(combos)}"
        out = cli(config, env, "bake", target, "--arch", arch, "--node", node,
                  "--set", "DEMO_SLEEP=0.5", "--set", "DEMO_STEPS=2000",
                  "--set", f"IMAGE_PREFIX={prefix}",
                  "--set", f"DEMO_NONCE={nonce}")  # fmt: skip
        ids.append(out.split()[0])
    return ids


def until(term: Tmux, pattern: str, timeout: float = 60.0) -> str:
    """The screen once it matches `pattern` (RuntimeError after `timeout`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = term.screen()
        if re.search(pattern, shown, re.M):
            return shown
        time.sleep(0.01)
    raise RuntimeError(f"not within {timeout:.0f} s: {pattern!r}; the screen:\n{term.screen()}")


def open_panes(term: Tmux, first_row: int, count: int) -> None:
    """Open log panes on `count` job rows from `first_row` on (Enter on a row; back each
    time). Rows are running jobs, newest first, and stay in place: no build ends meanwhile."""
    term.send("Tab")
    term.send("Tab")  # nodes -> services -> jobs
    term.send("Home")
    for _ in range(first_row):
        term.send("Down")
    for n in range(count):
        if n:
            term.send("Down")
        term.send("Enter")
        until(term, r"  job \d{8}-\d{4}-")
        term.send("Escape")
        until(term, r"─Nodes")


def time_bake(term: Tmux) -> float:
    """`b` to the resolved plan on screen; back to the fleet screen after."""
    sent = time.monotonic()
    term.send("b")
    until(term, re.escape(RESOLVED), 120)
    took = time.monotonic() - sent
    term.send("Escape")
    until(term, r"─Nodes")
    return took


def time_cancel(term: Tmux, node_row: int) -> float:
    """From the jobs panel, on node row `node_row`: `c`, then `y` to the "Job … cancelled."
    toast (the newest running job there is cancelled)."""
    term.send("BTab")
    term.send("BTab")  # jobs -> services -> nodes
    term.send("Home")
    for _ in range(node_row):
        term.send("Down")
    term.send("c")
    asked = until(term, r"Cancel \S+ \S+ on \S+ \((\S+)\)\?")
    match = re.search(r"Cancel \S+ \S+ on \S+ \((\S+)\)\?", asked)
    assert match is not None
    sent = time.monotonic()
    term.send("y")
    until(term, rf"Job {re.escape(match.group(1))} cancelled", 120)
    took = time.monotonic() - sent
    term.send("Tab")
    term.send("Tab")  # back to the jobs panel, as the next measurement expects
    return took


def console(
    config: Path, env: dict[str, str], first_row: int, panes: int, repeats: int
) -> tuple[list[float], list[float]]:
    """A console in tmux with `panes` log panes open (job rows from `first_row` on):
    `repeats` bake-dialog times, then `repeats` cancel times."""
    term = Tmux([sys.executable, "-m", "rocmtui", "--config", str(config)], 120, 40)
    try:
        term.start(env)
        until(term, r"▶ running")
        until(term, r"Variables[\s\S]*ROCM_VERSION")  # the bake file is read
        open_panes(term, first_row, panes)
        bakes = [time_bake(term) for _ in range(repeats)]
        cancels = [time_cancel(term, n % 3) for n in range(repeats)]
        return bakes, cancels
    finally:
        term.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleet-dir", type=Path, help="a running dev fleet (else one is started)")
    parser.add_argument("--panes", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2 if common.quick() else 5)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (also BENCH_QUICK=1)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats = 2
    print(f"load average: {os.getloadavg()}")
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="rocmtui-bench-panes-") as tmp:
        tmpdir = Path(tmp)
        with common.fleet_at(args.fleet_dir, tmpdir) as fleet_file:
            env = base_env(tmpdir)
            config = tmpdir / "fleet.toml"
            text = re.sub(r"(?m)^bake_file = .*$", f'bake_file = "{ROOT / "bake" / "demo.hcl"}"',
                          fleet_file.read_text())  # fmt: skip
            config.write_text(text)
            nodes = re.findall(r'(?m)^name = "([^"]+)"', text)
            ids: list[str] = []
            try:
                # the panes' builds first, then one build per cancel: a node row cancels the newest
                # build on that node, and the jobs panel lists running builds newest first
                ids = start_builds(config, env, nodes, args.panes + 2 * args.repeats)
                extra = 2 * args.repeats
                one_bake, one_cancel = console(config, env, extra, 1, args.repeats)
                # a fresh console: the cancelled builds sink below the running ones
                many_bake, many_cancel = console(
                    config, env, args.repeats, args.panes, args.repeats
                )
            finally:
                for job in ids:
                    with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                        cli(config, env, "cancel", job, "--grace", "2")
    for what, many, one in (
        ("`b` to the resolved plan", many_bake, one_bake),
        ("`c` + `y` to cancelled", many_cancel, one_cancel),
    ):
        value, anchor = common.median(many), common.median(one)
        rows.append(common.row(
            f"{what}, {args.panes} log panes following builds", value, anchor, unit="s",
            anchor_name="the same with 1 pane open", target="< 1 s", ok=value < 1.0,
            note=f"median of {len(many)}; slowest {max(many):.2f} s (1 pane: {max(one):.2f} s)",
        ))  # fmt: skip
    common.emit(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
