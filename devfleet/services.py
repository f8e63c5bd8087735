"""The registry (CNCF distribution, same /v2/ API as Zot) and nginx WebDAV of the dev fleet.

Both listen on 127.0.0.1 on a port chosen free at start (retried if another run takes it first)
and keep config, data, logs and temp files in their own directory.
"""

from __future__ import annotations

import contextlib
import http.client
import secrets
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devfleet import ledger, processes
from devfleet.processes import FleetError

SERVICE_START_TIMEOUT = 30.0
DAV_EXT_MODULE = Path("/usr/lib/nginx/modules/ngx_http_dav_ext_module.so")
TEST_USER = "ci"


@dataclass
class ServiceHandle:
    """A running registry or WebDAV server. `stop()` ends it (and nginx's workers)."""

    kind: str  # "registry" or "webdav"
    url: str  # http://127.0.0.1:PORT (WebDAV: with a trailing /)
    host: str
    port: int
    pid: int
    start_time: int | None
    workdir: Path  # config, data and logs of this instance
    log: Path
    username: str | None = None  # set when the registry requires htpasswd auth
    password: str | None = None
    _popen: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def pids(self) -> list[int]:
        """The main pid plus live descendants (nginx workers)."""
        return [self.pid, *processes.children_of(self.pid)] if self.alive() else []

    @property
    def address(self) -> str:
        """`127.0.0.1:PORT`, the form image references use."""
        return f"{self.host}:{self.port}"

    def alive(self) -> bool:
        """Whether the main process still runs."""
        return processes.alive(self.pid, self.start_time)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM, SIGKILL after `grace`, and any worker left over."""
        try:
            processes.stop_pids(
                [(self.pid, self.start_time)],
                grace=grace,
                extra_markers=[str(self.workdir / "config.yml"), str(self.workdir / "nginx.conf")],
                popen=self._popen,
            )
        finally:
            ledger.forget(self)

    def to_record(self) -> dict[str, Any]:
        """A JSON-able record for fleet.json."""
        rec = {k: getattr(self, k) for k in ("kind", "url", "host", "port", "pid", "start_time")}
        rec.update(workdir=str(self.workdir), log=str(self.log), username=self.username)
        rec["password"] = self.password  # test credentials only, kept beside the fleet
        return rec

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> ServiceHandle:
        """The handle described by a `to_record` dict."""
        rec = dict(rec)
        rec["workdir"], rec["log"] = Path(rec["workdir"]), Path(rec["log"])
        return cls(**rec)


def http_status(host: str, port: int, method: str = "GET", path: str = "/") -> int | None:
    """Status of one plain HTTP request, None when nothing answers."""
    conn = http.client.HTTPConnection(host, port, timeout=2.0)
    try:
        conn.request(method, path, headers={"Depth": "0"} if method == "PROPFIND" else {})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except OSError:
        return None
    finally:
        conn.close()


def _start_with_free_port(
    kind: str,
    workdir: Path,
    write_config: Any,
    argv_for: Any,
    ready_path: str,
    attempts: int = 5,
    env: dict[str, str] | None = None,
) -> ServiceHandle:
    """Spawn a server on a free port, retrying with another port if it dies at start (the port
    was taken by a parallel run between our probe and its bind)."""
    last = ""
    for _ in range(attempts):
        port = processes.free_port()
        write_config(port)
        log = workdir / f"{kind}.log"
        popen = processes.spawn(argv_for(), log, env=env or processes.child_env(), cwd=workdir)
        url = f"http://127.0.0.1:{port}" + ("/" if kind == "webdav" else "")
        handle = ServiceHandle(
            kind=kind,
            url=url,
            host="127.0.0.1",
            port=port,
            pid=popen.pid,
            start_time=processes.start_time(popen.pid),
            workdir=workdir,
            log=log,
            _popen=popen,
        )
        ledger.remember(handle, "service")

        def died(p: subprocess.Popen[bytes] = popen, lg: Path = log) -> str | None:
            return (
                f"exited {p.returncode}: {processes.log_tail(lg)}" if p.poll() is not None else None
            )

        try:

            def answers(p: int = port) -> int | None:
                # 503 is "starting" (Prometheus's /-/ready before its storage is open): a
                # query then fails, so it is not an answer yet
                status = http_status("127.0.0.1", p, "GET", ready_path)
                return None if status == 503 else status

            processes.wait_for(
                answers,
                SERVICE_START_TIMEOUT,
                f"{kind} on port {port}",
                failed=died,
            )
            return handle
        except FleetError as exc:
            last = str(exc)
            with contextlib.suppress(Exception):
                handle.stop(grace=3.0)
            if popen.returncode is None:
                raise  # it ran but never answered: retrying another port will not help
        except BaseException:
            with contextlib.suppress(Exception):
                handle.stop(grace=3.0)
            raise
    raise FleetError(f"{kind} would not start: {last}")


def start_registry(workdir: Path, htpasswd: bool = False) -> ServiceHandle:
    """`docker-registry serve` on 127.0.0.1:FREEPORT with filesystem storage under `workdir`.

    `htpasswd=True` turns on basic auth (bcrypt via `htpasswd -B`) for user `ci` with a random
    password; the handle carries both. `/v2/` then answers 401 with `WWW-Authenticate`.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "storage").mkdir(exist_ok=True)
    password = None
    auth = ""
    if htpasswd:
        password = secrets.token_urlsafe(12)
        users = workdir / "htpasswd"
        tool = shutil.which("htpasswd")
        if tool is None:
            raise FleetError("htpasswd (apache2-utils) is not installed")
        # -i: the password comes from stdin, never the command line.
        subprocess.run(
            [tool, "-iBc", str(users), TEST_USER], input=password.encode(), check=True,
            capture_output=True,
        )  # fmt: skip
        auth = f"auth:\n  htpasswd:\n    realm: rocmtui-test\n    path: {users}\n"
    config = workdir / "config.yml"

    def write_config(port: int) -> None:
        config.write_text(
            "version: 0.1\n"
            "log:\n  level: warn\n  accesslog:\n    disabled: true\n"
            f"storage:\n  filesystem:\n    rootdirectory: {workdir / 'storage'}\n"
            "  delete:\n    enabled: true\n"
            f"http:\n  addr: 127.0.0.1:{port}\n  secret: {secrets.token_hex(16)}\n" + auth
        )

    handle = _start_with_free_port(
        "registry", workdir, write_config, lambda: ["docker-registry", "serve", str(config)], "/v2/"
    )
    if htpasswd:
        handle.username, handle.password = TEST_USER, password
    return handle


