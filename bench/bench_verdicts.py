"""Stall verdicts (issue 35): silence past the threshold to the verdict on screen.

An engine of its own (today's dockerd, in a netns) and the real console in tmux, its fleet file
at `refresh_seconds = 2` and `stall_after_seconds = 6`. Each run starts a demo build that goes
silent halfway, asleep (the "idle" verdict, `stalled`) or burning a core (the "busy" verdict, a
quiet `building` row); the moment the silence passes the threshold is the log's last write plus
`stall_after_seconds`, and the figure is the time from there to the verdict's words on the node
row (`idle:` or `quiet`). The target is one refresh: the anchor is `refresh_seconds` itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

from common import emit, median, quick, row  # noqa: E402
from tui import Tmux  # noqa: E402

REFRESH = 2.0
STALL_AFTER = 6.0
DEMO = REPO / "bake" / "demo.hcl"


def fleet_file(tmp: Path, docker_host: str) -> Path:
    config = tmp / "rocmtui.toml"
    config.write_text(
        f'bake_file = "{DEMO}"\nstate_dir = "{tmp / "state"}"\n'
        f"refresh_seconds = {REFRESH}\nstall_after_seconds = {STALL_AFTER}\n"
        "stall_busy_after_seconds = 600\n"
        '[registry]\nurl = "http://127.0.0.1:9"\n[webdav]\nurl = "http://127.0.0.1:9/"\n'
        f'[[nodes]]\nname = "bench"\ndocker_host = "{docker_host}"\ngfx = "gfx1201"\n'
    )
    return config


def cli(config: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "rocmtui", "--config", str(config), *args],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"rocmtui {' '.join(args)}: {done.stderr.strip()[-400:]}")
    return done.stdout.strip()


def silent_since(log: Path, timeout: float = 180.0) -> float:
    """The wall-clock time of the log's last write, once it has stayed unchanged for 1 s
    after the build's first compile line."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            text = log.read_bytes()
            mtime = log.stat().st_mtime
        except OSError:
            text, mtime = b"", 0.0
        if b"Building HIP object" in text and time.time() - mtime >= 1.0:
            return mtime
        time.sleep(0.05)
    raise TimeoutError(f"{log} never went silent")


def one_run(term: Tmux, config: Path, state: Path, silence: str, words: str) -> float | None:
    """Seconds from the threshold's crossing to `words` on the node row."""
    job = cli(
        config, "bake", "demo-base", "--node", "bench",
        "--set", "DEMO_STEPS=4", "--set", "DEMO_SLEEP=0.05",
        "--set", f"DEMO_SILENT_SECONDS={silence}",
        "--set", f"DEMO_NONCE={uuid.uuid4().hex[:8]}",
    )  # fmt: skip
    try:
        last = silent_since(state / "jobs" / job / "log")
        crossing = time.monotonic() + (last + STALL_AFTER - time.time())
        seen = term.wait(
            lambda s: any("bench" in ln and words in ln for ln in s.splitlines()), 120, crossing
        )
        return seen
    finally:
        cli(config, "cancel", job, "--grace", "2")


def main() -> int:
    from devfleet.baseimage import build_base_tar
    from devfleet.dockerd import CURRENT_ENGINE, start_engine

    runs = 1 if quick() else 3
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="rtbench-verdicts-") as tmp:
        root = Path(tmp)
        engine = start_engine(
            root, "bench", True, "gfx1201", base_tar=build_base_tar(root), kind=CURRENT_ENGINE
        )
        term: Tmux | None = None
        try:
            config = fleet_file(root, engine.docker_host)
            env = {"TERM": "xterm-256color", "TZ": "UTC"}
            term = Tmux([sys.executable, "-m", "rocmtui", "--config", str(config)], 200, 40)
            term.start(env)
            term.wait(lambda s: "bench" in s and "ok" in s, 60)
            idle = [one_run(term, config, root / "state", "90", "idle:") for _ in range(runs)]
            busy = [one_run(term, config, root / "state", "busy:60", "quiet") for _ in range(runs)]
        finally:
            if term is not None:
                term.close()
            engine.stop(grace=5.0)
    rows = []
    for name, values in (("idle (stalled)", idle), ("busy (quiet)", busy)):
        got = [v for v in values if v is not None]
        value = median(got) if got else None
        rows.append(
            row(
                f"silence past the threshold to the {name} verdict on screen",
                value,
                REFRESH,
                unit="s",
                anchor_name="one refresh (refresh_seconds)",
                target=f"<= {REFRESH:g} s",
                ok=None if value is None else value <= REFRESH,
                note=f"median of {len(got)} of {len(values)} runs; each: "
                + ", ".join("none" if v is None else f"{v:.2f}" for v in values),
            )
        )
    emit(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
