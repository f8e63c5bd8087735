"""The one door to a prune, for the CLI and the console alike: refused in read-only mode and
while a build runs on the node (unless asked), it reads the node's cache, shows the plan to
`confirm`, prunes with the same filters, and records who pruned what and when."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

from msgspec import Struct

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.jobs.control import is_alive
from rocmtui.core.jobs.refusals import refuse_if_read_only
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.prune.engine import PruneResult, prune_cache, read_cache
from rocmtui.core.prune.plan import PruneFilters, PrunePlan, plan_prune
from rocmtui.core.prune.record import record_prune


class PruneRefused(Exception):
    """A prune the core will not do (an unknown node, a build running there), one line."""


class PruneOutcome(Struct, frozen=True):
    """The plan shown, and what the engine removed (None: the operator said no)."""

    plan: PrunePlan
    result: PruneResult | None = None


def builds_on(store: JobStore, node: str) -> list[str]:
    """Ids of the builds running on `node` now, by the job store (rocmtui's and others')."""
    return [
        r.id for r in store.list(limit=None, unfinished_only=True) if r.node == node and is_alive(r)
    ]


def plan_node(
    config: FleetConfig,
    node_name: str,
    filters: PruneFilters,
    env: Mapping[str, str] | None = None,
    now: float | None = None,
) -> PrunePlan:
    """What a prune of `node_name` with `filters` would remove (blocking: asks its engine)."""
    node = config.node(node_name)
    if node is None:
        raise PruneRefused(f"no node named {node_name!r} in the fleet file")
    records = read_cache(node, config, os.environ if env is None else env)
    return plan_prune(node.name, records, filters, time.time() if now is None else now)


def prune_node(
    config: FleetConfig,
    node_name: str,
    filters: PruneFilters,
    confirm: Callable[[PrunePlan], bool],
    *,
    allow_running: bool = False,
    store: JobStore | None = None,
    env: Mapping[str, str] | None = None,
) -> PruneOutcome:
    """Show, ask, prune and record (see the module docstring). Raises ReadOnlyRefused,
    PruneRefused, or prune.engine.EngineUnreachable."""
    refuse_if_read_only(config, "pruning a node's build cache")
    store = store or JobStore.for_config(config, env)
    plan = plan_node(config, node_name, filters, env)
    running = builds_on(store, plan.node)
    if not allow_running and (running or plan.in_use):
        said = f"job {', '.join(running)}" if running else f"{plan.in_use} cache records in use"
        raise PruneRefused(
            f"a build runs on {plan.node} ({said}): not pruning while it does "
            "(--allow-running to prune all the same)"
        )
    if not confirm(plan):
        return PruneOutcome(plan)
    node = config.node(plan.node)
    assert node is not None
    result = prune_cache(node, filters, config, os.environ if env is None else env)

    record_prune(store, plan, result)
    return PruneOutcome(plan, result)


__all__ = ["PruneOutcome", "PruneRefused", "builds_on", "plan_node", "prune_node"]
