"""BuildKit's history JSON -> `HistoryEntry` / `OutsideBuild` fields: sanitised, redacted, and
never trusting a field to be there or to have its type.

`history ls --format json` prints one JSON object a line (`ref` builder/node/id, `name`,
`status` Running/Completed/Error, `created_at`, `completed_at`, step counts). `history inspect
--format json` prints one object (`Name`, `Ref`, `Target`, `Platform`, `StartedAt`,
`CompletedAt`, `Duration` ns, `Status`, `NumCompletedSteps`, `NumTotalSteps`,
`NumCachedSteps`, `BuildArgs` [{Name, Value}], `Labels`, `VCSRevision`, `VCSRepository`,
`Error` {Message, ...}, `Exporters`/`Attrs`). A line or field that is missing, of the wrong
type, or absurd is skipped or left None; text is run through `core.text.sanitize` (escape sequences
never reach a terminal or a record), build args through `core.text.redact`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from rocmtui.core.history.outside import (
    STATUS_COMPLETED,
    STATUS_ERROR,
    STATUS_RUNNING,
    OutsideBuild,
)
from rocmtui.core.jobs.command import JOB_BUILD_ARG
from rocmtui.core.states import JobState
from rocmtui.core.text.redact import Redactor, is_secret_name
from rocmtui.core.text.sanitize import sanitize_line

NAME_MAX = 200
VALUE_MAX = 400
ERROR_MAX = 400
MAX_ARGS = 200
_REF_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
_STATUSES = {"running": STATUS_RUNNING, "completed": STATUS_COMPLETED, "error": STATUS_ERROR}
# how `docker buildx bake` names its records: `bake/<file stem> (<target>)`
_BAKE_NAME_RE = re.compile(r"\(([^()]+)\)\s*$")


class HistoryEntry(Struct, frozen=True):
    """One line of `history ls`: enough to know a build and whether it still runs."""

    ref: str  # the record id (last part of builder/node/id): what inspect and logs take
    builder_ref: str
    name: str | None
    status: str  # running, completed, error (lower-case); an unknown word reads as error
    created_at: float | None
    completed_at: float | None
    total_steps: int | None
    completed_steps: int | None
    cached_steps: int | None

    @property
    def running(self) -> bool:
        """Still running, as BuildKit says."""
        return self.status == STATUS_RUNNING


def text(value: object, limit: int = VALUE_MAX) -> str | None:
    """A string field, sanitised to one line; None when absent or not a string."""
    if not isinstance(value, str):
        return None
    return sanitize_line(value, limit)


def count(value: object) -> int | None:
    """A step count: a non-negative int, else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def timestamp(value: object) -> float | None:
    """An RFC 3339 time (BuildKit writes nanoseconds) as epoch seconds, else None."""
    if not isinstance(value, str) or not value or value.startswith("0001-01-01"):
        return None
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", value.strip())
    if m is None:
        return None
    frac = (m.group(2) or ".0")[:7]
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    try:
        return datetime.fromisoformat(f"{m.group(1)}{frac}{zone}").timestamp()
    except ValueError:
        return None


def status_word(value: object) -> str:
    """BuildKit's status as our lower-case word; anything unknown reads as an error."""
    if not isinstance(value, str):
        return STATUS_ERROR
    return _STATUSES.get(value.strip().lower(), STATUS_ERROR)


def record_id(ref: object) -> str | None:
    """`builder/node/id` (or a bare id) -> the id, when it looks like one."""
    if not isinstance(ref, str):
        return None
    last = ref.strip().rsplit("/", 1)[-1]
    return last if _REF_RE.match(last) else None


def parse_ls(output: str) -> list[HistoryEntry]:
    """Every well-formed line of `history ls --format json` (others skipped), in order."""
    entries: list[HistoryEntry] = []
    for line in output.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        ref = record_id(data.get("ref"))
        if ref is None:
            continue
        entries.append(
            HistoryEntry(
                ref=ref,
                builder_ref=text(data.get("ref"), NAME_MAX) or ref,
                name=text(data.get("name"), NAME_MAX),
                status=status_word(data.get("status")),
                created_at=timestamp(data.get("created_at")),
                completed_at=timestamp(data.get("completed_at")),
                total_steps=count(data.get("total_steps")),
                completed_steps=count(data.get("completed_steps")),
                cached_steps=count(data.get("cached_steps")),
            )
        )
    return entries


def raw_build_args(data: Mapping[str, Any]) -> dict[str, str]:
    """inspect's `BuildArgs` as name -> value, unsanitised (for rocmtui's own job arg only)."""
    out: dict[str, str] = {}
    items = data.get("BuildArgs")
    if not isinstance(items, list):
        return out
    for item in items[:MAX_ARGS]:
        if isinstance(item, dict) and isinstance(item.get("Name"), str):
            value = item.get("Value")
            out[item["Name"]] = value if isinstance(value, str) else ""
    return out


