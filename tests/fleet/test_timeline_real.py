"""Where the time went (issue 38), for real: a bake file of four steps of known length, two in
parallel (tests/bakefiles/timeline), built on today's engine (devfleet's CURRENT_ENGINE, in a
network namespace of its own, stopped by pid) by rocmtui and by plain `docker buildx bake`;
its steps read back from BuildKit's history and shown by `rocmtui history show`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from devfleet import EngineHandle, processes
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.control import get_job
from rocmtui.core.jobs.record import JobRecord
from tests.support.jobs import run_cli
from tests.support.realparts import require
from tests.support.timelinebuilds import (  # noqa: F401 (fixtures: engine, and autouse)
    BAKE,
    QUICK,
    _own_processes_stopped,
    engine,
    fleet_file,
    own_build,
)

# one worker starts the module's engine once for all its tests (--dist loadgroup)
pytestmark = [pytest.mark.fleet, pytest.mark.xdist_group("timeline_real")]

SLEEPS = {"SERIAL_ONE": 8.0, "LONG": 12.0, "SHORT": 6.0, "SERIAL_TWO": 8.0}
STEP_OF = {"SERIAL_ONE": "begin one", "LONG": "begin long", "SHORT": "begin short",
           "SERIAL_TWO": "begin two"}  # fmt: skip
_BEGIN = re.compile(r"^#\d+ (\d+\.\d+) begin (one|long|short|two)\b", re.MULTILINE)
_WORD = {"one": "SERIAL_ONE", "long": "LONG", "short": "SHORT", "two": "SERIAL_TWO"}


def began(log: str) -> dict[str, float]:
    """Per step, when its command began inside it (seconds into the step, from the plain
    log): a container's start on this loaded machine (0.3-2 s, two at once) is no part of
    a sleep."""
    return {_WORD[m.group(2)]: float(m.group(1)) for m in _BEGIN.finditer(log)}


def show(fleet: Path, job: str) -> dict[str, Any]:
    done = run_cli(fleet, "history", "show", job, "--json", timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def step_named(data: dict[str, Any], knob: str) -> dict[str, Any]:
    return next(s for s in data["steps"] if STEP_OF[knob] in s["name"] and "RUN" in s["name"])


def test_own_build_steps_durations_and_critical_path(engine: EngineHandle, tmp_path: Path) -> None:  # noqa: F811
    from rocmtui.core.history.stepstore import load_steps
    from rocmtui.core.jobs.store import JobStore

    fleet = fleet_file(tmp_path, engine)
    job = own_build(fleet, TL_NONCE=str(time.time_ns()))
    store = JobStore.for_config(load_config(fleet))
    # its supervisor keeps the steps as the build ends (BuildKit forgets records)
    processes.wait_for(lambda: load_steps(store, job.id), 120, "the steps kept")
    data = show(fleet, job.id)
    assert data["job_id"] == job.id and not data["running"]
    offsets = began(job.log_path.read_text())
    assert set(offsets) == set(SLEEPS), offsets
    for knob, seconds in SLEEPS.items():
        step = step_named(data, knob)
        assert not step["cached"], step
        assert abs(step["run"] - offsets[knob] - seconds) <= 0.1 * seconds, (knob, step, offsets)
    path = data["critical_path"]["names"]
    on_path = [k for k in SLEEPS if any(STEP_OF[k] in name for name in path)]
    assert on_path == ["SERIAL_ONE", "LONG", "SERIAL_TWO"], path
    assert 28.0 <= data["critical_path"]["run"] <= data["span"] + 0.01
    kept = load_steps(store, job.id)
    assert kept is not None and len(kept.steps) == len(data["steps"])
    text = run_cli(fleet, "history", "show", job.id)
    assert text.returncode == 0, text.stderr
    assert "critical path (*)" in text.stdout
    starred = [line for line in text.stdout.splitlines() if line.startswith("*")]
    assert any("begin long" in line for line in starred), text.stdout
    assert not any("begin short" in line for line in starred), text.stdout


def diff(fleet: Path, *jobs: str) -> dict[str, Any]:
    done = run_cli(fleet, "history", "diff", *jobs, "--json", timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_own_rebuilds_diff_names_the_changed_arg_or_nothing(
    engine: EngineHandle,  # noqa: F811
    tmp_path: Path,
) -> None:
    fleet = fleet_file(tmp_path, engine)
    nonce = str(time.time_ns())
    first = own_build(fleet, TL_NONCE=nonce)
    changed = own_build(fleet, TL_NONCE=nonce, FLAVOUR="chocolate")
    data = diff(fleet, changed.id)  # against its baseline: the first build
    assert (data["now"], data["then"]) == (changed.id, first.id)
    assert data["first_miss"] is not None and data["first_miss"].startswith("[final 3/3] RUN")
    flavour = [r for r in data["reasons"] if r["name"] == "FLAVOUR"]
    assert flavour and flavour[0]["kind"] == "build arg"
    assert (flavour[0]["then"], flavour[0]["now"]) == ("vanilla", "chocolate")
    assert flavour[0]["in_step"] and "FLAVOUR: vanilla → chocolate" in data["verdict"]
    assert {r["name"] for r in data["reasons"] if r["kind"] == "build arg"} == {"FLAVOUR"}
    runs = {s["key"]: s for s in data["steps"]}
    assert runs["[final 3/3] RUN"]["now_cached"] is False
    assert runs["[long 1/1] RUN"]["now_cached"] is True
    same = own_build(fleet, TL_NONCE=nonce, FLAVOUR="chocolate")
    data = diff(fleet, same.id)
    assert data["then"] == changed.id
    assert data["first_miss"] is None and data["reasons"] == [], data["verdict"]
    assert data["verdict"] == "all cached: nothing missed"
    text = run_cli(fleet, "history", "diff", changed.id, first.id)
    assert text.returncode == 0 and "FLAVOUR: vanilla → chocolate" in text.stdout


BUILDX_013 = Path("/usr/local/lib/rocmtui-engines/buildx-0.13.1/docker-buildx")


def test_export_where_buildx_can_and_says_why_where_it_cannot(
    engine: EngineHandle,  # noqa: F811
    engine_factory: Any,
    tmp_path: Path,
) -> None:
    import tarfile

    fleet = fleet_file(tmp_path, engine)
    job = own_build(fleet, TL_NONCE=str(time.time_ns()), **QUICK)
    # the supervisor ties the BuildKit record just after it records the outcome
    tied = processes.wait_for(
        lambda: get_job(job.id, load_config(fleet)).buildkit_ref, 60, "its BuildKit record"
    )
    job = get_job(job.id, load_config(fleet))
    assert job.buildkit_ref == tied
    out = tmp_path / "build.dockerbuild"
    done = run_cli(fleet, "history", "export", job.id, "-o", str(out), timeout=180)
    assert done.returncode == 0, done.stderr
    assert f"written to {out}" in done.stdout
    # the bundle buildx writes: read it back and find the build's record in it
    assert tarfile.is_tarfile(out)
    with tarfile.open(out) as bundle:
        texts = [
            bundle.extractfile(m).read()  # type: ignore[union-attr]
            for m in bundle.getmembers()
            if m.isfile() and m.size < 4 << 20
        ]
    assert any(job.buildkit_ref.encode() in t for t in texts), [len(t) for t in texts]
    # imported back: buildx 0.29's `history import` sends the bundle to Docker Desktop's
    # build socket and nowhere else; without Desktop it fails, as the export's line says
    assert "imports into Docker Desktop only" in done.stdout, done.stdout
    home = tmp_path / "home"
    home.mkdir()
    env = processes.child_env({"HOME": str(home), "DOCKER_CONFIG": str(home / ".docker"),
                               "DOCKER_HOST": engine.docker_host})  # fmt: skip
    back = subprocess.run(
        ["docker", "buildx", "history", "import", "-f", str(out)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert back.returncode != 0, back.stdout + back.stderr
    assert "Docker Desktop" in back.stderr and "docker-desktop-build.sock" in back.stderr, back
    # buildx 0.13 (first in $DOCKER_CONFIG/cli-plugins): no `history` at all, said plainly
    require("buildx-0.13")
    config_dir = tmp_path / "docker-config" / "cli-plugins"
    config_dir.mkdir(parents=True)
    (config_dir / "docker-buildx").symlink_to(BUILDX_013)
    env = {**os.environ, "DOCKER_CONFIG": str(config_dir.parent)}
    old = run_cli(fleet, "history", "export", job.id, "-o", str(tmp_path / "x"), env=env)
    assert old.returncode == 1, old.stdout + old.stderr
    assert "cannot export" in old.stderr and "buildx 0.13" in old.stderr, old.stderr
    # dockerd 20.10: its BuildKit keeps no history (bake still names a record it cannot give)
    ancient = engine_factory("old")
    fleet_old = tmp_path / "old.toml"
    fleet_old.write_text(fleet.read_text().replace(engine.docker_host, ancient.docker_host))
    there = own_build(fleet_old, TL_NONCE=str(time.time_ns()), **QUICK)
    said = run_cli(fleet_old, "history", "export", there.id, "-o", str(tmp_path / "y"))
    assert said.returncode == 1 and "keeps no build history" in said.stderr, said.stderr
    assert "20.10" in said.stderr
    shown = run_cli(fleet_old, "history", "show", there.id)
    assert shown.returncode == 1 and "keeps no build history" in shown.stderr, shown.stderr


def discover(fleet: Path) -> None:
    """One round of discovery as a one-shot `status` makes it: builds started elsewhere
    become jobs, rocmtui's running ones are tied to their BuildKit records."""
    import asyncio

    from rocmtui.core.history.discover import HistoryWatch
    from rocmtui.core.probes.round import Probers, probe_fleet

    config = load_config(fleet)
    watch = HistoryWatch(config, interval=0, local=None)

    async def round_and_settle() -> None:
        await probe_fleet(config, probers=Probers(history=watch, history_now=True))
        await watch.settle(15.0)

    asyncio.run(round_and_settle())


