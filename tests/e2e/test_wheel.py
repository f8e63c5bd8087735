"""The wheel as an operator installs it: built from the source tree, installed (not editable)
into a fresh virtual environment, and run from there against the real dev fleet.

`pipx install` / `uv tool install` do exactly this (a venv of their own, the wheel and its
dependencies in it). Dependencies come from the package index pip is configured with.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from email.parser import Parser
from pathlib import Path

import pytest

import rocmtui
from devfleet import DevFleet
from tests.support.realparts import require

ROOT = Path(__file__).resolve().parents[2]
# one worker builds the wheel and its venv once for all four tests (--dist loadgroup)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]


def build_wheel(out: Path) -> Path:
    """`pip wheel` of a copy of the working tree (tracked and new files, nothing ignored), so
    the build leaves no build/ or egg-info in the checkout."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    src = out / "src"
    for name in filter(None, listed):
        rel = Path(os.fsdecode(name))
        origin = ROOT / rel
        if not origin.exists() and not origin.is_symlink():
            continue  # deleted in the work tree, not yet committed
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        if origin.is_symlink():
            (src / rel).symlink_to(os.readlink(origin))
        else:
            shutil.copy2(origin, src / rel)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out / "dist"), "."],
        cwd=src,
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = (out / "dist").glob("rocmtui-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed (not editable); returns its bin/ folder."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    return venv / "bin"


def test_wheel_holds_the_application_only(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"rocmtui", f"rocmtui-{rocmtui.__version__}.dist-info"}, tops
    assert not [n for n in names if "devfleet" in n or "hostile" in n or "/tests/" in n]
    for style in ("console.tcss", "logs.tcss", "dialogs.tcss", "logview.tcss"):
        assert f"rocmtui/styles/{style}" in names
    assert f"rocmtui-{rocmtui.__version__}.dist-info/licenses/LICENSE" in names
    assert "rocmtui/serve/templates/app_index.html" in names  # `rocmtui serve`'s page
    meta = zipfile.ZipFile(wheel).read(f"rocmtui-{rocmtui.__version__}.dist-info/METADATA")
    headers = Parser().parsestr(meta.decode())
    assert headers["Version"] == rocmtui.__version__  # one source for the version
    assert headers["License-Expression"] == "MIT"
    classifiers = headers.get_all("Classifier") or []
    assert "Operating System :: POSIX :: Linux" in classifiers
    assert "Environment :: Console" in classifiers


def _run(
    bin_dir: Path, *args: str, cwd: Path, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    return subprocess.run(
        [str(bin_dir / "rocmtui"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


def test_installed_wheel_runs_from_its_own_venv(installed: Path, tmp_path: Path) -> None:
    version = _run(installed, "--version", cwd=tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"rocmtui {rocmtui.__version__}"
    where = subprocess.run(
        [
            str(installed / "python"),
            "-c",
            "import rocmtui, importlib.util as u; print(rocmtui.__file__); "
            "print(u.find_spec('devfleet'))",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout.split("\n")
    assert where[0].startswith(str(installed.parent / "lib")), where  # not the checkout
    assert where[1] == "None"  # the dev fleet is not installed


@pytest.mark.fleet
def test_installed_status_json_against_the_dev_fleet(
    installed: Path, fleet: DevFleet, tmp_path: Path
) -> None:
    out = _run(installed, "status", "--json", "--config", str(fleet.config_path), cwd=tmp_path)
    assert out.returncode in (0, 1), out.stderr
    data = json.loads(out.stdout)
    assert [n["name"] for n in data["nodes"]] == ["snoc-strix", "snoc-think", "snoc-gaming"]
    assert all(n["state"] == "ok" for n in data["nodes"]), data["nodes"]


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    require("tmux")
    home = tempfile.mkdtemp(prefix="rocmtui-wheel-tmux-")
    socket = os.path.join(home, "tmux")
    try:
        yield socket
    finally:
        subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True, timeout=20)
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.fleet
def test_installed_console_starts_in_tmux(
    installed: Path, fleet: DevFleet, tmp_path: Path, tmux_socket: str
) -> None:
    tmux = ["tmux", "-S", tmux_socket]
    env = {
        "PATH": f"{installed}:/usr/local/bin:/usr/bin:/bin",
        "HOME": os.environ["HOME"],
        "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"],
        "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"],
        "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"],
        "ROCMTUI_LOCK_DIR": os.environ["ROCMTUI_LOCK_DIR"],
        "TERM": "xterm-256color",
    }
    assignments = " ".join(f"{k}={v}" for k, v in env.items())
    command = (
        f"cd {tmp_path} && env -i {assignments} rocmtui --config {fleet.config_path}; "
        "echo CONSOLE-EXIT-$?; sleep 600"
    )
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "w", "-x", "120", "-y", "40", command],
        check=True,
        timeout=20,
    )

    def screen() -> str:
        return subprocess.run(
            [*tmux, "capture-pane", "-p", "-t", "w"], capture_output=True, text=True, timeout=20
        ).stdout

    def wait(pattern: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        shown = ""
        while time.monotonic() < deadline:
            shown = screen()
            if re.search(pattern, shown):
                return shown
            time.sleep(0.2)
        pytest.fail(f"timed out waiting for {pattern!r}; screen:\n{shown}")

    shown = wait(r"snoc-gaming[\s\S]*healthy|healthy[\s\S]*snoc-gaming")
    assert "snoc-think" in shown
    subprocess.run([*tmux, "send-keys", "-t", "w", "q"], check=True, timeout=20)
    wait(r"CONSOLE-EXIT-0")
