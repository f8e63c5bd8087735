"""What the console says about things the core finds on disk: the files a bake path stands
for, the monitor's log, the sccache store, where rounds come from.

These read the disk (a bake folder's listing, the state folder), so they sit behind the
console's door with the rest of its calls into the core, not among the vocabularies a widget
imports (tests/unit/test_layering.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rocmtui.core.bake.find import bake_file_names as _bake_file_names
from rocmtui.core.bake.find import bake_files
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.hostmonitor.sources import MONITOR

__all__ = ["MONITOR", "bake_file_count", "bake_file_names", "monitor_log", "store_line"]


def bake_file_names(path: Path | str) -> str:
    """The files a bake path stands for, by name, as one short phrase (`a.hcl + b.hcl`)."""
    return _bake_file_names(path)


def bake_file_count(path: Path | str) -> int:
    """How many files a bake path stands for (a folder: bake's default files there)."""
    return len(bake_files(path))


def monitor_log(config: FleetConfig) -> Path:
    """The monitor process's log file."""
    # on first use: kept off the console's start
    from rocmtui.core.debuglog import monitor_log as log_path

    return log_path(config)


def store_line(sample: Any) -> str:
    """The sccache store beside the matrix's hit rates, in one line."""
    # on first use: kept off the console's start
    from rocmtui.core.webdavstore import describe_store

    return describe_store(sample)
