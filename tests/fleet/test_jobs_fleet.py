"""Real builds on the real local fleet: launch, outlive the launcher, push, race, cancel, lost,
stall, fail. Every build is the demo bake file's, kept to a few seconds with its DEMO_* knobs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.control import cancel_job, list_jobs
from rocmtui.core.jobs.procstat import is_same_process, proc_stat
from rocmtui.core.jobs.store import JobStore
from tests.support.jobs import (
    bake,
    job_json,
    lock_dir,  # noqa: F401 - fixture
    log_has,
    quick,
    rocmtui_argv,
    run_cli,
    session_pids,
    started_job,
    wait_for,
    wait_state,
    write_config,
)
from tests.support.realparts import require

pytestmark = [pytest.mark.fleet, pytest.mark.slow]
NODE = "snoc-think"  # an engine in a network namespace of its own
ARCH = "gfx1201"


def test_build_succeeds_on_a_netns_node_and_pushes_a_digest_the_registry_has(
    config: Path, fleet: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = f"127.0.0.1:{fleet.registry.port}"
    # presence of a login entry is all the launcher checks; this registry has no auth
    docker_config = Path(os.environ["DOCKER_CONFIG"])
    (docker_config / "config.json").write_text(json.dumps({"auths": {registry: {}}}))
    args = ["demo-pytorch-push", "--arch", ARCH, "--node", NODE, *quick(), "--yes"]
    refused = run_cli(config, "bake", *args[:-1], "--set", f"REGISTRY={registry}")
    assert refused.returncode == 1 and "--yes" in refused.stderr
    job_id = bake(config, *args, "--set", f"REGISTRY={registry}")

    follow = run_cli(config, "logs", "-f", job_id, timeout=300)
    assert follow.returncode == 0, follow.stderr
    assert "Building HIP object" in follow.stdout
    job = job_json(config, job_id)
    assert job["state"] == "succeeded" and job["exit_code"] == 0
    assert job["node"] == NODE and job["arch"] == ARCH and job["push"] is True
    digest = job["digest"]
    assert digest and digest.startswith("sha256:")
    # the digest names a manifest the registry really holds
    url = f"http://{registry}/v2/rocm-bake/demo-pytorch/manifests/{digest}"
    request = urllib.request.Request(url, method="HEAD")
    request.add_header(
        "Accept",
        "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, "
        "application/vnd.docker.distribution.manifest.v2+json, "
        "application/vnd.docker.distribution.manifest.list.v2+json",
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        assert reply.status == 200
        assert reply.headers["Docker-Content-Digest"] == digest
    # the record on disk says the same as the index
    record = json.loads((Path(job["job_dir"]) / "record.json").read_text())
    assert record["state"] == "succeeded" and record["digest"] == digest
    assert "--" in record["command"] and record["command"][-1] == "demo-pytorch-push"
    assert f"GFX_ARCH={ARCH}" in record["command"]


def test_push_refused_without_a_login_entry(config: Path, fleet: Any) -> None:
    registry = f"127.0.0.1:{fleet.registry.port}"
    out = run_cli(
        config,
        "bake",
        "demo-pytorch-push",
        "--arch",
        ARCH,
        "--node",
        NODE,
        "--yes",
        "--set",
        f"REGISTRY={registry}",
    )
    assert out.returncode == 1
    assert "no login" in out.stderr and registry in out.stderr
    assert list_jobs(load_config(config)) == []


def test_build_outlives_sigkill_of_launcher_and_follower(config: Path) -> None:
    args = ["demo-base", "--arch", ARCH, "--node", NODE, *quick(steps=30, sleep=0.1)]
    launcher = subprocess.Popen(
        rocmtui_argv(config, "bake", *args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert launcher.stdout is not None
    job_id = launcher.stdout.readline().decode().strip()
    launcher.kill()  # SIGKILL, whether or not it had returned yet
    launcher.wait()
    follower = subprocess.Popen(
        rocmtui_argv(config, "logs", "-f", job_id),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    log = Path(job_json(config, job_id)["job_dir"]) / "log"
    wait_for("compile lines in the log", lambda: log_has(log, b"[3/31] Building"), 120)
    follower.kill()
    follower.wait()
    assert job_json(config, job_id)["state"] == "running"
    job = wait_state(config, job_id, ["succeeded", "failed", "lost"])
    assert job["state"] == "succeeded", job
    assert job["exit_code"] == 0 and job["digest"]
    assert log_has(log, b"[31/31] Linking")


def test_build_outlives_sighup_of_the_pty_that_launched_it(config: Path) -> None:
    import pty

    args = " ".join(["demo-base", "--arch", ARCH, "--node", NODE, *quick(steps=30, sleep=0.1)])
    script = (
        f"id=$({' '.join(rocmtui_argv(config, 'bake'))} {args}) && echo JOB=$id && "
        f"exec {' '.join(rocmtui_argv(config, 'logs', '-f'))} $id"
    )
    master, slave = pty.openpty()
    # a session of its own with the pty as controlling terminal, like an ssh login shell
    shell = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
            "os.execvp(sys.argv[1], sys.argv[1:])",
            "sh",
            "-c",
            script,
        ],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    seen = b""
    try:

        def job_announced() -> str | None:
            nonlocal seen
            seen += os.read(master, 65536)
            for line in seen.splitlines():
                if line.startswith(b"JOB="):
                    return line[4:].decode().strip()
            return None

        job_id = wait_for("the job id on the pty", job_announced, 60, poll=0)
        log = Path(job_json(config, job_id)["job_dir"]) / "log"
        wait_for("compile lines", lambda: log_has(log, b"[3/31] Building"), 120)
        os.killpg(shell.pid, signal.SIGHUP)  # the terminal's session hangs up ...
    finally:
        os.close(master)  # ... and the pty goes away, as on an ssh drop
        shell.wait(timeout=30)
    job = wait_state(config, job_id, ["succeeded", "failed", "lost"])
    assert job["state"] == "succeeded", job


def test_two_launches_at_once_exactly_one_starts(config: Path) -> None:
    # both processes import first and say so, then race for the slot when told to go
    racer = (
        "import sys; from rocmtui.cli.main import main; import rocmtui.core.jobs.launch, "
        "rocmtui.core.bake.file; print('ready', flush=True); sys.stdin.readline(); "
        "sys.exit(main(sys.argv[1:]))"
    )
    args = ["--config", str(config), "bake", "demo-base", "--arch", ARCH, "--node", NODE]
    args += quick(steps=200, sleep=0.1)  # the winner still builds when a slow loser arrives
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", racer, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    results = [(p.wait(60), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 1], results
    winner = next(out.strip() for code, out, _ in results if code == 0)
    refusal = next(err for code, _, err in results if code == 1)
    assert "already building" in refusal and winner in refusal and "root" in refusal
    assert [j.id for j in list_jobs(load_config(config))] == [winner]


def test_a_group_and_its_member_do_not_build_the_same_image_at_once(config: Path) -> None:
    group = bake(config, "all", "--arch", ARCH, "--node", NODE, *quick(300, 0.1))
    other = None
    try:
        member = run_cli(config, "bake", "demo-pytorch", "--arch", ARCH, "--node", NODE)
        assert member.returncode == 1, member.stdout
        assert "already building" in member.stderr and group in member.stderr
        assert "pytorch:" in member.stderr and f"-{ARCH}" in member.stderr  # the image named
        # the same target for another arch is another image: it starts
        other = bake(config, "demo-pytorch", "--arch", "gfx950", "--node", NODE, *quick(300, 0.1))
    finally:
        for job_id in (group, other):
            if job_id is not None:
                assert run_cli(config, "cancel", job_id, "--grace", "5").returncode == 0
    assert {j.id for j in list_jobs(load_config(config))} == {group, other}


def test_cancel_mid_build_leaves_no_process(config: Path) -> None:
    job_id = bake(config, "demo-base", "--arch", ARCH, "--node", NODE, *quick(300, 0.1))
    job = started_job(config, job_id)
    log = Path(job["job_dir"]) / "log"
    wait_for("compile lines", lambda: log_has(log, b"[3/301] Building"), 120)
    sid = job["supervisor_pid"]
    members = {pid: proc_stat(pid) for pid in session_pids(sid)}
    assert job["bake_pid"] in members and sid in members
    # docker runs buildx as a child: the job's tree holds more than bake alone
    assert any(st and st.comm == "docker-buildx" for st in members.values()), members
    out = run_cli(config, "cancel", job_id[-4:], "--grace", "5")
    assert out.returncode == 0, out.stderr
    assert "cancelled" in out.stdout
    assert session_pids(sid) == []
    for pid, st in members.items():
        assert st is not None and not is_same_process(pid, st.start), st
    job = job_json(config, job_id)
    assert job["state"] == "cancelled" and job["ended_at"]
    again = run_cli(config, "cancel", job_id)
    assert again.returncode == 1 and "already ended" in again.stderr


# A stand-in for a bake client that does not stop on SIGTERM (a hung docker CLI): the real
# docker runs the real build under it, with SIGTERM ignored (inherited), and once it is done
# the wrapper itself stays, still ignoring SIGTERM. `--print` runs (the launch's resolve) pass
# straight through.
TERM_IGNORING_DOCKER = """#!/bin/sh
case "$*" in *--print*) exec {real} "$@";; esac
trap '' TERM
{real} "$@"
while :; do sleep 1; done
"""


def test_cancel_kills_a_build_that_ignores_sigterm_after_the_grace(
    config: Path, tmp_path: Path
) -> None:
    """Cancel is SIGTERM to the job's group, then SIGKILL to what is left of bake after the
    grace period (HAZARDS.md): here bake ignores SIGTERM, so only the SIGKILL ends it."""
    real = shutil.which("docker")
    assert real is not None
    bindir = tmp_path / "term-ignoring-bin"
    bindir.mkdir()
    (bindir / "docker").write_text(TERM_IGNORING_DOCKER.format(real=real))
    (bindir / "docker").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    job_id = bake(config, "demo-base", "--arch", ARCH, "--node", NODE, *quick(300, 0.1), env=env)
    job = started_job(config, job_id)
    log = Path(job["job_dir"]) / "log"
    wait_for("compile lines", lambda: log_has(log, b"[3/301] Building"), 120)
    assert os.readlink(f"/proc/{job['bake_pid']}/exe").endswith("sh")  # bake is the wrapper
    sid = job["supervisor_pid"]
    started = time.monotonic()
    out = run_cli(config, "cancel", job_id, "--grace", "3")
    took = time.monotonic() - started
    assert out.returncode == 0 and "cancelled" in out.stdout, out.stderr
    assert took >= 3  # SIGTERM changed nothing: the cancel waited out the grace
    job = job_json(config, job_id)
    assert job["state"] == "cancelled" and job["message"].startswith("cancelled"), job
    assert job["exit_code"] == 128 + signal.SIGKILL  # bake ended by the SIGKILL, not by TERM
    assert session_pids(sid) == []


def test_supervisor_killed_is_lost_never_running(config: Path) -> None:
    job_id = bake(config, "demo-base", "--arch", ARCH, "--node", NODE, *quick(300, 0.1))
    job = started_job(config, job_id)
    log = Path(job["job_dir"]) / "log"
    wait_for("compile lines", lambda: log_has(log, b"[3/301] Building"), 120)
    assert is_same_process(job["supervisor_pid"], job["supervisor_start"])
    os.kill(job["supervisor_pid"], signal.SIGKILL)
    lost = wait_state(config, job_id, ["lost"], timeout=30)
    assert lost["exit_code"] is None and lost["message"]
    # bake goes with its supervisor (nobody would record it)
    wait_for("bake to go", lambda: not session_pids(job["supervisor_pid"]), 30)
    assert job_json(config, job_id)["state"] == "lost"


def test_silent_build_is_stalled_then_running_again(tmp_path: Path, fleet: Any) -> None:
    require("docker-buildx")
    config = write_config(tmp_path, fleet, stall_after=2.0)
    job_id = bake(
        config,
        "demo-base",
        "--arch",
        ARCH,
        "--node",
        "snoc-strix",  # the local node: CPU evidence too
        *quick(steps=10, sleep=0.05),
        "--set",
        "DEMO_SILENT_SECONDS=20",  # room for status and jobs, each reading vitals twice
    )
    try:
        stalled = wait_state(config, job_id, ["stalled"], timeout=120)
        status = run_cli(config, "status", "--json")
        assert status.returncode == 1, status.stderr  # the fleet is not healthy while stalled
        report = json.loads(status.stdout)
        assert any(job_id in problem for problem in report["problems"]), report["problems"]
        # the verdict of its node's evidence first: asleep, the engine's tree idle
        evidence = stalled["evidence"]
        assert stalled["verdict"] == "idle" and evidence.startswith(stalled["verdict_line"])
        assert "CPU" in evidence, evidence
        table = run_cli(config, "jobs")
        assert "stalled" in table.stdout and "idle: " in table.stdout, table.stdout
        store = JobStore(load_config(config))
        from rocmtui.core.jobs.control import stalled_jobs

        assert [j.id for j in stalled_jobs(store, load_config(config))] == [job_id]
        wait_state(config, job_id, ["running", "succeeded"], timeout=60)
        done = wait_state(config, job_id, ["succeeded", "failed", "lost"], timeout=120)
        assert done["state"] == "succeeded"
        assert stalled_jobs(store, load_config(config)) == []
    finally:
        loaded = load_config(config)
        for job in list_jobs(loaded):
            if job.ended_at is None:
                cancel_job(loaded, job.id, grace=2.0)


def test_failing_build_is_failed_with_the_step_named(config: Path) -> None:
    job_id = bake(
        config, "demo-base", "--arch", ARCH, "--node", NODE, *quick(), "--set", "DEMO_FAIL=base"
    )
    job = wait_state(config, job_id, ["succeeded", "failed", "lost"])
    assert job["state"] == "failed" and job["exit_code"] not in (0, None)
    assert job["error_step"] and "demo-base" in job["error_step"] and "RUN" in job["error_step"]
    table = run_cli(config, "jobs").stdout
    # worded as the console's jobs panel words it
    assert "failed" in table and f"exit {job['exit_code']} at [demo-base" in table
    follow = run_cli(config, "logs", "-f", job_id)
    assert follow.returncode == 1 and "error: use of undeclared identifier" in follow.stdout


def test_a_node_builds_for_its_own_arch_though_the_bake_file_does_not_list_it(
    config: Path,
) -> None:
    """snoc-strix is gfx1151, in no release list (demo.hcl knows gfx950, gfx1201, gfx1250);
    the console offers a node its own arch, so the launch takes it, on that node only."""
    job_id = bake(config, "demo-base", "--arch", "gfx1151", "--node", "snoc-strix", *quick())
    job = wait_state(config, job_id, ["succeeded", "failed", "lost"])
    assert job["state"] == "succeeded", job
    assert job["node"] == "snoc-strix" and job["arch"] == "gfx1151"
    record = json.loads((Path(job["job_dir"]) / "record.json").read_text())
    assert "GFX_ARCH=gfx1151" in record["command"]
    elsewhere = run_cli(config, "bake", "demo-base", "--arch", "gfx1151", "--node", NODE)
    assert elsewhere.returncode == 2
    assert "unknown arch 'gfx1151'" in elsewhere.stderr and "gfx1201, gfx1250" in elsewhere.stderr
    typo = run_cli(config, "bake", "demo-base", "--arch", "gfx1152", "--node", "snoc-strix")
    assert typo.returncode == 2 and "; snoc-strix is gfx1151" in typo.stderr


def test_sigterm_to_the_supervisor_alone_stops_bake_and_is_recorded(config: Path) -> None:
    job_id = bake(config, "demo-base", "--arch", ARCH, "--node", NODE, *quick(300, 0.1))
    job = started_job(config, job_id)
    log = Path(job["job_dir"]) / "log"
    wait_for("compile lines", lambda: log_has(log, b"[3/301] Building"), 120)
    os.kill(job["supervisor_pid"], signal.SIGTERM)  # e.g. a system shutdown, not `cancel`
    done = wait_state(config, job_id, ["cancelled", "failed", "succeeded", "lost"], timeout=60)
    assert done["state"] == "cancelled" and done["message"] == "stopped by a signal", done
    wait_for("the job's processes to go", lambda: not session_pids(job["supervisor_pid"]), 30)
