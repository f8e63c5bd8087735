"""Units of the remote-node code: ssh:// URLs and contexts, the words a failure is given, the
kernel's TCP table, the fleet file's TLS and ssh keys, the job's ssh wrapper. No real part is
needed here; the same code runs against real hosts in tests/test_remote_*.py."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmtui.core import tcpstate
from rocmtui.core.config.fleetfile import ConfigError, NodeConfig, parse_config
from rocmtui.core.jobs.linkwatch import LinkEvent, LinkWatch
from rocmtui.core.jobs.remote import ssh_wrapper_text
from rocmtui.core.probes.endpoints import Endpoint, context_endpoint, resolve_endpoint
from rocmtui.core.probes.failure import (
    ReachError,
    ReachStep,
    network_failure,
    ssh_failure,
    tls_failure,
)
from rocmtui.core.probes.ssh.dial import SshTarget, parse_ssh_url, ssh_argv
from rocmtui.core.probes.ssh.master import SSHMasters

# --- ssh:// URLs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("ssh://ci@snoc-think", SshTarget("snoc-think", "ci")),
        ("ssh://snoc-think", SshTarget("snoc-think")),
        ("ssh://ci@10.0.0.7:2222", SshTarget("10.0.0.7", "ci", 2222)),
        ("ssh://ci@[fd7a::1]:22", SshTarget("fd7a::1", "ci", 22)),
        (
            "ssh://ci@snoc-think/run/user/1000/docker.sock",
            SshTarget("snoc-think", "ci", None, "/run/user/1000/docker.sock"),
        ),
    ],
)
def test_ssh_urls_parse(url: str, target: SshTarget) -> None:
    assert parse_ssh_url(url) == target


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("tcp://snoc-think:2376", "not an ssh:// URL"),
        ("ssh://", "no host"),
        ("ssh://ci:secret@snoc-think", "a password in an ssh:// URL is not used"),
        ("ssh://ci@snoc-think:99999", "bad port"),
        ("ssh://ci@snoc-think?x=1", "takes no ?query"),
    ],
)
def test_bad_ssh_urls_say_why(url: str, words: str) -> None:
    with pytest.raises(ValueError, match=words.replace("?", r"\?")):
        parse_ssh_url(url)


def test_ssh_argv_never_prompts_and_never_trusts_a_new_key() -> None:
    argv = ssh_argv("ssh://ci@snoc-think:2222/var/run/other.sock", 3.0, "/etc/fleet/ssh.conf")
    assert argv[:3] == ["ssh", "-F", "/etc/fleet/ssh.conf"]
    for option in ("BatchMode=yes", "StrictHostKeyChecking=yes", "UpdateHostKeys=no"):
        assert option in argv
    assert "ConnectTimeout=3" in argv and "ServerAliveInterval=3" in argv
    assert argv[argv.index("-l") + 1] == "ci" and argv[argv.index("-p") + 1] == "2222"
    tail = ["--", "snoc-think", "docker", "--host", "unix:///var/run/other.sock"]
    assert argv[-7:] == [*tail, "system", "dial-stdio"]


def test_the_remote_socket_path_reaches_the_remote_shell_as_one_word(tmp_path: Path) -> None:
    """ssh joins the remote command's words with spaces and the remote user's shell parses the
    line: the socket path is quoted, so a space or a `;` in it is neither a second word nor a
    second command. A real `sh -c` reads the line here, as sshd's would."""
    marker = tmp_path / "ran"
    url = f"ssh://ci@snoc-think/run/my docker.sock;touch {marker}"
    argv = ssh_argv(url, 3.0)
    remote = argv[argv.index("snoc-think") + 1 :]
    assert remote[0] == "docker"
    line = " ".join(["printf '%s\\n'", *remote[1:]])  # `docker` swapped for printf
    # in tmp_path: unquoted, the line's second command also touched `system` and `dial-stdio`
    said = subprocess.run(
        ["sh", "-c", line], capture_output=True, text=True, timeout=10, cwd=tmp_path
    )
    assert said.returncode == 0, said.stderr
    words = said.stdout.splitlines()
    assert words == ["--host", f"unix:///run/my docker.sock;touch {marker}", "system", "dial-stdio"]
    assert not marker.exists()


