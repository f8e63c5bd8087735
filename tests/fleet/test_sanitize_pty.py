"""Hostile bytes captured from a real pty, sanitised, and written back to a real pty: what a
terminal receives holds no control sequence except the SGR colours the project renders."""

from __future__ import annotations

import os
import re
import select
import subprocess
import time

from rocmtui.core.text.sanitize import StreamDecoder, safe_terminal_bytes

# printf(1) format: octal escapes for every byte that matters.
HOSTILE = (
    r"osc52 \033]52;c;aGVsbG8gd29ybGQ=\007 end\n"
    r"title \033]0;evil title\007 \033]2;other\033\\ end\n"
    r"link \033]8;;http://evil.example/\033\\click\033]8;;\033\\ end\n"
    r"reset \033c end\n"
    r"clear \033[2J\033[H\033[?1049h end\n"
    r"c1 \302\233"
    "2J \302\23331m \302\235"
    "0;t\302\234 \302\205 end\n"
    r"unterminated \033]0;this osc never ends\n"
    r"nul \000 bel \007 bs \010 del \177 end\n"
    r"bidi \342\200\256reversed\342\201\246 end\n"
    r"markup [/] [link=x]y[/link] [bold]z end\n"
    r"colour \033[1;31mred\033[0m \033[38;5;208morange\033[m end\n"
    r"bad utf8 \377\376 \303 end\n"
    r"split \360\237\230\200 emoji end\n"
)

OUR_SGR = re.compile(rb"\x1b\[0(?:;[0-9]+)*m")
CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
C1_BIDI = re.compile("[\x80-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def run_in_pty(argv: list[str], deadline: float = 60.0) -> bytes:
    """Run `argv` with its stdout on a fresh pty and return every byte the pty master saw."""
    master, slave = os.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    chunks: list[bytes] = []
    end = time.monotonic() + deadline
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the slave side is closed, all output read
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    return b"".join(chunks)


def through_pty(payload: bytes) -> bytes:
    """Write `payload` to a pty slave and return what the terminal side (master) received."""
    master, slave = os.openpty()
    received: list[bytes] = []
    try:
        view = memoryview(payload)
        while view:
            _, writable, _ = select.select([master], [slave], [], 5)
            if writable:
                n = os.write(slave, view[:4096])
                view = view[n:]
            while select.select([master], [], [], 0)[0]:
                received.append(os.read(master, 65536))
        while select.select([master], [], [], 0.2)[0]:
            received.append(os.read(master, 65536))
    finally:
        os.close(slave)
        os.close(master)
    return b"".join(received)


def assert_terminal_safe(data: bytes) -> None:
    """Only project SGR, text, tab and the pty's own CR LF newlines."""
    rest = OUR_SGR.sub(b"", data).replace(b"\r\n", b"\n")
    bad = CONTROL.search(rest.replace(b"\n", b""))
    assert bad is None, f"control byte {bad.group()!r} at {bad.start()}"
    text = rest.decode("utf-8")  # also proves the output is valid UTF-8
    bad_c = C1_BIDI.search(text)
    assert bad_c is None, f"{bad_c.group()!r} left"


def test_hostile_pty_capture_is_neutralised() -> None:
    """Captured bytes of every hazard, decoded in awkward chunks, reach a terminal harmless."""
    raw = run_in_pty(["printf", HOSTILE])
    # The capture really holds the hazards (a real terminal would have acted on these).
    for needle in (
        b"\x1b]52;",
        b"\x1b]0;",
        b"\x1b]8;;",
        b"\x1bc",
        b"\x1b[2J",
        b"\xc2\x9b",
        b"\x00",
    ):
        assert needle in raw
    assert b"\r\n" in raw  # the pty's ONLCR: every line ends CR LF

    dec = StreamDecoder()
    lines: list[str] = []
    for i in range(0, len(raw), 3):  # 3-byte reads split escapes and UTF-8 sequences alike
        lines += dec.feed(raw[i : i + 3])
    lines += dec.flush()
    by_word = {line.split(" ", 1)[0]: line for line in lines}

    assert by_word["osc52"] == "osc52  end"
    assert by_word["title"] == "title   end"
    assert by_word["link"] == "link click end"
    assert by_word["reset"] == "reset  end"
    assert by_word["unterminated"] == "unterminated "
    assert by_word["nul"] == "nul  bel  bs  del  end"
    assert by_word["bidi"] == "bidi reversed end"
    assert by_word["markup"] == "markup [/] [link=x]y[/link] [bold]z end"
    assert by_word["colour"] == "colour \x1b[0;1;31mred\x1b[0m \x1b[0;38;5;208morange\x1b[0m end"
    assert by_word["bad"] == "bad utf8 \ufffd\ufffd \ufffd end"
    assert by_word["split"] == "split 😀 emoji end"
    assert "\x1b" not in by_word["c1"]

    out = b"".join(safe_terminal_bytes(line) for line in lines)
    assert_terminal_safe(out)
    seen = through_pty(out)
    assert_terminal_safe(seen)
    assert b"[/] [link=x]y[/link]" in seen
    plain = b"".join(safe_terminal_bytes(line, color=False) for line in lines)
    assert b"\x1b" not in plain
    assert_terminal_safe(through_pty(plain))


def test_ten_megabyte_line_from_a_pty() -> None:
    """A 10 MB line captured from a pty is cut, counted, and followed by the next line."""
    script = "head -c 10000000 /dev/zero | tr '\\0' x; printf '\\033]52;c;eA==\\007next\\n'"
    raw = run_in_pty(["sh", "-c", script], deadline=120)
    assert len(raw) > 10_000_000
    dec = StreamDecoder()
    lines: list[str] = []
    peak = 0
    for i in range(0, len(raw), 65536):
        lines += dec.feed(raw[i : i + 65536])
        peak = max(peak, len(dec._pending))
    lines += dec.flush()
    assert peak <= dec.max_raw
    assert len(lines) == 1  # the line ends at "next"; the pty newline ends it
    assert lines[0].startswith("x" * 1000)
    assert "bytes cut]" in lines[0]
    assert dec.discarded_bytes > 9_900_000
    assert_terminal_safe(safe_terminal_bytes(lines[0]))
