"""What a launch will run, decided as data before anything starts.

The argument list (no shell; plain progress; the metadata file; `--` before the target), the
environment (the scrubbed launch environment from `bakeprint.bake_environment`, explicit
overrides of declared variables only, `GFX_ARCH`, the node's `DOCKER_HOST` or
`DOCKER_CONTEXT`), and the checks: target, arch and node names, overrides, and for a pushing
build a login entry for every registry it pushes to (`registries`: presence of the key only).

A target is any name bake accepts: a `target` block is known from the file alone (the
single-arch rebuild: `pytorch` + `GFX_ARCH`); a group or matrix name (`all`, `pytorch-gfx1201`)
is asked of `bake --print` under the job's environment, which says what it pushes and builds
(read by `printed`: its targets, their images, the arch they pin).
"""

from __future__ import annotations

import difflib
import os
import pwd
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rocmtui.core.bakefile import ARCH_VARIABLE, BakeError
from rocmtui.core.config import FleetConfig, NodeConfig
from rocmtui.core.jobs.printed import image_keys, printed_pushes, printed_targets
from rocmtui.core.jobs.redaction import redact_argv

#: How long a launch waits for `bake --print` (it answers in ~0.1 s and needs no daemon).
RESOLVE_TIMEOUT = 20.0


class LaunchError(Exception):
    """A launch that cannot go ahead as asked (unknown target, arch, node or variable)."""


class LaunchRefused(LaunchError):
    """A launch refused by policy: a pushing target without --yes or without a login entry."""


class ReadOnlyRefused(Exception):
    """A read-only fleet (`--read-only`, or `read_only = true` in the fleet file) starts and
    stops no builds: the core refuses, so the console and every command obey the same rule."""


def refuse_if_read_only(config: FleetConfig | None, action: str) -> None:
    """Raise ReadOnlyRefused when `config` is read-only; `action` says what was refused."""
    if config is not None and config.read_only:
        raise ReadOnlyRefused(f"read-only (--read-only or read_only = true): {action} is refused")


# -- reading the bake file (tolerant of the BakeFile's exact shapes) ----------------------------


def names_of(items: Any) -> list[str]:
    """Names of a mapping's keys or of a sequence of named things (the BakeFile's shapes)."""
    if isinstance(items, Mapping):
        return [str(k) for k in items]
    out = []
    for item in items or ():
        out.append(item if isinstance(item, str) else str(getattr(item, "name", item)))
    return out


def variable_default(bake: Any, name: str) -> str | None:
    """A variable's literal default as text (None when it has none or it is a template)."""
    variables = getattr(bake, "variables", {}) or {}
    var = variables.get(name) if isinstance(variables, Mapping) else None
    if var is None:
        for item in variables if not isinstance(variables, Mapping) else ():
            if getattr(item, "name", None) == name:
                var = item
    if var is None:
        return None
    value = getattr(var, "default", var)
    if isinstance(value, str):
        return value.strip().strip('"')
    return None if value is None else str(value)


def known_arches(bake: Any) -> list[str]:
    """The GPU architectures the bake file knows."""
    return names_of(getattr(bake, "arches", ()))


def target_pushes(bake: Any, target: str, printed: Mapping[str, Any] | None = None) -> bool:
    """Whether the target pushes to a registry (its own or an inherited output); with `printed`
    (`resolve_target`'s answer), whether any target bake resolved for the name pushes."""
    if printed is not None:
        return any(printed_pushes(body) for body in printed_targets(printed).values())
    pushing = set(names_of(getattr(bake, "pushing_targets", ())))
    if target in pushing:
        return True
    targets = getattr(bake, "targets", {}) or {}
    entry = targets.get(target) if isinstance(targets, Mapping) else None
    return bool(getattr(entry, "pushes", False))


def bake_path(config: FleetConfig, bake: Any) -> Path:
    """The bake file's path: the loaded file's own, else the fleet file's `bake_file`."""
    path = getattr(bake, "path", None)
    return Path(path) if path else Path(config.bake_file)


# -- environment and command --------------------------------------------------------------------


def bake_workdir(path: Path) -> Path:
    """Where bake runs: the bake file's folder (its context paths are relative to it)."""
    from rocmtui.core.bakeprint import bake_workdir as project_rule

    return Path(project_rule(path))


