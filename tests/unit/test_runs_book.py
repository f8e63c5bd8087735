"""The run book in a real job store (SQLite in a temporary folder): runs kept with their
builds, builds started elsewhere across nodes adopted as a run, a store of schema 4 migrated."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rocmtui.core.history.outside import OutsideBuild
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.runs.book import RUN_WINDOW, RunBook
from rocmtui.core.runs.run import RUN_ID_RE, Run
from rocmtui.core.states import JobState
from tests.support.jobs import job_record

T0 = 1_800_000_000.0


def _job(store: JobStore, node: str, start: float, outside: bool = False) -> JobRecord:
    def make(job_id: str, job_dir: Path) -> JobRecord:
        return job_record(
            job_id, job_dir, target="demo-vllm", node=node, started_at=T0 + start,
            ended_at=T0 + start + 30, state=JobState.SUCCEEDED,
            outside=OutsideBuild(ref=f"{node}{start}", name="bake") if outside else None,
        )  # fmt: skip

    return store.create(make)


def test_a_run_keeps_its_builds_and_says_which_are_gone(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    book = RunBook(store)
    jobs = [_job(store, n, i) for i, n in enumerate(("a", "b"))]
    book.create(Run("run-20271215-0800-ab12", "demo-vllm", T0, "rocmtui", "me", ("a", "b", "c")))
    book.add_jobs("run-20271215-0800-ab12", [(j.id, j.node) for j in jobs])
    book.add_jobs("run-20271215-0800-ab12", [("20271215-0800-dead", "c")])  # never in the store
    book.note("run-20271215-0800-ab12", "c", "down (connect: refused)")
    got = book.get("ab12", now=T0 + 100)
    assert [b.node for b in got.builds] == ["a", "b"]
    assert got.builds[0].state == "succeeded" and got.builds[0].ended_at == T0 + 30
    assert got.missing_jobs == 1
    assert got.notes == {"c": "down (connect: refused)"}
    assert [r.id for r in book.runs()] == [got.id]


def test_builds_started_elsewhere_across_nodes_within_seconds_are_one_run(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    book = RunBook(store)
    together = [_job(store, "a", 0, True), _job(store, "b", 3, True), _job(store, "c", 6, True)]
    _job(store, "a", 500, True)  # alone on one node: not a fleet run
    _job(store, "a", 1000, False)  # rocmtui's own, outside any run: never adopted
    made = book.adopt_outside(now=T0 + 2000)
    assert len(made) == 1 and RUN_ID_RE.match(made[0])
    run = book.get(made[0], now=T0 + 2000)
    assert {b.job_id for b in run.builds} == {j.id for j in together}
    assert run.nodes == ("a", "b", "c") and run.origin == "elsewhere"
    assert book.adopt_outside(now=T0 + 2000) == []  # once


def test_a_cluster_still_within_the_window_waits(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    _job(store, "a", 0, True)
    _job(store, "b", 1, True)
    assert RunBook(store).adopt_outside(now=T0 + RUN_WINDOW / 2) == []


def test_a_store_of_schema_4_gains_the_run_tables(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    store.list()
    with sqlite3.connect(tmp_path / "jobs.sqlite") as conn:
        conn.execute("DROP TABLE runs")
        conn.execute("DROP TABLE run_jobs")
        conn.execute("DROP TABLE build_targets")
        conn.execute("PRAGMA user_version=4")
    again = JobStore(tmp_path)
    assert RunBook(again).runs() == []
    with sqlite3.connect(tmp_path / "jobs.sqlite") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 8
