"""The node's OOM count when one of rocmtui's own builds began, kept in the job's folder.

A memory verdict needs the node's OOM kill count at the build's start: the monitor and the
console have it from the rounds they watched before it (`VitalsWindow.oom_kills_at`), but a
one-shot command (`rocmtui jobs`, `status`) reads the node only now, after the kill. So the job's
supervisor starts this module as a child of its own (`python -m rocmtui.core.verdicts.atstart
JOB_DIR NODE_JSON`) beside the build it has just started, which reads the node once under a
short deadline (the launch never waits for it), and writes the count into the job's folder
(`vitals-at-start.json`): no schema change, and any reader of the job finds it beside the log.
Builds started elsewhere have no such file: there the window's count is all there is. Neither
the read nor the write ever fails a build.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from rocmtui.core.config.fleetfile import NodeConfig
from rocmtui.core.jobs.store import write_json_atomic
from rocmtui.core.text.sanitize import one_line

if TYPE_CHECKING:
    from rocmtui.core.config.fleetfile import NodeConfig
    from rocmtui.core.vitals.nodevitals import NodeVitals

AT_START_FILE = "vitals-at-start.json"
# seconds the reads may take in all: a child of its own, so nothing waits for it (a login on a
# loaded host can take many seconds), and the count is still taken before a build's heavy steps
DEADLINE = 30.0
TRY_DEADLINE = 10.0  # one reading's deadline; the same prober tries again while time is left


async def _read_oom_count(node: NodeConfig, deadline: float) -> int | str:
    # on first use: the probers bring httpx and the docker SDK
    from rocmtui.core.probes.engine_prober import EngineProber
    from rocmtui.core.vitals.gather import VitalsProber

    engines = EngineProber(count_containers=False)
    prober = VitalsProber(engines)
    until = time.monotonic() + deadline
    said: int | str = "no reading within the deadline"
    try:  # again while time is left: a login still in progress serves the next try
        while isinstance(said, str) and (left := until - time.monotonic()) > 1.0:
            try_for = min(TRY_DEADLINE, left)
            vitals = await asyncio.wait_for(prober.vitals(node, None, try_for), try_for + 1.0)
            said = _count_or_why(vitals)
            if isinstance(said, str) and until - time.monotonic() > 1.0:
                await asyncio.sleep(1.0)
    finally:
        await prober.aclose()
        await asyncio.to_thread(engines.close)
    return said


def _count_or_why(vitals: NodeVitals | None) -> int | str:
    """The reading's OOM count, or why it has none (the reading's own words)."""
    if vitals is None:
        return "no reading within the deadline"
    if vitals.oom_kills_total is None:  # why, from the reading's own list
        return "; ".join((*vitals.missing, *([vitals.error] if vitals.error else []))) or "none"
    return vitals.oom_kills_total


def record_oom_at_start(node: NodeConfig, job_dir: Path, deadline: float = DEADLINE) -> None:
    """Read `node`'s OOM count now and keep it in `job_dir`; when the node gives none, keep why
    instead (`why`: a person asking why a build has no memory verdict finds it there).
    Blocking, up to about `deadline` seconds: call it off any event loop (the supervisor's
    child is)."""
    try:
        count: int | str = asyncio.run(_read_oom_count(node, deadline))
    except Exception as exc:  # no count: the verdict falls back to what the window saw
        count = f"{type(exc).__name__}: {exc}"
    kept: dict[str, object] = {"taken_at": time.time()}
    if isinstance(count, int):
        kept["oom_kills_total"] = count
    else:
        kept["why"] = one_line(count)[:500]
    with contextlib.suppress(OSError):
        write_json_atomic(job_dir / AT_START_FILE, kept)


def oom_at_start(job_dir: Path) -> int | None:
    """The count the launch kept for the job in `job_dir`, or None (none kept, or unreadable)."""
    try:
        data = json.loads((job_dir / AT_START_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    count = data.get("oom_kills_total") if isinstance(data, dict) else None
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        return count
    return None


def main(argv: list[str] | None = None) -> int:
    """`python -m rocmtui.core.verdicts.atstart JOB_DIR NODE_JSON`: the supervisor's child."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m rocmtui.core.verdicts.atstart JOB_DIR NODE_JSON", file=sys.stderr)
        return 2
    job_dir = Path(args[0])
    try:
        node = msgspec.json.decode(args[1], type=NodeConfig)
    except msgspec.MsgspecError as exc:  # kept as why, as any other failure to read
        with contextlib.suppress(OSError):
            write_json_atomic(job_dir / AT_START_FILE, {"why": one_line(f"the node: {exc}")})
        return 1
    record_oom_at_start(node, job_dir)
    return 0


__all__ = ["AT_START_FILE", "DEADLINE", "main", "oom_at_start", "record_oom_at_start"]


if __name__ == "__main__":
    sys.exit(main())