def _scrubbed(
    env: Mapping[str, str], overrides: Mapping[str, str], declared: Iterable[str]
) -> dict[str, str]:
    from rocmtui.core.bakeprint import bake_environment

    return dict(bake_environment(env, overrides, bake_variables=declared))


def node_environment(
    node: NodeConfig,
    arch: str,
    env: Mapping[str, str],
    overrides: Mapping[str, str],
    declared: Iterable[str] = (),
) -> dict[str, str]:
    """bake's whole environment for a job: the scrubbed launch environment (no variable the
    bake file declares, unless overridden explicitly) + overrides + arch + the node's engine."""
    child = _scrubbed(env, {**overrides, ARCH_VARIABLE: arch}, declared)
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
    config: FleetConfig,
    target: str,
    node: NodeConfig,
    push: bool,
    metadata_file: str,
    docker: str = "docker",
    bake_file: Path | None = None,
) -> list[str]:
    """bake's argument list: plain progress (what people read and the parser knows best),
    the metadata file, the node's builder, --push, and `--` before the target."""
    argv = [docker, "buildx", "bake", "-f", str(bake_file or config.bake_file)]
    argv += ["--progress=plain", "--metadata-file", metadata_file]
    if node.builder:
        argv += ["--builder", node.builder]
    if push:
        argv.append("--push")
    return [*argv, "--", target]


def build_command(
    config: FleetConfig,
    target: str,
    arch: str,
    node_name: str | None = None,
    push: bool = False,
    overrides: Mapping[str, str] | None = None,
) -> list[str]:
    """The command a launch would run, for display: `VAR=value ... docker buildx bake ...`
    (override values redacted by name; the metadata file shown as `<job>/metadata.json`)."""
    node = pick_node(config, node_name)
    pairs = engine_assignments(node, arch, dict(overrides or {}))
    argv = build_argv(config, target, node, push, "<job>/metadata.json")
    return redact_argv([*pairs, *argv])


# -- validation -----------------------------------------------------------------------------------


def static_names(bake: Any) -> set[str]:
    """Every target and group name written in the file (matrix blocks by their label)."""
    targets = names_of(getattr(bake, "targets", {}))
    return set(targets) | set(names_of(getattr(bake, "groups", {})))


def unknown_target(path: Path, target: str, names: Iterable[str]) -> LaunchError:
    """The one-line refusal of a name bake does not know, with up to three close matches."""
    shown = sorted(n for n in names if not n.startswith("_"))  # `_x` are bases, not builds
    close = difflib.get_close_matches(target, shown, n=8, cutoff=0.6)
    # difflib ranks pytorch-gfx1250 above pytorch-gfx1201 for pytorch-gfx1202: fewest edits first
    close = sorted(close, key=lambda name: _edits(target, name))[:3]
    hint = f" (did you mean: {', '.join(close)}?)" if close else ""
    return LaunchError(f"no target {target!r} in {path}{hint}")


