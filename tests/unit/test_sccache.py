"""sccache's statistics, parsed from real recordings of Debian's sccache 0.4 (cold, warm and
mixed; text and JSON; tests/data/sccache/record.sh made them) and from build logs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rocmtui.core.progress.sccache import (
    CacheStats,
    StatsScanner,
    parse_json_stats,
    parse_text_stats,
    scan_log,
)

DATA = Path(__file__).parents[1] / "data" / "sccache"
REPO = Path(__file__).resolve().parents[2]

# (recording, requests, executed, hits, misses): what record.sh did in each round
EXPECTED = {
    "cold": (2, 2, 0, 2),
    "warm": (2, 2, 2, 0),
    "mixed": (5, 4, 2, 2),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_both_recorded_formats_read_the_same(name: str) -> None:
    text = parse_text_stats((DATA / f"{name}.txt").read_text().splitlines())
    data = parse_json_stats((DATA / f"{name}.json").read_text().strip())
    assert text is not None and data is not None
    for stats in (text, data):
        assert (stats.requests, stats.executed, stats.hits, stats.misses) == EXPECTED[name]
        assert stats.backend == "Local disk"
        assert stats.location is not None and stats.location.startswith('Local disk: "/tmp/')
    assert text == data


def test_rates_cold_warm_mixed() -> None:
    rates = {}
    for name in EXPECTED:
        stats = parse_text_stats((DATA / f"{name}.txt").read_text().splitlines())
        assert stats is not None
        rates[name] = stats.rate
    assert rates == {"cold": 0.0, "warm": 1.0, "mixed": 0.5}
    warm = parse_text_stats((DATA / "warm.txt").read_text().splitlines())
    assert warm is not None and warm.describe() == "sccache 2/2 hits (100%), Local disk"


def test_the_recordings_are_what_debian_sccache_prints() -> None:
    """Guard the recordings: the version that printed them, and their exact layout."""
    assert (DATA / "VERSION").read_text().startswith("sccache 0.4.0")
    lines = (DATA / "cold.txt").read_text().splitlines()
    assert lines[0] == "Compile requests                      2"
    assert lines[-1] == "Max cache size                       10 GiB"


def _buildkit(step: int, lines: list[str], t0: float = 12.0) -> list[str]:
    return [f"#{step} {t0 + i * 0.001:.3f} {line}" for i, line in enumerate(lines)]


def test_a_buildkit_log_keeps_each_steps_last_report_and_adds_the_steps() -> None:
    cold = (DATA / "cold.txt").read_text().splitlines()
    warm = (DATA / "warm.txt").read_text().splitlines()
    mixed_json = (DATA / "mixed.json").read_text().strip()
    step7, step9 = _buildkit(7, [*cold, "done"]), _buildkit(9, [mixed_json])
    # step 7 reported twice (the later report counts from the server's start: it wins);
    # the lines of steps 7 and 9 interleave as BuildKit prints them
    log = ["#7 [demo 2/3] RUN build", *step7[:5], step9[0], *step7[5:], *_buildkit(7, warm, 20.0)]
    scanner = StatsScanner()
    for line in log:
        scanner.feed(line)
    stats = scanner.result()
    assert stats is not None
    assert (stats.hits, stats.misses, stats.requests, stats.reports) == (2 + 2, 0 + 2, 2 + 5, 2)


def test_no_report_is_none_and_odd_text_is_not_a_report() -> None:
    scanner = StatsScanner()
    for line in ["Compile requests are many", '{"stats": 3}', "Cache hits 4", ""]:
        scanner.feed(line)
    assert scanner.result() is None
    assert parse_json_stats('{"stats":{"compile_requests":"x"}}') is None
    assert CacheStats(0, 0, 0, 0).rate is None


def test_a_big_log_is_scanned_by_chunks(tmp_path: Path) -> None:
    log = tmp_path / "log"
    filler = "".join(f"#5 1.0 [{i}/9000] Building HIP object x{i}.o\n" for i in range(9000))
    report = "\n".join(_buildkit(5, (DATA / "mixed.txt").read_text().splitlines()))
    log.write_text(filler * 40 + report + "\n" + filler)  # ~20 MB: several chunks
    stats = scan_log(log)
    assert stats is not None and (stats.hits, stats.misses) == (2, 2)
    assert scan_log(tmp_path / "missing") is None


@pytest.mark.parametrize("form", ["text", "json"])
def test_the_demo_prints_statistics_in_the_real_format(form: str) -> None:
    """The demo targets' fake compile prints what sccache 0.4 prints (same layout, so the same
    parser reads it), with the hit share it is told."""
    if shutil.which("busybox") is None:
        pytest.skip("busybox not installed")
    out = subprocess.run(
        ["busybox", "sh", str(REPO / "bake" / "demo" / "fake-compile.sh"), "pytorch", "2.15.0"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={
            **os.environ,
            "DEMO_STEPS": "40",
            "DEMO_SLEEP": "0",
            "DEMO_CACHE_HITS": "75",
            "DEMO_STATS_FORMAT": form,
        },
    ).stdout.splitlines()
    scanner = StatsScanner()
    for line in out:
        scanner.feed(line)
    stats = scanner.result()
    assert stats is not None
    assert (stats.requests, stats.executed, stats.hits, stats.misses) == (41, 40, 30, 10)
    assert stats.backend == "Local disk"
    if form == "text":  # column for column what the recording has
        real = {line[:32] for line in (DATA / "cold.txt").read_text().splitlines()}
        printed = [line for line in out if line[:32] in real]
        assert len(printed) >= 20
        widths = {len(line) for line in printed if line.split()[-1].isdigit()}
        assert widths == {39}
