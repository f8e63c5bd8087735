"""Which bake file the built-in default reads: what bake itself reads in the current folder.

`docker buildx bake` with no `-f` reads every file of its default list that exists in the
current folder (`BUILDX_DEFAULT_FILES`, buildx 0.13.1's list in its order, checked against
that release) and merges them, a later file's target attributes, group members and variable
defaults winning. rocmtui reads the same files, except compose files (bake makes targets of
their services; rocmtui reads bake's own HCL and JSON only, and says so in one line naming
the file):

- `rocm-bake.hcl` first (the name the rocm-bake checkout uses, passed to bake with `-f`), alone;
- else the HCL/JSON files of bake's list: one found is that file; several are the folder
  itself, which every reader (`bake_files`) expands back into those files in bake's order, and
  every bake run gets as one `-f` per file in that order;
- found nothing readable: the project's own `bake/rocm-bake.hcl` when rocmtui runs from its
  source tree (a demo), else no bake file, said in one line (`BakeLookup.problem`), and the
  console still shows the fleet.

A folder given as `bake_file` in a fleet file means the same: what bake reads there with no `-f`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from msgspec import Struct

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
#: The compose files of that list: bake reads their services as targets; rocmtui does not.
COMPOSE_FILES = tuple(n for n in BUILDX_DEFAULT_FILES if "compose" in n)
#: The bake files of that list rocmtui reads (HCL and bake's JSON), in bake's order.
BAKE_DEFAULT_FILES = tuple(n for n in BUILDX_DEFAULT_FILES if n not in COMPOSE_FILES)
#: The rocm-bake checkout's own name; read alone, before bake's list.
ROCM_BAKE = "rocm-bake.hcl"
DEMO = Path(__file__).resolve().parents[3] / "bake" / "rocm-bake.hcl"  # the source tree's


class BakeLookup(Struct, frozen=True):
    """The bake file the default reads, and how it was found.

    `path` is one file, or a folder whose `bake_files` are several files merged as bake merges
    them. `problem` is set (one line) when there is none: `path` is then where it was looked
    for."""

    path: Path
    found_by: str
    problem: str | None = None


def default_files(folder: Path) -> tuple[Path, ...]:
    """The HCL/JSON files of bake's default list present in `folder`, in bake's order."""
    return tuple(folder / n for n in BAKE_DEFAULT_FILES if (folder / n).is_file())


def bake_files(path: Path | str) -> tuple[Path, ...]:
    """The files a bake path stands for, in the order bake reads them: a folder is what bake
    reads there with no `-f` (see the module doc); anything else is itself."""
    path = Path(path)
    return default_files(path) if path.is_dir() else (path,)


def bake_bytes(path: Path | str) -> bytes:
    """The bytes of every file `path` stands for, each with its name (a cache key's material).
    Raises OSError as reading would."""
    files = bake_files(path)
    if files == (Path(path),):
        return Path(path).read_bytes()
    return b"".join(f"\0{f.name}\0".encode() + f.read_bytes() for f in files)


def bake_file_names(path: Path | str) -> str:
    """The files a bake path stands for, by name, as one short phrase (`a.hcl + b.hcl`)."""
    files = bake_files(path)
    return " + ".join(f.name for f in files) if files else Path(path).name


def shown(path: Path | str) -> str:
    """A bake path for people: a file as itself; a folder with the files it stands for."""
    path = Path(path)
    return f"{path} ({bake_file_names(path)})" if path.is_dir() else str(path)


def compose_note(folder: Path) -> str:
    """One clause naming the compose files bake would also read in `folder` ("" for none)."""
    found = [n for n in COMPOSE_FILES if (folder / n).is_file()]
    if not found:
        return ""
    return (
        f" ({', '.join(found)} found: bake reads its services as targets, rocmtui reads only "
        "bake's HCL/JSON files)"
    )


def find_bake_file(cwd: Path, demo: Path = DEMO) -> BakeLookup:
    """The bake file for the built-in default, looked for in `cwd`."""
    compose = compose_note(cwd)
    if (cwd / ROCM_BAKE).is_file():
        return BakeLookup(cwd / ROCM_BAKE, f"{ROCM_BAKE} in the current folder{compose}")
    found = default_files(cwd)
    if len(found) == 1:
        return BakeLookup(found[0], f"{found[0].name} in the current folder{compose}")
    if found:
        return BakeLookup(
            cwd,
            f"{bake_file_names(cwd)} in the current folder, merged in that order as bake merges "
            f"them{compose}",
        )
    if demo.is_file():
        return BakeLookup(demo, f"the project's demo bake/rocm-bake.hcl: none in {cwd}{compose}")
    names = ", ".join((ROCM_BAKE, *BAKE_DEFAULT_FILES))
    return BakeLookup(
        cwd / ROCM_BAKE,
        "none found",
        f"no bake file here (none of {names}){compose}; run rocmtui in the rocm-bake "
        "checkout, or set bake_file in a fleet file",
    )


class FoundBake(Protocol):
    """What `check_found` reads of a fleet's settings (`FleetConfig` is one); the fleet file's
    reader imports this module, so this module names no type of it."""

    @property
    def bake_file(self) -> Path:
        """The bake file (or folder) in effect."""
        ...

    @property
    def bake_problem(self) -> str | None:
        """Why the default found no bake file, when it found none."""
        ...


def check_found(config: FoundBake) -> None:
    """Raise the lookup's one-line BakeError when the default found no bake file (callers
    then say that, not 'no such bake file' for a path nobody chose)."""
    from rocmtui.core.bake.targets import BakeError  # only a caller that checks pays for it

    if config.bake_problem and not config.bake_file.exists():
        raise BakeError(config.bake_problem, config.bake_file.parent)
