"""The cost book in the job store (issue 29): rows from finished jobs' folders, settling,
retention, filters, and the store of the previous release (schema 3) migrated."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from rocmtui.core.config.fleetfile import ConfigError, load_config
from rocmtui.core.costbook.book import SETTLE_SECONDS, CostBook, CostFilter
from rocmtui.core.costbook.report import HistoryReport
from rocmtui.core.history.outside import OutsideBuild
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.schema import SCHEMA_VERSION
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.states import JobState
from tests.support.jobs import job_record

DATA = Path(__file__).parents[1] / "data"
DAY = 86400.0
NOW = 1_765_000_000.0


def _job(target: str, start: float, took: float, **more: object):
    def make(job_id: str, job_dir: Path) -> JobRecord:
        fields: dict[str, object] = {
            "target": target,
            "node": "n0",
            "user": "ci",
            "host": "snoc-strix",
            "started_at": start,
            "ended_at": start + took,
            "state": JobState.SUCCEEDED,
            **more,
        }
        return job_record(job_id, job_dir, **fields)

    return make


WARM_LOG = "#3 [1/2] FROM base\n#3 DONE 0s\n#4 [2/2] RUN fake-compile pytorch\n#4 DONE 40s\n"
SCCACHE_TEXT = (DATA / "sccache" / "warm.txt").read_text()


def test_finished_jobs_become_rows_with_their_evidence(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    own = store.create(_job("demo-pytorch", NOW - 600, 100))
    # the log as bake wrote it, with sccache's statistics printed by the RUN step
    prefixed = "".join(f"#4 41.0 {line}\n" for line in SCCACHE_TEXT.splitlines())
    own.log_path.write_text(WARM_LOG + prefixed)
    outside = store.create_for_ref(
        "r1",
        "n0",
        _job(
            "demo-vllm",
            NOW - 500,
            50,
            user="",
            host="",
            outside=OutsideBuild(
                ref="r1", name="bake/demo (demo-vllm)", total_steps=9, cached_steps=9, duration=48.5
            ),
        ),
    )
    assert outside is not None
    fresh = store.create(_job("demo-base", NOW - 20, 10))  # ended 10 s ago: settling
    running = store.create(_job("demo-base", NOW - 5, 0, ended_at=None, state=JobState.RUNNING))
    book = CostBook(store)
    assert book.sync(NOW) == 3
    assert book.sync(NOW) == 0  # each job is read once until it settles
    rows = {r.job_id: r for r in book.rows()}
    assert set(rows) == {own.id, outside.id, fresh.id}
    assert rows[fresh.id].settling and not rows[own.id].settling
    mine = rows[own.id]
    assert (mine.origin, mine.started_by, mine.duration) == ("rocmtui", "ci@snoc-strix", 100)
    assert mine.evidence.steps_from == "log" and mine.evidence.steps_total == 1
    assert mine.evidence.sccache_hits is not None and mine.evidence.hit_rate is not None
    assert mine.evidence.describe().startswith(f"{mine.condition}: 0/1 steps cached, sccache ")
    theirs = rows[outside.id]
    assert (theirs.origin, theirs.started_by, theirs.duration) == (
        "elsewhere",
        "bake/demo (demo-vllm)",
        48.5,
    )
    assert theirs.evidence.steps_from == "buildkit" and theirs.condition == "frozen"
    assert book.sync(NOW + SETTLE_SECONDS) == 1  # the settling one, read again
    assert not any(r.settling for r in book.rows())
    assert running.id not in {r.job_id for r in book.rows()}
    only = book.rows(CostFilter(target="demo-vllm"))
    assert [r.job_id for r in only] == [outside.id]
    assert book.rows(CostFilter(since=NOW - 550, node="n0"))[0].job_id == outside.id
    assert book.rows(CostFilter(arch="gfx950")) == []


def test_a_build_is_in_the_history_the_moment_it_ends_settling_until_its_evidence(
    tmp_path: Path,
) -> None:
    """Issue 38: no 30 s wait. The row is there at once, settling; the sccache statistics the
    supervisor writes after the outcome are read when it settles, and its condition moves
    from unknown to warm."""
    from rocmtui.core.costbook.book import load_history

    store = JobStore(tmp_path)
    job = store.create(_job("demo-pytorch", NOW - 101, 100))  # ended 1 s ago
    job.log_path.write_text(WARM_LOG)
    rows, running = load_history(store, now=NOW)
    assert running == [] and [r.job_id for r in rows] == [job.id]
    (row,) = rows
    assert row.settling and row.condition == "unknown"
    assert row.describe() == "settling · unknown: 0/1 steps cached, no sccache statistics"
    report = HistoryReport.build(rows, now=NOW).to_json()
    assert report["builds"][0]["settling"] is True
    # the supervisor writes sccache's statistics after the outcome
    prefixed = "".join(f"#4 41.0 {line}\n" for line in SCCACHE_TEXT.splitlines())
    job.log_path.write_text(WARM_LOG + prefixed)
    assert load_history(store, now=NOW + 5)[0][0].settling  # still settling, not read again
    (settled,) = load_history(store, now=NOW + SETTLE_SECONDS)[0]
    assert not settled.settling and settled.condition == "warm"
    assert settled.describe().startswith("warm: 0/1 steps cached, sccache ")


def test_rows_past_the_retention_are_dropped_and_not_read_again(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    old = store.create(_job("demo-base", NOW - 40 * DAY, 10))
    new = store.create(_job("demo-base", NOW - 2 * DAY, 10))
    assert CostBook(store, retention_days=90).sync(NOW) == 2
    book = CostBook(store, retention_days=30)
    assert book.sync(NOW) == 0
    assert [r.job_id for r in book.rows()] == [new.id]
    assert old.id in {r.id for r in store.list(limit=None)}  # the job itself stays


def test_the_previous_release_store_is_migrated(tmp_path: Path) -> None:
    root = tmp_path / "state"
    shutil.copytree(DATA / "store_v3", root, ignore=shutil.ignore_patterns("*.py"))
    with sqlite3.connect(root / "jobs.sqlite") as conn:  # as if it had always lived here
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
        conn.execute("UPDATE jobs SET job_dir = ? || '/jobs/' || id", (str(root),))
    store = JobStore(root)
    jobs = store.list()
    assert len(jobs) == 2 and {j.target for j in jobs} == {"demo-pytorch", "demo-vllm"}
    assert [j.allowed for j in jobs] == [(), ()]  # granted nothing: the column came later
    with sqlite3.connect(root / "jobs.sqlite") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 8
    book = CostBook(store, retention_days=3650)
    assert book.sync(NOW) == 2
    by_target = {r.target: r for r in book.rows()}
    own = by_target["demo-pytorch"]
    assert own.evidence.describe() == "warm: 1/3 steps cached, sccache 92% hits"
    assert by_target["demo-vllm"].condition == "frozen"
    report = HistoryReport.build(book.rows(), now=NOW).to_json()
    assert [g["target"] for g in report["groups"]] == ["demo-pytorch", "demo-vllm"]


def test_the_retention_setting_is_validated_by_name(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.toml"
    fleet.write_text("history_retention_days = 30\n")
    assert load_config(fleet).history_retention_days == 30
    fleet.write_text('bake_file = "x.hcl"\nhistory_retention_days = "lots"\n')
    with pytest.raises(ConfigError, match=r"fleet.toml:2: history_retention_days: must be a"):
        load_config(fleet)
