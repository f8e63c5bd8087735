"""Where the time went (issue 38): a 10,000-step build's timeline opened, and two such builds
compared, beside `docker buildx history inspect` of a real build.

    python bench/bench_timeline.py [--quick]

- timeline open: a job store holding a 10,000-step build's kept steps (the shape of a long
  build: a chain with cross links, `tests/support/timeline.chain`); a headless Textual app
  pushes the timeline screen (its worker reads the store, places the steps) and its
  waterfall's first screen (40 lines) is drawn; the figure is push to drawn. Target < 0.3 s.
- anchor: `docker buildx history inspect REF` of a real build of tests/bakefiles/timeline on
  today's engine (devfleet CURRENT_ENGINE, in a network namespace of its own, stopped at the
  end), median of runs; beside it `rocmtui history show` of that same build as a process.
- diff: `history.baseline.diff_jobs` of two 10,000-step builds in the store (the cost book
  synced, both builds' steps read and placed, matched and explained). Target < 0.5 s; and
  `rocmtui history diff` of them as a process, for information.

A BuildKit build of 10,000 real steps is not made here (an image holds at most 127 layers;
10,000 stages would take the loaded machine an hour): the 10,000-step figures read recorded
steps, the anchor a real build. Step capture costs a following log nothing: steps are read
from BuildKit's history after the build ends, never from the log being followed.
"""

from __future__ import annotations

import asyncio
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
from common import emit, median, quick, row  # noqa: E402

STEPS = 10_000
BAKE = REPO / "tests" / "bakefiles" / "timeline" / "timeline.hcl"


def make_store(workdir: Path, host: str) -> tuple[Path, list[str]]:
    """A fleet file and two ended 10,000-step builds with kept steps (the second mostly
    cached)."""
    from rocmtui.core.history.stepstore import KeptSteps, save_steps
    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.jobs.store import JobStore
    from rocmtui.core.states import JobState
    from tests.support.timeline import chain

    state = workdir / "state"
    store = JobStore(state)
    now = time.time()
    ids = []
    for n, cached in enumerate((0, 3)):
        start = now - 3600 + n * 600

        def make(job_id: str, job_dir: Path, start: float = start) -> JobRecord:
            return JobRecord(
                id=job_id, target="big", arch="gfx1201", node="n0", endpoint=host,
                push=False, overrides={}, command=(), user="bench", host="h", bake_file="",
                job_dir=str(job_dir), started_at=start, ended_at=start + 120,
                state=JobState.SUCCEEDED,
            )  # fmt: skip

        job = store.create(make)
        save_steps(store, job.id, KeptSteps(chain(STEPS, start, cached_every=cached), "rawjson"))
        ids.append(job.id)
    fleet = workdir / "rocmtui.toml"
    fleet.write_text(
        f'bake_file = "{BAKE}"\nstate_dir = "{state}"\n'
        '[registry]\nurl = "http://127.0.0.1:9"\n[webdav]\nurl = "http://127.0.0.1:9/"\n'
        f'[[nodes]]\nname = "n0"\ndocker_host = "{host}"\ngfx = "gfx1201"\n'
    )
    return fleet, ids


def open_timeline(fleet: Path, job: str, times: int = 2) -> list[float]:
    """Seconds from pushing the timeline screen to its waterfall drawn with every step, in one
    fresh app, `times` times: the first pays the screen's stylesheet and first imports (an
    operator's first `t`), the others not (every later `t` of that console)."""
    from textual.app import App

    from rocmtui.console.screens.timeline import TimelineScreen
    from rocmtui.core.config.fleetfile import load_config

    config = load_config(fleet)
    took: list[float] = []

    class Bare(App[None]):
        async def on_mount(self) -> None:
            for _ in range(times):
                screen = TimelineScreen(config, job, "big", read_only=True, keymap={})
                start = time.perf_counter()
                self.push_screen(screen)  # not awaited: awaited in on_mount it never returns
                deadline = start + 60
                while screen.report is None and not screen.error:
                    if time.perf_counter() > deadline:
                        raise TimeoutError("the timeline was not drawn in 60 s")
                    await asyncio.sleep(0.002)
                for y in range(40):  # its first screen, drawn line by line as a frame does
                    screen.waterfall.render_line(y)
                took.append(time.perf_counter() - start)
                assert screen.report is not None and len(screen.report.steps) == STEPS
                await self.pop_screen()
            self.exit()

    async def run() -> None:
        async with Bare().run_test(size=(120, 40)) as pilot:
            await pilot.pause()

    asyncio.run(run())
    return took


