"""The real local fleet itself: engines answer, build with RUN, push through the netns forwarder,
WebDAV and registry behave as the probes expect, and stopping leaves nothing behind."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from devfleet import (
    BASE_IMAGE,
    DevFleet,
    DripServer,
    EngineHandle,
    HungTcpListener,
    HungUnixSocket,
    ServiceHandle,
    netns_add,
    netns_del,
    ping,
    processes,
    reap,
    start_port_forward,
    unique_netns_name,
)
from devfleet.dockerd import docker_api
from devfleet.netns import NETNS_DIR
from rocmtui.core.config.fleetfile import parse_config
from tests.support import realparts
from tests.support.realparts import require

REPO = Path(__file__).resolve().parents[2]


def wait_until(check, timeout: float = 10.0, what: str = "condition"):  # type: ignore[no-untyped-def]
    """Poll `check` until truthy (returned) or fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not met within {timeout}s")
        time.sleep(0.05)


def request(
    url: str, method: str = "GET", headers: dict[str, str] | None = None
) -> http.client.HTTPResponse:
    """One plain HTTP request to a loopback URL; the response with its body read."""
    host_port, _, path = url.removeprefix("http://").partition("/")
    host, _, port = host_port.partition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request(method, "/" + path, headers=headers or {})
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return resp


