"""The fleet file (TOML): found in the brief's documented order, validated strictly.

Every error names the file, the line and the key, so an operator can fix it in one go.
Paths inside the file are relative to the file; the built-in default is relative to the
current directory.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from rocmtui.core.bake.find import find_bake_file
from rocmtui.core.config import remote as config_remote
from rocmtui.core.config import tables as config_tables
from rocmtui.core.config.find import lookup
from rocmtui.core.config.tables import MatrixConfig, UpstreamConfig
from rocmtui.core.config.validate import ConfigError as ConfigError  # the public name, kept here
from rocmtui.core.config.validate import Validator

DEFAULT_BAKE_FILE = "bake/rocm-bake.hcl"
DEFAULT_DISK_WARN_PERCENT = 90.0
# days of build history the job store keeps (costbook.book); not imported from there: the
# fleet file is read on the way to the console's first frame
DEFAULT_RETENTION_DAYS = 90.0
DEFAULT_REGISTRY_URL = "http://localhost:8080"
DEFAULT_WEBDAV_URL = "http://localhost:8081/"
GFX_RE = re.compile(r"^gfx[0-9a-f]{3,5}$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


class ServiceConfig(Struct, frozen=True):
    """Zot or WebDAV: where it answers (and, for WebDAV, where its files are on this host)."""

    url: str
    path: Path | None = None


class NodeConfig(Struct, frozen=True):
    """One BuildKit node of the fleet."""

    name: str
    docker_host: str | None = None
    context: str | None = None
    builder: str | None = None
    gfx: str | None = None
    local: bool = False  # the machine the console runs on: host CPU/memory/disk are shown
    # mutual TLS for a tcp:// engine (absolute paths): the CA that signed the engine's
    # certificate, and our client certificate and key (docker's ca.pem, cert.pem, key.pem)
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    ssh_config: str | None = None  # the fleet file's ssh_config, for an ssh:// engine (`-F`)
    # a Prometheus node_exporter's /metrics for this node: its vitals' first source
    node_exporter: str | None = None

    @property
    def endpoint(self) -> str:
        """What to show for where the node is reached."""
        if self.context:
            return f"context:{self.context}"
        return self.docker_host or "default"


class FleetConfig(Struct, frozen=True):
    """The whole fleet file, typed and validated."""

    source: Path | None  # None: the built-in default
    bake_file: Path
    refresh_seconds: float
    stall_after_seconds: float
    probe_deadline_seconds: float
    registry: ServiceConfig
    webdav: ServiceConfig
    nodes: tuple[NodeConfig, ...]
    read_only: bool = False
    # builds started elsewhere, from each node's BuildKit history (off: only rocmtui's own)
    watch_history: bool = True
    # days of build history (durations, cache evidence) the job store keeps
    history_retention_days: float = DEFAULT_RETENTION_DAYS
    state_dir: Path | None = None
    keys: Mapping[str, str] = field(default_factory=dict)  # binding id -> key(s)
    # an ssh client config used instead of ~/.ssh/config for ssh:// nodes (`ssh -F`), by the
    # probes and by bake's own ssh alike; None: OpenSSH's usual files
    ssh_config: Path | None = None
    # a build whose link to its remote node stays down this long is ended, `failed`
    link_timeout_seconds: float = 120.0
    # silent this long even while its node is busy: `stalled` (a spinning hang is a hang);
    # the parser makes it 4 x stall_after_seconds when the file does not say
    stall_busy_after_seconds: float = 3600.0
    variables: Mapping[str, str] = field(default_factory=dict)  # bake variables the fleet sets
    matrix: MatrixConfig = field(default_factory=MatrixConfig)
    upstream: UpstreamConfig = field(default_factory=UpstreamConfig)
    theme: str | None = None  # the console's default theme (the palette's choice is kept)
    disk_warn_percent: float = DEFAULT_DISK_WARN_PERCENT  # the state disk this full: warn
    serve_users: Mapping[str, str] = field(default_factory=dict)  # [serve] users: scrypt hashes
    found_by: str = "built-in default"  # which step of the lookup found the fleet file
    bake_found_by: str = "the fleet file's bake_file"
    bake_problem: str | None = None  # the default found no bake file: why, in one line

    def node(self, name: str) -> NodeConfig | None:
        """The node called `name`, if configured."""
        return next((n for n in self.nodes if n.name == name), None)


_TOP_KEYS = {
    "bake_file",
    "refresh_seconds",
    "stall_after_seconds",
    "stall_busy_after_seconds",
    "probe_deadline_seconds",
    "registry",
    "webdav",
    "nodes",
    "read_only",
    "watch_history",
    "history_retention_days",
    "state_dir",
    "keys",
    "ssh_config",
    "link_timeout_seconds",
    "variables",
    "matrix",
    "upstream",
    "theme",
    "disk_warn_percent",
    "serve",
}
_NODE_KEYS = {
    "name", "docker_host", "context", "builder", "gfx", "local", "tls_ca", "tls_cert", "tls_key",
    "node_exporter",
}  # fmt: skip
_SERVICE_KEYS = {"url"}
_HOST_SCHEMES = ("unix://", "tcp://", "ssh://", "npipe://", "fd://")


def find_config(
    explicit: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Path | None:
    """The fleet file to read, in the documented order (rocmtui.core.config.find); None means
    the built-in default."""
    return lookup(explicit, env, cwd).path


def default_config(cwd: Path | None = None) -> FleetConfig:
    """The built-in default: the local Docker engine as the only node; the bake file in the
    current folder, found as bake finds it (rocmtui.core.bake.find)."""
    cwd = Path.cwd() if cwd is None else cwd
    bake = find_bake_file(cwd)
    return FleetConfig(
        source=None,
        bake_file=bake.path,
        bake_found_by=bake.found_by,
        bake_problem=bake.problem,
        refresh_seconds=2.0,
        stall_after_seconds=900.0,
        stall_busy_after_seconds=3600.0,
        probe_deadline_seconds=3.0,
        registry=ServiceConfig(DEFAULT_REGISTRY_URL),
        webdav=ServiceConfig(DEFAULT_WEBDAV_URL),
        nodes=(NodeConfig(name="local", docker_host=None, local=True),),
    )


def load_config(
    explicit: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> FleetConfig:
    """Find and load the fleet file, or return the built-in default."""
    found = lookup(explicit, env, cwd)
    if found.path is None:
        return default_config(cwd)
    return replace(parse_config(found.path), found_by=found.step)


def parse_config(path: Path) -> FleetConfig:
    """Read and validate one fleet file."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError("not UTF-8 text", path, line) from None
    text = text.removeprefix("\ufeff")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        bad_line = int(m.group(1)) if m else None
        reason = re.sub(r" \(at line.*", "", msg)
        raise ConfigError(f"not valid TOML: {reason}", path, bad_line) from None
    return _Validator(path, text).fleet(data)


