"""Recorded build history for tests and bench: deterministic cost rows (no random state), as
the cost book holds them, for a few targets × arches × nodes under the four conditions."""

from __future__ import annotations

from rocmtui.core.costbook.book import CostRow
from rocmtui.core.costbook.cost import BuildEvidence

T0 = 1_764_547_200.0  # 2025-12-01 00:00 UTC
HOUR = 3600.0
TARGETS = ("pytorch", "vllm", "triton", "aiter")
ARCHES = ("gfx950", "gfx1201")
NODES = ("snoc-think", "snoc-gaming")
# condition -> (steps cached of 31, sccache hits of 100, hours a pytorch build takes)
SHAPES = {
    "frozen": (31, None, 0.02),
    "hot": (24, 0, 0.4),
    "warm": (0, 92, 2.1),
    "cold": (0, 7, 5.5),
}
ORDER = ("warm", "warm", "frozen", "hot", "warm", "cold", "warm", "frozen", "warm", "hot")


def recorded_rows(count: int, jump_last: bool = False) -> list[CostRow]:
    """`count` finished builds, oldest first, 40 minutes apart; with `jump_last`, the newest
    warm pytorch gfx1201 build on snoc-think takes twice its usual time."""
    rows = []
    for i in range(count):
        target = TARGETS[i % len(TARGETS)]
        arch = ARCHES[i // len(TARGETS) % len(ARCHES)]
        node = NODES[i // (len(TARGETS) * len(ARCHES)) % len(NODES)]
        condition = ORDER[i // 16 % len(ORDER)]
        cached, hits, hours = SHAPES[condition]
        scale = 1.0 + 0.1 * ((i * 7) % 5) / 4  # 1.0 .. 1.1, deterministic
        took = hours * HOUR * scale / (1 + TARGETS.index(target))
        failed = i % 23 == 22
        rows.append(
            CostRow(
                job_id=f"20251201-0000-{i:05x}",
                target=target,
                arch=arch,
                node=node,
                started_at=T0 + i * 2400.0,
                ended_at=T0 + i * 2400.0 + took,
                duration=took,
                outcome="failed" if failed else "succeeded",
                origin="elsewhere" if i % 3 == 0 else "rocmtui",
                started_by="bake/rocm-bake (pytorch)" if i % 3 == 0 else "ci@snoc-strix",
                evidence=BuildEvidence(
                    steps_total=31,
                    steps_cached=cached,
                    sccache_hits=hits,
                    sccache_misses=None if hits is None else 100 - hits,
                    steps_from="log",
                ),
            )
        )
    if jump_last:
        group = ("pytorch", "gfx1201", "snoc-think")
        last = max(
            (
                r
                for r in rows
                if r.group == group and r.condition == "warm" and r.outcome == "succeeded"
            ),
            key=lambda r: r.started_at,
        )
        from msgspec.structs import replace

        rows[rows.index(last)] = replace(last, duration=last.duration * 2)
    return rows
