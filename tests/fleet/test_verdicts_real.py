"""Stall verdicts on the real dev fleet: a silent build is judged by its node's evidence.

On the ssh node, with the threshold at 8 s: a build that burns a core without printing stays
`running`, quiet and busy, and `status` exits 0 over it; a build that sleeps without printing is
`stalled` "idle" and `status` exits 1. On the TLS node (vitals from the engine API alone: no CPU
figure) the sleeping build is `stalled` and says what that node could and could not tell. A node
whose data root is a small filesystem that its build fills: the "disk" verdict.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devfleet import DevFleet, EngineHandle, start_monitor
from devfleet.dockerd import EngineKind, start_engine
from tests.support.jobs import DEMO_BAKE, bake, job_json, log_has, run_cli, started_job, wait_for
from tests.support.prometheus import scrape
from tests.support.realparts import require
from tests.support.smallengine import one_node_fleet, small_disk_engine

# one worker: the OOM test's kill counts on the shared kernel (/proc/vmstat), so a disk test's
# build beside it saw "1 OOM kill since the build began" and was judged memory
pytestmark = [pytest.mark.fleet, pytest.mark.slow, pytest.mark.xdist_group("verdicts_real")]
STALL_AFTER = 8


def with_thresholds(config: Path, busy_after: float = 120) -> Path:
    """The test's fleet file with the stall threshold at 8 s and the busy one at `busy_after`."""
    text = re.sub(
        r"(?m)^stall_after_seconds = .*$",
        f"stall_after_seconds = {STALL_AFTER}\nstall_busy_after_seconds = {busy_after}",
        config.read_text(),
    )
    config.write_text(text)
    return config


def silent_build(config: Path, node: str, silence: str) -> str:
    """A demo build on `node` that goes silent halfway (`DEMO_SILENT_SECONDS=silence`), once
    its log has begun: its job id."""
    job_id = bake(
        config, "demo-base", "--arch", "gfx1201", "--node", node,
        "--set", "DEMO_STEPS=4", "--set", "DEMO_SLEEP=0.05",
        "--set", f"DEMO_SILENT_SECONDS={silence}",
        "--set", f"DEMO_NONCE={uuid.uuid4().hex[:8]}",
    )  # fmt: skip
    log = Path(started_job(config, job_id)["log"])
    wait_for("the build's first step", lambda: log_has(log, b"Building HIP object"), 120)
    return job_id


def judged(config: Path, job_id: str, timeout: float = 90) -> dict[str, Any]:
    """The job once `rocmtui jobs --json` gives it a verdict (silent past the threshold)."""
    return wait_for(
        f"a verdict on {job_id}",
        lambda: (lambda j: j if j.get("verdict") else None)(job_json(config, job_id)),
        timeout,
    )


