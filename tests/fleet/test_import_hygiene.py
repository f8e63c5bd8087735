"""Which modules `rocmtui --help`, `rocmtui status` and the console's first frame load.

Start-up time is mostly imports, and an import hoisted to a module's top by a tidy-up is paid
by every path that imports the module, on every start. The imports a path does not need are
deferred into the functions that need them; this test holds those deferrals: each path runs
as a real process (the console on a pty, as the operator starts it) against a fleet file whose
node and services are unreachable on loopback, and the modules it loaded are read back
(`sys.modules` when the path is done, or when the console paints its first frame). A path
that loads one of its forbidden modules fails the test, naming the module and the path.
(The console attached to a running monitor is held in `test_monitor_attach_imports.py`.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.pty import Pty

#: Loaded by no path here: libraries of other commands, or of later screens.
NEVER = (
    "hcl2",  # the bake file's parser: `vars`, `bake`, the bake dialog
    "lark",
    "paramiko",  # no ssh node in the fleet file
    "prometheus_client",  # `monitor` and `serve`
    "rocmtui.core.matrix",  # `matrix`, the published screen
    "rocmtui.core.runs.chart",  # `runs`, the run board
)

#: `--help` answers from COMMANDS' one-line help: no command's module, no library.
HELP_MUST_NOT = (
    *NEVER,
    "textual",
    "rich",
    "docker",
    "httpx",
    "httpcore",
    "requests",
    "psutil",
    "msgspec",
    "sqlite3",
    "asyncio",
    "rocmtui.core",
    "rocmtui.cli.status",
    "rocmtui.console",
)

#: `status` probes (docker SDK, httpx, psutil) and reads the job store, but draws no console.
STATUS_MUST_NOT = (*NEVER, "textual", "rocmtui.console", "rocmtui.cli.bake", "rocmtui.cli.jobs")

#: The console's first frame: its own monitor process probes, not the console; later screens
#: and dialogs load when opened. (The job store is not held here: this fleet's first round
#: comes back at once and may be taken in, history and all, before the frame is painted;
#: `test_monitor_attach_imports.py` holds it before the frame.)
CONSOLE_MUST_NOT = (
    *NEVER,
    "docker",
    "httpx",
    "httpcore",
    "requests",
    "prometheus_client",
    "rocmtui.core.probes",
    "rocmtui.core.bake.resolve",
    "rocmtui.console.dialogs",
    "rocmtui.console.screens.logs",
    "rocmtui.console.screens.published",
    "rocmtui.console.screens.help",
    "rocmtui.console.widgets.logview",
)

UNREACHABLE = """\
[registry]
url = "http://127.0.0.1:9"
[webdav]
url = "http://127.0.0.1:9/"
[[nodes]]
name = "nowhere"
gfx = "gfx1201"
docker_host = "unix://{tmp}/no.sock"
"""

# Runs `rocmtui ARGS...` and writes what it loaded, however it ends (--help exits).
COMMAND = """
import atexit, json, sys
out = sys.argv.pop(1)
atexit.register(lambda: json.dump(sorted(sys.modules), open(out, "w")))
import rocmtui.cli.main as cli
sys.exit(cli.main(sys.argv[1:]))
"""

# Runs the console; writes what it loaded when its fleet screen paints its first frame.
CONSOLE = """
import json, os, sys
out = sys.argv.pop(1)
import rocmtui.console.run as run  # imports no Textual: patched before the console starts
console = run.run_console
def run_console(args, link=None):
    from rocmtui.console.screens.fleet import FleetScreen  # run_console's next import brings it
    paint = FleetScreen._compositor_refresh
    def compositor_refresh(screen):
        paint(screen)
        if not getattr(run, "reported", False):
            run.reported = True
            with open(out + ".part", "w") as f:
                json.dump(sorted(sys.modules), f)
            os.replace(out + ".part", out)
    FleetScreen._compositor_refresh = compositor_refresh
    return console(args, link)
run.run_console = run_console
import rocmtui.cli.main as cli
sys.exit(cli.main(sys.argv[1:]))
"""


def under(name: str, roots: tuple[str, ...]) -> bool:
    return any(name == root or name.startswith(root + ".") for root in roots)


def forbidden(loaded: list[str], must_not: tuple[str, ...]) -> list[str]:
    return sorted(name for name in loaded if under(name, must_not))


@pytest.fixture
def fleet_file(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(UNREACHABLE.format(tmp=tmp_path))
    return path


def command_loads(tmp_path: Path, *words: str) -> list[str]:
    out = tmp_path / "loaded.json"
    subprocess.run(
        [sys.executable, "-c", COMMAND, str(out), *words],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert out.exists(), f"rocmtui {' '.join(words)} did not report what it loaded"
    loaded: list[str] = json.loads(out.read_text())
    assert "rocmtui.cli.main" in loaded  # the report is the real one
    return loaded


def test_help_loads_no_library_and_no_command(tmp_path: Path) -> None:
    loaded = command_loads(tmp_path, "--help")
    early = forbidden(loaded, HELP_MUST_NOT)
    assert early == [], f"rocmtui --help loaded: {early}"


def test_status_loads_no_textual_and_no_other_command(tmp_path: Path, fleet_file: Path) -> None:
    loaded = command_loads(tmp_path, "--config", str(fleet_file), "status", "--json")
    assert "rocmtui.cli.status" in loaded and "rocmtui.core.probes.round" in loaded  # it probed
    early = forbidden(loaded, STATUS_MUST_NOT)
    assert early == [], f"rocmtui status loaded: {early}"


def test_the_consoles_first_frame_loads_nothing_it_does_not_draw(
    tmp_path: Path, fleet_file: Path
) -> None:
    out = tmp_path / "loaded.json"
    term = Pty([sys.executable, "-c", CONSOLE, str(out), "--config", str(fleet_file)], 120, 40)
    try:
        deadline = time.monotonic() + 60
        while not out.exists():
            assert time.monotonic() < deadline, f"no first frame: {bytes(term.out[-2000:])!r}"
            term.drain(0.1)  # the terminal read, so that the console is never held up
    finally:
        term.close()
    loaded: list[str] = json.loads(out.read_text())
    assert "textual.app" in loaded and "rocmtui.console.screens.fleet" in loaded
    early = forbidden(loaded, CONSOLE_MUST_NOT)
    assert early == [], f"the console's first frame loaded: {early}"