class _Validator(Validator):
    """Turns the parsed TOML into a `FleetConfig`, locating each bad key's line."""

    def service(self, data: Mapping[str, Any], name: str, default: str) -> ServiceConfig:
        table = data.get(name, {})
        if not isinstance(table, dict):
            raise self.fail("must be a table", name)
        self.unknown(
            table, _SERVICE_KEYS | ({"path"} if name == "webdav" else set()), f"{name}.", name
        )
        url = self.http_url(table.get("url", default), f"{name}.url", name)
        path = table.get("path")
        if path is not None and (not isinstance(path, str) or not path):
            raise self.fail("must be a path", f"{name}.path", name)
        return ServiceConfig(url=url, path=(self.path.parent / path).resolve() if path else None)

    def node(self, item: Any, index: int, names: set[str]) -> NodeConfig:
        label = f"nodes[{index}]"
        if not isinstance(item, dict):
            raise self.fail("each [[nodes]] entry must be a table", label, "nodes", index)
        self.unknown(item, _NODE_KEYS, f"{label}.", "nodes", index)
        name = item.get("name")
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise self.fail(
                f"needs a name of letters, digits, '.', '_' or '-', not {name!r}",
                f"{label}.name",
                "nodes",
                index,
            )
        label = f"nodes.{name}"
        if name in names:
            raise self.fail("duplicate node name", f"{label}.name", "nodes", index)
        names.add(name)
        strings: dict[str, str | None] = {}
        for key in ("docker_host", "context", "builder", "gfx"):
            value = item.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise self.fail("must be a non-empty string", f"{label}.{key}", "nodes", index)
            strings[key] = value
        if strings["docker_host"] and strings["context"]:
            raise self.fail(
                "give docker_host or context, not both", f"{label}.context", "nodes", index
            )
        host = strings["docker_host"]
        if host and not host.startswith(_HOST_SCHEMES):
            raise self.fail(
                f"must start with one of {', '.join(_HOST_SCHEMES)}, not {host!r}",
                f"{label}.docker_host",
                "nodes",
                index,
            )
        gfx = strings["gfx"]
        if gfx and not GFX_RE.match(gfx):
            raise self.fail(
                f"must look like gfx950 or gfx1201, not {gfx!r}", f"{label}.gfx", "nodes", index
            )
        local = item.get("local")
        if local is not None and not isinstance(local, bool):
            raise self.fail("must be true or false", f"{label}.local", "nodes", index)
        if local is None:  # a unix socket or the default engine is on this machine
            local = (host is None and strings["context"] is None) or bool(
                host and host.startswith("unix://")
            )
        tls = config_remote.node_tls(self, item, label, index, host)
        exporter = item.get("node_exporter")
        if exporter is not None and (
            not isinstance(exporter, str) or not re.match(r"^https?://[^/\s]+\S*$", exporter)
        ):
            raise self.fail(
                f"must be an http:// or https:// URL of its /metrics, not {exporter!r}",
                f"{label}.node_exporter",
                "nodes",
                index,
            )
        return NodeConfig(
            name=name,
            docker_host=host,
            context=strings["context"],
            builder=strings["builder"],
            gfx=gfx,
            local=bool(local),
            node_exporter=exporter,
            **tls,
        )

    def stall_thresholds(self, data: Mapping[str, Any]) -> tuple[float, float]:
        """`stall_after_seconds` and `stall_busy_after_seconds` (4 x the first when absent; never
        below it: a busy build is given at least as long as an idle one)."""
        after = self.number(data, "stall_after_seconds", 900, 1, 7 * 86400)
        busy = self.number(data, "stall_busy_after_seconds", 4 * after, 1, 28 * 86400)
        if busy < after:
            raise self.fail(
                f"must be at least stall_after_seconds ({after:g}), not {busy:g}",
                "stall_busy_after_seconds",
            )
        return after, busy

    def keys(self, table: Any, prefix: str = "") -> dict[str, str]:
        """`[keys]` as binding id -> key. TOML reads `fleet.rebuild = "R"` as a nested table,
        so nested tables are flattened back into dotted ids."""
        if not isinstance(table, dict):
            raise self.fail('must be a table of binding id = "key" strings', "keys" + prefix)
        out: dict[str, str] = {}
        for name, value in table.items():
            binding = f"{prefix}.{name}" if prefix else name
            if isinstance(value, dict):
                out.update(self.keys(value, binding))
            elif isinstance(value, str) and value.strip():
                out[binding] = value
            else:
                raise self.fail('must be a key such as "R" or "ctrl+r"', f"keys.{binding}", "keys")
        return out

    def fleet(self, data: dict[str, Any]) -> FleetConfig:
        self.unknown(data, _TOP_KEYS, "")
        base = self.path.parent
        bake = data.get("bake_file", DEFAULT_BAKE_FILE)
        if not isinstance(bake, str) or not bake:
            raise self.fail("must be a path", "bake_file")
        # no [[nodes]] at all is a fleet file for what needs no node (vars, jobs, matrix ...):
        # what needs one says so when asked (jobs.checks.pick_node)
        nodes_raw = data.get("nodes", [])
        if not isinstance(nodes_raw, list):
            raise self.fail("must be [[nodes]] tables", "nodes")
        names: set[str] = set()
        nodes = tuple(self.node(item, i, names) for i, item in enumerate(nodes_raw))
        read_only = data.get("read_only", False)
        if not isinstance(read_only, bool):
            raise self.fail("must be true or false", "read_only")
        watch_history = data.get("watch_history", True)
        if not isinstance(watch_history, bool):
            raise self.fail("must be true or false", "watch_history")
        state_dir = data.get("state_dir")
        if state_dir is not None and (not isinstance(state_dir, str) or not state_dir):
            raise self.fail("must be a path", "state_dir")
        keys = self.keys(data.get("keys", {}))
        refresh = self.number(data, "refresh_seconds", 2.0, 0.2, 3600)
        ssh_config = config_remote.ssh_config(self, data)
        if ssh_config is not None:  # every node carries it: a probe needs only its node
            nodes = tuple(replace(n, ssh_config=str(ssh_config)) for n in nodes)
        stall_after, stall_busy_after = self.stall_thresholds(data)
        theme = data.get("theme")
        if theme is not None and (not isinstance(theme, str) or not theme.strip()):
            raise self.fail('must be a theme name such as "textual-dark"', "theme")
        return FleetConfig(
            source=self.path,
            bake_file=(base / bake).resolve(),
            refresh_seconds=refresh,
            stall_after_seconds=stall_after,
            stall_busy_after_seconds=stall_busy_after,
            probe_deadline_seconds=self.number(data, "probe_deadline_seconds", 3.0, 0.2, 120),
            registry=self.service(data, "registry", DEFAULT_REGISTRY_URL),
            webdav=self.service(data, "webdav", DEFAULT_WEBDAV_URL),
            nodes=nodes,
            read_only=read_only,
            watch_history=watch_history,
            history_retention_days=self.number(
                data, "history_retention_days", DEFAULT_RETENTION_DAYS, 1, 3650
            ),
            state_dir=(base / state_dir).resolve() if state_dir else None,
            keys=dict(keys),
            ssh_config=ssh_config,
            link_timeout_seconds=self.number(data, "link_timeout_seconds", 120.0, 5, 3600),
            variables=config_tables.variables(self, data),
            matrix=config_tables.matrix(self, data),
            upstream=config_tables.upstream(self, data),
            serve_users=config_tables.serve_users(self, data),
            theme=theme,
            disk_warn_percent=self.number(
                data, "disk_warn_percent", DEFAULT_DISK_WARN_PERCENT, 1, 100
            ),
        )
