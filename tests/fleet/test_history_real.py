"""Builds started elsewhere, for real: a current engine (containerd 2.1 + dockerd 28.5 of
today's engines, in a network namespace of its own), plain `docker buildx bake` of the demo
targets on it, and rocmtui's discovery, follower, store, status and cancel against it.

The engine is devfleet's CURRENT_ENGINE, in a network namespace of its own, stopped by pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from devfleet import EngineHandle, processes, start_engine
from devfleet.dockerd import CURRENT_ENGINE
from rocmtui.core.config.fleetfile import FleetConfig, load_config
from rocmtui.core.history.discover import HistoryWatch
from rocmtui.core.jobs.control import StartedElsewhere, cancel_job, get_job
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.jobs.views import record_json
from rocmtui.core.probes.round import Probers, probe_fleet
from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.core.states import JobState, NodeState
from tests.support.outside import DEMO, NOTES, discover, outside_jobs, plain_bake, write_fleet
from tests.support.realparts import require

pytestmark = pytest.mark.fleet


@pytest.fixture(scope="module")
def current_engine(
    tmp_path_factory: pytest.TempPathFactory, base_tar: Path
) -> Iterator[EngineHandle]:
    """Today's engine (devfleet's CURRENT_ENGINE: dockerd 28.5 with its own containerd 2.1)
    in a network namespace of its own, rocm-base:local imported; stopped at the module's end."""
    require("current-engine", "netns", "busybox", "docker-buildx")
    engine = start_engine(
        tmp_path_factory.mktemp("current"), "cur", True, "gfx1201",
        base_tar=base_tar, kind=CURRENT_ENGINE,
    )  # fmt: skip
    try:
        yield engine
    finally:
        engine.stop()


