"""The command line: every command listed, only the chosen command's module imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rocmtui.cli.main import (
    COMMANDS,
    build_parser,
    chosen_command,
    config_word,
    main,
    start_monitor,
)
from rocmtui.core.hostmonitor import ownchild


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


def test_a_mistyped_option_names_it_and_says_commands_exist() -> None:
    """The console's parser builds no command's parser (start-up), yet its usage on a mistyped
    option still shows that commands exist. Run as the operator runs it: no console opens."""
    done = subprocess.run(
        [sys.executable, "-m", "rocmtui", "--bogus"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "unrecognized arguments: --bogus" in done.stderr
    assert "COMMAND ..." in done.stderr and done.stdout == ""


@pytest.mark.parametrize("words", [["--conf=fleet.toml"], ["--read"], ["status", "--js"]])
def test_an_abbreviated_option_is_refused_not_guessed(words: list[str]) -> None:
    """`--conf=X` was taken for `--config X` by argparse while the console, which reads
    `--config` before parsing to find the fleet's monitor, attached to the default fleet's."""
    done = subprocess.run(
        [sys.executable, "-m", "rocmtui", *words], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert f"unrecognized arguments: {words[-1]}" in done.stderr
    assert done.stdout == ""


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


def test_config_word_reads_both_spellings() -> None:
    assert config_word(["--read-only", "--config", "a.toml"]) == "a.toml"
    assert config_word(["--config=b.toml"]) == "b.toml"
    assert config_word(["--read-only"]) is None
    assert config_word(["--config"]) is None  # argparse will say what is missing


def test_only_the_console_starts_its_monitor_early() -> None:
    for words in (["status"], ["--config", "x.toml", "jobs"], ["--help"], ["--version"]):
        assert start_monitor(words) is None, words


QUIET_FLEET = """
[registry]
url = "http://127.0.0.1:9"
[webdav]
url = "http://127.0.0.1:9/"
[[nodes]]
name = "nowhere"
docker_host = "unix:///nonexistent/docker.sock"
"""  # probes that fail at once, on this machine only: the monitor stays up until stopped


@pytest.mark.parametrize(
    "words",
    [
        ["--config", "{bad}"],
        ["--config={bad}", "--read-only"],
        ["--config", "{good}", "--no-such-option"],
    ],
)
def test_the_early_monitor_is_stopped_when_the_console_never_opens(
    words: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad, good = tmp_path / "bad.toml", tmp_path / "good.toml"
    bad.write_text("refresh_seconds = 'soon'\n")
    good.write_text(QUIET_FLEET)
    started: list[subprocess.Popen[bytes]] = []
    real_start = ownchild.start

    def start(path: Path | str | None) -> subprocess.Popen[bytes]:
        started.append(real_start(path))
        return started[-1]

    monkeypatch.setattr(ownchild, "start", start)
    try:
        code = main([w.format(bad=bad, good=good) for w in words])
    except SystemExit as exc:  # argparse refuses an unknown option
        code = exc.code
    assert code == 2
    assert len(started) == 1  # the console's monitor was started first thing ...
    assert started[0].poll() is not None  # ... and is gone again, reaped
