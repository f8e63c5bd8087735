"""Where rocmtui says what went wrong: logs under the state folder's `logs/`.

- `rocmtui.log`: the debug log of the console and the commands, written only with `--debug`
  or `ROCMTUI_DEBUG=1`; rotating (`MAX_BYTES`, `BACKUPS` old files).
- `monitor.log`: the monitor process's stderr, always (a probe round that raised leaves its
  traceback there, and the console's status line points at it); rotated when the process
  starts, as it is one open file for the process's whole life.

Every record passes through the project's redactor first: secret-named environment values
and `user:password@` in URLs never reach a log. Nothing here ever fails a command: a debug log
that cannot be opened or written (a full disk, a read-only state folder) is said once on
stderr, with the condition, and then not written (never logging's own traceback per record).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.paths import state_dir
from rocmtui.core.sharing import make_folder, open_file, sharing_of

DEBUG_LOG = "rocmtui.log"
MONITOR_LOG = "monitor.log"
MAX_BYTES = 1 << 20
BACKUPS = 3
FORMAT = "%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"


def debug_wanted(env: Mapping[str, str] | None = None) -> bool:
    """`--debug` (main sets ROCMTUI_DEBUG=1 for it) or ROCMTUI_DEBUG set to anything but 0."""
    env = os.environ if env is None else env
    return env.get("ROCMTUI_DEBUG", "") not in ("", "0")


def log_dir(config: FleetConfig | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The folder of rocmtui's own logs."""
    return state_dir(config, env) / "logs"


class _Redacting(logging.Filter):
    """Redact each record's final text (message, arguments and traceback) in place."""

    def __init__(self) -> None:
        super().__init__()
        # on first use: made with a log handler (the console makes one only with --debug)
        from rocmtui.core.text.redact import Redactor

        self.redactor = Redactor(os.environ)

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.msg = self.redactor.redact_text(text)
        record.args = None
        if record.exc_text:
            record.exc_text = self.redactor.redact_text(record.exc_text)
        return True


def setup(config: FleetConfig | None = None, env: Mapping[str, str] | None = None) -> Path | None:
    """With debugging wanted: send every logger's records to the rotating debug log; returns
    its path (None when not wanted, or when the folder cannot be written)."""
    if not debug_wanted(env):
        return None
    import logging.handlers  # only when debugging: the console's start-up never pays for it

    path = log_dir(config, env) / DEBUG_LOG
    root = logging.getLogger()
    if any(getattr(h, "baseFilename", None) == str(path) for h in root.handlers):
        return path

    sharing = sharing_of(state_dir(config, env))

    class OnceOnFailure(logging.handlers.RotatingFileHandler):
        """Says the first failed write on stderr and leaves the log alone after it; every
        file it opens (rotations too) gets the state folder's file mode, not the umask's."""

        def _open(self) -> Any:
            stream = super()._open()
            with contextlib.suppress(OSError):
                os.fchmod(stream.fileno(), sharing.file_mode)
            return stream

        def handleError(self, record: logging.LogRecord) -> None:
            _say_not_written(path, sys.exc_info()[1])
            logging.getLogger().removeHandler(self)
            with contextlib.suppress(Exception):
                self.close()

    try:
        make_folder(path.parent.parent, 0o700, parents=True)  # a new state folder is private
        make_folder(path.parent, sharing.common_folder_mode)
        handler = OnceOnFailure(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    except OSError as exc:
        _say_not_written(path, exc)
        return None
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(_Redacting())
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    logging.getLogger("rocmtui").debug("rocmtui %s: %s", os.getpid(), " ".join(sys.argv))
    return path


def _say_not_written(path: Path, exc: BaseException | None) -> None:
    """One line on stderr: the debug log asked for is not being written, and why."""
    # on first use: only when the debug log cannot be written
    from rocmtui.core.diskroom import describe

    why = describe(path, exc) if exc is not None else str(path)
    with contextlib.suppress(Exception):
        sys.stderr.write(f"rocmtui: the debug log is not written: {why}\n")
        sys.stderr.flush()


def monitor_log(config: FleetConfig | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Where the monitor process's stderr goes."""
    return log_dir(config, env) / MONITOR_LOG


def rotate(path: Path, max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> None:
    """Shift `path` to `path.1` (and older ones along) once it has grown past `max_bytes`."""
    try:
        if path.stat().st_size < max_bytes:
            return
    except OSError:
        return
    with contextlib.suppress(OSError):
        for n in range(backups - 1, 0, -1):
            older = path.with_name(f"{path.name}.{n}")
            if older.exists():
                older.replace(path.with_name(f"{path.name}.{n + 1}"))
        path.replace(path.with_name(f"{path.name}.1"))


def redirect_stderr(
    config: FleetConfig | None = None, env: Mapping[str, str] | None = None
) -> Path | None:
    """In the monitor process: make fd 2 the monitor log (appending), and log warnings (all
    records when debugging) to it with a time stamp. Returns the path, or None when the log
    cannot be opened (stderr is then left as the parent gave it)."""
    path = monitor_log(config, env)
    sharing = sharing_of(state_dir(config, env))
    try:
        make_folder(path.parent, sharing.common_folder_mode, parents=True)
        rotate(path)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
        fd = open_file(path, flags, sharing.file_mode)
    except OSError:
        return None
    sys.stderr.flush()
    os.dup2(fd, 2)  # dup2 clears CLOEXEC on fd 2: bake or ssh children would inherit it too
    os.close(fd)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(_Redacting())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug_wanted(env) else logging.WARNING)
    return path