def test_control_path_too_long_is_refused_up_front(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    masters = SSHMasters(root=str(deep))
    with pytest.raises(ReachError, match="is over the 108-byte unix socket limit") as caught:
        masters.control_path(0)
    assert caught.value.step is ReachStep.CONFIG
    masters.close()
    assert not list(deep.iterdir())  # its folder is removed again


# --- what a failure is called ----------------------------------------------------------------

SSH_SAID = {
    "dns": "ssh: Could not resolve hostname snoc-think: Name or service not known\n",
    "unknown": (
        "No ED25519 host key is known for 10.213.0.2 and you have requested strict checking.\n"
        "Host key verification failed.\n"
    ),
    "changed": (
        "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
        "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n"
        "Host key for 10.213.0.2 has changed and you have requested strict checking.\n"
        "Host key verification failed.\n"
    ),
    "refused": "ci@10.213.0.2: Permission denied (publickey).\n",
    "down": "ssh: connect to host 10.213.0.2 port 22: Connection refused\n",
    "timeout": "ssh: connect to host 10.213.0.2 port 22: Connection timed out\n",
    "lost": "Timeout, server 10.213.0.2 not responding.\n",
    "no docker": "sh: 1: docker: not found\n",
    "engine down": (
        "failed to open the raw stream connection: dial unix /tmp/rt1/d.sock: connect: "
        "no such file or directory\n"
    ),
    "socket perms": (
        "permission denied while trying to connect to the Docker daemon socket at unix:///x\n"
    ),
}


@pytest.mark.parametrize(
    ("said", "step", "reason"),
    [
        ("dns", ReachStep.DNS, "cannot resolve ci@snoc-think"),
        ("unknown", ReachStep.HOST_KEY, "host key of ci@snoc-think unknown: not accepted"),
        ("changed", ReachStep.HOST_KEY, "host key of ci@snoc-think CHANGED: not accepted"),
        ("refused", ReachStep.AUTH, "login refused by ci@snoc-think: ci@10.213.0.2: Permission"),
        ("down", ReachStep.CONNECT, "connect to host 10.213.0.2 port 22: Connection refused"),
        ("timeout", ReachStep.CONNECT, "connect to host 10.213.0.2 port 22: Connection timed out"),
        ("lost", ReachStep.CONNECT, "Timeout, server 10.213.0.2 not responding."),
        (
            "no docker",
            ReachStep.ENGINE,
            "docker is not installed (or not on PATH) on ci@snoc-think",
        ),
        ("engine down", ReachStep.ENGINE, "the engine on ci@snoc-think is not running"),
        ("socket perms", ReachStep.ENGINE, "the ssh user on ci@snoc-think may not use its engine"),
    ],
)
def test_ssh_failures_are_named_by_step(said: str, step: ReachStep, reason: str) -> None:
    failure = ssh_failure(SSH_SAID[said], "ci@snoc-think", 255)
    assert failure.step is step
    assert failure.reason.startswith(reason), failure.reason
    assert "\n" not in failure.reason and len(failure.reason) <= 160


def test_unclassified_ssh_words_are_kept() -> None:
    failure = ssh_failure("something nobody foresaw\n", "h", 255)
    assert failure.step is None and failure.reason == "ssh: something nobody foresaw"
    assert ssh_failure("", "h", 127).step is ReachStep.ENGINE  # the remote shell: no such command


def _verify_error(message: str) -> ssl.SSLCertVerificationError:
    exc = ssl.SSLCertVerificationError(1, f"[SSL: CERTIFICATE_VERIFY_FAILED] {message}")
    exc.verify_message = message
    return exc


@pytest.mark.parametrize(
    ("exc", "step", "reason"),
    [
        (
            _verify_error("certificate has expired"),
            ReachStep.HOST_KEY,
            "the engine's TLS certificate has expired",
        ),
        (
            _verify_error("IP address mismatch, certificate is not valid for '10.213.0.3'."),
            ReachStep.HOST_KEY,
            "the engine's TLS certificate is not for 10.213.0.3",
        ),
        (
            _verify_error("unable to get local issuer certificate"),
            ReachStep.HOST_KEY,
            "the engine's TLS certificate (h) is not signed by tls_ca",
        ),
        (
            ssl.SSLError(1, "[SSL: TLSV13_ALERT_CERTIFICATE_REQUIRED] tlsv13 alert certificate "
                         "required (_ssl.c:2580)"),
            ReachStep.AUTH,
            "the engine refused our client certificate",
        ),
        (
            ssl.SSLError(1, "[SSL: SSLV3_ALERT_BAD_CERTIFICATE] sslv3 alert bad certificate"),
            ReachStep.AUTH,
            "the engine refused our client certificate",
        ),
        (
            ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)"),
            ReachStep.ENGINE,
            "h does not speak TLS there",
        ),
    ],
)  # fmt: skip
def test_tls_failures_are_named_by_step(exc: BaseException, step: ReachStep, reason: str) -> None:
    wrapped = ConnectionError("outer")
    wrapped.__cause__ = exc  # as requests wraps what urllib3 wrapped
    failure = tls_failure(wrapped, "h")
    assert failure is not None and failure.step is step
    assert failure.reason.startswith(reason), failure.reason


