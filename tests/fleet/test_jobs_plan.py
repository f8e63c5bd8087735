"""A launch is resolved once into a Plan, and exactly that Plan starts: no second `bake
--print`, for `rocmtui bake` and for the console's dialog alike; the arches a launch accepts
are the ones the dialog offers. Real buildx throughout; the one engine is never there, so the
builds end at once (failed) and nothing is pushed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from msgspec.structs import replace

from rocmtui.console.backend.access import FleetBackend
from rocmtui.console.backend.views import BakeView
from rocmtui.console.dialogs.bake_choices import arch_choices
from rocmtui.core.bake.file import load_bake
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.checks import FLEET_ARCHES, launch_arches
from rocmtui.core.jobs.launch import launch_job, start_plan
from rocmtui.core.jobs.plan import resolve_plan
from rocmtui.core.jobs.refusals import LaunchError, LaunchRefused
from tests.support.jobs import (
    DEMO_BAKE,
    lock_dir,  # noqa: F401 - fixture: slot locks of the test's own
    offline_config,
    run_cli,
    wait_state,
)
from tests.support.realparts import require

ONE_ARCH = """
variable "GFX_ARCH" {
  default = "gfx950"
}
target "one" {
  context = "."
  dockerfile-inline = "FROM rocm-base:local\\nRUN echo ${GFX_ARCH}"
  args = { GFX_ARCH = GFX_ARCH }
}
"""


def counting_docker(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose first `docker` notes each call's arguments in a file and then runs
    the real docker CLI (the calls are real; only their count is taken); that file."""
    real = shutil.which("docker")
    assert real is not None
    bindir = tmp_path / "counting-bin"
    bindir.mkdir()
    calls = tmp_path / "docker-calls"
    wrapper = bindir / "docker"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    return {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}, calls


def prints(calls: Path) -> int:
    """How many `bake --print` runs the counting docker saw."""
    lines = calls.read_text().splitlines() if calls.exists() else []
    return sum(1 for line in lines if "bake" in line and "--print" in line)


def builds(calls: Path) -> list[str]:
    """The `bake` runs that built (not --print)."""
    lines = calls.read_text().splitlines() if calls.exists() else []
    return [line for line in lines if "bake" in line and "--print" not in line]


@pytest.mark.usefixtures("lock_dir")
def test_rocmtui_bake_asks_bake_once_and_starts_what_it_resolved(tmp_path: Path) -> None:
    require("docker-buildx")
    config = load_config(offline_config(tmp_path))
    bake = load_bake(DEMO_BAKE)
    env, calls = counting_docker(tmp_path)
    plan = resolve_plan(config, bake, "demo-base", "gfx1201", None, False, env, {})
    assert prints(calls) == 1 and plan.ready and plan.slots
    record = start_plan(config, plan, env=env)
    assert prints(calls) == 1  # started as resolved: bake was not asked again
    assert (record.target, record.arch, record.node) == ("demo-base", "gfx1201", "snoc-think")
    # bake writes its metadata off the state disk (bakefiles.py); the job's folder keeps it after
    meta = record.command[record.command.index("--metadata-file") + 1]
    assert Path(meta).name == "metadata.json" and Path(meta).parent.name == record.id
    shown = [w.replace("<job>/metadata.json", meta) for w in plan.command()]
    # the launch adds one thing the plan cannot know: the job's own id as a build arg (how
    # BuildKit's history names the build rocmtui's own), right before the targets
    mark = ["--set", f"*.args.ROCMTUI_JOB={record.id}"]
    at = record.command.index("--")
    assert list(record.command[at - 2 : at]) == mark
    launched = [*record.command[: at - 2], *record.command[at:]]
    assert [w for w in launched if "docker" not in w] == [w for w in shown if "docker" not in w]
    wait_state(offline_config(tmp_path), record.id, ["failed", "succeeded"], timeout=120)
    assert len(builds(calls)) == 1 and "-- demo-base" in builds(calls)[0]
    # the whole of `rocmtui bake`: one print, one build
    again = launch_job(config, bake, "demo-vllm", "gfx950", env=env)
    wait_state(offline_config(tmp_path), again.id, ["failed", "succeeded"], timeout=120)
    assert prints(calls) == 2 and len(builds(calls)) == 2


