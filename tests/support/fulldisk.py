"""A build's state folder on a full disk, as the full-disk tests read it: the tmpfs's size, the
fleet file whose state lives on it, the job as `jobs --json` shows it, and whether a process
has ended."""

from __future__ import annotations

import json
from pathlib import Path

from devfleet import DevFleet
from rocmtui.core.jobs.procstat import proc_stat
from tests.support.jobs import run_cli, write_config

SIZE = 4 * 1024 * 1024  # the tmpfs: the store, the job's reserve (256 KB) and some log
STILL_FULL = 1024 * 1024  # less free than this: the log cannot resume (RESUME_FREE)


def fleet_file_on(tmp_path: Path, fleet: DevFleet, state: Path) -> Path:
    path = write_config(tmp_path, fleet)
    text = path.read_text().replace(str(tmp_path / "state"), str(state))
    path.write_text(text)
    return path


def job(config: Path, job_id: str) -> dict[str, object]:
    out = run_cli(config, "jobs", "--json")
    assert out.returncode == 0, out.stderr  # the store reads on a full disk
    found = next(j for j in json.loads(out.stdout) if j["id"] == job_id)
    assert isinstance(found, dict)
    return found


def gone(pid: object, start: object) -> bool:
    """The process `pid` started at `start` has ended (a reused pid does not count)."""
    assert isinstance(pid, int)
    stat = proc_stat(pid)
    return stat is None or stat.start != start
