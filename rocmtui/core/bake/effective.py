"""Every variable of a bake file with the value bake will use, and where that value comes from.

`effective_variables` joins the static reader's declarations (`bake.file`) with what buildx
resolved for one environment (`resolve.resolved_variables`), or with what the static reader can
vouch for when buildx was not asked; `fleet_variables` and `shell_overrides` name the overrides a
launch from a fleet file, or a plain `docker buildx bake` in this shell, would pass. Split from
`resolve`, which runs buildx.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from msgspec import Struct

from rocmtui.core.bake.file import ARCH_VARIABLE, BakeFile, BakeVariable
from rocmtui.core.bake.scan import plain_string

SOURCE_DEFAULT = "default"
SOURCE_ENVIRONMENT = "environment"
SOURCE_FLEET = "fleet"  # the fleet file's [variables]


class EffectiveVariable(Struct, frozen=True):
    """One variable as bake will use it under a given environment.

    `source` is "environment" when the environment holds a variable of exactly this name (bake's
    precedence: it beats the default), else "default". `value` is None when it is unknown: not
    resolved by buildx and not a literal the static reader can vouch for (a template such as
    `"${REGISTRY}/x"`, a number overridden from the environment), or null; `resolved` says
    whether buildx computed it. When `secret` (the name looks like a credential) `value`,
    `default` and `default_source` are redacted, and any secret's value is redacted inside
    every other variable's text too.
    """

    name: str
    default_source: str
    default: str | None
    value: str | None
    source: str
    secret: bool
    line: int = 0
    resolved: bool = False
    file: str | None = None  # the bake file whose declaration is in effect (`line` is in it)


def fleet_variables(variables: Mapping[str, str], bake: BakeFile) -> dict[str, str]:
    """The fleet file's `[variables]` this bake file declares (GFX_ARCH is chosen per build):
    the values a launch from this fleet uses unless the operator overrides them."""
    return {k: v for k, v in variables.items() if k in bake.variables and k != ARCH_VARIABLE}


def shell_overrides(bake: BakeFile, base: Mapping[str, str]) -> dict[str, str]:
    """The entries of `base` that a plain `docker buildx bake` run with it would take as
    variable overrides: exactly those named like one of the file's variables."""
    return {name: base[name] for name in bake.variables if name in base}


def _static_value(var: BakeVariable, env: Mapping[str, str]) -> str | None:
    """What the static reader can vouch for without buildx (None: unknown)."""
    if var.name not in env:
        return var.default
    source = var.default_source.strip()
    # bake parses an override by the default's type: a string (or no default, or null) takes
    # the environment value as it is; a number, bool or list is parsed -- leave that to buildx.
    if source in ("", "null") or source.startswith('"'):
        return env[var.name]
    return None


def effective_variables(
    bake: BakeFile,
    env: Mapping[str, str],
    resolved: Mapping[str, str] | None = None,
    fleet_names: Iterable[str] = (),
) -> list[EffectiveVariable]:
    """Every variable of `bake` (file order) with its effective value under `env`, the exact
    environment bake runs with (see `bake_environment`). `resolved` is `resolved_variables(...)`
    for that same environment; without it, values come from the static reader where it can
    vouch for them and are None (unresolved) where it cannot -- never a guess. `fleet_names`
    are the variables whose value in `env` comes from the fleet file (source "fleet")."""
    # on first use: kept off `--help`
    from rocmtui.core.text.redact import Redactor, is_secret_name

    rows: list[tuple[BakeVariable, str | None]] = []
    secrets: dict[str, str] = {}
    for var in bake.variables.values():
        value = resolved.get(var.name) if resolved is not None else _static_value(var, env)
        rows.append((var, value))
        if is_secret_name(var.name):
            for text in (value, var.default, plain_string(var.default_source)):
                if text:
                    secrets.setdefault(text, var.name)
    redactor = Redactor(env, secrets.keys())
    from_fleet = frozenset(fleet_names)
    out: list[EffectiveVariable] = []
    for var, value in rows:
        secret = is_secret_name(var.name)
        if secret:
            hidden = f"<redacted:{var.name}>"
            shown_value = hidden if value else value
            default = hidden if var.default else var.default
            default_source = hidden if var.default_source else ""
        else:
            shown_value = redactor.redact_text(value) if value is not None else None
            default = redactor.redact_text(var.default) if var.default is not None else None
            default_source = redactor.redact_text(var.default_source)
        out.append(
            EffectiveVariable(
                name=var.name,
                default_source=default_source,
                default=default,
                value=shown_value,
                source=SOURCE_FLEET
                if var.name in from_fleet
                else SOURCE_ENVIRONMENT
                if var.name in env
                else SOURCE_DEFAULT,
                secret=secret,
                line=var.line,
                resolved=resolved is not None,
                file=str(var.path) if var.path is not None else None,
            )
        )
    return out
