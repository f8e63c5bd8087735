"""The privileges a build asks bake for: named before anything starts, refused unless granted,
granted only as the operator says, on today's buildx and on 0.13 (which has no `--allow`).

The bake file here reads its context from `../pytorch`, outside its own folder, as rocm-bake's
would: buildx 0.29 refuses that without `--allow fs.read=../pytorch`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from devfleet import DevFleet
from tests.support.jobs import jobs_json, offline_config, run_cli, wait_state, write_config
from tests.support.privileges import old_buildx_env, project
from tests.support.realparts import require


def test_a_read_outside_the_folder_is_named_and_refused_without_a_grant(tmp_path: Path) -> None:
    require("docker-buildx")
    config = offline_config(tmp_path, project(tmp_path))
    out = run_cli(config, "bake", "outside")
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip() == (
        "rocmtui bake: refused: outside asks bake for privileges not granted: "
        "fs.read=../pytorch (read outside the bake file's folder); grant them with "
        "--allow fs.read=../pytorch"
    )
    assert out.stdout == "" and jobs_json(config) == []
    answer = run_cli(config, "bake", "outside", "--json")
    assert answer.returncode == 1
    data = json.loads(answer.stdout)
    assert data["started"] is False and data["privileges"] == ["fs.read=../pytorch"]
    # a grant of some other folder grants nothing here
    other = run_cli(config, "bake", "outside", "--allow", "fs.read=../elsewhere")
    assert other.returncode == 1 and "fs.read=../pytorch" in other.stderr
    # read-only refuses before any grant counts
    ro = run_cli(config, "--read-only", "bake", "outside", "--allow", "fs.read=../pytorch")
    assert ro.returncode == 1 and "refused: read-only" in ro.stderr, ro.stderr
    bad = run_cli(config, "bake", "outside", "--allow", "fs.everything")
    assert bad.returncode == 2 and "unknown privilege 'fs.everything'" in bad.stderr
    assert jobs_json(config) == []


def test_network_host_and_security_insecure_are_named_and_insecure_asks_louder(
    tmp_path: Path,
) -> None:
    require("docker-buildx")
    config = offline_config(tmp_path, project(tmp_path))
    out = run_cli(config, "bake", "host-net")
    assert out.returncode == 1
    assert (
        "network.host (build containers on the node's host network); security.insecure "
        "(privileged build containers that can change the node); grant them with "
        "--allow network.host --allow security.insecure and --yes"
    ) in out.stderr, out.stderr
    granted = ("--allow", "network.host", "--allow", "security.insecure")
    out = run_cli(config, "bake", "host-net", *granted)
    assert out.returncode == 1
    assert out.stderr.strip() == (
        "rocmtui bake: refused: host-net asks for privileges that change the node: "
        "security.insecure (privileged build containers that can change the node); granted, "
        "but confirm with --yes"
    )
    assert jobs_json(config) == []


@pytest.mark.fleet
def test_bake_itself_refuses_the_read_rocmtui_names(tmp_path: Path, fleet: DevFleet) -> None:
    """What rocmtui names is what today's bake asks for: bake run by hand, no terminal, no
    grant, fails with the same `--allow` word."""
    require("docker-buildx")
    bake = project(tmp_path)
    env = {**os.environ, "DOCKER_HOST": fleet.local_engine.docker_host}
    out = subprocess.run(
        ["docker", "buildx", "bake", "-f", bake.name, "--progress=plain", "--", "outside"],
        cwd=bake.parent,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0
    assert "additional privileges requested" in out.stderr
    assert "--allow=fs.read=../pytorch" in out.stderr, out.stderr


@pytest.mark.fleet
@pytest.mark.parametrize("node", ["snoc-strix", "snoc-think"])  # local, and over ssh
def test_granted_it_builds_and_the_job_keeps_its_grant(
    tmp_path: Path, fleet: DevFleet, node: str
) -> None:
    require("docker-buildx")
    config = write_config(tmp_path, fleet, bake_file=project(tmp_path))
    nonce = f"NONCE={os.getpid()}-{node}"
    grant = ("--allow", "fs.read=../pytorch")
    out = run_cli(config, "bake", "outside", "--node", node, "--set", nonce, *grant)
    assert out.returncode == 0, out.stderr
    assert "rocmtui bake: granted: fs.read=../pytorch" in out.stderr
    job = wait_state(config, out.stdout.strip(), ["succeeded", "failed", "lost"], timeout=180)
    assert job["state"] == "succeeded", job
    assert job["allowed"] == ["fs.read=../pytorch"]
    assert "--allow=fs.read=../pytorch" in job["command"]
    assert b"read from outside the bake folder" in Path(job["job_dir"], "log").read_bytes()


@pytest.mark.fleet
def test_buildx_0_13_is_never_passed_allow(tmp_path: Path, fleet: DevFleet) -> None:
    """buildx 0.13.1 has no `bake --allow` and checks no folder: the same build asks for
    nothing and starts; a grant given anyway is kept in the record, not passed to bake."""
    require("docker-buildx")
    env = old_buildx_env(tmp_path)
    config = write_config(tmp_path, fleet, bake_file=project(tmp_path))
    nonce = ("--set", f"NONCE={os.getpid()}-old")
    out = run_cli(config, "bake", "outside", "--node", "snoc-strix", *nonce, env=env)
    assert out.returncode == 0, out.stderr
    job = wait_state(config, out.stdout.strip(), ["succeeded", "failed", "lost"], timeout=180)
    assert job["state"] == "succeeded", job
    assert not any(word.startswith("--allow") for word in job["command"])
    out = run_cli(
        config, "bake", "outside", "--node", "snoc-think", "--set", f"NONCE={os.getpid()}-o2",
        "--allow", "fs.read=../pytorch", env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    job = wait_state(config, out.stdout.strip(), ["succeeded", "failed", "lost"], timeout=180)
    assert job["state"] == "succeeded", job
    assert job["allowed"] == ["fs.read=../pytorch"]
    assert not any(word.startswith("--allow") for word in job["command"])
