"""What a build costs (issue 29), core units: the cache condition from evidence, step counts from
recorded BuildKit logs, statistics, regressions, estimates and the overtime flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmtui.core.costbook import cost
from rocmtui.core.costbook.cost import (
    BuildEvidence,
    Condition,
    CostPoint,
    condition_stats,
    estimate,
    overtime_note,
    percentile,
    regressions,
)
from rocmtui.core.history.steps import StepScanner, scan_steps

DATA = Path(__file__).parents[1] / "data"
H = 3600.0


def _ev(total: int | None, cached: int | None, hits: int | None, misses: int | None):
    return BuildEvidence(
        steps_total=total, steps_cached=cached, sccache_hits=hits, sccache_misses=misses
    )


@pytest.mark.parametrize(
    ("evidence", "condition", "text"),
    [
        (_ev(31, 31, None, None), "frozen", "frozen: 31/31 steps cached, no sccache statistics"),
        (_ev(31, 20, 0, 0), "hot", "hot: 20/31 steps cached, sccache looked nothing up"),
        (_ev(31, 0, 92, 8), "warm", "warm: 0/31 steps cached, sccache 92% hits"),
        (_ev(31, 3, 10, 90), "cold", "cold: 3/31 steps cached, sccache 10% hits"),
        (_ev(None, None, 92, 8), "unknown", "unknown: no step counts, sccache 92% hits"),
        (_ev(31, 2, None, None), "unknown", "unknown: 2/31 steps cached, no sccache statistics"),
        (_ev(31, 2, 0, 0), "unknown", "unknown: 2/31 steps cached, sccache looked nothing up"),
    ],
)
def test_the_condition_is_what_the_evidence_proves(
    evidence: BuildEvidence, condition: str, text: str
) -> None:
    assert evidence.classify() == condition
    assert evidence.describe() == text


def test_the_thresholds_are_where_the_named_constants_say() -> None:
    rate = cost.WARM_MIN_HIT_RATE
    assert _ev(10, 0, int(rate * 100), 100 - int(rate * 100)).classify() is Condition.WARM
    assert _ev(10, 0, int(rate * 100) - 1, 101 - int(rate * 100)).classify() is Condition.COLD
    share = cost.HOT_MIN_CACHED_SHARE
    assert _ev(100, int(share * 100), None, None).classify() is Condition.HOT
    assert _ev(100, int(share * 100) - 1, 99, 1).classify() is Condition.WARM


def test_steps_are_counted_from_recorded_buildkit_logs() -> None:
    built = scan_steps(DATA / "buildkit" / "multi_plain.log")
    again = scan_steps(DATA / "buildkit" / "multi_plain_cached.log")
    assert built is not None and again is not None
    assert (built.cached, again.cached) == (0, again.total) and built.total == again.total > 0
    assert scan_steps(DATA / "nothing-here.log") is None


def test_a_line_cut_between_two_chunks_is_still_read() -> None:
    scanner = StepScanner()
    text = b"#4 [1/2] FROM base\n#4 CACHED\n#5 [2/2] RUN make\n#5 CACHED\n#6 [s 3/3] COPY a b\n"
    for i in range(0, len(text), 7):
        scanner.feed(text[i : i + 7])
    counts = scanner.result()
    assert counts is not None and (counts.total, counts.cached) == (2, 1)


def _points(*durations: float, condition: Condition = Condition.WARM) -> list[CostPoint]:
    return [CostPoint(i * 1000.0, d, condition, True) for i, d in enumerate(durations)]


def test_median_p90_and_last_per_condition_over_succeeded_builds() -> None:
    pts = [
        *_points(100, 300, 200),
        CostPoint(5000, 9999, Condition.WARM, succeeded=False),
        CostPoint(6000, 10, Condition.FROZEN, True),
    ]
    stats = condition_stats(pts)
    assert set(stats) == {Condition.WARM, Condition.FROZEN}
    warm = stats[Condition.WARM]
    assert (warm.count, warm.median, warm.last) == (3, 200, 200)
    assert warm.p90 == pytest.approx(280)
    assert percentile([1, 2, 3, 4], 0.5) == 2.5


def test_a_jump_under_the_same_condition_is_a_regression_and_noise_is_not() -> None:
    steady = _points(2 * H, 2.1 * H, 1.9 * H, 2 * H, 2.05 * H)
    assert regressions(steady) == []
    jumped = regressions([*steady, CostPoint(9e9, 3.5 * H, Condition.WARM, True)])
    assert [r.kind for r in jumped] == ["duration"]
    assert jumped[0].describe() == "warm took 3h30m, usually 2h00m"
    # a cold build after warm ones is another condition, not a regression
    assert regressions([*steady, CostPoint(9e9, 6 * H, Condition.COLD, True)]) == []
    # too few earlier builds to say
    assert regressions(_points(100, 100, 10_000)) == []
    # short builds: 1.5x but under REGRESSION_MIN_SECONDS longer
    assert regressions(_points(10, 10, 10, 10, 30)) == []


def test_the_sccache_hit_rate_falling_under_the_threshold_is_told() -> None:
    def p(t: float, rate: float) -> CostPoint:
        return CostPoint(t, 100, Condition.WARM, True, hit_rate=rate)

    found = regressions([p(1, 0.9), p(2, 0.92), p(3, 0.88), p(4, 0.2)])
    assert [r.kind for r in found] == ["hit-rate"]
    assert found[0].describe() == "sccache hits fell to 20% (usually 90%)"
    assert regressions([p(1, 0.3), p(2, 0.2), p(3, 0.3), p(4, 0.2)]) == []  # never was high


def test_an_estimate_names_its_condition_and_says_when_it_is_assumed() -> None:
    pts = [*_points(2 * H, 2.2 * H, 2.1 * H), CostPoint(9000000000.0, 60, Condition.FROZEN, True)]
    assumed = estimate(pts)
    assert assumed is not None and assumed.describe() == "≈ 1m00s, frozen as last time"
    warm = estimate(pts, Condition.WARM)
    assert warm is not None and warm.describe() == "≈ 2h06m, warm"
    assert estimate(pts, Condition.COLD) is None
    assert estimate([]) is None


def test_a_build_far_past_its_slowest_usual_time_is_flagged() -> None:
    pts = [*_points(2 * H, 2 * H, 2 * H), CostPoint(9000000000.0, 60, Condition.FROZEN, True)]
    assert overtime_note(2.9 * H, pts) is None  # under 2h × 1.5, though far past frozen's
    note = overtime_note(3.1 * H, pts)
    assert note == "running far past usual: 3h06m, usually at most 2h00m"
    assert overtime_note(1e9, []) is None


@pytest.mark.parametrize(
    ("recording", "condition"),
    [("cold.txt", "cold"), ("warm.txt", "warm"), ("mixed.json", "cold"), ("warm.json", "warm")],
)
def test_real_sccache_recordings_decide_warm_from_cold(recording: str, condition: str) -> None:
    """Debian's sccache 0.4 on local disk, recorded (tests/data/sccache): the WebDAV store it
    cannot talk to answers the same statistics."""
    from rocmtui.core.progress.sccache import StatsScanner

    scanner = StatsScanner()
    for line in (DATA / "sccache" / recording).read_text().splitlines():
        scanner.feed(f"#9 12.0 {line}")
    stats = scanner.result()
    assert stats is not None
    evidence = BuildEvidence(31, 0, stats.hits, stats.misses, "log")
    assert evidence.classify() == condition
