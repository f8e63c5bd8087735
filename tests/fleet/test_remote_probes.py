"""Remote nodes probed on real hosts: the session fleet's snoc-think (sshd in its namespace) and
snoc-gaming (dockerd with mutual TLS), each behind a veth link of its own, and a few sshd of
these tests' own for the broken cases (sshd down, docker missing, no engine).

ssh reads ~/.ssh of the passwd entry's home, never $HOME, so nothing here relies on a home
folder: every ssh these tests cause is given the fleet's (or the test's own) ssh config through
the fleet file's `ssh_config` (rocmtui passes it as `ssh -F`). The real home is never written
(checked at the end of the module). Black holes are the node's veth taken down (no reset, no
netem); every test that takes a link down brings it back in `finally`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devfleet import DevFleet, processes
from devfleet.sshhost import SshHostHandle, start_sshd
from devfleet.tls import TestCA
from rocmtui.core.config.fleetfile import NodeConfig, parse_config
from rocmtui.core.probes import NodeProber
from rocmtui.core.states import NodeState
from tests.support.realparts import require

# one worker starts the broken hosts once for the module (--dist loadgroup)
pytestmark = [pytest.mark.fleet, pytest.mark.xdist_group("remote_probes")]
DEADLINE = 2.0
MARGIN = 1.5  # scheduling slack on a loaded 2-core machine; never a speed assertion
REAL_SSH_DIR = Path(os.path.expanduser("~root")) / ".ssh"


def ssh_alias(name: str, address: str, port: int, key: Path, known_hosts: Path) -> str:
    """One `Host` block of an ssh config."""
    return (
        f"\nHost {name}\n  HostName {address}\n  Port {port}\n  User ci\n  IdentityFile {key}\n"
        f"  IdentitiesOnly yes\n  IdentityAgent none\n  UserKnownHostsFile {known_hosts}\n"
        "  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n"
    )


def fleet_toml(
    path: Path, nodes: list[dict[str, str]], ssh_config: Path | None = None, deadline: float = 3
) -> Path:
    """A fleet file of these nodes (registry and WebDAV left at their unreachable defaults)."""
    lines = [f"ssh_config = {json.dumps(str(ssh_config))}"] if ssh_config else []
    lines.append(f"probe_deadline_seconds = {deadline}")
    for node in nodes:
        lines.append("[[nodes]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in node.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def expired_tls_listener(fleet: DevFleet, tmp_path: Path) -> Iterator[str]:
    """A TLS listener on loopback whose server certificate (from the fleet's own CA) expired in
    2020: `openssl s_server`, not a dockerd, since the handshake fails before any engine would
    answer. Yields its `tcp://` address; stopped by pid."""
    require("fleet")
    cert = fleet.ca.server(tmp_path / "expired-server", "localhost", ("127.0.0.1",), expired=True)
    port = processes.free_port()
    log = tmp_path / "s_server.log"
    argv = ["openssl", "s_server", "-quiet", "-accept", f"127.0.0.1:{port}"]
    argv += ["-cert", str(cert.cert), "-key", str(cert.key), "-CAfile", str(cert.ca)]
    proc = processes.spawn(argv, log)
    try:

        def accepting() -> bool:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                return True
            return False

        processes.wait_for(
            accepting,
            20,
            "openssl s_server",
            failed=lambda: processes.log_tail(log) if proc.poll() is not None else None,
        )
        yield f"tcp://127.0.0.1:{port}"
    finally:
        processes.stop_pids([(proc.pid, processes.start_time(proc.pid))], grace=5, popen=proc)


@pytest.fixture(scope="module")
def broken_hosts(
    fleet: DevFleet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, SshHostHandle]]:
    """sshd of our own in snoc-gaming's namespace: one whose PATH has no docker, one pointing
    docker at a socket that does not exist, and one started and stopped again (sshd down)."""
    require("fleet")
    gaming = fleet.remote("snoc-gaming")
    engine = fleet.engine("snoc-gaming")
    key = fleet.ssh.public_key()
    root = tmp_path_factory.mktemp("sshd")
    made: dict[str, SshHostHandle] = {}
    specs = {
        "nodocker": (2201, engine.docker_host, {"PATH": "/nonexistent"}),
        "noengine": (2202, "unix:///nonexistent/d.sock", {}),
        "down": (2203, engine.docker_host, {}),
    }
    try:
        for name, (port, host, env) in specs.items():
            made[name] = start_sshd(
                root / name, "snoc-gaming", gaming.link.netns, gaming.address, host, key,
                port=port, extra_env=env,
            )  # fmt: skip
        made["down"].stop()  # sshd down: it was there, and is no more
        yield made
    finally:
        for handle in made.values():
            handle.stop()


async def test_ssh_tls_and_context_nodes_answer_over_one_kept_connection(
    fleet: DevFleet, tmp_path: Path
) -> None:
    config = parse_config(fleet.config_path)
    think = fleet.remote("snoc-think")
    assert think.sshd is not None
    ssh = str(fleet.ssh.config)
    nodes = [
        *config.nodes,
        # the fleet's real docker contexts (`docker context create`), in its own DOCKER_CONFIG
        NodeConfig("think-ctx", context="snoc-think", ssh_config=ssh),
        NodeConfig("gaming-ctx", context="snoc-gaming"),
    ]
    prober = NodeProber(env={**os.environ, "DOCKER_CONFIG": str(fleet.docker_config)})
    logins_before = think.sshd.logins()
    try:
        for i in range(5):  # five refreshes; the first logs in (seconds on a loaded machine)
            deadline = 8.0 if i == 0 else DEADLINE
            snaps = await asyncio.gather(*(prober.probe(n, deadline=deadline) for n in nodes))
            for snap in snaps:
                assert snap.state is NodeState.OK, (snap.reason, snap)
                assert snap.engine_version and snap.api_used, snap
                assert snap.failed_step is None
        assert [s.via for s in snaps] == ["unix", "ssh", "tls", "context/ssh", "context/tls"]
        assert snaps[1].builder is not None and snaps[1].builder.status == "running"
        # snoc-think and think-ctx are one ssh target under one config: one kept connection,
        # one login, for ten probes
        assert think.sshd.logins() - logins_before == 1
        control = prober.engines.masters._dir
        assert control is not None and processes.pids_mentioning(control)
    finally:
        prober.close()
    assert not Path(control).exists()
    assert not processes.pids_mentioning(control), "an ssh master outlived its owner's close()"


async def test_history_looks_are_sessions_over_the_probes_kept_connection(
    fleet: DevFleet,
) -> None:
    """A monitor asks each node's BuildKit history (here every round, as it does while a build
    process is new on this host): on the ssh node every look is a session over the probe's
    kept connection, so five rounds of probes and looks are one login. Each look logging in
    afresh was 141 logins in bench_remote's ten minutes. A follower outlives the monitor and
    its connection: its ssh wrapper keeps a connection of its own."""
    from rocmtui.core.history.buildx import node_workdir
    from rocmtui.core.history.discover import HistoryWatch
    from rocmtui.core.paths import state_dir
    from rocmtui.core.probes.round import Probers, probe_fleet

    config = parse_config(fleet.config_path)
    think = fleet.remote("snoc-think")
    assert think.sshd is not None
    node = config.node("snoc-think")
    assert node is not None
    watch = HistoryWatch(config, interval=0, local=None, spawn=False)
    probers = Probers(nodes=NodeProber(), history=watch)
    assert watch.masters is probers.nodes.engines.masters
    logins_before = think.sshd.logins()
    try:
        for i in range(5):
            snap = await probe_fleet(config, probers=probers, deadline=8.0 if i == 0 else 4.0)
            await watch.settle(20.0)  # a look that outlived the round ends before the next
            (row,) = [n for n in snap.nodes if n.name == "snoc-think"]
            assert row.state is NodeState.OK, (row.reason, row)
        # each look answered (no note), and each went over the one kept connection
        assert watch._per_node["snoc-think"].note is None, watch._per_node["snoc-think"]
        assert watch.runs >= 5
        assert think.sshd.logins() - logins_before == 1
        control = probers.nodes.engines.masters._dir
        assert control is not None
        workdir = node_workdir(state_dir(config), node)
        assert f"ControlPath={control}/" in (workdir / "look" / "bin" / "ssh").read_text()
        assert "ControlPath=none" in (workdir / "bin" / "ssh").read_text()
    finally:
        probers.nodes.close()


def test_status_json_names_the_step_that_failed(
    fleet: DevFleet,
    broken_hosts: dict[str, SshHostHandle],
    expired_tls_listener: str,
    tmp_path: Path,
) -> None:
    """One `rocmtui status --json` round over twelve ways of not reaching an engine: each
    node `down` with the step that failed and a reason an operator can act on, in time."""
    think, gaming = fleet.remote("snoc-think"), fleet.remote("snoc-gaming")
    key, known = fleet.ssh.key, tmp_path / "known_hosts"
    lines = [fleet.ssh.known_hosts.read_text()]  # and our own sshd's keys, by [address]:port
    lines += [f"[{h.address}]:{h.port} {h.host_key}\n" for h in broken_hosts.values()]
    known.write_text("".join(lines))
    empty = tmp_path / "known_hosts.empty"
    empty.write_text("")
    assert gaming.sshd is not None and think.sshd is not None
    wrong = tmp_path / "known_hosts.wrong"  # think's address with gaming's host key
    wrong.write_text(f"{think.address} {gaming.sshd.host_key}\n")
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text(
        ssh_alias("h-unknown", think.address, 22, key, empty)
        + ssh_alias("h-changed", think.address, 22, key, wrong)
        + ssh_alias("h-refused", think.address, 22, stranger, known)
        + ssh_alias("h-down", gaming.address, 2203, key, known)
        + ssh_alias("h-nodocker", gaming.address, 2201, key, known)
        + ssh_alias("h-noengine", gaming.address, 2202, key, known)
    )
    ssh_config.chmod(0o600)
    expired = fleet.ca.client(tmp_path / "expired", "old", expired=True)
    other = TestCA(tmp_path / "other-ca").client(tmp_path / "other")
    good = fleet.tls_client
    spare = gaming.link.add_spare()

    def tls(host: str, ca: Path, cert: Path, key_file: Path) -> dict[str, str]:
        return {
            "docker_host": host,
            "tls_ca": str(ca),
            "tls_cert": str(cert),
            "tls_key": str(key_file),
        }

    nodes = {
        "unknown-key": {"docker_host": "ssh://h-unknown"},
        "changed-key": {"docker_host": "ssh://h-changed"},
        "refused-key": {"docker_host": "ssh://h-refused"},
        "sshd-down": {"docker_host": "ssh://h-down"},
        "no-docker": {"docker_host": "ssh://h-nodocker"},
        "no-engine": {"docker_host": "ssh://h-noengine"},
        "tls-wrong-name": tls(f"tcp://{spare}:2376", good.ca, good.cert, good.key),
        "tls-expired-client": tls(gaming.tls_host, good.ca, expired.cert, expired.key),
        "tls-other-ca": tls(gaming.tls_host, other.ca, good.cert, good.key),
        "tls-expired-server": tls(expired_tls_listener, good.ca, good.cert, good.key),
        "tls-not-given": {"docker_host": gaming.tls_host},
        "tls-port-closed": tls(f"tcp://{think.address}:2377", good.ca, good.cert, good.key),
    }
    # six logins at once on a shared 2-core machine can take seconds: this test is about the
    # words, so the deadline is generous (a login slower than it is reported "in progress")
    path = fleet_toml(
        tmp_path / "broken.toml", [{"name": k, **v} for k, v in nodes.items()], ssh_config, 8
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "rocmtui", "status", "--json", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    took = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    got = {n["name"]: n for n in json.loads(done.stdout)["nodes"]}
    expect = {
        "unknown-key": ("ssh", "host key", "host key of h-unknown unknown: not accepted"),
        "changed-key": ("ssh", "host key", "host key of h-changed CHANGED: not accepted"),
        "refused-key": ("ssh", "auth", "login refused by h-refused: "),
        "sshd-down": ("ssh", "connect", f"connect to host {gaming.address} port 2203: Conn"),
        "no-docker": ("ssh", "engine", "docker is not installed (or not on PATH) on h-nodocker"),
        "no-engine": ("ssh", "engine", "the engine on h-noengine is not running"),
        "tls-wrong-name": ("tls", "host key", f"the engine's TLS certificate is not for {spare}"),
        "tls-expired-client": ("tls", "auth", "the engine refused our client certificate"),
        "tls-other-ca": ("tls", "host key", "the engine's TLS certificate ("),
        "tls-expired-server": ("tls", "host key", "the engine's TLS certificate has expired"),
        "tls-not-given": ("tcp", "auth", f"{gaming.address} wants TLS"),
        "tls-port-closed": ("tls", "connect", "connection refused"),
    }
    for name, (via, step, reason) in expect.items():
        node = got[name]
        assert (node["state"], node["via"], node["failed_step"]) == ("down", via, step), {
            k: (v["failed_step"], v["reason"]) for k, v in got.items()
        }
        assert node["reason"].startswith(reason), (name, node["reason"])
    # one round, within the deadline and the process's start-up, whatever failed
    assert took < 8 + 4 + MARGIN
    assert not REAL_SSH_DIR.exists(), "ssh wrote the real home"


async def test_a_black_holed_link_is_down_within_the_deadline_and_comes_back(
    fleet: DevFleet,
) -> None:
    """The veth taken down: no reset, packets vanish. Each remote node goes `down` at its
    deadline with the step `connect` (the kernel shows our data unacknowledged), the local
    node keeps answering, and once the link is back so are they."""
    config = parse_config(fleet.config_path)
    prober = NodeProber()
    links = [fleet.remote("snoc-think").link, fleet.remote("snoc-gaming").link]
    try:
        first = {n.name: await prober.probe(n, deadline=DEADLINE) for n in config.nodes}
        assert all(s.state is NodeState.OK for s in first.values()), first
        for link in links:
            link.down()
        for _ in range(2):  # the kept connections are silent, then they are gone
            started = time.monotonic()
            snaps = await asyncio.gather(
                *(prober.probe(n, deadline=DEADLINE, previous=first[n.name]) for n in config.nodes)
            )
            assert time.monotonic() - started < DEADLINE + MARGIN
            local, think, gaming = snaps
            assert local.state is NodeState.OK
            for snap in (think, gaming):
                assert snap.state is NodeState.DOWN, snap
                assert snap.failed_step == "connect", (snap.reason, snap)
                assert snap.down_since is not None and snap.last_ok_at is not None
    finally:
        for link in links:
            link.up()
    try:
        deadline = time.monotonic() + 30
        while True:
            snaps = [await prober.probe(n, deadline=DEADLINE) for n in config.nodes]
            if all(s.state is NodeState.OK for s in snaps):
                break
            assert time.monotonic() < deadline, snaps
            await asyncio.sleep(0.5)
    finally:
        prober.close()


def test_a_name_that_does_not_resolve_is_step_dns(fleet: DevFleet, tmp_path: Path) -> None:
    """A real resolver failure, with no query leaving this host: `rocmtui status --json` runs
    in a mount namespace of its own whose /etc/resolv.conf names a loopback nameserver that
    is not there (the namespace ends with the process). An ssh node and a TLS node named by a
    host that does not resolve are both `down`, step `dns`, at once."""
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
    good = fleet.tls_client
    path = fleet_toml(
        tmp_path / "dns.toml",
        [
            {"name": "ssh-nowhere", "docker_host": "ssh://ci@snoc-nowhere.invalid"},
            {
                "name": "tls-nowhere",
                "docker_host": "tcp://snoc-nowhere.invalid:2376",
                "tls_ca": str(good.ca),
                "tls_cert": str(good.cert),
                "tls_key": str(good.key),
            },
        ],
        tmp_path / "ssh_config.empty",
    )
    (tmp_path / "ssh_config.empty").write_text("")
    status = [sys.executable, "-m", "rocmtui", "status", "--json", "--config", str(path)]
    in_own_mounts = [
        "unshare",
        "--mount",
        "sh",
        "-c",
        'mount --bind "$0" /etc/resolv.conf && exec "$@"',
    ]
    done = subprocess.run(
        [*in_own_mounts, str(resolv), *status],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    got = {n["name"]: n for n in json.loads(done.stdout)["nodes"]}
    for name, via in (("ssh-nowhere", "ssh"), ("tls-nowhere", "tls")):
        node = got[name]
        assert (node["state"], node["via"], node["failed_step"]) == ("down", via, "dns"), node
        assert "snoc-nowhere.invalid" in node["reason"], node["reason"]
    assert not REAL_SSH_DIR.exists(), "ssh wrote the real home"


async def test_a_socket_path_with_a_space_and_a_semicolon_reaches_the_engine(
    fleet: DevFleet,
) -> None:
    """ssh hands the remote command to the login shell as one line: the socket path of an
    `ssh://host/PATH` node is quoted, so a path holding a space and a `;` is one path (it
    used to split into two words and a second command, and the engine was never reached)."""
    config = parse_config(fleet.config_path)
    node = next(n for n in config.nodes if (n.docker_host or "").startswith("ssh://"))
    engine = fleet.engine(node.name)
    folder = processes.short_dir("sq")
    folder.chmod(0o755)  # the remote user walks it to the link
    odd = folder / "my engine;true x.sock"
    odd.symlink_to(engine.docker_host.removeprefix("unix://"))
    host = (node.docker_host or "").rstrip("/")
    quoted = NodeConfig("odd-path", docker_host=f"{host}{odd}", ssh_config=node.ssh_config)
    prober = NodeProber()
    try:
        snap = await prober.probe(quoted, deadline=8.0)
        assert snap.state is NodeState.OK, (snap.reason, snap.failed_step)
        assert snap.via == "ssh" and snap.engine_version, snap
    finally:
        prober.close()
        odd.unlink()
        folder.rmdir()
