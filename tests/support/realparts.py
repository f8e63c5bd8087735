"""Is a real part available here? `require("dockerd")` skips the test when it is not — and fails
it when ROCMTUI_REQUIRE_REAL=1 (CI), so a missing package can never pass as a skip there.

A test that needs a part of the real fleet (`FLEET_PARTS`: engines, the registry, WebDAV, a
network namespace) carries the `fleet` marker; `require` fails one that does not, available or
not, so `-m "not fleet"` really leaves every such test out. conftest.py checks the fixtures
that start fleet parts the same way, when tests are collected."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

DAV_EXT_MODULE = Path("/usr/lib/nginx/modules/ngx_http_dav_ext_module.so")
#: Parts of the real local fleet: a test that needs one is a `fleet` test.
FLEET_PARTS = frozenset(
    {
        "fleet",
        "dockerd",
        "current-engine",
        "docker-registry",
        "nginx",
        "nginx-dav-ext",
        "netns",
        "busybox",
    }
)
#: The test being set up or run (conftest.py's pytest_runtest_setup sets it).
CURRENT: pytest.Item | None = None


def _which(*tools: str) -> str | None:
    missing = [t for t in tools if shutil.which(t) is None]
    return f"{', '.join(missing)} not on PATH" if missing else None


def _root() -> str | None:
    return None if os.geteuid() == 0 else "needs root"


def _buildx() -> str | None:
    if shutil.which("docker") is None:
        return "docker CLI not on PATH"
    try:
        out = subprocess.run(
            ["docker", "buildx", "version"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker buildx version: {exc}"
    return None if out.returncode == 0 else f"docker buildx missing: {out.stderr.strip()[:200]}"


CURRENT_ENGINE_DIR = Path("/usr/local/lib/rocmtui-engines/current")


def _current_engine() -> str | None:
    """Today's engine (`.ci/install-system` unpacks it) and a buildx with build history."""
    dockerd = CURRENT_ENGINE_DIR / "bin" / "dockerd"
    if not os.access(dockerd, os.X_OK):
        return f"{dockerd} missing (run .ci/install-system)"
    try:
        out = subprocess.run(
            ["docker", "buildx", "history", "--help"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker buildx history: {exc}"
    if out.returncode != 0:
        return "the docker buildx plugin has no `history` (buildx 0.20+ needed)"
    return _root() or _which("containerd", "runc")


def _netns() -> str | None:
    return _root() or _which("ip", "nsenter")


def _dav_ext() -> str | None:
    return _which("nginx") or (None if DAV_EXT_MODULE.is_file() else f"{DAV_EXT_MODULE} missing")


_CHECKS: dict[str, Callable[[], str | None]] = {
    "root": _root,
    "dockerd": lambda: _root() or _which("dockerd", "containerd", "runc"),
    "docker": lambda: _which("docker"),
    "docker-buildx": _buildx,
    # the release's buildx, kept beside today's by .ci/install-system (no `history` at all)
    "buildx-0.13": lambda: (
        None
        if Path("/usr/local/lib/rocmtui-engines/buildx-0.13.1/docker-buildx").is_file()
        else "buildx 0.13.1 not in /usr/local/lib/rocmtui-engines (make system)"
    ),
    "docker-registry": lambda: _which("docker-registry"),
    "htpasswd": lambda: _which("htpasswd"),
    "nginx": lambda: _which("nginx"),
    "nginx-dav-ext": _dav_ext,
    "busybox": lambda: _which("busybox"),
    "tmux": lambda: _which("tmux"),
    "systemd-tmpfiles": lambda: _which("systemd-tmpfiles"),
    "openssl": lambda: _which("openssl"),
    "grep": lambda: _which("grep"),  # GNU grep: the filter's speed anchor and its count's judge
    "zsh": lambda: _which("zsh"),  # completion scripts are checked by the shells themselves
    "fish": lambda: _which("fish"),
    "netns": _netns,
    "current-engine": _current_engine,
    "promtool": lambda: _which("promtool"),
    "node-exporter": lambda: _which("prometheus-node-exporter"),
    "prometheus": lambda: _which("prometheus"),
    "alertmanager": lambda: _which("prometheus-alertmanager", "amtool"),
    # Debian's chromium, for `rocmtui serve` in a real browser (never a downloaded one)
    "chromium": lambda: (
        None
        if os.access("/usr/lib/chromium/chromium", os.X_OK)
        else "/usr/lib/chromium/chromium missing (Debian's chromium: .ci/install-system)"
    ),
}


def _fleet() -> str | None:
    """Everything the session fleet (three engines, registry, WebDAV) needs."""
    parts = ("root", "dockerd", "current-engine", "docker-registry", "nginx-dav-ext", "busybox")
    for part in (*parts, "netns"):
        reason = _CHECKS[part]()
        if reason:
            return f"{part}: {reason}"
    return None


_CHECKS["fleet"] = _fleet


@functools.cache
def missing(what: str) -> str | None:
    """Why real part `what` is unavailable, or None when it is there (cached per session)."""
    if what not in _CHECKS:
        raise ValueError(f"unknown real part {what!r}; known: {', '.join(sorted(_CHECKS))}")
    return _CHECKS[what]()


def require(*what: str) -> None:
    """Skip (or, with ROCMTUI_REQUIRE_REAL=1, fail) unless every named real part is available.

    Names: root, dockerd, docker, docker-buildx, docker-registry, htpasswd, nginx, nginx-dav-ext,
    busybox, tmux, systemd-tmpfiles, grep, netns, current-engine (today's dockerd and a buildx
    with history), promtool, prometheus, alertmanager, chromium, and fleet (all the session
    fleet needs).
    """
    fleet = sorted(FLEET_PARTS.intersection(what))
    if fleet and CURRENT is not None and CURRENT.get_closest_marker("fleet") is None:
        pytest.fail(
            f"{CURRENT.nodeid} needs the real fleet ({', '.join(fleet)}): mark it "
            "@pytest.mark.fleet",
            pytrace=False,
        )
    for name in what:
        reason = missing(name)
        if reason:
            message = f"real part {name!r} unavailable: {reason}"
            if os.environ.get("ROCMTUI_REQUIRE_REAL") == "1":
                pytest.fail(message, pytrace=False)
            pytest.skip(message)
