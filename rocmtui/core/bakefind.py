"""Which bake file the built-in default reads: the one in the current folder, as bake finds it.

`docker buildx bake` with no `-f` reads every file of its default list that exists in the
current folder (`BUILDX_DEFAULT_FILES`, buildx 0.13.1's list in its order, checked against
that release) and merges them. rocmtui reads one HCL file: `rocm-bake.hcl` (the name the
rocm-bake checkout uses, passed to bake with `-f`), else `docker-bake.hcl`. So `rocmtui` run
at the root of a rocm-bake checkout just works. Found nothing readable: the project's own
`bake/rocm-bake.hcl` when rocmtui runs from its source tree (a demo), else no bake file, said
in one line (`BakeLookup.problem`), and the console still shows the fleet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocmtui.core.config import FleetConfig

#: buildx 0.13.1 reads these from the current folder when no -f is given, in this order.
BUILDX_DEFAULT_FILES = (
    "compose.yaml",
    "compose.yml",
    "docker-compose.yml",
    "docker-compose.yaml",
    "docker-bake.json",
    "docker-bake.override.json",
    "docker-bake.hcl",
    "docker-bake.override.hcl",
)
#: What rocmtui can read (HCL), in the order it prefers them.
READABLE = ("rocm-bake.hcl", "docker-bake.hcl")
DEMO = Path(__file__).resolve().parents[2] / "bake" / "rocm-bake.hcl"  # the source tree's


@dataclass(frozen=True, slots=True)
class BakeLookup:
    """The bake file the default reads, and how it was found.

    `problem` is set (one line) when there is none: `path` is then where it was looked for."""

    path: Path
    found_by: str
    problem: str | None = None


def find_bake_file(cwd: Path, demo: Path = DEMO) -> BakeLookup:
    """The bake file for the built-in default, looked for in `cwd`."""
    for name in READABLE:
        if (cwd / name).is_file():
            return BakeLookup(cwd / name, f"{name} in the current folder")
    others = [name for name in BUILDX_DEFAULT_FILES if (cwd / name).is_file()]
    unread = f" ({', '.join(others)} found: rocmtui reads HCL bake files only)" if others else ""
    if demo.is_file():
        return BakeLookup(demo, f"the project's demo bake/rocm-bake.hcl: none in {cwd}{unread}")
    names = ", ".join(dict.fromkeys((*READABLE, *BUILDX_DEFAULT_FILES)))
    return BakeLookup(
        cwd / READABLE[0],
        "none found",
        f"no bake file here (none of {names}){unread}; run rocmtui in the rocm-bake "
        "checkout, or set bake_file in a fleet file",
    )


def check_found(config: FleetConfig) -> None:
    """Raise the lookup's one-line BakeError when the default found no bake file (callers
    then say that, not 'no such bake file' for a path nobody chose)."""
    from rocmtui.core.bakefile import BakeError

    if config.bake_problem and not config.bake_file.exists():
        raise BakeError(config.bake_problem, config.bake_file.parent)
