"""Committed text names files relative to the repository, never by this machine's paths.

A bench result, a screenshot or a doc that holds a path under `/work/` or `/home/USER/`, or
the checkout's own absolute path, says where one machine kept its tree: wrong on every other.
Container paths (`/root/.cache/sccache` inside a Dockerfile) are not this machine's and stay.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MACHINE_PATH = re.compile(rb"(?<![\w.])/(?:work|home/[a-z_][a-z0-9_-]*)/[\w.-][\w./-]{0,60}")


def committed_files() -> list[Path]:
    """Every file git tracks in this checkout (or skip outside a git checkout: a wheel's test)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / name for name in out.decode().split("\0") if name]


def machine_paths(data: bytes, root: Path = ROOT) -> list[str]:
    """The machine paths in one file's bytes, as short excerpts."""
    found = [m.group(0).decode(errors="replace") for m in MACHINE_PATH.finditer(data)]
    own = str(root).encode()
    if len(own) > 1 and own in data:
        found.append(str(root))
    return found


def test_the_pattern_finds_work_home_and_the_checkout_and_spares_container_paths() -> None:
    assert machine_paths(b"--json /work/main/bench/results/x.tmp", Path("/x/y"))
    assert machine_paths(b"see /home/alice/rocm-bake/rocm-bake.hcl", Path("/x/y"))
    assert machine_paths(b"at /srv/ci/checkout/bake", Path("/srv/ci/checkout"))
    assert not machine_paths(b"target=/root/.cache/sccache", Path("/x/y"))
    assert not machine_paths(b"bench/results/x.tmp and ./work/x", Path("/x/y"))


def test_no_committed_file_holds_a_machine_path() -> None:
    offenders = []
    here = Path(__file__).resolve()
    for path in committed_files():
        if path == here:
            continue  # it names what it looks for
        try:
            data = path.read_bytes()
        except OSError:  # deleted in the work tree, not yet committed
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        if hits := machine_paths(data):
            offenders.append(f"{path.relative_to(ROOT)}: {hits[0]}")
    assert not offenders, "machine paths in committed text:\n" + "\n".join(offenders)
