"""bake's metadata on a full state disk (#36): the build's true outcome, not bake's complaint.

bake writes its `--metadata-file` after the image is built (and pushed); on a full state disk
that write used to fail (exit 102 on buildx 0.29, 1 on 0.13) and the job read `failed`. Here a
real build's log fills a small tmpfs holding the state folder, and the room the supervisor gives
back when the log stops is taken too, so nothing of the job's can get a new block: the outcome
is `succeeded` with the digest (and, for a push, the registry has it), read with the disk still
full, on today's buildx and on 0.13; and a build that really fails says so, with its step.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import urllib.request
import uuid
from pathlib import Path

import pytest

from devfleet import DevFleet
from tests.support.fulldisk import STILL_FULL, fleet_file_on, gone, job
from tests.support.jobs import bake, login_entry, registry_host, wait_for
from tests.support.privileges import old_buildx_env
from tests.support.realparts import require
from tests.support.smalldisk import fill, free_bytes

pytestmark = [pytest.mark.fleet, pytest.mark.slow]


def buildx_env(which: str, tmp_path: Path) -> dict[str, str]:
    return dict(os.environ) if which == "today" else old_buildx_env(tmp_path)


def full_disk_build(
    config: Path, disk: Path, env: dict[str, str], *args: str
) -> tuple[str, dict[str, object], Path]:
    """Start a demo build with a lot of output on snoc-strix, fill the disk, and once the log
    has stopped (the supervisor gave its reserve back) take that room too."""
    job_id = bake(
        config, *args, "--arch", "gfx1201", "--node", "snoc-strix",
        "--set", "DEMO_STEPS=900", "--set", "DEMO_SLEEP=0.01",
        "--set", f"DEMO_NONCE={uuid.uuid4().hex}", env=env,
    )  # fmt: skip
    first = wait_for(
        "the supervisor to record its pids",
        lambda: (j := job(config, job_id))["bake_pid"] and j,
        60,
    )
    reserve = Path(str(first["job_dir"])) / "reserve"
    fill(disk)
    wait_for("the log to stop holding lines", lambda: not reserve.exists(), 120)
    filler = fill(disk)  # the room the log gave back: taken as well
    return job_id, first, filler


def outcome_on_the_full_disk(
    config: Path, disk: Path, job_id: str, first: dict[str, object]
) -> dict[str, object]:
    wait_for("bake to end", lambda: gone(first["bake_pid"], first["bake_start"]), 300, 0.05)
    shown = wait_for(
        "the outcome, the disk still full",
        lambda: (j := job(config, job_id))["state"] in ("succeeded", "failed") and j,
        30,
        poll=0.05,
    )
    assert free_bytes(disk) < STILL_FULL
    return shown


def end_supervisor(first: dict[str, object]) -> None:
    """bake has ended: a SIGTERM ends the supervisor waiting for room in the store."""
    sup = (first["supervisor_pid"], first["supervisor_start"])
    if not gone(*sup):
        assert isinstance(sup[0], int)
        with contextlib.suppress(ProcessLookupError):
            os.kill(sup[0], signal.SIGTERM)
        wait_for("the supervisor to end", lambda: gone(*sup), 30)


@pytest.mark.parametrize("which", ["today", "0.13"])
def test_a_build_that_filled_the_disk_succeeds_with_its_digest(
    tmp_path: Path,
    fleet: DevFleet,
    small_disk: Path,
    which: str,
) -> None:
    require("docker-buildx")
    env = buildx_env(which, tmp_path)
    config = fleet_file_on(tmp_path, fleet, small_disk / "state")
    job_id, first, filler = full_disk_build(config, small_disk, env, "demo-pytorch")
    try:
        shown = outcome_on_the_full_disk(config, small_disk, job_id, first)
        assert shown["state"] == "succeeded", shown
        assert shown["exit_code"] == 0
        digest = str(shown["digest"])
        assert digest.startswith("sha256:"), shown
        assert "log incomplete: disk full at" in str(shown["message"])
        # bake's metadata kept in the job's folder, in the room taken for it at the start
        kept = json.loads(Path(str(shown["job_dir"]), "metadata.json").read_text())
        assert kept["demo-pytorch"]["containerimage.digest"] == digest
        end_supervisor(first)
        filler.unlink()
        done = wait_for(
            "the outcome in the store once there is room",
            lambda: "not yet" not in str((j := job(config, job_id))["message"]) and j,
            30,
        )
        assert (done["state"], done["digest"]) == ("succeeded", digest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            filler.unlink()


@pytest.mark.parametrize("which", ["today", "0.13"])
def test_a_push_that_filled_the_disk_is_pushed_with_its_digest(
    tmp_path: Path,
    fleet: DevFleet,
    small_disk: Path,
    which: str,
) -> None:
    require("docker-buildx")
    host = registry_host(fleet)
    login_entry(host)
    env = buildx_env(which, tmp_path)
    config = fleet_file_on(tmp_path, fleet, small_disk / "state")
    job_id, first, filler = full_disk_build(
        config, small_disk, env, "demo-pytorch-push", "--yes", "--set", f"REGISTRY={host}"
    )
    try:
        shown = outcome_on_the_full_disk(config, small_disk, job_id, first)
        said = {k: shown[k] for k in ("state", "exit_code", "message", "error_step", "digest")}
        assert shown["state"] == "succeeded" and shown["exit_code"] == 0, said
        digest = str(shown["digest"])
        assert digest.startswith("sha256:"), shown
        request = urllib.request.Request(
            f"http://{host}/v2/rocm-bake/demo-pytorch/manifests/{digest}",
            method="HEAD",
            headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json, "
                     "application/vnd.oci.image.manifest.v1+json, "
                     "application/vnd.oci.image.index.v1+json"},
        )  # fmt: skip
        assert urllib.request.urlopen(request, timeout=10).status == 200
    finally:
        end_supervisor(first)
        with contextlib.suppress(FileNotFoundError):
            filler.unlink()


@pytest.mark.parametrize("which", ["today", "0.13"])
def test_a_build_that_really_fails_on_a_full_disk_says_its_step(
    tmp_path: Path,
    fleet: DevFleet,
    small_disk: Path,
    which: str,
) -> None:
    require("docker-buildx")
    env = buildx_env(which, tmp_path)
    config = fleet_file_on(tmp_path, fleet, small_disk / "state")
    job_id, first, filler = full_disk_build(
        config, small_disk, env, "demo-pytorch", "--set", "DEMO_FAIL=pytorch"
    )
    try:
        shown = outcome_on_the_full_disk(config, small_disk, job_id, first)
        assert shown["state"] == "failed" and shown["exit_code"] != 0, shown
        assert shown["digest"] is None
        assert "fake-compile pytorch" in str(shown["error_step"]), shown
    finally:
        end_supervisor(first)
        with contextlib.suppress(FileNotFoundError):
            filler.unlink()


# ---------------------------------------------------------------- bake's write fails anyway


def runtime_on(disk: Path, env: dict[str, str]) -> dict[str, str]:
    """bake's runtime folder on the full disk too (a host whose /run shares it): bake's own
    metadata write then fails, and the build's word must come from BuildKit."""
    folder = disk / "runtime"
    folder.mkdir(mode=0o700)
    return {**env, "XDG_RUNTIME_DIR": str(folder)}


