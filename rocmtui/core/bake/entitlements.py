"""The privileges a build will ask bake for, worked out before it starts, as bake does.

buildx 0.20+ refuses a bake that reads or writes outside its working folder, or asks for
`network.host`, `security.insecure` or a device, unless `--allow` grants it; with no terminal
to ask on (a detached job) it fails at once: "ERROR: additional privileges requested". These
are bake's own rules (buildx `bake/entitlements.go`, `EntitlementConf.check`), applied to
`bake --print`'s JSON of the targets:

- read: each local context and named context (not a URL, `target:` or `docker-image:`), the
  dockerfile (joined to its context unless absolute), file secrets (`src`), ssh key paths,
  `cache-from type=local,src=`; an ssh entry with no path asks for `ssh` (the agent socket);
- write: `dest` of `local`, `tar`, `oci` and `docker` outputs, `cache-to type=local,dest=`;
- `entitlements` as written (`network = "host"` adds `network.host`).

A path is evaluated as bake does (its longest existing prefix with links resolved, then the
rest); the working folder is granted both ways by default; a path under another asked or
granted one is covered by it. Paths are named relative to the working folder when at most one
`..` away (`fs.read=../pytorch`), absolute otherwise, as bake prints them.

`Privilege.loud`: `security.insecure`, devices and writes change the node or the host, so
they are asked louder than a read or `network.host`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from msgspec import Struct

__all__ = [
    "GRANT_KEYS",
    "Privilege",
    "bake_checks",
    "check_grants",
    "granted_by",
    "requested_privileges",
]

#: The keys `--allow` takes (bake's `ParseEntitlements`); `fs` is read and write.
GRANT_KEYS = (
    "network.host",
    "security.insecure",
    "device",
    "fs.read",
    "fs.write",
    "fs",
    "ssh",
    "buildx.local.delete",
)
_NO_VALUE = ("network.host", "security.insecure", "ssh", "buildx.local.delete")
_WHY = {
    "network.host": "build containers on the node's host network",
    "security.insecure": "privileged build containers that can change the node",
    "device": "access to a device of the node",
    "fs.read": "read outside the bake file's folder",
    "fs.write": "write outside the bake file's folder",
    "ssh": "the default ssh agent socket forwarded into the build",
    "buildx.local.delete": "delete stale files in a local output folder",
}
_LOUD = ("security.insecure", "device", "fs.write", "buildx.local.delete")


class Privilege(Struct, frozen=True, order=True):
    """One privilege a build asks for: `key` (`fs.read`, `network.host` ...) and its value (a
    path as bake names it, a device; "" for none). `grant` is the `--allow` word for it."""

    key: str
    value: str = ""

    @property
    def grant(self) -> str:
        """`fs.read=../pytorch`, `network.host`: what `--allow` takes to grant exactly this."""
        return f"{self.key}={self.value}" if self.value else self.key

    @property
    def loud(self) -> bool:
        """Whether it changes the node or the host (asked louder than a read)."""
        return self.key in _LOUD

    @property
    def why(self) -> str:
        """What it lets the build do, in a few words."""
        return _WHY.get(self.key, self.key)


def requested_privileges(printed: Mapping[str, Any], workdir: str) -> tuple[Privilege, ...]:
    """Everything the targets bake printed will ask for when bake runs in `workdir` and nothing
    is granted, sorted (see the module doc). Survives odd JSON: what it cannot read asks for
    nothing (bake itself then decides)."""
    targets = printed.get("target")
    if not isinstance(targets, Mapping):
        return ()
    wd = os.path.realpath(workdir)
    reads: set[str] = set()
    writes: set[str] = set()
    asked: set[Privilege] = set()
    for body in targets.values():
        if isinstance(body, Mapping):
            _collect(body, wd, reads, writes, asked)
    for key, paths in (("fs.read", reads), ("fs.write", writes)):
        for path in _dedup(p for p in (_existing(p) for p in paths) if not _under(p, wd)):
            asked.add(Privilege(key, _named(path, wd)))
    return tuple(sorted(asked))


def _collect(
    body: Mapping[str, Any], wd: str, reads: set[str], writes: set[str], asked: set[Privilege]
) -> None:
    context = body.get("context")
    context = context if isinstance(context, str) and context else "."
    local_context = _local(context)
    if local_context is not None:
        reads.add(_abs(local_context, wd))
        dockerfile = body.get("dockerfile")
        dockerfile = dockerfile if isinstance(dockerfile, str) and dockerfile else "Dockerfile"
        local_file = _local(dockerfile)
        if local_file is not None and not dockerfile.startswith("cwd://"):
            reads.add(_abs(os.path.join(local_context, local_file), wd))
        elif local_file is not None:
            reads.add(_abs(local_file, wd))
    contexts = body.get("contexts")
    for value in contexts.values() if isinstance(contexts, Mapping) else ():
        path = _local(value) if isinstance(value, str) else None
        if path is not None:
            reads.add(_abs(path, wd))
    for entry in _entries(body.get("secret")):
        source = entry.get("src") or entry.get("source")
        if entry.get("type", "file") == "file" and source:
            reads.add(_abs(source, wd))
    for paths in _ssh_entries(body.get("ssh")):
        if paths:
            reads.update(_abs(p, wd) for p in paths)
        else:
            asked.add(Privilege("ssh"))
    for entry in _entries(body.get("cache-from")):
        if entry.get("type") == "local" and entry.get("src"):
            reads.add(_abs(entry["src"], wd))
    for entry in _entries(body.get("cache-to")):
        if entry.get("type") == "local" and entry.get("dest"):
            writes.add(_abs(entry["dest"], wd))
    for entry in _entries(body.get("output")):
        kind = entry.get("type")
        if kind in ("local", "tar", "oci", "docker") and entry.get("dest") not in (None, "", "-"):
            writes.add(_abs(entry["dest"], wd))
        if kind == "local" and entry.get("mode") == "delete":
            asked.add(Privilege("buildx.local.delete"))
    written = body.get("entitlements")
    for item in written if isinstance(written, list) else ():
        if isinstance(item, str) and item:
            key, _, value = item.partition("=")
            asked.add(Privilege(key, value if key == "device" else ""))
    if body.get("network") == "host":
        asked.add(Privilege("network.host"))


def _local(path: str) -> str | None:
    """The local path a context or dockerfile names, None for a URL or another target."""
    if path.startswith(("target:", "docker-image:", "oci-layout:")) or "://" in path.replace(
        "cwd://", "", 1
    ):
        return None
    if path.startswith(("git@", "github.com/")) or path.endswith(".git"):
        return None
    return path.removeprefix("cwd://")


def _entries(value: object) -> list[dict[str, str]]:
    """`output`/`secret`/`cache-*` entries as dicts, whichever shape bake printed them in
    (`type=local,dest=x` strings on 0.13, objects on 0.29)."""
    items = value if isinstance(value, list) else [value] if value else []
    out = []
    for item in items:
        if isinstance(item, Mapping):
            out.append({str(k): str(v) for k, v in item.items()})
        elif isinstance(item, str):
            out.append(_csv_pairs(item))
    return out


def _csv_pairs(text: str) -> dict[str, str]:
    # on first use: kept off the console's start
    import csv

    fields = next(csv.reader([text]), [])
    pairs = {}
    for field in fields:
        key, sep, value = field.partition("=")
        if sep:
            pairs[key.strip().lower()] = value
    return pairs


def _ssh_entries(value: object) -> list[list[str]]:
    """Each ssh entry's key paths ([] for the default agent socket)."""
    items = value if isinstance(value, list) else [value] if value else []
    out = []
    for item in items:
        if isinstance(item, Mapping):
            paths = item.get("paths")
            out.append([str(p) for p in paths] if isinstance(paths, list) else [])
        elif isinstance(item, str):
            _, sep, rest = item.partition("=")
            out.append([p for p in rest.split(",") if p] if sep else [])
    return out


