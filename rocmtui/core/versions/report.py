"""Each pinned version beside the newest upstream release and beside what the registry's images
were built from (their pin labels): the seed's `make version-check`, for `rocmtui versions` and
the console's versions panel.

The pins are the bake file's `*_VERSION` variables (and any `[upstream.pins]` names), with the
values bake resolves for a build from this shell (fleet file, environment, default); the
registry's side comes from the matrix (the images under today's tags).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from typing import Any, cast

from msgspec import Struct, ValidationError, convert, field, json

from rocmtui.core.bake.effective import fleet_variables
from rocmtui.core.bake.file import ARCH_VARIABLE, BakeError, BakeFile
from rocmtui.core.bake.resolve import BuildxMissing, resolved_variables
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.jobs.checks import FLEET_ARCHES, default_arch
from rocmtui.core.matrix.cells import Matrix
from rocmtui.core.matrix.plan import PIN_PREFIX, launch_environment, state_cache
from rocmtui.core.versions.upstream import UpstreamAnswer, ask_upstream, compare, registry_pins


class VersionRow(Struct, frozen=True):
    """One pin."""

    variable: str
    pinned: str | None
    source: str  # default, environment, fleet
    upstream: UpstreamAnswer
    compared: str  # newest, behind, ahead, unknown
    registry: Mapping[str, int] = field(default_factory=dict)  # label value -> images

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return cast(dict[str, Any], json.decode(json.encode(PinView.of(self))))

    @property
    def compared_shown(self) -> str:
        """`compared` as a table shows it: "—" with no upstream configured, where "unknown"
        beside "not configured" said the same twice (JSON keeps the word)."""
        return "—" if self.upstream.state == "not configured" else self.compared


class Versions(Struct, frozen=True):
    """Every pin, at one moment."""

    rows: tuple[VersionRow, ...]
    taken_at: float
    upstream_configured: bool
    registry_images: int  # images the registry column was read from
    errors: tuple[str, ...] = ()

    @property
    def current(self) -> bool:
        """Every pin the newest upstream release and every image built from today's pins."""
        return not self.errors and all(
            r.compared in ("newest", "ahead") and set(r.registry) <= {r.pinned} for r in self.rows
        )

    def to_json(self) -> dict[str, Any]:
        """What `rocmtui versions --json` prints."""
        view = VersionsView(
            taken_at=self.taken_at,
            upstream_configured=self.upstream_configured,
            registry_images=self.registry_images,
            errors=self.errors,
            pins=tuple(PinView.of(r) for r in self.rows),
        )
        return cast(dict[str, Any], json.decode(json.encode(view)))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Versions:
        """Read back `to_json` (ValueError on anything else)."""
        try:
            view = convert(data, VersionsView, strict=False)
        except (ValidationError, TypeError) as exc:
            raise ValueError(f"not a version check: {exc}") from None
        return cls(
            rows=tuple(p.row() for p in view.pins),
            taken_at=view.taken_at,
            upstream_configured=view.upstream_configured,
            registry_images=view.registry_images,
            errors=view.errors,
        )


# ---------------------------------------------------------------- the JSON shape
# `rocmtui versions --json` as Structs: msgspec encodes and validates them, in field order;
# the records above convert to and from them (names and rounding differ from the records').


class UpstreamView(Struct, frozen=True, kw_only=True):
    """A pin's upstream answer as printed (its releases left out)."""

    source: str | None = None
    name: str | None = None
    state: str
    newest: str | None = None
    newest_prerelease: str | None = None
    age: float | None = None
    reason: str | None = None

    @classmethod
    def of(cls, answer: UpstreamAnswer) -> UpstreamView:
        """The printed form of `answer`."""
        return cls(
            source=answer.source,
            name=answer.name,
            state=answer.state,
            newest=answer.newest,
            newest_prerelease=answer.newest_pre,
            age=None if answer.age is None else round(answer.age, 1),
            reason=answer.reason,
        )

    def answer(self, variable: str) -> UpstreamAnswer:
        """The record read back."""
        return UpstreamAnswer(
            variable=variable,
            source=self.source,
            name=self.name,
            state=self.state,
            newest=self.newest,
            newest_pre=self.newest_prerelease,
            age=self.age,
            reason=self.reason,
        )


