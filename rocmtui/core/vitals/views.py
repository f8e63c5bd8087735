"""A node's vitals as JSON: the form `status --json`, the monitor's wire and the browser share.

Every figure (units in the names, null when unknown), the source, then what is computed: the
age in seconds and the data root's use. Not the counters (raw cumulative values kept only for
the rates). A view Struct, encoded by msgspec; read back into `NodeVitals` by `convert`,
which ignores the computed fields.
"""

from __future__ import annotations

from msgspec import Struct

from rocmtui.core.vitals.nodevitals import EngineProcess, NodeVitals


class VitalsView(Struct, frozen=True, kw_only=True):
    """`NodeVitals` as printed (see the module doc; the fields are NodeVitals' own)."""

    node: str
    source: str
    taken_at: float
    cpu_count: int | None
    host_cpu_percent: float | None
    engine_cpu_percent: float | None
    engine_processes: int | None
    busiest: EngineProcess | None
    load1: float | None
    mem_used_percent: float | None
    mem_total_bytes: int | None
    swap_used_percent: float | None
    swap_in_pages_per_second: float | None
    psi_cpu_some_avg10: float | None
    psi_io_some_avg10: float | None
    psi_io_full_avg10: float | None
    psi_memory_some_avg10: float | None
    psi_memory_full_avg10: float | None
    data_root: str | None
    data_root_free_bytes: int | None
    data_root_total_bytes: int | None
    build_cache_bytes: int | None
    oom_kills_total: int | None
    engine_oom_kills_total: int | None
    missing: tuple[str, ...]
    error: str | None
    age: float
    data_root_used_percent: float | None

    @classmethod
    def of(cls, vitals: NodeVitals, now: float) -> VitalsView:
        """The printed form of `vitals`, its age as of `now`."""
        fields = {name: getattr(vitals, name) for name in NodeVitals.__struct_fields__}
        del fields["counters"]
        used = vitals.data_root_used_percent
        return cls(
            **fields,
            age=round(max(0.0, now - vitals.taken_at), 3),
            data_root_used_percent=None if used is None else round(used, 1),
        )


__all__ = ["VitalsView"]
