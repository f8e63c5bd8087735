"""`OutsideBuild`: what BuildKit's build history knows of a build rocmtui did not start.

A job record (`jobs.record.JobRecord`) whose `outside` is set is a build *started elsewhere*:
its `target`, `arch`, `node`, `started_at`, `ended_at` and `state` are filled from the history
record as for any job (`arch` from its `GFX_ARCH` build arg, "" when it has none), its `log`
is the output its follower copies from `docker buildx history logs`, and `outside` keeps the
rest. Every text field here is sanitised (`core.text.sanitize`) and secret-like build args are
redacted (`core.text.redact`) before it is stored: a reader may show them as they are.

Stable shape: fields are only ever added (with defaults).
"""

from __future__ import annotations

from msgspec import Struct, field

#: BuildKit's status words as `history ls` writes them (inspect writes them lower-case).
STATUS_RUNNING = "running"
STATUS_COMPLETED = "completed"
STATUS_ERROR = "error"


class OutsideBuild(Struct, frozen=True, omit_defaults=False):
    """A build found in a node's BuildKit history that rocmtui did not start.

    `ref` is BuildKit's record id (the last part of `history ls`'s `builder/node/id`), unique
    per builder; `builder_ref` the whole `builder/node/id`. `client` says who started it when
    anything says so (another rocmtui's job id from its `ROCMTUI_JOB` build arg, else None:
    BuildKit does not record the client's host or user). `inspected` is False until `history
    inspect` has been read (a record seen only in `history ls` has no target, args or
    platform yet).
    """

    ref: str
    builder_ref: str = ""
    name: str | None = None  # bake's record name: "bake/rocm-bake (pytorch)"
    target: str | None = None
    platforms: tuple[str, ...] = ()
    # build args, sanitised; a secret-like name's value (and that value anywhere) redacted,
    # as `core.text.redact` writes it: `<redacted:NAME>`
    build_args: dict[str, str] = field(default_factory=dict)
    vcs_revision: str | None = None
    vcs_source: str | None = None
    context: str | None = None
    status: str = STATUS_RUNNING  # BuildKit's word, lower-case: running, completed, error
    total_steps: int | None = None  # 0 while running (BuildKit counts them at the end)
    completed_steps: int | None = None
    cached_steps: int | None = None
    error: str | None = None  # BuildKit's error message, one sanitised line
    client: str | None = None  # who started it, when known (see the class doc)
    duration: float | None = None  # seconds, as BuildKit recorded it (inspect's Duration)
    pushes: bool = False  # an exporter pushed (or would push) to a registry
    inspected: bool = False
    # why its output is not (or no longer) followed: the stream died, the engine is gone ...
    follow_note: str | None = None
    seen_at: float | None = None  # epoch seconds history last listed it

    @property
    def cached_percent(self) -> int | None:
        """Percent of steps BuildKit found cached (None until the step counts are known)."""
        if not self.total_steps or self.cached_steps is None:
            return None
        return round(100 * self.cached_steps / self.total_steps)

    @property
    def arch(self) -> str:
        """The build's GFX_ARCH build arg ("" when it has none)."""
        return self.build_args.get("GFX_ARCH", "")

    def cancel_refusal(self) -> str:
        """What `cancel` says for such a build: only the client that started it can."""
        who = f" ({self.client})" if self.client else ""
        return (
            f"this build was started elsewhere{who}: only the client that started it can "
            "cancel it (BuildKit cancels a build when its client goes)"
        )


__all__ = ["STATUS_COMPLETED", "STATUS_ERROR", "STATUS_RUNNING", "OutsideBuild"]
