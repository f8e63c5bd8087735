"""The truth from buildx: real `docker buildx bake --print` (no daemon needed) against the bake
files of the project and the fixtures, the scrubbed launch environment, the deadline."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from rocmtui.core.bake.effective import effective_variables
from rocmtui.core.bake.file import BakeError, BakeFile, load_bake
from rocmtui.core.bake.resolve import (
    KEEP_NAMES,
    RESOLVE_TARGET,
    BuildxMissing,
    bake_environment,
    bake_print,
    resolved_names,
    resolved_variables,
)
from rocmtui.core.jobs.printed import printed_pushes
from tests.support.realparts import require

REPO = Path(__file__).resolve().parents[2]
ROCM_BAKE = REPO / "bake" / "rocm-bake.hcl"
DEMO_BAKE = REPO / "bake" / "demo.hcl"
FIXTURES = Path(__file__).resolve().parents[1] / "bakefiles"
ALL_FILES = [
    ROCM_BAKE,
    DEMO_BAKE,
    FIXTURES / "functions.hcl",
    FIXTURES / "inherits.hcl",
    FIXTURES / "matrix.hcl",
    FIXTURES / "overrides.hcl",
]


@pytest.fixture(autouse=True)
def _buildx() -> None:
    require("docker-buildx")


def _env(bake: BakeFile, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    return bake_environment(os.environ, overrides or {}, bake_variables=bake.variables)


def _pushes(target: Mapping[str, Any]) -> bool:
    return any("type=registry" in o or "push=true" in o for o in target.get("output") or [])


# --- rocm-bake.hcl passes buildx 0.13.1 -----------------------------------------------------------


def test_rocm_bake_prints_all_and_every_group() -> None:
    bake = load_bake(ROCM_BAKE)
    env = _env(bake)
    everything = bake_print(ROCM_BAKE, ["all"], env)
    assert set(everything["group"]) >= {"all", "gfx950", "gfx1201", "gfx1250"}
    assert len(everything["target"]) == 8 * 3  # every component for every arch
    for group in bake.groups:
        printed = bake_print(ROCM_BAKE, [group], env)
        assert printed["target"], group
    vllm = everything["target"]["vllm-gfx1201"]
    assert vllm["args"]["GFX_ARCH"] == "gfx1201"
    assert vllm["contexts"] == {"stage": "target:nixl-gfx1201"}
    assert vllm["tags"] == ["snoc-strix:8080/rocm-bake/vllm:0.33.0-rocm7.2.2-gfx1201"]
    assert vllm["cache-from"] == [
        "type=registry,ref=snoc-strix:8080/rocm-bake/cache:vllm-rocm7.2.2-gfx1201"
    ]


def test_arch_comes_from_the_environment() -> None:
    """How jobs pick the arch: GFX_ARCH in the child's environment changes args and tags."""
    bake = load_bake(ROCM_BAKE)
    printed = bake_print(ROCM_BAKE, ["pytorch"], _env(bake, {"GFX_ARCH": "gfx1250"}))
    pytorch = printed["target"]["pytorch"]
    assert pytorch["args"]["PYTORCH_ROCM_ARCH"] == "gfx1250"
    assert pytorch["tags"] == ["snoc-strix:8080/rocm-bake/pytorch:2.15.0-rocm7.2.2-gfx1250"]


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_static_push_marks_match_buildx(path: Path) -> None:
    """Every target bake makes from a label pushes exactly when the reader says the label does."""
    bake = load_bake(path)
    env = _env(bake)
    for name, target in bake.targets.items():
        data = bake_print(path, [name], env)
        group = (data.get("group") or {}).get(name)
        made = group["targets"] if group else [name]  # a matrix label is a group of targets
        if not target.matrix:
            assert made == [name]
        for made_name in made:
            assert _pushes(data["target"][made_name]) == target.pushes, made_name


def test_resolved_names_include_matrix_targets() -> None:
    bake = load_bake(ROCM_BAKE)
    names = resolved_names(bake, _env(bake))
    assert {"pytorch", "pytorch-push", "pytorch-gfx1201", "lmcache-gfx1250", "all"} <= names


# --- resolved_variables is what bake computes ----------------------------------------------------


