"""The matrix and the closed loop on the real fleet: real builds push to the real registry, and
`rocmtui matrix` / `rocmtui jobs` say what the registry holds.

- two demo pushes for two arches (one on a netns node): `published`, with the digest the job
  recorded equal to the registry's, `✓ in registry` for each job, its sccache statistics;
- a pin changed in the environment: those cells turn `stale`, naming the pin;
- the same tag pushed by hand (`docker buildx bake --push` outside rocmtui): `moved`;
- a group job: each of its targets with its own digest.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from devfleet import DevFleet
from tests.support.jobs import DEMO_BAKE, bake, job_json, run_cli, wait_for, wait_state

pytestmark = [pytest.mark.fleet, pytest.mark.slow]


def nonce() -> str:
    return f"{os.getpid()}-{time.time_ns()}"


def login(host: str) -> None:
    """A docker config entry for the registry (its presence is all a launch checks)."""
    path = Path(os.environ["DOCKER_CONFIG"]) / "config.json"
    path.write_text(json.dumps({"auths": {host: {}}}))


def matrix(config: Path, **env: str) -> dict[str, Any]:
    out = run_cli(config, "matrix", "--json", env={**os.environ, **env})
    assert out.returncode in (0, 1), out.stderr
    data = json.loads(out.stdout)
    assert isinstance(data, dict)
    return data


def cell(data: dict[str, Any], row: str, arch: str) -> dict[str, Any]:
    found = next(r for r in data["rows"] if r["name"] == row)
    return next(c for c in found["cells"] if c["arch"] == arch)


def head_digest(fleet: DevFleet, tag: str) -> str:
    import urllib.request

    from rocmtui.core.registry.media import ACCEPT_ALL

    ref = tag.split("/", 1)[1]
    repo, _, name = ref.rpartition(":")
    assert fleet.registry is not None
    request = urllib.request.Request(
        f"{fleet.registry.url}/v2/{repo}/manifests/{name}",
        method="HEAD",
        headers={"Accept": ACCEPT_ALL},
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        return str(resp.headers["Docker-Content-Digest"])


def job_with_registry(config: Path, job_id: str, *also: str) -> dict[str, Any] | None:
    """The job once the supervisor has written the registry's word on its push (and `also`,
    such as the cache statistics read after it): it does so just after recording the outcome."""
    job = job_json(config, job_id)
    return job if all(job.get(key) for key in ("registry", *also)) else None


def test_published_stale_moved_on_real_pushes(config: Path, fleet: DevFleet) -> None:
    assert fleet.registry is not None
    host = fleet.registry.address
    login(host)
    quick = ["--set", "DEMO_STEPS=5", "--set", "DEMO_SLEEP=0", "--set", f"DEMO_NONCE={nonce()}"]
    ids = {
        "gfx950": bake(config, "demo-pytorch-push", "--arch", "gfx950", "--yes", *quick),
        "gfx1201": bake(
            config,
            "demo-pytorch-push",
            "--arch",
            "gfx1201",
            "--node",
            "snoc-think",
            "--yes",
            *quick,
        ),
    }
    for job_id in ids.values():
        assert wait_state(config, job_id, ["succeeded", "failed", "lost"])["state"] == "succeeded"
    # the supervisor asks the registry once the outcome is recorded: its word comes just after
    jobs = {
        arch: wait_for(
            "the registry's word", lambda j=job_id: job_with_registry(config, j, "sccache"), 30
        )
        for arch, job_id in ids.items()
    }
    for arch, job in jobs.items():
        assert job["state"] == "succeeded", job
        # the closed loop: the supervisor asked the registry once bake ended
        assert job["registry"]["state"] == "in registry", job["registry"]
        (image,) = job["images"]
        assert image["tags"] == [f"{host}/rocm-bake/demo-pytorch:rocm7.2.2-{arch}"]
        assert image["digest"] == job["digest"] == head_digest(fleet, image["tags"][0])
        # the demo's stages print sccache statistics in 0.4's format: 3 of 5 hits each (75%)
        assert job["sccache"]["hits"] >= 3 and job["sccache"]["backend"] == "Local disk"
        assert "registry: ✓ in registry" in Path(job["log"]).read_text()
    listing = run_cli(config, "jobs").stdout
    assert "✓ in registry" in listing and "sccache" in listing

    now = matrix(config)
    assert now["registry"] == fleet.registry.url
    assert {"gfx950", "gfx1201", "gfx1250"} <= set(now["arches"])
    for arch, job in jobs.items():
        got = cell(now, "demo-pytorch", arch)
        assert got["verdict"] == "published", got
        assert got["registry"]["digest"] == job["digest"]
        assert got["job"]["id"] == job["id"] and got["pushed"]["digest"] == job["digest"]
        assert got["registry"]["labels"]["rocm-bake.pin.PYTORCH_VERSION"] == "2.15.0"
        assert got["registry"]["size"] > 0 and got["registry"]["created"]
        assert got["job"]["cache"]["hits"] >= 3
        assert got["push_target"] == "demo-pytorch-push"
        assert set(got["targets"]) == {"demo-pytorch", "demo-pytorch-push"}

    # a pin changed in the environment: the images record other pins than those in effect now
    stale = matrix(config, PYTORCH_VERSION="2.16.0")
    for arch in jobs:
        got = cell(stale, "demo-pytorch", arch)
        assert got["verdict"] == "stale", got
        assert got["pins"] == [{"name": "PYTORCH_VERSION", "image": "2.15.0", "now": "2.16.0"}]
    # demo-base's pins do not hold PyTorch's: a new PyTorch pin leaves it alone
    assert all(
        c["verdict"] != "stale"
        for r in stale["rows"]
        if r["name"] == "demo-base"
        for c in r["cells"]
    )

    # the same tag pushed from outside rocmtui: the registry no longer holds what the job pushed
    engine = fleet.local_engine
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ["HOME"],
        "DOCKER_CONFIG": os.environ["DOCKER_CONFIG"],
        "DOCKER_HOST": engine.docker_host,
        "REGISTRY": host,
        "GFX_ARCH": "gfx950",
        "DEMO_STEPS": "3",
        "DEMO_SLEEP": "0",
        "DEMO_NONCE": f"by-hand-{nonce()}",
    }
    pushed = subprocess.run(
        [
            "docker",
            "buildx",
            "bake",
            "-f",
            str(DEMO_BAKE),
            "--push",
            "--progress=plain",
            "--",
            "demo-pytorch-push",
        ],
        cwd=DEMO_BAKE.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert pushed.returncode == 0, pushed.stderr[-2000:]
    moved = matrix(config)
    got = cell(moved, "demo-pytorch", "gfx950")
    assert got["verdict"] == "moved", got
    assert got["registry"]["digest"] != jobs["gfx950"]["digest"]
    assert jobs["gfx950"]["digest"][:19] in got["reason"]
    assert cell(moved, "demo-pytorch", "gfx1201")["verdict"] == "published"


def test_a_group_job_shows_each_target_with_its_own_digest(config: Path, fleet: DevFleet) -> None:
    assert fleet.registry is not None
    login(fleet.registry.address)
    quick = ["--set", "DEMO_STEPS=3", "--set", "DEMO_SLEEP=0", "--set", f"DEMO_NONCE={nonce()}"]
    job_id = bake(config, "push", "--arch", "gfx1250", "--yes", *quick)
    job = wait_state(config, job_id, ["succeeded", "failed", "lost"])
    assert job["state"] == "succeeded", job
    images = {i["target"]: i for i in job["images"]}
    assert set(images) == {"demo-pytorch-push", "demo-vllm-push"}
    digests = {i["digest"] for i in images.values()}
    assert len(digests) == 2 and all(d.startswith("sha256:") for d in digests)
    for image in images.values():
        assert image["digest"] == head_digest(fleet, image["tags"][0])
    checked = wait_for("the registry's word", lambda: job_with_registry(config, job_id), 30)
    assert [i["state"] for i in checked["registry"]["images"]] == ["in registry", "in registry"]
    text = run_cli(config, "jobs").stdout
    for name, image in images.items():
        assert f"    {name}  {image['digest']}  ✓ in registry" in text
    data = matrix(config)
    for row in ("demo-pytorch", "demo-vllm"):
        got = cell(data, row, "gfx1250")
        assert got["verdict"] == "published" and got["job"]["id"] == job_id
        assert got["registry"]["digest"] == images[f"{row}-push"]["digest"]
