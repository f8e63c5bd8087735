"""What an operator reads is right and findable (#17's minor items), from recorded fleet data:
keys in, the screen's text out (tests/support/blackbox.py), notifications on.

Jobs table widths; failures as loud as stalls; one silence for every panel; a stall's
notification gone when the build prints again; toasts clear of the log's status line; tab
titles; the palette's Screenshot and the log view's actions; one meaning per key; actions on
the focused row only; the bake dialog's arch default and its variables.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace
from rich.style import Style

from rocmtui.console import keys
from rocmtui.console.app import RocmTui
from rocmtui.console.backend.access import FleetBackend
from rocmtui.console.backend.views import ProgressView
from rocmtui.console.messages import JobsUpdated
from rocmtui.core.states import JobState
from rocmtui.core.verdicts.failure import explain
from tests.support.blackbox import screen_text, toasts, until_text
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed, post_feed, recorded_app

LONG_FAILURE = "the supervisor was killed before it could record it; " * 4


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def jobs_rows(shown: str) -> list[str]:
    """The jobs panel's lines (header first) as the screen shows them."""
    lines = shown.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("─Jobs"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("─Variables"))
    return [ln for ln in lines[start + 1 : end] if ln.strip()]


@pytest.mark.parametrize("width", [80, 120, 200])
async def test_job_id_and_state_stay_on_screen_and_cut_cells_say_so(width: int) -> None:
    """One long failure text used to widen Progress until Took/Started/User/Job scrolled off
    (and at 80 columns nothing said that more lay to the right)."""
    jobs = list(recorded.jobs())
    jobs[3] = recorded.changed(jobs[3], error_step=None, message=LONG_FAILURE)
    app = recorded_app()
    async with app.run_test(size=(width, 40)) as pilot:
        await feed(app, pilot, with_jobs=False)
        app.fleet_screen.post_message(JobsUpdated(tuple(jobs)))
        shown = await until_text(pilot, r"20251130-0815-vllm-gfx1250")
        rows = jobs_rows(shown)
        assert rows[0].split()[0] == "State" and rows[0].rstrip().endswith("Job")
        ids = {j.record.id: j for j in jobs}
        for line in rows[1:]:
            job = ids[line.split()[-1]]  # each row ends in its whole job id
            assert line.split()[1] == str(job.record.state), line
        failed = next(ln for ln in rows if "gfx1250" in ln)
        assert failed.lstrip().startswith("✗ failed")
        assert failed.rstrip().endswith("20251130-0815-vllm-gfx1250")
        assert "…" in failed  # the long text is cut where it is, and says so
        assert all(len(ln.rstrip()) <= width for ln in rows)


async def test_a_resize_starts_a_scrolled_table_at_its_first_column() -> None:
    # the services table scrolls (the nodes and jobs tables fit their width instead)
    app = recorded_app()
    async with app.run_test(size=(70, 40)) as pilot:
        await feed(app, pilot)
        await pilot.press("tab")  # from the nodes table to the services table
        await pilot.press("right", "right", "right")
        shown = await until_text(pilot, r"^─Services")
        assert not re.search(r"^ State +Service", shown, re.M)  # scrolled: State is off screen
        await pilot.resize_terminal(100, 40)
        await until_text(pilot, r"^ State +Service")


async def test_a_build_that_fails_rings_and_says_where(monkeypatch: pytest.MonkeyPatch) -> None:
    app = recorded_app()
    rings: list[int] = []
    monkeypatch.setattr(app, "bell", lambda: rings.append(1))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await feed(app, pilot)  # an old failure among them: not news
        await pilot.pause()
        assert rings == []
        running, *rest = recorded.jobs()
        failed = recorded.changed(
            running,
            state=JobState.FAILED,
            ended_at=recorded.NOW,
            exit_code=1,
            error_step="#7 RUN fake-compile pytorch 2.15.0",
        )
        app.fleet_screen.post_message(JobsUpdated((failed, *rest)))
        shown = await until_text(pilot, r"Build failed")
        said = "demo-pytorch gfx1201 on snoc-think failed (exit 1) at #7 RUN fake-compile"
        assert said in toasts(shown), toasts(shown)
        assert rings == [1]
        app.fleet_screen.post_message(JobsUpdated((failed, *rest)))  # said once
        await pilot.pause()
        assert rings == [1]