def test_resolved_variables_agree_with_target_args() -> None:
    """Cross-check of the overlay technique against args bake computes in the file's own
    targets (not through the overlay)."""
    bake = load_bake(ROCM_BAKE)
    for overrides in ({}, {"GFX_ARCH": "gfx1201", "ROCM_VERSION": "7.9.9"}):
        env = _env(bake, overrides)
        resolved = resolved_variables(ROCM_BAKE, bake.variables, env)
        args = bake_print(ROCM_BAKE, ["vllm"], env)["target"]["vllm"]["args"]
        for name in ("GFX_ARCH", "ROCM_VERSION", "VLLM_VERSION", "MAX_JOBS", "PYTHON_VERSION"):
            assert args[name] == resolved[name]
        assert args["SCCACHE_WEBDAV_KEY_PREFIX"] == resolved["SCCACHE_NAMESPACE"]
        base = bake_print(ROCM_BAKE, ["base"], env)["target"]["base"]["args"]
        assert base["ROCM_BASE_IMAGE"] == resolved["ROCM_BASE_IMAGE"]
    assert resolved["ROCM_BASE_IMAGE"] == "snoc-strix:8080/rocm/dev-ubuntu-24.04:7.9.9-complete"

    fixture = FIXTURES / "overrides.hcl"
    bake = load_bake(fixture)
    env = _env(bake, {"STRING_VAR": "env-value", "NUMBER_VAR": "12"})
    resolved = resolved_variables(fixture, bake.variables, env)
    assert bake_print(fixture, ["t"], env)["target"]["t"]["args"] == {
        "STRING_VAR": resolved["STRING_VAR"],
        "NUMBER_VAR": resolved["NUMBER_VAR"],
        "DERIVED": resolved["DERIVED"],
    }
    assert resolved["DERIVED"] == "env-value/12"


OVERRIDES = {
    "overrides.hcl": {
        "STRING_VAR": "from-env",
        "NUMBER_VAR": "12",
        "BOOL_VAR": "0",
        "UNSET_VAR": "set",
        "NULL_VAR": "no-longer-null",
        "DERIVED_OVERRIDDEN": "replaced",
        "lower_case": "LOWER",
    },
    "functions.hcl": {"REGISTRY": "127.0.0.1:5999", "JOBS": "20", "EMPTY": "filled"},
    "matrix.hcl": {"GFX_ARCH": "gfx950", "PYTHONS": "3.13"},
    "inherits.hcl": {"GFX_ARCH": "gfx950"},
    "rocm-bake.hcl": {"GFX_ARCH": "gfx1201", "REGISTRY": "127.0.0.1:5000"},
    "demo.hcl": {"DEMO_STEPS": "7", "DEMO_NONCE": "abc", "REGISTRY": "127.0.0.1:5000"},
}


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("with_overrides", [False, True], ids=["defaults", "overridden"])
def test_static_values_never_disagree_with_buildx(path: Path, with_overrides: bool) -> None:
    """Where the static reader vouches for a value (default or environment), it is exactly
    what bake resolves; where it cannot, it says unresolved (None) instead of guessing."""
    bake = load_bake(path)
    overrides = OVERRIDES[path.name] if with_overrides else {}
    env = _env(bake, overrides)
    resolved = resolved_variables(path, bake.variables, env)
    static = effective_variables(bake, env)
    assert [v.name for v in static] == list(bake.variables)
    vouched = 0
    for v in static:
        assert v.source == ("environment" if v.name in overrides else "default"), v.name
        if v.value is not None and not v.secret:
            assert v.value == resolved.get(v.name), v.name
            vouched += 1
    assert vouched >= 1  # not vacuous
    for v in effective_variables(bake, env, resolved):
        assert v.resolved
        if not v.secret:
            assert v.value == resolved.get(v.name), v.name


def test_resolved_value_types() -> None:
    path = FIXTURES / "functions.hcl"
    bake = load_bake(path)
    resolved = resolved_variables(path, bake.variables, _env(bake))
    assert resolved["FULL_TAG"] == "registry.local:5000/rocm-bake/pytorch:7.2.2-gfx950"
    assert resolved["JOBS"] == "12" and resolved["HALF_JOBS"] == "6"
    assert resolved["RATIO"] == "1.5" and resolved["NEGATIVE"] == "-3"
    assert resolved["PUSH"] == "false"
    assert resolved["NO_DEFAULT"] == "" and resolved["EMPTY"] == ""
    assert "NOTHING" not in resolved  # null: bake passes no value at all
    assert resolved["ARCH_LIST"] == '["gfx950","gfx1201"]'
    assert resolved["SETTINGS"] == '{"jobs":4,"lto":true}'
    assert resolved["BANNER"] == "rocm-bake\n  nightly\n"
    assert resolved["ESCAPED"] == 'tab\there "quoted" back\\slash é ${not_interpolated}'


# --- the launch environment ----------------------------------------------------------------------


