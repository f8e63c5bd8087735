"""A bake file with no GFX_ARCH variable builds as written, for no particular arch, and says
so; asking for an arch it cannot set is refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from devfleet import DevFleet
from tests.support.jobs import run_cli, wait_state, write_config
from tests.support.realparts import require

pytestmark = [pytest.mark.fleet]

PLAIN = """
target "plain" {
  context = "."
  dockerfile-inline = "FROM rocm-base:local\\nRUN echo built without an arch"
}
"""


def test_no_gfx_arch_builds_with_the_nodes_own_or_none(tmp_path: Path, fleet: DevFleet) -> None:
    require("docker-buildx")
    bake = tmp_path / "plain.hcl"
    bake.write_text(PLAIN)
    config = write_config(tmp_path, fleet, bake_file=bake)
    started = run_cli(config, "bake", "plain", "--node", "snoc-think")
    assert started.returncode == 0, started.stderr
    assert (
        "plain.hcl declares no GFX_ARCH: built as written, for no particular arch; "
        "recorded as snoc-think's own gfx1201"
    ) in started.stderr
    assert "unknown arch" not in started.stderr
    job = wait_state(config, started.stdout.strip(), ["succeeded", "failed"], timeout=120)
    assert job["state"] == "succeeded", job
    assert job["arch"] == "gfx1201"

    refused = run_cli(config, "bake", "plain", "--node", "snoc-think", "--arch", "gfx950")
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "rocmtui bake: --arch gfx950: plain.hcl declares no GFX_ARCH variable, so no arch can "
        "be chosen; leave --arch out"
    )
