"""Builds started elsewhere by one bake invocation across nodes form a run (issue 39): plain
`docker buildx bake` (no rocmtui anywhere) started on two of today's engines within a second,
found in their BuildKit history by one discovery round, adopted by `rocmtui runs` as one run.

The engines are devfleet's CURRENT_ENGINE, each in a network namespace of its own, stopped by
pid at the module's end.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from devfleet import EngineHandle, start_engine
from devfleet.dockerd import CURRENT_ENGINE
from rocmtui.core.config.fleetfile import load_config
from tests.support.jobs import run_cli, wait_for
from tests.support.outside import discover, outside_jobs, plain_bake, write_fleet
from tests.support.realparts import require

pytestmark = pytest.mark.fleet


@pytest.fixture(scope="module")
def two_engines(
    tmp_path_factory: pytest.TempPathFactory, base_tar: Path
) -> Iterator[tuple[EngineHandle, EngineHandle]]:
    require("current-engine", "netns", "busybox", "docker-buildx")
    first = start_engine(tmp_path_factory.mktemp("ra"), "runa", True, "gfx1201",
                         base_tar=base_tar, kind=CURRENT_ENGINE)  # fmt: skip
    try:
        second = start_engine(tmp_path_factory.mktemp("rb"), "runb", True, "gfx1201",
                              base_tar=base_tar, kind=CURRENT_ENGINE)  # fmt: skip
        try:
            yield first, second
        finally:
            second.stop()
    finally:
        first.stop()


def test_one_bake_across_two_nodes_is_adopted_as_a_run(
    two_engines: tuple[EngineHandle, EngineHandle], tmp_path: Path
) -> None:
    a, b = two_engines
    path = write_fleet(tmp_path, {"runa": a.docker_host, "runb": b.docker_host})
    config = load_config(path)
    for e in (a, b):
        (tmp_path / e.name).mkdir()
    bakes = [plain_bake(e, tmp_path / e.name, "demo-base", DEMO_STEPS="3") for e in (a, b)]
    for bake in bakes:
        assert bake.wait(180) == 0
    wanted = {"runa", "runb"}

    def found() -> bool:
        discover(config)
        return {j.node for j in outside_jobs(config) if j.ended_at is not None} >= wanted

    wait_for("both builds found in BuildKit's history, ended", found, 120, poll=1.0)
    jobs = {j.id for j in outside_jobs(config)}

    def runs() -> list[dict[str, object]]:  # adopted once the newest is 10 s old
        done = run_cli(path, "runs", "--json")
        assert done.returncode == 0, done.stderr
        found: list[dict[str, object]] = json.loads(done.stdout)
        return found

    (run,) = wait_for("the run adopted", runs, 60, poll=1.0)
    assert run["origin"] == "elsewhere" and set(run["nodes"]) == wanted
    shown = json.loads(run_cli(path, "runs", "show", run["id"], "--json").stdout)
    assert {b["job_id"] for ln in shown["lanes"] for b in ln["builds"]} == jobs
    assert all(b["started_elsewhere"] for ln in shown["lanes"] for b in ln["builds"])
    # adopted once: read again, still one run
    assert len(json.loads(run_cli(path, "runs", "--json").stdout)) == 1
