"""A recorded fleet: the SNOC fleet at one fixed moment, for deterministic console tests.

The values are what the real probes reported on the dev fleet (versions, latencies, reasons),
frozen at `NOW` so ages, clocks and sparklines render the same on every run (with TZ=UTC).
"""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from rocmtui.console.backend.views import (
    BakeView,
    JobView,
    ProgressView,
    StepView,
    VariableView,
)
from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig, ServiceConfig
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.snapshots import (
    BuilderInfo,
    FleetSnapshot,
    HostStats,
    NodeSnapshot,
    ServiceSnapshot,
)
from rocmtui.core.states import JobState, NodeState, ServiceState

ROOT = Path(__file__).resolve().parents[3]
NOW = 1_764_502_200.0  # 2025-11-30 11:30:00 UTC
LATENCIES = (0.004, 0.005, 0.004, 0.012, 0.006, 0.005, 0.031, 0.007, 0.005, 0.004, 0.006, 0.005)


def config(read_only: bool = False, keys: dict[str, str] | None = None) -> FleetConfig:
    """The SNOC fleet file, as loaded."""
    return FleetConfig(
        source=ROOT / "rocmtui.toml",
        bake_file=ROOT / "bake" / "demo.hcl",
        refresh_seconds=2.0,
        stall_after_seconds=900.0,
        probe_deadline_seconds=3.0,
        registry=ServiceConfig("http://snoc-strix:8080"),
        webdav=ServiceConfig("http://snoc-strix:8081/"),
        nodes=(
            NodeConfig(
                "snoc-strix", docker_host="unix:///run/docker.sock", gfx="gfx1151", local=True
            ),
            NodeConfig("snoc-think", docker_host="ssh://ci@snoc-think", gfx="gfx1201"),
            NodeConfig("snoc-gaming", docker_host="ssh://ci@snoc-gaming", gfx="gfx1201"),
        ),
        read_only=read_only,
        keys=keys or {},
    )


def _builder(version: str = "v0.8.2+a1b2c3d") -> BuilderInfo:
    return BuilderInfo(
        name="default",
        driver="docker",
        status="running",
        buildkit_version=version,
        platforms=("linux/amd64",),
    )


def fleet(now: float = NOW, think_down: bool = False) -> FleetSnapshot:
    """All nodes up; `think_down` turns snoc-think's engine off (refused, for 4 minutes)."""
    host = HostStats(
        cpu_percent=37.5,
        cpu_count=32,
        mem_percent=41.0,
        mem_used=52 << 30,
        mem_total=128 << 30,
        load1=9.1,
        load5=8.7,
        load15=7.9,
        disk_path="/var/lib",
        disk_percent=63.0,
        disk_free=700 << 30,
    )
    strix = NodeSnapshot(
        "snoc-strix",
        "gfx1151",
        "unix:///run/docker.sock",
        NodeState.OK,
        now - 0.4,
        latency=0.006,
        engine_version="20.10.24+dfsg1",
        api_version="1.41",
        os_arch="linux/amd64",
        containers_running=2,
        builder=_builder(),
        host=host,
        last_ok_at=now - 0.4,
    )
    think = NodeSnapshot(
        "snoc-think",
        "gfx1201",
        "ssh://ci@snoc-think",
        NodeState.OK,
        now - 0.9,
        latency=0.041,
        engine_version="20.10.24+dfsg1",
        builder=_builder(),
        last_ok_at=now - 0.9,
    )
    if think_down:
        think = replace(
            think,
            state=NodeState.DOWN,
            engine_version=None,
            builder=None,
            latency=None,
            last_ok_at=now - 250,
            down_since=now - 248,
            reason="ssh: connect to host snoc-think port 22: Connection refused",
        )
    gaming = NodeSnapshot(
        "snoc-gaming",
        "gfx1201",
        "ssh://ci@snoc-gaming",
        NodeState.OK,
        now - 0.8,
        latency=0.038,
        engine_version="20.10.24+dfsg1",
        builder=_builder(),
        last_ok_at=now - 0.8,
    )
    registry = ServiceSnapshot(
        "registry",
        "http://snoc-strix:8080",
        ServiceState.OK,
        now - 0.3,
        latency=0.005,
        http_status=200,
        identity="registry/2.0",
        repositories=14,
        extras=(("livez", "ok"), ("readyz", "ok")),
        last_ok_at=now - 0.3,
    )
    webdav = ServiceSnapshot(
        "webdav",
        "http://snoc-strix:8081/",
        ServiceState.SLOW,
        now - 0.3,
        latency=0.870,
        http_status=207,
        identity="DAV: 1,2",
        last_ok_at=now - 0.3,
    )
    return FleetSnapshot(
        taken_at=now - 0.3,
        nodes=(strix, think, gaming),
        registry=registry,
        webdav=webdav,
        duration=0.9,
    )


class RecordedJob(JobRecord, frozen=True):
    """A stand-in job record whose log is a recorded file of any name (the store's own jobs
    keep theirs as `<job folder>/log`): the snapshots show the file's name."""

    log_file: str | None = None

    @property
    def log_path(self) -> Path:
        """The recorded log when given, else the job folder's."""
        return Path(self.log_file) if self.log_file is not None else super().log_path