@pytest.mark.usefixtures("lock_dir")
def test_the_console_starts_exactly_the_plan_its_dialog_showed(tmp_path: Path) -> None:
    """The dialog's plan is bake --print under the job's environment and the defaults' print
    beside it (two runs, at once); Start launches the Plan it holds: no third run."""
    require("docker-buildx")
    env, calls = counting_docker(tmp_path)
    backend = FleetBackend(load_config(offline_config(tmp_path)), env=env)
    shown = backend.plan("demo-pytorch", "gfx1250", "snoc-think", False, {"DEMO_STEPS": "3"})
    assert shown.ready and shown.core_plan is not None and prints(calls) == 2
    job = backend.launch(shown)
    assert prints(calls) == 2
    assert (job.record.target, job.record.arch, job.record.node) == (
        "demo-pytorch",
        "gfx1250",
        "snoc-think",
    )
    assert dict(job.record.overrides)["DEMO_STEPS"] == "3"
    wait_state(offline_config(tmp_path), job.record.id, ["failed", "succeeded"], timeout=120)
    assert [line for line in builds(calls) if "-- demo-pytorch" in line]


@pytest.mark.usefixtures("lock_dir")
def test_a_plan_that_pushes_starts_only_confirmed_and_logged_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether a plan pushes is decided when it is resolved; at its start the confirmation and
    the docker config's login entries are read (a `docker login` since counts)."""
    require("docker-buildx")
    config = load_config(offline_config(tmp_path))
    docker_config = tmp_path / "docker"
    docker_config.mkdir(exist_ok=True)
    monkeypatch.setenv("DOCKER_CONFIG", str(docker_config))
    plan = resolve_plan(
        config, load_bake(DEMO_BAKE), "demo-pytorch-push", None, None, False, os.environ, {}
    )
    assert plan.pushes and plan.missing_logins == plan.push_hosts != ()
    with pytest.raises(LaunchRefused, match="confirm with --yes"):
        start_plan(config, plan)
    with pytest.raises(LaunchRefused, match="no login"):
        start_plan(config, plan, yes=True)
    entries = {"auths": {host: {} for host in plan.push_hosts}}  # names only: no credential
    (docker_config / "config.json").write_text(json.dumps(entries))
    record = start_plan(config, plan, yes=True)
    assert record.push and record.target == "demo-pytorch-push"
    wait_state(offline_config(tmp_path), record.id, ["failed", "succeeded"], timeout=120)


def test_the_dialog_offers_exactly_the_arches_a_launch_accepts(tmp_path: Path) -> None:
    one = tmp_path / "one.hcl"
    one.write_text(ONE_ARCH)
    for bake_file in (DEMO_BAKE, one):
        bake = load_bake(bake_file)
        view = BakeView(path=bake.path, arches=bake.arches, default_arch="gfx950")
        for gpu in ("gfx1151", "gfx1201", None):
            assert arch_choices(view, gpu) == list(launch_arches(bake, gpu))
            assert set(FLEET_ARCHES) <= set(launch_arches(bake, gpu))
    assert launch_arches(load_bake(one), "gfx1151") == ("gfx950", "gfx1201", "gfx1250", "gfx1151")
    plain = BakeView(path=one, declares_arch=False)
    assert arch_choices(plain, "gfx1201") == ["gfx1201"] and arch_choices(plain, None) == [""]


@pytest.mark.usefixtures("lock_dir")
def test_rocmtui_bake_takes_the_fleets_arches_though_the_bake_file_lists_one(
    tmp_path: Path,
) -> None:
    """The dialog offered gfx1201 while `rocmtui bake` refused it ("the bake file knows:
    gfx950"): now both take the fleet's three; a typo is still refused in one line."""
    require("docker-buildx")
    one = tmp_path / "one.hcl"
    one.write_text(ONE_ARCH)
    config_path = offline_config(tmp_path, one)
    started = run_cli(config_path, "bake", "one", "--arch", "gfx1201", "--json")
    assert started.returncode == 0, started.stderr
    job = json.loads(started.stdout)
    assert job["arch"] == "gfx1201"
    wait_state(config_path, job["id"], ["failed", "succeeded"], timeout=120)
    refused = run_cli(config_path, "bake", "one", "--arch", "gfx1202")
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "rocmtui bake: unknown arch 'gfx1202'; accepted: gfx950, gfx1201, gfx1250"
    )
    # a node whose GPU is in no list builds for itself; asked for another, the refusal says it
    config = load_config(config_path)
    config = replace(config, nodes=(replace(config.nodes[0], gfx="gfx1100"),))
    with pytest.raises(
        LaunchError, match="accepted: gfx950, gfx1201, gfx1250; snoc-think is gfx1100"
    ):
        resolve_plan(config, load_bake(one), "one", "gfx1102", None, False, os.environ, {})
    plan = resolve_plan(config, load_bake(one), "one", "gfx1100", None, False, os.environ, {})
    assert plan.arch == "gfx1100"
