"""The matrix's rows and columns as bake resolves them with the pins in effect now.

Columns: the bake file's arches (GFX_ARCH's default, then SUPPORTED_GFX_ARCHES), then any a
node of the fleet has, then any a matrix target pins that neither names. For each arch, one
`docker buildx bake --print` of every target and group the file writes (matrix blocks expand to
the names they make), run with the launch environment of that arch: the same scrubbed
environment and overrides a build from this shell would get.

Rows: the targets that build the same tag in any arch are one row (`pytorch`, `pytorch-push`
and `pytorch-gfx1201` all build `.../pytorch:...-gfx1201`), named after the plainest of them.
Groups are not rows; they say which cells a group job built. A target whose printed GFX_ARCH is
another arch than the print's (a matrix name) belongs to that arch's column only. A target with
no tag builds nothing the registry could hold, and is listed as untagged.

`bake --print` is asked again only when the bake file or the environment changed: its answers
are kept under the state folder, keyed by both (a file that calls `timestamp()` is never kept).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from rocmtui.core.bake.effective import fleet_variables, shell_overrides
from rocmtui.core.bake.file import ARCH_VARIABLE, BakeError, BakeFile
from rocmtui.core.bake.find import bake_bytes
from rocmtui.core.bake.resolve import bake_environment
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.diskcache import JsonCache
from rocmtui.core.jobs.printed import printed_pushes, printed_targets
from rocmtui.core.paths import state_dir

PIN_PREFIX = "rocm-bake.pin."
PRINT_TIMEOUT = 30.0


class PlannedCell(Struct, frozen=True):
    """What bake resolves for one row in one arch."""

    arch: str
    tag: str
    targets: tuple[str, ...]  # every name that builds this tag (matrix names included)
    push_target: str | None  # the name that pushes it, if any
    pins: Mapping[str, str]  # the pin labels the image should carry (variable -> value)
    platform: str = "linux/amd64"


class MatrixPlan(Struct, frozen=True):
    """Rows (in bake-file order) × arches, with the groups each arch's print expanded."""

    arches: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...], Mapping[str, PlannedCell]], ...]  # name, targets, cells
    groups: Mapping[str, Mapping[str, frozenset[str]]] = field(
        default_factory=dict
    )  # arch -> group -> targets
    untagged: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    def tags(self) -> set[str]:
        """Every tag of the plan."""
        return {cell.tag for _, _, cells in self.rows for cell in cells.values()}


def columns(bake: BakeFile, config: FleetConfig) -> list[str]:
    """The bake file's arches, then the fleet's nodes' (each once, in that order)."""
    out: list[str] = []
    for arch in [*bake.arches, *(n.gfx for n in config.nodes if n.gfx)]:
        if arch and arch not in out:
            out.append(arch)
    return out


def _print_key(path: Path, text: bytes, names: Iterable[str], env: Mapping[str, str]) -> str:
    digest = hashlib.sha256(text).hexdigest()
    return json.dumps(["bake-print", str(path), digest, sorted(names), sorted(env.items())])


def cached_print(
    bake: BakeFile,
    names: list[str],
    env: Mapping[str, str],
    cache: Any | None,
    timeout: float = PRINT_TIMEOUT,
) -> dict[str, Any]:
    """`bake --print NAMES` under `env`, from `cache` (a JsonCache) when the file's bytes and the
    environment are exactly those it was asked with."""
    from rocmtui.core.bake.resolve import bake_print  # at the call: tests count the calls

    try:
        text = bake_bytes(bake.path)  # a folder: all its default files
    except OSError as exc:
        raise BakeError(f"cannot read: {exc.strerror}", bake.path) from None
    key = (
        _print_key(bake.path, text, names, env)
        if cache is not None and b"timestamp(" not in text
        else None
    )
    if key is not None:
        kept = cache.get(key)  # type: ignore[union-attr]
        if kept is not None and isinstance(kept[0], dict):
            return kept[0]
    printed = bake_print(bake.path, names, env, timeout)
    if key is not None:
        cache.put(key, printed)  # type: ignore[union-attr]
    return printed


def _arch_of(body: Mapping[str, Any], default: str) -> str:
    args = body.get("args")
    arch = args.get(ARCH_VARIABLE) if isinstance(args, Mapping) else None
    return arch if isinstance(arch, str) and arch else default


