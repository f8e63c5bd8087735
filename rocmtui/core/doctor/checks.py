"""`rocmtui doctor`: every check an operator would make by hand, each a one-line verdict.

A check returns `Finding`s: what was checked, `ok` / `warn` / `fail`, one line of detail and,
when not ok, the remedy. `run_checks` runs every check at once in daemon threads and waits
for all of them until one deadline (the fleet file's probe deadline, less what start-up used):
a check that has not answered by then is a `fail` that says so, and its thread is abandoned,
never joined, so a dead node can never hold the doctor. Every outside command has a timeout
of its own as well. This module holds the runner and the local checks (docker, buildx, the
state and lock folders, the terminal); `doctor_fleet` the nodes, logins and the bake file.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from msgspec import Struct

from rocmtui.core.bake.plugin import buildx_plugin
from rocmtui.core.bake.resolve import bake_environment
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.jobs.locks import lock_dir, lock_dir_problem
from rocmtui.core.paths import state_dir
from rocmtui.core.private import PrivateFolderError, check_private, private_root
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_bytes, fmt_seconds

OK, WARN, FAIL = "ok", "warn", "fail"
MIN_SIZE = (80, 24)  # the console is laid out for at least this
MAX_ESCAPE_TIME_MS = 50  # tmux's default 500 ms makes Esc (back, close) feel stuck


class Finding(Struct, frozen=True):
    """One verdict: `check` (what), `verdict` (ok/warn/fail), `detail`, `remedy`."""

    check: str
    verdict: str
    detail: str
    remedy: str = ""


Check = Callable[[], list[Finding]]


def run_checks(checks: Mapping[str, Check], deadline: float) -> list[Finding]:
    """Run every check at once; the findings in the order of `checks`. A check that raised
    is a `fail` naming the error; one that is still running at `deadline` seconds a `fail`
    that says it did not answer."""
    results: dict[str, list[Finding]] = {}

    def run(name: str, check: Check) -> None:
        try:
            results[name] = check()
        except Exception as exc:
            results[name] = [Finding(name, FAIL, f"the check failed: {type(exc).__name__}: {exc}")]

    threads = {
        name: threading.Thread(target=run, args=(name, check), name=f"doctor:{name}", daemon=True)
        for name, check in checks.items()
    }
    for thread in threads.values():
        thread.start()
    end = time.monotonic() + deadline
    for thread in threads.values():
        thread.join(max(0.0, end - time.monotonic()))
    out: list[Finding] = []
    for name in checks:
        found = results.get(name)
        so_far = getattr(checks[name], "so_far", None)  # a check that keeps partial lines
        if found is None and callable(so_far):
            out.extend(so_far(deadline))
        elif found is None:
            out.append(
                Finding(
                    name, FAIL, f"no answer within {fmt_seconds(deadline)}", "see the other lines"
                )
            )
        else:
            out.extend(found)
    return out


def command(
    argv: list[str], timeout: float, env: Mapping[str, str] | None = None
) -> tuple[int, str]:
    """Run `argv` (no shell, stdin /dev/null) with a timeout: (exit code, output). 127 when it
    is not installed, 124 on the timeout."""
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env=None if env is None else dict(env),
        )
    except FileNotFoundError:
        return 127, f"{argv[0]}: not installed"
    except subprocess.TimeoutExpired:
        return 124, f"{' '.join(argv[:3])}: no answer within {fmt_seconds(timeout)}"
    except OSError as exc:
        return 126, f"{argv[0]}: {exc.strerror or exc}"
    return done.returncode, (done.stdout + done.stderr).strip()


def first_line(text: str, limit: int = 200) -> str:
    """The first non-empty line of a tool's answer, as `one_line` shows outside text."""
    return one_line(next((ln for ln in text.splitlines() if ln.strip()), ""), limit)


# --- docker and buildx --------------------------------------------------------------------------


def check_docker(timeout: float) -> list[Finding]:
    """The docker CLI's version (no daemon is asked)."""
    code, out = command(["docker", "--version"], timeout)
    if code != 0:
        return [
            Finding(
                "docker CLI",
                FAIL,
                first_line(out),
                "install the docker CLI (Debian: docker.io or docker-ce-cli)",
            )
        ]
    return [Finding("docker CLI", OK, first_line(out))]


