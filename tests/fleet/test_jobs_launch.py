"""Launch: what is refused before anything starts, and secrets that must not leak (a real build
on the fleet shows that a bake-named variable in the environment does not change the build)."""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
from pathlib import Path

import pytest

from rocmtui.core.bake.file import load_bake
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs import locks
from rocmtui.core.jobs.command import build_command, node_environment
from rocmtui.core.jobs.control import list_jobs
from rocmtui.core.jobs.launch import launch_job
from rocmtui.core.jobs.plan import images
from rocmtui.core.jobs.refusals import AlreadyRunning, LaunchError, LaunchRefused
from rocmtui.core.jobs.registries import docker_config_hosts
from tests.support.jobs import (
    DEMO_BAKE,
    ROCM_BAKE,
    lock_dir,  # noqa: F401 - fixture
    offline_config,
    run_cli,
    started_job,
    wait_state,
)
from tests.support.realparts import require

EVIL_VERSION = "9.9.9-evil"
TOKEN = "tok-5ecret-v4lue-do-not-leak"


@pytest.mark.parametrize(
    ("bake_file", "args", "code", "says"),
    [
        (DEMO_BAKE, ["no-such-target"], 2, "no target"),
        (DEMO_BAKE, ["--", "--allow=fs.read=/"], 2, "no target"),
        (DEMO_BAKE, ["demo-base", "--arch", "gfx9999"], 2, "unknown arch"),
        (DEMO_BAKE, ["demo-base", "--node", "elsewhere"], 2, "no node"),
        (DEMO_BAKE, ["demo-base", "--set", "NOT_A_VARIABLE=1"], 2, "not a variable"),
        (DEMO_BAKE, ["demo-base", "--set", "demo-base.tags=x"], 2, "VAR=VALUE"),
        (DEMO_BAKE, ["demo-base", "--set", "GFX_ARCH=gfx1201"], 2, "--arch"),
        (DEMO_BAKE, ["demo-pytorch-push"], 1, "--yes"),
        (DEMO_BAKE, ["demo-base", "--push"], 1, "--yes"),
        # names bake resolves itself (groups, matrix names): rocm-bake.hcl has them
        (ROCM_BAKE, ["pytorch-gfx1202"], 2, "no target 'pytorch-gfx1202' in "),
        (ROCM_BAKE, ["gfx1202"], 2, "did you mean: gfx1201"),
        (ROCM_BAKE, ["push"], 1, "push pushes to the registry: confirm with --yes"),
        (
            ROCM_BAKE,
            ["push", "--yes"],
            1,
            "pushes to snoc-strix:8080 but the docker config has no login",
        ),
        (ROCM_BAKE, ["pytorch-arch", "--push"], 1, "--yes"),
    ],
)
def test_refused_before_anything_starts(
    tmp_path: Path,
    lock_dir: Path,  # noqa: F811
    bake_file: Path,
    args: list[str],
    code: int,
    says: str,
) -> None:
    require("docker-buildx")  # names that are not target blocks are asked of bake
    config = offline_config(tmp_path, bake_file)
    out = run_cli(config, "bake", *args)
    assert out.returncode == code, out.stderr
    assert says in out.stderr and "\n" not in out.stderr.strip()
    assert out.stdout == ""
    assert list_jobs(load_config(config)) == []


def test_login_presence_is_read_from_keys_only(tmp_path: Path) -> None:
    folder = tmp_path / "docker"
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps(
            {
                "auths": {"https://127.0.0.1:5000/v1/": {"auth": "c2VjcmV0"}, "zot:8080": {}},
                "credHelpers": {"images.example": "pass"},
                "credsStore": "secretservice",
            }
        )
    )
    assert docker_config_hosts({"DOCKER_CONFIG": str(folder)}) == {
        "127.0.0.1:5000",
        "zot:8080",
        "images.example",
    }
    assert docker_config_hosts({"DOCKER_CONFIG": str(tmp_path / "none")}) == set()


