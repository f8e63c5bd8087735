"""`rocmtui doctor` against the real dev fleet: a node stopped, a registry that refuses the
saved login, a bake file with a syntax error, a node that never answers -- the right lines
fail, the rest stay ok, and the doctor always answers within its deadline."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from devfleet import DevFleet, EngineHandle, HungUnixSocket, ServiceHandle
from tests.support.jobs import DEMO_BAKE
from tests.support.realparts import require

pytestmark = [pytest.mark.fleet, pytest.mark.alone]  # its checks have deadlines of 1.6-2.5 s


def fleet_file(tmp: Path, fleet: DevFleet, bake: Path, extra: list[tuple[str, str]]) -> Path:
    """The dev fleet's own file on `bake`, with nodes (name, docker_host) added."""
    text = fleet.config_path.read_text()
    text = re.sub(r"(?m)^bake_file = .*$", f"bake_file = {json.dumps(str(bake))}", text)
    text += "".join(f'\n[[nodes]]\nname = "{n}"\ndocker_host = "{h}"\n' for n, h in extra)
    path = tmp / "fleet.toml"
    path.write_text(text)
    return path


def save_login(host: str, user: str, password: str) -> None:
    """A docker config login for `host` (in the test's own DOCKER_CONFIG)."""
    folder = Path(os.environ["DOCKER_CONFIG"])
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    (folder / "config.json").write_text(json.dumps({"auths": {host: {"auth": auth}}}))


def doctor(config: Path, **env: str) -> tuple[int, dict[str, dict[str, str]]]:
    out = subprocess.run(
        [sys.executable, "-m", "rocmtui", "--config", str(config), "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode in (0, 1), out.stderr
    findings = json.loads(out.stdout)
    return out.returncode, {f["check"]: f for f in findings}


def verdicts(found: dict[str, dict[str, str]]) -> dict[str, str]:
    return {name: f["verdict"] for name, f in found.items()}


def test_the_right_lines_fail(
    tmp_path: Path,
    fleet: DevFleet,
    engine_factory: Callable[..., EngineHandle],
    registry_factory: Callable[..., ServiceHandle],
) -> None:
    require("docker-buildx", "htpasswd")
    stopped = engine_factory(name="stopped", netns=True)
    stopped.stop()
    registry = registry_factory(htpasswd=True)
    host = registry.url.split("://", 1)[1]
    assert registry.username and registry.password
    config = fleet_file(tmp_path, fleet, DEMO_BAKE, [("snoc-old", stopped.docker_host)])

    save_login(host, registry.username, registry.password)
    code, found = doctor(config, REGISTRY=host)
    assert code == 1  # the stopped node
    assert found["node snoc-old"]["verdict"] == "fail"
    assert "start the engine on snoc-old" in found["node snoc-old"]["remedy"]
    for name in ("snoc-strix", "snoc-think", "snoc-gaming"):
        assert found[f"node {name}"]["verdict"] == "ok", found[f"node {name}"]
    assert found[f"registry login {host}"]["verdict"] == "ok", found[f"registry login {host}"]
    for name in ("docker CLI", "buildx", "bake file", "bake --print", "state folder"):
        assert found[name]["verdict"] == "ok", found[name]
    assert "lacks:" in found["buildx"]["detail"] or "buildx" in found["buildx"]["detail"]

    save_login(host, registry.username, "not-the-password")
    code, found = doctor(config, REGISTRY=host)
    assert found[f"registry login {host}"]["verdict"] == "fail"
    assert found[f"registry login {host}"]["detail"] == f"{host} refuses the saved login"
    assert found[f"registry login {host}"]["remedy"] == f"docker login {host}"
    assert "not-the-password" not in json.dumps(found)

    (Path(os.environ["DOCKER_CONFIG"]) / "config.json").unlink()
    code, found = doctor(config, REGISTRY=host)
    assert found[f"registry login {host}"]["verdict"] == "fail"
    assert found[f"registry login {host}"]["detail"].startswith(f"no login for {host}")

    broken = tmp_path / "broken.hcl"
    broken.write_text(
        DEMO_BAKE.read_text().replace('target "demo-base" {', 'target "demo-base" {{', 1)
    )
    bad_line = broken.read_text().splitlines().index('target "demo-base" {{') + 1
    code, found = doctor(fleet_file(tmp_path, fleet, broken, []))
    assert code == 1
    assert found["bake file"]["verdict"] == "fail"
    assert f"{broken}:" in found["bake file"]["detail"]
    line = int(found["bake file"]["detail"].split(f"{broken}:", 1)[1].split(":", 1)[0])
    assert abs(line - bad_line) <= 1, (line, bad_line, found["bake file"])
    assert found["node snoc-strix"]["verdict"] == "ok"


def test_a_node_that_never_answers_is_a_line_not_a_hang(
    tmp_path: Path, fleet: DevFleet, hung_unix_socket: HungUnixSocket
) -> None:
    config = fleet_file(tmp_path, fleet, DEMO_BAKE, [("snoc-hung", hung_unix_socket.docker_host)])
    text = config.read_text().replace("[registry]", "probe_deadline_seconds = 2.0\n\n[registry]", 1)
    config.write_text(text)
    code, found = doctor(config)  # subprocess timeout 60 s: a hang fails the test
    assert code == 1
    assert found["node snoc-hung"]["verdict"] == "fail"
    assert found["node snoc-strix"]["verdict"] == "ok"


def test_doctor_in_tmux_checks_the_terminal(tmp_path: Path, fleet: DevFleet) -> None:
    require("tmux")
    socket = str(tmp_path / "tmux")
    tmux = ["tmux", "-S", socket]
    out = tmp_path / "done"
    command = (
        f"{sys.executable} -m rocmtui --config {fleet.config_path} doctor; touch {out}; sleep 600"
    )
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "100", "-y", "40", command], check=True, timeout=20
    )
    try:
        deadline = time.monotonic() + 60
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        screen = subprocess.run(
            [*tmux, "capture-pane", "-p"], capture_output=True, text=True, timeout=20
        ).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=20)
    assert re.search(r"(ok|warn)\s+terminal size\s+\d+x\d+", screen), screen
    assert "tmux escape-time" in screen and "tmux passthrough" in screen, screen
    assert re.search(r"✓ ok\s+colours\s+.*TERM=", screen), screen  # coloured: ESC codes
    # are not in capture-pane's text, only the words


