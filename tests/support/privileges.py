"""A project whose bake file reads outside its own folder (what rocm-bake's does, and what
buildx 0.29 refuses without `--allow fs.read=...`), and buildx 0.13.1 as `docker buildx`: the
privilege tests' shared parts, for the CLI's and the console's tests alike."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

OLD_BUILDX = Path("/usr/local/lib/rocmtui-engines/buildx-0.13.1/docker-buildx")

OUTSIDE = """
variable "GFX_ARCH" {
  default = "gfx1201"
}
target "outside" {
  context = "../pytorch"
  args = { GFX_ARCH = GFX_ARCH, NONCE = NONCE }
}
variable "NONCE" {
  default = "0"
}
target "host-net" {
  context = "."
  dockerfile-inline = "FROM rocm-base:local\\nRUN true"
  network = "host"
  entitlements = ["security.insecure"]
}
"""

DOCKERFILE = "FROM rocm-base:local\nARG NONCE\nCOPY read-me /read-me\nRUN cat /read-me\n"


def project(tmp_path: Path) -> Path:
    """`tmp/proj/outside.hcl` whose target's context is `tmp/pytorch`: one level up."""
    (tmp_path / "pytorch").mkdir()
    (tmp_path / "pytorch" / "Dockerfile").write_text(DOCKERFILE)
    (tmp_path / "pytorch" / "read-me").write_text("read from outside the bake folder\n")
    (tmp_path / "proj").mkdir()
    bake = tmp_path / "proj" / "outside.hcl"
    bake.write_text(OUTSIDE)
    return bake


def old_buildx_env(tmp_path: Path) -> dict[str, str]:
    """This test's environment with buildx 0.13.1 as `docker buildx` (its own DOCKER_CONFIG:
    the docker CLI looks there for plugins first)."""
    if not OLD_BUILDX.exists():
        if os.environ.get("ROCMTUI_REQUIRE_REAL") == "1":
            pytest.fail(f"{OLD_BUILDX} missing (.ci/install-system keeps it)")
        pytest.skip(f"{OLD_BUILDX} missing")
    config = tmp_path / "old-docker"
    (config / "cli-plugins").mkdir(parents=True)
    (config / "cli-plugins" / "docker-buildx").symlink_to(OLD_BUILDX)
    here = Path(os.environ.get("DOCKER_CONFIG", "")) / "config.json"
    if here.is_file():
        (config / "config.json").write_text(here.read_text())
    return {**os.environ, "DOCKER_CONFIG": str(config)}
