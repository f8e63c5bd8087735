"""The core never imports Textual, so the CLI, the tests and the console can all share it."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import importlib, pkgutil, sys
import rocmtui.core as core
names = [m.name for m in pkgutil.walk_packages(core.__path__, "rocmtui.core.")]
for name in names:
    importlib.import_module(name)
import rocmtui.cli.main
leaked = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))
print(len(names), ",".join(leaked))
"""


def test_core_and_cli_never_import_textual() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert int(out[0]) >= 4  # the walk really found the core's modules
    assert len(out) == 1, f"textual imported by the core or the CLI: {out[1]}"
