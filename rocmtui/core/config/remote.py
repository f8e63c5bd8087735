"""The fleet file's keys for remote nodes: a node's TLS files, and the fleet's `ssh_config`,
typed and validated with the same one-line errors as the rest of the file
(`validate.Validator` locates the line).

```toml
ssh_config = "ssh/config"          # instead of ~/.ssh/config: `ssh -F` for probes and builds
link_timeout_seconds = 120         # a build whose node's link stays down this long ends

[[nodes]]
name = "snoc-gaming"
docker_host = "tcp://snoc-gaming:2376"
tls_ca = "tls/ca.pem"              # the CA that signed the engine's certificate
tls_cert = "tls/cert.pem"          # our client certificate and key
tls_key = "tls/key.pem"
```

Paths are relative to the fleet file and must name files that exist: a typo is said at load,
not as a puzzling TLS error at the first probe.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocmtui.core.config.validate import Validator

TLS_KEYS = ("tls_ca", "tls_cert", "tls_key")


def file_path(v: Validator, value: Any, key: str, table: str | None = None, index: int = 0) -> Path:
    """A path key: a non-empty string, relative to the fleet file, naming an existing file."""
    if not isinstance(value, str) or not value.strip():
        raise v.fail("must be a path", key, table, index)
    path = (v.path.parent / value).resolve()
    if not path.is_file():
        raise v.fail(f"no such file: {path}", key, table, index)
    return path


def ssh_config(v: Validator, data: Mapping[str, Any]) -> Path | None:
    """The top-level `ssh_config`, when given."""
    return file_path(v, data["ssh_config"], "ssh_config") if "ssh_config" in data else None


def node_tls(
    v: Validator, item: Mapping[str, Any], label: str, index: int, host: str | None
) -> dict[str, str]:
    """tls_ca / tls_cert / tls_key of a tcp:// node, as absolute paths."""
    given = [key for key in TLS_KEYS if item.get(key) is not None]
    if not given:
        return {}
    if not (host and host.startswith("tcp://")):
        raise v.fail(
            "TLS files need a tcp:// docker_host (a context keeps its own)",
            f"{label}.{given[0]}",
            "nodes",
            index,
        )
    if ("tls_cert" in given) != ("tls_key" in given):
        missing = "tls_key" if "tls_cert" in given else "tls_cert"
        raise v.fail("give tls_cert and tls_key together", f"{label}.{missing}", "nodes", index)
    return {key: str(file_path(v, item[key], f"{label}.{key}", "nodes", index)) for key in given}