def diff_in_process(fleet: Path, ids: list[str]) -> float:
    from rocmtui.core.config.fleetfile import load_config
    from rocmtui.core.history.baseline import diff_jobs
    from rocmtui.core.jobs.store import JobStore

    config = load_config(fleet)
    start = time.perf_counter()
    found = diff_jobs(config, JobStore.for_config(config), ids[1], ids[0])
    took = time.perf_counter() - start
    assert len(found.steps) == STEPS
    return took


def cli(fleet: Path, *words: str, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "rocmtui", "--config", str(fleet), *words],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-500:])
    return took


def main() -> None:
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the engine is stopped (finally)
    runs = 3 if quick() else 7
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-timeline-") as tmp:
        workdir = Path(tmp)
        anchor = None
        note = "no engine here"
        engine = None
        try:
            from devfleet import processes, start_engine
            from devfleet.baseimage import build_base_tar
            from devfleet.dockerd import CURRENT_ENGINE

            engine = start_engine(
                workdir, "bt", True, "gfx1201", base_tar=build_base_tar(workdir),
                kind=CURRENT_ENGINE,
            )  # fmt: skip
            env = processes.child_env({"DOCKER_HOST": engine.docker_host})
            quick_args = {"SERIAL_ONE": "0", "LONG": "0", "SHORT": "0", "SERIAL_TWO": "0"}
            meta = workdir / "meta.json"
            subprocess.run(
                ["docker", "buildx", "bake", "-f", str(BAKE), "--progress=quiet",
                 "--metadata-file", str(meta), "--", "timeline"],
                env={**env, **quick_args, "TL_NONCE": str(time.time_ns())}, cwd=BAKE.parent,
                check=True, capture_output=True,
            )  # fmt: skip
            ref = json.loads(meta.read_text())["timeline"]["buildx.build.ref"].rsplit("/", 1)[-1]
            inspect = ["docker", "buildx", "history", "inspect", ref]
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                subprocess.run(inspect, env=env, check=True, capture_output=True)
                times.append(time.perf_counter() - start)
            anchor = median(times)
            note = f"anchor: inspect of a real build (tests/bakefiles/timeline), median of {runs}"
        except Exception as exc:  # the figures without the anchor, and why
            note = f"anchor not measured: {type(exc).__name__}: {str(exc)[:120]}"
        host = engine.docker_host if engine is not None else "unix:///nonexistent"
        try:
            fleet, ids = make_store(workdir, host)
            both = [open_timeline(fleet, ids[0]) for _ in range(runs)]
            opened = median([t[1] for t in both])
            rows.append(
                row(f"timeline of a {STEPS}-step build opened (s)", opened, anchor, unit="s",
                    anchor_name="docker buildx history inspect", target="< 0.3 s",
                    ok=opened < 0.3, note=f"a console's second t; median of {runs}; {note}")
            )  # fmt: skip
            first = median([t[0] for t in both])
            rows.append(
                row("  the same, a console's first t (s)", first, anchor, unit="s",
                    anchor_name="docker buildx history inspect",
                    note="information: the screen's stylesheet parsed, its modules imported")
            )  # fmt: skip
            diffed = median([diff_in_process(fleet, ids) for _ in range(runs)])
            rows.append(
                row(f"history diff of two {STEPS}-step builds (s)", diffed, anchor, unit="s",
                    anchor_name="docker buildx history inspect", target="< 0.5 s",
                    ok=diffed < 0.5, note=f"in process (read, placed, matched); median of {runs}")
            )  # fmt: skip
            env = dict(os.environ)
            whole = median([cli(fleet, "history", "diff", ids[1], ids[0], "--json", env=env)
                            for _ in range(runs)])  # fmt: skip
            rows.append(
                row(f"rocmtui history diff of two {STEPS}-step builds, a process (s)", whole,
                    anchor, unit="s", anchor_name="docker buildx history inspect",
                    note="information: Python's start and imports included")
            )  # fmt: skip
        finally:
            if engine is not None:
                engine.stop()
    emit(rows)


if __name__ == "__main__":
    main()
