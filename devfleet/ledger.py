"""Which fleet parts this process started and has not stopped: the safety nets' memory.

In memory it backs `stop_all_started()` (the atexit net). With `use_ledger(dir)` every change is
also written to `dir/<pid>.json` with this process's start time, so a later run can reap it
(`reaper.reap`): stop what a run that died hard (SIGKILL, OOM) left behind. `python -m devfleet
up` writes no ledger: its fleet is meant to outlive it (fleet.json records it).

The part handles (engines, services, forwarders, sshd) import this module to note themselves;
rebuilding a part from its record needs the handles, so that lives in `reaper`, which imports
them: no cycle.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Protocol

from devfleet import processes


class Part(Protocol):
    """What a fleet part handle offers the ledger."""

    def stop(self) -> None:
        """Stop the part for sure."""

    def to_record(self) -> dict[str, Any]:
        """A JSON-able description `from_record` can rebuild."""


_LIVE: dict[int, tuple[str, Part]] = {}
_LEDGER: Path | None = None
# Parts are started and stopped from several threads at once (DevFleet.stop).
_LOCK = threading.RLock()


def use_ledger(directory: Path) -> Path:
    """Also record live parts in `directory/<pid>.json` from now on; returns that path."""
    global _LEDGER
    directory.mkdir(parents=True, exist_ok=True)
    _LEDGER = directory / f"{os.getpid()}.json"
    _write()
    return _LEDGER


def close_ledger() -> None:
    """Stop writing the ledger; remove its file when nothing recorded in it still runs."""
    global _LEDGER
    with _LOCK:
        if _LEDGER is not None and not _LIVE:
            with contextlib.suppress(OSError):
                _LEDGER.unlink()
        _LEDGER = None


def _write() -> None:
    with _LOCK:
        _write_locked()


def _write_locked() -> None:
    if _LEDGER is None:
        return
    data = {
        "owner_pid": os.getpid(),
        "owner_start_time": processes.start_time(os.getpid()),
        "parts": [{"kind": kind, "record": part.to_record()} for kind, part in _LIVE.values()],
    }
    tmp = _LEDGER.with_suffix(".tmp")
    with contextlib.suppress(OSError):
        tmp.write_text(json.dumps(data))
        tmp.replace(_LEDGER)


def remember(part: Part, kind: str) -> None:
    """Note a started part (`kind`: engine, service or forward)."""
    with _LOCK:
        _LIVE[id(part)] = (kind, part)
        _write_locked()


def forget(part: Part) -> None:
    """Note that a part is stopped."""
    with _LOCK:
        if _LIVE.pop(id(part), None) is not None:
            _write_locked()


def stop_all_started() -> None:
    """Stop every part this process started and has not stopped yet, newest first."""
    with _LOCK:
        entries = list(_LIVE.values())
    for _, part in reversed(entries):
        with contextlib.suppress(Exception):
            part.stop()  # stop() forgets the part itself
