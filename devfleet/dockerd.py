"""Docker engines for the dev fleet: one dockerd per node, optionally in its own network namespace.

dockerd 20.10 runs its BuildKit in-process; `RUN` steps need a bridge, so an extra node gets a
network namespace of its own (its docker0 lives there) and is started through
`nsenter --net=...` — `ip netns exec` remounts /sys and dockerd then dies with "Devices cgroup
isn't mounted". Nothing under /etc/docker, /var/lib/docker or /var/run/docker.sock is touched:
data root, exec root, pid file, trust key and socket are all the node's own.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devfleet import ledger, processes
from devfleet.baseimage import BASE_IMAGE, build_base_tar
from devfleet.netns import (
    NETNS_DIR,
    drop_host_bridge_if_unused,
    netns_add,
    netns_del,
    unique_netns_name,
)
from devfleet.processes import FleetError
from devfleet.tls import ServerCert

ENGINE_START_TIMEOUT = 60.0
#: Where `.ci/install-system` unpacks today's engine (Debian's newest docker.io, containerd,
#: docker-cli, docker-buildx): bin/ and cli-plugins/.
CURRENT_ENGINE_DIR = Path("/usr/local/lib/rocmtui-engines/current")


@dataclass(frozen=True)
class EngineKind:
    """Which dockerd a node runs, and how: the fleet mid-upgrade has several.

    `current`: today's engine from `CURRENT_ENGINE_DIR` (its managed containerd, 2.1, from the
    same folder); otherwise the release's dockerd 20.10 (BuildKit built in, no build history).
    `min_api`: the engine's minimum API version (`DOCKER_MIN_API_VERSION`; Docker 29 ships
    1.44). `containerd_store`: the containerd image store (Docker 29's default for new
    installs: pushes carry attestation manifests in an OCI index; vfs becomes the `native`
    snapshotter).
    """

    name: str
    current: bool = False
    min_api: str | None = None
    containerd_store: bool = False
    #: more of dockerd's environment, e.g. BuildKit's step log limits (a bench that floods a
    #: step's output lifts them: by default BuildKit clips a step at 2 MiB and 200 KB/s)
    extra_env: tuple[tuple[str, str], ...] = ()
    #: more of daemon.json, e.g. `cgroup-parent` (a test's memory-limited cgroup: its RUN steps
    #: are OOM-killed for real)
    settings: tuple[tuple[str, str], ...] = ()

    @property
    def dockerd(self) -> str:
        """The dockerd binary to run."""
        return str(CURRENT_ENGINE_DIR / "bin" / "dockerd") if self.current else "dockerd"

    def env(self) -> dict[str, str]:
        """What dockerd's environment adds: its own folder first on PATH (containerd, shim,
        docker-proxy of the same release), its minimum API version, `extra_env`."""
        extra: dict[str, str] = {}
        if self.current:
            extra["PATH"] = f"{CURRENT_ENGINE_DIR / 'bin'}:{processes.child_env()['PATH']}"
        if self.min_api:
            extra["DOCKER_MIN_API_VERSION"] = self.min_api
        extra.update(self.extra_env)
        return extra

    def available(self) -> bool:
        """Whether this kind's binaries are on this machine."""
        return shutil.which(self.dockerd) is not None