#: Bake features rocm-bake may want, and how to tell whether this buildx has them.
FLAG_FEATURES = (("bake --list", "--list"), ("bake --call (build checks)", "--call"))
VARIABLE_FEATURES = (
    ("variable description", 'description = "d"'),
    ("variable type", "type = string"),
)


def _variable_feature(attribute: str, timeout: float, env: Mapping[str, str]) -> bool | None:
    """Whether `bake --print` accepts a variable block with `attribute` (None: unknown), asked
    with `env`: the same DOCKER_CONFIG/HOME/PATH, so the same buildx plugin, as bake launches."""
    with tempfile.TemporaryDirectory(prefix="rocmtui-doctor-") as tmp:
        path = Path(tmp) / "probe.hcl"
        path.write_text(f'variable "X" {{\n  {attribute}\n  default = "x"\n}}\ntarget "t" {{}}\n')
        code, _ = command(
            ["docker", "buildx", "bake", "-f", str(path), "--print", "t"], timeout, env
        )
    return None if code in (124, 126, 127) else code == 0


def check_buildx(timeout: float, env: Mapping[str, str] | None = None) -> list[Finding]:
    """buildx's version and which bake features it lacks, asked of the buildx builds use: every
    probe runs with the environment bake launches get (`bake_environment` of `env`)."""
    env = bake_environment(os.environ if env is None else env, {})
    code, out = command(["docker", "buildx", "version"], timeout, env)
    if code != 0:
        return [
            Finding(
                "buildx",
                FAIL,
                first_line(out) or "docker buildx is not installed",
                "install the docker-buildx plugin (0.13 or newer)",
            )
        ]
    match = re.search(r"\bv?(\d+\.\d+\.\d+)", out)
    version = match.group(1) if match else first_line(out)
    _, bake_help = command(["docker", "buildx", "bake", "--help"], timeout, env)
    _, buildx_help = command(["docker", "buildx", "--help"], timeout, env)
    lacks = [name for name, flag in FLAG_FEATURES if flag not in bake_help]
    if not re.search(r"(?m)^\s+history\b", buildx_help):
        lacks.append("buildx history")
    for name, attribute in VARIABLE_FEATURES:
        if _variable_feature(attribute, timeout, env) is False:
            lacks.append(name)
    plugin = buildx_plugin(env)
    detail = f"buildx {version}" + (f" ({plugin})" if plugin else "")
    detail += f"; lacks: {', '.join(lacks)}" if lacks else ""
    return [Finding("buildx", OK, detail)]


# --- the state and lock folders -------------------------------------------------------------


def _folder(name: str, path: Path, what: str) -> Finding:
    """A folder rocmtui writes: it (or the folder it will be made in) must be writable."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return Finding(name, FAIL, f"{existing} is not a folder", f"remove it, or move {what}")
    if not os.access(existing, os.W_OK | os.X_OK):
        return Finding(
            name, FAIL, f"{existing} is not writable by you", f"fix its owner/mode, or move {what}"
        )
    if existing != path:
        return Finding(name, OK, f"{path} (made on first use)")
    mode = existing.stat().st_mode
    if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
        return Finding(name, WARN, f"{path} is writable by everyone", f"chmod o-w {path}")
    return Finding(name, OK, str(path))


def _lock_folder(path: Path) -> Finding:
    """The slot lock folder: writable, and nobody else's to block slots in (`jobs.locks`)."""
    problem = lock_dir_problem(path)
    if problem is not None:
        fix = f"set ROCMTUI_LOCK_DIR, or: install -d -m 2770 -g GROUP {path} (as root)"
        return Finding("lock folder", FAIL, problem, fix)
    return _folder("lock folder", path, "ROCMTUI_LOCK_DIR")


def _private_folder(env: Mapping[str, str] | None) -> Finding:
    """The folder of what runs and authenticates (`core.private`): the user's own, 0700."""
    root = private_root(env)
    if not os.path.lexists(root):
        return Finding("private folder", OK, f"{root} (made on first use)")
    try:
        check_private(root)
    except PrivateFolderError as exc:
        fix = "remove it (it is not yours), or set ROCMTUI_PRIVATE_DIR to a folder of yours"
        return Finding("private folder", FAIL, str(exc), fix)
    return Finding("private folder", OK, str(root))