def test_network_failures_are_named_by_step() -> None:
    dns = network_failure(socket.gaierror(-2, "Name or service not known"), "snoc-gaming")
    assert dns is not None and dns.step is ReachStep.DNS
    assert dns.reason == "cannot resolve snoc-gaming: Name or service not known"
    refused = network_failure(ConnectionRefusedError(111, "Connection refused"), "h")
    assert refused is not None and refused.step is ReachStep.CONNECT
    assert refused.reason == "connection refused (h)"
    assert network_failure(ValueError("odd"), "h") is None


# --- how a node is reached -------------------------------------------------------------------


def _context(config_dir: Path, name: str, host: str, tls: bool = False) -> None:
    digest = hashlib.sha256(name.encode()).hexdigest()
    meta = config_dir / "contexts" / "meta" / digest
    meta.mkdir(parents=True)
    meta.joinpath("meta.json").write_text(
        json.dumps({"Name": name, "Endpoints": {"docker": {"Host": host}}})
    )
    if tls:
        folder = config_dir / "contexts" / "tls" / digest / "docker"
        folder.mkdir(parents=True)
        for file in ("ca.pem", "cert.pem", "key.pem"):
            folder.joinpath(file).write_text("x")


def test_via_words_for_every_way_of_reaching_a_node(tmp_path: Path) -> None:
    env = {"DOCKER_CONFIG": str(tmp_path)}
    _context(tmp_path, "gaming", "tcp://10.213.0.2:2376", tls=True)
    _context(tmp_path, "think", "ssh://ci@snoc-think")
    cases = {
        NodeConfig("a", docker_host="unix:///var/run/docker.sock"): "unix",
        NodeConfig("b", docker_host="ssh://ci@snoc-think", ssh_config="/c"): "ssh",
        NodeConfig("c", docker_host="tcp://h:2376", tls_ca="/ca", tls_cert="/c", tls_key="/k"): (
            "tls"
        ),
        NodeConfig("d", docker_host="tcp://h:2375"): "tcp",
        NodeConfig("e", context="gaming"): "context/tls",
        NodeConfig("f", context="think", ssh_config="/c"): "context/ssh",
    }
    for node, via in cases.items():
        endpoint = resolve_endpoint(node, env)
        assert endpoint.via == via, node
    assert resolve_endpoint(NodeConfig("f", context="think", ssh_config="/c"), env).ssh_config
    gaming = context_endpoint("gaming", env)
    assert gaming.tls and gaming.client_key and gaming.context == "gaming"
    assert Endpoint("https://h:2376", "default").via == "tls"


# --- the fleet file --------------------------------------------------------------------------


