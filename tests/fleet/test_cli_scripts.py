"""The command line for scripts and shells: completion, --color, --json, quick answers.

Completion is exercised the way bash uses it: an interactive `bash -i` sources the script,
`complete -p` shows it is registered, and the completion function (what Tab calls) fills
COMPREPLY from a real job store and the real bake file; `compgen` filters as bash does. zsh and
fish check their scripts' syntax themselves.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from rocmtui.core.jobs.store import JobStore
from tests.support.jobs import engineless_fleet, make_job, offline_config, rocmtui_argv
from tests.support.pty import run_in_pty
from tests.support.realparts import require

BIN = Path(sys.executable).parent  # the `rocmtui` entry point of this environment


def rocmtui(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "rocmtui"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
    )


def modules_after(*argv: str) -> set[str]:
    """The modules `main(argv)` imported, in a fresh interpreter."""
    probe = (
        "import sys, contextlib, io\n"
        "from rocmtui.cli.main import main\n"
        "quiet = io.StringIO()\n"
        "with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):\n"
        "    try:\n        main(sys.argv[1:])\n    except SystemExit:\n        pass\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=60
    )
    return set(out.stdout.split())


@pytest.mark.parametrize(
    "argv",
    [["--version"], ["completion", "bash"], ["statsu"], ["--config", "x.toml", "bak"]],
)
def test_quick_answers_import_no_textual_and_start_no_probe(argv: list[str]) -> None:
    loaded = modules_after(*argv)
    assert "rocmtui.cli.main" in loaded
    for heavy in ("textual", "rocmtui.core.hostmonitor.ownchild", "docker", "httpx", "asyncio"):
        assert heavy not in loaded, (argv, heavy)


def test_an_unknown_command_is_one_line_with_the_nearest() -> None:
    out = rocmtui("statsu")
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr == (
        "rocmtui: unknown command 'statsu' (did you mean status?); `rocmtui --help` lists them\n"
    )


# --- completion ------------------------------------------------------------------------------


def bash_complete(line: str, tmp_path: Path, config: Path, **env: str) -> list[str]:
    """What Tab offers at the end of `line` in an interactive bash with the script sourced."""
    words = line.split(" ")
    script = (
        "source <(rocmtui completion bash) || exit 9\n"
        "complete -p rocmtui >&2\n"
        f"COMP_LINE={json.dumps(line)}; COMP_POINT=${{#COMP_LINE}}\n"
        f"COMP_WORDS=({' '.join(json.dumps(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        "_shtab_rocmtui\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    out = subprocess.run(
        ["bash", "--norc", "--noprofile", "-i", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={
            **os.environ,
            "PATH": f"{BIN}:{os.environ['PATH']}",
            "ROCMTUI_CONFIG": str(config),
            **env,
        },
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr
    assert "complete -o bashdefault -F _shtab_rocmtui rocmtui" in out.stderr
    assert "Traceback" not in out.stderr and "rocmtui:" not in out.stderr
    return [w for w in out.stdout.split("\n") if w]


def test_bash_completes_commands_job_ids_targets_and_nodes(tmp_path: Path) -> None:
    config = offline_config(tmp_path)
    store = JobStore(tmp_path / "state")
    jobs = [make_job(store).id for _ in range(3)]
    assert bash_complete("rocmtui ca", tmp_path, config) == ["cancel"]
    assert sorted(bash_complete("rocmtui logs ", tmp_path, config)) == sorted(jobs)
    # ids share their minute; the random tail may share its first digits too,
    # so the expected words are the ids with that prefix, never a guess
    prefix = jobs[1][:-2]
    got = bash_complete(f"rocmtui cancel {prefix}", tmp_path, config)
    assert sorted(got) == sorted(j for j in jobs if j.startswith(prefix))
    assert jobs[1] in got
    assert bash_complete(f"rocmtui cancel {jobs[1]}", tmp_path, config) == [jobs[1]]
    targets = bash_complete("rocmtui bake demo-", tmp_path, config)
    assert {"demo-base", "demo-vllm", "demo-vllm-push"} <= set(targets)
    assert bash_complete("rocmtui bake demo-base --node ", tmp_path, config) == ["snoc-think"]
    assert "gfx1201" in bash_complete("rocmtui bake demo-base --arch gfx", tmp_path, config)
    # compgen filters the words the helper gives, as Tab does
    listed = rocmtui("completion", "--words", "targets", ROCMTUI_CONFIG=str(config)).stdout
    assert set(listed.split()) >= set(targets)


def test_a_locked_or_corrupt_store_completes_nothing_and_says_nothing(tmp_path: Path) -> None:
    config = offline_config(tmp_path)
    store = JobStore(tmp_path / "state")
    make_job(store)
    holder = sqlite3.connect(store.db_path, timeout=0)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("UPDATE jobs SET user = user")  # the write takes the lock for good
    try:
        words = rocmtui("completion", "--words", "jobs", ROCMTUI_CONFIG=str(config))
        assert (words.returncode, words.stdout, words.stderr) == (0, "", "")
        assert bash_complete("rocmtui logs ", tmp_path, config) == []
    finally:
        holder.rollback()
        holder.close()
    (tmp_path / "state" / "jobs.sqlite").write_bytes(b"not a database" * 100)
    for name in ("jobs.sqlite-wal", "jobs.sqlite-shm"):
        (tmp_path / "state" / name).unlink(missing_ok=True)
    words = rocmtui("completion", "--words", "jobs", ROCMTUI_CONFIG=str(config))
    assert (words.returncode, words.stdout, words.stderr) == (0, "", "")
    # a missing state folder is not created by completing
    (tmp_path / "fresh").mkdir()
    other = offline_config(tmp_path / "fresh")
    assert rocmtui("completion", "--words", "jobs", ROCMTUI_CONFIG=str(other)).stdout == ""
    assert not (tmp_path / "fresh" / "state").exists()


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_parse_and_ask_rocmtui(shell: str, tmp_path: Path) -> None:
    require(shell)
    text = rocmtui("completion", shell).stdout
    assert "rocmtui completion --words jobs" in text
    assert "rocmtui completion --words targets" in text
    path = tmp_path / f"rocmtui.{shell}"
    path.write_text(text)
    check = subprocess.run([shell, "-n", str(path)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr


# --- colour -----------------------------------------------------------------------------------


def coloured_job(tmp_path: Path) -> tuple[Path, str]:
    config = offline_config(tmp_path)
    store = JobStore(tmp_path / "state")
    job = make_job(store)
    job.log_path.write_bytes(b"plain \x1b[31mred\x1b[0m text\n\x1b]52;c;ZXZpbA==\x07x\n")
    store.update(job.id, state="failed", exit_code=1, ended_at=job.started_at + 1)
    return config, job.id


@pytest.mark.parametrize(
    ("flags", "env", "colour"),
    [
        ([], {}, False),  # a pipe: no colour
        (["--color", "always"], {}, True),
        (["--color", "always"], {"NO_COLOR": "1"}, True),  # the flag wins over the variable
        ([], {"FORCE_COLOR": "1"}, True),
        ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        (["--color", "never"], {"FORCE_COLOR": "1"}, False),
    ],
)
def test_logs_colour_through_a_pipe(
    tmp_path: Path, flags: list[str], env: dict[str, str], colour: bool
) -> None:
    config, job_id = coloured_job(tmp_path)
    clean = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    out = subprocess.run(
        [str(BIN / "rocmtui"), "--config", str(config), "logs", job_id, *flags],
        capture_output=True,
        timeout=60,
        env={**clean, **env},
    )
    assert out.returncode == 1  # a failed job's log: 1, as the README's table says
    assert (b"31m" in out.stdout) is colour  # re-rendered by the sanitiser: ESC[0;31m
    assert b"\x1b]52" not in out.stdout  # never anything but SGR
    assert b"red" in out.stdout


# colour parameters of SGR: 30-37/90-97 and 40-47/100-107 (a 16-colour), 38/48 (256 and RGB)
COLOUR = re.compile(rb"\x1b\[(?:[0-9;]*;)?(?:3[0-8]|4[0-8]|9[0-7]|10[0-7])(?:;[0-9;]*)?m")


def test_no_color_on_a_terminal(tmp_path: Path) -> None:
    """On a terminal the commands colour what they print; NO_COLOR set, none of them does
    (bold and dim may stay: they are not colour)."""
    config, job_id = coloured_job(tmp_path)
    engineless = engineless_fleet(tmp_path)
    for argv in (
        rocmtui_argv(config, "logs", job_id),  # the log's own colour, re-rendered
        rocmtui_argv(engineless, "status"),  # state words
    ):
        _, coloured = run_in_pty(argv)
        assert COLOUR.search(coloured), (argv, coloured[:400])
        _, plain = run_in_pty(argv, NO_COLOR="1")
        assert not COLOUR.search(plain), (argv, plain[:400])
        assert plain.replace(b"\r", b"").strip()  # it still printed


# --- --json for scripts -----------------------------------------------------------------------


def test_bake_json_error_and_cancel_json(tmp_path: Path) -> None:
    config = offline_config(tmp_path)
    out = rocmtui("--config", str(config), "bake", "no-such-target", "--json")
    assert out.returncode == 2
    answer = json.loads(out.stdout)
    assert answer["started"] is False and "no-such-target" in answer["error"]
    out = rocmtui("--config", str(config), "bake", "demo-vllm-push", "--json")
    assert out.returncode == 1
    answer = json.loads(out.stdout)
    assert answer["started"] is False and "--yes" in answer["refused"]
    assert answer["blocking_job"] is None
    out = rocmtui("--config", str(config), "cancel", "20990101-0000-beef", "--json")
    assert out.returncode == 2
    assert json.loads(out.stdout)["cancelled"] is False
    store = JobStore(tmp_path / "state")
    done = make_job(store)
    store.update(done.id, state="succeeded", exit_code=0, ended_at=done.started_at + 1)
    out = rocmtui("--config", str(config), "cancel", done.id, "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["cancelled"] is False


def test_bash_completes_run_ids_after_runs_show(tmp_path: Path) -> None:
    from rocmtui.core.runs.book import RunBook
    from rocmtui.core.runs.run import Run

    config = offline_config(tmp_path)
    book = RunBook(JobStore(tmp_path / "state"))
    ids = ["run-20261206-1200-ab12", "run-20261206-1300-cd34"]
    for n, run_id in enumerate(ids):
        book.create(Run(run_id, "default", 1.0e9 + n, "rocmtui", "me", ("snoc-think",)))
    assert sorted(bash_complete("rocmtui runs show ", tmp_path, config)) == ids
    assert bash_complete("rocmtui runs show run-20261206-13", tmp_path, config) == [ids[1]]
