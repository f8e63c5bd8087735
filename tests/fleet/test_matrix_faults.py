"""Bad input from the registry and the bake file: each cell says what went wrong and the rest of
the matrix still fills. A real registry holds the good, stale, unlabelled and indexed images; a
proxy stand-in in front of it answers 401, 500 or drips for three repositories."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from devfleet import ServiceHandle
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.matrix.report import compute_matrix
from rocmtui.core.matrix.views import matrix_json, read_matrix
from rocmtui.core.registry.media import OCI_MANIFEST
from tests.support.realparts import require
from tests.support.registry import FaultyProxy, push_image, push_index

BAKE = Path(__file__).parents[1] / "bakefiles" / "matrix-faults.hcl"
PIN = {"rocm-bake.pin.PYTORCH_VERSION": "2.15.0"}


@pytest.mark.fleet
def test_every_fault_is_a_cell_state_and_the_rest_fills(
    tmp_path: Path, registry_factory: Callable[..., ServiceHandle]
) -> None:
    require("docker-buildx")
    registry = registry_factory()
    base = registry.url
    push_image(base, "t/good", "2.15.0-gfx950", PIN)
    push_image(base, "t/old", "2.15.0-gfx950", {"rocm-bake.pin.PYTORCH_VERSION": "2.14.0"})
    push_image(base, "t/nolabels", "2.15.0-gfx950", None)
    amd = push_image(base, "t/listed", None, PIN, media_type=OCI_MANIFEST)
    push_index(base, "t/listed", "2.15.0-gfx950", [(amd, "linux/amd64")])
    faults = {"t/locked": "401", "t/broken": "500", "t/slow": "drip"}
    with FaultyProxy(base, faults) as proxy:
        fleet = tmp_path / "fleet.toml"
        fleet.write_text(
            f'bake_file = "{BAKE}"\nstate_dir = "{tmp_path / "state"}"\n'
            f'[registry]\nurl = "{proxy.url}"\n[variables]\nREGISTRY = "{proxy.address}"\n'
            "[matrix]\ndeadline_seconds = 3\n"
            f'[[nodes]]\nname = "n"\ndocker_host = "unix://{tmp_path}/no.sock"\n'
        )
        config = load_config(fleet)
        started = time.monotonic()
        matrix = compute_matrix(
            config, {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)}
        )
        took = time.monotonic() - started
    assert took < 10, took  # the drip ended at the deadline; nothing waited on it longer
    assert matrix.arches == ("gfx950",)
    cells = {row.name: row.cells[0] for row in matrix.rows}
    assert "untagged" not in cells
    said = {name: (str(c.verdict), c.reason or "") for name, c in cells.items()}
    assert said["good"] == ("published", "")
    assert said["old"][0] == "stale" and "PYTORCH_VERSION 2.14.0 → 2.15.0" in said["old"][1]
    assert said["nolabels"] == ("published", "")
    assert any("no pin labels" in n for n in cells["nolabels"].notes)
    assert said["listed"] == ("published", "")  # the labels were read through the index
    assert any("read through the OCI index" in n for n in cells["listed"].notes)
    assert said["norepo"] == ("never built", "repository t/norepo is not in the registry")
    assert said["locked"][0] == "unknown" and "auth: bearer token required" in said["locked"][1]
    assert said["broken"][0] == "unknown" and "HTTP 500" in said["broken"][1]
    assert said["slow"][0] == "unknown" and said["slow"][1].startswith("timeout")
    assert said["badtag"][0] == "unknown" and "'2.15.0+local' is not valid" in said["badtag"][1]
    assert said["elsewhere"][0] == "unknown" and "names snoc-strix:8080" in said["elsewhere"][1]
    # the same, as the CLI prints it for scripts
    data = json.loads(json.dumps(matrix_json(matrix)))
    assert data["counts"] == {"published": 3, "stale": 1, "never built": 1, "unknown": 5}

    assert matrix_json(read_matrix(data)) == data  # what the console reads from its child