async def test_the_log_pane_header_says_failed_in_red_and_error_lines_stand_out(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log"
    log.write_text(
        "#7 [demo-pytorch 1/1] RUN fake-compile\n#7 0.5 [1/2] Building HIP object a.o\n"
        "#7 0.9 /src/a.hip:3:1: error: use of undeclared identifier 'x'\n#7 ERROR: exit 1\n"
    )
    failed = recorded.changed(recorded.jobs()[3], job_dir=str(tmp_path), error_step="#7 RUN x")
    job = replace(failed, progress=ProgressView())  # its log is the folder's: `log`
    app = recorded_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await feed(app, pilot, with_jobs=False)
        app.fleet_screen.post_message(JobsUpdated((job,)))
        await until_text(pilot, r"✗ failed +demo-vllm")
        await pilot.press("tab", "tab", "l")
        shown = await until_text(pilot, r"undeclared identifier")
        assert re.search(r"✗ failed +demo-vllm gfx1250 on snoc-gaming", shown)
        bad = app.get_css_variables()["text-error"]
        header = app.screen.query_one(".logpane--header")
        assert _style_of(header.render_line(0), "✗ failed").color.triplet.hex == bad.lower()
        body = app.screen.query_one("LogBody")
        rows = [body.render_line(y) for y in range(4)]
        error_row = next(r for r in rows if "undeclared" in r.text)
        assert _style_of(error_row, "error:").bold
        plain_row = next(r for r in rows if "Building HIP" in r.text)
        assert not _style_of(plain_row, "Building").bold


def _style_of(strip: Any, text: str) -> Style:
    """The style of the segment of `strip` holding `text`."""
    for segment in strip:
        if text in segment.text:
            return segment.style or Style()
    raise AssertionError(f"{text!r} not in {strip.text!r}")


async def test_a_stall_notice_uses_the_threshold_and_goes_when_output_resumes() -> None:
    app = recorded_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await feed(app, pilot, stalled=True)
        shown = await until_text(pilot, r"Build stalled")
        assert "has printed nothing for 16m40s (stalled after 15m00s)" in toasts(shown)
        # every panel says one silence for that job
        assert re.search(r"snoc-think .*silent 16m40s", shown)
        assert re.search(r"‼ stalled +demo-pytorch .*silent 16m40s", shown)
        assert "ETA" not in "".join(ln for ln in shown.splitlines() if "‼ stalled" in ln)
        app.fleet_screen.post_message(JobsUpdated(recorded.jobs(stalled=False)))
        await until_text(pilot, r"Build stalled", absent=True, timeout=5)


async def test_notifications_leave_the_log_status_line_readable() -> None:
    app = recorded_app()
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "enter")
        shown = await until_text(pilot, r"FOLLOW")
        status = next(ln for ln in shown.splitlines() if "FOLLOW" in ln)
        app.notify("a long notification " * 6, title="Something happened")
        shown = await until_text(pilot, r"Something happened")
        assert status in shown.splitlines()  # the status line, whole, under the toast


async def test_tabs_say_their_jobs_state_and_two_panes_of_one_build_differ() -> None:
    first, second, *rest = recorded.jobs()
    again = recorded.changed(
        first, id="20251130-1125-pytorch-gfx1201", started_at=recorded.NOW - 300
    )
    app = recorded_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await feed(app, pilot, with_jobs=False)
        app.fleet_screen.post_message(JobsUpdated((again, first, second, *rest)))
        await until_text(pilot, r"20251130-1125")
        await pilot.press("tab", "tab", "enter", "escape", "down", "down", "enter")
        shown = await until_text(pilot, r"demo-pytorch gfx1201 snoc-think 11:25:00")
        assert "▶ demo-pytorch gfx1201 snoc-think 11:01:00" in shown
        done = recorded.changed(again, state=JobState.SUCCEEDED, ended_at=recorded.NOW, exit_code=0)
        app.fleet_screen.post_message(JobsUpdated((done, first, second, *rest)))
        await until_text(pilot, r"✓ demo-pytorch gfx1201 snoc-think 11:25:00")


async def test_the_palette_saves_a_screenshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ~/Downloads here (HOME is a test folder): the cwd
    app = recorded_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await feed(app, pilot)
        await pilot.press("ctrl+p", *"Screenshot")
        await until_text(pilot, r"Save an SVG")
        await pilot.press("enter")
        await until_text(pilot, r"Saved screenshot")
    saved = list(tmp_path.glob("*.svg"))
    assert len(saved) == 1 and "Variables" in saved[0].read_text()