def status(config: Path) -> tuple[int, dict[str, Any]]:
    done = run_cli(config, "status", "--json", timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def build_in(report: dict[str, Any], job_id: str) -> dict[str, Any]:
    return next(b for b in report["builds"] if b["id"] == job_id)


def node_in(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in report["nodes"] if n["name"] == name)


@pytest.mark.alone  # judges by the build's CPU use: a busy neighbour changes it
def test_a_busy_silent_build_on_the_ssh_node_stays_building_and_an_idle_one_stalls(
    fleet: DevFleet, config: Path
) -> None:
    with_thresholds(config)
    busy = silent_build(config, "snoc-think", "busy:40")
    # its supervisor kept the node's OOM count at the start, read over ssh (verdicts/atstart)
    kept = Path(job_json(config, busy)["log"]).parent / "vitals-at-start.json"
    wait_for("the OOM count at the start", kept.exists, 30)
    assert isinstance(json.loads(kept.read_text()).get("oom_kills_total"), int), kept.read_text()
    job = judged(config, busy)
    # busy through the silence, read at every look while it lasts
    while job["state"] == "running" and job["verdict"] == "busy":
        said = job["verdict_line"]
        assert said.startswith("quiet ") and "% CPU" in said, said
        silent = re.match(r"quiet (\d+)s", said)
        if silent is None or int(silent.group(1)) >= 20:
            break
        job = job_json(config, busy)
    assert job["state"] == "running" and job["verdict"] == "busy", job["verdict_line"]
    code, report = status(config)
    mine = build_in(report, busy)
    assert mine["state"] == "running" and mine["verdict"] == "busy", (
        mine["verdict_line"],
        node_in(report, "snoc-think").get("vitals"),
    )
    assert node_in(report, "snoc-think")["state"] == "building"
    assert not [p for p in report["problems"] if busy in p], report["problems"]
    assert code == 0, report["problems"]
    said = run_cli(config, "status", timeout=120)  # for people: the quiet build, and why
    assert (
        said.returncode == 0
        and f"job {busy} (demo-base gfx1201 on snoc-think) is quiet: quiet " in said.stdout
    ), said.stdout

    done = run_cli(config, "cancel", busy)
    assert done.returncode == 0, done.stderr
    idle = silent_build(config, "snoc-think", "90")
    job = wait_for(
        "the sleeping build stalled",
        lambda: (lambda j: j if j["state"] == "stalled" else None)(job_json(config, idle)),
        90,
    )
    assert job["verdict"] == "idle", job
    assert job["verdict_line"].startswith("idle: "), job["verdict_line"]
    assert job["evidence"].startswith(job["verdict_line"])
    code, report = status(config)
    assert code == 1
    assert node_in(report, "snoc-think")["state"] == "stalled"
    assert build_in(report, idle)["verdict"] == "idle"
    assert any(idle in p and "stalled" in p for p in report["problems"]), report["problems"]


def test_a_sleeping_build_on_the_tls_node_stalls_saying_what_the_node_could_tell(
    fleet: DevFleet, config: Path
) -> None:
    with_thresholds(config)
    idle = silent_build(config, "snoc-gaming", "90")
    job = wait_for(
        "the sleeping build stalled",
        lambda: (lambda j: j if j["state"] == "stalled" else None)(job_json(config, idle)),
        90,
    )
    assert job["verdict"] == "no-evidence", job
    said = job["verdict_line"]
    # what it could not tell (no CPU figure: the engine API gives none) and what it could
    assert said.startswith("no evidence from this node: silent "), said
    assert "no CPU figure (from engine" in said, said
    assert "data root" in said or "build cache" in said, said
    code, report = status(config)
    assert code == 1 and build_in(report, idle)["verdict"] == "no-evidence"


@pytest.fixture
def small_disk_node(tmp_path: Path, base_tar: Path) -> Iterator[tuple[Path, str]]:
    """An engine of its own (in a netns) whose data root is a 160 MiB tmpfs, and a fleet file
    naming only it: (fleet file, node name)."""
    require("root", "dockerd", "netns", "docker-buildx")
    with small_disk_engine(
        tmp_path, base_tar, "tiny", f"stall_after_seconds = {STALL_AFTER}\n"
    ) as made:
        yield made


def test_a_build_that_fills_its_data_root_gets_the_disk_verdict(
    small_disk_node: tuple[Path, str],
) -> None:
    config, node = small_disk_node
    filled = silent_build(config, node, "fill:400:90")
    job = wait_for(
        "the filled build stalled",
        lambda: (lambda j: j if j["state"] == "stalled" else None)(job_json(config, filled)),
        120,
    )
    assert job["verdict"] == "disk", job["verdict_line"]
    assert job["verdict_line"].startswith("disk: "), job["verdict_line"]
    assert " full (" in job["verdict_line"] and "free of" in job["verdict_line"]


@pytest.fixture
def memory_limited_node(tmp_path: Path, base_tar: Path) -> Iterator[tuple[Path, str]]:
    """An engine of its own whose RUN steps run in a cgroup v1 memory cgroup of 200 MiB
    (dockerd's `cgroup-parent`: BuildKit puts each step's cgroup under it), and a fleet file
    naming only it, refreshed every second: (fleet file, node name)."""
    require("root", "dockerd", "netns", "docker-buildx")
    name = f"oom{uuid.uuid4().hex[:4]}"
    group = Path("/sys/fs/cgroup/memory") / f"rocmtui-test-{name}"
    group.mkdir()  # this machine's kernel has cgroup v1's memory controller (HAZARDS.md)
    try:
        (group / "memory.limit_in_bytes").write_text(str(200 * 1024 * 1024))
        kind = EngineKind("20.10-oom", settings=(("cgroup-parent", f"/{group.name}"),))
        engine = start_engine(tmp_path, name, True, "gfx1201", base_tar=base_tar, kind=kind)
        try:
            settings = f"refresh_seconds = 1.0\nstall_after_seconds = {STALL_AFTER}\n"
            with one_node_fleet(tmp_path, name, engine.docker_host, settings) as config:
                yield config, name
        finally:
            engine.stop(grace=5.0)
    finally:
        for sub in sorted(group.glob("**/"), key=lambda p: -len(p.parts)):  # leaves first
            with contextlib.suppress(OSError):
                sub.rmdir()


def test_a_step_the_oom_killer_ended_gets_the_memory_verdict_in_the_monitor(
    tmp_path: Path, memory_limited_node: tuple[Path, str]
) -> None:
    """The monitor watches the node from before the build: its OOM count at the build's start
    is known, and a helper of the step killed by the kernel while the step waits in silence is
    the `memory` verdict, `stalled` (a one-shot command cannot know the count at the start)."""
    config, node = memory_limited_node
    monitor = start_monitor(tmp_path / "monitor", config)
    try:
        wait_for(
            "the monitor's vitals of the node",
            lambda: f'rocmtui_node_oom_kills_total{{node="{node}"}}' in scrape(monitor),
            60,
        )
        job_id = silent_build(config, node, "oom:400:120")
        line = f'rocmtui_builds_silent{{node="{node}",verdict="memory"}} 1.0'
        wait_for("the memory verdict in the metrics", lambda: line in scrape(monitor), 90)
        assert f'rocmtui_builds_active{{node="{node}",state="stalled"}} 1.0' in scrape(monitor)
        # a one-shot command too: the launch kept the node's count (vitals-at-start.json)
        job = judged(config, job_id)
        assert job["verdict"] == "memory" and job["state"] == "stalled", job["verdict_line"]
    finally:
        monitor.stop(grace=5.0)


@pytest.mark.alone  # judges by the build's CPU use: a busy neighbour changes it
def test_busy_longer_than_every_earlier_build_of_it_is_a_hang(
    tmp_path: Path, engine_factory: Callable[..., EngineHandle]
) -> None:
    """Three builds of demo-base in the cost book, then one that burns a core in silence for
    longer than any of them took: `stalled`, busy too long, naming their p90 and count."""
    engine = engine_factory()
    config = tmp_path / "rocmtui.toml"
    config.write_text(
        f"bake_file = {json.dumps(str(DEMO_BAKE))}\n"
        f"state_dir = {json.dumps(str(tmp_path / 'state'))}\n"
        f"stall_after_seconds = {STALL_AFTER}\nstall_busy_after_seconds = 600\n"
        '[registry]\nurl = "http://127.0.0.1:9"\n[webdav]\nurl = "http://127.0.0.1:9/"\n'
        f'[[nodes]]\nname = "{engine.name}"\ndocker_host = "{engine.docker_host}"\n'
        'gfx = "gfx1201"\n'
    )
    for _ in range(3):
        done = bake(config, "demo-base", "--node", engine.name, "--arch", "gfx1201",
                    "--set", "DEMO_STEPS=2", "--set", "DEMO_SLEEP=0")  # fmt: skip
        wait_for(
            "the build to succeed",
            lambda job=done: job_json(config, job)["state"] == "succeeded",  # type: ignore[misc]
            120,
        )

    def in_the_book() -> bool:  # the cost book takes a build 30 s after its end
        out = run_cli(config, "history", "--json")
        builds = json.loads(out.stdout)["builds"] if out.returncode in (0, 1) else []
        return sum(1 for b in builds if b["outcome"] == "succeeded") == 3

    wait_for("three builds in the cost book", in_the_book, 120, poll=2.0)
    spinning = silent_build(config, engine.name, "busy:90")
    job = wait_for(
        "the spinning build stalled",
        lambda: (lambda j: j if j["state"] == "stalled" else None)(job_json(config, spinning)),
        90,
    )
    assert job["verdict"] == "busy-too-long", job["verdict_line"]
    assert re.match(
        r"busy but silent \S+; this build took at most \S+ \(p90\) in 3 earlier builds$",
        job["verdict_line"],
    ), job["verdict_line"]
