"""`rocmtui jobs`: the info column and the JSON extras of one record, read from its folder
(a build started elsewhere, its sccache.json as the supervisor writes it)."""

from __future__ import annotations

from pathlib import Path

from rocmtui.cli.jobs import _extras, _info
from rocmtui.core.history.outside import OutsideBuild
from rocmtui.core.jobs.images import CACHE_STATS_FILE
from rocmtui.core.jobs.store import write_json_atomic
from rocmtui.core.progress.sccache import CacheStats
from rocmtui.core.states import JobState
from tests.support.jobs import job_record


def test_a_build_started_elsewhere_says_so_with_its_cache_hits(tmp_path: Path) -> None:
    stats = CacheStats(requests=40, executed=38, hits=30, misses=10, location="Local disk: x")
    write_json_atomic(tmp_path / CACHE_STATS_FILE, stats.to_json())
    outside = OutsideBuild(
        ref="abc", name="bake/rocm-bake (pytorch)", client="op@\x1b[31mhost", cached_steps=3
    )
    record = job_record(job_dir=tmp_path, state=JobState.SUCCEEDED, outside=outside)
    text = _info(record)
    assert text.startswith("started elsewhere: bake/rocm-bake (pytorch) · by op@")
    assert "\x1b" not in text  # outside text is sanitised
    assert text.endswith("sccache 30/40 hits (75%), Local disk")
    assert _extras(record)["sccache"] == stats.to_json()


def test_a_folder_without_statistics_has_none(tmp_path: Path) -> None:
    record = job_record(job_dir=tmp_path, state=JobState.FAILED, exit_code=2)
    assert _info(record) == "exit 2"
    assert _extras(record)["sccache"] is None
