"""A fleet file with no [[nodes]] (only `bake_file`, say) serves every command that needs no
node; what needs one says so in one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

from rocmtui.console.app import RocmTui
from rocmtui.core.config.fleetfile import load_config
from tests.support.jobs import DEMO_BAKE, run_cli


def bake_file_only(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(
        f"bake_file = {json.dumps(str(DEMO_BAKE))}\nstate_dir = "
        f"{json.dumps(str(tmp_path / 'state'))}\n"
    )
    return path


def test_commands_that_need_no_node_work_without_one(tmp_path: Path) -> None:
    fleet = bake_file_only(tmp_path)
    assert load_config(fleet).nodes == ()
    shown = run_cli(fleet, "vars", "--json")
    assert shown.returncode == 0, shown.stderr
    assert "ROCM_VERSION" in {v["name"] for v in json.loads(shown.stdout)}
    jobs = run_cli(fleet, "jobs", "--json")
    assert jobs.returncode == 0 and json.loads(jobs.stdout) == []
    config = run_cli(fleet, "config")
    assert config.returncode == 0, config.stderr
    status = run_cli(fleet, "status")  # the services only (on loopback: nothing configured)
    assert status.returncode in (0, 1) and "Nodes: none" in status.stdout, status.stderr
    refused = run_cli(fleet, "bake", "demo-base")
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        f"rocmtui bake: no node to build on: {fleet} has no [[nodes]] entry"
    )


async def test_the_bake_dialog_says_there_is_no_node(tmp_path: Path) -> None:
    """No node to choose: the dialog opens and says why nothing can start (it once ended the
    console: a chooser with no choice)."""
    app = RocmTui(load_config(bake_file_only(tmp_path)))  # live: its own monitor child
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("b")  # before the bake file is read: the dialog opens once it is
        said = ""
        for _ in range(300):  # the bake file is read, then the dialog resolves, on threads
            found = app.screen.query("#bake-print")
            said = str(found.first().render()) if found else ""
            if "no node" in said:
                break
            await pilot.pause(0.05)
        assert f"no node to build on: {tmp_path / 'fleet.toml'} has no [[nodes]] entry" in said
