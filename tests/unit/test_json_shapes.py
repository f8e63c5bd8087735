"""The JSON shapes users rely on, held byte for byte: `rocmtui versions --json`,
`rocmtui matrix --json`, `rocmtui history --json`, `rocmtui vars --json` and the `monitor` of
`rocmtui status --json` print what their `to_json` returns (`json.dumps(..., indent=2)`), a job
folder's sccache.json (also in `rocmtui jobs --json` and each matrix cell's job) holds
`CacheStats.to_json()`, and the console reads them back with `from_json`. The expected files
were written by the hand-written encoders these shapes came from; an encoder by the library
must print the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmtui.cli.vars import to_json as variable_json
from rocmtui.core.bake.effective import EffectiveVariable
from rocmtui.core.costbook.book import CostRow
from rocmtui.core.costbook.cost import BuildEvidence
from rocmtui.core.costbook.report import HistoryReport
from rocmtui.core.hostmonitor.client import MonitorStatus
from rocmtui.core.hostmonitor.place import Holder, MonitorPlace
from rocmtui.core.hostmonitor.wire import Hello
from rocmtui.core.matrix.cells import (
    Cell,
    CellJob,
    Matrix,
    PinDiff,
    RegistryImage,
    Row,
    Verdict,
)
from rocmtui.core.matrix.views import matrix_json, read_matrix
from rocmtui.core.progress.sccache import CacheStats
from rocmtui.core.versions.report import VersionRow, Versions
from rocmtui.core.versions.upstream import Release, UpstreamAnswer

DATA = Path(__file__).resolve().parents[1] / "data" / "json_shapes"


def sample_versions() -> Versions:
    """Every field set somewhere, and every optional one left out somewhere."""
    full = UpstreamAnswer(
        variable="PYTORCH_VERSION",
        source="pypi",
        name="torch",
        state="ok",
        newest="2.16.0",
        newest_pre="2.17.0rc1",
        age=12.3456,
        reason=None,
        releases=(Release("2.16.0", False),),
    )
    bare = UpstreamAnswer(variable="ROCM_VERSION")
    return Versions(
        rows=(
            VersionRow("PYTORCH_VERSION", "2.15.0", "default", full, "behind", {"2.15.0": 3}),
            VersionRow("ROCM_VERSION", None, "environment", bare, "unknown"),
        ),
        taken_at=1764979200.25,
        upstream_configured=True,
        registry_images=3,
        errors=("bake --print: exit 1",),
    )


def sample_matrix() -> Matrix:
    job = CellJob(
        id="20261206-0001",
        target="pytorch-push",
        state="succeeded",
        node="snoc-think",
        started_at=1764979000.0,
        ended_at=1764979300.5,
        digest="sha256:" + "a" * 64,
        push=True,
        loop="in registry",
        cache={"hits": 3, "misses": 1},
        started_elsewhere=True,
        cached_percent=87,
    )
    running = CellJob("20261206-0002", "pytorch", "running", "snoc-gaming", 1764979400.0)
    image = RegistryImage(
        digest="sha256:" + "b" * 64,
        media_type="application/vnd.oci.image.index.v1+json",
        size=1234,
        created="2026-12-06T00:00:00Z",
        labels={"rocm-bake.pin.ROCM_VERSION": "7.2.2"},
        note="OCI index: linux/amd64 image read",
    )
    published = Cell(
        arch="gfx1201",
        tag="reg/rocm-bake/pytorch:rocm7.2.2-gfx1201",
        verdict=Verdict.STALE,
        reason="built from other pins",
        targets=("pytorch", "pytorch-push"),
        push_target="pytorch-push",
        lookup="found",
        image=image,
        job=job,
        pushed=job,
        pins=(PinDiff("PYTORCH_VERSION", "2.14.0", "2.15.0"), PinDiff("X", None, "1")),
        notes=("a note",),
        regressions=("snoc-think: warm took 4h18m, usually 2h06m",),
    )
    building = Cell(arch="gfx950", tag="reg/x:y", verdict=Verdict.BUILDING, job=running)
    absent = Cell(arch="gfx1250", tag=None, verdict=Verdict.UNKNOWN)
    return Matrix(
        bake_file="bake/rocm-bake.hcl",
        registry="http://127.0.0.1:5000",
        arches=("gfx950", "gfx1201", "gfx1250"),
        rows=(Row("pytorch", ("pytorch", "pytorch-push"), (building, published, absent)),),
        taken_at=1764979500.0,
        seconds=1.23456,
        requests=7,
        errors=("gfx1250: bake refused",),
        store={"objects": 10},
    )


SHAPES = {"versions": sample_versions, "matrix": sample_matrix}


def printed(obj: Versions | Matrix) -> str:
    """What the commands print."""
    data = matrix_json(obj) if isinstance(obj, Matrix) else obj.to_json()
    return json.dumps(data, indent=2) + "\n"


def read_back(obj: Versions | Matrix, data: object) -> Versions | Matrix:
    """What the console reads."""
    if isinstance(obj, Matrix):
        return read_matrix(data)  # type: ignore[arg-type]
    return Versions.from_json(data)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_printed_shape_is_byte_for_byte_what_it_was(name: str) -> None:
    expected = (DATA / f"{name}.json").read_text(encoding="utf-8")
    assert printed(SHAPES[name]()) == expected


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_what_is_printed_reads_back_to_the_same_print(name: str) -> None:
    obj = SHAPES[name]()
    data = json.loads(printed(obj))
    again = read_back(obj, data)
    assert printed(again) == printed(obj)
    # what is printed is plain JSON types (lists, not tuples): a script compares it as read
    assert (matrix_json(again) if isinstance(again, Matrix) else again.to_json()) == data


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        (Versions, {}),
        (Versions, {"pins": [{"variable": 1}], "taken_at": 1.0, "upstream_configured": True}),
        (Versions, {"pins": "x", "taken_at": 1.0, "upstream_configured": True}),
        (Matrix, {}),
        (Matrix, {"rows": [{"name": "a"}]}),
        (Matrix, {"bake_file": "b", "registry": "r", "arches": [], "taken_at": 1.0, "rows": 3}),
    ],
)
def test_anything_else_is_a_value_error(kind: type[Versions] | type[Matrix], data: object) -> None:
    with pytest.raises(ValueError):
        if kind is Matrix:
            read_matrix(data)  # type: ignore[arg-type]
        else:
            Versions.from_json(data)  # type: ignore[arg-type]


def sample_cache_stats() -> list[CacheStats]:
    """Every field set, and every optional one left out (no lookups: no rate, no backend)."""
    return [
        CacheStats(
            requests=40,
            executed=38,
            hits=29,
            misses=9,
            errors=1,
            location='Local disk: "/root/.cache/sccache"',
            reports=2,
        ),
        CacheStats(requests=3, executed=0, hits=0, misses=0),
    ]


def printed_cache_stats(stats: list[CacheStats]) -> str:
    """As `rocmtui jobs --json` prints each job's `sccache`."""
    return json.dumps([s.to_json() for s in stats], indent=2) + "\n"


