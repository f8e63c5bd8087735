"""Helpers for the job-layer tests (no tests here): a fleet file for the demo bake file, the
CLI run as a real process, and polling with deadlines."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from devfleet import DevFleet
from rocmtui.core.jobs.procstat import (
    all_procs,
)
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import (
    JobStore,
)

REPO = Path(__file__).resolve().parents[2]
DEMO_BAKE = REPO / "bake" / "demo.hcl"
ROCM_BAKE = REPO / "bake" / "rocm-bake.hcl"
T = TypeVar("T")


def offline_config(tmp_path: Path, bake_file: Path = DEMO_BAKE) -> Path:
    """A fleet file on `bake_file` with one node whose engine is never there (nothing launched
    from it can reach an engine)."""
    path = tmp_path / "rocmtui.toml"
    path.write_text(
        f"bake_file = {json.dumps(str(bake_file))}\nstate_dir = "
        f'{json.dumps(str(tmp_path / "state"))}\n\n[[nodes]]\nname = "snoc-think"\n'
        'docker_host = "unix:///nonexistent/d.sock"\ngfx = "gfx1201"\n'
    )
    return path


def write_config(
    tmp: Path,
    fleet: Any,
    *,
    stall_after: float = 900.0,
    bake_file: Path = DEMO_BAKE,
) -> Path:
    """A fleet file for the session fleet, reading the demo bake file, with a state folder of
    this test's own."""
    text = Path(fleet.config_path).read_text()
    text = re.sub(r"(?m)^bake_file = .*$", f"bake_file = {json.dumps(str(bake_file))}", text)
    text = re.sub(r"(?m)^stall_after_seconds = .*$", f"stall_after_seconds = {stall_after}", text)
    state = tmp / "state"
    text = text.replace("[registry]", f"state_dir = {json.dumps(str(state))}\n\n[registry]", 1)
    path = tmp / "rocmtui.toml"
    path.write_text(text)
    return path


@pytest.fixture
def lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Slot locks of this test's own (never the machine-wide /run/lock/rocmtui)."""
    path = tmp_path / "locks"
    monkeypatch.setenv("ROCMTUI_LOCK_DIR", str(path))
    return path


def engineless_fleet(tmp_path: Path, node: str = "snoc-think", **settings: object) -> Path:
    """A fleet file of one node whose engine socket does not exist (it probes `down` at once),
    with top-level `settings` (paths and numbers); no real part is needed to open it."""
    lines = [
        f"{key} = {value}" if isinstance(value, int | float) else f'{key} = "{value}"'
        for key, value in settings.items()
    ]
    gfx = "gfx1151" if node == "snoc-strix" else "gfx1201"
    lines += ["[[nodes]]", f'name = "{node}"', f'docker_host = "unix://{tmp_path}/no.sock"']
    fleet_file = tmp_path / "fleet.toml"
    fleet_file.write_text("\n".join([*lines, f'gfx = "{gfx}"', ""]))
    return fleet_file


def rocmtui_argv(config: Path, *args: str) -> list[str]:
    """The command line of `rocmtui --config CONFIG ARGS...` as a real process."""
    return [sys.executable, "-m", "rocmtui", "--config", str(config), *args]


def run_cli(
    config: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> subprocess.CompletedProcess[str]:
    """Run the CLI to completion (stdin /dev/null, output captured)."""
    return subprocess.run(
        rocmtui_argv(config, *args),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ if env is None else env),
        stdin=subprocess.DEVNULL,
        check=False,
    )


