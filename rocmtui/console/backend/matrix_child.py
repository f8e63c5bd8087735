"""The matrix and the version check, computed in a child process for the console.

`python -m rocmtui.console.backend.matrix_child [FLEET_FILE]` computes what `rocmtui matrix` and
`rocmtui
versions` print (`core.matrix.report`, `core.versions.report`) and writes one JSON object:
`{"matrix": ..., "versions": ...}`, or `{"error": "..."}` when the bake file cannot be read.

Why a child: a fill asks the registry hundreds of times and runs bake once per arch; in a thread
that Python work would take the GIL from the event loop while the operator types (the figure
asks for key p95 < 50 ms during a 2,000-tag fill), and a hung registry or bake is ended by
killing the child at the deadline. It runs at a lower priority (nice 10), so on a busy machine
the operator's keys are served before it. It never imports Textual.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct

from rocmtui.core.bake.file import BakeError
from rocmtui.core.config.fleetfile import ConfigError, load_config
from rocmtui.core.matrix.report import compute_matrix
from rocmtui.core.matrix.views import matrix_json, read_matrix
from rocmtui.core.text.units import fmt_seconds
from rocmtui.core.versions.report import Versions, compute_versions

if TYPE_CHECKING:
    from rocmtui.core.matrix.cells import Matrix


class PublishedFailed(Exception):
    """The child failed, timed out or printed something else; `str()` is one line."""


class Published(Struct, frozen=True):
    """One answer of the child: the matrix and the version check."""

    matrix: Matrix
    versions: Versions | None


class Child:
    """One run of the child, which another thread may stop (`stop()`: the console is quitting)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopped = False

    def stop(self) -> None:
        """Kill the running child, if any; a later `fetch` refuses to start."""
        self._stopped = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()

    def fetch(
        self, config_path: Path | str | None, env: Mapping[str, str], timeout: float
    ) -> Published:
        """Run the child (blocking: a worker thread calls it) within `timeout` seconds."""
        if self._stopped:
            raise PublishedFailed("stopped")
        # -P: the console's working folder may hold another checkout of rocmtui; the child
        # must import this one
        argv = [sys.executable, "-P", "-m", "rocmtui.console.backend.matrix_child"]
        if config_path is not None:
            argv.append(str(config_path))
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env),
            )
        except OSError as exc:
            raise PublishedFailed(f"cannot start: {exc.strerror or exc}") from None
        self._proc = proc
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise PublishedFailed(f"no answer within {fmt_seconds(timeout)} (stopped)") from None
        finally:
            self._proc = None
        if self._stopped:
            raise PublishedFailed("stopped")
        try:
            data = json.loads(out)
        except ValueError:
            last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            raise PublishedFailed(f"exited {proc.returncode}: {last[0][:200]}") from None
        if not isinstance(data, dict):
            raise PublishedFailed("printed something other than an object")
        if "error" in data:
            raise PublishedFailed(str(data["error"]))
        try:
            matrix = read_matrix(data["matrix"])
            versions = Versions.from_json(data["versions"]) if data.get("versions") else None
        except (KeyError, ValueError) as exc:
            raise PublishedFailed(str(exc)) from None
        return Published(matrix, versions)


def main(argv: list[str]) -> int:
    """The child: compute both, print one JSON object."""
    with contextlib.suppress(OSError):  # background work: the console's keys come first
        os.nice(10)

    try:
        config = load_config(argv[0] if argv else None)
        matrix = compute_matrix(config)
    except (BakeError, ConfigError) as exc:
        json.dump({"error": str(exc)}, sys.stdout)
        return 0
    versions = None
    try:
        versions = compute_versions(config, matrix=matrix).to_json()
    except Exception as exc:  # the matrix is worth showing without the versions
        versions = None
        print(f"versions: {type(exc).__name__}: {exc}", file=sys.stderr)
    json.dump({"matrix": matrix_json(matrix), "versions": versions}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
