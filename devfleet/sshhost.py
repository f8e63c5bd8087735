"""A real ssh host per remote node: `sshd` inside the node's network namespace.

What a node needs on the real fleet is docker and sshd, and that is what each dev node gets:

* `sshd -D -e -f CONFIG` runs inside the node's network namespace (so it is reached only over
  the node's veth link, like a host on the mesh), listening on the node's address, with a host
  key generated for it, public-key login only, for one test user (`ci`), and
  `SetEnv DOCKER_HOST=unix://<the node's socket>` so `ssh ci@NODE docker system dial-stdio`
  reaches that node's engine. `LogLevel VERBOSE`: every login is one `Accepted publickey` line
  in its log, which is how the bench counts logins.
* The test user exists only for this sshd: it runs in a private mount namespace where
  `/etc/passwd` and `/etc/group` are copies with `ci` added (uid and gid `CI_UID`, a home folder
  in the fleet's folder), and `/run` is a fresh tmpfs holding the `/run/sshd` folder sshd
  insists on. Nothing of the host's is changed; the mounts go when sshd exits. The engine's
  socket belongs to group `CI_UID` (dockerd `--group`), so `ci` uses docker without root.
* sshd reads `authorized_keys` as the user, so that file and the user's home live in a short
  folder of their own under /tmp that `ci` can reach (a test's temporary folder is private to
  root); `StrictModes no`, since /tmp above them is world-writable, which StrictModes refuses.

The client side (`SshClientFiles`): one key pair, a `known_hosts` holding each host key, an ssh
config naming each node by its fleet name (`Host snoc-think` -> `HostName 10.213.x.2`, `User ci`,
the key, that known_hosts, `StrictHostKeyChecking yes`), and `bin/ssh`, a wrapper that adds
`-F <that config>` for people running `docker -H ssh://ci@snoc-think` by hand. Nothing is
written to the real home: OpenSSH reads the passwd entry's home, not $HOME, so rocmtui is given
the config through the fleet file's `ssh_config` (`ssh -F`).

`python -m devfleet.sshhost exec --passwd P --group G -- SSHD ARGS` is the small
helper that sets those mounts up (it already runs under `unshare --mount`) and execs sshd.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devfleet import ledger, processes
from devfleet.processes import FleetError

SSHD = "/usr/sbin/sshd"  # sshd re-executes itself and refuses a relative path
CI_USER = "ci"
CI_UID = 4242
SSHD_START_TIMEOUT = 15.0


def _keygen(path: Path, comment: str) -> str:
    """An ed25519 key pair at `path` (no passphrase); returns the public key line."""
    if not path.is_file():
        done = subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise FleetError(f"ssh-keygen {path}: {done.stderr.strip()}")
    return path.with_suffix(".pub").read_text().strip()


@dataclass
class SshClientFiles:
    """The client's key, known_hosts, ssh config and `bin/ssh` wrapper, under `root`."""

    root: Path

    @property
    def key(self) -> Path:
        """The private key every node accepts."""
        return self.root / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        """Every node's host key, by address."""
        return self.root / "known_hosts"

    @property
    def config(self) -> Path:
        """The ssh client config: one `Host` block per node."""
        return self.root / "config"

    @property
    def bin(self) -> Path:
        """A folder whose `ssh` adds `-F config` (put it first on PATH for docker by hand)."""
        return self.root / "bin"

    def public_key(self) -> str:
        """The client's public key line (created on first use)."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        return _keygen(self.key, "rocmtui dev fleet client")

    def write(self, hosts: list[SshHostHandle]) -> None:
        """known_hosts, config and the wrapper for these hosts."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        known = []
        blocks = [
            "# The dev fleet's ssh hosts (devfleet): rocmtui reads this file through the",
            "# fleet file's ssh_config; `bin/ssh` adds it for docker run by hand.",
        ]
        for h in hosts:
            where = h.address if h.port == 22 else f"[{h.address}]:{h.port}"
            known.append(f"{where} {h.host_key}")
            blocks += [
                "",
                f"Host {h.node}",
                f"  HostName {h.address}",
                f"  Port {h.port}",
                f"  User {h.user}",
                f"  IdentityFile {self.key}",
                "  IdentitiesOnly yes",
                "  IdentityAgent none",
                f"  UserKnownHostsFile {self.known_hosts}",
                "  GlobalKnownHostsFile /dev/null",
                "  StrictHostKeyChecking yes",
            ]
        self.known_hosts.write_text("\n".join(known) + "\n")
        self.config.write_text("\n".join(blocks) + "\n")
        self.config.chmod(0o600)  # ssh refuses a config others may write
        self.bin.mkdir(exist_ok=True)
        wrapper = self.bin / "ssh"
        real = shutil.which("ssh", path="/usr/bin:/bin:/usr/local/bin") or "/usr/bin/ssh"
        wrapper.write_text(f'#!/bin/sh\nexec {real} -F "{self.config}" "$@"\n')
        wrapper.chmod(0o755)


