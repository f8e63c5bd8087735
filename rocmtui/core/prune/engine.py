"""A node's build cache as its engine tells it, and the prune itself: the engine API's
`/system/df` and `/build/prune`, over the endpoint the probes use (unix, ssh, TLS, a context).
Blocking (the docker SDK, and ssh for an ssh:// engine); every call under `timeout`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from msgspec import Struct

from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
from rocmtui.core.jobs.remote import endpoint_of
from rocmtui.core.probes.api_versions import negotiate
from rocmtui.core.probes.engine_calls import client_for, dialer_for
from rocmtui.core.prune.plan import CacheRecord, PruneFilters, records_of
from rocmtui.core.text.sanitize import one_line


class EngineUnreachable(Exception):
    """The node's engine could not be asked (one line naming the node and why)."""


class PruneResult(Struct, frozen=True):
    """What the engine says it removed."""

    deleted: tuple[str, ...]
    reclaimed_bytes: int


def _with_client(
    node: NodeConfig,
    config: FleetConfig | None,
    env: Mapping[str, str],
    timeout: float,
    call: Callable[[Any], Any],
) -> Any:
    endpoint = endpoint_of(node, config, env)
    if endpoint is None:
        raise EngineUnreachable(f"{node.name}: its engine endpoint cannot be resolved")
    dialer = dialer_for(endpoint, timeout, None)
    try:
        client = client_for(endpoint, timeout, dialer)
        try:
            # the version both speak (an engine of 20.10 refuses the SDK's newest outright)
            said = client.api.version(api_version=False)
            client.api._version = negotiate(said.get("ApiVersion"), said.get("MinAPIVersion"))
            return call(client)
        finally:
            client.close()
    except EngineUnreachable:
        raise
    except Exception as exc:  # the SDK's, requests', ssh's errors: one line with the node
        raise EngineUnreachable(one_line(f"{node.name}: {type(exc).__name__}: {exc}")) from None
    finally:
        if dialer is not None:
            dialer.reap()


def read_cache(
    node: NodeConfig, config: FleetConfig | None, env: Mapping[str, str], timeout: float = 20.0
) -> list[CacheRecord]:
    """The node's build cache records (`/system/df`)."""
    return records_of(_with_client(node, config, env, timeout, lambda c: c.api.df()))


def prune_cache(
    node: NodeConfig,
    filters: PruneFilters,
    config: FleetConfig | None,
    env: Mapping[str, str],
    timeout: float = 120.0,
) -> PruneResult:
    """Prune the node's build cache with `filters` (`/build/prune`)."""
    wanted: dict[str, Any] = {}
    if filters.until_seconds is not None:
        wanted["until"] = f"{int(filters.until_seconds)}s"

    def call(client: Any) -> Any:
        return client.api.prune_builds(
            filters=wanted or None,
            keep_storage=filters.keep_storage,
            all=True if filters.all else None,
        )

    said = _with_client(node, config, env, timeout, call)
    said = said if isinstance(said, dict) else {}
    deleted = said.get("CachesDeleted") or []
    reclaimed = said.get("SpaceReclaimed")
    return PruneResult(
        deleted=tuple(str(d) for d in deleted if isinstance(d, str)),
        reclaimed_bytes=reclaimed if isinstance(reclaimed, int) else 0,
    )


__all__ = ["EngineUnreachable", "PruneResult", "prune_cache", "read_cache"]
