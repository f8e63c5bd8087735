"""`rocmtui prune` on a real engine: what it showed is what went (`buildx du` before and
after), the job store records it, and read-only mode and a running build refuse it."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from devfleet import EngineHandle
from devfleet.dockerd import CURRENT_ENGINE
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.prune.record import prunes
from tests.support.jobs import DEMO_BAKE, bake, log_has, run_cli, started_job, wait_for

pytestmark = [pytest.mark.fleet, pytest.mark.slow]


def du_ids(engine: EngineHandle) -> set[str]:
    """The cache record ids buildx 0.29 lists for the engine (`du --format json`)."""
    env = dict(os.environ, DOCKER_HOST=engine.docker_host)
    done = subprocess.run(
        ["docker", "buildx", "du", "--format", "json"],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return {json.loads(line)["ID"] for line in done.stdout.splitlines() if line.strip()}


def fleet_file(tmp_path: Path, engine: EngineHandle) -> Path:
    config = tmp_path / "rocmtui.toml"
    config.write_text(
        f"bake_file = {json.dumps(str(DEMO_BAKE))}\n"
        f"state_dir = {json.dumps(str(tmp_path / 'state'))}\n"
        '[registry]\nurl = "http://127.0.0.1:9"\n[webdav]\nurl = "http://127.0.0.1:9/"\n'
        f'[[nodes]]\nname = "{engine.name}"\ndocker_host = "{engine.docker_host}"\n'
        'gfx = "gfx1201"\n'
    )
    return config


def build_something(engine: EngineHandle) -> None:
    env = dict(
        os.environ, DOCKER_HOST=engine.docker_host, DEMO_STEPS="2", DEMO_SLEEP="0",
        DEMO_NONCE=uuid.uuid4().hex[:8],
    )  # fmt: skip
    done = subprocess.run(
        ["docker", "buildx", "bake", "-f", DEMO_BAKE.name, "--progress=quiet", "demo-base"],
        cwd=DEMO_BAKE.parent, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]


def test_what_prune_showed_is_what_went_and_read_only_refuses(
    tmp_path: Path, engine_factory: Callable[..., EngineHandle]
) -> None:
    engine = engine_factory(kind=CURRENT_ENGINE)
    config = fleet_file(tmp_path, engine)
    build_something(engine)
    before = du_ids(engine)
    assert before

    refused = run_cli(config, "--read-only", "prune", engine.name, "--yes")
    assert refused.returncode == 1 and "read-only" in refused.stderr, refused.stderr
    assert du_ids(engine) == before
    asked = run_cli(config, "prune", engine.name)  # no terminal to ask on: nothing goes
    assert asked.returncode == 0 and "no terminal to ask on" in asked.stderr, asked.stderr
    assert du_ids(engine) == before

    done = run_cli(config, "prune", engine.name, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    after = du_ids(engine)
    assert said["pruned"] and said["planned_records"]
    assert set(said["planned_records"]) == before - after == set(said["deleted_records"])
    assert said["planned_bytes"] == said["reclaimed_bytes"] > 0
    (row,) = prunes(JobStore.for_config(load_config(config)), engine.name)
    assert row.deleted_records == len(said["deleted_records"])
    assert row.reclaimed_bytes == said["reclaimed_bytes"] and row.user


def test_an_unknown_node_and_a_bad_size_are_usage_errors(
    tmp_path: Path, engine_factory: Callable[..., EngineHandle]
) -> None:
    engine = engine_factory()
    config = fleet_file(tmp_path, engine)
    nobody = run_cli(config, "prune", "nobody", "--yes")
    assert nobody.returncode == 2 and "no node named 'nobody'" in nobody.stderr
    bad = run_cli(config, "prune", engine.name, "--keep-storage", "lots")
    assert bad.returncode == 2 and "not a size: 'lots'" in bad.stderr


def test_a_prune_is_refused_while_a_build_runs_there(
    tmp_path: Path, engine_factory: Callable[..., EngineHandle]
) -> None:
    engine = engine_factory()
    config = fleet_file(tmp_path, engine)
    build_something(engine)
    job = bake(
        config, "demo-base", "--node", engine.name, "--arch", "gfx1201",
        "--set", "DEMO_STEPS=4", "--set", "DEMO_SILENT_SECONDS=120",
        "--set", f"DEMO_NONCE={uuid.uuid4().hex[:8]}",
    )  # fmt: skip
    try:
        log = Path(started_job(config, job)["log"])
        wait_for("the build's first step", lambda: log_has(log, b"Building HIP object"), 120)
        refused = run_cli(config, "prune", engine.name, "--yes")
        assert refused.returncode == 1, refused.stderr
        assert f"a build runs on {engine.name} (job {job})" in refused.stderr, refused.stderr
        # nothing pruned (the running build itself replaces its context's records in the
        # cache, so the cache's ids are no witness here): the job store records no prune
        assert prunes(JobStore.for_config(load_config(config)), engine.name) == []
    finally:
        run_cli(config, "cancel", job, "--grace", "2")
