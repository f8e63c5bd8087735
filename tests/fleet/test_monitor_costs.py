"""The build-duration histogram by target, arch and cache condition, served by a real `rocmtui
monitor` from the job store's build history (issue 29); its labels stay bounded."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from devfleet import start_monitor
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.costbook.book import CostBook
from rocmtui.core.hostmonitor.costmetrics import BUCKETS, NAME, histograms
from rocmtui.core.jobs.store import JobStore
from tests.support.history import recorded_rows
from tests.support.jobs import engineless_fleet, wait_for
from tests.support.prometheus import scrape


def test_the_histogram_counts_each_condition_per_target_and_arch() -> None:
    rows = recorded_rows(240)
    series = {(s.target, s.arch, s.condition): s for s in histograms(rows)}
    warm = [
        r.duration
        for r in rows
        if (r.target, r.arch, str(r.condition)) == ("pytorch", "gfx1201", "warm")
        and r.outcome == "succeeded"
    ]
    one = series[("pytorch", "gfx1201", "warm")]
    assert one.count == len(warm) and one.total == sum(warm)
    assert one.counts[BUCKETS.index(7200.0)] == sum(1 for d in warm if d <= 7200)
    assert {s.condition for s in series.values()} == {"frozen", "hot", "warm", "cold"}
    assert {s.arch for s in series.values()} == {"gfx950", "gfx1201"}  # no node label


def test_the_monitor_serves_it(tmp_path: Path) -> None:
    # the bake file names the targets and arches: labels outside it read `other` (bounded)
    bake_file = Path(__file__).resolve().parents[2] / "bake" / "rocm-bake.hcl"
    fleet = engineless_fleet(
        tmp_path, refresh_seconds=1.0, history_retention_days=3650, bake_file=bake_file
    )
    rows = recorded_rows(240)
    CostBook(JobStore.for_config(load_config(fleet)), 3650).add(rows)
    handle = start_monitor(tmp_path / "monitor", fleet)
    try:
        text = wait_for(
            "the histogram's series in a scrape",
            lambda: f"{NAME}_count{{" in (t := scrape(handle)) and t,
            30,
        )
    finally:
        handle.stop(grace=5.0)
    assert isinstance(text, str)
    family = next(f for f in text_string_to_metric_families(text) if f.name == NAME)
    assert family.type == "histogram"
    counts = {
        (s.labels["target"], s.labels["arch"], s.labels["condition"]): s.value
        for s in family.samples
        if s.name == f"{NAME}_count"
    }
    expected = {(s.target, s.arch, s.condition): float(s.count) for s in histograms(rows)}
    assert counts == expected
    assert {frozenset(s.labels) - {"le"} for s in family.samples} == {
        frozenset({"target", "arch", "condition"})
    }