class PinView(Struct, frozen=True, kw_only=True):
    """One pin as printed."""

    variable: str
    pinned: str | None = None
    source: str
    upstream: UpstreamView
    compared: str
    registry: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, row: VersionRow) -> PinView:
        """The printed form of `row`."""
        return cls(
            variable=row.variable,
            pinned=row.pinned,
            source=row.source,
            upstream=UpstreamView.of(row.upstream),
            compared=row.compared,
            registry=dict(row.registry),
        )

    def row(self) -> VersionRow:
        """The record read back."""
        return VersionRow(
            variable=self.variable,
            pinned=self.pinned,
            source=self.source,
            upstream=self.upstream.answer(self.variable),
            compared=self.compared,
            registry=self.registry,
        )


class VersionsView(Struct, frozen=True, kw_only=True):
    """`rocmtui versions --json`."""

    taken_at: float
    upstream_configured: bool
    registry_images: int = 0
    errors: tuple[str, ...] = ()
    pins: tuple[PinView, ...]


def pin_variables(bake: BakeFile, config: FleetConfig) -> list[str]:
    """The bake file's `*_VERSION` variables in file order, then `[upstream.pins]` names."""
    names = [n for n in bake.variables if n.endswith("_VERSION")]
    return names + [n for n in config.upstream.pins if n not in names and n in bake.variables]


def compute_versions(
    config: FleetConfig,
    env: Mapping[str, str] | None = None,
    *,
    matrix: Matrix | None = None,
    bake: BakeFile | None = None,
    fresh: bool = False,
) -> Versions:
    """The version check. `matrix` (the registry's side) is computed when not given. Raises
    BakeError when the bake file cannot be read; upstream and registry troubles are states."""
    env = os.environ if env is None else env
    if bake is None:
        # on first use: only a caller that passed no bake file
        from rocmtui.core.matrix.bakecache import load_bake_kept

        bake = load_bake_kept(config.bake_file, state_cache(config, "bakefile", env))
    names = pin_variables(bake, config)
    errors: list[str] = []

    launch_env = launch_environment(config, bake, env)(default_arch(bake) or FLEET_ARCHES[0])
    try:
        pinned = resolved_variables(bake.path, names, launch_env)
    except (BakeError, BuildxMissing) as exc:
        errors.append(f"pins not resolved by bake: {exc}")
        pinned = {n: v.default for n in names if (v := bake.variables[n]).default is not None}
    from_fleet = fleet_variables(config.variables, bake)
    upstream = asyncio.run(
        ask_upstream(config.upstream, names, state_cache(config, "upstream", env), fresh=fresh)
    )
    if matrix is None:
        # on first use: only a caller that passed no matrix
        from rocmtui.core.matrix.report import compute_matrix

        matrix = compute_matrix(config, env, bake=bake)
    labels = {
        f"{row.name}@{cell.arch}": cell.image.labels
        for row, cell in matrix.cells()
        if cell.image is not None
    }
    registry = registry_pins(labels, PIN_PREFIX)
    rows = []
    for name in names:
        source = (
            "environment"
            if name in env and name != ARCH_VARIABLE
            else "fleet"
            if name in from_fleet
            else "default"
        )
        answer = upstream[name]
        rows.append(
            VersionRow(
                variable=name,
                pinned=pinned.get(name),
                source=source,
                upstream=answer,
                compared=compare(pinned.get(name), answer),
                registry=registry.get(name, {}),
            )
        )
    return Versions(
        rows=tuple(rows),
        taken_at=time.time(),
        upstream_configured=config.upstream.configured,
        registry_images=len(labels),
        errors=tuple(errors) + matrix.errors,
    )
