"""A job record as JSON: what `rocmtui jobs --json`, `status --json`'s `builds`, `bake --json`
and each job folder's record.json print. The stored fields in their order, then what is
computed from them (`started_elsewhere`; an outside build's `cached_percent`): view Structs
that extend the records by those fields, encoded by msgspec (no dict built by hand)."""

from __future__ import annotations

from typing import Any

from msgspec import json

from rocmtui.core.history.outside import OutsideBuild
from rocmtui.core.jobs.record import JobRecord


class OutsideView(OutsideBuild, frozen=True, kw_only=True):
    """An outside build as printed: its fields, then its cached percent."""

    cached_percent: int | None

    @classmethod
    def of(cls, build: OutsideBuild) -> OutsideView:
        """The printed form of `build`."""
        fields = {name: getattr(build, name) for name in OutsideBuild.__struct_fields__}
        return cls(**fields, cached_percent=build.cached_percent)


class JobRecordView(JobRecord, frozen=True, kw_only=True):
    """A job record as printed: its stored fields, then whether it was started elsewhere."""

    started_elsewhere: bool

    @classmethod
    def of(cls, record: JobRecord) -> JobRecordView:
        """The printed form of `record` (a subclass's own fields are not printed)."""
        fields = {name: getattr(record, name) for name in JobRecord.__struct_fields__}
        outside = record.outside
        fields["outside"] = OutsideView.of(outside) if outside is not None else None
        return cls(**fields, started_elsewhere=record.started_elsewhere)


def record_json(record: JobRecord) -> dict[str, Any]:
    """A JSON-ready dict of `record` (plain dicts and lists; the state as its word)."""
    data: dict[str, Any] = json.decode(json.encode(JobRecordView.of(record)))
    return data


__all__ = ["JobRecordView", "OutsideView", "record_json"]
