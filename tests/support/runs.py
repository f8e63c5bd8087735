"""Recorded fleet runs for Pilot tests, SVG snapshots and benchmarks (no store, no process):
deterministic, on the recorded SNOC fleet's three nodes."""

from __future__ import annotations

from rocmtui.core.costbook.cost import CONDITIONS, Condition
from rocmtui.core.runs.run import Run, RunBuild

T0 = 1_796_000_000.0  # 2026-12-01 ...
NODES = ("snoc-strix", "snoc-think", "snoc-gaming")
TARGETS = ("base", "pytorch", "triton", "aiter", "cupy", "nixl", "vllm", "lmcache")
ARCH = {"snoc-strix": "gfx1151", "snoc-think": "gfx1201", "snoc-gaming": "gfx1201"}
DAY = 86400.0


def recorded_run(index: int, builds: int = 24, running_at: float | None = None) -> Run:
    """The `index`-th nightly run: `builds` builds spread over the three nodes, each node's
    back to back; run 1 has pytorch on snoc-think 40 minutes slower than run 0. With
    `running_at`, builds not ended by then are running."""
    start = T0 + index * DAY
    out = []
    per_node = max(1, builds // len(NODES))
    for n, node in enumerate(NODES):
        at = start + n * 3.0  # one bake invocation: started within seconds
        for k in range(per_node):
            target = TARGETS[k % len(TARGETS)]
            minutes = 8 + ((k * 7 + n * 5) % 23)
            if target == "pytorch":
                minutes = 95 + n * 10 + (40 if index % 2 == 1 and node == "snoc-think" else 0)
            end = at + minutes * 60
            condition = CONDITIONS[(k + n + index) % 4]
            state = "failed" if (index, n, k) == (1, 0, 3) else "succeeded"
            ended: float | None = end
            if running_at is not None and end > running_at:
                state, ended, condition = "running", None, Condition.UNKNOWN
            if running_at is not None and at > running_at:
                break
            out.append(
                RunBuild(
                    job_id=f"{20261201 + index:08d}-0200-{n:01x}{k:03x}",
                    node=node,
                    target=target,
                    arch=ARCH[node],
                    started_at=at,
                    ended_at=ended,
                    state=state,
                    condition=condition,
                )
            )
            at = end + 20
    return Run(
        id=f"run-{20261201 + index:08d}-0200-{index:04x}",
        target="nightly",
        started_at=start,
        origin="rocmtui",
        started_by="ci@snoc-strix",
        nodes=NODES,
        builds=tuple(out),
    )


def recorded_runs(count: int = 3, builds: int = 24) -> list[Run]:
    """`count` nightly runs, newest first."""
    return [recorded_run(i, builds) for i in reversed(range(count))]


__all__ = ["ARCH", "NODES", "T0", "recorded_run", "recorded_runs"]
