"""bake/demo.hcl really builds on the real local fleet: ROCm-like compile output, the knobs that
make it fail or go silent, and a push of `${REGISTRY}/...` tags to the fleet's registry."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import urllib.request
import uuid
from pathlib import Path

import pytest

from devfleet import DevFleet, EngineHandle
from rocmtui.core.bake.file import load_bake
from rocmtui.core.bake.resolve import bake_environment, bake_workdir
from tests.support.realparts import require

DEMO = Path(__file__).resolve().parents[2] / "bake" / "demo.hcl"
BUILD_TIMEOUT = 280.0  # a hard cap so a wedged engine fails the test instead of hanging it

pytestmark = [pytest.mark.fleet, pytest.mark.slow]


def build(engine: EngineHandle, target: str, tmp_path: Path, **knobs: str) -> tuple[int, str, Path]:
    """`docker buildx bake -f demo.hcl --progress=plain -- TARGET` on `engine`, as rocmtui
    launches it (scrubbed environment, overrides by name, the bake file's directory)."""
    require("docker-buildx")
    bake = load_bake(DEMO)
    overrides = {
        "IMAGE_PREFIX": f"t{uuid.uuid4().hex[:10]}",  # tags never collide with other runs
        "DEMO_NONCE": uuid.uuid4().hex,  # BuildKit must really run the steps
        "DEMO_SLEEP": "0.01",
        **knobs,
        **engine.env(),
    }
    env = bake_environment(os.environ, overrides, bake_variables=bake.variables)
    metadata = tmp_path / f"{target}.metadata.json"
    argv = ["docker", "buildx", "bake", "-f", str(DEMO), "--progress=plain"]
    argv += ["--metadata-file", str(metadata), "--", target]
    proc = subprocess.run(
        argv,
        cwd=bake_workdir(DEMO),
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
    )
    return proc.returncode, proc.stdout + proc.stderr, metadata


def test_demo_prints_a_rocm_compile(fleet: DevFleet, tmp_path: Path) -> None:
    code, log, _ = build(fleet.local_engine, "demo-vllm", tmp_path, DEMO_STEPS="12")
    assert code == 0, log[-2000:]
    for stage in ("pytorch", "vllm", "base"):
        assert f"-- Building {stage} " in log
    assert re.search(r"^#\d+ [\d.]+ \[1/13\] Building HIP object caffe2/CMakeFiles/", log, re.M)
    assert re.search(r"\[13/13\] Linking HIP shared library lib/libvllm_hip.so", log)
    hipcc = [ln for ln in log.splitlines() if "/opt/rocm/llvm/bin/clang++ " in ln]
    assert hipcc and min(len(ln) for ln in hipcc) > 2000  # several KB, like the real ones
    assert "--offload-arch=gfx950" in hipcc[0]
    assert "warning: loop not unrolled" in log


def test_demo_fail_at_a_named_step(fleet: DevFleet, tmp_path: Path) -> None:
    code, log, _ = build(
        fleet.local_engine, "demo-vllm", tmp_path, DEMO_STEPS="8", DEMO_FAIL="pytorch:4"
    )
    assert code != 0
    assert "FAILED: caffe2/CMakeFiles/torch_hip.dir/" in log
    assert "error: use of undeclared identifier" in log
    assert "ninja: build stopped: subcommand failed." in log
    assert "[5/9] Building HIP object caffe2" not in log  # it stopped there
    assert "-- Building vllm " not in log  # and nothing after it ran


def test_demo_goes_silent(fleet: DevFleet, tmp_path: Path) -> None:
    """DEMO_SILENT_SECONDS: BuildKit's own timestamps show the gap halfway through."""
    code, log, _ = build(
        fleet.local_engine, "demo-base", tmp_path, DEMO_STEPS="6", DEMO_SILENT_SECONDS="3"
    )
    assert code == 0, log[-2000:]
    stamps = [
        float(m.group(1)) for m in re.finditer(r"^#\d+ ([\d.]+) \[\d+/7\] ", log, re.MULTILINE)
    ]
    assert len(stamps) == 7
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    assert max(gaps) >= 3.0
    assert gaps.index(max(gaps)) == 2  # after [3/7]: halfway


def test_demo_push_from_a_namespaced_node(fleet: DevFleet, tmp_path: Path) -> None:
    """The pushing variant pushes `${REGISTRY}/...` tags: REGISTRY overridden by name to the
    fleet's registry, built for gfx1201 on a node in its own network namespace."""
    assert fleet.registry is not None
    engine = fleet.netns_engines[0]
    prefix = f"t{uuid.uuid4().hex[:10]}"
    code, log, metadata = build(
        engine,
        "demo-pytorch-push",
        tmp_path,
        DEMO_STEPS="4",
        GFX_ARCH="gfx1201",
        IMAGE_PREFIX=prefix,
        REGISTRY=fleet.registry.address,
    )
    assert code == 0, log[-2000:]
    digest = json.loads(metadata.read_text())["demo-pytorch-push"]["containerimage.digest"]
    request = urllib.request.Request(
        f"{fleet.registry.url}/v2/{prefix}/demo-pytorch/manifests/rocm7.2.2-gfx1201",
        method="HEAD",
        headers={
            "Accept": "application/vnd.docker.distribution.manifest.v2+json, "
            "application/vnd.oci.image.manifest.v1+json, "
            "application/vnd.oci.image.index.v1+json"
        },
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        assert reply.status == 200
        assert reply.headers["Docker-Content-Digest"] == digest