def test_a_running_build_timeline_grows(engine: EngineHandle, tmp_path: Path) -> None:  # noqa: F811
    from rocmtui.core.bake.file import load_bake
    from rocmtui.core.jobs.launch import launch_job
    from rocmtui.core.jobs.store import JobStore

    fleet = fleet_file(tmp_path, engine)
    config = load_config(fleet)
    job = launch_job(
        config, load_bake(BAKE), "timeline", "gfx1201", "tl",
        overrides={"TL_NONCE": str(time.time_ns()), "SERIAL_ONE": "30"},
    )  # fmt: skip
    store = JobStore.for_config(config)

    def tied() -> bool:  # the monitor's discovery ties a running build to its record
        discover(fleet)
        return store.get(job.id).buildkit_ref is not None

    processes.wait_for(tied, 90, "the running build tied to its BuildKit record")

    def open_step() -> dict[str, Any] | None:
        data = show(fleet, job.id)
        assert data["running"]
        step = next((s for s in data["steps"] if s["open"] and "begin one" in s["name"]), None)
        return step if step is not None and step["run"] > 0 else None

    first = processes.wait_for(open_step, 60, "the serial step running")
    assert isinstance(first, dict)
    later = processes.wait_for(
        lambda: (s := open_step()) is not None and s["run"] > first["run"] + 1 and s,
        60,
        "the open step grown",
    )
    assert isinstance(later, dict) and later["digest"] == first["digest"]
    assert get_job(job.id, config).ended_at is None  # still running: steps were not kept yet


