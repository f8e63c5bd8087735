"""What a supervisor does once its build's outcome is recorded: nothing a reader waits on.

Tie the build's BuildKit records to its job, ask the registry about a push, read the cache
statistics from the log, keep the build's steps and its group's target spans before BuildKit
forgets them (or, where no record says, the targets' times as bake printed them). Each is best
effort: said in the job's log (`note`), never raised, never a change to the outcome.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from rocmtui.core.history.stepstore import capture_argv, capture_env, keep_after_build
from rocmtui.core.jobs.bakefiles import build_refs_from_metadata, target_refs_from_metadata
from rocmtui.core.jobs.images import read_push_check, record_afterwards
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.runs.livetargets import LiveFile
from rocmtui.core.runs.targetspans import keep_printed_spans, keep_target_spans


class AfterBuild:
    """The reads after one build's outcome (see the module doc), with bake's own argument list
    (its builder), the fleet's registry, the job log's `note` and the group's live targets."""

    def __init__(
        self,
        store: JobStore,
        argv: Sequence[str],
        registry_url: str | None,
        note: Callable[[str], object],
        live: LiveFile | None = None,
    ) -> None:
        self.store = store
        self.argv = list(argv)
        self.registry_url = registry_url
        self.note = note
        self.live = live
        self.metadata: Path | None = None  # bake's metadata file, kept in the job's room

    def run(self, record: JobRecord, metadata: Path | None) -> None:
        """Every read, in order: the records tied first, so history never shows the build as
        one started elsewhere."""
        self.metadata = metadata
        self.tie_refs(record)
        self.afterwards(record)

    def tie_refs(self, record: JobRecord) -> None:
        """Tie the build's history records (bake's metadata) to this job, so history never
        shows it again as a build started elsewhere; best effort."""
        for ref in build_refs_from_metadata(self.metadata or record.metadata_path):
            try:
                self.store.tie_ref(ref, record.id, record.node)
            except Exception as exc:
                self.note(f"could not tie BuildKit record {ref}: {type(exc).__name__}")
                return

    def afterwards(self, record: JobRecord) -> None:
        """With the outcome recorded: the registry's word on a push and the cache statistics
        (`images.record_afterwards`); said in the log, never raised."""
        try:
            record_afterwards(record, self.registry_url)
        except Exception as exc:
            what = "could not check the registry or read cache statistics"
            self.note(f"{what}: {type(exc).__name__}: {exc}")
            return
        check = read_push_check(record.job_dir)
        if check is not None:
            self.note(f"registry: {check.describe()}")
        self.keep_steps(record)

    def keep_steps(self, record: JobRecord) -> None:
        """Keep the build's steps (BuildKit's vertices) for its timeline, read from BuildKit's
        history with bake's own environment and builder, before BuildKit forgets the record;
        the outcome is recorded already, so no reader waits on it. Said in the log only when
        it fails."""
        if os.environ.get("ROCMTUI_KEEP_STEPS") == "0":
            return  # turned off (bench_step_capture sets it to weigh what keeping costs)
        try:
            latest = self.store.get(record.id)  # with the ref `tie_refs` set
        except Exception:
            return
        if latest.buildkit_ref is not None:  # none without history (buildx 0.13, dockerd 20.10)
            self._keep_records(latest)
        if self.live is not None:  # a group's targets as bake printed them, where no record said
            keep_printed_spans(self.store, latest.id, self.live.spans())

    def _keep_records(self, latest: JobRecord) -> None:
        builder = _builder_of(self.argv)
        said = keep_after_build(self.store, latest, os.environ, builder)
        if said.startswith("steps not kept"):
            self.note(said)
        targets = target_refs_from_metadata(self.metadata or latest.metadata_path)
        missed = keep_target_spans(
            self.store, latest.id, latest.buildkit_ref, targets,
            capture_argv(os.environ, builder), capture_env(os.environ),
        )  # fmt: skip
        if missed:
            self.note(missed)


def _builder_of(argv: Sequence[str]) -> str | None:
    """bake's `--builder NAME`, if it names one."""
    for i, word in enumerate(argv[:-1]):
        if word == "--builder":
            return argv[i + 1]
    return None


__all__ = ["AfterBuild"]