def check_state(config: FleetConfig, env: Mapping[str, str] | None = None) -> list[Finding]:
    """The state folder, its disk and the lock folder."""
    state = state_dir(config, env)
    out = [
        _folder("state folder", state, "state_dir in the fleet file"),
        _lock_folder(lock_dir(config, env)),
        _private_folder(env),
    ]
    existing = state
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        usage = shutil.disk_usage(existing)
    except OSError as exc:
        out.append(Finding("state disk", FAIL, f"{existing}: {exc.strerror or exc}"))
        return out
    percent = 100.0 * usage.used / usage.total if usage.total else 100.0
    free = f"{percent:.0f}% used, {fmt_bytes(usage.free)} free"
    if percent >= config.disk_warn_percent:
        verdict = FAIL if usage.free < 1024 * 1024 else WARN
        out.append(
            Finding(
                "state disk",
                verdict,
                f"{free} (warns at {config.disk_warn_percent:.0f}%)",
                "free space there: builds' logs and outcomes are written to it",
            )
        )
    else:
        out.append(Finding("state disk", OK, free))
    return out


# --- the terminal ------------------------------------------------------------------------------


def check_terminal(env: Mapping[str, str], isatty: bool, timeout: float) -> list[Finding]:
    """Colours, size and (inside tmux) the settings the console depends on."""
    term = env.get("TERM", "")
    out: list[Finding] = []
    if not isatty:
        out.append(Finding("terminal", OK, "not a terminal (output is a pipe): not checked"))
        return out
    if env.get("NO_COLOR"):
        out.append(
            Finding(
                "colours",
                WARN,
                "NO_COLOR is set: the console is monochrome",
                "unset NO_COLOR for coloured state words",
            )
        )
    elif not term or term == "dumb":
        out.append(
            Finding(
                "colours", FAIL, f"TERM is {term or 'not set'}", "set TERM, e.g. xterm-256color"
            )
        )
    else:
        depth = (
            "truecolor"
            if env.get("COLORTERM") in ("truecolor", "24bit")
            else ("256 colours" if "256color" in term else "basic colours")
        )
        out.append(Finding("colours", OK, f"{depth} (TERM={term})"))
    size = shutil.get_terminal_size((0, 0))
    if size.columns < MIN_SIZE[0] or size.lines < MIN_SIZE[1]:
        out.append(
            Finding(
                "terminal size",
                WARN,
                f"{size.columns}x{size.lines}",
                f"the console is laid out for {MIN_SIZE[0]}x{MIN_SIZE[1]} or more",
            )
        )
    else:
        out.append(Finding("terminal size", OK, f"{size.columns}x{size.lines}"))
    if env.get("TMUX"):
        out.extend(_tmux(timeout))
    return out


def _tmux(timeout: float) -> list[Finding]:
    """Inside tmux: escape-time (Esc is the console's back key) and passthrough."""
    out: list[Finding] = []
    code, value = command(["tmux", "show-options", "-gv", "escape-time"], timeout)
    if code == 0 and value.isdigit() and int(value) > MAX_ESCAPE_TIME_MS:
        out.append(
            Finding(
                "tmux escape-time",
                WARN,
                f"{value} ms: Esc waits that long",
                f"set -g escape-time {MAX_ESCAPE_TIME_MS // 5}",
            )
        )
    elif code == 0:
        out.append(Finding("tmux escape-time", OK, f"{value} ms"))
    code, value = command(["tmux", "show-options", "-gv", "allow-passthrough"], timeout)
    if code == 0 and value.strip() == "off":
        out.append(
            Finding(
                "tmux passthrough",
                WARN,
                "allow-passthrough off: escape sequences for the outer terminal stop at tmux",
                "set -g allow-passthrough on",
            )
        )
    elif code == 0:
        out.append(Finding("tmux passthrough", OK, f"allow-passthrough {value.strip()}"))
    else:
        out.append(
            Finding(
                "tmux passthrough",
                WARN,
                first_line(value) or "unknown",
                "tmux 3.3 or newer has allow-passthrough",
            )
        )
    return out
