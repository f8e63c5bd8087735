"""rocmtui reads what `docker buildx bake` reads in a folder: bake's JSON form, override files
merged over their base, HCL and JSON together; compose files named, not read. Every folder is
checked against real `docker buildx bake --print` run there with no `-f`.

Each fixture has a target `show` whose args map every variable to itself, so what bake resolves
each variable to is read from bake's own output and compared with `rocmtui vars --json`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rocmtui.core.bake.file import BakeError, load_bake
from rocmtui.core.bake.find import bake_files, find_bake_file
from rocmtui.core.bake.resolve import (
    bake_environment,
    bake_print,
    normalise_printed,
    resolved_variables,
)
from rocmtui.core.config.fleetfile import default_config
from rocmtui.core.jobs.command import build_argv
from tests.support.realparts import require

BASE_JSON = """{
  "//": "bake's JSON form: every string is a template",
  "variable": {
    "TAG": {"default": "j1"},
    "REGISTRY": {"default": "registry.example"},
    "JOBS": {"default": 4},
    "IMAGE": {"default": "${REGISTRY}/app:${TAG}"}
  },
  "group": {"default": {"targets": ["app"]}},
  "target": {
    "base": {"description": "the base", "args": {"C": "c"}},
    "app": {
      "inherits": ["base"],
      "tags": ["${IMAGE}"],
      "args": {"A": "1", "B": "2"},
      "contexts": {"src": "./src"},
      "output": ["type=registry"]
    },
    "show": {"args": {"TAG": "${TAG}", "REGISTRY": "${REGISTRY}", "JOBS": "${JOBS}",
                      "IMAGE": "${IMAGE}"}}
  }
}
"""
OVERRIDE_JSON = """{
  "variable": {"TAG": {"default": "j2"}},
  "group": {"default": {"targets": ["other"]}},
  "target": {
    "app": {"args": {"B": "3"}, "contexts": {"more": "./more"}, "output": ["type=docker"],
            "inherits": ["other"]},
    "other": {"args": {"D": "d"}}
  }
}
"""
BASE_HCL = """variable "TAG" {
  default = "h1"
}
variable "REGISTRY" {
  default = "registry.example"
}
variable "SUFFIX" {
  default = "${TAG}-h"
}
target "app" {
  tags = ["${REGISTRY}/app:${SUFFIX}"]
  args = { E = "e" }
  output = ["type=registry"]
}
target "show" {
  args = { TAG = TAG, REGISTRY = REGISTRY, SUFFIX = SUFFIX }
}
group "g" {
  targets = ["app"]
}
"""
OVERRIDE_HCL = """variable "TAG" {
  default = "h2"
}
target "app" {
  args = { F = "f" }
  output = ["type=docker"]
}
group "g" {
  targets = ["show"]
}
"""
COMPOSE = "services:\n  web:\n    build: .\n"
SHOW_JSON_AND_HCL = """target "show" {
  args = { TAG = TAG, REGISTRY = REGISTRY, SUFFIX = SUFFIX, JOBS = JOBS, IMAGE = IMAGE }
}
"""


def folder_with(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    folder = tmp_path / name
    (folder / "src").mkdir(parents=True)
    (folder / "more").mkdir()
    for file, text in files.items():
        (folder / file).write_text(text)
    return folder


def env() -> dict[str, str]:
    return bake_environment(os.environ, {})


def truth(folder: Path, targets: list[str]) -> dict[str, Any]:
    """Real `docker buildx bake --print` in `folder`, no `-f`: what bake itself reads there."""
    out = subprocess.run(
        ["docker", "buildx", "bake", "--print", "--", *targets],
        cwd=folder,
        env=env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr[-600:]
    # in one shape whichever buildx printed it (0.29 prints outputs as objects)
    return normalise_printed(json.loads(out.stdout))


def rocmtui(folder: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as an operator runs it in `folder`: no fleet file, so the built-in default."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    full = {
        **env(),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CONFIG_DIRS": str(home / "etc"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    return subprocess.run(
        [sys.executable, "-m", "rocmtui", *args],
        cwd=folder,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def check_against_bake(folder: Path, tmp_path: Path, expect_files: list[str]) -> None:
    """The lookup, the static model, `vars` and the launch argv all agree with real bake."""
    found = find_bake_file(folder, tmp_path / "no-demo.hcl")
    assert found.problem is None
    assert [f.name for f in bake_files(found.path)] == expect_files
    bake = load_bake(found.path)
    assert [f.name for f in bake.files] == expect_files
    names = sorted(bake.names())
    real = truth(folder, names)
    # the targets and groups rocmtui lists are the ones bake resolves, pushing as bake pushes
    assert set(real["target"]) == set(bake.targets)
    for group, members in bake.groups.items():  # "default" is what bake builds given no name
        alone = truth(folder, [] if group == "default" else [group])
        assert list(members) == alone["group"][group]["targets"], group
    for name, target in bake.targets.items():
        outputs = real["target"][name].get("output") or []
        assert target.pushes == any("type=registry" in o for o in outputs), name
        assert dict(target.contexts) == (real["target"][name].get("contexts") or {}), name
    # every variable: rocmtui's value is what bake put in the `show` target's args
    shown = real["target"]["show"]["args"]
    assert set(shown) == set(bake.variables)
    assert resolved_variables(found.path, bake.variables, env()) == shown
    out = rocmtui(folder, tmp_path, "vars", "--json")
    assert out.returncode == 0, out.stderr
    assert {v["name"]: v["value"] for v in json.loads(out.stdout)} == shown
    # what rocmtui asks bake for is what bake computes there with no -f
    assert bake_print(found.path, names, env()) == real
    # a launch passes exactly those files, one -f each, in bake's order
    node = default_config(folder).nodes[0]
    argv = build_argv(found.path, "show", node, False, "meta.json")
    given = [argv[i + 1] for i, word in enumerate(argv) if word == "-f"]
    assert given == [str(folder / name) for name in expect_files]
    launched = subprocess.run(
        ["docker", "buildx", "bake", *[w for f in given for w in ("-f", f)], "--print", *names],
        cwd=folder,
        env=env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert launched.returncode == 0, launched.stderr[-600:]
    assert normalise_printed(json.loads(launched.stdout)) == real


@pytest.fixture(autouse=True)
def _buildx() -> None:
    require("docker-buildx")


def test_a_json_only_folder(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, "json", {"docker-bake.json": BASE_JSON})
    check_against_bake(folder, tmp_path, ["docker-bake.json"])
    bake = load_bake(folder / "docker-bake.json")
    assert bake.variables["JOBS"].default == "4"  # a JSON number, as bake prints it
    assert bake.variables["IMAGE"].default is None  # a template: only buildx can say
    assert bake.variables["IMAGE"].default_source == '"${REGISTRY}/app:${TAG}"'
    assert (bake.variables["TAG"].line, bake.targets["app"].line) == (4, 12)
    assert bake.targets["base"].description == "the base"


def test_hcl_with_its_override(tmp_path: Path) -> None:
    files = {"docker-bake.hcl": BASE_HCL, "docker-bake.override.hcl": OVERRIDE_HCL}
    folder = folder_with(tmp_path, "hcl", files)
    check_against_bake(folder, tmp_path, list(files))
    bake = load_bake(folder)
    tag = bake.variables["TAG"]
    assert (tag.default, tag.line, tag.path) == ("h2", 1, folder / "docker-bake.override.hcl")
    assert not bake.targets["app"].pushes  # the override's output replaced the base's
    out = rocmtui(folder, tmp_path, "vars")
    assert "docker-bake.hcl + docker-bake.override.hcl" in out.stdout


def test_json_with_its_override(tmp_path: Path) -> None:
    files = {"docker-bake.json": BASE_JSON, "docker-bake.override.json": OVERRIDE_JSON}
    folder = folder_with(tmp_path, "jsons", files)
    check_against_bake(folder, tmp_path, list(files))
    bake = load_bake(folder)
    assert bake.groups["default"] == ("other",)  # a later group replaces the earlier
    assert bake.targets["app"].inherits == ("base", "other")
    assert dict(bake.targets["app"].contexts) == {"src": "./src", "more": "./more"}


def test_hcl_and_json_together(tmp_path: Path) -> None:
    files = {
        "docker-bake.json": BASE_JSON,
        "docker-bake.override.json": OVERRIDE_JSON,
        "docker-bake.hcl": BASE_HCL.replace(
            'target "show" {\n  args = { TAG = TAG, REGISTRY = REGISTRY, SUFFIX = SUFFIX }\n}\n',
            SHOW_JSON_AND_HCL,
        ),
        "docker-bake.override.hcl": OVERRIDE_HCL,
    }
    folder = folder_with(tmp_path, "both", files)
    check_against_bake(folder, tmp_path, list(files))  # bake's order: JSON before HCL
    assert load_bake(folder).variables["TAG"].default == "h2"


def test_a_malformed_json_file_is_named_with_line_and_column(tmp_path: Path) -> None:
    broken = '{\n  "target": {\n    "app": {"args": {"A": "1",}}\n  }\n}\n'
    folder = folder_with(tmp_path, "bad", {"docker-bake.json": broken, "docker-bake.hcl": BASE_HCL})
    found = find_bake_file(folder, tmp_path / "no-demo.hcl")
    with pytest.raises(BakeError) as info:
        load_bake(found.path)  # never half the files: bake refuses them all, so does rocmtui
    assert (info.value.path, info.value.line) == (folder / "docker-bake.json", 3)
    assert "column 31" in info.value.message
    real = subprocess.run(
        ["docker", "buildx", "bake", "--print"], cwd=folder, env=env(), capture_output=True
    )
    assert real.returncode != 0 and b"docker-bake.json:3," in real.stderr  # bake: the same line
    out = rocmtui(folder, tmp_path, "vars")
    assert out.returncode == 2
    assert out.stderr.strip().startswith(f"rocmtui: {folder / 'docker-bake.json'}:3: not valid")
    assert "Traceback" not in out.stderr
    config = rocmtui(folder, tmp_path, "config")  # the rest of rocmtui still answers
    assert config.returncode == 0, config.stderr
    assert "docker-bake.json + docker-bake.hcl" in config.stdout


def test_compose_files_are_named_not_read(tmp_path: Path) -> None:
    only = folder_with(tmp_path, "compose", {"compose.yaml": COMPOSE})
    assert "web" in truth(only, ["web"])["target"]  # bake makes a target of the service
    found = find_bake_file(only, tmp_path / "no-demo.hcl")
    assert found.problem is not None and "\n" not in found.problem
    assert "compose.yaml found: bake reads its services as targets" in found.problem
    out = rocmtui(only, tmp_path, "config", "--json")  # from the source tree: the demo
    assert out.returncode == 0, out.stderr
    said = json.loads(out.stdout)["bake_found_by"]
    assert said.startswith("the project's demo bake/rocm-bake.hcl: none in")
    assert said.endswith(
        "(compose.yaml found: bake reads its services as targets, rocmtui "
        "reads only bake's HCL/JSON files)"
    )

    beside = folder_with(tmp_path, "beside", {"compose.yaml": COMPOSE, "docker-bake.hcl": BASE_HCL})
    found = find_bake_file(beside, tmp_path / "no-demo.hcl")
    assert found.path == beside / "docker-bake.hcl"
    assert found.found_by == (
        "docker-bake.hcl in the current folder (compose.yaml found: bake reads its services "
        "as targets, rocmtui reads only bake's HCL/JSON files)"
    )
    node = default_config(beside).nodes[0]
    argv = build_argv(found.path, "app", node, False, "meta.json")
    assert [w for w in argv if w.endswith((".yaml", ".hcl", ".json"))] == [
        str(beside / "docker-bake.hcl"),
        "meta.json",
    ]


def test_blocks_of_one_name_merge_as_bake_merges_them(tmp_path: Path) -> None:
    """In one file as across files: a later group replaces the earlier's members, target maps
    merge key by key, and a redeclared variable with no default is "" again."""
    one = """variable "V" {
  default = "a"
}
target "t" {
  args = { A = "1", B = "2", V = V }
  inherits = ["p"]
}
target "t" {
  args = { B = "3" }
  inherits = ["q"]
  output = ["type=registry"]
}
target "p" {
  args = { P = "p" }
}
target "q" {
  args = { Q = "q" }
}
group "g" {
  targets = ["p"]
}
group "g" {
  targets = ["q"]
}
"""
    files = {"docker-bake.hcl": one, "docker-bake.override.hcl": 'variable "V" {}\n'}
    folder = folder_with(tmp_path, "one", files)
    bake = load_bake(folder)
    real = truth(folder, ["t", "g"])
    assert bake.groups["g"] == tuple(real["group"]["g"]["targets"]) == ("q",)
    assert bake.targets["t"].inherits == ("p", "q")
    assert real["target"]["t"]["args"] == {"A": "1", "B": "3", "P": "p", "Q": "q", "V": ""}
    assert bake.targets["t"].pushes
    assert bake.variables["V"].default == "" == real["target"]["t"]["args"]["V"]
    assert resolved_variables(folder, bake.variables, env()) == {"V": ""}
