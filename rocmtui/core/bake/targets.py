"""What a bake file says, as values: its variables, targets and groups, and the one error type.

`bake.file.load_bake` builds these (re-exported there); everything else only reads them.
"""

from __future__ import annotations

import re
from pathlib import Path

from msgspec import Struct

from rocmtui.core.records import PartlyCompared

#: Variables that name the architectures (conventions of rocm-bake.hcl).
ARCH_VARIABLE = "GFX_ARCH"
SUPPORTED_ARCHES_VARIABLE = "SUPPORTED_GFX_ARCHES"


class BakeError(Exception):
    """A bake file that cannot be used. `str()` is one line: `FILE:LINE: message`."""

    def __init__(self, message: str, path: Path | str, line: int | None = None) -> None:
        """`line` is 1-based, or None when the problem has no single line."""
        self.message = " ".join(str(message).split())  # one line, whatever came in
        self.path = Path(path)
        self.line = line
        where = f"{self.path}:{line}" if line else str(self.path)
        super().__init__(f"{where}: {self.message}")


class BakeVariable(PartlyCompared, frozen=True):
    """One `variable` block.

    `default` is the literal value when the default is a plain string, number or bool (escapes
    decoded; an absent default is "", as bake treats it), else None (a template such as
    `"${REGISTRY}/x"`, a list, null, a heredoc): only buildx can say what that becomes.
    `default_source` is the default as written ("" when absent).
    """

    name: str
    default: str | None
    default_source: str
    line: int
    # the file whose declaration is in effect (not part of what the variable says)
    path: Path | None = None
    NOT_COMPARED = ("path",)


class BakeTarget(PartlyCompared, frozen=True):
    """One `target` block (several blocks with one name are merged, as bake does).

    `pushes`: its own or an inherited `output` is `type=registry` or has `push=true`.
    `contexts` values are the text inside the quotes (templates left as written).
    `matrix`: the block is a matrix; bake names the targets it makes from its `name` template.
    """

    name: str
    line: int
    inherits: tuple[str, ...]
    contexts: tuple[tuple[str, str], ...]
    pushes: bool
    description: str | None
    matrix: bool = False
    path: Path | None = None  # the file of its first block (not part of what it says)
    NOT_COMPARED = ("path",)


class BakeFile(Struct, frozen=True):
    """A whole bake file (or the files bake merges in a folder), as written.

    `path` is the bake path it was read from (a file, or a folder); `files` the files read, in
    bake's order."""

    path: Path
    variables: dict[str, BakeVariable]
    targets: dict[str, BakeTarget]
    groups: dict[str, tuple[str, ...]]
    files: tuple[Path, ...] = ()

    @property
    def pushing_targets(self) -> frozenset[str]:
        """Targets that push to a registry (they need `--yes` and a registry login)."""
        return frozenset(name for name, t in self.targets.items() if t.pushes)

    @property
    def arches(self) -> tuple[str, ...]:
        """GFX_ARCH's default first, then SUPPORTED_GFX_ARCHES (comma list or list literal)."""
        found: list[str] = []
        arch = self.variables.get(ARCH_VARIABLE)
        if arch is not None and arch.default:
            found.append(arch.default.strip())
        listed = self.variables.get(SUPPORTED_ARCHES_VARIABLE)
        if listed is not None:
            if listed.default is not None:
                found.extend(listed.default.split(","))
            elif listed.default_source.lstrip().startswith("["):
                found.extend(re.findall(r'"([^"\\$]*)"', listed.default_source))
        return tuple(dict.fromkeys(a.strip() for a in found if a.strip()))

    def names(self) -> frozenset[str]:
        """Every target and group name written in the file (matrix targets by block label)."""
        return frozenset(self.targets) | frozenset(self.groups)