def _groups(printed: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """Each printed group as the set of targets it builds (nested groups expanded)."""
    raw = printed.get("group")
    groups = (
        {str(k): v for k, v in raw.items() if isinstance(v, Mapping)}
        if isinstance(raw, Mapping)
        else {}
    )
    targets = set(printed_targets(printed))

    def members(name: str, seen: frozenset[str]) -> set[str]:
        body = groups.get(name)
        if body is None or name in seen:
            return {name} & targets
        found: set[str] = set()
        for member in body.get("targets") or []:
            if isinstance(member, str):
                found |= members(member, seen | {name}) if member in groups else {member} & targets
        return found

    return {name: frozenset(members(name, frozenset())) for name in groups if name != "default"}


def _label(bake: BakeFile, names: Iterable[str]) -> str:
    """The row's name: a target written in the file before a matrix name, a non-pushing one
    before its `-push` variant, then the shortest."""
    written = bake.targets

    def rank(name: str) -> tuple[int, int, int, str]:
        entry = written.get(name)
        return (entry is None, bool(entry and entry.pushes), len(name), name)

    return min(names, key=rank)


def _order(bake: BakeFile, names: Iterable[str]) -> tuple[int, str]:
    lines = [bake.targets[n].line for n in names if n in bake.targets]
    return (min(lines) if lines else 1 << 30, min(names))


class _Rows:
    """Union of targets that share a tag, and each (row, arch) cell's contributors."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.by_tag: dict[str, dict[str, Any]] = {}  # tag -> {"arch", "targets", "push", "pins"}

    def find(self, name: str) -> str:
        self.parent.setdefault(name, name)
        while self.parent[name] != name:
            self.parent[name] = self.parent[self.parent[name]]
            name = self.parent[name]
        return name

    def union(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)

    def add(self, name: str, body: Mapping[str, Any], arch: str) -> None:
        tags = [t for t in body.get("tags") or [] if isinstance(t, str) and t]
        tag = tags[0]
        labels = body.get("labels")
        labels = labels if isinstance(labels, Mapping) else {}
        pins = {
            str(k)[len(PIN_PREFIX) :]: str(v)
            for k, v in labels.items()
            if str(k).startswith(PIN_PREFIX)
        }
        platforms = body.get("platforms") if isinstance(body.get("platforms"), list) else []
        entry = self.by_tag.setdefault(
            tag,
            {
                "arch": arch,
                "targets": [],
                "push": None,
                "pins": pins,
                "platform": str(platforms[0]) if platforms else "linux/amd64",
            },
        )
        if name not in entry["targets"]:
            entry["targets"].append(name)
        if entry["push"] is None and printed_pushes(body):
            entry["push"] = name
        self.find(name)
        self.union(name, entry["targets"][0])


def make_plan(
    config: FleetConfig,
    bake: BakeFile,
    launch_env: Any,
    *,
    cache: Any | None = None,
    timeout: float = PRINT_TIMEOUT,
) -> MatrixPlan:
    """Print every arch (in parallel) and make the rows. `launch_env(arch)` is the environment
    bake gets for a build of that arch. An arch bake refuses is an error of the plan, named;
    the other arches still fill."""
    names = sorted(n for n in {*bake.targets, *bake.groups} if not n.startswith("_"))
    arches = columns(bake, config)
    printed: dict[str, dict[str, Any]] = {}
    errors: list[str] = []

    def one(arch: str) -> tuple[str, dict[str, Any] | None, str | None]:
        try:
            return arch, cached_print(bake, names, launch_env(arch), cache, timeout), None
        except BakeError as exc:
            return arch, None, f"{arch}: {exc}"

    todo = list(arches)
    while todo:
        with ThreadPoolExecutor(max_workers=min(4, len(todo))) as pool:
            results = list(pool.map(one, todo))
        todo = []
        for arch, answer, error in results:
            if error:
                errors.append(error)
            if answer is None:
                continue
            printed[arch] = answer
            for body in printed_targets(answer).values():  # a matrix pins an arch not listed
                pinned = _arch_of(body, arch)
                if pinned not in arches:
                    arches.append(pinned)
                    todo.append(pinned)
    rows = _Rows()
    untagged: set[str] = set()
    for arch in arches:
        for name, body in printed_targets(printed.get(arch, {})).items():
            if name.startswith("_") or _arch_of(body, arch) != arch:
                continue
            if not any(isinstance(t, str) and t for t in body.get("tags") or []):
                untagged.add(name)
                continue
            rows.add(name, body, arch)
    members: dict[str, list[str]] = {}
    for name in rows.parent:
        members.setdefault(rows.find(name), []).append(name)
    planned: list[tuple[tuple[int, str], str, tuple[str, ...], dict[str, PlannedCell]]] = []
    for group in members.values():
        label = _label(bake, group)
        cells: dict[str, PlannedCell] = {}
        for tag, entry in rows.by_tag.items():
            if rows.find(entry["targets"][0]) != rows.find(label):
                continue
            arch = entry["arch"]
            if arch in cells and label not in entry["targets"]:
                continue  # two tags for one arch: the row's own target's wins
            cells[arch] = PlannedCell(
                arch=arch,
                tag=tag,
                targets=tuple(sorted(entry["targets"])),
                push_target=entry["push"],
                pins=entry["pins"],
                platform=entry["platform"],
            )
        planned.append((_order(bake, group), label, tuple(sorted(group)), cells))
    planned.sort(key=lambda p: p[0])
    return MatrixPlan(
        arches=tuple(arches),
        rows=tuple((label, targets, cells) for _, label, targets, cells in planned),
        groups={arch: _groups(p) for arch, p in printed.items()},
        untagged=tuple(sorted(untagged - set(rows.parent))),
        errors=tuple(errors),
    )


def launch_environment(config: FleetConfig, bake: BakeFile, env: Mapping[str, str]) -> Any:
    """`arch -> environment` for bake: what a build of that arch from this shell would get
    (the fleet file's variables, the shell's variables named like bake variables, the arch)."""
    overrides = fleet_variables(config.variables, bake) | shell_overrides(bake, env)
    overrides.pop(ARCH_VARIABLE, None)

    def for_arch(arch: str) -> dict[str, str]:
        return bake_environment(
            env, {**overrides, ARCH_VARIABLE: arch}, bake_variables=bake.variables
        )

    return for_arch


def state_cache(config: FleetConfig, name: str, env: Mapping[str, str] | None = None) -> Any:
    """The JsonCache `name` under the state folder's cache."""
    return JsonCache(state_dir(config, os.environ if env is None else env) / "cache" / name)