OLD_ENGINE = EngineKind("20.10")
CURRENT_ENGINE = EngineKind("current", current=True)
#: As Docker 29 ships: minimum API 1.44 (on 28.5, `DOCKER_MIN_API_VERSION` gives it).
CURRENT_MIN_144 = EngineKind("current-min-1.44", current=True, min_api="1.44")
CURRENT_CONTAINERD_STORE = EngineKind("current-containerd", current=True, containerd_store=True)
ENGINE_KINDS = {
    k.name: k for k in (OLD_ENGINE, CURRENT_ENGINE, CURRENT_MIN_144, CURRENT_CONTAINERD_STORE)
}


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a unix socket (the Docker API), stdlib only."""

    def __init__(self, path: str | Path, timeout: float = 10.0) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = str(path)

    def connect(self) -> None:
        """Connect to the socket instead of TCP."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def docker_api(
    sock: Path,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
) -> tuple[int, bytes]:
    """One Docker API call over the engine's socket: (status, body)."""
    conn = UnixHTTPConnection(sock, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def ping(sock: Path, timeout: float = 2.0) -> bool:
    """Whether the engine behind `sock` answers `/_ping` with OK."""
    try:
        status, body = docker_api(sock, "GET", "/_ping", timeout=timeout)
    except OSError:
        return False
    return status == 200 and body.strip() == b"OK"


# --- the base image ---------------------------------------------------------------------------


def import_base(sock: Path, tar: Path, ref: str = BASE_IMAGE) -> None:
    """`docker import` the base tar into the engine as `ref` (with PATH and a shell CMD)."""
    repo, _, tag = ref.rpartition(":")
    query = urllib.parse.urlencode(
        [
            ("fromSrc", "-"),
            ("repo", repo),
            ("tag", tag),
            ("changes", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
            ("changes", 'CMD ["/bin/sh"]'),
        ]
    )
    status, body = docker_api(
        sock,
        "POST",
        f"/images/create?{query}",  # unversioned: served by engines of every age
        body=tar.read_bytes(),
        headers={"Content-Type": "application/x-tar"},
        timeout=120.0,
    )
    if status != 200 or b'"error"' in body:
        raise FleetError(f"import of {ref} failed: {status} {body[-400:]!r}")


# --- engines ----------------------------------------------------------------------------------


@dataclass
class EngineHandle:
    """A running dockerd of the dev fleet. `stop()` ends it, its children and its netns."""

    name: str
    gfx: str | None
    socket: Path
    docker_host: str
    netns: str | None
    pid: int
    start_time: int | None
    data_root: Path
    exec_root: Path
    run_dir: Path  # short /tmp dir holding socket, exec root and pid file; removed on stop
    log: Path
    owns_netns: bool = False
    tcp_host: str | None = None  # tcp://ADDR:2376 with mutual TLS, when the node has a link
    kind: str = OLD_ENGINE.name  # an ENGINE_KINDS name
    _popen: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def pids(self) -> list[int]:
        """The dockerd pid plus every live descendant (containerd, runc ...)."""
        return [self.pid, *processes.children_of(self.pid)] if self.alive() else []

    def alive(self) -> bool:
        """Whether this dockerd still runs."""
        return processes.alive(self.pid, self.start_time)

    def ping(self, timeout: float = 2.0) -> bool:
        """Whether the engine answers `/_ping`."""
        return ping(self.socket, timeout)

    def env(self) -> dict[str, str]:
        """Environment variables that point the docker CLI at this engine."""
        return {"DOCKER_HOST": self.docker_host}

    def wait_ready(self, timeout: float = ENGINE_START_TIMEOUT) -> None:
        """Block until `/_ping` answers; raise FleetError with the log tail if dockerd died."""

        def died() -> str | None:
            if self._popen is not None and self._popen.poll() is not None:
                return f"dockerd exited {self._popen.returncode}:\n{processes.log_tail(self.log)}"
            return None

        processes.wait_for(lambda: self.ping(1.0), timeout, f"engine {self.name}", failed=died)

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM dockerd, SIGKILL after `grace`, kill leftover containerd/shims, drop netns."""
        try:
            processes.stop_pids(
                [(self.pid, self.start_time)],
                grace=grace,
                extra_markers=[str(self.exec_root), str(self.data_root)],
                popen=self._popen,
            )
        finally:
            ledger.forget(self)
            if not self.alive():
                processes.unmount_under(self.data_root, self.exec_root, self.run_dir)
            if self.netns and self.owns_netns:
                netns_del(self.netns)
            elif not self.netns:
                drop_host_bridge_if_unused()
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def to_record(self) -> dict[str, Any]:
        """A JSON-able record (fleet.json) from which `from_record` rebuilds the handle."""
        return {
            "name": self.name,
            "gfx": self.gfx,
            "socket": str(self.socket),
            "docker_host": self.docker_host,
            "netns": self.netns,
            "pid": self.pid,
            "start_time": self.start_time,
            "data_root": str(self.data_root),
            "exec_root": str(self.exec_root),
            "run_dir": str(self.run_dir),
            "log": str(self.log),
            "owns_netns": self.owns_netns,
            "tcp_host": self.tcp_host,
            "kind": self.kind,
        }

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> EngineHandle:
        """The handle described by a `to_record` dict (e.g. from another process)."""
        paths = ("socket", "data_root", "exec_root", "run_dir", "log")
        fields: dict[str, Any] = {k: (Path(v) if k in paths else v) for k, v in rec.items()}
        return cls(**fields)


def launch_engine(
    workdir: Path,
    name: str,
    netns: str | bool | None = None,
    gfx: str | None = None,
    *,
    tls_listen: tuple[str, ServerCert] | None = None,
    socket_group: int | None = None,
    kind: EngineKind = OLD_ENGINE,
) -> EngineHandle:
    """Start dockerd for node `name` without waiting for it (see `EngineHandle.wait_ready`).

    `netns`: None for the host namespace; a name to run in that namespace (created, and removed
    on stop, when it does not exist yet); True for a fresh uniquely named namespace.
    `tls_listen`: (ADDR:PORT, certificates) to also listen on with `--tlsverify` (clients must
    show a certificate of the same CA). `socket_group`: the gid owning the unix socket (the
    node's ssh user reaches the engine through it). `kind`: which dockerd (`EngineKind`).
    A current engine in the host namespace is started like every other: never with
    `--bridge=none`, which deletes the host's docker0 under every other engine.
    """
    if not kind.available():
        raise FleetError(f"engine {kind.name} for {name}: {kind.dockerd} not found")
    workdir = Path(workdir)
    home = workdir / "engines" / name
    data_root = home / "data"
    data_root.mkdir(parents=True, exist_ok=True)
    # The trust key would otherwise go to /etc/docker/key.json: keep it in the node's own dir.
    config = home / "daemon.json"
    settings: dict[str, Any] = {"deprecated-key-path": str(home / "key.json")}
    if kind.containerd_store:
        settings["features"] = {"containerd-snapshotter": True}
    settings.update(kind.settings)
    config.write_text(json.dumps(settings) + "\n")
    run_dir = processes.short_dir("rt")
    sock, exec_root, pidfile = run_dir / "d.sock", run_dir / "e", run_dir / "d.pid"
    owns = False
    if netns is True:
        netns = unique_netns_name(name)
    if isinstance(netns, str) and not (NETNS_DIR / netns).exists():
        netns_add(netns)
        owns = True
    ns = netns if isinstance(netns, str) else None
    # containerd namespaces are letters and digits joined by single `.`, `_` or `-`: a random
    # folder name may end in `_` (BuildKit then refuses the namespace), so keep only alnum
    tag = f"rt{os.getpid()}-{''.join(c if c.isalnum() else 'x' for c in run_dir.name)}"
    argv = [
        kind.dockerd,
        f"--config-file={config}",
        "--iptables=false",
        "--ip-masq=false",
        # the containerd store names snapshotters, not graph drivers: vfs is `native` there
        f"--storage-driver={'native' if kind.containerd_store else 'vfs'}",
        f"--data-root={data_root}",
        f"--exec-root={exec_root}",
        f"--pidfile={pidfile}",
        f"--host=unix://{sock}",
        # Unique namespaces keep engines apart even if a system containerd is ever shared.
        f"--containerd-namespace={tag}",
        f"--containerd-plugins-namespace={tag}-p",
        "--log-level=warn",
    ]
    if socket_group is not None:
        argv.append(f"--group={socket_group}")
        run_dir.chmod(0o711)  # the group's users must reach the socket inside it
    if tls_listen is not None:
        listen, cert = tls_listen
        argv += [
            f"--host=tcp://{listen}",
            "--tlsverify",
            f"--tlscacert={cert.ca}",
            f"--tlscert={cert.cert}",
            f"--tlskey={cert.key}",
        ]
    if ns:
        argv = ["nsenter", f"--net={NETNS_DIR / ns}", "--", *argv]
    log = home / "dockerd.log"
    try:
        popen = processes.spawn(argv, log, env=processes.child_env(kind.env()))
    except BaseException:
        if owns and ns:
            netns_del(ns)
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    # Read the start time at once, while the pid surely is still our child.
    handle = EngineHandle(
        name=name,
        gfx=gfx,
        socket=sock,
        docker_host=f"unix://{sock}",
        netns=ns,
        pid=popen.pid,
        start_time=processes.start_time(popen.pid),
        data_root=data_root,
        exec_root=exec_root,
        run_dir=run_dir,
        log=log,
        owns_netns=owns,
        tcp_host=f"tcp://{tls_listen[0]}" if tls_listen else None,
        kind=kind.name,
        _popen=popen,
    )
    ledger.remember(handle, "engine")
    return handle


def start_engine(
    workdir: Path,
    name: str,
    netns: str | bool | None = None,
    gfx: str | None = None,
    import_base_image: bool = True,
    timeout: float = ENGINE_START_TIMEOUT,
    base_tar: Path | None = None,
    kind: EngineKind = OLD_ENGINE,
) -> EngineHandle:
    """Start a dockerd for node `name`, wait until it answers, import `rocm-base:local`.

    `base_tar`: a tar made by `build_base_tar` to reuse (default: built once in `workdir`).
    Returns once the engine is usable; on any failure the engine is stopped again.
    """
    handle = launch_engine(workdir, name, netns, gfx, kind=kind)
    try:
        handle.wait_ready(timeout)
        if import_base_image:
            import_base(handle.socket, base_tar or build_base_tar(Path(workdir)))
    except BaseException:
        with contextlib.suppress(Exception):
            handle.stop(grace=5.0)
        raise
    return handle
