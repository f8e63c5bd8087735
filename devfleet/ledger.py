"""Which fleet parts this process started and has not stopped: the safety nets' memory.

In memory it backs `stop_all_started()` (the atexit net). With `use_ledger(dir)` every change is
also written to `dir/<pid>.json` with this process's start time, so a later run can
`reap(dir)`: stop what a run that died hard (SIGKILL, OOM) left behind. A ledger is reaped only
when its owner is gone, so parallel runs never touch each other's parts. `python -m
devfleet up` writes no ledger: its fleet is meant to outlive it (fleet.json records it).
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


def _rebuild(kind: str, record: dict[str, Any]) -> Part:
    # Imported here: the handle modules import this one.
    from devfleet.dockerd import EngineHandle
    from devfleet.forward import ForwardHandle
    from devfleet.services import ServiceHandle
    from devfleet.sshhost import SshHostHandle

    cls: Any = {
        "engine": EngineHandle,
        "service": ServiceHandle,
        "forward": ForwardHandle,
        "sshd": SshHostHandle,
    }[kind]
    return cls.from_record(record)  # type: ignore[no-any-return]


def reap(directory: Path) -> int:
    """Stop the parts recorded by ledgers in `directory` whose owner process is gone.

    Returns how many parts were stopped. Ledgers of live owners are left alone.
    """
    stopped = 0
    for path in sorted(Path(directory).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if processes.alive(int(data.get("owner_pid", 0)), data.get("owner_start_time")):
            continue
        for entry in reversed(data.get("parts", [])):
            with contextlib.suppress(Exception):
                part = _rebuild(entry["kind"], entry["record"])
                part.stop()
                stopped += 1
        with contextlib.suppress(OSError):
            path.unlink()
    return stopped
