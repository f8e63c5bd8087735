"""Watching the dev fleet: `rocmtui monitor`, Prometheus and Alertmanager, each on a free
loopback port, with its storage in its own directory, stopped by pid (ServiceHandle.stop).

Prometheus and Alertmanager are Debian's (`prometheus`, `prometheus-alertmanager`); their
configs are the caller's text (tests derive them from deploy/prometheus/), written as
`config.yml` in the part's directory, given the port chosen.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from devfleet.processes import child_env
from devfleet.services import ServiceHandle, _start_with_free_port

ConfigText = Callable[[int], str]  # the port chosen -> the config file's text


def start_prometheus(workdir: Path, config: ConfigText) -> ServiceHandle:
    """`prometheus` on 127.0.0.1:FREEPORT, its TSDB under `workdir`."""
    return _start_observer("prometheus", workdir, config, "prometheus", "--storage.tsdb.path")


def start_alertmanager(workdir: Path, config: ConfigText) -> ServiceHandle:
    """`prometheus-alertmanager` on 127.0.0.1:FREEPORT, no cluster port, storage in `workdir`."""
    return _start_observer(
        "alertmanager", workdir, config, "prometheus-alertmanager", "--storage.path",
        "--cluster.listen-address=",
    )  # fmt: skip


def _start_observer(
    kind: str, workdir: Path, config: ConfigText, binary: str, storage: str, *extra: str
) -> ServiceHandle:
    workdir = Path(workdir)
    (workdir / "data").mkdir(parents=True, exist_ok=True)
    path = workdir / "config.yml"
    port = 0

    def write_config(chosen: int) -> None:
        nonlocal port
        port = chosen
        path.write_text(config(chosen))

    def argv() -> list[str]:
        return [
            binary,
            f"--config.file={path}",
            f"{storage}={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
            *extra,
        ]

    return _start_with_free_port(kind, workdir, write_config, argv, "/-/ready")


def start_monitor(
    workdir: Path, fleet_file: Path, env: Mapping[str, str] | None = None
) -> ServiceHandle:
    """`rocmtui --config FLEET monitor --listen 127.0.0.1:FREEPORT` with `env` added to ours;
    `.url` is its base URL (`/metrics` under it). Returns once /metrics answers, which may be
    before its first round is in."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    port = 0
    marker = workdir / "config.yml"  # what the handle's stop() looks for in command lines

    def write_config(chosen: int) -> None:
        nonlocal port
        port = chosen
        marker.write_text(f"# rocmtui monitor of {fleet_file} on port {chosen}\n")

    def argv() -> list[str]:
        return [
            sys.executable, "-m", "rocmtui", "--config", str(fleet_file), "monitor",
            "--listen", f"127.0.0.1:{port}",
        ]  # fmt: skip

    return _start_with_free_port(
        "monitor", workdir, write_config, argv, "/metrics", env=child_env(dict(env or {}))
    )
