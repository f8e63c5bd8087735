"""One plain line of a node's vitals, for `rocmtui status`'s text (the console styles its own
Host cell from the same figures)."""

from __future__ import annotations

from rocmtui.core.text.units import fmt_age, fmt_bytes
from rocmtui.core.vitals.nodevitals import NodeVitals


def summary(vitals: NodeVitals, now: float) -> str:
    """`cpu 1580% eng 1490% mem 71% · 38.0G free of 400.0G · io 12% · cache 12.0G (ssh)`:
    what there is of it, the source last, the age when a hung source left them behind."""
    parts: list[str] = []
    cpu = " ".join(
        f"{label} {value:.0f}%"
        for label, value in (
            ("cpu", vitals.host_cpu_percent),
            ("eng", vitals.engine_cpu_percent),
            ("mem", vitals.mem_used_percent),
        )
        if value is not None
    )
    if cpu:
        parts.append(cpu)
    if vitals.data_root_free_bytes is not None:
        room = f"{fmt_bytes(vitals.data_root_free_bytes)} free"
        if vitals.data_root_total_bytes:
            room += f" of {fmt_bytes(vitals.data_root_total_bytes)}"
        parts.append(room)
    if vitals.psi_io_some_avg10 is not None:
        parts.append(f"io {vitals.psi_io_some_avg10:.0f}%")
    if vitals.build_cache_bytes is not None:
        parts.append(f"cache {fmt_bytes(vitals.build_cache_bytes)}")
    line = " · ".join(parts) or "no figures"
    line += f" ({vitals.source})"
    age = now - vitals.taken_at
    if vitals.error and age > 10:
        line += f", {fmt_age(age)} old"
    return line