@pytest.mark.parametrize("push", [False, True])
def test_bake_failing_on_its_metadata_takes_the_build_s_word_from_buildkit(
    tmp_path: Path,
    fleet: DevFleet,
    small_disk: Path,
    push: bool,
) -> None:
    require("docker-buildx", "current-engine")
    host = registry_host(fleet)
    login_entry(host)
    env = runtime_on(small_disk, dict(os.environ))
    config = fleet_file_on(tmp_path, fleet, small_disk / "state")
    args = (
        ("demo-pytorch-push", "--yes", "--set", f"REGISTRY={host}") if push else ("demo-pytorch",)
    )
    job_id, first, filler = full_disk_build(config, small_disk, env, *args)
    try:
        shown = outcome_on_the_full_disk(config, small_disk, job_id, first)
        assert shown["exit_code"] == 102, shown  # bake's own word: it could not write
        assert shown["state"] == "succeeded", shown
        digest = str(shown["digest"])
        assert digest.startswith("sha256:"), shown
        pushed = ", pushed" if push else ""
        assert str(shown["message"]).startswith(
            f"built {digest}{pushed}; bake could not write its metadata: state disk full"
        ), shown["message"]
        if push:
            request = urllib.request.Request(
                f"http://{host}/v2/rocm-bake/demo-pytorch/manifests/{digest}", method="HEAD",
                headers={"Accept": "application/vnd.oci.image.index.v1+json, "
                         "application/vnd.oci.image.manifest.v1+json, "
                         "application/vnd.docker.distribution.manifest.v2+json"},
            )  # fmt: skip
            assert urllib.request.urlopen(request, timeout=10).status == 200
    finally:
        end_supervisor(first)
        with contextlib.suppress(FileNotFoundError):
            filler.unlink()


def test_with_no_history_to_ask_the_failure_stays_and_says_why(
    tmp_path: Path,
    fleet: DevFleet,
    small_disk: Path,
) -> None:
    """buildx 0.13 has no `history`: bake's exit stands, and the record says why it could not
    be told apart from the build's own failure."""
    require("docker-buildx")
    env = runtime_on(small_disk, old_buildx_env(tmp_path))
    config = fleet_file_on(tmp_path, fleet, small_disk / "state")
    job_id, first, filler = full_disk_build(config, small_disk, env, "demo-pytorch")
    try:
        shown = outcome_on_the_full_disk(config, small_disk, job_id, first)
        assert (shown["state"], shown["exit_code"]) == ("failed", 1), shown
        assert str(shown["message"]).startswith(
            "bake could not write its metadata: state disk full; the builder keeps no build "
            "history to tell"
        ), shown["message"]
    finally:
        end_supervisor(first)
        with contextlib.suppress(FileNotFoundError):
            filler.unlink()