def job(
    id: str,
    target: str,
    arch: str,
    node: str,
    state: JobState | str,
    started_at: float,
    log: Path | None = None,
    **fields: object,
) -> JobRecord:
    """A job as the store would record it, on the recorded fleet (`fields` as JobRecord's)."""
    made = {
        "endpoint": "ssh://" + node,
        "push": False,
        "overrides": {},
        "command": (),
        "user": "",
        "host": "snoc-think",
        "bake_file": str(ROOT / "docker-bake.hcl"),
        "job_dir": str(ROOT / "tests" / "support" / "snapshots" / "jobs" / id),
        **fields,
    }
    return RecordedJob(
        id=id,
        target=target,
        arch=arch,
        node=node,
        state=JobState(state),
        started_at=started_at,
        log_file=str(log) if log is not None else None,
        **made,  # type: ignore[arg-type]
    )


def changed(view: JobView, **fields: object) -> JobView:
    """The view with its job record's `fields` changed (as the store would record them)."""
    return replace(view, record=replace(view.record, **fields))


def jobs(now: float = NOW, stalled: bool = False) -> tuple[JobView, ...]:
    """A running pytorch build on snoc-think, a running vllm one, and finished ones."""
    log_dir = ROOT / "tests" / "support" / "snapshots" / "logs"
    steps = (
        StepView("#1", "[internal] load build definition from Dockerfile", "done", 0.1, 1),
        StepView("#4", "[demo-base 1/3] FROM rocm-base:local", "cached", None, 9),
        StepView("#7", "[demo-pytorch 1/1] RUN fake-compile pytorch 2.15.0", "running", None, 14),
    )
    pytorch = JobView(
        job(
            "20251130-1101-pytorch-gfx1201",
            "demo-pytorch",
            "gfx1201",
            "snoc-think",
            JobState.STALLED if stalled else JobState.RUNNING,
            now - 1740,
            log_dir / "pytorch.log",
            user="ci",
            evidence="silent 16m40s; builder container still running" if stalled else None,
        ),
        progress=ProgressView(
            step="#7 RUN fake-compile pytorch 2.15.0",
            steps_done=5,
            steps_total=7,
            cached=2,
            ninja_done=12345,
            ninja_total=23456,
            rate=None if stalled else 11.4,  # as the backend reports a stalled job: no ETA
            eta=None if stalled else 975,
            last_output_at=now - (1000 if stalled else 2),
            steps=steps,
        ),
    )
    vllm = JobView(
        job(
            "20251130-1120-vllm-gfx950",
            "demo-vllm",
            "gfx950",
            "snoc-strix",
            JobState.RUNNING,
            now - 600,
            log_dir / "vllm.log",
            user="anna",
        ),
        progress=ProgressView(
            step="#9 RUN fake-compile vllm 0.33.0",
            steps_done=8,
            steps_total=9,
            ninja_done=310,
            ninja_total=1200,
            rate=3.2,
            eta=278,
            last_output_at=now - 1,
        ),
    )
    done = JobView(
        job(
            "20251130-0902-base-gfx1201",
            "demo-base",
            "gfx1201",
            "snoc-gaming",
            JobState.SUCCEEDED,
            now - 9000,
            ended_at=now - 8700,
            user="ci",
            exit_code=0,
            digest="sha256:4f1c9e0d2b7a66aa0c3e1d5b9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e",
            push=True,
        )
    )
    failed = JobView(
        job(
            "20251130-0815-vllm-gfx1250",
            "demo-vllm",
            "gfx1250",
            "snoc-gaming",
            JobState.FAILED,
            now - 12000,
            ended_at=now - 11000,
            user="ben",
            exit_code=1,
            error_step="#9 RUN fake-compile vllm 0.33.0",
        )
    )
    return (pytorch, vllm, done, failed)


def bake(hostile: bool = False) -> BakeView:
    """The demo bake file's targets and variables; one override from the environment, one
    secret. `hostile` puts markup and escapes in a value, as an attacker's environment might."""
    variables = [
        VariableView("ROCM_VERSION", "7.2.2", "7.2.2", "default"),
        VariableView("PYTORCH_VERSION", "2.15.0", "2.15.0", "default"),
        VariableView("VLLM_VERSION", "0.34.0rc1", "0.33.0", "env"),
        VariableView("GFX_ARCH", "gfx950", "gfx950", "default"),
        VariableView("REGISTRY", "snoc-strix:8080", "snoc-strix:8080", "default"),
        VariableView(
            "SCCACHE_WEBDAV_ENDPOINT",
            "http://snoc-strix:8081/",
            "http://snoc-strix:8081/",
            "default",
        ),
        VariableView("HF_TOKEN", "hf_abcdefSECRET", "", "env", secret=True),
        VariableView("MAX_JOBS", "16", "16", "default"),
    ]
    if hostile:
        variables.append(
            VariableView(
                "EVIL", "[/] [link=http://x]y[/link] \x1b]52;c;aGk=\x07\x1b[2J\x1bc end", "", "env"
            )
        )
    return BakeView(
        path=ROOT / "bake" / "demo.hcl",
        targets=("demo-base", "demo-pytorch", "demo-vllm", "demo-pytorch-push", "demo-vllm-push"),
        pushing_targets=frozenset({"demo-pytorch-push", "demo-vllm-push"}),
        arches=("gfx950", "gfx1201", "gfx1250"),
        variables=tuple(variables),
    )
