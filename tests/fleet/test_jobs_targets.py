"""Launch accepts every name bake accepts -- target blocks, groups, matrix-generated names --
asked of the real `docker buildx bake --print`, and refuses the rest with one line naming the
file and the name. Launches here go to a node whose engine does not exist: everything up to
and including bake runs for real, and bake then fails to reach the engine."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from rocmtui.core.bake.file import load_bake
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs import locks
from rocmtui.core.jobs.checks import resolve_target, target_pushes
from rocmtui.core.jobs.command import node_environment
from rocmtui.core.jobs.launch import launch_job
from rocmtui.core.jobs.plan import images
from rocmtui.core.jobs.printed import pinned_arch, requested_targets
from rocmtui.core.jobs.refusals import LaunchError
from tests.support.jobs import (
    REPO,
    ROCM_BAKE,
    lock_dir,  # noqa: F401 - fixture
    offline_config,
    wait_state,
)
from tests.support.realparts import require

MATRIX_BAKE = REPO / "tests" / "bakefiles" / "matrix.hcl"
ENDED = ["succeeded", "failed", "lost", "cancelled"]


def job_env(tmp_path: Path, bake_file: Path, arch: str, **overrides: str) -> dict[str, str]:
    """The environment a launch gives bake (the planner's own function)."""
    config = load_config(offline_config(tmp_path, bake_file))
    bake = load_bake(bake_file)
    return node_environment(
        config.nodes[0], arch, {"PATH": os.environ["PATH"]}, overrides, bake.variables
    )


def test_a_target_block_is_known_without_running_bake(tmp_path: Path) -> None:
    bake = load_bake(ROCM_BAKE)
    no_docker = {"PATH": str(tmp_path)}  # bake_print would raise BuildxMissing here
    assert resolve_target(bake, "pytorch", no_docker) is None
    assert resolve_target(bake, "pytorch-push", no_docker) is None
    with pytest.raises(LaunchError, match="no target 'pytorch-gfx1201'"):
        resolve_target(bake, "pytorch-gfx1201", no_docker)  # cannot ask: refused


def test_groups_and_matrix_names_are_what_bake_makes_of_them(tmp_path: Path) -> None:
    require("docker-buildx")
    bake = load_bake(ROCM_BAKE)
    env = job_env(tmp_path, ROCM_BAKE, "gfx950")

    default = resolve_target(bake, "default", env)
    assert default is not None and "lmcache" in default["target"]
    assert pinned_arch(default) == "gfx950"  # follows GFX_ARCH
    assert not target_pushes(bake, "default", default)

    matrix = resolve_target(bake, "pytorch-gfx1201", env)
    assert matrix is not None and "pytorch-gfx1201" in matrix["target"]
    assert matrix["target"]["pytorch-gfx1201"]["args"]["GFX_ARCH"] == "gfx1201"
    assert pinned_arch(matrix) == "gfx1201"  # fixed by the matrix, whatever GFX_ARCH says

    per_arch = resolve_target(bake, "gfx1250", env)
    assert per_arch is not None and pinned_arch(per_arch) == "gfx1250"
    every = resolve_target(bake, "all", env)
    assert every is not None and pinned_arch(every) is None  # three arches
    assert {"vllm-gfx950", "vllm-gfx1201", "vllm-gfx1250"} <= set(every["target"])

    pushed = resolve_target(bake, "push", env)  # a group of *-push targets
    assert pushed is not None and target_pushes(bake, "push", pushed)

    # matrix names follow the job's variables: an override makes a new one
    with pytest.raises(LaunchError, match="no target 'pytorch-gfx1100'"):
        resolve_target(bake, "pytorch-gfx1100", env)
    wider = job_env(tmp_path, ROCM_BAKE, "gfx950", SUPPORTED_GFX_ARCHES="gfx950,gfx1100")
    made = resolve_target(bake, "pytorch-gfx1100", wider)
    assert made is not None and pinned_arch(made) == "gfx1100"


def test_matrix_over_a_list_and_a_pushing_matrix(tmp_path: Path) -> None:
    require("docker-buildx")
    bake = load_bake(MATRIX_BAKE)
    env = job_env(tmp_path, MATRIX_BAKE, "gfx1250")
    wheel = resolve_target(bake, "wheel-gfx950-py312", env)
    assert wheel is not None and pinned_arch(wheel) == "gfx950"
    assert not target_pushes(bake, "wheel-gfx950-py312", wheel)
    image = resolve_target(bake, "image-slim", env)
    assert image is not None and target_pushes(bake, "image-slim", image)
    group = resolve_target(bake, "default", env)
    assert group is not None and {"wheel-gfx1250-py311", "image-full"} <= set(group["target"])


def test_unknown_name_is_refused_in_one_line_with_close_matches(tmp_path: Path) -> None:
    require("docker-buildx")
    bake = load_bake(ROCM_BAKE)
    env = job_env(tmp_path, ROCM_BAKE, "gfx950")
    with pytest.raises(LaunchError) as caught:
        resolve_target(bake, "pytorch-gfx1202", env)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"no target 'pytorch-gfx1202' in {ROCM_BAKE}")
    assert "did you mean: pytorch-gfx1201" in message
    with pytest.raises(LaunchError, match=re.escape("no target '--allow=fs.read=/'")):
        resolve_target(bake, "--allow=fs.read=/", env)