@pytest.fixture(autouse=True)
def _followers_stopped(tmp_path: Path) -> Iterator[None]:
    """Every follower (and its history stream) this test's state folder started, stopped by
    pid at the end, should one still run."""
    yield
    import signal

    for pid in processes.pids_mentioning(str(tmp_path)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_for(check: Callable[[], object], timeout: float, what: str) -> object:
    return processes.wait_for(check, timeout, what)


def test_a_plain_bake_is_a_running_outside_job_whose_log_grows_and_ends(
    current_engine: EngineHandle, tmp_path: Path
) -> None:
    config = load_config(write_fleet(tmp_path, {"cur": current_engine.docker_host}))
    # a secret-like build arg, and one holding an OSC 52 clipboard write and a title change
    sets = ("*.args.HF_TOKEN=hf_s3cr3t_value", "*.args.NOTE=\x1b]52;c;aGk=\x07\x1b]0;owned\x07ok")
    bake = plain_bake(current_engine, tmp_path, sets=sets, DEMO_STEPS="60", DEMO_SLEEP="0.2")
    try:
        # as soon as BuildKit lists it Running, one discovery makes it a job
        def found() -> list[JobRecord]:
            discover(config)
            return [j for j in outside_jobs(config) if j.state is JobState.RUNNING]

        (job,) = wait_for(found, 60, "the outside build as a running job")  # type: ignore[misc]
        assert job.target == "demo-pytorch"
        assert job.arch == "gfx1201"
        assert job.node == "cur"
        assert job.outside is not None and job.outside.name == "bake/demo (demo-pytorch)"
        assert job.outside.inspected and job.outside.vcs_revision
        # the node reads `building` through the same overlay as rocmtui's own jobs
        from rocmtui.core.jobs.overlay import NodeJobOverlay

        snap = asyncio.run(probe_fleet(config, node_overlay=NodeJobOverlay(config)))
        assert snap.nodes[0].state is NodeState.BUILDING
        # its log grows while it runs (the follower copies history logs)
        size = job.log_path.stat().st_size
        wait_for(lambda: job.log_path.stat().st_size > size + 2000, 60, "the log to grow")
        assert "[1/60]" in job.log_path.read_text() or "Building HIP" in job.log_path.read_text()
        # cancel says plainly who can cancel it
        with pytest.raises(StartedElsewhere, match="only the client that started it"):
            cancel_job(config, job.id)
        assert bake.wait(120) == 0
        ended = wait_for(
            lambda: (j := get_job(job.id, config)).ended_at is not None and j, 60, "its outcome"
        )
        assert isinstance(ended, JobRecord)
        assert ended.state is JobState.SUCCEEDED
        assert ended.outside is not None and ended.outside.status == "completed"
        assert ended.outside.total_steps and ended.outside.cached_percent is not None
        assert "succeeded after" in ended.log_path.read_text()
        # the secret build arg never reaches the record
        text = json.dumps(record_json(ended))
        assert "hf_s3cr3t_value" not in text and "<redacted:HF_TOKEN>" in text
        assert ended.outside.build_args["NOTE"].endswith("ok")
        assert not any(c in ended.outside.build_args["NOTE"] for c in "\x1b\x07")
        # discovered again: still one job for that build
        discover(config)
        assert [j.id for j in outside_jobs(config)].count(job.id) == 1
        assert len(outside_jobs(config)) == 1
    finally:
        if bake.poll() is None:
            bake.kill()
            bake.wait()


def test_a_rocmtui_build_is_not_doubled(current_engine: EngineHandle, tmp_path: Path) -> None:
    from rocmtui.core.bake.file import load_bake
    from rocmtui.core.jobs.launch import launch_job

    config = load_config(write_fleet(tmp_path, {"cur": current_engine.docker_host}))
    bake = load_bake(DEMO)
    own = launch_job(
        config, bake, "demo-pytorch", "gfx1201", "cur",
        overrides={"DEMO_STEPS": "40", "DEMO_SLEEP": "0.1", "DEMO_NONCE": str(time.time_ns())},
    )  # fmt: skip
    assert any(w.endswith(f"ROCMTUI_JOB={own.id}") for w in own.command)
    # discovered while it runs: tied by its ROCMTUI_JOB build arg, never a second job
    store = JobStore.for_config(config)

    def tied() -> bool:
        discover(config)
        return own.id in store.known_refs().values()

    wait_for(tied, 60, "the own build tied to its history record")

    def doubles() -> list[JobRecord]:  # earlier tests' builds on this engine are outside jobs
        return [j for j in outside_jobs(config) if j.started_at >= own.started_at - 1]

    assert doubles() == []
    done = wait_for(
        lambda: (j := get_job(own.id, config)).ended_at is not None and j, 120, "its end"
    )
    assert isinstance(done, JobRecord) and done.state is JobState.SUCCEEDED
    assert done.buildkit_ref and done.buildkit_ref in store.known_refs()
    discover(config)
    assert doubles() == []


def test_an_old_engine_says_once_that_it_keeps_no_history(
    engine_factory: Callable[..., EngineHandle], tmp_path: Path
) -> None:
    old = engine_factory("old", import_base=False)
    config = load_config(write_fleet(tmp_path, {"old": old.docker_host}))
    watch = HistoryWatch(config, interval=0, local=None)
    snap = asyncio.run(probe_fleet(config, probers=Probers(history=watch, history_now=True)))
    note = snap.nodes[0].history_note
    assert snap.nodes[0].state is NodeState.OK
    assert note and "not visible here" in note and "20.10" in note
    assert watch.runs == 0  # known by its version: no buildx process at all


def _running_outside(config: FleetConfig) -> JobRecord:
    def found() -> list[JobRecord]:
        discover(config)
        return [j for j in outside_jobs(config) if j.state in (JobState.RUNNING, JobState.STALLED)]

    (job,) = wait_for(found, 60, "the outside build as a running job")  # type: ignore[misc]
    assert isinstance(job, JobRecord)
    return job


def test_a_silent_outside_build_is_stalled_and_status_exits_1(
    current_engine: EngineHandle, tmp_path: Path
) -> None:
    from tests.support.jobs import run_cli

    path = write_fleet(tmp_path, {"cur": current_engine.docker_host}, stall=3)
    config = load_config(path)
    bake = plain_bake(current_engine, tmp_path, DEMO_STEPS="6", DEMO_SILENT_SECONDS="60")
    try:
        job = _running_outside(config)

        def stalled() -> dict[str, object] | None:
            out = run_cli(path, "status", "--json")
            data = json.loads(out.stdout)
            builds = [b for b in data["builds"] if b["id"] == job.id]
            if out.returncode == 1 and builds and builds[0]["state"] == "stalled":
                return data
            return None

        data = wait_for(stalled, 60, "status to say the outside build is stalled")
        assert isinstance(data, dict)
        (build,) = [b for b in data["builds"] if b["id"] == job.id]
        assert build["started_elsewhere"] is True and build["outside"]["ref"] == job.buildkit_ref
        assert any("stalled" in p for p in data["problems"])
        assert data["nodes"][0]["state"] == "stalled"
        # its client goes (Ctrl-C on the Makefile): BuildKit cancels it, a cancel reads Error
        os.killpg(bake.pid, signal.SIGINT)
        bake.wait(60)
        ended = wait_for(
            lambda: (j := get_job(job.id, config)).ended_at is not None and j, 60, "its end"
        )
        assert isinstance(ended, JobRecord)
        assert ended.state in (JobState.CANCELLED, JobState.FAILED)
        assert ended.outside is not None and ended.outside.status == "error"
        assert ended.message  # BuildKit's error, one sanitised line
    finally:
        if bake.poll() is None:
            bake.kill()
            bake.wait()


def test_a_history_stream_that_dies_is_followed_again(
    current_engine: EngineHandle, tmp_path: Path
) -> None:
    config = load_config(write_fleet(tmp_path, {"cur": current_engine.docker_host}))
    # long enough that the stream is still running when it is killed, even when discovery is
    # slow on a loaded machine: a stream that ends with the build is not followed again
    bake = plain_bake(current_engine, tmp_path, DEMO_STEPS="200", DEMO_SLEEP="0.2")
    try:
        job = _running_outside(config)
        assert job.buildkit_ref
        ref = job.buildkit_ref

        def streams() -> list[int]:
            out = []
            for pid in processes.pids_mentioning(ref):
                with contextlib.suppress(OSError):
                    if b"logs" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        out.append(pid)
            return out

        first = wait_for(streams, 30, "the follower's history stream")
        assert isinstance(first, list)
        for pid in first:  # the stream client runs lean: one Go thread, a lazier collector
            with contextlib.suppress(OSError):
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                assert b"GOMAXPROCS=1" in environ and b"GOGC=200" in environ
        for pid in first:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_for(lambda: "following its output again" in job.log_path.read_text(), 30,
                 "the follower to say it follows again")  # fmt: skip
        assert bake.wait(300) == 0
        ended = wait_for(
            lambda: (j := get_job(job.id, config)).ended_at is not None and j, 60, "its outcome"
        )
        assert isinstance(ended, JobRecord) and ended.state is JobState.SUCCEEDED
    finally:
        if bake.poll() is None:
            bake.kill()
            bake.wait()


def test_an_engine_gone_mid_build_ends_the_job_lost_with_the_reason(
    engine_factory: Callable[..., EngineHandle], tmp_path: Path
) -> None:
    engine = engine_factory("gone", kind=CURRENT_ENGINE)
    config = load_config(write_fleet(tmp_path, {"gone": engine.docker_host}, link_timeout=5))
    bake = plain_bake(engine, tmp_path, DEMO_STEPS="200", DEMO_SLEEP="0.2")
    try:
        job = _running_outside(config)
        engine.stop(grace=5.0)
        ended = wait_for(
            lambda: (j := get_job(job.id, config)).ended_at is not None and j, 90, "its end"
        )
        assert isinstance(ended, JobRecord)
        assert ended.state is JobState.LOST
        assert ended.message and ("did not answer" in ended.message or "no longer" in ended.message)
        assert "\x1b" not in ended.message
    finally:
        if bake.poll() is None:
            bake.kill()
            bake.wait()


def test_a_builder_whose_history_api_errors_gives_a_note_not_an_error(
    engine_factory: Callable[..., EngineHandle], tmp_path: Path
) -> None:
    from msgspec.structs import replace

    old = engine_factory("old", import_base=False)
    config = load_config(write_fleet(tmp_path, {"old": old.docker_host}))
    snap = asyncio.run(probe_fleet(config)).nodes[0]
    assert snap.state is NodeState.OK
    # said to be of today, so buildx really asks its (missing) history API
    posing = replace(snap, engine_version="28.5.2")
    watch = HistoryWatch(config, interval=0, local=None)
    noted = asyncio.run(watch.ask(config.nodes[0], posing))
    assert watch.runs == 1
    assert noted.state is NodeState.OK
    assert noted.history_note and "not visible here" in noted.history_note
    assert outside_jobs(config) == []


def test_the_monitor_shows_a_build_started_on_this_host_without_waiting_its_interval(
    current_engine: EngineHandle, tmp_path: Path
) -> None:
    """A long history interval: only the sign of a new build process here can make the
    monitor look, so the node reads `building` from that sign alone."""
    from rocmtui.core.jobs.overlay import NodeJobOverlay
    from rocmtui.core.probes.round import FleetMonitor

    config = load_config(write_fleet(tmp_path, {"cur": current_engine.docker_host}))
    states: list[NodeState] = []

    def publish(snap: FleetSnapshot) -> None:
        states.append(snap.nodes[0].state)

    async def main() -> list[NodeState]:
        overlay = NodeJobOverlay(config, max_age=0)
        monitor = FleetMonitor(config, publish, node_overlay=overlay, history_seconds=3600)
        task = asyncio.ensure_future(monitor.run())
        try:
            deadline = time.monotonic() + 30
            while monitor.rounds < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert monitor.probers.history is not None
            asked = monitor.probers.history.runs
            bake = plain_bake(current_engine, tmp_path, DEMO_STEPS="60", DEMO_SLEEP="0.2")
            try:
                deadline = time.monotonic() + 60
                while NodeState.BUILDING not in states and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                assert monitor.probers.history.runs > asked  # the sign made it look
            finally:
                await asyncio.to_thread(bake.wait, 120)
            return states
        finally:
            monitor.stop()
            await task

    seen = asyncio.run(main())
    assert NodeState.BUILDING in seen


@pytest.mark.slow
def test_a_plain_bake_on_a_remote_node_is_seen_through_its_own_connection(
    config: Path, tmp_path: Path
) -> None:
    """The dev fleet's ssh node: plain `docker buildx bake` run with the environment an
    operator's make would have (reaching the node as rocmtui's own launches do), and
    rocmtui's discovery and follower reaching it the same way."""
    from rocmtui.core.history.buildx import history_environment

    node_name = "snoc-think"  # ssh://ci@snoc-think, today's engine (minimum API 1.44)
    loaded = load_config(config)
    node = loaded.node(node_name)
    assert node is not None
    env = history_environment(node, loaded, os.environ, tmp_path / "operator")
    # long enough to be still running when a slow discovery (a loaded machine, inspect asked
    # again after a timeout) first sees it: a build that ended first is never `running` here
    env.update(GFX_ARCH="gfx1201", DEMO_NONCE=str(time.time_ns()), DEMO_STEPS="150",
               DEMO_SLEEP="0.2")  # fmt: skip
    bake = processes.spawn(
        ["docker", "buildx", "bake", "-f", str(DEMO), "--progress=plain", "--", "demo-pytorch"],
        tmp_path / "bake.log",
        env=env,
        cwd=DEMO.parent,
    )
    try:

        def found() -> list[JobRecord]:
            discover(loaded)
            return [
                j
                for j in outside_jobs(loaded)
                if j.node == node_name and j.state is JobState.RUNNING
            ]

        try:
            (job,) = wait_for(found, 90, f"the outside build on {node_name}")  # type: ignore[misc]
        except Exception as exc:
            tail = (tmp_path / "bake.log").read_text()[-1500:]
            raise AssertionError(f"{exc}; nodes: {NOTES}; bake: {tail}") from exc
        assert job.target == "demo-pytorch" and job.arch == "gfx1201"
        # the TLS node (tcp:// with certificates) is the fleet's 20.10 engine: its note
        assert "not visible here" in str(NOTES.get("snoc-gaming"))
        assert bake.wait(300) == 0, (tmp_path / "bake.log").read_text()[-2000:]
        ended = wait_for(
            lambda: (j := get_job(job.id, loaded)).ended_at is not None and j, 90, "its outcome"
        )
        assert isinstance(ended, JobRecord) and ended.state is JobState.SUCCEEDED
        assert "Building HIP" in ended.log_path.read_text()
    finally:
        if bake.poll() is None:
            bake.kill()
            bake.wait()


def test_a_rocmtui_build_whose_inspect_fails_is_not_made_a_second_job(
    current_engine: EngineHandle, tmp_path: Path
) -> None:
    """Issue 27: on a loaded machine `history inspect` timed out, and a rocmtui build became a
    second, "started elsewhere" job (its node row then offered that double, which cannot be
    cancelled). Stand-in for the timeout: a docker-buildx where the docker CLI looks for
    plugins first, whose `history inspect` fails at once (no answer, as a timeout gives); every
    other call is the real buildx's."""
    from rocmtui.core.bake.file import load_bake
    from rocmtui.core.bake.plugin import buildx_plugin
    from rocmtui.core.history.adopt import INSPECT_TRIES
    from rocmtui.core.jobs.launch import launch_job

    real = buildx_plugin(os.environ)
    assert real is not None
    config_dir = tmp_path / "docker-config-inspect-fails"
    (config_dir / "cli-plugins").mkdir(parents=True)
    stand_in = config_dir / "cli-plugins" / "docker-buildx"
    stand_in.write_text(
        '#!/bin/sh\nif [ "$1 $2" = "history inspect" ]; then\n'
        '  echo "stand-in: history inspect timed out" >&2; exit 1\nfi\n'
        f'exec {real} "$@"\n'
    )
    stand_in.chmod(0o755)
    config = load_config(write_fleet(tmp_path, {"cur": current_engine.docker_host}))
    own = launch_job(
        config, load_bake(DEMO), "demo-pytorch", "gfx1201", "cur",
        overrides={"DEMO_STEPS": "300", "DEMO_SLEEP": "0.1", "DEMO_NONCE": str(time.time_ns())},
    )  # fmt: skip
    store = JobStore.for_config(config)
    env = {**os.environ, "DOCKER_CONFIG": str(config_dir)}
    failing = HistoryWatch(config, interval=0, local=None, env=env, spawn=False)

    def failing_round() -> None:
        probers = Probers(history=failing, history_now=True)

        async def round_and_settle() -> None:
            await probe_fleet(config, probers=probers)
            await failing.settle(15.0)

        asyncio.run(round_and_settle())

    def doubles() -> list[JobRecord]:
        return [j for j in outside_jobs(config) if j.started_at >= own.started_at - 1]

    try:
        wait_for(lambda: failing_round() or failing.inspect_failures, 60, "a failed inspect of it")
        for _ in range(INSPECT_TRIES - 2):
            failing_round()
        assert max(failing.inspect_failures.values()) == INSPECT_TRIES - 1
        assert doubles() == []  # not made a job while whose build it is is unknown
        assert own.id not in store.known_refs().values()

        def tied() -> bool:
            discover(config)  # inspect answers again
            return own.id in store.known_refs().values()

        wait_for(tied, 60, "the own build tied to its history record")
        assert doubles() == []
    finally:
        with contextlib.suppress(Exception):
            cancel_job(config, own.id, grace=2.0)


def test_a_full_state_disk_is_said_on_the_row_once_and_the_build_is_adopted_after(
    current_engine: EngineHandle, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The monitor's discovery with its state folder on a full disk: the node row's history
    note says the builds it found are not recorded and why, the monitor's log says it once
    (not at every look until there is room), and once there is room the next look adopts the
    build it could not record."""
    import logging

    from tests.support.smalldisk import fill, small_tmpfs

    require("root")
    bake = plain_bake(current_engine, tmp_path, DEMO_STEPS="3", DEMO_SLEEP="0")
    assert bake.wait(180) == 0, (tmp_path / "bake-demo-pytorch.log").read_text()[-1500:]
    config = load_config(write_fleet(tmp_path, {"cur": current_engine.docker_host}))
    with small_tmpfs(tmp_path / "disk", 4 << 20) as point:
        state = point / "rocmtui"
        env = {**os.environ, "XDG_STATE_HOME": str(point), "ROCMTUI_STATE_DIR": str(state)}
        store = JobStore(state)
        assert store.list(limit=None) == []  # the store exists; the disk fills after
        filler = fill(point)
        watch = HistoryWatch(config, interval=0, local=None, env=env, spawn=False)
        probers = Probers(history=watch, history_now=True)

        def look() -> str | None:
            async def round_and_settle() -> FleetSnapshot:
                snap = await probe_fleet(config, probers=probers)
                await watch.settle(15.0)
                return snap

            (row,) = asyncio.run(round_and_settle()).nodes
            assert row.state is NodeState.OK, row
            return row.history_note

        caplog.set_level(logging.WARNING, logger="rocmtui.core.history.discover")
        notes = [look() for _ in range(3)]
        assert all(n and "builds started elsewhere are not recorded" in n for n in notes), notes
        assert "state disk full" in str(notes[-1]), notes
        said = [r.getMessage() for r in caplog.records if r.name.endswith("history.discover")]
        assert len(said) == 1 and "state disk full" in said[0], said
        assert not [r for r in caplog.records if r.exc_info], "a traceback for a full disk"

        filler.unlink()
        assert look() is None
        found = [j.target for j in store.list(limit=None) if j.started_elsewhere]
        assert "demo-pytorch" in found, found