def bake(config: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """`rocmtui bake ...` that must start: returns the job id."""
    out = run_cli(config, "bake", *args, env=env)
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    assert re.fullmatch(r"\d{8}-\d{4}-[0-9a-f]{4,8}", job_id), out.stdout
    return job_id


def jobs_json(config: Path) -> list[dict[str, Any]]:
    """`rocmtui jobs --json`, parsed."""
    out = run_cli(config, "jobs", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert isinstance(data, list)
    return data


def job_json(config: Path, job_id: str) -> dict[str, Any]:
    """One job as `rocmtui jobs --json` shows it."""
    return next(j for j in jobs_json(config) if j["id"] == job_id)


def started_job(config: Path, job_id: str, timeout: float = 60.0) -> dict[str, Any]:
    """The job once its supervisor has recorded both pids (launch returns before that)."""

    def check() -> dict[str, Any] | None:
        job = job_json(config, job_id)
        return job if job["bake_pid"] and job["supervisor_pid"] else None

    return wait_for(f"job {job_id} to record its pids", check, timeout)


def wait_for(what: str, condition: Callable[[], T | None], timeout: float, poll: float = 0.2) -> T:
    """Poll `condition` until it returns something truthy; fail with `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(poll)


def wait_state(
    config: Path, job_id: str, states: Sequence[str], timeout: float = 180.0
) -> dict[str, Any]:
    """Wait until the job is in one of `states` (read through `rocmtui jobs --json`)."""

    def check() -> dict[str, Any] | None:
        job = job_json(config, job_id)
        return job if job["state"] in states else None

    return wait_for(f"job {job_id} to be {'/'.join(states)}", check, timeout, poll=0.5)


def log_has(log: Path, needle: bytes) -> bool:
    """True once the job's log holds `needle`."""
    try:
        return needle in log.read_bytes()
    except OSError:
        return False


def session_pids(sid: int) -> list[int]:
    """Live processes in session `sid` (or its process group)."""
    return [p.pid for p in all_procs() if (p.sid == sid or p.pgid == sid) and p.state not in "ZX"]


def kill_job_leftovers(job: Mapping[str, Any], grace: float = 30.0) -> None:
    """Test cleanup: end anything left of a job (its session), by pid. SIGTERM first: a
    supervisor ends on it, whether its bake still runs (passed on) or has ended (issue 27).
    What is still there after `grace` seconds gets SIGKILL, and the test fails: a supervisor
    that will not stop on SIGTERM is a bug."""
    sid = job.get("supervisor_pid")
    if not sid:
        return
    left = session_pids(int(sid))
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = session_pids(int(sid))
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"job {job.get('id')}: {left} did not end on SIGTERM"


HOLD_LOCK = (
    "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
    "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(600)"
)


def job_record(
    job_id: str = "20261206-0000-0000", job_dir: Path | str = "/nonexistent", **fields: Any
) -> JobRecord:
    """A job record with every required field filled in plainly (demo-base, gfx1201 on
    snoc-think, started now); `fields` set any other: the one factory of the tests."""
    target = fields.pop("target", "demo-base")
    made: dict[str, Any] = {
        "arch": "gfx1201",
        "node": "snoc-think",
        "endpoint": "unix:///x.sock",
        "push": False,
        "overrides": {},
        "command": ("docker", "buildx", "bake", "--", target),
        "user": "tester",
        "host": "here",
        "bake_file": "/x/demo.hcl",
        "started_at": time.time(),
        **fields,
    }
    return JobRecord(id=job_id, target=target, job_dir=str(job_dir), **made)


def make_job(store: JobStore, target: str = "demo-base", **extra: Any) -> JobRecord:
    """Insert a job record as the launcher would (no process behind it)."""

    def make(job_id: str, job_dir: Path) -> JobRecord:
        (job_dir / "log").write_bytes(b"# header\n")
        extra.setdefault("overrides", {"DEMO_STEPS": "3"})
        return job_record(job_id, job_dir, target=target, **extra)

    return store.create(make)


def hold_lock(path: Path) -> subprocess.Popen[str]:
    """A real process holding an flock on `path` until killed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def nonce() -> str:
    """A fresh DEMO_NONCE: the RUN step really runs instead of coming from the cache."""
    return f"{os.getpid()}-{time.time_ns()}"


def quick(steps: int = 8, sleep: float = 0.05) -> list[str]:
    """--set arguments for a short real build."""
    return [
        "--set",
        f"DEMO_STEPS={steps}",
        "--set",
        f"DEMO_SLEEP={sleep}",
        "--set",
        f"DEMO_NONCE={nonce()}",
    ]


def registry_host(fleet: DevFleet) -> str:
    assert fleet.registry is not None
    return fleet.registry.address


def login_entry(host: str) -> None:
    """A docker config entry for the registry (its presence is all a push launch checks)."""
    path = Path(os.environ["DOCKER_CONFIG"]) / "config.json"
    path.write_text(json.dumps({"auths": {host: {}}}))
