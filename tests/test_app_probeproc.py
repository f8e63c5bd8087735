"""The monitor process's wire format: a FleetSnapshot survives to_json -> JSON line -> decode."""

from __future__ import annotations

import json

from rocmtui.app.probeproc import decode
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
