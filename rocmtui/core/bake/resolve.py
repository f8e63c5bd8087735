"""What bake will really use: `docker buildx bake --print`, run with the launch environment.

The static reader (`bakefile`) says what is written; this module asks buildx, which evaluates
variables, functions, `inherits` and `matrix` exactly and needs no daemon. Every check compares
against it.

Hazards designed against (HAZARDS.md, "Secrets and commands"):
- An environment variable named like a bake variable silently overrides it, so bake always runs
  with `bake_environment(...)`: a short allow-list from the caller's environment plus explicit
  overrides, and never a variable of the bake file unless it is an explicit override.
- Argument lists only, never a shell, and `--` before target names.
- A hard deadline: buildx (and the docker CLI that runs it as a child) is started in a session of
  its own and the whole process group is killed when the deadline passes.
- Secret values that reach an error message are redacted (by name and by value).

bake runs in the bake file's own directory (`bake_workdir`): the `context` paths of a bake file
are relative to the directory bake runs in, and rocm-bake.hcl's are written relative to itself.
A bake path that is a folder (several default files, `bakefind.bake_files`) runs there, with one
`-f` per file in bake's order, so bake reads exactly the files rocmtui read.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rocmtui.core.bake.file import BakeError, BakeFile
from rocmtui.core.bake.find import bake_files
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_seconds

#: Names kept from the caller's environment: what the docker CLI and buildx need to find their
#: config, plugins, engine and builder, reach an ssh:// engine, and write temporary files.
#: BUILDX_BUILDER and BUILDKIT_PROGRESS are not kept: the caller passes --builder/--progress.
#: TERM is not kept either: bake's output goes to a file or a pipe, never to a terminal.
KEEP_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "TMPDIR",
        "LANG",
        "LANGUAGE",
        "TZ",
        "XDG_RUNTIME_DIR",
        "SSH_AUTH_SOCK",
        "DOCKER_CONFIG",
        "DOCKER_HOST",
        "DOCKER_CONTEXT",
        "DOCKER_TLS_VERIFY",
        "DOCKER_CERT_PATH",
        "BUILDX_CONFIG",
        # "0": the supervisor keeps no steps at a build's end (bench_step_capture's "off")
        "ROCMTUI_KEEP_STEPS",
    }
)
KEEP_PREFIXES = ("LC_",)
#: PATH when the caller's environment has none.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: The target the resolve overlay defines (bake target names allow only [A-Za-z0-9_-]).
RESOLVE_TARGET = "rocmtui-resolve-variables"
STDIN_NAME = "-.hcl"  # what buildx calls a bake file read from stdin in its messages
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ERROR_AT = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+),\d+(?:-\d+(?:,\d+)?)?: (?P<msg>.*)$")
_MAX_MESSAGE = 400


class BuildxMissing(BakeError):
    """The docker CLI or its buildx plugin is not installed: the truth cannot be asked for."""


def bake_workdir(path: Path | str) -> Path:
    """The directory bake runs in for `path`: the bake file's own directory (a folder of
    default files: that folder)."""
    path = Path(path).absolute()
    return path if path.is_dir() else path.parent


def bake_environment(
    base: Mapping[str, str],
    overrides: Mapping[str, str],
    *,
    bake_variables: Iterable[str] = (),
) -> dict[str, str]:
    """The scrubbed environment to run bake with: `KEEP_NAMES` (and `LC_*`) from `base`, then
    `overrides` on top. Any name in `bake_variables` is taken only from `overrides`, so a file
    that declares, say, `HOME` as a variable is not overridden by the caller's HOME either."""
    declared = frozenset(bake_variables)
    env = {
        k: v
        for k, v in base.items()
        if (k in KEEP_NAMES or k.startswith(KEEP_PREFIXES)) and k not in declared
    }
    env.setdefault("PATH", DEFAULT_PATH)
    env.update(overrides)
    return env


def _one_line(text: str, env: Mapping[str, str]) -> str:
    """A buildx message as `one_line` shows it, secrets redacted first."""
    # on first use: kept off `--help`
    from rocmtui.core.text.redact import Redactor

    return one_line(Redactor(env).redact_text(" ".join(text.split())), _MAX_MESSAGE)