def plain_bake(engine: EngineHandle, tmp_path: Path, log: str, **args: str) -> None:  # noqa: F811
    """`docker buildx bake` as an operator's make runs it: no rocmtui anywhere."""
    child = processes.child_env({"DOCKER_HOST": engine.docker_host, **args})
    bake = processes.spawn(
        ["docker", "buildx", "bake", "-f", str(BAKE), "--progress=plain", "--", "timeline"],
        tmp_path / log,
        env=child,
        cwd=BAKE.parent,
    )
    assert bake.wait(300) == 0, (tmp_path / log).read_text()[-2000:]


def test_outside_builds_have_steps_and_diff_names_the_changed_arg(
    engine: EngineHandle,  # noqa: F811
    tmp_path: Path,
) -> None:
    from rocmtui.core.history.stepstore import load_steps
    from rocmtui.core.jobs.control import list_jobs
    from rocmtui.core.jobs.store import JobStore

    fleet = fleet_file(tmp_path, engine)
    config = load_config(fleet)
    store = JobStore.for_config(config)
    nonce = str(time.time_ns())
    seen: set[str] = set()

    def outside_after(log: str, **args: str) -> JobRecord:
        plain_bake(engine, tmp_path, log, TL_NONCE=nonce, **QUICK, **args)

        def ended() -> JobRecord | None:
            discover(fleet)
            new = [
                j for j in list_jobs(config, limit=None)
                if j.started_elsewhere and j.id not in seen and j.ended_at is not None
                and j.outside is not None and j.outside.build_args.get("TL_NONCE") == nonce
            ]  # fmt: skip
            return new[0] if len(new) == 1 else None

        job = processes.wait_for(ended, 120, f"the outside build of {log} as an ended job")
        assert isinstance(job, JobRecord)
        seen.add(job.id)
        return job

    first = outside_after("one.log")
    data = show(fleet, first.id)
    # kept now (a follower keeps them as a build it follows ends; this one ended before
    # discovery saw it, so the first read from BuildKit's history kept them)
    kept = load_steps(store, first.id)
    assert kept is not None and len(kept.steps) == len(data["steps"])
    assert {k for k in SLEEPS if any(STEP_OF[k] in s["name"] for s in data["steps"])} == set(SLEEPS)
    changed = outside_after("two.log", FLAVOUR="chocolate")
    got = diff(fleet, changed.id)
    assert got["then"] == first.id, got
    assert got["first_miss"] is not None and got["first_miss"].startswith("[final 3/3] RUN")
    assert [r["name"] for r in got["reasons"] if r["kind"] == "build arg"] == ["FLAVOUR"]
    same = outside_after("three.log", FLAVOUR="chocolate")
    got = diff(fleet, same.id)
    assert got["then"] == changed.id and got["first_miss"] is None and got["reasons"] == []