def test_a_check_past_the_deadline_keeps_the_lines_it_has() -> None:
    """A nodes check still waiting on one node at the doctor's deadline says which nodes
    answered; only the silent one is a `fail` (a loaded machine once lost every node's line)."""
    import threading

    from rocmtui.core.doctor.checks import FAIL, OK, Finding, run_checks

    release = threading.Event()

    class TwoNodes:
        def __init__(self) -> None:
            self.found: dict[str, Finding] = {}

        def __call__(self) -> list[Finding]:
            self.found["quick"] = Finding("node quick", OK, "answers")
            release.wait(10)  # the other node never answers in time
            return self.so_far(0)

        def so_far(self, waited: float) -> list[Finding]:
            return [
                self.found.get(name) or Finding(f"node {name}", FAIL, f"no answer in {waited}s")
                for name in ("quick", "hung")
            ]

    try:
        findings = run_checks({"nodes": TwoNodes()}, 0.3)
    finally:
        release.set()
    assert [(f.check, f.verdict) for f in findings] == [("node quick", OK), ("node hung", FAIL)]


def test_buildx_check_asks_the_plugin_docker_config_names(tmp_path: Path) -> None:
    """A DOCKER_CONFIG cli-plugins override is the buildx builds run, so doctor asks and names
    it: 0.13.1 there lacks the variable attributes; the system 0.29.1 does not."""
    from rocmtui.core.doctor.checks import check_buildx

    old = Path("/usr/local/lib/rocmtui-engines/buildx-0.13.1/docker-buildx")
    if not old.exists() or shutil.which("docker") is None:
        pytest.skip("needs docker and the kept buildx 0.13.1")
    (tmp_path / "cli-plugins").mkdir()
    (tmp_path / "cli-plugins" / "docker-buildx").symlink_to(old)
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(tmp_path)}
    [pinned] = check_buildx(30, {**env, "DOCKER_CONFIG": str(tmp_path)})
    assert pinned.detail.startswith(f"buildx 0.13.1 ({tmp_path}/cli-plugins/docker-buildx)")
    assert "variable description" in pinned.detail and "variable type" in pinned.detail
    [system] = check_buildx(30, {**env, "DOCKER_CONFIG": str(tmp_path / "none")})
    assert "0.13.1" not in system.detail and "cli-plugins/docker-buildx" in system.detail
    assert "variable description" not in system.detail and "variable type" not in system.detail
