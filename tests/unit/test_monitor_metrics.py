"""The monitor's metrics: names, labels and values from a recorded snapshot and a real job store
(real SQLite, real flock holders), parsed back with prometheus-client's own text parser."""

from __future__ import annotations

import os
import time
from pathlib import Path

from msgspec.structs import replace
from prometheus_client.parser import text_string_to_metric_families

from rocmtui.core.hostmonitor.costmetrics import DurationHistogram
from rocmtui.core.hostmonitor.jobsview import (
    ActiveBuild,
    CacheRate,
    JobsView,
    LastJob,
    Outcomes,
    read_jobs,
)
from rocmtui.core.hostmonitor.metrics import MetricsBook
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.states import JobState
from tests.support.exposition import FIGURES, samples, value
from tests.support.jobs import hold_lock, make_job
from tests.support.snapshots import recorded


def exposition(jobs: JobsView, think_down: bool = False, consoles: int = 2) -> bytes:
    config = recorded.config()
    book = MetricsBook(config, "test")
    book.update(recorded.fleet(think_down=think_down), jobs, FIGURES)
    return book.exposition(consoles, now=recorded.NOW + 4.7)


def test_node_and_service_states_are_one_gauge_per_state() -> None:
    found = samples(exposition(JobsView(read_at=recorded.NOW), think_down=True))
    assert value(found, "rocmtui_node_state", node="snoc-think", state="down") == 1.0
    for word in ("ok", "building", "stalled", "unknown"):
        assert value(found, "rocmtui_node_state", node="snoc-think", state=word) == 0.0
    assert value(found, "rocmtui_node_state", node="snoc-strix", state="ok") == 1.0
    assert value(found, "rocmtui_node_engine_up", node="snoc-think") == 0.0
    assert value(found, "rocmtui_node_engine_up", node="snoc-strix") == 1.0
    assert value(found, "rocmtui_node_engine_latency_seconds", node="snoc-strix") == 0.006
    assert value(found, "rocmtui_builder_state", node="snoc-strix", state="running") == 1.0
    assert value(found, "rocmtui_builder_state", node="snoc-think", state="unknown") == 1.0
    info = value(
        found, "rocmtui_node_info", node="snoc-strix", gfx="gfx1151",
        engine_version="20.10.24+dfsg1", buildkit_version="v0.8.2+a1b2c3d",
    )  # fmt: skip
    assert info == 1.0
    assert value(found, "rocmtui_service_up", service="webdav") == 1.0  # slow is up
    assert value(found, "rocmtui_service_state", service="webdav", state="slow") == 1.0
    assert value(found, "rocmtui_service_state", service="webdav", state="ok") == 0.0
    assert value(found, "rocmtui_service_http_status", service="webdav") == 207.0
    assert value(found, "rocmtui_service_latency_seconds", service="webdav") == 0.87
    # the snapshot's age is taken at scrape time, not when the round was rendered
    assert value(found, "rocmtui_snapshot_age_seconds") == 5.0
    assert value(found, "rocmtui_consoles_attached") == 2.0
    assert value(found, "rocmtui_probe_rounds_total") == 7.0
    assert value(found, "rocmtui_stall_threshold_seconds") == 900.0
    assert any(name == "process_cpu_seconds_total" for name, _ in found)


def test_names_follow_prometheus_conventions_and_no_label_is_unbounded() -> None:
    text = exposition(JobsView(read_at=recorded.NOW))
    families = list(text_string_to_metric_families(text.decode()))
    bounded = {"node", "service", "state", "target", "arch", "push", "gfx", "engine_version",
               "buildkit_version", "version", "fleet"}  # fmt: skip
    for family in families:
        if family.name.startswith("process_"):
            continue
        assert family.name.startswith("rocmtui_"), family.name
        if family.type == "counter":
            assert all(s.name.endswith("_total") for s in family.samples), family.name
        for s in family.samples:
            assert set(s.labels) <= bounded, (s.name, s.labels)
        if "seconds" in family.name:
            assert family.name.endswith(("_seconds", "_timestamp_seconds")), family.name