def build_args(data: Mapping[str, Any], env: Mapping[str, str] | None = None) -> dict[str, str]:
    """inspect's `BuildArgs`, safe to store and show: names and values sanitised; a
    secret-like name's value, and any secret value of such an arg or of `env` wherever it
    appears, redacted."""
    raw = raw_build_args(data)
    secrets = {k: v for k, v in raw.items() if is_secret_name(k)}
    redactor = Redactor(env, extra=secrets)
    clean: dict[str, str] = {}
    for name, value in raw.items():
        safe_name = sanitize_line(name, NAME_MAX)
        clean[safe_name] = sanitize_line(value, VALUE_MAX)
    return redactor.redact_mapping(clean)


def error_message(data: Mapping[str, Any]) -> str | None:
    """inspect's `Error.Message`, one sanitised line (None when the build had no error)."""
    err = data.get("Error")
    if isinstance(err, dict):
        return text(err.get("Message"), ERROR_MAX) or text(err.get("Name"), ERROR_MAX)
    return text(err, ERROR_MAX) if err else None


def duration_seconds(data: Mapping[str, Any]) -> float | None:
    """inspect's `Duration` (nanoseconds) in seconds."""
    value = data.get("Duration")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return value / 1e9


def platforms(data: Mapping[str, Any]) -> tuple[str, ...]:
    """inspect's `Platform` list (strings only)."""
    value = data.get("Platform")
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    return tuple(s for p in value[:8] if (s := text(p, 60)))


def pushes(data: Mapping[str, Any]) -> bool:
    """Whether an exporter of the build pushed to a registry (`push=true` in its attrs)."""
    blob = json.dumps([data.get("Exporters"), data.get("Attrs"), data.get("Config")])
    return bool(re.search(r'"push"\s*:\s*"?true', blob, re.IGNORECASE))


def target_of(data: Mapping[str, Any], name: str | None) -> str | None:
    """inspect's `Target`, else the target bake put in the record's name (`bake/x (t)`)."""
    target = text(data.get("Target"), NAME_MAX)
    if target:
        return target
    m = _BAKE_NAME_RE.search(name or "")
    return m.group(1).strip() if m else None


def parse_inspect(output: str) -> dict[str, Any] | None:
    """`history inspect --format json` as a dict, or None when it is not one JSON object."""
    try:
        data = json.loads(output)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


__all__ = [
    "HistoryEntry",
    "build_args",
    "duration_seconds",
    "error_message",
    "finished_state",
    "outside_build",
    "parse_inspect",
    "parse_ls",
    "platforms",
    "pushes",
    "raw_build_args",
    "record_id",
    "status_word",
    "target_of",
    "text",
    "timestamp",
]


def outside_build(
    ref: str,
    entry: HistoryEntry | None,
    data: Mapping[str, Any] | None,
    previous: OutsideBuild | None = None,
    env: Mapping[str, str] | None = None,
    now: float | None = None,
) -> OutsideBuild:
    """What is known of build `ref`: the `history ls` line, the `history inspect` object (either
    may be None) and what was stored before, the newest winning field by field."""
    base = previous or OutsideBuild(ref=ref)
    fields: dict[str, Any] = {}
    if entry is not None:
        fields.update(
            builder_ref=entry.builder_ref,
            name=entry.name or base.name,
            status=entry.status,
            total_steps=entry.total_steps,
            completed_steps=entry.completed_steps,
            cached_steps=entry.cached_steps,
            seen_at=now,
        )
    if data is not None:
        name = text(data.get("Name"), NAME_MAX) or fields.get("name") or base.name
        args = build_args(data, env)
        job = raw_build_args(data).get(JOB_BUILD_ARG)
        fields.update(
            name=name,
            target=target_of(data, name),
            platforms=platforms(data),
            build_args=args,
            vcs_revision=text(data.get("VCSRevision"), 80),
            vcs_source=text(data.get("VCSRepository") or data.get("VCSSource"), NAME_MAX),
            context=text(data.get("Context"), NAME_MAX),
            status=status_word(data.get("Status")),
            total_steps=count(data.get("NumTotalSteps")),
            completed_steps=count(data.get("NumCompletedSteps")),
            cached_steps=count(data.get("NumCachedSteps")),
            error=error_message(data),
            duration=duration_seconds(data),
            pushes=pushes(data),
            inspected=True,
        )
        if job:
            fields["client"] = sanitize_line(f"rocmtui job {job} (another state folder)", 120)
    elif entry is not None and base.target is None:
        fields["target"] = target_of({}, entry.name)
    return replace(base, **fields)


def finished_state(status: str, error: str | None) -> JobState:
    """A finished build's job state: completed -> succeeded; an error -> failed, or
    cancelled when BuildKit's error says the build was cancelled (a cancel reads Error)."""
    if status == STATUS_COMPLETED:
        return JobState.SUCCEEDED
    if error and re.search(r"\bcancel+ed\b", error, re.IGNORECASE):
        return JobState.CANCELLED
    return JobState.FAILED