@dataclass
class SshHostHandle:
    """A running sshd of one node. `stop()` ends it (its mounts go with it)."""

    node: str
    netns: str
    address: str
    port: int
    user: str
    host_key: str  # the public key line, as known_hosts holds it
    pid: int
    start_time: int | None
    workdir: Path
    log: Path
    runtime: Path  # authorized_keys and the user's home: a folder `ci` can reach
    _popen: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def pids(self) -> list[int]:
        """sshd and its live children (sessions)."""
        return [self.pid, *processes.children_of(self.pid)] if self.alive() else []

    def alive(self) -> bool:
        """Whether this sshd still runs."""
        return processes.alive(self.pid, self.start_time)

    def logins(self) -> int:
        """How many logins sshd has accepted so far (its `Accepted publickey` log lines)."""
        try:
            return self.log.read_text(errors="replace").count("Accepted publickey for ")
        except OSError:
            return 0

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM sshd (and its sessions), SIGKILL after `grace`."""
        try:
            processes.stop_pids(
                [(self.pid, self.start_time)],
                grace=grace,
                extra_markers=[str(self.workdir / "sshd_config")],
                popen=self._popen,
            )
        finally:
            ledger.forget(self)
            shutil.rmtree(self.runtime, ignore_errors=True)

    def to_record(self) -> dict[str, Any]:
        """A JSON-able record for fleet.json and the ledger."""
        keys = ("node", "netns", "address", "port", "user", "host_key", "pid", "start_time")
        rec: dict[str, Any] = {k: getattr(self, k) for k in keys}
        rec.update(workdir=str(self.workdir), log=str(self.log), runtime=str(self.runtime))
        return rec

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> SshHostHandle:
        """The handle a `to_record` dict describes."""
        rec = dict(rec)
        rec.setdefault("runtime", rec["workdir"])  # records written before it was kept
        for key in ("workdir", "log", "runtime"):
            rec[key] = Path(rec[key])
        return cls(**rec)


def _user_files(workdir: Path, runtime: Path, user: str, uid: int) -> tuple[Path, Path, Path]:
    """Copies of /etc/passwd and /etc/group with the test user added, and its home."""
    home = runtime / "home"
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, uid, uid)
    home.chmod(0o755)
    passwd, group = workdir / "passwd", workdir / "group"
    lines = [
        ln for ln in Path("/etc/passwd").read_text().splitlines() if not ln.startswith(f"{user}:")
    ]
    passwd.write_text(
        "\n".join([*lines, f"{user}:*:{uid}:{uid}:rocmtui test:{home}:/bin/sh"]) + "\n"
    )
    glines = [
        ln for ln in Path("/etc/group").read_text().splitlines() if not ln.startswith(f"{user}:")
    ]
    group.write_text("\n".join([*glines, f"{user}:x:{uid}:"]) + "\n")
    return passwd, group, home


def start_sshd(
    workdir: Path,
    node: str,
    netns: str,
    address: str,
    docker_host: str,
    authorized_key: str,
    *,
    port: int = 22,
    user: str = CI_USER,
    uid: int = CI_UID,
    extra_env: dict[str, str] | None = None,
    timeout: float = SSHD_START_TIMEOUT,
) -> SshHostHandle:
    """Run sshd for `node` in `netns` on `address`:`port`; returns once it listens.

    `extra_env` adds `SetEnv` pairs (a test sets `PATH=/nonexistent`: docker missing there).
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    host_key_path = workdir / "ssh_host_ed25519_key"
    host_key = " ".join(_keygen(host_key_path, f"{node} host key").split()[:2])
    runtime = processes.short_dir("rts")
    runtime.chmod(0o755)
    authorized = runtime / "authorized_keys"
    authorized.write_text(authorized_key.strip() + "\n")
    authorized.chmod(0o644)
    passwd, group, _ = _user_files(workdir, runtime, user, uid)
    env = {"DOCKER_HOST": docker_host, **(extra_env or {})}
    config = workdir / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"ListenAddress {address}:{port}",
                f"HostKey {host_key_path}",
                "PidFile none",
                f"AuthorizedKeysFile {authorized}",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                f"AllowUsers {user}",
                "LogLevel VERBOSE",
                "SetEnv " + " ".join(f"{k}={v}" for k, v in env.items()),
                "",
            ]
        )
    )
    pkg_root = str(Path(__file__).resolve().parents[1])  # devfleet is not installed
    child_env = processes.child_env({"PYTHONPATH": pkg_root})
    argv = [
        "nsenter", f"--net=/var/run/netns/{netns}", "--",
        "unshare", "--mount", "--propagation", "private", "--",
        sys.executable, "-m", "devfleet.sshhost", "exec",
        "--passwd", str(passwd), "--group", str(group), "--",
        SSHD, "-D", "-e", "-f", str(config),
    ]  # fmt: skip
    log = workdir / "sshd.log"
    log.unlink(missing_ok=True)  # logins are counted from this run's log
    popen = processes.spawn(argv, log, env=child_env)
    handle = SshHostHandle(
        node, netns, address, port, user, host_key,
        popen.pid, processes.start_time(popen.pid), workdir, log, runtime, popen,
    )  # fmt: skip
    ledger.remember(handle, "sshd")

    def listening() -> bool:
        try:
            return "Server listening on" in log.read_text(errors="replace")
        except OSError:
            return False

    def died() -> str | None:
        if popen.poll() is not None:
            return f"sshd exited {popen.returncode}: {processes.log_tail(log)}"
        return None

    try:
        processes.wait_for(listening, timeout, f"sshd of {node}", interval=0.02, failed=died)
    except BaseException:
        handle.stop(grace=2.0)
        raise
    return handle


def _exec(args: argparse.Namespace) -> int:
    """In a fresh mount namespace: the user files over /etc's, a tmpfs /run, then sshd."""

    def run(*argv: str) -> None:
        subprocess.run(list(argv), check=True)

    run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/run")
    os.mkdir("/run/sshd", 0o755)
    run("mount", "--bind", args.passwd, "/etc/passwd")
    run("mount", "--bind", args.group, "/etc/group")
    os.execv(args.command[0], args.command)


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m devfleet.sshhost")
    sub = ap.add_subparsers(dest="what", required=True)
    ex = sub.add_parser("exec")
    ex.add_argument("--passwd", required=True)
    ex.add_argument("--group", required=True)
    ex.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    return _exec(args)


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["CI_UID", "CI_USER", "SshClientFiles", "SshHostHandle", "start_sshd"]
