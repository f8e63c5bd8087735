"""`rocmtui status [--json]` as a process: exit 0 on the healthy real fleet, 1 when a node is
down, 2 for a bad fleet file (the message names file:line:key) or a bad option."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from devfleet import DevFleet

DEADLINE_LINE = "probe_deadline_seconds = 2.0\n"


def status(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m rocmtui status ARGS` in the test's environment."""
    return subprocess.run(
        [sys.executable, "-m", "rocmtui", "status", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )


@pytest.mark.fleet
def test_healthy_fleet_json_exit_0(fleet: DevFleet) -> None:
    done = status("--json", "--config", str(fleet.config_path))
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["healthy"] is True
    assert [n["state"] for n in data["nodes"]] == ["ok", "ok", "ok"]
    assert data["registry"]["state"] == "ok" and data["webdav"]["state"] == "ok"
    for item in (*data["nodes"], data["registry"], data["webdav"]):
        assert isinstance(item["age"], float | int) and item["age"] >= 0


@pytest.mark.fleet
def test_healthy_fleet_tables(fleet: DevFleet) -> None:
    done = status("--config", str(fleet.config_path))
    assert done.returncode == 0, done.stdout + done.stderr
    for word in ("snoc-strix", "snoc-think", "snoc-gaming", "registry", "webdav", "healthy"):
        assert word in done.stdout
    assert "\x1b" not in done.stdout  # piped: no colour codes


@pytest.mark.fleet
def test_down_node_exit_1(fleet: DevFleet, tmp_path: Path) -> None:
    config = tmp_path / "fleet.toml"
    text = fleet.config_path.read_text()
    text += f'\n[[nodes]]\nname = "gone"\ndocker_host = "unix://{tmp_path}/none.sock"\n'
    config.write_text(DEADLINE_LINE + text)
    done = status("--json", "--config", str(config))
    assert done.returncode == 1, done.stdout + done.stderr
    data = json.loads(done.stdout)
    gone = next(n for n in data["nodes"] if n["name"] == "gone")
    # which socket: the one to start an engine on, or to fix in the fleet file
    assert gone["state"] == "down" and gone["reason"] == f"no such socket: {tmp_path}/none.sock"
    shown = status("--config", str(config))
    assert f"✗ gone: no such socket: {tmp_path}/none.sock" in shown.stdout, shown.stdout
    assert data["healthy"] is False


def test_bad_fleet_file_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('bake_file = "x.hcl"\nrefresh_seconds = "fast"\n\n[[nodes]]\nname = "a"\n')
    done = status("--json", "--config", str(config))
    assert done.returncode == 2
    assert done.stdout == ""
    assert f"{config}:2: refresh_seconds:" in done.stderr


def test_missing_fleet_file_and_bad_option_exit_2(tmp_path: Path) -> None:
    done = status("--config", str(tmp_path / "nope.toml"))
    assert done.returncode == 2 and "no such fleet file" in done.stderr
    done = status("--no-such-option")
    assert done.returncode == 2


@pytest.mark.fleet
def test_status_never_imports_textual(fleet: DevFleet) -> None:
    """The headless command stays light: Textual (~0.3 s to import) is never loaded."""
    code = (
        "import sys\n"
        "from rocmtui.cli.main import main\n"
        f"rc = main(['status', '--json', '--config', {str(fleet.config_path)!r}])\n"
        "sys.stderr.write('TEXTUAL=%s RC=%s' % ('textual' in sys.modules, rc))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert "TEXTUAL=False RC=0" in done.stderr, done.stderr


def test_tables_fit_80_columns_without_cutting_words(capsys: pytest.CaptureFixture[str]) -> None:
    """At 80 columns cells wrap at their spaces: every version, URL, state word and age is
    whole (rich folded the engine version and the registry's URL in the middle, and squeezed
    the services' age to one column: '0s' read '0')."""
    from rocmtui.cli.status import render
    from tests.support.snapshots import recorded

    snap = recorded.fleet(think_down=True)
    render(snap, now=recorded.NOW + 5, width=80)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    words = set(out.split())
    wanted = {n.engine_version for n in snap.nodes if n.engine_version}
    wanted |= {n.builder.buildkit_version for n in snap.nodes if n.builder}
    wanted |= {snap.registry.url, snap.webdav.url, "age", "down"}
    assert wanted <= words, wanted - words
    ages = [
        line.split()[-1] for line in out.splitlines() if line.startswith((" registry", " webdav"))
    ]
    assert ages and all(age.endswith("s") for age in ages), ages
