"""Who pruned what and when: one row per prune in the job store's `prunes` table (made on
first use: a store from before it gains the table the first time a prune is recorded)."""

from __future__ import annotations

import getpass
import json
import socket
import time

from msgspec import Struct, to_builtins

from rocmtui.core.jobs.store import JobStore
from rocmtui.core.prune.engine import PruneResult
from rocmtui.core.prune.plan import PrunePlan

TABLE = """
    at REAL NOT NULL,
    user TEXT NOT NULL,
    host TEXT NOT NULL,
    node TEXT NOT NULL,
    filters TEXT NOT NULL,
    planned_records INTEGER NOT NULL,
    planned_bytes INTEGER NOT NULL,
    deleted_records INTEGER NOT NULL,
    reclaimed_bytes INTEGER NOT NULL
"""


class PruneRow(Struct, frozen=True):
    """One prune on record."""

    at: float
    user: str
    host: str
    node: str
    filters: str  # the filters as JSON
    planned_records: int
    planned_bytes: int
    deleted_records: int
    reclaimed_bytes: int


def record_prune(
    store: JobStore, plan: PrunePlan, result: PruneResult, now: float | None = None
) -> PruneRow:
    """Keep who pruned `plan`'s node, with what filters, and what went."""
    row = PruneRow(
        at=time.time() if now is None else now,
        user=getpass.getuser(),
        host=socket.gethostname(),
        node=plan.node,
        filters=json.dumps(to_builtins(plan.filters), sort_keys=True),
        planned_records=len(plan.records),
        planned_bytes=plan.bytes,
        deleted_records=len(result.deleted),
        reclaimed_bytes=result.reclaimed_bytes,
    )
    with store.connect(write=True) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS prunes ({TABLE})")
        conn.execute(
            "INSERT INTO prunes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (row.at, row.user, row.host, row.node, row.filters, row.planned_records,
             row.planned_bytes, row.deleted_records, row.reclaimed_bytes),
        )  # fmt: skip
    return row


def prunes(store: JobStore, node: str | None = None) -> list[PruneRow]:
    """Prunes on record, newest first (of `node` only when given)."""
    with store.connect() as conn:
        known = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'prunes'"
        ).fetchone()
        if known is None:
            return []
        sql = "SELECT * FROM prunes" + (" WHERE node = ?" if node else "") + " ORDER BY at DESC"
        rows = conn.execute(sql, (node,) if node else ()).fetchall()
    return [PruneRow(*tuple(r)) for r in rows]


__all__ = ["PruneRow", "prunes", "record_prune"]
