"""The command line: every command listed, only the chosen command's module imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rocmtui.cli.main import COMMANDS, build_parser, chosen_command, main


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for name, (_, help_text) in COMMANDS.items():
        assert name in out and help_text.split()[0] in out


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_help_and_config(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    assert "--config" in capsys.readouterr().out
    build_parser()  # all modules register together without clashing


def test_chosen_command_skips_the_config_value() -> None:
    assert chosen_command(["--config", "status", "jobs", "--json"]) == "jobs"
    assert chosen_command(["--read-only"]) is None
    assert chosen_command(["nonsense"]) is None


def test_a_command_imports_only_its_own_module() -> None:
    probe = (
        "import sys\n"
        "from rocmtui.cli.main import main\n"
        "try:\n    main(['jobs', '--help'])\nexcept SystemExit:\n    pass\n"
        "print('LOADED:' + ' '.join(m for m in ('rocmtui.cli.status', 'httpx', 'textual') "
        "if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.splitlines()[-1] == "LOADED:", result.stdout.splitlines()[-1]
