"""`rocmtui logs` and the follower: truncation, rotation, the end of a job, and a hostile log
whose bytes must never reach a terminal (checked on the bytes a real pty receives)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from rocmtui.core.jobs.logtail import FileTail
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.states import JobState
from tests.support.jobs import make_job, rocmtui_argv, run_cli
from tests.support.pty import run_in_pty

HOSTILE_PARTS = {
    "osc52": b"\x1b]52;c;ZXZpbCBjbGlwYm9hcmQ=\x07",
    "osc0": b"\x1b]0;pwned title\x07",
    "osc2": b"\x1b]2;other title\x1b\\",
    "osc8": b"\x1b]8;;http://evil.invalid/\x1b\\click me\x1b]8;;\x1b\\",
    "reset": b"\x1bc",
    "clear": b"\x1b[2J\x1b[H",
    "c1": "\u009b2J \u009d0;c1 title\u009c \u0085".encode(),
    "c1raw": b"\x9b2J\x9d0;raw\x9c",
    "nul": b"nul\x00byte",
    "bad_utf8": b"bad \xff\xfe\xc3( utf8",
    "markup": b"[/] [bold]x[/bold] [link=http://evil.invalid]y[/link]",
    "bidi": "abc\u202edcba\u2066x\u2069".encode(),
    "colour": b"\x1b[31mred\x1b[0m plain",
}
UNTERMINATED_OSC = b"\x1b]0;this title never ends and runs to the end of the line"


def config_file(tmp_path: Path) -> Path:
    """A fleet file whose state folder is this test's (no engine is used)."""
    path = tmp_path / "rocmtui.toml"
    path.write_text(
        f'state_dir = "{tmp_path / "state"}"\n\n[[nodes]]\nname = "snoc-think"\n'
        'docker_host = "unix:///nonexistent.sock"\n'
    )
    return path


def finished_job(tmp_path: Path, log: bytes) -> JobRecord:
    """A finished job in this test's store with `log` as its log."""
    store = JobStore(tmp_path / "state")
    job = make_job(store)
    job.log_path.write_bytes(log)
    return store.update(job.id, state=JobState.SUCCEEDED, exit_code=0, ended_at=time.time())


def assert_terminal_safe(data: bytes) -> None:
    """Only SGR escapes (ESC [ digits ; m); no OSC, no other CSI, no C0 but \\t \\n \\r, no C1."""
    for m in re.finditer(rb"\x1b", data):
        assert re.match(rb"\x1b\[[0-9;]*m", data[m.start() :]), data[m.start() : m.start() + 20]
    assert not re.search(rb"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]", data)
    text = data.decode("utf-8")  # valid UTF-8 throughout
    assert not re.search("[\u0080-\u009f\u202a-\u202e\u2066-\u2069]", text)


def test_hostile_log_through_rocmtui_logs_in_a_pty(tmp_path: Path) -> None:
    lines = [b"start"]
    lines += [name.encode() + b": " + part for name, part in HOSTILE_PARTS.items()]
    lines += [UNTERMINATED_OSC, b"after the unterminated osc", b"y" * 10_000_000, b"end"]
    job = finished_job(tmp_path, b"\n".join(lines) + b"\n")
    config = config_file(tmp_path)
    for args in (["logs", job.id], ["logs", "-f", job.id[-4:]]):
        code, out = run_in_pty(rocmtui_argv(config, *args))
        assert code == 0, out[-2000:]
        assert_terminal_safe(out)
        text = out.decode()
        assert "start" in text and "end" in text and "after the unterminated osc" in text
        assert "[/] [bold]x[/bold]" in text  # markup stays literal text
        assert "\x1b[" in text and "red" in text  # the kept colour, re-rendered
        assert "pwned" not in text and "evil.invalid/" not in text.replace("[link=http", "")
        assert len(out) < 200_000  # the 10 MB line was cut, not copied


def test_logs_plain_when_not_a_terminal(tmp_path: Path) -> None:
    job = finished_job(tmp_path, b"\x1b[32mgreen\x1b[0m\n\x1b]0;t\x07ok\n")
    out = run_cli(config_file(tmp_path), "logs", job.id)
    assert out.returncode == 0 and out.stdout == "green\nok\n"


def test_follower_survives_truncation_and_rotation(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_bytes(b"a1\na2\n")
    events: list[str] = []
    with FileTail(log, chunk_size=4, on_event=events.append) as follower:

        def drain() -> bytes:
            out = b""
            while chunk := follower.read():
                assert len(chunk) <= 4  # bounded reads
                out += chunk
            return out

        assert drain() == b"a1\na2\n"
        with open(log, "r+b") as fh:  # copytruncate-style rotation
            fh.truncate(0)
        log.write_bytes(b"b1\n")
        assert drain() == b"b1\n" and events == ["truncated"]
        writer = open(log, "ab")  # noqa: SIM115 - the writer keeps the old file open
        log.rename(tmp_path / "log.1")  # rename-style rotation
        writer.write(b"b2\n")
        writer.close()
        log.write_bytes(b"c1\n")
        assert drain() == b"b2\nc1\n"  # the old file to its end, then the new one
        assert events == ["truncated", "rotated"]


def test_logs_follow_any_process_until_the_job_ends(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "state")
    job = make_job(store)
    # a real process in the supervisor's place: holds the lock, writes, records the end
    writer = (
        "import fcntl, os, sys, time\n"
        "from rocmtui.core.jobs.store import JobStore\n"
        "from rocmtui.core.states import JobState\n"
        "store = JobStore(sys.argv[1]); job = store.get(sys.argv[2])\n"
        "fd = os.open(job.lock_path, os.O_RDWR | os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('ready', flush=True); sys.stdin.readline()\n"
        "with open(job.log_path, 'ab', buffering=0) as log:\n"
        "    for i in range(50):\n"
        "        log.write(b'line %d\\n' % i); time.sleep(0.02)\n"
        "store.update(job.id, state=JobState.SUCCEEDED, exit_code=0, ended_at=time.time())\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", writer, str(store.root), job.id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    follower = subprocess.Popen(
        rocmtui_argv(config_file(tmp_path), "logs", "-f", job.id),
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert follower.stdout is not None
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(follower.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    proc.stdin.write("go\n")
    proc.stdin.flush()
    proc.wait(timeout=60)
    assert follower.wait(timeout=30) == 0  # stopped on its own once the job ended
    reader.join(10)
    lines = got[0].decode().splitlines()
    assert lines[0] == "# header" and lines[1:] == [f"line {i}" for i in range(50)]
