"""`rocmtui history` run as the operator runs it (a real process over a real job store):
the documented JSON shape, CSV, filters, exit codes."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from rocmtui.core.costbook.book import CostBook
from rocmtui.core.jobs.store import JobStore
from tests.support.history import recorded_rows
from tests.support.jobs import run_cli
from tests.support.readme import readme_codes

BUILD_KEYS = {
    "job_id", "target", "arch", "node", "started_at", "ended_at", "duration", "outcome",
    "origin", "started_by", "condition", "evidence", "steps_total", "steps_cached",
    "steps_from", "sccache_hits", "sccache_misses", "sccache_hit_rate", "settling", "note",
}  # fmt: skip
GROUP_KEYS = {"target", "arch", "node", "builds", "conditions", "regressions", "estimate"}


def _fleet(tmp_path: Path, rows: int, jump: bool = False) -> Path:
    state = tmp_path / "state"
    CostBook(JobStore(state), retention_days=36500).add(recorded_rows(rows, jump_last=jump))
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'state_dir = "{state}"\nhistory_retention_days = 3650\n')
    return fleet


def test_json_is_the_documented_shape(tmp_path: Path) -> None:
    done = run_cli(_fleet(tmp_path, 200), "history", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {"version", "generated_at", "thresholds", "builds", "groups"}
    assert data["version"] == 1 and data["thresholds"]["warm_min_hit_rate"] == 0.6
    assert len(data["builds"]) == 200 and set(data["builds"][0]) == BUILD_KEYS
    warm = next(b for b in data["builds"] if b["condition"] == "warm")
    assert warm["evidence"] == "warm: 0/31 steps cached, sccache 92% hits"
    assert {b["condition"] for b in data["builds"]} == {"frozen", "hot", "warm", "cold"}
    group = data["groups"][0]
    assert set(group) == GROUP_KEYS
    assert set(group["conditions"]["warm"]) == {"count", "median", "p90", "last"}
    assert group["estimate"]["text"].startswith("≈ ")
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    for key in BUILD_KEYS | GROUP_KEYS:
        assert f"`{key}`" in readme, key  # every field is documented


def test_filters_and_csv(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, 200)
    done = run_cli(fleet, "history", "--json", "--target", "vllm", "--arch", "gfx950")
    builds = json.loads(done.stdout)["builds"]
    assert builds and {(b["target"], b["arch"]) for b in builds} == {("vllm", "gfx950")}
    node = run_cli(fleet, "history", "--json", "--node", "snoc-gaming", "--since", "2025-12-04")
    assert {b["node"] for b in json.loads(node.stdout)["builds"]} == {"snoc-gaming"}
    assert min(b["started_at"] for b in json.loads(node.stdout)["builds"]) >= 1_764_806_400
    recent = run_cli(fleet, "history", "--json", "--since", "7d")  # recorded in 2025: none
    assert json.loads(recent.stdout)["builds"] == []
    table = list(csv.DictReader(io.StringIO(run_cli(fleet, "history", "--csv").stdout)))
    assert len(table) == 200 and table[0]["started_at"] == "2025-12-01 00:00:00 UTC"
    assert table[0]["condition"] == "warm" and table[0]["sccache_hit_rate"] == "0.92"


def test_text_and_exit_codes(tmp_path: Path) -> None:
    assert readme_codes("history") == "0, 1 a regression shown, 2"
    calm = run_cli(_fleet(tmp_path / "a", 200), "history")
    assert calm.returncode == 0, calm.stderr
    assert "warm: 0/31 steps cached, sccache 92% hits" in calm.stdout
    assert "pytorch gfx950 on snoc-think: " in calm.stdout and "median" in calm.stdout
    jumped = run_cli(_fleet(tmp_path / "b", 400, jump=True), "history", "--target", "pytorch")
    assert jumped.returncode == 1
    assert "  ! warm took 4h18m, usually 2h09m" in jumped.stdout
    empty = tmp_path / "empty.toml"
    empty.write_text(f'state_dir = "{tmp_path / "none"}"\n')
    assert run_cli(empty, "history").stdout == "no builds recorded\n"


@pytest.mark.parametrize("words", [["--since", "yesterday"], ["--json", "--csv"], ["--since"]])
def test_usage_errors_exit_2(tmp_path: Path, words: list[str]) -> None:
    done = run_cli(_fleet(tmp_path, 10), "history", *words)
    assert done.returncode == 2 and done.stdout == ""


def test_a_bad_retention_is_a_configuration_error(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.toml"
    fleet.write_text("history_retention_days = 0\n")
    done = run_cli(fleet, "history")
    assert done.returncode == 2 and "history_retention_days" in done.stderr


def test_a_build_that_just_ended_is_listed_at_once_and_settling(tmp_path: Path) -> None:
    """Issue 38: `history` never says "no builds recorded" beside a `jobs` list that has the
    build; the one that ended a moment ago is there, marked settling."""
    import time

    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.states import JobState

    state = tmp_path / "state"
    store = JobStore(state)
    now = time.time()

    def make(job_id: str, job_dir: Path) -> JobRecord:
        return JobRecord(
            id=job_id, target="demo-base", arch="gfx1201", node="n0", endpoint="unix:///x",
            push=False, overrides={}, command=(), user="ci", host="h", bake_file="",
            job_dir=str(job_dir), started_at=now - 12, ended_at=now - 1,
            state=JobState.SUCCEEDED,
        )  # fmt: skip

    job = store.create(make)
    job.log_path.write_text("#4 [2/2] RUN true\n#4 CACHED\n")
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'state_dir = "{state}"\n')
    jobs = run_cli(fleet, "jobs")
    assert job.id in jobs.stdout, jobs.stdout + jobs.stderr
    text = run_cli(fleet, "history")
    assert text.returncode == 0, text.stderr
    assert "no builds recorded" not in text.stdout
    line = next(x for x in text.stdout.splitlines() if "demo-base" in x)
    assert "settling · frozen: 1/1 steps cached" in line
    assert "on n0: 1 build" in text.stdout and "1 builds" not in text.stdout, text.stdout
    data = json.loads(run_cli(fleet, "history", "--json").stdout)
    (build,) = data["builds"]
    assert (build["job_id"], build["settling"], build["condition"]) == (job.id, True, "frozen")


def test_history_show_exit_codes_and_steps_kept(tmp_path: Path) -> None:
    """`history show`: 2 for an unknown job, 1 with the reason when its steps cannot be had
    (no BuildKit record tied to it), 0 with steps kept in the store (README's row)."""
    import time

    from rocmtui.core.history.stepgraph import collect
    from rocmtui.core.history.stepstore import KeptSteps, save_steps
    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.states import JobState

    assert readme_codes("history show") == "0, 1 the steps cannot be had (why), 2"
    state = tmp_path / "state"
    store = JobStore(state)
    now = time.time()

    def make(job_id: str, job_dir: Path) -> JobRecord:
        return JobRecord(
            id=job_id, target="demo-base", arch="gfx1201", node="n0", endpoint="unix:///x",
            push=False, overrides={}, command=(), user="ci", host="h", bake_file="",
            job_dir=str(job_dir), started_at=now - 12, ended_at=now - 1,
            state=JobState.SUCCEEDED,
        )  # fmt: skip

    job = store.create(make)
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'state_dir = "{state}"\n')
    assert run_cli(fleet, "history", "show", "ffff").returncode == 2
    none = run_cli(fleet, "history", "show", job.id)
    assert none.returncode == 1 and "no BuildKit record is tied to it" in none.stderr
    raw = (Path(__file__).parents[1] / "data" / "buildkit" / "multi_rawjson.log").read_bytes()
    save_steps(store, job.id, KeptSteps(collect([raw]).steps(), "rawjson"))
    shown = run_cli(fleet, "history", "show", job.id)
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout and "15 steps" in shown.stdout
    assert "critical path (*): 5 steps" in shown.stdout
    data = json.loads(run_cli(fleet, "history", "show", job.id, "--json").stdout)
    assert len(data["steps"]) == 15 and data["critical_path"]["names"][-1].endswith("image")