def test_bake_environment_keeps_only_what_docker_needs() -> None:
    base = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/root",
        "DOCKER_CONFIG": "/tmp/dc",
        "DOCKER_HOST": "unix:///tmp/x.sock",
        "LC_ALL": "C.UTF-8",
        "GFX_ARCH": "gfx1250",  # named like a bake variable
        "HF_TOKEN": "hf_secret_value",
        "BUILDX_BUILDER": "elsewhere",
        "RANDOM_THING": "1",
    }
    env = bake_environment(base, {"ROCM_VERSION": "7.0.0"}, bake_variables=["GFX_ARCH", "HOME"])
    assert env == {
        "PATH": "/usr/bin:/bin",
        "DOCKER_CONFIG": "/tmp/dc",
        "DOCKER_HOST": "unix:///tmp/x.sock",
        "LC_ALL": "C.UTF-8",
        "ROCM_VERSION": "7.0.0",
    }  # HOME is a variable of this (odd) bake file: only an explicit override may set it
    assert set(env) - {"ROCM_VERSION"} <= KEEP_NAMES | {"LC_ALL"}
    assert bake_environment({}, {})["PATH"]  # docker must still be found


def test_a_variable_named_in_the_environment_does_not_leak(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hazard end to end: GFX_ARCH and a token in the caller's environment reach neither
    what bake resolves nor its printed configuration."""
    monkeypatch.setenv("GFX_ARCH", "gfx1250")
    monkeypatch.setenv("HF_TOKEN", "hf_leaked_secret")
    path = FIXTURES / "functions.hcl"
    bake = load_bake(path)
    env = bake_environment(os.environ, {}, bake_variables=bake.variables)
    assert "GFX_ARCH" not in env and "HF_TOKEN" not in env
    assert resolved_variables(path, bake.variables, env)["HF_TOKEN"] == "hf_fixture_default_secret"
    rocm = load_bake(ROCM_BAKE)
    printed = bake_print(ROCM_BAKE, ["pytorch"], bake_environment(os.environ, {}))
    assert printed["target"]["pytorch"]["args"]["GFX_ARCH"] == "gfx950"
    assert rocm.variables["GFX_ARCH"].default == "gfx950"


# --- failures: buildx's own message, one line, at FILE:LINE --------------------------------------


def test_buildx_error_points_at_the_variable() -> None:
    path = FIXTURES / "overrides.hcl"
    bake = load_bake(path)
    with pytest.raises(BakeError) as info:
        resolved_variables(path, bake.variables, _env(bake, {"NUMBER_VAR": "twelve"}))
    # buildx names the declaration or a use, whichever it evaluates first (Go map order)
    uses = [i for i, ln in enumerate(path.read_text().splitlines(), 1) if "NUMBER_VAR" in ln]
    assert info.value.path == path and info.value.line in uses
    assert "failed to parse NUMBER_VAR as number" in str(info.value)
    assert "\n" not in str(info.value)


def test_secret_in_a_buildx_error_is_redacted() -> None:
    path = FIXTURES / "overrides.hcl"
    bake = load_bake(path)
    env = _env(bake, {"API_TOKEN_TTL": "tok-0123456789-secret"})
    with pytest.raises(BakeError) as info:
        resolved_variables(path, bake.variables, env)
    assert "API_TOKEN_TTL" in str(info.value)
    assert "tok-0123456789-secret" not in str(info.value)


def test_unknown_target_is_an_error_not_an_option() -> None:
    bake = load_bake(ROCM_BAKE)
    with pytest.raises(BakeError) as info:
        bake_print(ROCM_BAKE, ["--allow=fs.write=/"], _env(bake))
    assert "failed to find target --allow=" in str(info.value)  # buildx says fs_write


def test_no_docker_on_path_is_buildx_missing(tmp_path: Path) -> None:
    with pytest.raises(BuildxMissing):
        bake_print(ROCM_BAKE, ["pytorch"], {"PATH": str(tmp_path)})


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def test_deadline_kills_a_hung_docker_and_its_children(tmp_path: Path) -> None:
    """A hung `docker buildx` cannot be produced on demand, so a stand-in `docker` (a shell
    script, the only thing not real here) hangs with a child of its own, as the CLI hangs with
    its buildx plugin: both must be gone when bake_print gives up."""
    pidfile = tmp_path / "child.pid"
    stand_in = tmp_path / "docker"
    stand_in.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pidfile}\nexec sleep 300\n")
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    t0 = time.monotonic()
    with pytest.raises(BakeError) as info:
        bake_print(ROCM_BAKE, ["pytorch"], {"PATH": f"{tmp_path}:/usr/bin:/bin"}, timeout=1.0)
    assert "no answer within 1s" in str(info.value)
    assert time.monotonic() - t0 < 60  # bounded, not a speed claim
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(child):
        os.kill(child, signal.SIGKILL)
        pytest.fail("the hung docker's child survived the deadline")


def test_resolving_leaves_no_file_when_its_process_dies(tmp_path: Path) -> None:
    """The overlay that resolves the variables reaches bake on stdin. As a temporary file it
    stayed in /tmp whenever the console died while bake ran (an ssh drop, a SIGKILL). The
    stand-in `docker` (a shell script, as above) keeps what came on its stdin, then hangs."""
    bin_dir, temp = tmp_path / "bin", tmp_path / "tmp"
    bin_dir.mkdir()
    temp.mkdir()
    seen, pidfile = tmp_path / "stdin.hcl", tmp_path / "docker.pid"
    stand_in = bin_dir / "docker"
    stand_in.write_text(f"#!/bin/sh\ncat > {seen}\necho $$ > {pidfile}\nexec sleep 300\n")
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    code = (
        "import sys; from rocmtui.core.bake.resolve import resolved_variables; "
        "resolved_variables(sys.argv[1], ['ROCM_VERSION'], {'PATH': sys.argv[2]}, timeout=60)"
    )
    argv = [sys.executable, "-c", code, str(ROCM_BAKE), f"{bin_dir}:/usr/bin:/bin"]
    child = subprocess.Popen(argv, env={**os.environ, "TMPDIR": str(temp)})
    try:
        deadline = time.monotonic() + 30
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pidfile.exists(), "the stand-in docker never ran"
        child.kill()  # the console's process dies while bake runs
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        with contextlib.suppress(OSError, ValueError):
            os.killpg(int(pidfile.read_text()), signal.SIGKILL)  # its own session's leader
    assert list(temp.iterdir()) == []
    assert RESOLVE_TARGET in seen.read_text()


def test_an_error_in_the_resolve_overlay_names_the_bake_file() -> None:
    """The overlay is not a file anyone can open: buildx's complaint about it ("-.hcl:1")
    is reported against the bake file, without the overlay's line number."""
    with pytest.raises(BakeError) as info:
        resolved_variables(DEMO_BAKE, ["NOT_A_VARIABLE"], {"PATH": os.environ["PATH"]})
    assert info.value.path == DEMO_BAKE and info.value.line is None
    assert "NOT_A_VARIABLE" in info.value.message


# --- buildx of every age -----------------------------------------------------------------------

OLD_BUILDX = Path("/usr/local/lib/rocmtui-engines/buildx-0.13.1/docker-buildx")


@pytest.mark.parametrize("name", ["demo.hcl", "rocm-bake.hcl"])
def test_buildx_0_13_and_today_print_one_shape(name: str, tmp_path: Path) -> None:
    """buildx 0.29 prints `output`/`cache-to` as objects where 0.13 printed strings, and
    escapes template sequences again; read through the one normaliser, the two versions'
    prints of the same file are the same, push marks and escaped values included."""
    require("docker-buildx")
    if not OLD_BUILDX.exists():
        if os.environ.get("ROCMTUI_REQUIRE_REAL") == "1":
            pytest.fail(f"{OLD_BUILDX} missing (.ci/install-system keeps it)")
        pytest.skip(f"{OLD_BUILDX} missing")
    path = REPO / "bake" / name
    bake = load_bake(path)
    old_config = tmp_path / "old"
    (old_config / "cli-plugins").mkdir(parents=True)
    (old_config / "cli-plugins" / "docker-buildx").symlink_to(OLD_BUILDX)
    prints = []
    for config in (None, old_config):
        env = _env(bake)
        if config is not None:
            env["DOCKER_CONFIG"] = str(config)
        version = subprocess.run(
            ["docker", "buildx", "version"], env=env, capture_output=True, text=True, timeout=30
        ).stdout
        prints.append((version, bake_print(path, sorted(bake.targets), env)))
    (today, new), (old_version, old) = prints
    assert " 0.13." in old_version and " 0.13." not in today, (today, old_version)
    assert set(new["target"]) == set(old["target"])
    for name, body in new["target"].items():  # 0.29 prints more keys (description ...)
        for key in ("tags", "args"):
            assert body.get(key) == old["target"][name].get(key), (name, key)
        for key in ("output", "cache-to", "cache-from"):  # 0.29 sorts an entry's keys
            specs = [sorted(e.split(",")) for e in body.get(key) or []]
            assert specs == [sorted(e.split(",")) for e in old["target"][name].get(key) or []]
    pushing = [t for t, body in new["target"].items() if printed_pushes(body)]
    assert pushing and pushing == [t for t, body in old["target"].items() if printed_pushes(body)]
    assert sorted(pushing) == sorted(t for t, target in bake.targets.items() if target.pushes)
