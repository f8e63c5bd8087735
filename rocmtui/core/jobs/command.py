"""What bake runs with: its argument list and its environment, as data.

The argument list: one `-f` per bake file (a folder's default files in bake's order), no shell,
plain progress (what people read and the parser knows best), the metadata file, the node's
builder, `--push`, the privileges granted (`--allow`), and `--` before the target (a name
such as `--allow=...` is never an option). The environment: the scrubbed launch environment
(`bakeprint.bake_environment`: no variable the bake file declares, unless overridden
explicitly), the overrides, `GFX_ARCH`, and the node's `DOCKER_HOST` or `DOCKER_CONTEXT`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from rocmtui.core.bake.file import ARCH_VARIABLE
from rocmtui.core.bake.find import bake_files
from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
from rocmtui.core.jobs.checks import pick_node
from rocmtui.core.jobs.redaction import redact_argv
from rocmtui.core.jobs.refusals import LaunchError

#: The build arg naming a rocmtui job in BuildKit's history record of its build.
JOB_BUILD_ARG = "ROCMTUI_JOB"

__all__ = [
    "JOB_BUILD_ARG",
    "bake_workdir",
    "build_argv",
    "build_command",
    "engine_assignments",
    "node_environment",
    "parse_overrides",
]


def bake_workdir(path: Path) -> Path:
    """Where bake runs: the bake file's folder (its context paths are relative to it)."""
    # on first use: kept off `status`
    from rocmtui.core.bake.resolve import bake_workdir as project_rule

    return Path(project_rule(path))


def node_environment(
    node: NodeConfig,
    arch: str,
    env: Mapping[str, str],
    overrides: Mapping[str, str],
    declared: Iterable[str] = (),
) -> dict[str, str]:
    """bake's whole environment for a job: the scrubbed launch environment (no variable the
    bake file declares, unless overridden explicitly) + overrides + arch + the node's engine."""
    # on first use: kept off `status`
    from rocmtui.core.bake.resolve import bake_environment

    child = dict(bake_environment(env, {**overrides, ARCH_VARIABLE: arch}, bake_variables=declared))
    child[ARCH_VARIABLE] = arch
    if node.docker_host:
        child["DOCKER_HOST"] = node.docker_host
        child.pop("DOCKER_CONTEXT", None)
    elif node.context:
        child["DOCKER_CONTEXT"] = node.context
        child.pop("DOCKER_HOST", None)
    if node.docker_host and node.docker_host.startswith("ssh://"):
        # ssh needs the agent; never let it prompt on a terminal it does not have
        for name in ("SSH_AUTH_SOCK", "HOME", "USER"):
            if name in env and name not in child:
                child[name] = env[name]
    return child


def engine_assignments(node: NodeConfig, arch: str, overrides: Mapping[str, str]) -> list[str]:
    """The environment assignments that matter, as `NAME=value` words for the record."""
    pairs = [f"{ARCH_VARIABLE}={arch}"]
    pairs += [f"{k}={v}" for k, v in sorted(overrides.items()) if k != ARCH_VARIABLE]
    if node.docker_host:
        pairs.append(f"DOCKER_HOST={node.docker_host}")
    elif node.context:
        pairs.append(f"DOCKER_CONTEXT={node.context}")
    return pairs


def build_argv(
    bake_file: Path,
    target: str,
    node: NodeConfig,
    push: bool,
    metadata_file: str,
    docker: str = "docker",
    job_id: str | None = None,
    allow: Sequence[str] = (),
) -> list[str]:
    """bake's argument list (see the module doc). `allow`: one `--allow=ENT` each, what the
    operator granted (the caller knows the buildx takes it). With `job_id`, every target gets
    the build arg `ROCMTUI_JOB=<id>`: BuildKit's history record carries it from the build's first
    moment, so a build of rocmtui's own is never taken for one started elsewhere. No
    Dockerfile declares that ARG, so it enters no cache key, no image config and no tag."""
    argv = [docker, "buildx", "bake"]
    for f in bake_files(bake_file):  # a folder: its default files, one -f each, bake's order
        argv += ["-f", str(f)]
    argv += ["--progress=plain", "--metadata-file", metadata_file]
    if node.builder:
        argv += ["--builder", node.builder]
    if push:
        argv.append("--push")
    argv += [f"--allow={grant}" for grant in allow]
    if job_id:
        argv += ["--set", f"*.args.{JOB_BUILD_ARG}={job_id}"]
    return [*argv, "--", target]


def build_command(
    config: FleetConfig,
    target: str,
    arch: str,
    node_name: str | None = None,
    push: bool = False,
    overrides: Mapping[str, str] | None = None,
) -> list[str]:
    """The command a launch runs, for display: `VAR=value ... docker buildx bake ...`
    (override values redacted by name; the metadata file shown as `<job>/metadata.json`)."""
    node = pick_node(config, node_name)
    pairs = engine_assignments(node, arch, dict(overrides or {}))
    argv = build_argv(config.bake_file, target, node, push, "<job>/metadata.json")
    return redact_argv([*pairs, *argv])


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """`VAR=VALUE` strings (from `--set`) as a mapping; raises LaunchError on a bad one."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise LaunchError(f"--set takes VAR=VALUE with a bake variable name, not {item!r}")
        out[name] = value
    return out


def shown_command(words: Iterable[str], cwd: Path | None = None) -> list[str]:
    """The command as an operator reads it: an absolute path under the current folder (where
    the operator runs rocmtui, the rocm-bake checkout) shown relative to it, as they would type
    it; other words unchanged. Display only: the job runs the absolute argv."""
    here = (cwd or Path.cwd()).resolve()
    shown = []
    for word in words:
        path = Path(word)
        if path.is_absolute() and path.is_relative_to(here) and path != here:
            word = str(path.relative_to(here))
        shown.append(word)
    return shown
