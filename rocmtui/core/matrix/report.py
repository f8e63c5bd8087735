"""The whole matrix in one call: plan, fill, judge (what `rocmtui matrix` and the console's
child run). Blocking: it runs bake and asks the registry; call it off any event loop."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping

from msgspec.structs import replace

from rocmtui.core.bake.file import BakeFile
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.costbook.book import CostBook
from rocmtui.core.costbook.report import HistoryReport
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.matrix.bakecache import load_bake_kept
from rocmtui.core.matrix.cells import Matrix, Row
from rocmtui.core.matrix.fill import fill_tags
from rocmtui.core.matrix.judge import judge, seen_jobs
from rocmtui.core.matrix.plan import launch_environment, make_plan, state_cache

JOB_LIMIT = 500  # the newest jobs looked at for each cell's last job


def with_regressions(
    rows: tuple[Row, ...], config: FleetConfig, env: Mapping[str, str]
) -> tuple[Row, ...]:
    """Each cell with the regressions of the builds of its targets for its arch, per node."""
    book = CostBook(JobStore.for_config(config, env), config.history_retention_days)
    book.sync()
    found: dict[tuple[str, str], list[str]] = {}
    for group in HistoryReport.build(book.rows()).groups:
        for regression in group.regressions:
            said = f"{group.node}: {regression.describe()}"
            found.setdefault((group.target, group.arch), []).append(said)
    if not found:
        return rows
    return tuple(
        replace(
            row,
            cells=tuple(
                replace(
                    cell,
                    regressions=tuple(
                        said for t in cell.targets for said in found.get((t, cell.arch), ())
                    ),
                )
                for cell in row.cells
            ),
        )
        for row in rows
    )


def compute_matrix(
    config: FleetConfig,
    env: Mapping[str, str] | None = None,
    *,
    bake: BakeFile | None = None,
    job_limit: int = JOB_LIMIT,
) -> Matrix:
    """Every buildable target × arch with its verdict. Raises BakeError when the bake file
    cannot be read; anything the registry or the job store does wrong is in the matrix."""
    env = os.environ if env is None else env
    started = time.monotonic()
    taken_at = time.time()
    bake = bake or load_bake_kept(config.bake_file, state_cache(config, "bakefile", env))
    plan = make_plan(
        config,
        bake,
        launch_environment(config, bake, env),
        cache=state_cache(config, "bakeprint", env),
    )
    tags = {cell.tag: cell.platform for _, _, cells in plan.rows for cell in cells.values()}
    filled = asyncio.run(
        fill_tags(
            tags,
            config.registry.url,
            deadline=config.matrix.deadline_seconds,
            concurrency=config.matrix.concurrency,
            cache=state_cache(config, "images", env),
        )
    )
    errors = list(plan.errors)
    try:
        # in the try: jobs.control brings the job store and psutil; a broken one is a note
        from rocmtui.core.jobs.control import list_jobs

        records = list_jobs(config, limit=job_limit, env=env)
    except Exception as exc:  # a broken job store: the registry's half still fills
        errors.append(f"job store: {exc}")
        records = []
    rows = judge(plan, filled.answers, seen_jobs(records))
    try:
        rows = with_regressions(rows, config, env)
    except Exception as exc:  # the history is a note beside the verdicts, never their cause
        errors.append(f"build history: {exc}")
    store = None
    if config.webdav.path is not None:
        # on first use: only a fleet with a WebDAV path
        from rocmtui.core.webdavstore import sample_store

        store = sample_store(config.webdav.path, state_cache(config, "webdav", env))
    return Matrix(
        bake_file=str(bake.path),
        registry=config.registry.url,
        arches=plan.arches,
        rows=rows,
        taken_at=taken_at,
        seconds=time.monotonic() - started,
        requests=filled.requests,
        errors=tuple(errors),
        store=store,
    )
