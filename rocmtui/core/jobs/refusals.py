"""Why a launch or a cancel does not go ahead: the errors the console and the CLI catch.

`LaunchError` for a name, arch, node or variable that cannot be used (the CLI's exit 2);
`LaunchRefused` for a launch refused by policy (a push not confirmed, no registry login,
privileges bake asks for and nobody granted: `PrivilegesRefused`) and
`AlreadyRunning` when an image it builds is being built on the node (exit 1);
`ReadOnlyRefused` when the fleet is read-only, for a launch and a cancel alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the console imports these errors on its way up; the locks only when used
    from rocmtui.core.config.fleetfile import FleetConfig
    from rocmtui.core.jobs.locks import SlotHolder

__all__ = [
    "AlreadyRunning",
    "LaunchError",
    "LaunchRefused",
    "PrivilegesRefused",
    "ReadOnlyRefused",
    "refuse_if_read_only",
]


class LaunchError(Exception):
    """A launch that cannot go ahead as asked (unknown target, arch, node or variable)."""


class LaunchRefused(LaunchError):
    """A launch refused by policy: a pushing target without --yes or without a login entry."""


class PrivilegesRefused(LaunchRefused):
    """bake will ask for privileges nobody granted (`--allow`), or granted without the `--yes`
    a loud one needs: nothing starts. `asked` holds the `--allow` words of what is missing."""

    def __init__(self, message: str, asked: tuple[str, ...]) -> None:
        super().__init__(message)
        self.asked = asked


class AlreadyRunning(LaunchRefused):
    """An image of the launch is already being built on the node; `holder` says whose and
    since when."""

    def __init__(self, message: str, holder: SlotHolder | None) -> None:
        super().__init__(message)
        self.holder = holder

    @property
    def job_id(self) -> str | None:
        """The running job's id, when its holder wrote it."""
        return self.holder.job_id if self.holder else None


class ReadOnlyRefused(Exception):
    """A read-only fleet (`--read-only`, or `read_only = true` in the fleet file) starts and
    stops no builds: the core refuses, so the console and every command obey the same rule."""


def refuse_if_read_only(config: FleetConfig | None, action: str) -> None:
    """Raise ReadOnlyRefused when `config` is read-only; `action` says what was refused."""
    if config is not None and config.read_only:
        raise ReadOnlyRefused(f"read-only (--read-only or read_only = true): {action} is refused")