async def test_the_palette_finds_the_log_views_actions_by_name() -> None:
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "enter")
        await until_text(pilot, r"FOLLOW")
        await pilot.press("ctrl+p", *"Follow")
        await until_text(pilot, r"key f\s*$")
        await pilot.press("enter")
        await until_text(pilot, r"FOLLOW", absent=True)  # follow is off now


def test_a_key_means_one_thing_across_the_screens() -> None:
    """`v` was "Log panes" on the fleet screen and "Select" inside a pane. A key may act in
    several scopes only as one action (c cancels, r rebuilds, l opens the log of the selected
    row); escape goes back, after clearing what a log view has open. A focused field's own
    moves (a table's cursor, the log prompt's editing) and a dialog's keys, while it is open,
    are theirs."""
    actions: dict[str, set[str]] = {}
    for entry in keys.CATALOG:
        if entry.scope in (*keys.FIELD_SCOPES, *keys.DIALOG_SCOPES):
            continue
        for key in entry.key.split(","):
            actions.setdefault(key.strip(), set()).add(entry.action)
    twice = {key: a for key, a in actions.items() if len(a) > 1 and key != "escape"}
    assert twice == {}


async def test_l_and_r_act_on_the_focused_panel_only() -> None:
    app = recorded_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "tab")  # nodes -> services -> jobs -> variables
        await pilot.press("l")
        await until_text(pilot, r"Select a job \(Jobs panel\) or a node first")
        await pilot.press("r")
        await until_text(pilot, r"\(b starts a new build\)")
        assert "─Nodes" in screen_text(app)  # no pane, no dialog opened
        await pilot.press("tab", "l")  # nodes, first row: snoc-strix's running build
        await until_text(pilot, r"demo-vllm gfx950 on snoc-strix")


async def test_the_dialog_defaults_to_the_bake_files_arch_and_says_what_a_node_does() -> None:
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(app, pilot)
        await pilot.press("b")  # on snoc-strix (gfx1151): the arch is still the file's
        shown = await until_text(pilot, r"bake --print \(lines")
        assert re.search(r"arch gfx950 .*node snoc-strix", shown)
        said = "arch gfx950: GFX_ARCH's default; snoc-strix is gfx1151; a new node keeps it"
        assert said in shown and "GFX_ARCH=gfx950 " in shown
        await pilot.press("tab", "tab", "enter", "down", "enter")  # node: snoc-think (gfx1201)
        shown = await until_text(pilot, r"snoc-think is gfx1201; a new node keeps it")
        assert re.search(r"arch gfx950 .*node snoc-think", shown)


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("NOT_A_VAR=1", "'NOT_A_VAR' is not a variable of the bake file"),
        ("GFX_ARCH=gfx1201", "set GFX_ARCH with --arch, not as a variable override"),
        ("DEMO_STEPS", "--set takes VAR=VALUE with a bake variable name, not 'DEMO_STEPS'"),
    ],
)
async def test_the_dialogs_variables_are_refused_as_the_cli_refuses_them(
    typed: str, said: str
) -> None:
    app = recorded_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await feed(app, pilot)
        await pilot.press("b")
        await until_text(pilot, r"bake --print \(lines")
        await pilot.press("tab", "tab", "tab", *typed, "enter")
        await until_text(pilot, re.escape(said))
        await pilot.press("ctrl+s")
        await until_text(pilot, r"Not started: ")
        assert "Bake" in screen_text(app)  # still in the dialog


async def test_the_dialogs_variables_reach_the_plan() -> None:
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(app, pilot)
        await pilot.press("b")
        await until_text(pilot, r"bake --print \(lines")
        await pilot.press("tab", "tab", "tab", *"DEMO_STEPS=7 ROCM_VERSION=7.9.9", "enter")
        shown = await until_text(pilot, r'▶ +"ROCM_VERSION": "7\.9\.9"')
        assert "DEMO_STEPS=7 " in shown and "ROCM_VERSION=7.9.9 " in shown  # the command


SECRET_BAKE = (
    'variable "HF_TOKEN" {\n  default = ""\n}\nvariable "GFX_ARCH" {\n  default = "gfx950"\n}\n'
    'target "demo-base" {\n  dockerfile-inline = "FROM scratch"\n'
    "  args = {\n    HF_TOKEN = HF_TOKEN\n    GFX_ARCH = GFX_ARCH\n  }\n}\n"
)