def test_command_is_an_argument_list_with_dashdash_before_the_target(tmp_path: Path) -> None:
    config = load_config(offline_config(tmp_path))
    command = build_command(config, "demo-base", "gfx1201", "snoc-think", push=True)
    assert command[:2] == ["GFX_ARCH=gfx1201", "DOCKER_HOST=unix:///nonexistent/d.sock"]
    assert command[-2:] == ["--", "demo-base"] and "--push" in command
    assert "--progress=plain" in command and "--metadata-file" in command


def test_bake_environment_is_scrubbed_and_overrides_are_explicit(tmp_path: Path) -> None:
    config = load_config(offline_config(tmp_path))
    bake = load_bake(DEMO_BAKE)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/root",
        "PYTORCH_VERSION": EVIL_VERSION,
        "HF_TOKEN": TOKEN,
        "DOCKER_HOST": "tcp://somewhere:2375",
    }
    node = config.node("snoc-think")
    assert node is not None
    child = node_environment(node, "gfx1201", env, {"DEMO_STEPS": "3"}, bake.variables)
    assert child["GFX_ARCH"] == "gfx1201" and child["DEMO_STEPS"] == "3"
    assert child["DOCKER_HOST"] == "unix:///nonexistent/d.sock"  # the node's, not the caller's
    assert "PYTORCH_VERSION" not in child and "HF_TOKEN" not in child
    with pytest.raises(LaunchRefused):
        launch_job(config, bake, "demo-pytorch-push", "gfx1201", "snoc-think", env=env)
    with pytest.raises(LaunchError):
        launch_job(config, bake, "demo-base", "gfx1201", "snoc-think", overrides={"HOME": "/"})


