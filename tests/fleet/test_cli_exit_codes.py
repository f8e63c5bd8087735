"""Every command's exit codes against the README's table, one test per row, each code of the
row reached for real (the dev fleet, real builds, real files)."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from devfleet import DevFleet, start_monitor
from tests.support.jobs import (
    DEMO_BAKE,
    bake,
    engineless_fleet,
    run_cli,
    started_job,
    wait_state,
    write_config,
)
from tests.support.readme import readme_codes
from tests.support.realparts import require

pytestmark = [pytest.mark.fleet]
FAST = ("--set", "DEMO_STEPS=3", "--set", "DEMO_SLEEP=0")


def broken_fleet_file(tmp_path: Path) -> Path:
    path = tmp_path / "broken.toml"
    path.write_text('[[nodes]]\nname = "x"\ngfx = "gpu9"\n')
    return path


def codes(*results: tuple[int, int]) -> None:
    for got, wanted in results:
        assert got == wanted, results


def test_status_row(tmp_path: Path, fleet: DevFleet) -> None:
    assert readme_codes("status") == "0 healthy, 1 not, 2 usage/config error"
    codes(
        (run_cli(fleet.config_path, "status").returncode, 0),
        (run_cli(engineless_fleet(tmp_path), "status").returncode, 1),
        (run_cli(broken_fleet_file(tmp_path), "status").returncode, 2),
    )


def test_vars_row(tmp_path: Path) -> None:
    assert readme_codes("vars") == "0, 2"
    broken = tmp_path / "broken.hcl"
    broken.write_text('variable "X" {\n  default = \n}\n')
    codes(
        (run_cli(engineless_fleet(tmp_path, bake_file=DEMO_BAKE), "vars").returncode, 0),
        (run_cli(engineless_fleet(tmp_path, bake_file=broken), "vars").returncode, 2),
    )


def test_bake_row(tmp_path: Path, config: Path) -> None:
    assert readme_codes("bake") == "0, 1 refused, 2"
    job = bake(config, "demo-base", "--node", "snoc-think", *FAST)
    wait_state(config, job, ["succeeded", "failed"])
    codes(
        (run_cli(config, "bake", "demo-vllm-push", "--node", "snoc-think").returncode, 1),
        (run_cli(config, "bake", "no-such-target").returncode, 2),
    )


def test_jobs_row(tmp_path: Path) -> None:
    assert readme_codes("jobs") == "0"
    assert run_cli(engineless_fleet(tmp_path), "jobs").returncode == 0


def test_logs_row(config: Path) -> None:
    require("docker-buildx")
    assert readme_codes("logs") == "0 succeeded, 1 not, 2 no such job"
    good = bake(config, "demo-base", "--node", "snoc-think", *FAST, "--set", "DEMO_NONCE=ok")
    bad = bake(config, "demo-base", "--node", "snoc-gaming", *FAST, "--set", "DEMO_FAIL=base")
    assert wait_state(config, good, ["succeeded", "failed"])["state"] == "succeeded"
    assert wait_state(config, bad, ["succeeded", "failed"])["state"] == "failed"
    codes(
        (run_cli(config, "logs", good).returncode, 0),
        (run_cli(config, "logs", "-f", good).returncode, 0),
        (run_cli(config, "logs", bad).returncode, 1),
        (run_cli(config, "logs", "20990101-0000-beef").returncode, 2),
    )


def test_cancel_row(config: Path) -> None:
    require("docker-buildx")
    assert readme_codes("cancel") == "0, 1 not running or read-only, 2"
    slow = bake(
        config,
        "demo-base",
        "--node",
        "snoc-strix",
        "--set",
        "DEMO_SLEEP=1",
        "--set",
        "DEMO_NONCE=slow",
    )
    started_job(config, slow)
    codes(
        (run_cli(config, "cancel", slow, "--grace", "2").returncode, 0),
        (run_cli(config, "cancel", slow).returncode, 1),
        (run_cli(config, "cancel", "20990101-0000-beef").returncode, 2),
    )


def test_config_row(tmp_path: Path) -> None:
    assert readme_codes("config") == "0, 2"
    codes(
        (run_cli(engineless_fleet(tmp_path), "config").returncode, 0),
        (run_cli(broken_fleet_file(tmp_path), "config").returncode, 2),
    )


@pytest.mark.alone  # doctor's checks have deadlines of 1.6-2.5 s
def test_doctor_row(tmp_path: Path, fleet: DevFleet) -> None:
    require("docker-buildx")
    assert readme_codes("doctor") == "0 nothing failed, 1 something did, 2"
    plain = tmp_path / "plain.hcl"  # no pushing target: no login is needed
    plain.write_text('target "plain" {\n  context = "."\n}\n')
    healthy = write_config(tmp_path, fleet, bake_file=plain)
    ok = run_cli(healthy, "doctor")
    assert ok.returncode == 0, ok.stdout
    codes(
        (run_cli(engineless_fleet(tmp_path, bake_file=plain), "doctor").returncode, 1),
        (run_cli(broken_fleet_file(tmp_path), "doctor").returncode, 2),
    )


def test_completion_row(tmp_path: Path) -> None:
    assert readme_codes("completion") == "0, 2"
    config = engineless_fleet(tmp_path)
    out = run_cli(config, "completion", "bash")
    assert out.returncode == 0 and re.search(r"complete .*-F _shtab_rocmtui", out.stdout)
    codes(
        (run_cli(config, "completion").returncode, 2),
        (run_cli(config, "completion", "tcsh").returncode, 2),
    )


def test_monitor_row(tmp_path: Path) -> None:
    assert readme_codes("monitor") == "0 on SIGTERM, 1 another runs (named) or cannot listen, 2"
    config = engineless_fleet(tmp_path)
    first = start_monitor(tmp_path / "monitor", config)
    try:
        second = run_cli(config, "monitor", "--no-metrics", timeout=30)
        assert second.returncode == 1, second.stderr
        assert str(first.pid) in second.stderr  # the one that runs is named
        usage = run_cli(config, "monitor", "--listen", "not-an-address", timeout=30)
        assert usage.returncode == 2, usage.stderr
    finally:
        os.kill(first.pid, signal.SIGTERM)
        popen = first._popen
        assert popen is not None and popen.wait(timeout=30) == 0
        first.stop()