def _buildx_error(stderr: str, path: Path, env: Mapping[str, str]) -> BakeError:
    """buildx's own message (its last `ERROR:` line), placed at FILE:LINE when it names one."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln[len("ERROR:") :].strip() for ln in lines if ln.startswith("ERROR:")]
    message = errors[-1] if errors else (lines[-1] if lines else "failed with no message")
    if "is not a docker command" in message or (
        "unknown command" in message and "buildx" in message
    ):
        return BuildxMissing("docker buildx is not installed", path)
    m = _ERROR_AT.match(message)
    if m is not None:
        where = Path(m.group("file"))
        where = where if where.is_absolute() else bake_workdir(path) / where
        return BakeError(_one_line(m.group("msg"), env), where, int(m.group("line")))
    return BakeError(_one_line(f"docker buildx bake: {message}", env), path)


def _run_print(
    files: Sequence[Path],
    targets: Sequence[str],
    env: Mapping[str, str],
    timeout: float,
    overlay: str | None = None,
) -> dict[str, Any]:
    """Run `docker buildx bake -f F... --print -- TARGETS...` under a hard deadline; `overlay`,
    if given, is one more bake file, read from stdin (`-f -`: no file to leave behind)."""
    path = files[0]
    docker = shutil.which("docker", path=env.get("PATH", DEFAULT_PATH))
    if docker is None:
        raise BuildxMissing("the docker CLI is not on PATH", path)
    argv = [docker, "buildx", "bake"]
    for named in files:
        for f in bake_files(named):
            argv += ["-f", str(f.absolute())]
    if overlay is not None:
        argv += ["-f", "-"]
    argv += ["--print", "--", *targets]
    try:
        proc = subprocess.Popen(
            argv,
            cwd=bake_workdir(path),
            env=dict(env),
            stdin=subprocess.DEVNULL if overlay is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # so the deadline can kill docker *and* its buildx child
        )
    except OSError as exc:
        raise BuildxMissing(f"cannot run docker: {exc.strerror or exc}", path) from None
    try:
        given = None if overlay is None else overlay.encode("utf-8")
        out, err = proc.communicate(given, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise BakeError(
            f"docker buildx bake --print gave no answer within {fmt_seconds(timeout)} (stopped)",
            path,
        ) from None
    except BaseException:
        _kill_group(proc)
        raise
    stderr = err.decode("utf-8", "replace")
    if proc.returncode != 0:
        raise _buildx_error(stderr, path, env)
    try:
        data = json.loads(out.decode("utf-8", "replace"))
    except ValueError:
        raise BakeError("docker buildx bake --print did not print JSON", path) from None
    if not isinstance(data, dict):
        raise BakeError("docker buildx bake --print printed something other than an object", path)
    return normalise_printed(data)


# Entries bake prints as `type=...,k=v` strings (buildx 0.13) or `{"type": ..., "k": v}` objects
# (buildx 0.29); one string form for both.
_ENTRY_LISTS = ("output", "cache-to", "cache-from")
_FIRST_KEYS = {"type": 0, "ref": 1, "dest": 1}  # as the operators write them; buildx sorts
# buildx 0.29 prints a literal `${`/`%{` in a resolved string as its HCL escape `$${`/`%%{`;
# 0.13 printed it as is.
_ESCAPE = re.compile(r"([$%])\1\{")


def printed_entry(entry: object) -> str:
    """One `output`/`cache-to`/`cache-from` entry as a `type=X,k=v,...` string, whichever shape
    buildx printed it in: a string stays as it is; an object gives `type` first, then its other
    keys in buildx's order (a value with `,`, `=` or `"` is CSV-quoted, as buildx parses it)."""
    if not isinstance(entry, Mapping):
        return str(entry)
    items = sorted(entry.items(), key=lambda kv: _FIRST_KEYS.get(kv[0], len(_FIRST_KEYS)))
    parts = []
    for key, value in items:
        text = _entry_value(value)
        part = f"{key}={text}"
        if any(c in part for c in ',"\n'):
            part = '"' + part.replace('"', '""') + '"'
        parts.append(part)
    return ",".join(parts)


def _entry_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(_entry_value(v) for v in value)
    return str(value)


def _unescaped(value: Any) -> Any:
    if isinstance(value, str):
        return _ESCAPE.sub(r"\1{", value)
    if isinstance(value, list):
        return [_unescaped(v) for v in value]
    if isinstance(value, dict):
        return {k: _unescaped(v) for k, v in value.items()}
    return value


