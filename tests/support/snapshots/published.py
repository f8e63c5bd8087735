"""A recorded answer for the published screen: the SNOC matrix (rocm-bake.hcl's eight images
for four arches) and its version check, at `recorded.NOW`, with every verdict on show."""

from __future__ import annotations

from rocmtui.console.backend.matrix_child import Published
from rocmtui.core.matrix.cells import Cell, CellJob, Matrix, PinDiff, RegistryImage, Row, Verdict
from rocmtui.core.versions.report import VersionRow, Versions
from rocmtui.core.versions.upstream import UpstreamAnswer
from tests.support.snapshots.recorded import NOW

ARCHES = ("gfx950", "gfx1201", "gfx1250", "gfx1151")
ROWS = ("base", "pytorch", "triton", "aiter", "cupy", "nixl", "vllm", "lmcache")
VERSIONS = {
    "base": "7.2.2",
    "pytorch": "2.15.0",
    "triton": "3.9.0",
    "aiter": "v0.1.7",
    "cupy": "14.2.0",
    "nixl": "1.5.1",
    "vllm": "0.33.0",
    "lmcache": "0.5.6",
}
DIGEST = "sha256:3c91c0a93d09587192e07baf55d1701deba3ad2758ab3322a9edaf1b635d2b7b"
OTHER = "sha256:9f2b7e0d41c3aa6b0c5e2d7f8a9b1c3d5e7f9a1b3c5d7e9f1a3b5c7d9e1f3a5b"
CACHE = {
    "requests": 23457,
    "executed": 23456,
    "hits": 21110,
    "misses": 2346,
    "errors": 0,
    "rate": 0.9,
    "backend": "Local disk",
    "location": 'Local disk: "/root/.cache/sccache"',
    "reports": 1,
}


def _job(row: str, arch: str, state: str = "succeeded", digest: str | None = DIGEST) -> CellJob:
    return CellJob(
        id="20261201-0312-a41f",
        target=f"{row}-push",
        state=state,
        node="snoc-think" if arch == "gfx1201" else "snoc-strix",
        started_at=NOW - 6 * 3600,
        ended_at=None if state == "running" else NOW - 3 * 3600,
        digest=digest,
        push=True,
        loop="in registry" if state == "succeeded" else None,
        cache=CACHE if state == "succeeded" else None,
    )


def _cell(row: str, arch: str) -> Cell:
    tag = f"snoc-strix:8080/rocm-bake/{row}:{VERSIONS[row]}-rocm7.2.2-{arch}"
    targets = (row, f"{row}-{arch}", f"{row}-push") if arch != "gfx1151" else (row, f"{row}-push")
    base = {"arch": arch, "tag": tag, "targets": targets, "push_target": f"{row}-push"}
    labels = {"rocm-bake.pin.ROCM_VERSION": "7.2.2", "rocm-bake.pin.PYTORCH_VERSION": "2.15.0"}
    image = RegistryImage(
        DIGEST,
        "application/vnd.docker.distribution.manifest.v2+json",
        9_876_543_210,
        "2025-11-30T05:41:07Z",
        labels,
    )
    job = _job(row, arch)
    if arch == "gfx1151":
        return Cell(
            **base,
            verdict=Verdict.NEVER_BUILT,
            lookup="not found",
            reason=f"tag {VERSIONS[row]}-rocm7.2.2-gfx1151 is not in the registry",
        )
    if row == "vllm" and arch == "gfx1201":
        return Cell(
            **base,
            verdict=Verdict.BUILDING,
            lookup="found",
            image=image,
            job=_job(row, arch, "running", None),
            reason="job 20261201-0312-a41f running on snoc-think",
        )
    if row == "lmcache" and arch == "gfx1250":
        return Cell(
            **base,
            verdict=Verdict.FAILED,
            lookup="not found",
            job=_job(row, arch, "failed", None),
            reason="job 20261201-0312-a41f failed",
        )
    if row == "triton" and arch == "gfx950":
        moved = RegistryImage(OTHER, image.media_type, image.size, image.created, labels)
        return Cell(
            **base,
            verdict=Verdict.MOVED,
            lookup="found",
            image=moved,
            job=job,
            pushed=job,
            reason=f"job {job.id} pushed {DIGEST[:19]}; the registry has {OTHER[:19]}",
        )
    if row in ("triton", "aiter", "cupy") and arch == "gfx1250":
        pins = (PinDiff("PYTORCH_VERSION", "2.14.0", "2.15.0"),)
        return Cell(
            **base,
            verdict=Verdict.STALE,
            lookup="found",
            image=image,
            job=job,
            pushed=job,
            pins=pins,
            reason="built from other pins: PYTORCH_VERSION 2.14.0 → 2.15.0",
        )
    if row == "nixl" and arch == "gfx950":
        return Cell(
            **base,
            verdict=Verdict.MISSING,
            lookup="not found",
            job=job,
            reason="tag 1.5.1-rocm7.2.2-gfx950 is not in the registry; job 20261201-0312-a41f "
            "pushed",
        )
    if row == "base" and arch == "gfx1250":
        return Cell(
            **base,
            verdict=Verdict.UNKNOWN,
            lookup="timeout",
            reason="timeout: no complete answer in 5s",
        )
    return Cell(**base, verdict=Verdict.PUBLISHED, lookup="found", image=image, job=job, pushed=job)


