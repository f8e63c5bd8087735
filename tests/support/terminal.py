"""Driving the real console in a real terminal: tmux, its environment, a fleet file for the dev
fleet, and the CLI beside it (the end-to-end tests' shared parts; the `terminal` fixture is in
tests/e2e/conftest.py)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from devfleet import DevFleet, EngineHandle

ROOT = Path(__file__).resolve().parents[2]


class Terminal:
    """One tmux server of our own with one console in it."""

    def __init__(self, width: int = 120, height: int = 40) -> None:
        # a socket of our own, not one named in tmux's shared directory (`-L` left a socket
        # file there after every test: hundreds of them)
        self.home = tempfile.mkdtemp(prefix="rocmtui-e2e-tmux-")
        self.socket = os.path.join(self.home, "tmux")
        self.width, self.height = width, height
        self.sessions = 0

    def tmux(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=20
        )
        return out.stdout

    def start(self, env: dict[str, str], config: Path, *extra: str) -> str:
        """Start `rocmtui --config CONFIG` in a new session; returns the session name."""
        self.sessions += 1
        name = f"c{self.sessions}"
        assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
        argv = [sys.executable, "-m", "rocmtui", "--config", str(config), *extra]
        command = f"env -i {assignments} {shlex.join(argv)}; echo CONSOLE-EXIT-$?; sleep 600"
        subprocess.run(
            ["tmux", "-S", self.socket, "new-session", "-d", "-s", name, "-x", str(self.width),
             "-y", str(self.height), command],
            check=True,
            timeout=20,
        )  # fmt: skip
        # a detached session may keep tmux's default 80x24: size the window explicitly
        self.tmux("resize-window", "-t", name, "-x", str(self.width), "-y", str(self.height))
        self.session = name
        return name

    def screen(self) -> str:
        """What the terminal shows now."""
        return self.tmux("capture-pane", "-p", "-t", self.session)

    def keys(self, *keys: str) -> None:
        """Type keys (tmux key names: Enter, Escape, Tab, Down ...), one at a time."""
        for key in keys:
            self.tmux("send-keys", "-t", self.session, key)
            time.sleep(0.15)  # a human's pace; the console must take keys at any pace anyway

    def wait(self, predicate: Callable[[str], object], what: str, timeout: float = 60.0) -> str:
        """Poll the screen until `predicate(screen)` holds; fail with the last screen."""
        deadline = time.monotonic() + timeout
        shown = ""
        while time.monotonic() < deadline:
            shown = self.screen()
            if predicate(shown):
                return shown
            time.sleep(0.2)
        pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}; screen:\n{shown}")

    def wait_text(self, pattern: str, timeout: float = 60.0) -> str:
        """Until the screen matches the regex."""
        return self.wait(lambda s: re.search(pattern, s, re.M), repr(pattern), timeout)

    def kill_session(self) -> None:
        """Close the terminal the console runs in (as an ssh drop or a closed tmux does)."""
        self.tmux("kill-session", "-t", self.session)

    def close(self) -> None:
        """Stop our tmux server (and with it any console still in it); remove its socket."""
        self.tmux("kill-server")
        shutil.rmtree(self.home, ignore_errors=True)


def fleet_file(
    fleet: DevFleet, tmp: Path, extra: list[EngineHandle] = (), **settings: object
) -> Path:  # type: ignore[assignment]
    """The fleet's own fleet file on bake/demo.hcl, with settings changed and nodes added.

    Builds started elsewhere are not watched unless `watch_history=True` is given: every other
    test's builds on the shared session fleet would be this console's builds elsewhere."""
    settings = {"watch_history": False, **settings}
    text = fleet.config_path.read_text()
    text = re.sub(r"(?m)^bake_file = .*$", f'bake_file = "{ROOT / "bake" / "demo.hcl"}"', text)
    for key, value in settings.items():
        text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {json.dumps(value)}", text)
        if not re.search(rf"(?m)^{key} = ", text):
            text = f"{key} = {json.dumps(value)}\n" + text
    for engine in extra:
        text += (
            f'\n[[nodes]]\nname = "{engine.name}"\ndocker_host = "{engine.docker_host}"\n'
            f'gfx = "{engine.gfx or "gfx1201"}"\n'
        )
    path = tmp / "fleet.toml"
    path.write_text(text)
    return path


def console_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment the console runs with: the test's isolated dirs plus bake variables."""
    keep = ("PATH", "HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
            "XDG_DATA_HOME", "DOCKER_CONFIG", "ROCMTUI_LOCK_DIR", "LANG")  # fmt: skip
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(TERM="xterm-256color", TZ="UTC", ROCMTUI_STATE_DIR=str(tmp / "state"))
    env.update(extra)
    return env


def cli(env: dict[str, str], config: Path, *args: str) -> str:
    """Run a headless `rocmtui` command (another operator, or a script) and return stdout."""
    out = subprocess.run(
        [sys.executable, "-m", "rocmtui", *args, "--config", str(config)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def job_json(env: dict[str, str], config: Path) -> list[dict[str, object]]:
    data = json.loads(cli(env, config, "jobs", "--json"))
    return data if isinstance(data, list) else data.get("jobs", [])


def wait_job(
    env: dict[str, str], config: Path, job_id: str, states: set[str], timeout: float
) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for job in job_json(env, config):
            if job["id"] == job_id and job["state"] in states:
                return job
        time.sleep(0.5)
    pytest.fail(f"job {job_id} never reached {states}: {job_json(env, config)}")


def login_entry(env: dict[str, str], host: str) -> None:
    """A docker config with an entry for the registry (presence is all the core checks)."""
    path = Path(env["DOCKER_CONFIG"]) / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"auths": {host: {}}}))


def registry_host(fleet: DevFleet) -> str:
    assert fleet.registry is not None
    return re.sub(r"^https?://", "", str(fleet.registry.url)).rstrip("/")
