"""End to end: from the published screen of the real console (tmux) on the real fleet, rebuild
two cells — two demo targets for two arches, one of them on a netns node — and see them
published with the digest the job recorded, which is the registry's. The fleet file is the dev
fleet's own: its [variables] make the console's pushes land in the dev fleet's registry.
"""

from __future__ import annotations

import json
import re
import urllib.request
import uuid
from pathlib import Path

import pytest

from devfleet import DevFleet
from rocmtui.core.registry.media import ACCEPT_ALL
from tests.support.terminal import (
    Terminal,
    cli,
    console_env,
    fleet_file,
    login_entry,
    registry_host,
)

pytestmark = [pytest.mark.fleet, pytest.mark.slow]


def registry_digest(fleet: DevFleet, repository: str, tag: str) -> str:
    assert fleet.registry is not None
    request = urllib.request.Request(
        f"{fleet.registry.url}/v2/{repository}/manifests/{tag}",
        method="HEAD",
        headers={"Accept": ACCEPT_ALL},
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        return str(resp.headers["Docker-Content-Digest"])


def rebuild_cell(term: Terminal, target: str, arch: str, node: str) -> str:
    """r on the cell under the cursor: the dialog opens for the cell's pushing name, arch and
    preferred node; Enter, then y for the push. Returns the started job's id."""
    term.keys("r")
    term.wait_text(rf"target {target} .*arch {arch} .*node {node}", 30)
    term.keys("Enter")
    term.wait_text(rf"Push {target} for {arch}", 20)
    term.keys("y")
    shown = term.wait_text(rf"✓ succeeded +{target} {arch} on {node} +job (\S+)", 240)
    found = re.search(rf"✓ succeeded +{target} {arch} on {node} +job (\S+)", shown)
    assert found is not None
    # the log pane's header: the closed loop, asked by the supervisor once the outcome is
    # recorded, so it may come a round after the pane says succeeded
    term.wait_text("✓ in registry", 30)
    term.keys("Escape")  # back to the published screen
    return found.group(1)


def test_two_cells_rebuilt_from_the_console_are_published(
    fleet: DevFleet,
    terminal: Terminal,
    tmp_path: Path,
) -> None:
    config = fleet_file(fleet, tmp_path, refresh_seconds=1.0)
    config.write_text(config.read_text() + "\n[matrix]\nrefresh_seconds = 600\n")
    env = console_env(tmp_path, DEMO_NONCE=uuid.uuid4().hex[:8], DEMO_STEPS="5", DEMO_SLEEP="0")
    login_entry(env, registry_host(fleet))
    terminal.width, terminal.height = 140, 45
    terminal.start(env, config)
    terminal.wait_text(r"✓ ok +snoc-strix", 60)
    terminal.keys("m")
    terminal.wait_text(r"demo-vllm +\S+ \S+", 60)  # the first answer is on screen
    terminal.keys("Down")  # demo-pytorch for gfx950 (the local node: no node has gfx950)
    first = rebuild_cell(terminal, "demo-pytorch-push", "gfx950", "snoc-strix")
    terminal.wait_text(
        rf"demo-pytorch for gfx950 +✓ published[\s\S]*last job +{first} succeeded", 60
    )
    terminal.keys("Down", "Right")  # demo-vllm for gfx1201: snoc-think has that GPU
    second = rebuild_cell(terminal, "demo-vllm-push", "gfx1201", "snoc-think")
    shown = terminal.wait_text(
        rf"demo-vllm for gfx1201 +✓ published[\s\S]*last job +{second} succeeded", 60
    )
    assert re.search(r"sccache +\d+/\d+ hits \(\d+%\)", shown)  # the last job's cache statistics

    # what the screen said is what a script reads, and what the registry holds
    jobs = {j["id"]: j for j in json.loads(cli(env, config, "jobs", "--json"))}
    matrix = json.loads(cli_matrix(env, config))
    for job_id, row, arch in ((first, "demo-pytorch", "gfx950"), (second, "demo-vllm", "gfx1201")):
        job = jobs[job_id]
        assert job["registry"]["state"] == "in registry"
        cell = next(
            c for r in matrix["rows"] if r["name"] == row for c in r["cells"] if c["arch"] == arch
        )
        assert cell["verdict"] == "published" and cell["job"]["id"] == job_id
        assert cell["tag"].startswith(registry_host(fleet) + "/")  # the dev fleet's registry
        repository, tag = cell["tag"].split("/", 1)[1].rsplit(":", 1)
        assert (
            cell["registry"]["digest"] == job["digest"] == registry_digest(fleet, repository, tag)
        )


def cli_matrix(env: dict[str, str], config: Path) -> str:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "rocmtui", "matrix", "--json", "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode in (0, 1), out.stderr
    return out.stdout
