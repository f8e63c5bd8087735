"""`rocmtui doctor`'s look at the systemd units of deploy/systemd/ once installed: the monitor's
and serve's, system-wide and the user's.

A unit that is not installed is fine (both are optional). One that is must run this program
with the right command (`monitor`, `serve`) from a path that exists; serve's must be one that
would start (loopback, or TLS, or `--insecure`: the same rule `rocmtui serve` applies) and
should sit beside the monitor's unit, or every start of it brings a monitor of its own. Then
`systemctl is-active` says whether it runs (a machine without systemd says so, as a warning).
"""

from __future__ import annotations

import configparser
import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from rocmtui.core.doctor.checks import FAIL, OK, WARN, Finding
from rocmtui.core.serveauth import DEFAULT_LISTEN, ListenError, bind_problem, parse_listen

SYSTEM_DIRS = (Path("/etc/systemd/system"), Path("/usr/local/lib/systemd/system"))
UNITS = {"rocmtui-monitor": "monitor", "rocmtui-serve": "serve"}
CHECK = "units"


def user_dir(env: Mapping[str, str]) -> Path:
    """Where `systemctl --user` reads the user's own units."""
    config = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", "~"), ".config")
    return Path(config) / "systemd" / "user"


def installed(env: Mapping[str, str], system_dirs: Sequence[Path]) -> list[tuple[str, Path, bool]]:
    """(unit name, file, is a user unit) for every unit of ours found, system ones first."""
    found = []
    for user, folders in ((False, system_dirs), (True, (user_dir(env),))):
        for name in UNITS:
            for folder in folders:
                path = folder / f"{name}.service"
                if path.is_file():
                    found.append((name, path, user))
                    break
    return found


def check_units(
    env: Mapping[str, str], timeout: float, system_dirs: Sequence[Path] = SYSTEM_DIRS
) -> list[Finding]:
    """A line per installed unit (its file, its command, whether it runs), or one saying none."""
    units = installed(env, system_dirs)
    if not units:
        return [Finding(CHECK, OK, "no rocmtui unit installed (optional: deploy/systemd/)")]
    out: list[Finding] = []
    for name, path, user in units:
        problem = _command_problem(name, path, env)
        if problem is not None:
            out.append(Finding(CHECK, FAIL, problem, f"edit {path} (see deploy/systemd/{name})"))
            continue
        if name == "rocmtui-serve" and not any(
            n == "rocmtui-monitor" and u == user for n, _, u in units
        ):
            out.append(
                Finding(
                    CHECK,
                    WARN,
                    f"{path}: no rocmtui-monitor unit beside it: serve starts a monitor of its own",
                    "install deploy/systemd/rocmtui-monitor.service too",
                )
            )
        out.append(_running(name, path, user, env, timeout))
    return out


def _command_problem(name: str, path: Path, env: Mapping[str, str]) -> str | None:
    """What is wrong with the unit's ExecStart (naming the file and line), or None."""
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(path.read_text(errors="replace"), source=str(path))
    except (OSError, configparser.Error) as exc:
        return f"{path}: unreadable: {exc}"
    line = _line_of(path, "ExecStart=")
    where = f"{path}:{line}" if line else str(path)
    command = parser.get("Service", "ExecStart", fallback="").strip()
    if not command:
        return f"{path}: no ExecStart in [Service]"
    try:
        words = shlex.split(command.replace("%h", env.get("HOME", "~")))
    except ValueError as exc:
        return f"{where}: ExecStart does not parse: {exc}"
    program = words[0].lstrip("@-:+!")
    if not (os.path.isfile(program) and os.access(program, os.X_OK)):
        return f"{where}: ExecStart runs {program}, which is not an executable file"
    if UNITS[name] not in words[1:]:
        return f"{where}: ExecStart does not run `rocmtui {UNITS[name]}`"
    if name == "rocmtui-serve":
        return _serve_problem(words, where)
    return None


def _serve_problem(words: list[str], where: str) -> str | None:
    value = DEFAULT_LISTEN
    for index, word in enumerate(words):
        if word == "--listen" and index + 1 < len(words):
            value = words[index + 1]
        elif word.startswith("--listen="):
            value = word.split("=", 1)[1]
    try:
        listen = parse_listen(value)
    except ListenError as exc:
        return f"{where}: {exc}"
    problem = bind_problem(listen, "--tls-cert" in " ".join(words), "--insecure" in words)
    return None if problem is None else f"{where}: rocmtui serve would refuse to start: {problem}"


def _line_of(path: Path, prefix: str) -> int | None:
    try:
        for number, text in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if text.strip().startswith(prefix):
                return number
    except OSError:
        return None
    return None


def _running(name: str, path: Path, user: bool, env: Mapping[str, str], timeout: float) -> Finding:
    argv = ["systemctl", *(["--user"] if user else []), "is-active", f"{name}.service"]
    scope = "user unit" if user else "unit"
    try:
        answer = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, env=dict(env), check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Finding(CHECK, WARN, f"{path}: is it running? systemctl: {exc}")
    state = (answer.stdout.strip() or answer.stderr.strip()).splitlines()
    said = state[0][:120] if state else f"exit {answer.returncode}"
    if said == "active":
        return Finding(CHECK, OK, f"{name} ({scope}, {path}): active")
    remedy = f"systemctl {'--user ' if user else ''}enable --now {name}"
    verdict = FAIL if said == "failed" else WARN
    return Finding(CHECK, verdict, f"{name} ({scope}, {path}): {said}", remedy)
