"""Rules every command obeys, run as real processes: read-only refuses every start and stop of
a build in the core (so `rocmtui --read-only bake`, `read_only = true` and the console are one
rule), and a closed pipe (`rocmtui jobs --json | head`) is a quiet exit."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.jobs import (
    bake,
    jobs_json,
    offline_config,
    rocmtui_argv,
    run_cli,
    started_job,
)


@pytest.mark.parametrize(
    "how",
    [
        ["--read-only", "bake", "demo-base"],
        ["bake", "demo-base", "--read-only"],
        ["bake", "demo-base", "--yes", "--push", "--read-only"],
    ],
)
def test_read_only_refuses_a_launch_from_the_command_line(tmp_path: Path, how: list[str]) -> None:
    config = offline_config(tmp_path)
    out = run_cli(config, *how)
    assert out.returncode == 1, out.stderr
    assert out.stderr.startswith("rocmtui bake: refused: read-only"), out.stderr
    assert out.stdout == "" and jobs_json(config) == []


def test_read_only_in_the_fleet_file_refuses_a_launch(tmp_path: Path) -> None:
    config = offline_config(tmp_path)
    config.write_text("read_only = true\n" + config.read_text())
    out = run_cli(config, "bake", "demo-base")
    assert (out.returncode, out.stderr.splitlines()) == (
        1,
        ["rocmtui bake: refused: read-only (--read-only or read_only = true): starting a build "
         "is refused"],
    )  # fmt: skip
    assert jobs_json(config) == []


@pytest.mark.fleet
def test_read_only_refuses_a_cancel_and_the_build_goes_on(config: Path) -> None:
    nonce = f"DEMO_NONCE={os.getpid()}-{time.time_ns()}"
    job_id = bake(
        config, "demo-base", "--arch", "gfx1201", "--node", "snoc-think",
        "--set", "DEMO_SLEEP=0.5", "--set", nonce,
    )  # fmt: skip
    started_job(config, job_id)
    out = run_cli(config, "--read-only", "cancel", job_id)
    assert out.returncode == 1 and "refused: read-only" in out.stderr, out.stderr
    ro = config.with_name("read-only.toml")
    ro.write_text("read_only = true\n" + config.read_text())
    out = run_cli(ro, "cancel", job_id)
    assert out.returncode == 1 and "refused: read-only" in out.stderr, out.stderr
    assert next(j for j in jobs_json(config) if j["id"] == job_id)["state"] == "running"
    out = run_cli(config, "cancel", job_id, "--grace", "2")  # not read-only: it stops
    assert out.returncode == 0 and out.stdout.split() == [job_id, "cancelled"], out.stderr


@pytest.mark.parametrize(
    "args", [["jobs", "--json"], ["jobs"], ["vars", "--json"], ["status", "--json"]]
)
def test_a_closed_pipe_is_a_quiet_exit(tmp_path: Path, args: list[str]) -> None:
    """As `| head` leaves: the reading end is closed before the command writes a byte. Every
    command stops without a word, with the status a shell gives a tool ended by SIGPIPE."""
    config = offline_config(tmp_path)
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            rocmtui_argv(config, *args), stdout=write, stderr=subprocess.PIPE, timeout=120
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr.decode()) == (141, "")