def test_jobs_on_record_become_counts_and_last_states_never_ids(tmp_path: Path) -> None:
    """A real store: a running build (its supervisor's lock held by a real process), a stalled
    one (its log silent past the threshold), finished ones in every state, pushes among them."""
    store = JobStore(tmp_path)
    config = replace(recorded.config(), state_dir=tmp_path, stall_after_seconds=60.0)
    now = time.time()
    ended = []
    for target, arch, state, push, took in (
        ("demo-base", "gfx1201", JobState.SUCCEEDED, False, 30.0),
        ("demo-base", "gfx1201", JobState.FAILED, False, 12.0),
        ("demo-pytorch", "gfx1201", JobState.SUCCEEDED, True, 100.0),
        ("demo-pytorch", "gfx1201", JobState.FAILED, True, 40.0),
        ("demo-pytorch", "gfx950", JobState.CANCELLED, False, 5.0),
    ):
        job = store.update(make_job(store, target).id, arch=arch, push=push)
        started = now - 1000 + len(ended) * 100
        ended.append(store.update(job.id, state=state, started_at=started, ended_at=started + took))
    running = make_job(store, "demo-vllm")
    stalled = store.update(make_job(store, "demo-vllm").id, node="snoc-gaming")
    holders = [hold_lock(running.lock_path), hold_lock(stalled.lock_path)]
    try:
        old = now - 300
        os.utime(stalled.log_path, (old, old))
        jobs = read_jobs(config, store, now=now)
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()
    assert jobs.error is None
    text = exposition(jobs)
    found = samples(text)
    for job in (*ended, running, stalled):
        assert job.id.encode() not in text  # never a job id in a label
    active = "rocmtui_builds_active"
    assert value(found, active, node="snoc-think", state="running") == 1.0
    assert value(found, active, node="snoc-gaming", state="stalled") == 1.0
    assert value(found, active, node="snoc-strix", state="running") == 0.0  # zeros, not absent
    assert value(found, "rocmtui_node_state", node="snoc-gaming", state="stalled") == 1.0
    assert value(found, "rocmtui_node_state", node="snoc-think", state="building") == 1.0
    silent = value(found, "rocmtui_build_last_output_age_seconds", node="snoc-gaming")
    assert silent is not None and 299 <= silent <= 330
    finished = "rocmtui_jobs_finished_total"
    base = {"target": "demo-base", "arch": "gfx1201", "node": "snoc-think"}
    assert value(found, finished, **base, state="succeeded") == 1.0
    assert value(found, finished, **base, state="failed") == 1.0
    last = "rocmtui_job_last_state"
    pushed = {"target": "demo-pytorch", "arch": "gfx1201", "push": "true"}
    assert value(found, last, **pushed, state="failed") == 1.0  # what RocmtuiPushFailed reads
    assert value(found, last, **pushed, state="succeeded") == 0.0
    assert value(found, last, target="demo-base", arch="gfx1201", push="false", state="failed")
    took = value(found, "rocmtui_job_last_duration_seconds", target="demo-pytorch", arch="gfx1201")
    assert took == 40.0
    assert value(found, "rocmtui_job_store_up") == 1.0


def test_an_unreadable_job_store_is_a_zero_not_a_dead_monitor(tmp_path: Path) -> None:
    (tmp_path / "jobs.sqlite").write_text("not a database\n" * 50)
    config = replace(recorded.config(), state_dir=tmp_path)
    jobs = read_jobs(config, JobStore(tmp_path))
    assert jobs.error and "jobs.sqlite" in jobs.error
    found = samples(exposition(jobs))
    assert value(found, "rocmtui_job_store_up") == 0.0
    assert value(found, "rocmtui_node_state", node="snoc-strix", state="ok") == 1.0


def test_names_from_builds_started_elsewhere_are_other() -> None:
    """A build started elsewhere is named by its record (any builder client sets that name)
    or its ref: every distinct name was a new series. Targets outside the bake file, arches it
    and the fleet do not name, and nodes outside the fleet file are `other`, their figures
    folded together; the bake file's own keep theirs."""
    names = [f"elsewhere-{i}" for i in range(40)]
    jobs = JobsView(
        read_at=recorded.NOW,
        active=(ActiveBuild("gone-node", False, 3.0), ActiveBuild("gone-too", True, 9.0)),
        outcomes=(
            *(Outcomes(n, "gfx1201", "snoc-think", "succeeded", 1) for n in names),
            Outcomes("demo-base", "sm_90", "laptop", "failed", 2),
            Outcomes("demo-base", "gfx1201", "snoc-think", "succeeded", 3),
        ),
        last=tuple(
            LastJob(n, "gfx1201", False, "failed" if i == 7 else "succeeded", 10.0 + i, 1e9 + i)
            for i, n in enumerate(names[:8])
        ),
        cache=tuple(CacheRate(n, "gfx1201", 0.5) for n in names),
    )
    counts = (0, 1, 1, 1, 1, 1, 1, 1, 1, 1)
    costs = [DurationHistogram(n, "gfx1201", "warm", counts, 100.0) for n in names]
    costs.append(DurationHistogram("demo-vllm", "gfx950", "warm", counts, 50.0))
    book = MetricsBook(recorded.config(), "test")
    book.update(recorded.fleet(), jobs, FIGURES, costs)
    text = book.exposition(1, now=recorded.NOW)
    found = samples(text)
    assert b"elsewhere-" not in text and b"sm_90" not in text and b"gone-node" not in text
    finished = "rocmtui_jobs_finished_total"
    other = {"target": "other", "arch": "gfx1201", "node": "snoc-think", "state": "succeeded"}
    assert value(found, finished, **other) == 40.0
    mine = {"target": "demo-base", "arch": "gfx1201", "node": "snoc-think", "state": "succeeded"}
    assert value(found, finished, **mine) == 3.0
    assert value(found, finished, target="demo-base", arch="other", node="other", state="failed")
    last = {"target": "other", "arch": "gfx1201", "push": "false"}
    assert value(found, "rocmtui_job_last_state", **last, state="failed") == 1.0  # the newest
    took = value(found, "rocmtui_job_last_duration_seconds", target="other", arch="gfx1201")
    assert took == 17.0
    assert value(found, "rocmtui_builds_active", node="other", state="running") == 1.0
    assert value(found, "rocmtui_builds_active", node="other", state="stalled") == 1.0
    hist = "rocmtui_build_duration_seconds_count"
    assert value(found, hist, target="other", arch="gfx1201", condition="warm") == 40.0
    assert value(found, "rocmtui_build_duration_seconds_sum", target="other", arch="gfx1201",
                 condition="warm") == 4000.0  # fmt: skip
    assert value(found, hist, target="demo-vllm", arch="gfx950", condition="warm") == 1.0
    targets = {dict(labels).get("target") for _, labels in found} - {None}
    assert targets <= {"demo-base", "demo-pytorch", "demo-vllm", "other"}, targets
