"""What a job made, beside its record: its images (one per target), whether the registry holds
what it pushed, and what the compile cache did.

Files in the job's folder (see `store.py` for the others):

    targets.json   written at launch: each target bake resolved the name to, with its tags, arch
                   and whether it pushes (bake's own view under the job's environment)
    registry.json  written when a pushing job ends: the closed loop (`registry.pushcheck.PushCheck`)
    sccache.json   written when a job ends: the compile cache statistics its log reported

With bake's metadata file (one entry per target, each with its digest) they give every image of
a job: a group job shows each of its targets with its own digest, not one digest for all.
Every reader here tolerates a missing or damaged file (an older job, a full disk): it says
nothing rather than fail.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Struct

from rocmtui.core.jobs.printed import printed_pushes, requested_targets
from rocmtui.core.jobs.store import write_json_atomic
from rocmtui.core.progress.sccache import CacheStats, scan_log
from rocmtui.core.registry.pushcheck import PushCheck, Pushed, check_pushed
from rocmtui.core.states import JobState

if TYPE_CHECKING:
    from rocmtui.core.jobs.record import JobRecord

TARGETS_FILE = "targets.json"
PUSH_CHECK_FILE = "registry.json"
CACHE_STATS_FILE = "sccache.json"
PUSH_CHECK_TIMEOUT = 5.0  # per image: the supervisor never waits longer on the registry


class JobImage(Struct, frozen=True):
    """One target a job built: its tags, arch, whether it pushed, and bake's digest for it."""

    target: str
    tags: tuple[str, ...] = ()
    arch: str | None = None
    pushes: bool = False
    digest: str | None = None
    media_type: str | None = None


def targets_of(printed: Mapping[str, Any], push: bool) -> dict[str, dict[str, Any]]:
    """What targets.json holds for a launch: bake's requested targets (not those it builds
    only as another's context), each with tags, arch and push (`push`: the launch's --push)."""
    out: dict[str, dict[str, Any]] = {}
    for name, body in requested_targets(printed).items():
        tags = body.get("tags")
        args = body.get("args")
        arch = args.get("GFX_ARCH") if isinstance(args, Mapping) else None
        out[name] = {
            "tags": [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
            "arch": arch if isinstance(arch, str) else None,
            "pushes": push or printed_pushes(body),
        }
    return out


def write_targets(job_dir: Path, printed: Mapping[str, Any] | None, push: bool) -> None:
    """Write targets.json at launch (nothing when bake's view is unknown)."""
    targets = targets_of(printed or {}, push)
    if targets:
        write_json_atomic(job_dir / TARGETS_FILE, {"targets": targets})


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _metadata_entries(path: Path) -> dict[str, Mapping[str, Any]]:
    """bake's metadata file: target -> its entry (a single-target file may be flat)."""
    data = _read_json(path)
    if not isinstance(data, dict):
        return {}
    if "containerimage.digest" in data:
        return {"": data}
    return {str(k): v for k, v in data.items() if isinstance(v, Mapping)}


def _digest(entry: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    if entry is None:
        return None, None
    digest = entry.get("containerimage.digest")
    descriptor = entry.get("containerimage.descriptor")
    kind = descriptor.get("mediaType") if isinstance(descriptor, Mapping) else None
    return (
        digest if isinstance(digest, str) and digest.startswith("sha256:") else None,
        kind if isinstance(kind, str) else None,
    )


def job_images(
    job_dir: Path | str, target: str = "", arch: str | None = None
) -> tuple[JobImage, ...]:
    """Every image of the job in `job_dir`: targets.json joined with bake's metadata file.
    An older job without targets.json gives one entry per metadata target (no tags)."""
    folder = Path(job_dir)
    entries = _metadata_entries(folder / "metadata.json")
    data = _read_json(folder / TARGETS_FILE)
    listed = data.get("targets") if isinstance(data, dict) else None
    images: list[JobImage] = []
    if isinstance(listed, dict):
        for name, info in listed.items():
            if not isinstance(info, dict):
                continue
            entry = entries.get(name) or (entries.get("") if len(listed) == 1 else None)
            digest, kind = _digest(entry)
            tags = info.get("tags")
            images.append(
                JobImage(
                    target=str(name),
                    tags=tuple(t for t in tags if isinstance(t, str))
                    if isinstance(tags, list)
                    else (),
                    arch=info.get("arch") if isinstance(info.get("arch"), str) else arch,
                    pushes=bool(info.get("pushes")),
                    digest=digest,
                    media_type=kind,
                )
            )
        return tuple(images)
    for name, entry in entries.items():
        digest, kind = _digest(entry)
        images.append(JobImage(target=name or target, arch=arch, digest=digest, media_type=kind))
    return tuple(images)


def read_push_check(job_dir: Path | str) -> PushCheck | None:
    """The job's closed loop (None: it pushed nothing, or was not checked)."""
    data = _read_json(Path(job_dir) / PUSH_CHECK_FILE)
    if not isinstance(data, dict):
        return None
    try:
        return msgspec.convert(data, PushCheck)
    except ValueError:
        return None


def read_cache_stats(job_dir: Path | str) -> CacheStats | None:
    """The job's compile cache statistics (None: its log reported none)."""
    data = _read_json(Path(job_dir) / CACHE_STATS_FILE)
    if not isinstance(data, dict):
        return None
    try:
        return CacheStats.from_json(data)
    except ValueError:
        return None


def check_push(
    record: JobRecord, registry_url: str, timeout: float = PUSH_CHECK_TIMEOUT
) -> PushCheck | None:
    """Ask the registry about every image the job pushed (see `registry.pushcheck`)."""
    pushed = [
        Pushed(image.target, tag, image.digest, image.media_type)
        for image in job_images(record.job_dir, record.target, record.arch)
        if image.pushes
        for tag in image.tags[:1]  # the first tag is the image's name; others alias it
    ]
    return check_pushed(pushed, registry_url, timeout)


def record_afterwards(record: JobRecord, registry_url: str | None) -> None:
    """What the supervisor writes once a job has ended (its outcome is recorded already):
    the compile cache statistics from its log and, for a pushing job that succeeded, the
    closed loop. A failure here never changes the job's outcome."""
    if record.push and registry_url and record.state == JobState.SUCCEEDED:
        check = check_push(record, registry_url)  # first: the registry as the push left it
        if check is not None:
            write_json_atomic(record.path / PUSH_CHECK_FILE, msgspec.to_builtins(check))
    stats = scan_log(record.log_path)
    if stats is not None:
        write_json_atomic(record.path / CACHE_STATS_FILE, stats.to_json())


def file_mtime(path: Path) -> float | None:
    """A file's mtime (None when absent): readers cache what they parsed by it."""
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None
