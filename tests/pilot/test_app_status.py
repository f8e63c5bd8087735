"""The console's status line says which bake file it read (or that there is none), warns when
the state disk is nearly full, and counts probe rounds that raised with where to read why;
the console opens on the fleet whatever the bake file does."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from rocmtui.console.app import RocmTui
from rocmtui.console.messages import FleetUpdated
from rocmtui.console.screens.fleet import FleetScreen
from rocmtui.console.widgets.common import StatusLine
from rocmtui.console.widgets.panels import FleetPanel
from rocmtui.core.bake.find import find_bake_file
from rocmtui.core.config.fleetfile import default_config, load_config
from rocmtui.core.debuglog import monitor_log
from tests.support.blackbox import panel, row, until, until_text
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import recorded_app


def status(app: RocmTui) -> str:
    return app.fleet_screen.query_one("#statusbar", StatusLine).render().plain


async def test_failed_rounds_and_a_full_state_disk_are_in_the_status_line() -> None:
    app = recorded_app()
    async with app.run_test(size=(160, 40)) as pilot:
        snap = recorded.fleet()
        local = snap.nodes[0]
        assert local.host is not None
        full = replace(local.host, disk_percent=96.0, disk_free=1 << 30)
        nodes = (replace(local, host=full), *snap.nodes[1:])
        app.fleet_screen.post_message(
            FleetUpdated(replace(snap, nodes=nodes, failed_rounds=2, taken_at=recorded.NOW))
        )
        await pilot.pause()
        line = status(app)
        assert "· demo.hcl ·" in line
        assert "state disk 96% full" in line
        where = monitor_log(app.config)
        assert f"2 probe rounds failed: why in {where}" in line


async def test_a_broken_bake_file_in_the_current_folder_is_named_and_the_console_opens(
    tmp_path: Path,
) -> None:
    (tmp_path / "rocm-bake.hcl").write_text('variable "ROCM_VERSION" {\n  default = \n}\n')
    config = load_config(None, {"XDG_CONFIG_HOME": str(tmp_path / "none")}, tmp_path)
    assert config.bake_file == tmp_path / "rocm-bake.hcl"
    app = RocmTui(replace(config, refresh_seconds=1.0))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        await until(pilot, lambda: screen.all_mounted, "every panel, after the first frame")
        variables = screen.query_one("#variables", FleetPanel)
        await until(pilot, lambda: variables.fault is not None, "the variables panel's fault")
        assert variables.fault is not None
        assert variables.fault.startswith(f"{tmp_path}/rocm-bake.hcl:2: "), variables.fault
        await until(pilot, lambda: screen.data.fleet is not None, "a probe round")
        assert "· rocm-bake.hcl ·" in status(app)
        assert screen.data.fleet is not None and len(screen.data.fleet.nodes) == 1


async def test_no_bake_file_anywhere_is_one_line_and_the_fleet_still_shows(
    tmp_path: Path,
) -> None:
    found = find_bake_file(tmp_path, tmp_path / "no-demo.hcl")
    config = replace(
        default_config(tmp_path),
        bake_file=found.path,
        bake_found_by=found.found_by,
        bake_problem=found.problem,
        refresh_seconds=1.0,
    )
    app = RocmTui(config)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        await until(pilot, lambda: screen.all_mounted, "every panel, after the first frame")
        variables = screen.query_one("#variables", FleetPanel)
        await until(pilot, lambda: variables.fault is not None, "the variables panel's fault")
        assert variables.fault == f"{tmp_path}: {found.problem}"
        await until(pilot, lambda: screen.data.fleet is not None, "a probe round")
        assert "no bake file" in status(app)


async def test_a_folder_of_bake_files_is_named_with_how_many_it_merged(tmp_path: Path) -> None:
    """bake's default files in the current folder, an override and a compose file beside them:
    the status line names the folder, how many of bake's files it merged, and that the compose
    file was found but not read; the variables panel shows the override's value."""
    folder = tmp_path / "checkout"
    folder.mkdir()
    (folder / "docker-bake.hcl").write_text(
        'variable "TAG" {\n  default = "base"\n}\ntarget "demo" {\n  tags = ["x:${TAG}"]\n}\n'
    )
    (folder / "docker-bake.override.hcl").write_text('variable "TAG" {\n  default = "over"\n}\n')
    (folder / "compose.yaml").write_text("services:\n  web:\n    image: nginx\n")
    config = load_config(None, {"XDG_CONFIG_HOME": str(tmp_path / "none")}, folder)
    app = RocmTui(replace(config, refresh_seconds=1.0))
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        await until(pilot, lambda: screen.data.fleet is not None, "a probe round")
        assert "· checkout/ (2 bake files) + compose not read ·" in status(app), status(app)
        shown = await until_text(pilot, r"TAG")
        assert "over" in row(shown, "Variables", r"\bTAG\b"), panel(shown, "Variables")