def _fleet(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(body)
    return path


def test_tls_and_ssh_keys_are_read_relative_to_the_file(tmp_path: Path) -> None:
    for name in ("ca.pem", "cert.pem", "key.pem", "ssh.conf"):
        tmp_path.joinpath(name).write_text("x")
    config = parse_config(
        _fleet(
            tmp_path,
            'ssh_config = "ssh.conf"\nlink_timeout_seconds = 30\n'
            '[[nodes]]\nname = "think"\ndocker_host = "ssh://ci@snoc-think"\n'
            '[[nodes]]\nname = "gaming"\ndocker_host = "tcp://10.0.0.2:2376"\n'
            'tls_ca = "ca.pem"\ntls_cert = "cert.pem"\ntls_key = "key.pem"\n',
        )
    )
    assert config.ssh_config == tmp_path / "ssh.conf" and config.link_timeout_seconds == 30
    think, gaming = config.nodes
    assert think.ssh_config == str(tmp_path / "ssh.conf")
    assert (gaming.tls_ca, gaming.tls_cert, gaming.tls_key) == tuple(
        str(tmp_path / n) for n in ("ca.pem", "cert.pem", "key.pem")
    )


@pytest.mark.parametrize(
    ("body", "line", "key", "words"),
    [
        (
            '[[nodes]]\nname = "g"\ndocker_host = "tcp://h:2376"\ntls_ca = "missing.pem"\n',
            4,
            "nodes.g.tls_ca",
            "no such file",
        ),
        (
            '[[nodes]]\nname = "g"\ndocker_host = "ssh://ci@h"\ntls_ca = "ca.pem"\n',
            4,
            "nodes.g.tls_ca",
            "TLS files need a tcp:// docker_host",
        ),
        (
            '[[nodes]]\nname = "g"\ndocker_host = "tcp://h:2376"\ntls_cert = "ca.pem"\n',
            1,
            "nodes.g.tls_key",
            "give tls_cert and tls_key together",
        ),
        ('ssh_config = "nope"\n[[nodes]]\nname = "g"\n', 1, "ssh_config", "no such file"),
        ('link_timeout_seconds = 1\n[[nodes]]\nname = "g"\n', 1, "link_timeout_seconds", "5"),
    ],
)
def test_bad_remote_keys_name_file_line_and_key(
    tmp_path: Path, body: str, line: int, key: str, words: str
) -> None:
    tmp_path.joinpath("ca.pem").write_text("x")
    path = _fleet(tmp_path, body)
    with pytest.raises(ConfigError) as caught:
        parse_config(path)
    assert caught.value.key == key and words in caught.value.message
    assert str(caught.value).startswith(f"{path}:{line}:") or caught.value.line is None


# --- the job's ssh wrapper -------------------------------------------------------------------


def test_the_job_ssh_wrapper_adds_the_fleet_options() -> None:
    text = ssh_wrapper_text("/usr/bin/ssh", "/srv/fleet ssh/config", 120)
    assert text.startswith("#!/bin/sh\n")
    line = text.splitlines()[-1]
    assert line.startswith("exec /usr/bin/ssh -F '/srv/fleet ssh/config' ")
    for option in (
        "BatchMode=yes",
        "StrictHostKeyChecking=yes",
        "ControlPath=none",
        "ServerAliveInterval=30",
        "ServerAliveCountMax=8",
    ):
        assert f"-o {option}" in line
    assert line.endswith('"$@"')


# --- the kernel's TCP table ------------------------------------------------------------------

TCP_TABLE = """\
  sl local rem st tx:rx tr:when retrnsmt uid timeout inode (kernel's own spacing)
   0: 0100007F:9C40 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 111 1 0 100 0 0 10 0
   1: 01D5D50A:C350 02D5D50A:0016 01 00000068:00000000 01:00000144 00000004 0 0 222 2 0 100 0 0 10 0
   2: 01D5D50A:C351 02D5D50A:0016 01 00000000:00000000 02:000AF9CB 00000000 0 0 333 2 0 100 0 0 10 0
   3: 01D5D50A:C352 06D5D50A:0976 02 00000001:00000000 01:00000100 00000002 0 0 444 2 0 100 0 0 10 0
   4: 01D5D50A:C353 02D5D50A:0016 06 00000000:00000000 03:000014F7 00000000 0 0 555 2 0 100 0 0 10 0
bad line
"""


def test_tcp_table_rows_are_read() -> None:
    rows = {r.inode: r for r in tcpstate.parse_table(TCP_TABLE)}
    assert set(rows) == {111, 222, 333, 444, 555}
    stuck = rows[222]
    assert stuck.remote == ("10.213.213.2", 22) and stuck.state == 1
    assert stuck.unacked == 0x68 and stuck.retransmits == 4
    assert rows[444].state == tcpstate.SYN_SENT and rows[444].remote == ("10.213.213.6", 2422)


def test_link_view_of_real_sockets_with_the_kernel_state_given(tmp_path: Path) -> None:
    """Real sockets of this process (their inodes), the kernel's view of them given as rows."""
    server = socket.create_server(("127.0.0.1", 0))
    a, b = socket.socket(), socket.socket()
    a.connect(server.getsockname())
    b.connect(server.getsockname())
    try:
        inode_a, inode_b = (Path(f"/proc/self/fd/{s.fileno()}").readlink() for s in (a, b))
        ia, ib = (int(str(i)[8:-1]) for i in (inode_a, inode_b))

        def row(inode: int, remote: str, state: int, unacked: int, retrans: int) -> object:
            return tcpstate.TcpSocket((remote, 22), state, unacked, retrans, 0, inode)

        me = [__import__("os").getpid()]
        answering = [row(ia, "10.213.0.2", 1, 0, 0), row(ib, "10.213.0.2", 1, 0, 0)]
        view = tcpstate.link_view(me, table=answering)  # type: ignore[arg-type]
        assert view is not None and not view.down and view.sockets == 2
        one_stuck = [row(ia, "10.213.0.2", 1, 0x68, 3), row(ib, "10.213.0.2", 1, 0, 0)]
        view = tcpstate.link_view(me, table=one_stuck)  # type: ignore[arg-type]
        assert view is not None and view.down and view.retransmits == 3
        # one retransmission is a hiccup for the supervisor, evidence enough for a late probe
        once = [row(ia, "10.213.0.2", 1, 0x68, 1)]
        assert not tcpstate.link_view(me, min_retransmits=2, table=once).down  # type: ignore[arg-type,union-attr]
        assert tcpstate.link_view(me, min_retransmits=1, table=once).down  # type: ignore[arg-type,union-attr]
        connecting = [row(ia, "10.213.0.2", tcpstate.SYN_SENT, 1, 0)]
        assert tcpstate.link_view(me, table=connecting).down  # type: ignore[arg-type,union-attr]
        loopback_only = [row(ia, "127.0.0.1", 1, 0x68, 5)]
        assert tcpstate.link_view(me, table=loopback_only) is None  # type: ignore[arg-type]
        other = [row(ia, "10.213.0.9", 1, 0x68, 5)]
        assert tcpstate.link_view(me, remote=("10.213.0.2", 22), table=other) is None  # type: ignore[arg-type]
    finally:
        for s in (a, b, server):
            s.close()


def test_link_watch_down_back_and_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    views: list[tcpstate.LinkView | None] = []
    monkeypatch.setattr(tcpstate, "link_view", lambda *a, **k: views.pop(0))
    watch = LinkWatch("snoc-think", timeout=10)
    down, up = tcpstate.LinkView(1, 1, 3), tcpstate.LinkView(1, 0, 0)
    views += [up, down, down, up]
    assert watch.check([1], now=100) is None
    assert watch.check([1], now=102) is LinkEvent.DOWN and watch.down_since == 102
    assert watch.check([1], now=104) is None
    assert watch.evidence(now=104).startswith("link to snoc-think down since ")
    assert watch.check([1], now=106) is LinkEvent.BACK and watch.down_since is None
    views += [down, None, None]  # no connection at all meanwhile: the clock keeps running
    assert watch.check([1], now=200) is LinkEvent.DOWN
    assert watch.check([1], now=205) is None
    assert watch.check([1], now=210) is LinkEvent.GIVE_UP and watch.gave_up
    assert watch.check([1], now=230) is None  # decided: nothing changes it any more
    assert watch.evidence(now=230).endswith("(10s)")


@pytest.fixture
def short_root() -> Iterator[Path]:
    """A folder with a short path: a control socket in it must leave room for ssh's suffix
    within a unix socket's 108 bytes (a pytest-xdist worker's tmp_path leaves none)."""
    root = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_control_folders_of_owners_that_are_gone_are_reaped(short_root: Path) -> None:
    """A prober killed before its close() leaves its folder: the next one removes it, and
    leaves alone those of live owners (this process) and anything not its own."""
    tmp_path = short_root
    dead = tmp_path / "rt-ssh-4194301-abcd"
    dead.mkdir(mode=0o700)  # as mkdtemp makes them
    (dead / "0.log").write_text("")
    alive = tmp_path / f"rt-ssh-{os.getpid()}-efgh"
    alive.mkdir()
    other = tmp_path / "unrelated"
    other.mkdir()
    masters = SSHMasters(root=str(tmp_path))
    try:
        mine = Path(masters.control_path(0)).parent
        assert mine.name.startswith(f"rt-ssh-{os.getpid()}-")
        assert not dead.exists() and alive.exists() and other.exists()
    finally:
        masters.close()
    assert not mine.exists()
