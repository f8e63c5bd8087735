"""Where the fleet file and the bake file are found, with real files in temporary folders.

The system-wide step reads `$XDG_CONFIG_DIRS`; every test points it at a temporary folder
(never the machine's /etc/xdg). `rocmtui config` is run as a subprocess: what an operator
types.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocmtui.core.bake.find import BAKE_DEFAULT_FILES, BUILDX_DEFAULT_FILES, find_bake_file
from rocmtui.core.config.find import lookup
from rocmtui.core.config.fleetfile import ConfigError, load_config

REPO = Path(__file__).resolve().parents[2]

FLEET = """
bake_file = "{bake}"
[registry]
url = "http://registry.example:8080"
[[nodes]]
name = "{name}"
docker_host = "unix:///run/{name}.sock"
"""


def fleet(path: Path, name: str, bake: str = "x.hcl") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FLEET.format(name=name, bake=bake))
    return path


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    out = {k: tmp_path / k for k in ("cwd", "user", "sys1", "sys2")}
    for folder in out.values():
        folder.mkdir()
    return out


def env_for(f: dict[str, Path]) -> dict[str, str]:
    return {
        "HOME": str(f["cwd"]),
        "XDG_CONFIG_HOME": str(f["user"]),
        "XDG_CONFIG_DIRS": f"{f['sys1']}:relative/ignored:{f['sys2']}",
    }


def test_every_step_of_the_lookup_in_order(folders: dict[str, Path], tmp_path: Path) -> None:
    env = env_for(folders)
    sys2 = fleet(folders["sys2"] / "rocmtui" / "config.toml", "sys2")
    assert lookup(None, env, folders["cwd"]).path == sys2
    sys1 = fleet(folders["sys1"] / "rocmtui" / "config.toml", "sys1")
    found = lookup(None, env, folders["cwd"])
    assert (found.path, found.step) == (sys1, f"$XDG_CONFIG_DIRS: {folders['sys1']} (system-wide)")
    assert [p for p, _ in found.shadowed] == [sys2]
    user = fleet(folders["user"] / "rocmtui" / "config.toml", "user")
    found = lookup(None, env, folders["cwd"])
    assert found.path == user and "the user's" in found.step
    assert [p for p, _ in found.shadowed] == [sys1, sys2]
    local = fleet(folders["cwd"] / "rocmtui.toml", "local")
    assert lookup(None, env, folders["cwd"]).path == local
    from_env = fleet(tmp_path / "env.toml", "env")
    assert lookup(None, {**env, "ROCMTUI_CONFIG": str(from_env)}, folders["cwd"]).step == (
        "$ROCMTUI_CONFIG"
    )
    explicit = fleet(tmp_path / "explicit.toml", "explicit")
    config = load_config(explicit, {**env, "ROCMTUI_CONFIG": str(from_env)}, folders["cwd"])
    assert (config.nodes[0].name, config.found_by) == ("explicit", "--config")
    for path in (local, user, sys1, sys2):
        path.unlink()
    assert lookup(None, env, folders["cwd"]).path is None


def test_default_system_folder_is_etc_xdg(folders: dict[str, Path]) -> None:
    env = {"XDG_CONFIG_HOME": str(folders["user"])}
    found = lookup(None, env, folders["cwd"])
    assert found.path is None or str(found.path).startswith("/etc/xdg/")


def run_cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    full.pop("ROCMTUI_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "rocmtui", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_config_says_which_file_and_why(folders: dict[str, Path]) -> None:
    env = env_for(folders)
    fleet(folders["user"] / "rocmtui" / "config.toml", "mine")
    broken = folders["sys1"] / "rocmtui" / "config.toml"
    broken.parent.mkdir(parents=True)
    broken.write_text('refresh_seconds = 2\n[[nodes]\nname = "x"\n')
    out = run_cli("config", cwd=folders["cwd"], env=env)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"fleet file    {folders['user']}/rocmtui/config.toml" in text
    assert "found by    $XDG_CONFIG_HOME/rocmtui/config.toml (the user's)" in text
    assert f"{broken}:2: not valid TOML" in text  # the broken system-wide file is named
    assert "registry.example" in text  # (a URL holding a password is refused: test_config)
    assert "refresh_seconds = 2.0  (built-in default)" in text
    # the user's file is still the one used, by every command
    data = json.loads(run_cli("config", "--json", cwd=folders["cwd"], env=env).stdout)
    assert data["settings"]["nodes"]["value"][0]["name"] == "mine"
    assert data["settings"]["registry"]["from"] == "fleet file"
    assert data["not_read"][0]["path"] == str(broken)


def test_a_broken_system_file_in_effect_is_named_with_its_line(folders: dict[str, Path]) -> None:
    broken = folders["sys2"] / "rocmtui" / "config.toml"
    broken.parent.mkdir(parents=True)
    broken.write_text('[[nodes]]\nname = "ok"\ngfx = "gpu9"\n')
    out = run_cli("config", cwd=folders["cwd"], env=env_for(folders))
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"rocmtui: {broken}:3: nodes.ok.gfx: must look like gfx950 or gfx1201, not 'gpu9'"
    )
    with pytest.raises(ConfigError):
        load_config(None, env_for(folders), folders["cwd"])


# --- the bake file the built-in default reads ------------------------------------------------


def test_bake_file_found_as_bake_finds_it(tmp_path: Path) -> None:
    demo = tmp_path / "demo.hcl"
    demo.write_text('target "demo" {}\n')
    here = tmp_path / "checkout"
    here.mkdir()
    assert find_bake_file(here, demo).path == demo  # nothing here: the demo
    assert "none in" in find_bake_file(here, demo).found_by
    (here / "docker-bake.hcl").write_text('target "a" {}\n')
    assert find_bake_file(here, demo).path == here / "docker-bake.hcl"
    (here / "rocm-bake.hcl").write_text('target "b" {}\n')
    found = find_bake_file(here, demo)
    assert (found.path, found.found_by) == (
        here / "rocm-bake.hcl",
        "rocm-bake.hcl in the current folder",
    )


def test_no_bake_file_anywhere_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "compose.yaml").write_text("services: {}\n")
    found = find_bake_file(tmp_path, tmp_path / "no-demo.hcl")
    assert found.problem is not None and "\n" not in found.problem
    assert (
        "compose.yaml found: bake reads its services as targets, rocmtui reads only bake's "
        "HCL/JSON files" in found.problem
    )
    assert all(name in found.problem for name in BAKE_DEFAULT_FILES)


def test_buildx_reads_exactly_the_default_list(tmp_path: Path) -> None:
    """The list is buildx's own: each of its files alone is read by `bake --print`."""
    from tests.support.realparts import require

    require("docker-buildx")
    for name in BUILDX_DEFAULT_FILES:
        folder = tmp_path / name.replace(".", "-")
        folder.mkdir()
        if name.endswith(".json"):
            body = '{"target": {"t": {"context": "."}}}'
        elif name.endswith(".hcl"):
            body = 'target "t" {\n  context = "."\n}\n'
        else:
            body = "services:\n  t:\n    build: .\n"
        (folder / name).write_text(body)
        out = subprocess.run(
            ["docker", "buildx", "bake", "--print", "t"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, (name, out.stderr[-400:])
        assert '"t"' in out.stdout