def test_outside_builds_on_the_ssh_node_have_steps_and_a_diff(fleet: Any, tmp_path: Path) -> None:
    """The dev fleet's ssh node (ssh://ci@snoc-think, today's engine): plain `docker buildx
    bake` with the environment an operator's make would have (reaching the node as rocmtui's
    own launches do); rocmtui reads the steps and the diff over its own connection."""
    from rocmtui.core.history.buildx import history_environment
    from rocmtui.core.jobs.control import list_jobs
    from tests.support.jobs import write_config

    require("docker-buildx")
    path = write_config(tmp_path, fleet, bake_file=BAKE)
    config = load_config(path)
    node = config.node("snoc-think")
    assert node is not None
    env = history_environment(node, config, os.environ, tmp_path / "operator")
    nonce = str(time.time_ns())
    seen: set[str] = set()

    def build(log: str, **args: str) -> JobRecord:
        bake = processes.spawn(
            ["docker", "buildx", "bake", "-f", str(BAKE), "--progress=plain", "--", "timeline"],
            tmp_path / log,
            env={**env, "TL_NONCE": nonce, **QUICK, **args},
            cwd=BAKE.parent,
        )
        assert bake.wait(300) == 0, (tmp_path / log).read_text()[-2000:]

        def ended() -> JobRecord | None:
            discover(path)
            new = [
                j for j in list_jobs(config, limit=None)
                if j.started_elsewhere and j.node == "snoc-think" and j.id not in seen
                and j.ended_at is not None and j.outside is not None
                and j.outside.build_args.get("TL_NONCE") == nonce
            ]  # fmt: skip
            return new[0] if len(new) == 1 else None

        job = processes.wait_for(ended, 120, f"the outside build of {log} on snoc-think")
        assert isinstance(job, JobRecord)
        seen.add(job.id)
        return job

    first = build("one.log")
    data = show(path, first.id)
    assert any("begin two" in s["name"] for s in data["steps"]), data["steps"]
    changed = build("two.log", FLAVOUR="chocolate")
    got = diff(path, changed.id)
    assert got["then"] == first.id and got["first_miss"].startswith("[final 3/3] RUN"), got
    assert [r["name"] for r in got["reasons"] if r["kind"] == "build arg"] == ["FLAVOUR"]
    # rebuilt with nothing changed: all cached, nothing named
    same = build("three.log", FLAVOUR="chocolate")
    got = diff(path, same.id)
    assert got["then"] == changed.id and got["first_miss"] is None and got["reasons"] == [], got
    assert got["verdict"] == "all cached: nothing missed"


# A build arg enters its step's name (BuildKit expands it there): an OSC 52 behind an FS
# (a terminal executes the FS and still reads the OSC), an OSC 8 link, a CSI of 40
# parameters, an 8-bit CSI, markup, and an OSC never terminated, which ends the name.
HOSTILE_FLAVOUR = (
    "\x1b\x1c]52;c;aGk=\x07 \x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\ "
    + "\x1b["
    + ";".join(str(i) for i in range(40))
    + "H\x9b2J [bold]x[/] \x1b]0;title"
)


def test_a_hostile_step_name_is_shown_without_its_escapes_or_their_tails(
    engine: EngineHandle,  # noqa: F811
    tmp_path: Path,
) -> None:
    from rocmtui.core.history.stepstore import load_steps
    from rocmtui.core.jobs.store import JobStore

    fleet = fleet_file(tmp_path, engine)
    job = own_build(fleet, TL_NONCE=str(time.time_ns()), FLAVOUR=HOSTILE_FLAVOUR, **QUICK)
    store = JobStore.for_config(load_config(fleet))
    processes.wait_for(lambda: load_steps(store, job.id), 120, "the steps kept")
    names = [s["name"] for s in show(fleet, job.id)["steps"]]
    (name,) = [n for n in names if n.startswith("[final 3/3] RUN")]
    assert name == '[final 3/3] RUN echo "begin two  link  [bold]x[/] ', names
    text = run_cli(fleet, "history", "show", job.id)
    assert text.returncode == 0, text.stderr
    step, path = [ln for ln in text.stdout.splitlines() if "[final 3/3] RUN" in ln]
    assert path.startswith("critical path") and "[bold]x[/]" in path, path
    assert step.rstrip().endswith('[final 3/3] RUN echo "begin two  link  [bold]x[/]'), step
    for tail in ("52;", "aGk=", "8;;", "evil", "0;title", "2J", "39H"):
        assert tail not in text.stdout, (tail, text.stdout)
    assert not any(c in text.stdout for c in "\x1b\x07\x1c\x9b")
