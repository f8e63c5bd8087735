"""deploy/: the alert rules pass `promtool check rules` and their unit tests (`promtool test
rules`), the Prometheus and Alertmanager configs pass their own checkers, and the systemd units
run `rocmtui monitor`."""

from __future__ import annotations

import configparser
import subprocess
from pathlib import Path

import pytest

from tests.support.realparts import require

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
PROMETHEUS = DEPLOY / "prometheus"


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), cwd=PROMETHEUS, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_alert_rules_check_and_their_unit_tests_pass() -> None:
    require("promtool")
    checked = run("promtool", "check", "rules", "rocmtui-alerts.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 8 rules found" in checked.stdout
    tested = run("promtool", "test", "rules", "rocmtui-alerts.test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_every_alert_has_a_unit_test() -> None:
    rules = (PROMETHEUS / "rocmtui-alerts.yml").read_text()
    tests = (PROMETHEUS / "rocmtui-alerts.test.yml").read_text()
    names = [line.split(":", 1)[1].strip() for line in rules.splitlines() if "- alert:" in line]
    assert len(names) == 8
    for name in names:
        assert f"alertname: {name}" in tests, name


def test_the_prometheus_and_alertmanager_configs_check() -> None:
    require("promtool", "alertmanager")
    prom = run("promtool", "check", "config", "prometheus.yml")
    assert prom.returncode == 0, prom.stdout + prom.stderr
    am = run("amtool", "check-config", "alertmanager.yml")
    assert am.returncode == 0, am.stdout + am.stderr
    assert "webhook" in (PROMETHEUS / "alertmanager.yml").read_text()


@pytest.mark.parametrize(
    "unit", ["systemd/rocmtui-monitor.service", "systemd/user/rocmtui-monitor.service"]
)
def test_the_systemd_units_run_the_monitor(unit: str) -> None:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # keys keep their case (ExecStart, not execstart)
    parser.read(DEPLOY / unit)
    service = parser["Service"]
    assert " monitor" in service["ExecStart"] and "--listen 127.0.0.1:9464" in service["ExecStart"]
    assert service["Restart"] == "on-failure"
    assert parser["Install"]["WantedBy"] in ("multi-user.target", "default.target")


@pytest.mark.parametrize(
    "unit", ["systemd/rocmtui-serve.service", "systemd/user/rocmtui-serve.service"]
)
def test_the_serve_units_run_serve_read_only_on_loopback_beside_the_monitor(unit: str) -> None:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read(DEPLOY / unit)
    service = parser["Service"]
    command = service["ExecStart"]
    assert " serve " in command and "--listen 127.0.0.1:8765" in command
    assert "--allow-actions" not in command and "--insecure" not in command
    assert parser["Unit"]["Wants"] == "rocmtui-monitor.service"
    assert service["KillMode"] == "mixed" and service["Restart"] == "on-failure"


def test_the_tmpfiles_entry_makes_a_lock_folder_rocmtui_trusts(tmp_path: Path) -> None:
    """systemd-tmpfiles (into a root of the test's own) makes /run/lock/rocmtui root's, group
    rocmtui, 2770: a folder the slot locks accept, and one nobody else got to first."""
    require("root", "systemd-tmpfiles")
    from rocmtui.core.jobs.locks import lock_dir_problem

    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    (tmp_path / "etc" / "group").write_text("root:x:0:\nrocmtui:x:4242:\n")
    (tmp_path / "run" / "lock").mkdir(parents=True)
    (tmp_path / "run" / "lock").chmod(0o1777)
    made = subprocess.run(
        ["systemd-tmpfiles", f"--root={tmp_path}", "--create",
         str(DEPLOY / "tmpfiles.d" / "rocmtui.conf")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    folder = tmp_path / "run" / "lock" / "rocmtui"
    info = folder.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o7777) == (0, 4242, 0o2770)
    assert lock_dir_problem(folder) is None
