"""Fixtures only the fleet tests use (the top-level conftest gives every kind the fleet and
the isolated environment)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmtui.core.jobs.store import JobStore
from rocmtui.core.jobs.views import record_json
from tests.support.fulldisk import SIZE
from tests.support.jobs import kill_job_leftovers
from tests.support.realparts import require
from tests.support.smalldisk import small_tmpfs


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted at the end (after every process in it is gone)."""
    require("root")
    with small_tmpfs(tmp_path / "small", SIZE) as point:
        try:
            yield point
        finally:
            if (point / "state" / "jobs.sqlite").exists():  # every supervisor ends on SIGTERM
                for record in JobStore(point / "state").list(limit=None):
                    kill_job_leftovers(record_json(record))
