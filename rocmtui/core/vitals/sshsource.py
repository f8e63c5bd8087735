"""The ssh source: `procfs.SCRIPT` run on the node through its kept ssh connection.

One session a refresh over the ControlMaster the node probes already hold (`SSHMasters`):
never a login of its own (sshd logs each; the bench counts them). The script is fixed text
passed as one quoted word, and the data root its one quoted argument, so nothing from outside
is ever interpreted by the remote shell. The session runs in a process group of its own, is
killed at the deadline (a link that drops mid-read ends it there), and its output is capped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import time

from rocmtui.core.probes.failure import ReachError
from rocmtui.core.probes.ssh.dial import MasterPool, SshTarget, base_argv, parse_ssh_url
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_seconds
from rocmtui.core.vitals import procfs
from rocmtui.core.vitals.reading import Reading

MAX_OUTPUT = 4 * 1024 * 1024


class SshVitalsError(Exception):
    """The ssh read failed; `str()` is the one-line reason, its source named."""


def remote_command(data_root: str | None, socket: str | None = None) -> str:
    """The one remote command line: `sh -c SCRIPT vitals DATA_ROOT SOCKET`, every word
    quoted."""
    words = ("sh", "-c", procfs.SCRIPT, "vitals", data_root or "", socket or "")
    return " ".join(shlex.quote(word) for word in words)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> bytes:
    """Everything up to EOF or `cap` bytes (`read(n)` alone returns the first chunk)."""
    out = bytearray()
    while len(out) < cap:
        chunk = await stream.read(min(65536, cap - len(out)))
        if not chunk:
            break
        out += chunk
    return bytes(out)


class SshSource:
    """Reads nodes' /proc over their kept ssh connections (`masters`: the probes' pool)."""

    def __init__(self, masters: MasterPool) -> None:
        self.masters = masters
        self.sessions = 0  # sessions run (a bench counts them against logins)

    async def read(
        self, url: str, ssh_config: str | None, data_root: str | None, deadline: float
    ) -> Reading:
        """A reading of the node behind ssh:// `url` within `deadline` s (raises
        SshVitalsError)."""
        started = time.monotonic()
        try:
            target = parse_ssh_url(url)
        except ValueError as exc:
            raise SshVitalsError(one_line(f"ssh vitals: {exc}")) from None
        loop = asyncio.get_running_loop()
        wait = max(0.1, deadline * 0.7)
        try:
            control, _ = await asyncio.wait_for(
                loop.run_in_executor(None, self.masters.ensure, target, ssh_config, wait),
                deadline,
            )
        except TimeoutError:
            raise SshVitalsError(
                f"ssh vitals: no kept connection within {fmt_seconds(deadline)}"
            ) from None
        except ReachError as exc:
            raise SshVitalsError(one_line(f"ssh vitals: {exc.reason}")) from None
        left = deadline - (time.monotonic() - started)
        text = await self._run(target, ssh_config, control, data_root, left)
        return procfs.parse(text, data_root, target.socket_path)

    async def _run(
        self,
        target: SshTarget,
        ssh_config: str | None,
        control: str,
        data_root: str | None,
        timeout: float,
    ) -> str:
        if timeout <= 0:
            raise SshVitalsError("ssh vitals: no time left in the round")
        argv = base_argv(target, ssh_config, timeout)
        argv += ["-o", "ControlMaster=no", "-o", f"ControlPath={control}"]
        argv += ["--", target.host, remote_command(data_root, target.socket_path)]
        self.sessions += 1
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise SshVitalsError(one_line(f"ssh vitals: cannot run ssh: {exc.strerror}")) from None
        assert proc.stdout is not None and proc.stderr is not None
        try:
            out = await asyncio.wait_for(_read_capped(proc.stdout, MAX_OUTPUT), timeout)
            err = await asyncio.wait_for(proc.stderr.read(8192), 0.5)
            code = await asyncio.wait_for(proc.wait(), 0.5)
        except TimeoutError:
            raise SshVitalsError(
                f"ssh vitals: no complete answer in {fmt_seconds(timeout)} (link hung?)"
            ) from None
        finally:
            if proc.returncode is None:
                _kill(proc.pid)  # SIGKILL to its group: gone at once, reaped by asyncio's watcher
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(proc.wait(), 0.1)
        text = out.decode("utf-8", "replace")
        if "@end" not in text:
            said = err.decode("utf-8", "replace").strip().splitlines()
            why = said[-1] if said else f"exit code {code}"
            raise SshVitalsError(one_line(f"ssh vitals: answer cut short: {why}"))
        return text