def _abs(path: str, wd: str) -> str:
    return os.path.normpath(os.path.join(wd, os.path.expanduser(path)))


def _existing(path: str) -> str:
    """bake's `EvaluateToExistingPath`: the longest existing prefix with its links resolved,
    then the part that does not exist yet."""
    head, rest = path, ""
    while head != os.path.dirname(head) and not os.path.lexists(head):
        head, tail = os.path.split(head)
        rest = os.path.join(tail, rest) if rest else tail
    real = os.path.realpath(head)
    return os.path.join(real, rest) if rest else real


def _under(path: str, parent: str) -> bool:
    return parent == "/" or path == parent or path.startswith(parent.rstrip("/") + "/")


def _dedup(paths: Iterable[str]) -> list[str]:
    """Drop a path under another one of the set (bake's `dedupPaths`)."""
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(_under(path, k) for k in kept):
            kept.append(path)
    return sorted(kept)


def _named(path: str, wd: str) -> str:
    """Relative to the working folder when at most one `..` away, else absolute (bake's
    `toRelativePaths`)."""
    rel = os.path.relpath(path, wd)
    return path if rel.startswith("../..") else rel


def granted_by(privilege: Privilege, grants: Iterable[str], workdir: str) -> bool:
    """Whether `grants` (`--allow` words, paths relative to `workdir`) cover `privilege`."""
    wd = os.path.realpath(workdir)
    for grant in grants:
        key, _, value = grant.partition("=")
        if privilege.key in ("fs.read", "fs.write"):
            if key not in (privilege.key, "fs") or not value:
                continue
            if value == "*" or _under(
                _existing(_abs(privilege.value, wd)), _existing(_abs(value, wd))
            ):
                return True
        elif privilege.key == "device":
            if key == "device" and value in ("", privilege.value):
                return True
        elif grant == privilege.key:
            return True
    return False


def check_grants(grants: Sequence[str]) -> tuple[str, ...]:
    """The `--allow` words as given, checked as bake's `ParseEntitlements` checks them; raises
    ValueError naming the first bad one."""
    out = []
    for grant in grants:
        key, sep, value = grant.partition("=")
        if key not in GRANT_KEYS:
            known = ", ".join(GRANT_KEYS)
            raise ValueError(f"--allow {grant}: unknown privilege {key!r} (known: {known})")
        if key in _NO_VALUE and sep:
            raise ValueError(f"--allow {grant}: {key} takes no value")
        if key in ("fs.read", "fs.write", "fs") and not value:
            raise ValueError(f"--allow {grant}: {key} needs a path ({key}=PATH, or {key}=*)")
        out.append(grant)
    return tuple(dict.fromkeys(out))


def bake_checks(version: tuple[int, ...] | None, env: Mapping[str, str]) -> tuple[bool, bool]:
    """(whether bake takes `--allow`, whether it refuses file access outside its folder) for a
    buildx of `version` run with `env`. `--allow` on bake came with buildx 0.17 (0.13 rejects
    it: the bake file's own `entitlements` go to BuildKit unasked); file checks refuse from
    0.20 (before: a warning), unless `BUILDX_BAKE_ENTITLEMENTS_FS` turns them off. An unknown
    version is taken as today's."""
    if version is not None and version < (0, 17):
        return False, False
    checks_fs = version is None or version >= (0, 20)
    setting = env.get("BUILDX_BAKE_ENTITLEMENTS_FS")
    if setting is not None and setting.strip().lower() in ("0", "f", "false"):
        checks_fs = False
    return True, checks_fs
