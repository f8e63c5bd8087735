"""The monitor process's wire format: a FleetSnapshot survives to_json -> JSON line -> decode."""

from __future__ import annotations

import json
import subprocess
import sys

from rocmtui.app import probeproc
from rocmtui.app.probeproc import decode
from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.devfleet import DevFleet
from tests.snapshots import recorded


def test_a_snapshot_survives_the_pipe() -> None:
    for snap in (recorded.fleet(), recorded.fleet(think_down=True)):
        line = json.dumps(snap.to_json(now=recorded.NOW))
        assert decode(json.loads(line)) == snap


def test_unknown_fields_from_a_newer_core_are_ignored() -> None:
    data = recorded.fleet().to_json(now=recorded.NOW)
    data["nodes"][0]["something_new"] = 1
    data["registry"]["also_new"] = "x"
    assert decode(data).nodes[0].name == "snoc-strix"


def test_the_monitor_child_rounds_on_request_and_ends_with_its_input(fleet: DevFleet) -> None:
    """Real probes of the real fleet through the child: a round on start, one more per line
    written to it, and it ends when its input ends (the console closed or died)."""
    child = probeproc.start(fleet.config_path)
    try:
        rounds = probeproc.rounds(child)
        first = next(rounds)
        assert isinstance(first, FleetSnapshot)
        assert {n.name for n in first.nodes} == {"snoc-strix", "snoc-think", "snoc-gaming"}
        probeproc.poke(child)
        second = next(rounds)
        assert isinstance(second, FleetSnapshot) and second.taken_at > first.taken_at
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait(timeout=15) == 0
    finally:
        probeproc.stop(child, grace=1.0)


def test_the_monitor_child_ends_when_its_input_is_not_a_pipe(fleet: DevFleet) -> None:
    """Started by hand with stdin at /dev/null it does one round and ends (it used to wait
    forever: the event loop cannot watch /dev/null)."""
    done = subprocess.run(
        [sys.executable, "-m", "rocmtui.app.probeproc", str(fleet.config_path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == 1
    assert isinstance(decode(json.loads(done.stdout)), FleetSnapshot)