def _edits(a: str, b: str) -> int:
    """Levenshtein distance (names are short; this runs only on a refusal)."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def resolve_target(
    config: FleetConfig,
    bake: Any,
    target: str,
    env: Mapping[str, str],
    timeout: float = RESOLVE_TIMEOUT,
) -> dict[str, Any] | None:
    """Check that bake accepts `target`. None for a `target` block of the file (nothing runs:
    launches stay cheap); any other name (group, matrix name) is `bake --print`ed with `env`,
    the job's own environment, since matrix names follow variables, and that JSON returned. A
    name bake refuses raises LaunchError naming the file and the target, with close matches
    from `bakeprint.resolved_names`; any other bake failure is raised as bake reported it."""
    if target in names_of(getattr(bake, "targets", {})):
        return None
    from rocmtui.core.bakeprint import BuildxMissing, bake_print, resolved_names

    path = bake_path(config, bake)
    try:
        return bake_print(path, [target], env, timeout)
    except BuildxMissing:
        if target in static_names(bake):
            raise  # a group written in the file: buildx is needed to build it anyway
        raise unknown_target(path, target, static_names(bake)) from None
    except BakeError as exc:
        refused = exc
    try:
        known = resolved_names(bake, env, timeout)
    except BakeError:
        raise refused from None
    if target in known:
        raise refused  # bake knows the name but cannot resolve it: its own message says why
    raise unknown_target(path, target, known) from None


def printed_view(
    config: FleetConfig,
    bake: Any,
    target: str,
    env: Mapping[str, str],
    timeout: float = RESOLVE_TIMEOUT,
) -> dict[str, Any]:
    """`bake --print TARGET` under `env` (the job's own environment), or `{}` when bake cannot
    answer: callers then fall back to what the bake file says (the build itself will fail and
    say why)."""
    from rocmtui.core.bakeprint import BuildxMissing, bake_print

    try:
        return bake_print(bake_path(config, bake), [target], dict(env), timeout)
    except (BakeError, BuildxMissing):
        return {}


def images(
    config: FleetConfig,
    bake: Any,
    target: str,
    arch: str,
    env: Mapping[str, str],
    printed: Mapping[str, Any] | None = None,
    timeout: float = RESOLVE_TIMEOUT,
) -> list[str]:
    """What a launch of `target` builds, as slot keys: each image tag of every target bake
    resolves the name to (`tag:...`), `target:NAME@ARCH` for a target without tags.

    `pytorch` for gfx1201, `pytorch-gfx1201`, `pytorch-push` for gfx1201 and the group
    `gfx1201` all build the tag `.../pytorch:...-gfx1201`, so they share its slot. Targets bake
    builds only as another's context (`base` under `pytorch`) are not keys: `pytorch` and
    `triton` may build on one node at once, and BuildKit shares their base stage. `printed` is
    bake's view under exactly `env` when the caller has one; otherwise bake is asked here. If
    bake cannot answer, the name as given is the key (the build itself will say why)."""
    if printed is None:
        printed = printed_view(config, bake, target, env, timeout)
    return image_keys(printed, target, arch)


def pick_node(config: FleetConfig, node_name: str | None) -> NodeConfig:
    """The named node (LaunchError if unknown), else the local node, else the first."""
    if node_name:
        node = config.node(node_name)
        if node is None:
            names = ", ".join(n.name for n in config.nodes)
            raise LaunchError(f"no node {node_name!r} in the fleet file (nodes: {names})")
        return node
    return next((n for n in config.nodes if n.local), config.nodes[0])


def check_overrides(bake: Any, overrides: Mapping[str, str]) -> None:
    """Refuse overrides of undeclared variables, and GFX_ARCH (that is --arch)."""
    declared = set(names_of(getattr(bake, "variables", {})))
    for name in overrides:
        if name == ARCH_VARIABLE:
            raise LaunchError(f"set {ARCH_VARIABLE} with --arch, not as a variable override")
        if name not in declared:
            raise LaunchError(
                f"{name!r} is not a variable of the bake file; only declared variables can be "
                "overridden"
            )


def logout_risk(
    user: str | None = None, etc: Path = Path("/etc"), var: Path = Path("/var")
) -> str | None:
    """Why a detached build might still die at logout, or None.

    Where logind has `KillUserProcesses=yes`, every process of a login session is killed at
    logout, `setsid` or not (HAZARDS.md); only a process in the user's systemd manager, kept
    after logout by linger, survives. Read from logind.conf (and its drop-ins, last wins).
    """
    files = [etc / "systemd" / "logind.conf"]
    files += sorted((etc / "systemd" / "logind.conf.d").glob("*.conf"))
    kill = False
    for conf in files:
        try:
            text = conf.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            name, sep, value = line.strip().partition("=")
            if sep and name.strip() == "KillUserProcesses":
                kill = value.strip().lower() in ("yes", "true", "1", "on")
    if not kill:
        return None
    name = user or pwd.getpwuid(os.geteuid()).pw_name
    linger = (var / "lib" / "systemd" / "linger" / name).exists()
    advice = "" if linger else f"`loginctl enable-linger {name}` and "
    return (
        "logind kills a session's processes at logout (KillUserProcesses=yes): this build may "
        f"die when the session ends; use {advice}start builds from a `systemd-run --user` shell"
    )


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """`VAR=VALUE` strings (from `--set`) as a mapping; raises LaunchError on a bad one."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise LaunchError(f"--set takes VAR=VALUE with a bake variable name, not {item!r}")
        out[name] = value
    return out