def normalise_printed(data: Mapping[str, Any]) -> dict[str, Any]:
    """`bake --print`'s JSON in one shape whichever buildx printed it: every target's
    `output`, `cache-to` and `cache-from` entries as strings (see `printed_entry`), and
    strings with a literal `${` as they are, not HCL-escaped (`$${`). Everything else is kept."""
    out: dict[str, Any] = dict(data)
    targets = data.get("target")
    if isinstance(targets, Mapping):
        fixed: dict[str, Any] = {}
        for name, body in targets.items():
            if isinstance(body, Mapping):
                body = {str(k): _unescaped(v) for k, v in body.items()}
                for key in _ENTRY_LISTS:
                    entries = body.get(key)
                    if isinstance(entries, list):
                        body[key] = [printed_entry(e) for e in entries]
                    elif isinstance(entries, Mapping):
                        body[key] = [printed_entry(entries)]
            fixed[name] = body
        out["target"] = fixed
    return out


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's whole process group, then reap the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError):
        proc.communicate(timeout=5)


def bake_print(
    path: Path | str, targets: Sequence[str], env: Mapping[str, str], timeout: float = 10.0
) -> dict[str, Any]:
    """`docker buildx bake -f PATH --print -- TARGETS...` with exactly `env` (a folder: one `-f`
    per file of `bake_files(PATH)`), as parsed JSON
    (`{"group": {...}, "target": {...}}`). Raises BakeError with buildx's own message (or
    BuildxMissing when docker or buildx is not installed) and on the deadline."""
    return _run_print([Path(path)], list(targets), env, timeout)


def resolved_names(bake: BakeFile, env: Mapping[str, str], timeout: float = 10.0) -> frozenset[str]:
    """Every name bake accepts as a target under `env`: the file's targets and groups plus the
    targets its matrix blocks make (`pytorch-gfx1201` from `pytorch-arch`), as buildx names
    them. One `--print` of every label."""
    labels = sorted(bake.names())
    if not labels:
        return frozenset()
    data = bake_print(bake.path, labels, env, timeout)
    made = set(data.get("target") or {}) | set(data.get("group") or {})
    return frozenset(made | set(labels))


def _overlay_text(names: Sequence[str]) -> str:
    """One target whose args hold every variable, JSON-encoded (see resolved_variables)."""
    args = "\n".join(f"    {name} = jsonencode({name})" for name in names)
    return f'target "{RESOLVE_TARGET}" {{\n  args = {{\n{args}\n  }}\n}}\n'


def _from_json(encoded: str) -> str | None:
    """A jsonencode()d value as bake would pass it as a string arg (None for null)."""
    value = json.loads(encoded)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return encoded.strip()  # buildx's own formatting of the number
    return json.dumps(value, separators=(",", ":"))


def resolved_variables(
    path: Path | str,
    variable_names: Iterable[str],
    env: Mapping[str, str],
    timeout: float = 10.0,
) -> dict[str, str]:
    """What bake really resolves each variable to under `env`.

    Done exactly, by bake itself: an overlay bake file, given on stdin, defines one target
    whose `args` map every variable to itself (`NAME = jsonencode(NAME)`), `--print` runs
    with both files and that target, and the args are read back. jsonencode keeps every type
    readable (a list or a null default cannot be an arg as is) and is decoded to what
    `NAME = NAME` would give: strings as they are, numbers and bools as bake prints them,
    lists and objects as compact JSON. A variable whose value is null is absent from the
    result (bake passes nothing for it); so are names that are not plain identifiers.
    """
    path = Path(path)
    names = sorted({n for n in variable_names if _IDENTIFIER.match(n)})
    if not names:
        return {}
    try:
        data = _run_print([path], [RESOLVE_TARGET], env, timeout, overlay=_overlay_text(names))
    except BakeError as exc:
        if exc.path.name != STDIN_NAME:
            raise
        # our own overlay cannot be shown to anyone (it was never a file): blame the bake file
        raise BakeError(exc.message, path) from None
    try:
        args = data["target"][RESOLVE_TARGET].get("args") or {}
    except (KeyError, TypeError, AttributeError):
        raise BakeError("docker buildx bake --print lost the resolve target", path) from None
    out: dict[str, str] = {}
    for name in names:
        encoded = args.get(name)
        if isinstance(encoded, str):
            try:
                value = _from_json(encoded)
            except ValueError:
                value = encoded
            if value is not None:
                out[name] = value
    return out
