"""What a prune of one node's build cache would remove, from its cache records. Pure.

BuildKit removes the records no build uses (`InUse`) and no image holds (`Shared`), of the
kinds a plain prune touches (internal and frontend records only with `all`), last used before
`until` when given; with `keep_storage` it removes the least recently used of those only until
the cache is down to that size. The plan says which records and how many bytes, so that what
the operator was shown is what goes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime

from msgspec import Struct

from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_age, fmt_bytes

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?\s*$", re.IGNORECASE)
_AGE_RE = re.compile(r"(\d+(?:\.\d+)?)(d|h|m|s)")
_AGE_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
#: record kinds a prune without `all` leaves alone (BuildKit's own words)
INTERNAL_TYPES = frozenset({"internal", "frontend"})


class CacheRecord(Struct, frozen=True):
    """One build cache record as the engine's `/system/df` gives it."""

    id: str
    size: int
    type: str = "regular"
    description: str = ""
    in_use: bool = False
    shared: bool = False
    last_used_at: float | None = None  # seconds since the epoch


class PruneFilters(Struct, frozen=True):
    """What the operator asked for: every prunable record, or fewer."""

    keep_storage: int | None = None  # bytes of cache to keep
    until_seconds: float | None = None  # only records unused for this long
    all: bool = False  # internal and frontend records too

    def describe(self) -> str:
        """`keep 10.0G, unused for 1d00h` or `everything prunable`."""
        parts = []
        if self.keep_storage is not None:
            parts.append(f"keep {fmt_bytes(self.keep_storage)}")
        if self.until_seconds is not None:
            parts.append(f"unused for {fmt_age(self.until_seconds)}")
        if self.all:
            parts.append("internal records too")
        return ", ".join(parts) or "everything prunable"


class PrunePlan(Struct, frozen=True):
    """The records a prune would remove from `node`, and their bytes."""

    node: str
    filters: PruneFilters
    records: tuple[CacheRecord, ...]
    cache_bytes: int  # the whole cache, before
    in_use: int  # records a running build holds (never pruned)

    @property
    def bytes(self) -> int:
        """What would go."""
        return sum(r.size for r in self.records)


def parse_size(text: str) -> int:
    """`10GB`, `512MiB`, `2g`, `1048576` as bytes (binary units, as buildx takes them)."""
    m = _SIZE_RE.match(text)
    if m is None:
        raise ValueError(f"not a size: {text!r} (say e.g. 10GB, 512MB)")
    number, unit = float(m.group(1)), m.group(2).lower()
    return int(number * 1024 ** " kmgt".index(unit or " "))


def parse_age(text: str) -> float:
    """`24h`, `7d`, `1h30m`, `90s` as seconds."""
    spaced = text.strip().lower()
    parts = _AGE_RE.findall(spaced)
    if not parts or "".join(n + u for n, u in parts) != spaced:
        raise ValueError(f"not an age: {text!r} (say e.g. 24h, 7d, 1h30m)")
    return sum(float(n) * _AGE_UNITS[u] for n, u in parts)


def parse_time(text: object) -> float | None:
    """An RFC 3339 time from the engine (nanoseconds allowed) as epoch seconds, else None."""
    if not isinstance(text, str) or not text:
        return None
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)?$", text)
    if m is None:
        return None
    fraction = (m.group(2) or "")[:7]
    zone = m.group(3) or "Z"
    try:
        return datetime.fromisoformat(
            m.group(1) + fraction + zone.replace("Z", "+00:00")
        ).timestamp()
    except ValueError:
        return None


def records_of(df: object) -> list[CacheRecord]:
    """The `BuildCache` records of an engine's `/system/df` answer (odd entries skipped)."""
    raw = df.get("BuildCache") if isinstance(df, dict) else None
    out = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("ID"), str):
            continue
        size = item.get("Size")
        out.append(
            CacheRecord(
                id=item["ID"],
                size=size if isinstance(size, int) and size >= 0 else 0,
                type=str(item.get("Type") or "regular"),
                description=str(item.get("Description") or ""),
                in_use=bool(item.get("InUse")),
                shared=bool(item.get("Shared")),
                last_used_at=parse_time(item.get("LastUsedAt")),
            )
        )
    return out


def plan_prune(
    node: str, records: Sequence[CacheRecord], filters: PruneFilters, now: float
) -> PrunePlan:
    """The records a prune with `filters` removes (see the module docstring)."""
    prunable = [r for r in records if not r.in_use and not r.shared]
    if not filters.all:
        prunable = [r for r in prunable if r.type not in INTERNAL_TYPES]
    if filters.until_seconds is not None:
        cutoff = now - filters.until_seconds
        prunable = [r for r in prunable if r.last_used_at is not None and r.last_used_at < cutoff]
    total = sum(r.size for r in records)
    if filters.keep_storage is not None:
        chosen = []
        for record in sorted(prunable, key=lambda r: r.last_used_at or 0.0):
            if total <= filters.keep_storage:
                break
            chosen.append(record)
            total -= record.size
        prunable = chosen
    return PrunePlan(
        node=node,
        filters=filters,
        records=tuple(sorted(prunable, key=lambda r: -r.size)),
        cache_bytes=sum(r.size for r in records),
        in_use=sum(1 for r in records if r.in_use),
    )


def summary(plan: PrunePlan, largest: int = 5) -> Iterable[str]:
    """Lines for people: the total, then the largest records (descriptions sanitised)."""
    yield (
        f"{plan.node}: {len(plan.records)} of the build cache's records, "
        f"{fmt_bytes(plan.bytes)} of {fmt_bytes(plan.cache_bytes)} ({plan.filters.describe()})"
    )
    for record in plan.records[:largest]:
        yield f"  {fmt_bytes(record.size):>7}  {one_line(record.description or record.type)[:90]}"
    if len(plan.records) > largest:
        yield f"  … and {len(plan.records) - largest} more"
    if plan.in_use:
        yield f"  ({plan.in_use} records in use by a running build stay)"


__all__ = [
    "CacheRecord",
    "PruneFilters",
    "PrunePlan",
    "parse_age",
    "parse_size",
    "parse_time",
    "plan_prune",
    "records_of",
    "summary",
]