def buildx(engine: EngineHandle, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`docker buildx ...` against one engine (the engine's own docker driver builder)."""
    env = {**os.environ, "DOCKER_HOST": engine.docker_host}
    return subprocess.run(
        ["docker", "buildx", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240
    )


def tiny_context(tmp_path: Path) -> Path:
    """A build context whose Dockerfile starts FROM the base image and has a RUN step."""
    (tmp_path / "Dockerfile").write_text(
        f"FROM {BASE_IMAGE}\nRUN echo built-on-$(hostname) > /built && cat /built\n"
    )
    return tmp_path


# --- the session fleet ------------------------------------------------------------------------


@pytest.mark.fleet
def test_fleet_engines_answer_and_config_matches(fleet: DevFleet) -> None:
    assert [e.name for e in fleet.engines] == ["snoc-strix", "snoc-think", "snoc-gaming"]
    assert fleet.local_engine.name == "snoc-strix"
    assert len(fleet.netns_engines) == 2
    for engine in fleet.engines:
        assert len(str(engine.socket)) < 100
        assert ping(engine.socket), engine.name
        status, body = docker_api(engine.socket, "GET", f"/images/{BASE_IMAGE}/json")
        assert status == 200, (engine.name, body[:200])
        env = json.loads(body)["Config"]["Env"]
        assert "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" in env
    for name in fleet.netns_names:
        assert (NETNS_DIR / name).exists()
    config = parse_config(fleet.config_path)
    assert config.registry.url == fleet.registry.url  # type: ignore[union-attr]
    assert config.webdav.url == fleet.webdav.url  # type: ignore[union-attr]
    # the real fleet's shape: the local node by its socket, one over ssh, one over TLS
    gaming = fleet.remote("snoc-gaming")
    assert [(n.name, n.docker_host, n.gfx, n.local) for n in config.nodes] == [
        ("snoc-strix", fleet.engines[0].docker_host, "gfx1151", True),
        ("snoc-think", "ssh://ci@snoc-think", "gfx1201", False),
        ("snoc-gaming", f"tcp://{gaming.address}:2376", "gfx1201", False),
    ]
    assert config.ssh_config == fleet.ssh.config
    assert config.nodes[2].tls_cert == str(fleet.tls_client.cert)
    unix = parse_config(fleet.unix_config_path)
    assert [n.docker_host for n in unix.nodes] == [e.docker_host for e in fleet.engines]
    assert config.bake_file == REPO / "bake" / "rocm-bake.hcl"
    record = json.loads((fleet.workdir / "fleet.json").read_text())
    assert {e["pid"] for e in record["engines"]} == {e.pid for e in fleet.engines}


@pytest.mark.fleet
def test_build_with_run_step_on_netns_engine(fleet: DevFleet, tmp_path: Path) -> None:
    require("docker-buildx")
    engine = fleet.engine("snoc-think")
    tag = f"devfleet-test/run-{uuid.uuid4().hex[:8]}:1"
    out = buildx(
        engine, "build", "--progress=plain", "--load", "-t", tag, ".", cwd=tiny_context(tmp_path)
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "built-on-" in out.stderr
    status, _ = docker_api(engine.socket, "GET", f"/images/{tag}/json")
    assert status == 200


@pytest.mark.fleet
def test_push_from_netns_engine_through_forwarder(fleet: DevFleet, tmp_path: Path) -> None:
    require("docker-buildx")
    assert fleet.registry is not None
    engine = fleet.engine("snoc-gaming")
    repo = f"devfleet-test/push-{uuid.uuid4().hex[:8]}"
    ref = f"{fleet.registry.address}/{repo}:1"
    out = buildx(
        engine, "build", "--progress=plain", "--push", "-t", ref, ".", cwd=tiny_context(tmp_path)
    )
    assert out.returncode == 0, out.stderr[-2000:]
    resp = request(
        f"{fleet.registry.url}/v2/{repo}/manifests/1",
        "HEAD",
        {"Accept": "application/vnd.docker.distribution.manifest.v2+json"},
    )
    assert resp.status == 200
    assert resp.getheader("Docker-Content-Digest", "").startswith("sha256:")


@pytest.mark.fleet
def test_webdav_propfind_depth1_is_207(fleet: DevFleet) -> None:
    assert fleet.webdav is not None
    assert request(fleet.webdav.url + "cache/a/obj", "PUT").status in (201, 204)
    resp = request(fleet.webdav.url, "PROPFIND", {"Depth": "1"})
    assert resp.status == 207


@pytest.mark.fleet
def test_registry_v2_identity(fleet: DevFleet) -> None:
    assert fleet.registry is not None
    resp = request(fleet.registry.url + "/v2/")
    assert resp.status == 200
    assert resp.getheader("Docker-Distribution-Api-Version") == "registry/2.0"


# --- factories: misconfigured and killed parts ------------------------------------------------


@pytest.mark.fleet
def test_webdav_without_dav_ext_answers_405(webdav_factory) -> None:  # type: ignore[no-untyped-def]
    dav: ServiceHandle = webdav_factory(dav_ext=False)
    assert request(dav.url, "PROPFIND", {"Depth": "1"}).status == 405


@pytest.mark.fleet
def test_registry_with_htpasswd_answers_401(registry_factory) -> None:  # type: ignore[no-untyped-def]
    reg: ServiceHandle = registry_factory(htpasswd=True)
    resp = request(reg.url + "/v2/")
    assert resp.status == 401
    assert resp.getheader("WWW-Authenticate", "").startswith("Basic ")
    import base64

    token = base64.b64encode(f"{reg.username}:{reg.password}".encode()).decode()
    assert request(reg.url + "/v2/", headers={"Authorization": f"Basic {token}"}).status == 200


@pytest.mark.fleet
def test_killed_engine_leaves_no_orphan_and_netns_goes(engine_factory) -> None:  # type: ignore[no-untyped-def]
    engine: EngineHandle = engine_factory(import_base=False)
    assert engine.netns and (NETNS_DIR / engine.netns).exists()
    descendants = processes.children_of(engine.pid)
    assert descendants, "dockerd should run its own containerd"
    os.kill(engine.pid, signal.SIGKILL)  # dockerd dies hard: containerd is orphaned
    wait_until(lambda: not engine.alive(), what="dockerd gone")
    assert not ping(engine.socket, timeout=1)
    engine.stop()
    for pid in descendants:
        assert not processes.alive(pid), f"orphan {pid} survived"
    assert not (NETNS_DIR / engine.netns).exists()
    assert not processes.pids_mentioning(str(engine.exec_root))
    assert not processes.mounts_under(engine.data_root, engine.run_dir)  # no bind mount left


@pytest.mark.fleet
def test_a_namespace_goes_with_every_process_left_in_it() -> None:
    """An orphan inside a namespace (as an sshd session whose sshd a test stopped) is stopped
    when the namespace is deleted, not left holding it alive under no name."""
    require("root", "netns")
    name = unique_netns_name("left")
    netns_add(name)
    try:
        left = subprocess.Popen(
            ["ip", "netns", "exec", name, "sleep", "300"], start_new_session=True
        )
        wait_until(
            lambda: str(left.pid) in subprocess.run(
                ["ip", "netns", "pids", name], capture_output=True, text=True
            ).stdout.split(),
            what="the process in the namespace",
        )  # fmt: skip
    finally:
        netns_del(name)
    try:
        assert left.wait(timeout=10) != 0  # stopped by a signal, not left sleeping
    finally:
        if left.poll() is None:  # the failure said above: stopped here, by its pid
            left.kill()
            left.wait()
    assert not (NETNS_DIR / name).exists()


# --- stop leaves nothing behind (the CLI, across processes) -----------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "devfleet", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
    )


@pytest.mark.fleet
def test_cli_up_status_down_leaves_nothing(tmp_path: Path) -> None:
    require("fleet")
    workdir = tmp_path / "fleet"
    up = _cli("up", "--dir", str(workdir))
    try:
        assert up.returncode == 0, up.stderr
        assert str(workdir / "rocmtui.toml") in up.stdout
        # `up` has returned: the fleet must keep running without it.
        fleet = DevFleet.load(workdir)
        assert fleet is not None
        pids = fleet.pids
        assert len(pids) >= 3 + 3 + 1 + 2 + 2  # dockerd+containerd x3, registry, nginx x2, fwd x2
        assert all(ping(e.socket) for e in fleet.engines)
        status = _cli("status", "--dir", str(workdir))
        assert status.returncode == 0, status.stdout + status.stderr
        sockets = [e.socket for e in fleet.engines]
        netns = fleet.netns_names
        markers = [str(workdir), *(str(e.run_dir) for e in fleet.engines)]
    finally:
        down = _cli("down", "--dir", str(workdir))
    assert down.returncode == 0, down.stderr
    assert not [p for p in pids if processes.alive(p)]
    assert not [m for m in markers if processes.pids_mentioning(m)]
    assert not [n for n in netns if (NETNS_DIR / n).exists()]
    assert not [s for s in sockets if s.exists()]
    assert not (workdir / "fleet.json").exists()
    assert not processes.mounts_under(workdir)
    from devfleet.links import _used_blocks, guard_present

    assert not guard_present() or _used_blocks()  # the guard stays only for another's links
    assert _cli("status", "--dir", str(workdir)).returncode == 1


@pytest.mark.fleet
def test_port_forward_reaches_host_loopback_from_netns(tmp_path: Path) -> None:
    require("netns", "busybox")
    import http.server
    import threading

    (tmp_path / "hello.txt").write_text("hello from the host namespace\n")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(tmp_path), **kwargs)  # type: ignore[arg-type]

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    netns = unique_netns_name("fwd")
    netns_add(netns)
    inner = processes.free_port()  # a different port inside, to show the mapping
    try:
        fwd = start_port_forward(netns, inner, "127.0.0.1", server.server_address[1])
        try:
            fetch = [
                "nsenter", f"--net={NETNS_DIR / netns}", "busybox", "wget", "-q", "-O", "-",
                f"http://127.0.0.1:{inner}/hello.txt",
            ]  # fmt: skip
            out = subprocess.run(fetch, capture_output=True, text=True, timeout=30)
            assert out.stdout == "hello from the host namespace\n", out.stderr
        finally:
            fwd.stop()
        assert not fwd.alive()
    finally:
        netns_del(netns)
        server.shutdown()
        server.server_close()
    assert not (NETNS_DIR / netns).exists()


# --- hostile servers --------------------------------------------------------------------------


def _never_answers(sock: socket.socket) -> None:
    sock.settimeout(0.5)
    sock.sendall(b"GET /_ping HTTP/1.1\r\nHost: x\r\n\r\n")
    with pytest.raises(TimeoutError):
        sock.recv(1)


def test_hung_unix_socket_accepts_and_never_answers(hung_unix_socket: HungUnixSocket) -> None:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(hung_unix_socket.path))
        _never_answers(s)
    assert hung_unix_socket.accepted == 1
    assert not ping(hung_unix_socket.path, timeout=0.5)


def test_hung_tcp_listener_accepts_and_never_answers(hung_tcp_listener: HungTcpListener) -> None:
    with socket.create_connection(("127.0.0.1", hung_tcp_listener.port), timeout=2) as s:
        _never_answers(s)


def test_drip_server_never_finishes_headers(drip_server: DripServer) -> None:
    got = b""
    with socket.create_connection(("127.0.0.1", drip_server.port), timeout=2) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            got += s.recv(100)  # each read returns almost at once with one byte
    assert got and b"HTTP/1.1 200 OK\r\n".startswith(got[:17])  # a status line, byte by byte
    assert b"\r\n\r\n" not in got  # the header never ends: a client waiting for it is held


def test_hostile_servers_stop_cleanly() -> None:
    servers = [HungUnixSocket(), HungTcpListener(), DripServer(mode="body")]
    for server in servers:
        server.stop()
    assert not servers[0].path.exists()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", servers[1].port), timeout=1).close()


# --- the isolation and require helpers --------------------------------------------------------


def test_environment_is_isolated(tmp_path_factory: pytest.TempPathFactory) -> None:
    base = str(tmp_path_factory.getbasetemp())
    for var in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        assert os.environ[var].startswith(base), var
    assert "DOCKER_CONFIG" in os.environ
    for var in ("ROCMTUI_CONFIG", "ROCMTUI_STATE_DIR", "DOCKER_HOST"):
        assert var not in os.environ


def test_require_skips_or_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(realparts._CHECKS, "absent-part", lambda: "not installed")
    realparts.missing.cache_clear()
    monkeypatch.delenv("ROCMTUI_REQUIRE_REAL", raising=False)
    with pytest.raises(pytest.skip.Exception):
        require("absent-part")
    monkeypatch.setenv("ROCMTUI_REQUIRE_REAL", "1")
    with pytest.raises(pytest.fail.Exception):
        require("absent-part")
    realparts.missing.cache_clear()
    with pytest.raises(ValueError):
        realparts.missing("no-such-part")
    # a part of the real fleet asked for by a test without the `fleet` marker (this one): a
    # failure, available or not
    with pytest.raises(pytest.fail.Exception, match=r"mark it @pytest\.mark\.fleet"):
        require("dockerd")


@pytest.mark.fleet
def test_reap_stops_parts_of_a_session_killed_hard(tmp_path: Path) -> None:
    require("dockerd", "netns", "docker-registry")
    ledgers = tmp_path / "ledgers"
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from devfleet import use_ledger, start_engine, start_registry\n"
        f"use_ledger(Path({str(ledgers)!r}))\n"
        f"e = start_engine(Path({str(tmp_path)!r}), 'victim', True, import_base_image=False)\n"
        f"r = start_registry(Path({str(tmp_path / 'reg')!r}))\n"
        "print(e.pid, e.netns, r.pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert out.returncode == -signal.SIGKILL, out.stderr
    engine_pid, netns, registry_pid = out.stdout.split()
    # orphaned, running
    assert processes.alive(int(engine_pid)) and processes.alive(int(registry_pid))
    assert reap(ledgers) == 2
    assert not processes.alive(int(engine_pid)) and not processes.alive(int(registry_pid))
    assert not (NETNS_DIR / netns).exists()
    assert not list(ledgers.glob("*.json"))
    assert not processes.mounts_under(tmp_path)


@pytest.mark.fleet
def test_stop_during_a_build_leaves_no_process(engine_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    require("docker-buildx")
    engine: EngineHandle = engine_factory()
    marker = f"devfleet-{uuid.uuid4().hex[:8]}"
    (tmp_path / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nRUN echo {marker} && sleep 300\n")
    env = {**os.environ, "DOCKER_HOST": engine.docker_host}
    client = subprocess.Popen(
        ["docker", "buildx", "build", "--progress=plain", "."],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        # The RUN step's `sleep 300` runs under runc, below dockerd.
        wait_until(
            lambda: [p for p in processes.pids_mentioning("sleep 300") if p in engine.pids],
            timeout=120,
            what="RUN step running",
        )
        tree = engine.pids
        engine.stop()
        assert not [p for p in tree if processes.alive(p)]
        assert not processes.pids_mentioning(str(engine.exec_root))
        assert not processes.pids_mentioning(str(engine.data_root))
    finally:
        client.kill()
        client.wait()


@pytest.mark.fleet
def test_a_node_whose_namespace_is_gone_is_not_reached_through_the_default_route(
    fleet: DevFleet,
) -> None:
    """While links exist the pool is a blackhole on the host: an address of it no link holds
    (a node whose namespace was deleted under a console still probing it) fails at once
    instead of leaving the machine by the default route."""
    require("fleet")
    from devfleet.links import BLOCK_PREFIX, POOL, _used_blocks, guard_present

    assert fleet.remotes, "the session fleet has remote nodes"
    assert guard_present()
    used = _used_blocks()
    free = next(i for i in range(1, 1 << (BLOCK_PREFIX - POOL.prefixlen)) if i not in used)
    stray = POOL.network_address + (free << (32 - BLOCK_PREFIX)) + 2  # a node's address there
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(5.0)
    try:
        with pytest.raises(OSError) as refused:
            sock.connect((str(stray), 22))
    finally:
        sock.close()
    assert not isinstance(refused.value, TimeoutError)  # refused by the route, not sent
