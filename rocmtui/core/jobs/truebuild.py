"""A build's own result when bake's failure was only about rocmtui's files.

bake writes its metadata file after the build; when that write fails (its folder's disk full or
read-only: `bakefiles` keeps it off the state disk, but a runtime folder can fill too) bake exits
non-zero (102 on buildx 0.29, 1 on 0.13) although the image was built, and pushed when the
build pushes. Then, and only then (bake's exit non-zero, no metadata file, its folder full or
read-only, not a cancel), the outcome is asked of the build itself:

- BuildKit's history (`buildx history`; BuildKit 0.11+, Docker 24+): the records whose
  `ROCMTUI_JOB` build arg names this job, each `completed` or `error`;
- the digest: the registry's for a push (a HEAD of each pushed tag), else the engine's image
  under its first tag (`docker image inspect`).

All completed: `succeeded`, said precisely ("built sha256:..., pushed; bake could not write its
metadata: state disk full"). One in error: `failed`, as bake said. No history to ask (buildx
0.13, dockerd 20.10): `failed` stays, and the message says why it could not be told apart. The
output bake printed never decides any of it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from msgspec import Struct

from rocmtui.core.diskroom import condition
from rocmtui.core.history.parse import parse_inspect, parse_ls, raw_build_args, status_word
from rocmtui.core.jobs.command import JOB_BUILD_ARG
from rocmtui.core.jobs.images import job_images
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.registry.client import Lookup
from rocmtui.core.registry.refs import BadReference, parse_ref, registry_url_for
from rocmtui.core.registry.sync import head_manifest
from rocmtui.core.states import JobState

__all__ = ["BuildKitWord", "ask_buildkit", "only_our_files"]

TIMEOUT = 10.0  # per buildx or registry call: the supervisor never waits long on them
MAX_INSPECT = 12  # history records looked into, newest first


class BuildKitWord(Struct, frozen=True):
    """What the build itself says: its state (None: nobody could tell), digest and message."""

    state: JobState | None
    digest: str | None
    message: str


def only_our_files(exit_code: int, metadata: Path | None) -> str | None:
    """Why bake's non-zero exit may be only about rocmtui's own file: "state disk full" or
    "state folder read-only" for the metadata file's folder when bake wrote no file there;
    None otherwise (the build's own failure, or nothing to tell)."""
    if exit_code == 0 or metadata is None or metadata.exists():
        return None
    said = condition(metadata.parent)
    return said if said in ("state disk full", "state folder read-only") else None


def ask_buildkit(
    record: JobRecord,
    argv: Sequence[str],
    env: Mapping[str, str],
    registry_url: str | None,
    why: str,
) -> BuildKitWord:
    """The build's result from BuildKit (see the module doc). `argv` is bake's (its docker
    CLI and `--builder`), `env` bake's environment, `why` what bake could not write ("state
    disk full")."""
    said = f"bake could not write its metadata: {why}"
    states = _history_states(record.id, record.started_at, argv, env)
    if states is None:
        return BuildKitWord(None, None, f"{said}; the builder keeps no build history to tell")
    if not states:
        return BuildKitWord(None, None, f"{said}; no build of this job in BuildKit's history")
    if any(s != "completed" for s in states):
        return BuildKitWord(JobState.FAILED, None, f"{said}; BuildKit: the build failed")
    built = job_images(record.job_dir, record.target, record.arch)
    images = [(image.tags[0], image.pushes) for image in built if image.tags]
    pushed = any(push for _, push in images)
    digest = _digest(images, argv[0] if argv else "docker", env, registry_url)
    what = f"built {digest}" if digest else "built"
    return BuildKitWord(JobState.SUCCEEDED, digest, f"{what}{', pushed' if pushed else ''}; {said}")


def _builder(argv: Sequence[str]) -> list[str]:
    for index, word in enumerate(argv):
        if word == "--":
            break
        if word == "--builder" and index + 1 < len(argv):
            return ["--builder", argv[index + 1]]
    return []


def _run(command: list[str], env: Mapping[str, str]) -> str | None:
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _history_states(
    job_id: str, started_at: float, argv: Sequence[str], env: Mapping[str, str]
) -> list[str] | None:
    """The status word of every history record of this job; None without history."""
    docker = argv[0] if argv else "docker"
    history = [docker, "buildx", "history", *_builder(argv)]
    listed = _run([*history, "ls", "--format", "json"], env)
    if listed is None:
        return None
    entries = [e for e in parse_ls(listed) if (e.created_at or started_at) >= started_at - 60]
    entries.sort(key=lambda e: e.created_at or 0.0, reverse=True)
    states = []
    for entry in entries[:MAX_INSPECT]:
        shown = _run([*history, "inspect", "--format", "json", entry.ref], env)
        data = parse_inspect(shown) if shown else None
        if data is not None and raw_build_args(data).get(JOB_BUILD_ARG) == job_id:
            states.append(status_word(data.get("Status")))
    return states


def _digest(
    images: Sequence[tuple[str, bool]],
    docker: str,
    env: Mapping[str, str],
    registry_url: str | None,
) -> str | None:
    """The first image's digest: the registry's for a push, else the engine's image id."""
    for tag, pushed in images:
        if pushed and registry_url:
            try:
                ref = parse_ref(tag)
            except BadReference:
                continue
            base = registry_url_for(ref.host, registry_url)
            if base is None:
                continue
            answer = head_manifest(base, ref.repository, ref.tag, TIMEOUT)
            if answer.state == Lookup.FOUND and answer.digest:
                return answer.digest
        elif not pushed:
            shown = _run([docker, "image", "inspect", "--format", "{{.Id}}", tag], env)
            digest = (shown or "").strip()
            if digest.startswith("sha256:"):
                return digest
    return None