def matrix() -> Matrix:
    """The recorded matrix."""
    rows = tuple(
        Row(
            name=row, targets=(row, f"{row}-push"), cells=tuple(_cell(row, arch) for arch in ARCHES)
        )
        for row in ROWS
    )
    store = {
        "path": "/srv/webdav/sccache",
        "bytes": 412_000_000_000,
        "files": 1_204_331,
        "complete": True,
        "disk_total": 2_000_000_000_000,
        "disk_free": 901_000_000_000,
        "sampled_at": NOW - 240,
        "age": 240.0,
    }
    return Matrix(
        bake_file="/srv/rocm-bake/rocm-bake.hcl",
        registry="http://snoc-strix:8080",
        arches=ARCHES,
        rows=rows,
        taken_at=NOW - 42,
        seconds=0.61,
        requests=32,
        store=store,
    )


def _pin(
    variable: str,
    pinned: str,
    newest: str | None,
    compared: str,
    *,
    pre: str | None = None,
    state: str = "ok",
    age: float | None = 1800.0,
) -> VersionRow:
    answer = UpstreamAnswer(
        variable,
        "pypi",
        variable.lower(),
        state,
        newest,
        pre,
        age,
        "upstream unreachable: connection refused" if state == "offline" else None,
    )
    registry = {pinned: 24} if variable != "PYTORCH_VERSION" else {"2.15.0": 21, "2.14.0": 3}
    return VersionRow(variable, pinned, "default", answer, compared, registry)


def versions() -> Versions:
    """The recorded version check."""
    rows = (
        _pin("ROCM_VERSION", "7.2.2", "7.2.2", "newest", pre="7.10.0rc0"),
        _pin("PYTORCH_VERSION", "2.15.0", "2.16.0", "behind", pre="2.17.0rc1"),
        _pin("TRITON_VERSION", "3.9.0", "3.9.0", "newest", pre="3.10.0.dev20261120"),
        _pin("AITER_VERSION", "v0.1.7", "0.1.8", "behind"),
        _pin("CUPY_VERSION", "14.2.0", "14.2.0", "newest"),
        _pin("NIXL_VERSION", "1.5.1", "1.5.1", "newest", state="offline", age=3 * 3600.0),
        _pin("VLLM_VERSION", "0.33.0", "0.34.0", "behind", pre="0.35.0b1"),
        _pin("LMCACHE_VERSION", "0.5.6", "0.5.6", "newest"),
        _pin("PYTHON_VERSION", "3.12", "3.14.0", "behind", pre="3.15.0a2"),
    )
    return Versions(rows=rows, taken_at=NOW - 42, upstream_configured=True, registry_images=28)


def published() -> Published:
    """What the child would answer."""
    return Published(matrix(), versions())
