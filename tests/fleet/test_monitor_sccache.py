"""The last job's sccache hit rate per target and arch, as the monitor exports it.

Jobs are put in the test's own job store as the launcher records them, their logs carrying
statistics blocks recorded from Debian's sccache (tests/data/sccache, BuildKit-prefixed as in a
real build log); when each ends, the supervisor's own `record_afterwards` reads its log and
writes its statistics. A real `rocmtui monitor` serves them, and a real Prometheus scrapes it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from devfleet import ServiceHandle, start_monitor, start_prometheus
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.images import record_afterwards
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.states import JobState
from tests.support.jobs import engineless_fleet, make_job, wait_for
from tests.support.prometheus import prometheus_config, query, scrape
from tests.support.realparts import require

DATA = Path(__file__).resolve().parents[1] / "data" / "sccache"
RATIO = "rocmtui_job_last_sccache_hit_ratio"


def buildkit_log(step: int, recording: str) -> bytes:
    """A build log whose RUN step ends with a recorded `sccache --show-stats`."""
    lines = ["[12345/23456] Building HIP object foo.o", *(DATA / recording).read_text().split("\n")]
    body = "".join(f"#{step} {12.0 + i * 0.001:.3f} {line}\n" for i, line in enumerate(lines))
    return f"#{step} [pytorch 4/9] RUN ninja\n{body}#{step} DONE 12.1s\n".encode()


@pytest.fixture
def fleet_with_jobs(tmp_path: Path) -> Path:
    """A fleet file whose job store holds finished jobs, newest last:
    demo-pytorch gfx1201: warm (2/2 hits), then mixed (2 hits, 2 misses), then a failed job
    whose log has no statistics; demo-base gfx950: cold (0/2 hits); demo-vllm gfx1201: a job
    whose log has no statistics."""
    # the bake file names the targets: the metrics count others as `other`
    bake = Path(__file__).resolve().parents[2] / "bake" / "demo.hcl"
    fleet = engineless_fleet(tmp_path, refresh_seconds=1.0, bake_file=bake)
    config = load_config(fleet)
    store = JobStore.for_config(config)
    start = time.time() - 3600
    for n, (target, arch, recording, state) in enumerate(
        (
            ("demo-pytorch", "gfx1201", "warm.txt", JobState.SUCCEEDED),
            ("demo-pytorch", "gfx1201", "mixed.json", JobState.SUCCEEDED),
            ("demo-pytorch", "gfx1201", None, JobState.FAILED),
            ("demo-base", "gfx950", "cold.txt", JobState.SUCCEEDED),
            ("demo-vllm", "gfx1201", None, JobState.SUCCEEDED),
        )
    ):
        job = make_job(store, target)
        if recording is not None:
            job.log_path.write_bytes(buildkit_log(7 + n, recording))
        began = start + 600 * n
        job = store.update(job.id, arch=arch, state=state, started_at=began, ended_at=began + 60)
        record_afterwards(job, None)  # what the supervisor does when a job ends
    return fleet


@pytest.fixture
def monitor(fleet_with_jobs: Path, tmp_path: Path) -> Iterator[ServiceHandle]:
    handle = start_monitor(tmp_path / "monitor", fleet_with_jobs)
    try:
        yield handle
    finally:
        handle.stop(grace=5.0)


def ratios(text: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The hit ratio samples of an exposition: their labels -> value."""
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        if family.name == RATIO
        for sample in family.samples
    }


def test_metrics_carry_the_last_known_hit_rate_per_target_and_arch(
    monitor: ServiceHandle,
) -> None:
    text = wait_for("the job store in /metrics", lambda: _with_store(scrape(monitor)), 30)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families[RATIO].type == "gauge"
    assert ratios(text) == {
        # the failed job reported nothing: the one before it (mixed) is the last known
        (("arch", "gfx1201"), ("target", "demo-pytorch")): 0.5,
        (("arch", "gfx950"), ("target", "demo-base")): 0.0,
        # demo-vllm never reported statistics: no sample at all, not a 0
    }


def test_prometheus_scrapes_the_hit_rate(monitor: ServiceHandle, tmp_path: Path) -> None:
    require("prometheus")
    prometheus = start_prometheus(tmp_path / "prometheus", lambda port: prometheus_config(
        monitor, None))  # fmt: skip
    try:
        found = wait_for(
            "Prometheus to have the hit ratios", lambda: len(query(prometheus, RATIO)) == 2, 60
        )
        assert found
        series = {
            (r["metric"]["target"], r["metric"]["arch"]): float(r["value"][1])
            for r in query(prometheus, RATIO)
        }
        assert series == {("demo-pytorch", "gfx1201"): 0.5, ("demo-base", "gfx950"): 0.0}
        for r in query(prometheus, RATIO):  # target and arch, and Prometheus' own job, instance
            assert set(r["metric"]) == {"__name__", "target", "arch", "job", "instance"}
    finally:
        prometheus.stop(grace=5.0)


def _with_store(text: str) -> str | None:
    """The exposition once the monitor's round has read the job store."""
    return text if "rocmtui_job_store_up 1.0" in text else None
