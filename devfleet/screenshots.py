"""`python -m devfleet screenshots --dir DIR --out screenshots`: SVGs of the console on
the real local fleet (the one `make fleet-up` started in DIR).

It starts a small real build (bake/demo.hcl's `demo-pytorch` for gfx1201 on snoc-think) so the
screens have something to show, then drives the console headless at a fixed size and saves:
`fleet.svg` (the fleet screen while it builds), `bake.svg` (the bake dialog with what
`bake --print` resolves) and `logs.svg` (the build's log pane). Nothing here is recorded data.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

SIZE = (120, 36)
ROOT = Path(__file__).resolve().parents[1]


async def _until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"screenshots: gave up waiting for {what}")


def _demo_config(fleet_file: Path, out_dir: Path) -> Path:
    """The fleet's file with the demo bake file (small targets that really build)."""
    text = fleet_file.read_text()
    text = re.sub(r"(?m)^bake_file = .*$", f'bake_file = "{ROOT / "bake" / "demo.hcl"}"', text)
    path = out_dir / "demo-fleet.toml"
    path.write_text(text)
    return path


def _start_build(demo_config: Path) -> str:
    """A real, slow-enough demo build on a node in its own network namespace."""
    from rocmtui.core.bake.file import load_bake
    from rocmtui.core.config.fleetfile import load_config
    from rocmtui.core.jobs.launch import launch_job

    config = load_config(demo_config)
    node = next((n.name for n in config.nodes if not n.local), config.nodes[0].name)
    record = launch_job(
        config,
        load_bake(config.bake_file),
        target="demo-pytorch",
        arch="gfx1201",
        node_name=node,
        env=os.environ,
        overrides={"DEMO_NONCE": uuid.uuid4().hex[:8], "DEMO_SLEEP": "0.25", "DEMO_STEPS": "400"},
    )
    return record.id


async def _shoot(fleet_file: Path, out: Path, job_id: str) -> list[Path]:
    from rocmtui.console.app import RocmTui
    from rocmtui.console.dialogs.bake import BakeDialog
    from rocmtui.console.intents import LogRequested
    from rocmtui.core.config.fleetfile import load_config

    app = RocmTui(load_config(fleet_file))
    saved: list[Path] = []
    async with app.run_test(size=SIZE) as pilot:
        screen = app.fleet_screen

        def ready() -> bool:
            data = screen.data
            job = next((j for j in data.jobs if j.record.id == job_id), None)
            return bool(
                data.fleet
                and data.bake
                and data.bake.variables
                and len(screen.history.get("registry", ())) >= 8
                and job is not None
                and job.progress is not None
                and job.progress.ninja_total
            )

        await _until(ready, 120, "live fleet data and a running build")
        app.clear_notifications()
        await pilot.pause(0.3)
        saved.append(Path(app.save_screenshot("fleet.svg", str(out))))

        node = next(n.name for n in app.config.nodes if not n.local)
        table = screen.query_one("#nodes-table")
        table.focus()
        rows = screen.query_one("#nodes").table.row_keys  # type: ignore[attr-defined]
        table.move_cursor(row=rows.index(node))  # type: ignore[attr-defined]
        await pilot.press("b")
        await _until(lambda: isinstance(app.screen, BakeDialog), 10, "the bake dialog")
        dialog = app.screen
        assert isinstance(dialog, BakeDialog)
        if "pytorch" in dialog.bake.targets:
            dialog.query_one("#bake-target").value = "pytorch"  # type: ignore[attr-defined]
        await _until(lambda: bool(dialog.plan and dialog.plan.resolved), 60, "bake --print")
        await pilot.pause(0.3)
        saved.append(Path(app.save_screenshot("bake.svg", str(out))))
        await pilot.press("escape")

        screen.post_message(LogRequested(job_id))
        await _until(lambda: bool(app.logs_screen.panes), 10, "the log pane")
        await _until(lambda: "Building" in app.export_screenshot(), 60, "compile lines in the pane")
        await pilot.pause(0.5)
        saved.append(Path(app.save_screenshot("logs.svg", str(out))))
        app.fleet_screen.stop_feeds()
    return saved


def main(argv: Sequence[str] | None = None) -> int:
    """Render the screenshots; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m devfleet screenshots")
    parser.add_argument("--dir", type=Path, default=Path(".fleet"), help="the dev fleet's dir")
    parser.add_argument("--out", type=Path, default=Path("screenshots"), help="where SVGs go")
    args = parser.parse_args(argv)
    fleet_file = args.dir.resolve() / "rocmtui.toml"
    if not fleet_file.is_file():
        print(f"screenshots: no dev fleet in {args.dir} (run `make fleet-up` first)")
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TZ", "UTC")
    time.tzset()
    with tempfile.TemporaryDirectory(prefix="rocmtui-shots-") as tmp:
        os.environ["ROCMTUI_STATE_DIR"] = str(Path(tmp) / "state")  # keep the operator's jobs out
        # and its slot lock out of /run/lock (slots are keyed by the dev fleet's own sockets)
        os.environ["ROCMTUI_LOCK_DIR"] = str(Path(tmp) / "locks")
        job_id = _start_build(_demo_config(fleet_file, Path(tmp)))
        try:
            saved = asyncio.run(_shoot(fleet_file, args.out.resolve(), job_id))
        finally:
            from rocmtui.core.config.fleetfile import load_config
            from rocmtui.core.jobs.control import JobNotRunning, cancel_job

            with contextlib.suppress(JobNotRunning):
                cancel_job(load_config(fleet_file), job_id, grace=5)
    for path in saved:
        print(f"wrote {path}")
    return 0