def nginx_config(workdir: Path, port: int, dav_ext: bool) -> str:
    """The nginx.conf of a WebDAV instance; every path nginx writes is inside `workdir`."""
    tmp = workdir / "tmp"
    temps = "\n".join(
        f"    {kind}_temp_path {tmp / kind};" for kind in ("client_body", "proxy", "fastcgi")
    )
    temps += f"\n    uwsgi_temp_path {tmp / 'uwsgi'};\n    scgi_temp_path {tmp / 'scgi'};"
    load = f"load_module {DAV_EXT_MODULE};\n" if dav_ext else ""
    ext = "            dav_ext_methods PROPFIND OPTIONS;\n" if dav_ext else ""
    # `user root`: workers running as nobody cannot create directories in the data dir here.
    return (
        f"{load}user root;\ndaemon off;\nworker_processes 1;\n"
        f"pid {workdir / 'nginx.pid'};\nerror_log {workdir / 'error.log'} warn;\n"
        "events { worker_connections 256; }\n"
        "http {\n"
        f"    access_log {workdir / 'access.log'};\n{temps}\n"
        "    client_max_body_size 0;\n"
        "    server {\n"
        f"        listen 127.0.0.1:{port};\n"
        f"        root {workdir / 'dav'};\n"
        "        location / {\n"
        "            dav_methods PUT DELETE MKCOL COPY MOVE;\n"
        f"{ext}"
        "            create_full_put_path on;\n"
        "            dav_access user:rw group:rw all:r;\n"
        "        }\n"
        "    }\n"
        "}\n"
    )


def start_webdav(workdir: Path, dav_ext: bool = True) -> ServiceHandle:
    """nginx WebDAV on 127.0.0.1:FREEPORT serving `workdir/dav`.

    `dav_ext=False` leaves out the dav-ext module, so PROPFIND answers 405 (misconfigured).
    """
    workdir = Path(workdir)
    (workdir / "dav").mkdir(parents=True, exist_ok=True)
    (workdir / "tmp").mkdir(exist_ok=True)
    if dav_ext and not DAV_EXT_MODULE.is_file():
        raise FleetError(f"{DAV_EXT_MODULE} missing (libnginx-mod-http-dav-ext)")
    config = workdir / "nginx.conf"

    def write_config(port: int) -> None:
        config.write_text(nginx_config(workdir, port, dav_ext))

    argv = ["nginx", "-p", str(workdir), "-c", str(config), "-e", str(workdir / "error.log")]
    return _start_with_free_port("webdav", workdir, write_config, lambda: argv, "/")
