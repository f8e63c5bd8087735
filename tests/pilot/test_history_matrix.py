"""Regressions marked on the matrix (issue 29): `rocmtui matrix` reads the job store's build
history beside the registry, and the published screen marks the cell and says why."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from rocmtui.console.screens.published import PublishedScreen
from rocmtui.core.costbook.book import CostBook
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.matrix.views import read_matrix
from tests.support.blackbox import until_text
from tests.support.history import recorded_rows
from tests.support.jobs import DEMO_BAKE, run_cli
from tests.support.realparts import require
from tests.support.snapshots import published as recorded_published
from tests.support.snapshots.harness import feed, recorded_app

SAID = "snoc-think: warm took 4h18m, usually 2h06m"


def test_the_matrix_names_a_regressed_cell(tmp_path: Path) -> None:
    require("docker-buildx")
    state = tmp_path / "state"
    rows = [replace(r, target=f"demo-{r.target}") for r in recorded_rows(240, jump_last=True)]
    CostBook(JobStore(state), retention_days=3650).add(rows)
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(
        f'bake_file = "{DEMO_BAKE}"\nstate_dir = "{state}"\nhistory_retention_days = 3650\n'
        '[registry]\nurl = "http://127.0.0.1:9"\n[matrix]\ndeadline_seconds = 2\n'
    )
    done = run_cli(fleet, "matrix", "--json")
    assert done.returncode == 1, done.stderr  # the registry is not there: not all published
    matrix = read_matrix(json.loads(done.stdout))
    marked = {
        (row.name, cell.arch): cell.regressions
        for row in matrix.rows
        for cell in row.cells
        if cell.regressions
    }
    assert marked == {("demo-pytorch", "gfx1201"): (SAID,)}, marked
    text = run_cli(fleet, "matrix").stdout
    assert f"demo-pytorch gfx1201: ! {SAID}" in text


async def test_the_published_grid_marks_the_cell_and_its_detail_says_why() -> None:
    app = recorded_app()
    async with app.run_test(size=(140, 45)) as pilot:
        await feed(app, pilot)
        await pilot.press("m")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PublishedScreen)
        shown = recorded_published.published()
        first = shown.matrix.rows[0]
        cell = replace(first.cells[0], regressions=(SAID,))
        rows = (replace(first, cells=(cell, *first.cells[1:])), *shown.matrix.rows[1:])
        screen.show(replace(shown, matrix=replace(shown.matrix, rows=rows)))
        await until_text(pilot, r"published !")
        await pilot.press("enter")  # the cell's whole detail
        await until_text(pilot, f"slower  ! {SAID}")


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