def test_a_pushing_target_asks_bake_once(
    tmp_path: Path,
    lock_dir: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require("docker-buildx")
    from rocmtui.core.bake import resolve as bakeprint

    config = load_config(offline_config(tmp_path))
    bake = load_bake(DEMO_BAKE)
    logins = tmp_path / "docker"
    logins.mkdir()
    (logins / "config.json").write_text(json.dumps({"auths": {"snoc-strix:8080": {}}}))
    env = {
        "PATH": os.environ["PATH"],
        "DOCKER_CONFIG": str(logins),
        "ROCMTUI_LOCK_DIR": str(lock_dir),
    }
    node = config.node("snoc-think")
    assert node is not None
    child_env = node_environment(node, "gfx1201", env, {}, bake.variables)
    held = [  # another build holds the image: the launch gets as far as the slots
        locks.take_slot(locks.slot_path(lock_dir, node.name, node.endpoint, key))
        for key in images(bake, "demo-pytorch-push", "gfx1201", child_env)
    ]
    prints: list[list[str]] = []
    real = bakeprint.bake_print

    def counted(*args: object, **kwargs: object) -> dict[str, object]:
        prints.append(list(args[1]))  # type: ignore[call-overload]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bakeprint, "bake_print", counted)
    try:
        with pytest.raises(AlreadyRunning):  # past the login check, refused at the slots
            launch_job(
                config, bake, "demo-pytorch-push", "gfx1201", "snoc-think", yes=True, env=env
            )
    finally:
        for fd in held:
            assert fd is not None
            os.close(fd)
    assert prints == [["demo-pytorch-push"]]  # the login check and the slots share one print


@pytest.mark.fleet
def test_secrets_and_bake_named_variables_do_not_leak_or_change_the_build(
    tmp_path: Path, config: Path
) -> None:
    env = {**os.environ, "PYTORCH_VERSION": EVIL_VERSION, "HF_TOKEN": TOKEN}
    out = run_cli(
        config,
        "bake",
        "demo-pytorch",
        "--arch",
        "gfx1201",
        "--node",
        "snoc-think",
        "--set",
        "DEMO_STEPS=6",
        "--set",
        f"DEMO_NONCE={os.getpid()}-{os.urandom(4).hex()}",
        "--set",
        f"DEMO_FAIL={TOKEN}",  # a secret value in an override is redacted by value
        env=env,
    )
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    job = started_job(config, job_id)
    # bake's own environment never held them
    environ = Path(f"/proc/{job['bake_pid']}/environ").read_bytes().split(b"\0")
    names = {item.split(b"=", 1)[0] for item in environ}
    assert b"PYTORCH_VERSION" not in names and b"HF_TOKEN" not in names
    done = wait_state(config, job_id, ["succeeded", "failed", "lost"])
    assert done["state"] == "succeeded", done
    job_dir = Path(done["job_dir"])
    log = (job_dir / "log").read_text(errors="replace")
    assert "Building pytorch 2.15.0" in log and EVIL_VERSION not in log  # the pinned version
    header = "\n".join(line for line in log.splitlines() if line.startswith("# "))
    stored = [
        header,
        (job_dir / "record.json").read_text(),
        "\n".join(sqlite3.connect(tmp_path / "state" / "jobs.sqlite").iterdump()),
        run_cli(config, "jobs").stdout,
        run_cli(config, "jobs", "--json").stdout,
    ]
    for text in stored:
        assert TOKEN not in text and EVIL_VERSION not in text
    assert "DEMO_FAIL" in done["overrides"] and "redacted" in done["overrides"]["DEMO_FAIL"]


def test_logout_risk_read_from_logind_conf(tmp_path: Path) -> None:
    from rocmtui.core.jobs.linger import logout_risk

    etc, var = tmp_path / "etc", tmp_path / "var"
    (etc / "systemd" / "logind.conf.d").mkdir(parents=True)
    (etc / "systemd" / "logind.conf").write_text("[Login]\n#KillUserProcesses=yes\n")
    assert logout_risk("ops", etc, var) is None
    (etc / "systemd" / "logind.conf.d" / "10-kill.conf").write_text(
        "[Login]\nKillUserProcesses=yes\n"
    )
    risk = logout_risk("ops", etc, var)
    assert risk and "enable-linger ops" in risk
    (var / "lib" / "systemd" / "linger").mkdir(parents=True)
    (var / "lib" / "systemd" / "linger" / "ops").touch()
    risk = logout_risk("ops", etc, var)
    assert risk and "enable-linger" not in risk and "systemd-run --user" in risk


def test_bake_file_cache_follows_the_file_and_never_caches_an_error(tmp_path: Path) -> None:
    from rocmtui.cli.bake import _cache_dir, load_bake_cached
    from rocmtui.core.bake.file import BakeError

    path = tmp_path / "x.hcl"
    path.write_text('variable "A" {\n  default = "1"\n}\ntarget "t" {}\n')
    first = load_bake_cached(path)
    assert set(first.targets) == {"t"}
    assert load_bake_cached(path) == first  # a hit: the same value back
    entries = list(_cache_dir().glob("bake-*.pickle"))
    assert len(entries) == 1 and entries[0].stat().st_mode & 0o077 == 0
    path.write_text('target "t" {}\ntarget "u" {}\n')
    assert set(load_bake_cached(path).targets) == {"t", "u"}  # new bytes, new parse
    path.write_text('target "t" {\n')
    for _ in range(2):
        with pytest.raises(BakeError):
            load_bake_cached(path)
    assert len(list(_cache_dir().glob("bake-*.pickle"))) == 2
    entries[0].chmod(0o666)  # writable by others: not trusted, parsed again
    path.write_text('variable "A" {\n  default = "1"\n}\ntarget "t" {}\n')
    assert load_bake_cached(path) == first


def test_a_kept_bake_file_naming_a_moved_module_is_read_again(tmp_path: Path) -> None:
    """A result kept by an older rocmtui whose classes have since moved (core/bake/model.py
    became targets.py: `rocmtui bake` died on ModuleNotFoundError) is a miss, not a crash; and
    a change to any module of the reader gives a new key."""
    from rocmtui.cli.bake import _cache_dir, load_bake_cached

    path = tmp_path / "x.hcl"
    path.write_text('target "t" {}\n')
    assert set(load_bake_cached(path).targets) == {"t"}
    (entry,) = _cache_dir().glob("bake-*.pickle")
    # a pickle of a class from a module that no longer exists, under the same key
    entry.write_bytes(b"crocmtui.core.bake.model\nGone\n(tR.")  # GLOBAL, call it, stop
    entry.chmod(0o600)
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(entry.read_bytes())
    assert set(load_bake_cached(path).targets) == {"t"}  # read again