def test_cache_statistics_print_byte_for_byte_what_they_did() -> None:
    expected = (DATA / "sccache.json").read_text(encoding="utf-8")
    assert printed_cache_stats(sample_cache_stats()) == expected


def test_cache_statistics_read_back_to_the_same_print() -> None:
    stats = sample_cache_stats()
    data = json.loads(printed_cache_stats(stats))
    again = [CacheStats.from_json(d) for d in data]
    assert again == stats
    assert [s.to_json() for s in again] == data
    # a file written before `reports` and `errors` existed, with nothing optional
    assert CacheStats.from_json({"requests": 1, "executed": 1, "hits": 1, "misses": 0}) == (
        CacheStats(requests=1, executed=1, hits=1, misses=0)
    )


@pytest.mark.parametrize(
    "data",
    [
        {},
        [],
        None,
        "stats",
        {"requests": 1, "executed": 1, "hits": 1},
        {"requests": "many", "executed": 1, "hits": 1, "misses": 0},
        {"requests": 1, "executed": 1, "hits": None, "misses": 0},
        {"requests": 1, "executed": 1, "hits": 1, "misses": 0, "reports": "x"},
    ],
)
def test_anything_else_is_not_cache_statistics(data: object) -> None:
    with pytest.raises(ValueError):
        CacheStats.from_json(data)


NOW = 1764979200.0


def _row(
    job_id: str,
    started: float,
    took: float,
    evidence: BuildEvidence,
    *,
    outcome: str = "succeeded",
    running: bool = False,
    group: tuple[str, str, str] = ("pytorch", "gfx1201", "snoc-think"),
    origin: str = "rocmtui",
) -> CostRow:
    return CostRow(
        job_id=job_id,
        target=group[0],
        arch=group[1],
        node=group[2],
        started_at=started,
        ended_at=None if running else started + took,
        duration=took,
        outcome="running" if running else outcome,
        origin=origin,
        started_by="op@snoc-strix" if origin == "rocmtui" else "buildx/0.29",
        evidence=evidence,
    )


