"""What a look at a node's build history found, recorded in the job store.

Split from discovery (`discover.py`, whose `HistoryWatch` decides when a node is looked at and
composes this) so recording stands apart from scheduling. Each new record is inspected once
(`history inspect`): a running one at once, finished ones at most `finished_per_look` per node
and look. A record whose `ROCMTUI_JOB` build arg names a job of this store is tied to that job
(`JobStore.tie_ref`), never made a second job; a running record whose inspect failed is asked
again at the next look, and after `INSPECT_TRIES` failures made an outside job. An unfinished
build started elsewhere without a live follower gets one (`spawn_follower`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
from rocmtui.core.history.buildx import INSPECT_TIMEOUT, history_argv, run_history_async
from rocmtui.core.history.outside import OutsideBuild
from rocmtui.core.history.outsidefollower import spawn_follower
from rocmtui.core.history.parse import (
    HistoryEntry,
    finished_state,
    outside_build,
    parse_inspect,
    raw_build_args,
)
from rocmtui.core.jobs.command import JOB_BUILD_ARG
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.states import JobState
from rocmtui.core.text.units import fmt_utc_stamp

INSPECT_TRIES = 3  # failed inspects of a running record before it is taken as an outside build


@dataclass
class Adopter:
    """Turns a node's listed history records into jobs of `store` (see the module doc)."""

    config: FleetConfig
    store: JobStore
    finished_per_look: int  # finished records new to the store inspected per node and look
    spawn: bool = True  # start followers (tests of discovery alone turn it off)
    inspect_failures: dict[str, int] = field(default_factory=dict)  # ref -> failed inspects

    async def sync(
        self,
        node: NodeConfig,
        entries: list[HistoryEntry],
        env: dict[str, str],
        follow_env: dict[str, str],
    ) -> None:
        """`env`: the looks'; `follow_env`: what a follower (and a record's facts) gets."""
        store = self.store
        loop = asyncio.get_running_loop()
        known = await loop.run_in_executor(None, store.known_refs)
        listed = {e.ref: e for e in entries}
        inspected = 0
        for entry in entries:
            if entry.ref in known:
                continue
            if not entry.running:
                if inspected >= self.finished_per_look:
                    continue
                inspected += 1
            data = await self._inspect(node, entry.ref, env)
            if data is None and entry.running:  # whose build? not known yet: ask again later
                failed = self.inspect_failures.get(entry.ref, 0) + 1
                self.inspect_failures[entry.ref] = failed
                if failed < INSPECT_TRIES:
                    continue
            self.inspect_failures.pop(entry.ref, None)
            await loop.run_in_executor(None, self._adopt, node, entry, data, follow_env)
        await loop.run_in_executor(None, self._tend, node, listed, follow_env)

    async def _inspect(
        self, node: NodeConfig, ref: str, env: dict[str, str]
    ) -> dict[str, Any] | None:
        argv = history_argv(node, "inspect", "--format", "json", ref, env=env)
        answer = await run_history_async(argv, env, INSPECT_TIMEOUT)
        return parse_inspect(answer.stdout) if answer.error is None else None

    def _adopt(
        self,
        node: NodeConfig,
        entry: HistoryEntry,
        data: dict[str, Any] | None,
        env: dict[str, str],
    ) -> None:
        """Tie a record to rocmtui's own job, or make it a job of its own."""
        store = self.store
        own = raw_build_args(data).get(JOB_BUILD_ARG) if data else None
        if own:
            try:
                job = store.get(own)
            except LookupError:
                job = None
            if job is not None:
                store.tie_ref(entry.ref, job.id, node.name)
                return
        now = time.time()
        facts = outside_build(entry.ref, entry, data, None, env, now)
        if own:
            facts = replace(facts, client=f"rocmtui job {own} (another state folder)")
        record = store.create_for_ref(entry.ref, node.name, self._maker(node, entry, facts, now))
        if record is not None and record.ended_at is None and self.spawn:
            spawn_follower(self.config, node, record, env)

    def _maker(
        self, node: NodeConfig, entry: HistoryEntry, facts: OutsideBuild, now: float
    ) -> Callable[[str, Path], JobRecord]:
        started = entry.created_at or now
        finished = not entry.running
        ended = (entry.completed_at or (started + (facts.duration or 0.0))) if finished else None
        state = finished_state(facts.status, facts.error) if finished else JobState.RUNNING
        target = facts.target or facts.name or entry.ref

        def make(job_id: str, job_dir: Path) -> JobRecord:
            record = JobRecord(
                id=job_id,
                target=target,
                arch=facts.arch,
                node=node.name,
                endpoint=node.endpoint,
                push=facts.pushes,
                overrides={},
                command=(),
                user="",
                host="",
                bake_file="",
                job_dir=str(job_dir),
                started_at=started,
                state=state,
                ended_at=ended,
                message=facts.error if finished else None,
                error_step=facts.error if state is JobState.FAILED else None,
                buildkit_ref=entry.ref,
                outside=facts,
            )
            header = [
                f"# rocmtui: build started elsewhere on {node.name}: {facts.name or target} "
                f"(BuildKit ref {entry.ref})",
                f"# started {fmt_utc_stamp(started)}; seen by rocmtui {fmt_utc_stamp(now)}",
            ]
            if finished:
                header.append(
                    f"# it had ended ({facts.status}) before rocmtui saw it: "
                    f"`docker buildx history logs {entry.ref}` replays its output"
                )
            else:
                header.append("# its output follows, from `docker buildx history logs`")
            (job_dir / "log").write_text("\n".join(header) + "\n", encoding="utf-8")
            return record

        return make

    def _tend(self, node: NodeConfig, listed: dict[str, HistoryEntry], env: dict[str, str]) -> None:
        """Every unfinished build started elsewhere on the node gets a follower if it has none
        (the follower records an end BuildKit has seen, or that BuildKit forgot it)."""
        # on first use: jobs.control brings psutil
        from rocmtui.core.jobs.control import is_alive

        store = self.store
        for record in store.list(limit=None, unfinished_only=True):
            if record.outside is None or record.node != node.name or not self.spawn:
                continue
            if not is_alive(record):
                spawn_follower(self.config, node, record, env)