@pytest.mark.parametrize(
    ("target", "arch", "recorded"),
    [
        ("default", None, "gfx950"),  # a group following GFX_ARCH
        ("default", "gfx1201", "gfx1201"),
        ("gfx1201", None, "gfx1201"),  # a per-arch group: its matrix names fix the arch
        ("pytorch-gfx1250", "gfx950", "gfx1250"),  # a matrix name: bake builds gfx1250
        ("all", "gfx1250", "gfx1250"),
    ],
)
def test_group_and_matrix_names_launch(
    tmp_path: Path,
    lock_dir: Path,  # noqa: F811
    target: str,
    arch: str | None,
    recorded: str,
) -> None:
    require("docker-buildx")
    path = offline_config(tmp_path, ROCM_BAKE)
    config = load_config(path)
    bake = load_bake(ROCM_BAKE)
    env = {"PATH": os.environ["PATH"], "ROCMTUI_LOCK_DIR": str(lock_dir)}
    record = launch_job(config, bake, target, arch=arch, env=env)
    try:
        assert (record.target, record.arch, record.node) == (target, recorded, "snoc-think")
        command = list(record.command)
        assert command[-2:] == ["--", target] and f"GFX_ARCH={recorded}" in command
        assert command[command.index("-f") + 1] == str(ROCM_BAKE)
        assert "--push" not in command and not record.push
        # one slot per image the name builds on the node: its tags, for the recorded arch
        node = config.nodes[0]
        keys = images(bake, target, recorded, {**env, "GFX_ARCH": recorded})
        assert keys and all(k.startswith("tag:") for k in keys)
        assert any(k.endswith(f"-{recorded}") for k in keys)  # "all" holds every arch's too
        for key in keys:
            assert locks.slot_path(lock_dir, node.name, node.endpoint, key).exists()
    finally:
        done = wait_state(path, record.id, ENDED)
    assert done["state"] == "failed"  # bake ran and could not reach the missing engine
    log = Path(done["job_dir"], "log").read_text(errors="replace")
    assert f"-- {target}" in log


def test_names_that_build_the_same_image_share_its_slot(tmp_path: Path) -> None:
    require("docker-buildx")
    bake = load_bake(ROCM_BAKE)

    def keys(target: str, arch: str) -> set[str]:
        env = {"PATH": os.environ["PATH"], "GFX_ARCH": arch}
        return set(images(bake, target, arch, env))

    pytorch = keys("pytorch", "gfx1201")
    assert len(pytorch) == 1 and next(iter(pytorch)).endswith("-gfx1201")
    assert keys("pytorch-gfx1201", "gfx1201") == pytorch  # the matrix name for that arch
    assert keys("pytorch-push", "gfx1201") == pytorch  # the pushing variant
    assert pytorch < keys("gfx1201", "gfx1201")  # the per-arch group holds it
    assert not pytorch & keys("pytorch", "gfx950")  # another arch, another image
    # base is built as pytorch's and triton's context, not asked for: they may build together
    assert not pytorch & keys("triton", "gfx1201")
    assert len(keys("all", "gfx950")) == 3 * 8  # every component, every arch
    # a name bake cannot resolve keeps the name as typed (the build will say what is wrong)
    assert keys("no-such-target", "gfx950") == {"target:no-such-target@gfx950"}


def test_requested_targets_follow_groups_and_survive_odd_json() -> None:
    body = {"tags": ["r/x:1"]}
    printed = {
        "group": {
            "default": {"targets": ["g"]},
            "g": {"targets": ["a", "h", 7, "g"]},  # a member that is no string, itself again
            "h": {"targets": ["b", "nowhere"]},
        },
        "target": {"a": body, "b": body, "ctx": body, "odd": "not a mapping"},
    }
    assert set(requested_targets(printed)) == {"a", "b"}  # ctx: only another's context
    assert set(requested_targets({"target": {"a": body, "ctx": body}})) == {"a", "ctx"}
    assert requested_targets({"group": "nonsense", "target": []}) == {}
