"""The monitor process's stderr is kept (logs/monitor.log under the state folder), a probe
round that raised is counted in the rounds it sends, and --debug writes the rotating debug log.

The raising round is a real exception in the real monitor process: a `sitecustomize` on the
child's PYTHONPATH (this test's own folder) makes the second call of `probe_fleet` raise.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rocmtui.core import debuglog
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.hostmonitor import ownchild
from rocmtui.core.snapshots import FleetSnapshot
from tests.support.jobs import engineless_fleet

INJECT = """
if b"ownchild" in open("/proc/self/cmdline", "rb").read():
    import rocmtui.core.probes.round as monitor

    real = monitor.probe_fleet
    calls = [0]

    async def flaky(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 2:
            raise RuntimeError("injected by the test: round 2 raises")
        return await real(*args, **kwargs)

    monitor.probe_fleet = flaky
"""


def test_a_round_that_raises_is_counted_and_its_traceback_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet_file = engineless_fleet(tmp_path, state_dir=tmp_path / "state", refresh_seconds=0.5)
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(INJECT)
    monkeypatch.setenv("PYTHONPATH", str(inject))
    child = ownchild.start(fleet_file)
    try:
        counted = None
        for index, item in enumerate(ownchild.rounds(child)):
            assert isinstance(item, FleetSnapshot), item
            if item.failed_rounds:
                counted = item
                break
            assert index < 20, "no round counted the failure"
    finally:
        ownchild.stop(child)
    assert counted is not None and counted.failed_rounds == 1
    log = debuglog.monitor_log(load_config(fleet_file)).read_text()
    assert "probe round failed" in log
    assert "RuntimeError: injected by the test: round 2 raises" in log


def test_debug_writes_the_rotating_log_with_secrets_redacted(tmp_path: Path) -> None:
    fleet_file = engineless_fleet(tmp_path, state_dir=tmp_path / "state")
    out = subprocess.run(
        [sys.executable, "-m", "rocmtui", "--config", str(fleet_file), "jobs", "--debug"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "API_TOKEN": "s3cr3t-value"},
    )
    assert out.returncode == 0, out.stderr
    log = (tmp_path / "state" / "logs" / debuglog.DEBUG_LOG).read_text()
    assert " jobs --debug" in log
    assert "s3cr3t-value" not in log


def test_the_monitor_log_is_rotated_when_it_has_grown(tmp_path: Path) -> None:
    path = tmp_path / "monitor.log"
    path.write_bytes(b"x" * 100)
    debuglog.rotate(path, max_bytes=50, backups=2)
    assert not path.exists() and (tmp_path / "monitor.log.1").stat().st_size == 100
    path.write_bytes(b"y" * 100)
    debuglog.rotate(path, max_bytes=50, backups=2)
    assert (tmp_path / "monitor.log.2").read_bytes() == b"x" * 100
    assert (tmp_path / "monitor.log.1").read_bytes() == b"y" * 100


def test_the_debug_log_redacts_secret_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging

    monkeypatch.setenv("ROCMTUI_DEBUG", "1")
    monkeypatch.setenv("REGISTRY_PASSWORD", "hunter2-value")
    config = load_config(engineless_fleet(tmp_path, state_dir=tmp_path / "state"))
    root = logging.getLogger()
    before = list(root.handlers)
    path = debuglog.setup(config)
    try:
        assert path is not None
        logging.getLogger("rocmtui.test").warning(
            "pushing with %s to http://ci:%s@registry.example/", "hunter2-value", "pw-in-url"
        )
    finally:
        for handler in [h for h in root.handlers if h not in before]:
            root.removeHandler(handler)
            handler.close()
    text = path.read_text()
    assert "pushing with" in text
    assert "hunter2-value" not in text and "pw-in-url" not in text
