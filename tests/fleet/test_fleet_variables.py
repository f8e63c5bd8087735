"""The fleet file's [variables]: bake variables the fleet sets (the dev fleet's REGISTRY), used by
every command that resolves the bake file as a launch would — `vars` (source "fleet"), `bake`
(the registry a push goes to), `doctor` (the login it needs) — with the shell's own value on
top. No engine is needed: these commands stop before anything builds."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.jobs import DEMO_BAKE, offline_config, run_cli
from tests.support.realparts import require


def fleet_with_registry(tmp_path: Path, registry: str = "127.0.0.1:5999") -> Path:
    path = offline_config(tmp_path, DEMO_BAKE)
    path.write_text(path.read_text() + f'\n[variables]\nREGISTRY = "{registry}"\nGFX_ARCH = "x"\n')
    return path


def test_vars_says_the_fleet_file_set_it_and_the_shell_wins(tmp_path: Path) -> None:
    require("docker-buildx")
    config = fleet_with_registry(tmp_path)
    rows = {v["name"]: v for v in json.loads(run_cli(config, "vars", "--json").stdout)}
    assert (rows["REGISTRY"]["value"], rows["REGISTRY"]["source"]) == ("127.0.0.1:5999", "fleet")
    assert rows["GFX_ARCH"]["source"] == "default"  # the arch is chosen per build, never here
    mine = run_cli(config, "vars", "--json", env={**os.environ, "REGISTRY": "10.0.0.9:5000"})
    rows = {v["name"]: v for v in json.loads(mine.stdout)}
    assert (rows["REGISTRY"]["value"], rows["REGISTRY"]["source"]) == (
        "10.0.0.9:5000",
        "environment",
    )


@pytest.mark.alone  # reads a doctor row that doctor's one deadline cuts on a loaded machine
def test_a_push_goes_to_the_fleet_files_registry(tmp_path: Path) -> None:
    require("docker-buildx")
    config = fleet_with_registry(tmp_path)
    out = run_cli(config, "bake", "demo-pytorch-push", "--arch", "gfx1201", "--yes")
    assert out.returncode == 1
    assert "pushes to 127.0.0.1:5999 but the docker config has no login" in out.stderr
    doctor = json.loads(run_cli(config, "doctor", "--json").stdout)
    names = {line["check"] for line in doctor}
    assert (
        "registry login 127.0.0.1:5999" in names and "registry login snoc-strix:8080" not in names
    )


def test_config_prints_the_published_tables_with_secrets_redacted(tmp_path: Path) -> None:
    config = fleet_with_registry(tmp_path)
    config.write_text(
        config.read_text()
        + 'HF_TOKEN = "hf_fleet_secret"\n[matrix]\nrefresh_seconds = 60\n'
        + '[upstream]\npypi = "https://pypi.example/pypi"\n'
        + '[upstream.pins]\nPYTORCH_VERSION = "pypi:torch"\n'
    )
    out = run_cli(config, "config", "--json")
    assert out.returncode == 0, out.stderr
    assert "hf_fleet_secret" not in out.stdout
    settings = json.loads(out.stdout)["settings"]
    assert settings["variables"]["value"]["REGISTRY"] == "127.0.0.1:5999"
    assert settings["variables"]["value"]["HF_TOKEN"] == "<redacted:HF_TOKEN>"
    assert settings["matrix"] == {
        "value": {"refresh_seconds": 60.0, "deadline_seconds": 30.0, "concurrency": 8},
        "from": "fleet file",
    }
    assert settings["upstream"]["value"]["pins"] == {"PYTORCH_VERSION": "pypi:torch"}
