"""What a prune would remove, from recorded `/system/df` answers; sizes and ages as typed."""

from __future__ import annotations

import pytest

from rocmtui.core.prune.plan import (
    CacheRecord,
    PruneFilters,
    parse_age,
    parse_size,
    parse_time,
    plan_prune,
    records_of,
    summary,
)

NOW = 1_800_000_000.0

# the shape dockerd 28.5.2 answers /system/df with (trimmed to what the plan reads)
DF = {
    "BuildCache": [
        {"ID": "old", "Type": "regular", "Description": "[demo 2/3] RUN fake-compile",
         "InUse": False, "Shared": False, "Size": 3000,
         "LastUsedAt": "2027-01-14T08:00:00.123456789Z"},
        {"ID": "new", "Type": "source.local", "Description": "local source for context",
         "InUse": False, "Shared": False, "Size": 2000, "LastUsedAt": "2027-01-15T07:59:00Z"},
        {"ID": "image", "Type": "regular", "Description": "from local", "InUse": False,
         "Shared": True, "Size": 5000, "LastUsedAt": "2027-01-13T00:00:00Z"},
        {"ID": "busy", "Type": "regular", "Description": "mount / from exec", "InUse": True,
         "Shared": False, "Size": 7000, "LastUsedAt": "2027-01-15T08:00:00Z"},
        {"ID": "front", "Type": "frontend", "Description": "frontend", "InUse": False,
         "Shared": False, "Size": 100, "LastUsedAt": "2027-01-10T00:00:00Z"},
        {"ID": 7, "Size": "junk"},
        "junk",
    ]
}  # fmt: skip


def test_sizes_and_ages() -> None:
    assert parse_size("10GB") == 10 * 1024**3 and parse_size("512MiB") == 512 * 1024**2
    assert parse_size("2g") == 2 * 1024**3 and parse_size("1048576") == 1048576
    assert parse_age("24h") == 86400 and parse_age("1h30m") == 5400 and parse_age("7d") == 604800
    for bad in ("ten", "10 parsecs", ""):
        with pytest.raises(ValueError, match="not a size"):
            parse_size(bad)
    for bad in ("soon", "1h junk", "h", ""):
        with pytest.raises(ValueError, match="not an age"):
            parse_age(bad)


def test_engine_times() -> None:
    assert parse_time("2027-01-15T08:00:00Z") == 1800000000.0
    assert parse_time("2027-01-15T08:00:00.123456789+00:00") == pytest.approx(1800000000.123456)
    assert parse_time("yesterday") is None and parse_time(None) is None


def test_records_skip_what_is_not_a_record() -> None:
    records = records_of(DF)
    assert [r.id for r in records] == ["old", "new", "image", "busy", "front"]
    assert records_of({"BuildCache": None}) == [] and records_of("junk") == []


def test_a_plain_prune_takes_what_no_build_or_image_holds() -> None:
    plan = plan_prune("think", records_of(DF), PruneFilters(), NOW)
    assert [r.id for r in plan.records] == ["old", "new"]  # largest first
    assert plan.bytes == 5000 and plan.cache_bytes == 17100 and plan.in_use == 1
    everything = plan_prune("think", records_of(DF), PruneFilters(all=True), NOW)
    assert {r.id for r in everything.records} == {"old", "new", "front"}


def test_until_and_keep_storage() -> None:
    day = plan_prune("think", records_of(DF), PruneFilters(until_seconds=3600), NOW)
    assert [r.id for r in day.records] == ["old"]  # `new` was used a minute ago
    # keep 14500 of 17100: the least recently used prunable record goes, then it fits
    kept = plan_prune("think", records_of(DF), PruneFilters(keep_storage=14500), NOW)
    assert [r.id for r in kept.records] == ["old"]
    assert plan_prune("t", records_of(DF), PruneFilters(keep_storage=10**9), NOW).records == ()


def test_summary_is_sanitised() -> None:
    evil = CacheRecord(id="x", size=10, description="\x1b]0;owned\x07RUN \x1b[31mred")
    lines = list(summary(plan_prune("think", [evil], PruneFilters(), NOW)))
    assert lines[0].startswith("think: 1 of the build cache's records, 10B of 10B")
    assert "\x1b" not in "".join(lines) and "\x07" not in "".join(lines)
