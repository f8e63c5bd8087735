"""What went into a build, for telling why its cache missed: its build args, the bake variables
set for it, its materials (base images, with digests) and sccache's hit rate.

- rocmtui's own jobs: bake's metadata file (`buildx.build.provenance`: the resolved build
  args as `build-arg:NAME` and the materials with their digests), the job's overrides (the
  bake variables set for it, redacted as stored), its sccache statistics;
- builds started elsewhere: BuildKit's history record as read by `history inspect`
  (`OutsideBuild.build_args`, sanitised and redacted); no materials unless the metadata says.

Every value is outside text: sanitised here (`sanitize_line`), a secret-like arg's value
redacted (`core.text.redact`) before anyone shows it.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from msgspec import Struct, field

from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.redaction import redact_mapping
from rocmtui.core.text.sanitize import sanitize_line

#: Build args that differ between any two builds and say nothing about the cache.
IGNORED_ARGS = frozenset({"ROCMTUI_JOB", "BUILDKIT_BUILD_NAME"})
VALUE_MAX = 200


class BuildFacts(Struct, frozen=True):
    """What went into one build (see the module doc); empty where it is not known."""

    args: dict[str, str] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)  # bake variables set for it
    materials: dict[str, str] = field(default_factory=dict)  # uri -> digest
    hit_rate: float | None = None
    known: tuple[str, ...] = ()  # what could be read: "build args", "materials", ...


def _provenance(data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, dict):
        return []
    found = []
    for entry in [data, *data.values()]:
        if isinstance(entry, dict):
            prov = entry.get("buildx.build.provenance")
            if isinstance(prov, dict):
                found.append(prov)
    return found


def from_metadata(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """(build args, materials) from bake's metadata file (empty when it has no provenance)."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}, {}
    args: dict[str, str] = {}
    materials: dict[str, str] = {}
    for prov in _provenance(data):
        # any level may be missing or of another shape (outside data): read what fits
        invocation = prov.get("invocation")
        params = invocation.get("parameters") if isinstance(invocation, dict) else None
        raw = params.get("args") if isinstance(params, dict) else None
        if isinstance(raw, dict):
            for key, value in raw.items():
                if isinstance(key, str) and key.startswith("build-arg:"):
                    args[key[len("build-arg:") :]] = str(value)
        found = prov.get("materials")
        for material in found if isinstance(found, list) else ():
            if not isinstance(material, dict):
                continue
            uri, digest = material.get("uri"), material.get("digest")
            if isinstance(uri, str) and isinstance(digest, dict) and digest:
                algo, value = next(iter(digest.items()))
                materials[sanitize_line(uri, VALUE_MAX)] = sanitize_line(f"{algo}:{value}", 100)
    clean = {sanitize_line(k, 80): sanitize_line(v, VALUE_MAX) for k, v in args.items()}
    return redact_mapping(clean), materials


def facts_of(record: JobRecord, hit_rate: float | None = None) -> BuildFacts:
    """A build's facts from its job folder and record."""
    known: list[str] = []
    args: dict[str, str] = {}
    materials: dict[str, str] = {}
    with contextlib.suppress(OSError):
        args, materials = from_metadata(record.metadata_path.read_text(encoding="utf-8"))
    if not args and record.outside is not None and record.outside.build_args:
        args = dict(record.outside.build_args)
    if args:
        known.append("build args")
    if materials:
        known.append("materials")
    variables = {
        sanitize_line(k, 80): sanitize_line(v, VALUE_MAX) for k, v in record.overrides.items()
    }
    if record.outside is None:
        known.append("bake variables")
    if hit_rate is not None:
        known.append("sccache hit rate")
    return BuildFacts(
        args={k: v for k, v in args.items() if k not in IGNORED_ARGS},
        variables=variables,
        materials=materials,
        hit_rate=hit_rate,
        known=tuple(known),
    )


__all__ = ["IGNORED_ARGS", "BuildFacts", "facts_of", "from_metadata"]