def sample_history() -> HistoryReport:
    """A group with both kinds of regression and an estimate, a group with neither (one failed
    build, no evidence), a running build past its usual time and one with no group."""
    warm = BuildEvidence(
        steps_total=31, steps_cached=3, sccache_hits=900, sccache_misses=100, steps_from="log"
    )
    cold = BuildEvidence(
        steps_total=31, steps_cached=0, sccache_hits=1, sccache_misses=2, steps_from="log"
    )
    day = 86400.0
    rows = [
        _row(f"2026120{i}-0001", NOW - (9 - i) * day, 7200.123456 + i * 10.5, warm)
        for i in range(1, 5)
    ]
    rows.append(_row("20261205-0001", NOW - 4 * day, 15000.987654, warm))
    rows.append(_row("20261206-0001", NOW - 3 * day, 20000.55555, cold))
    rows.append(
        _row(
            "20261206-0002",
            NOW - 2 * day,
            61.25,
            BuildEvidence(steps_total=4, steps_cached=1, steps_from="buildkit"),
            outcome="failed",
            group=("vllm", "gfx950", "snoc-gaming"),
            origin="elsewhere",
        )
    )
    running = [
        _row("20261207-0001", NOW - 40000.0, 39999.75, BuildEvidence(), running=True),
        _row(
            "20261207-0002",
            NOW - 100.0,
            100.0,
            BuildEvidence(),
            running=True,
            group=("jax", "gfx1250", "snoc-think"),
        ),
    ]
    return HistoryReport.build(rows, running, now=NOW + 0.5)


def printed_history(report: HistoryReport) -> str:
    """What `rocmtui history --json` prints."""
    return json.dumps(report.to_json(), indent=2) + "\n"


def test_the_history_prints_byte_for_byte_what_it_did() -> None:
    report = sample_history()
    data = report.to_json()
    # the sample holds what it says: both regressions, an estimate and none, a running note
    kinds = [r["kind"] for g in data["groups"] for r in g["regressions"]]
    assert sorted(kinds) == ["duration", "hit-rate"]
    assert [g["estimate"] is None for g in data["groups"]] == [False, True]
    assert [b["note"] is None for b in data["builds"][-2:]] == [False, True]
    expected = (DATA / "history.json").read_text(encoding="utf-8")
    assert printed_history(report) == expected


def test_the_history_is_plain_json_types_and_its_csv_unchanged() -> None:
    report = sample_history()
    assert report.to_json() == json.loads(printed_history(report))
    expected = (DATA / "history.csv").read_text(encoding="utf-8")
    assert report.to_csv() == expected


def sample_variables() -> list[EffectiveVariable]:
    """A resolved override with its file, and an unresolved secret with nothing optional."""
    return [
        EffectiveVariable(
            name="ROCM_VERSION",
            default_source='"7.2.2"',
            default="7.2.2",
            value="7.2.3",
            source="environment",
            secret=False,
            line=12,
            resolved=True,
            file="bake/rocm-bake.hcl",
        ),
        EffectiveVariable(
            name="HF_TOKEN",
            default_source="<redacted:HF_TOKEN>",
            default=None,
            value=None,
            source="default",
            secret=True,
        ),
    ]


def test_the_variables_print_byte_for_byte_what_they_did() -> None:
    data = [variable_json(v) for v in sample_variables()]
    expected = (DATA / "vars.json").read_text(encoding="utf-8")
    assert json.dumps(data, indent=2) + "\n" == expected
    assert json.loads(expected) == data


def sample_monitor_statuses() -> list[MonitorStatus]:
    """Answering (what it says of itself), running but not answering (what its lock says),
    and not running: every field set somewhere and left out somewhere."""
    place = MonitorPlace(Path("/run/user/1000/rocmtui"), "fleet.toml")
    holder = Holder(
        pid=41, start_time=7, fleet="fleet.toml", socket=None, metrics="http://h:1", started_at=1.0
    )
    hello = Hello(
        protocol=1,
        pid=42,
        fleet="fleet.toml",
        started_at=NOW - 100,
        latest_taken_at=NOW - 2.34567,
        metrics="http://127.0.0.1:9464/metrics",
        version="1.0",
    )
    return [
        MonitorStatus(place, True, holder, hello),
        MonitorStatus(place, True, holder, error="did not answer in 2 s"),
        MonitorStatus(place, False),
    ]


def test_the_monitor_status_prints_byte_for_byte_what_it_did() -> None:
    data = [m.to_json(now=NOW) for m in sample_monitor_statuses()]
    expected = (DATA / "monitor.json").read_text(encoding="utf-8")
    assert json.dumps(data, indent=2) + "\n" == expected
    assert json.loads(expected) == data