async def test_a_secret_from_the_environment_is_redacted_in_the_print_preview(
    tmp_path: Path,
) -> None:
    """HF_TOKEN in the operator's environment reaches bake (a variable of the bake file): bake
    prints it back as an arg, and the dialog's `--print` preview and its command line say
    `<redacted:HF_TOKEN>`; the value is nowhere on the screen."""
    bake_file = tmp_path / "secret.hcl"
    bake_file.write_text(SECRET_BAKE)
    config = replace(recorded.config(), bake_file=bake_file)
    env = {**os.environ, "HF_TOKEN": "hf_fromtheenv1234567"}
    backend = FleetBackend(config, env=env)
    app = RocmTui(config, backend=backend, live=False, clock=lambda: recorded.NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(app, pilot)
        await pilot.press("b")
        shown = await until_text(pilot, r'"HF_TOKEN": "<redacted:HF_TOKEN>"')
        assert "hf_fromtheenv1234567" not in shown
        assert "fromtheenv" not in shown


async def test_a_secret_set_in_the_dialog_is_never_shown(tmp_path: Path) -> None:
    """A variable named like a secret, set in the dialog: neither the command nor what bake
    printed shows its value (bake prints it back as an arg); only the field it is typed in."""
    bake_file = tmp_path / "secret.hcl"
    bake_file.write_text(
        'variable "HF_TOKEN" {\n  default = ""\n}\nvariable "GFX_ARCH" {\n  default = "gfx950"\n}\n'
        'target "demo-base" {\n  dockerfile-inline = "FROM scratch"\n'
        "  args = {\n    HF_TOKEN = HF_TOKEN\n    GFX_ARCH = GFX_ARCH\n  }\n}\n"
    )
    app = RocmTui(
        replace(recorded.config(), bake_file=bake_file), live=False, clock=lambda: recorded.NOW
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(app, pilot)
        await pilot.press("b")
        await until_text(pilot, r"bake --print \(lines")
        await pilot.press("tab", "tab", "tab", *"HF_TOKEN=hf_s3cretvalue42", "enter")
        shown = await until_text(pilot, r'"HF_TOKEN": "<redacted:HF_TOKEN>"')
        typed = [ln.strip(" │") for ln in shown.splitlines() if "hf_s3cretvalue42" in ln]
        assert typed == ["set HF_TOKEN=hf_s3cretvalue42"]  # the field, and nowhere else
        assert "HF_TOKEN=<redacted:HF_TOKEN>" in shown


async def test_the_first_failure_rings_though_the_console_began_with_no_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An empty first job list is the console's start too: a build that fails before the next
    list (a bad bake file fails at once) is news, and its notice says why and what next."""
    app = recorded_app()
    rings: list[int] = []
    monkeypatch.setattr(app, "bell", lambda: rings.append(1))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await feed(app, pilot, with_jobs=False)
        post_feed(app, JobsUpdated(()))
        await pilot.pause()
        running, *_ = recorded.jobs()
        failed = recorded.changed(
            running, state=JobState.FAILED, ended_at=recorded.NOW, exit_code=1,
            error_step="#7 RUN fake-compile pytorch 2.15.0",
        )  # fmt: skip
        why = explain(["no space left on device"], 1, "snoc-think")
        post_feed(app, JobsUpdated((replace(failed, failure=why),)))
        shown = await until_text(pilot, r"Build failed")
        said = " ".join(toasts(shown).split())
        assert "disk full; next: free space on snoc-think's data root" in said
        assert rings == [1]
        await until_text(pilot, r"✗ failed .* exit 1 disk full at #7 RUN fake-c")  # its row


async def test_a_failure_that_ended_before_the_console_began_is_not_news(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A build started elsewhere is listed once BuildKit's history is read: one that failed
    before the console began rings nothing, though it is new in the list."""
    app = recorded_app()
    rings: list[int] = []
    monkeypatch.setattr(app, "bell", lambda: rings.append(1))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await feed(app, pilot, with_jobs=False)
        post_feed(app, JobsUpdated(()))
        await pilot.pause()
        running, *_ = recorded.jobs()
        old = recorded.changed(
            running, state=JobState.FAILED, ended_at=recorded.NOW - 600, exit_code=1
        )
        post_feed(app, JobsUpdated((old,)))
        await until_text(pilot, r"✗ failed .* exit 1")
        assert rings == [] and "Build failed" not in screen_text(app)
