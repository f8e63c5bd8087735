"""`rocmtui doctor` on installed systemd units (rocmtui/core/doctor/systemd.py): deploy/'s units,
installed as an operator would (their ExecStart pointed at this rocmtui), pass the command
checks; a serve unit that would be refused at start, one whose program is missing, and one
without the monitor's unit beside it are named with file and line; `systemctl is-active` is
asked for real (this machine was not booted with systemd: a warning that says so)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from rocmtui.core.doctor.checks import FAIL, OK, WARN
from rocmtui.core.doctor.systemd import check_units

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "systemd"
ROCMTUI = Path(sys.executable).parent / "rocmtui"  # the venv's entry point


def install(folder: Path, unit: str, **edit: str) -> Path:
    """deploy/'s system unit copied into `folder`, ExecStart's program made this rocmtui."""
    folder.mkdir(parents=True, exist_ok=True)
    text = (DEPLOY / unit).read_text().replace("/usr/local/bin/rocmtui", str(ROCMTUI))
    for old, new in edit.items():
        text = text.replace(old.replace("_", " "), new)
    path = folder / unit
    path.write_text(text)
    return path


def test_no_unit_is_fine(tmp_path: Path) -> None:
    (found,) = check_units({"HOME": str(tmp_path)}, 5, [tmp_path / "system"])
    assert found.verdict == OK and "no rocmtui unit installed" in found.detail


def test_the_deployed_units_pass_and_their_state_is_asked(tmp_path: Path) -> None:
    system = tmp_path / "system"
    install(system, "rocmtui-monitor.service")
    install(system, "rocmtui-serve.service")
    found = check_units({"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, 5, [system])
    assert len(found) == 2, found  # one state line per unit: no command problem
    assert [f.detail.split(" ")[0] for f in found] == ["rocmtui-monitor", "rocmtui-serve"]
    for finding in found:
        assert str(system) in finding.detail
    if shutil.which("systemctl") is not None:
        said = subprocess.run(
            ["systemctl", "is-active", "rocmtui-serve.service"], capture_output=True, text=True
        )
        words = (said.stdout.strip() or said.stderr.strip()).splitlines()[0][:120]
        assert found[1].detail.endswith(words)  # what systemctl really said, not a guess
        assert found[1].verdict == (
            OK if words == "active" else FAIL if words == "failed" else WARN
        )


def test_a_serve_unit_that_would_be_refused_is_named_with_its_line(tmp_path: Path) -> None:
    system = tmp_path / "system"
    install(system, "rocmtui-monitor.service")
    path = install(system, "rocmtui-serve.service", **{"127.0.0.1:8765": "0.0.0.0:8765"})
    found = check_units({"HOME": str(tmp_path)}, 5, [system])
    bad = [f for f in found if f.verdict == FAIL]
    assert len(bad) == 1, found
    line = next(n for n, t in enumerate(path.read_text().splitlines(), 1) if "ExecStart" in t)
    assert f"{path}:{line}" in bad[0].detail and "not a loopback address" in bad[0].detail
    # --insecure on purpose passes that check
    install(system, "rocmtui-serve.service", **{"127.0.0.1:8765": "0.0.0.0:8765 --insecure"})
    assert not [
        f for f in check_units({"HOME": str(tmp_path)}, 5, [system]) if "loopback" in f.detail
    ]


def test_a_missing_program_and_a_lonely_serve_unit(tmp_path: Path) -> None:
    user = tmp_path / "config" / "systemd" / "user"
    user.mkdir(parents=True)
    text = (DEPLOY / "user" / "rocmtui-serve.service").read_text()
    (user / "rocmtui-serve.service").write_text(text)  # %h/.local/bin/rocmtui: not there
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    (found,) = check_units(env, 5, [tmp_path / "system"])
    assert found.verdict == FAIL and "not an executable file" in found.detail
    assert f"{tmp_path}/.local/bin/rocmtui" in found.detail  # %h read as the home
    (user / "rocmtui-serve.service").write_text(text.replace("%h/.local/bin/rocmtui", str(ROCMTUI)))
    found = check_units(env, 5, [tmp_path / "system"])
    assert found[0].verdict == WARN and "no rocmtui-monitor unit beside it" in found[0].detail
