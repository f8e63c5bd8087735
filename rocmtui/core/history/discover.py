"""Discovery: BuildKit's history on each node -> jobs in the store, each with its follower.

`HistoryWatch.watch(node, snapshot)` runs in every probe round for every node (the monitor's,
a console's own, a one-shot `status`): for a node that answered it may ask for one `docker
buildx history ls` in the background, started when the round is over (`round_done`), and
returns the snapshot with its `history_note`.
Whoever discovers a build first makes its job; `JobStore.create_for_ref` makes sure two
discoverers make one. An unfinished build without a live follower gets one
(`spawn_follower`); the follower's lock makes it one per host.

One `history ls` costs ~0.06 s of CPU (buildx run directly, no docker CLI in between), so a node
is asked at most every `interval` seconds (`HISTORY_INTERVAL` in a long-running monitor), and
sooner only when this host shows a sign of a new build: a `docker-buildx` process running `bake`
or `build` that was not there before (`LocalBuilds`, a scan of /proc that reads only new pids).
Then every node is asked in that round and the round waits for the answer (at most
`TRIGGERED_WAIT`), so a build started here (rocm-bake's Makefile, cron) shows as `building`
within one refresh; one started on another host within `interval`.

What a look finds is recorded by `adopt.Adopter`. Each new record is inspected once (`history
inspect`: target, args, platform, client): a running one at once, finished ones at most
`INSPECT_PER_ROUND` per node and round. A record whose `ROCMTUI_JOB` build arg names a job of
this store is rocmtui's own build: it is tied to that job (`JobStore.tie_ref`), never made a
second job. So a running record whose inspect failed (it timed out on a loaded engine: issue
27's bench, 25 builds on 2 cores) is not made a job yet: whose build it is is unknown, and a
rocmtui build made an "outside" job would show twice (and its node row would offer the double,
which cannot be cancelled, instead of the job). It is asked again at the next look; after
`INSPECT_TRIES` failures it is made an outside job.

Engines without build history say so once in `history_note`: dockerd older than 24 (BuildKit
older than 0.11) without asking buildx at all; a buildx without `history`; a builder whose
history API answers an error (the note carries it, and it is asked again at `interval`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from msgspec.structs import replace

from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
from rocmtui.core.diskroom import describe
from rocmtui.core.history.adopt import Adopter
from rocmtui.core.history.buildx import (
    LS_TIMEOUT,
    BuildxAnswer,
    history_argv,
    history_environment,
    kept_connection,
    node_workdir,
    run_history_async,
)
from rocmtui.core.history.localbuilds import LocalBuilds, build_reaches
from rocmtui.core.history.parse import (
    parse_ls,
)
from rocmtui.core.jobs.store import JobStore, JobStoreError
from rocmtui.core.paths import state_dir
from rocmtui.core.snapshots import NodeSnapshot
from rocmtui.core.states import NodeState
from rocmtui.core.text.sanitize import one_line

if TYPE_CHECKING:
    from rocmtui.core.probes.ssh.dial import MasterPool

log = logging.getLogger(__name__)

HISTORY_INTERVAL = 60.0  # seconds between two `history ls` of one node in a monitor
TRIGGERED_WAIT = 1.5  # seconds a round waits for a triggered `history ls`
TRIGGERED_ROUNDS = 3  # rounds a local build process keeps every node asked
INSPECT_PER_ROUND = 4  # finished records inspected per node and round
LOOKS_AT_ONCE = 4  # history looks (buildx processes) running at once in one process
MASTER_WAIT = 2.0  # seconds a look waits for the probe's kept ssh connection before its own
_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)")
FIRST_HISTORY_ENGINE = 24  # Docker 24 ships BuildKit 0.11, the first with build history


def engine_note(snapshot: NodeSnapshot) -> str | None:
    """The note for an engine known to keep no build history (by its version), else None."""
    m = _VERSION_RE.match(snapshot.engine_version or "")
    if m is None or int(m.group(1)) >= FIRST_HISTORY_ENGINE:
        return None
    buildkit = snapshot.builder.buildkit_version if snapshot.builder else None
    kit = f", BuildKit {buildkit}" if buildkit else ""
    return (
        f"builds started elsewhere are not visible here: dockerd {snapshot.engine_version}{kit} "
        "keeps no build history (BuildKit 0.11 / Docker 24 and newer do)"
    )


def answer_note(answer: BuildxAnswer) -> str | None:
    """The note for a `history ls` that failed (None when it worked)."""
    if answer.error is None:
        return None
    if answer.kind == "no-api":
        return (
            "builds started elsewhere are not visible here: this engine's BuildKit has no "
            "build history API"
        )
    if answer.kind == "no-command":
        return (
            "builds started elsewhere are not visible here: the buildx in use has no "
            f"`history` command ({answer.error})"
        )
    return f"build history unavailable: {answer.error}"


@dataclass
class _NodeState:
    note: str | None = None
    asked_at: float = -1e18  # monotonic
    task: asyncio.Task[None] | None = None
    env: dict[str, str] | None = None  # a follower's: a connection of its own
    look_env: dict[str, str] | None = None  # the looks': sessions over the kept connection
    look_path: str | None = None  # ... whose control socket this is
    store_error: str | None = None  # why the last look could not record what it found


@dataclass
class HistoryWatch:
    """Watches BuildKit's history on every node (see the module doc). One per process."""

    config: FleetConfig
    store: JobStore | None = None
    interval: float = HISTORY_INTERVAL
    env: Mapping[str, str] | None = None
    spawn: bool = True  # start followers (tests of discovery alone turn it off)
    # finished records new to the store inspected (and kept) per node and look; a one-shot
    # `status` takes 0: it wants what runs now, the monitor keeps the rest
    finished_per_look: int = INSPECT_PER_ROUND
    local: LocalBuilds | None = field(default_factory=LocalBuilds)
    # the probe's kept ssh connections (`Probers` hands over its own): on an ssh:// node the
    # looks run as sessions over the node's, not as a login each; None: a login each
    masters: MasterPool | None = None
    runs: int = 0  # `history ls` processes started (for benches and tests)
    _per_node: dict[str, _NodeState] = field(default_factory=dict)
    _hot: dict[str, int] = field(default_factory=dict)  # node -> rounds it stays asked
    _scanned_at: float = -1e18
    _owners: dict[str, NodeConfig] = field(default_factory=dict)  # node -> who asks for it
    # looks due this round that nobody waits for: started by `round_done`
    _deferred: dict[str, NodeConfig] = field(default_factory=dict)  # owner name -> owner
    _gate: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    def __post_init__(self) -> None:
        self.store = self.store or JobStore.for_config(self.config, self.env)
        # what a look finds goes into the store through this (adopt.py)
        self.adopter = Adopter(self.config, self.store, self.finished_per_look, self.spawn)
        # nodes naming the same engine and builder share one BuildKit history: the first of
        # them asks it, once, for all (a fleet file that lists one engine twice)
        first: dict[tuple[str, str, str], NodeConfig] = {}
        for node in self.config.nodes:
            key = (node.docker_host or "", node.context or "", node.builder or "")
            self._owners[node.name] = first.setdefault(key, node)

    @property
    def inspect_failures(self) -> dict[str, int]:
        """Failed inspects of running records, by ref (for tests and benches)."""
        return self.adopter.inspect_failures

    def _state(self, node: NodeConfig) -> tuple[NodeConfig, _NodeState]:
        """The node that asks for `node`'s history, and that look's state."""
        owner = self._owners.get(node.name, node)
        return owner, self._per_node.setdefault(owner.name, _NodeState())

    def _slots(self) -> asyncio.Semaphore:
        """At most `LOOKS_AT_ONCE` looks run at a time in this process (each is a buildx
        process of ~0.06 s CPU and tens of MB; a hundred nodes at once would be a hundred)."""
        loop = asyncio.get_running_loop()
        if self._gate is None or self._gate[0] is not loop:
            self._gate = (loop, asyncio.Semaphore(LOOKS_AT_ONCE))
        return self._gate[1]

    def _triggered(self, node: NodeConfig) -> bool:
        """A build process talking to `node` appeared here (/proc scanned at most once a
        second for every node); the node is then asked for `TRIGGERED_ROUNDS` rounds."""
        now = time.monotonic()
        if self.local is not None and now - self._scanned_at >= 1.0:
            self._scanned_at = now
            builds = self.local.new_builds()
            for name in list(self._hot):
                self._hot[name] -= 1
                if self._hot[name] <= 0:
                    del self._hot[name]
            for other in self.config.nodes:
                if any(build_reaches(other, host, ctx) for host, ctx in builds):
                    self._hot[other.name] = TRIGGERED_ROUNDS
        return node.name in self._hot

    async def watch(
        self, node: NodeConfig, snapshot: NodeSnapshot, wait: float = TRIGGERED_WAIT
    ) -> NodeSnapshot:
        """`snapshot` with the node's `history_note`; asks the node's history when due."""
        owner, state = self._state(node)
        if snapshot.state is not NodeState.OK:
            return replace(snapshot, history_note=state.note) if state.note else snapshot
        note = engine_note(snapshot)
        if note is not None:
            state.note = note
            return replace(snapshot, history_note=note)
        triggered = self._triggered(node)
        due = time.monotonic() - state.asked_at >= self.interval
        if (due or triggered) and (state.task is None or state.task.done()):
            state.asked_at = time.monotonic()
            if triggered or self.interval <= 0:
                self._deferred.pop(owner.name, None)
                state.task = asyncio.ensure_future(self._ask(owner, state))
                with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(state.task), wait)
            else:  # nobody waits for it: it starts once the round is over (`round_done`)
                self._deferred[owner.name] = owner
        return replace(snapshot, history_note=state.note) if state.note else snapshot

    def round_done(self) -> None:
        """Start the looks `watch` put off until its round was over. Nobody waits for those,
        so they need not run beside the round's probes: a look is a buildx process (~0.06 s of
        CPU) and, on an ssh:// node, sessions over the probe's own connection; a console's
        first round was 30 ms slower with its three looks beside it."""
        deferred, self._deferred = self._deferred, {}
        for owner in deferred.values():
            _, state = self._state(owner)
            if state.task is None or state.task.done():
                state.task = asyncio.ensure_future(self._ask(owner, state))

    async def ask(self, node: NodeConfig, snapshot: NodeSnapshot) -> NodeSnapshot:
        """One full look at the node's history now (a one-shot `status`): waits for it. When
        the caller's deadline cancels the wait, the look goes on (`settle` waits for it)."""
        owner, state = self._state(node)
        if snapshot.state is not NodeState.OK:
            return snapshot
        note = engine_note(snapshot)
        if note is None:
            if state.task is None or state.task.done():
                state.asked_at = time.monotonic()
                state.task = asyncio.ensure_future(self._ask(owner, state))
            await asyncio.shield(state.task)
            note = state.note
        return replace(snapshot, history_note=note) if note else snapshot

    async def settle(self, timeout: float) -> bool:
        """Wait (at most `timeout` seconds) for every look still under way, e.g. one over a
        slow ssh link that outlived the probe round; True when any was still under way."""
        pending = [
            s.task for s in self._per_node.values() if s.task is not None and not s.task.done()
        ]
        if pending:
            await asyncio.wait(pending, timeout=timeout)
        return bool(pending)

    async def _ask(self, node: NodeConfig, state: _NodeState) -> None:
        try:
            async with self._slots():
                await self._look(node, state)
        except (JobStoreError, OSError) as exc:  # the state folder: full, read-only, gone
            where = getattr(exc, "filename", None) or state_dir(self.config, self.env)
            said = str(exc) if isinstance(exc, JobStoreError) else describe(where, exc)
            state.note = one_line(f"builds started elsewhere are not recorded: {said}", 300)
            if state.store_error != said:  # said once, not at every look until there is room
                log.warning("history of %s: %s", node.name, said)
            state.store_error = said
            return
        except Exception as exc:  # a bug here must never take the node's probe down
            log.exception("history of %s", node.name)
            state.note = f"build history unavailable: {type(exc).__name__}"
        state.store_error = None

    def _env(self, node: NodeConfig, state: _NodeState) -> dict[str, str]:
        if state.env is None:
            env = os.environ if self.env is None else self.env
            workdir = node_workdir(state_dir(self.config, self.env), node, self.env)
            state.env = history_environment(node, self.config, env, workdir)
        return state.env

    def _look_env(self, node: NodeConfig, state: _NodeState) -> dict[str, str]:
        """The environment of this process's own looks (`ls`, `inspect`): on an ssh:// node
        whose kept connection can be had, sessions over it (`buildx.kept_connection`). A
        follower outlives this process and its connection: it keeps its own (`_env`)."""
        own = self._env(node, state)
        if self.masters is None:
            return own
        env = os.environ if self.env is None else self.env
        control = kept_connection(node, self.config, env, self.masters, MASTER_WAIT)
        if control is None:
            return own
        if state.look_env is None or state.look_path != control:
            workdir = node_workdir(state_dir(self.config, self.env), node, self.env) / "look"
            state.look_env = history_environment(node, self.config, env, workdir, control)
            state.look_path = control
        return state.look_env

    async def _look(self, node: NodeConfig, state: _NodeState) -> None:
        loop = asyncio.get_running_loop()
        env = await loop.run_in_executor(None, self._look_env, node, state)
        self.runs += 1
        answer = await run_history_async(
            history_argv(node, "ls", "--format", "json", env=env), env, LS_TIMEOUT
        )
        state.note = answer_note(answer)
        if answer.error is not None:
            return
        entries = parse_ls(answer.stdout)
        await self.adopter.sync(node, entries, env, state.env or env)


__all__ = [
    "HISTORY_INTERVAL",
    "HistoryWatch",
    "answer_note",
    "engine_note",
]
