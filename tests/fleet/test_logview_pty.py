"""The bytes a terminal receives from the log viewer: no escape from the log reaches it.

The viewer (`python -m rocmtui.console.logviewer`) runs in a real pty on a log full of terminal
attacks. Everything it writes is captured and checked: no OSC 52 unless `y` was pressed (and
then only the sanitised text), no title change, no `ESC c`, no C1 control, nothing of an OSC 8
link, and every escape sequence is one Textual itself writes: its OSC 52 on copy, and of CSI
only colours (SGR), cursor moves with a row and column (CUP) and the modes it sets on start and
resets on exit (listed below, each by its bytes). A log's `ESC[2J` or `ESC[?1049l` is none of
them. An SVG snapshot cannot see any of this; only the pty's bytes can.
"""

from __future__ import annotations

import base64
import re
import sys
from pathlib import Path

import pytest

from tests.support.pty import Pty

# a real pty read under a 20 s deadline: four workers on two cores starve it
pytestmark = pytest.mark.alone

ATTACKS = (
    b"\x1b]52;c;UFdORUQtQ0xJUA==\x07clip-line\n"  # clipboard write of "PWNED-CLIP"
    b"\x1b]0;PWNED-TITLE\x07title-line\n"
    b"\x1b]2;PWNED-TITLE2\x1b\\title2-line\n"
    b"\x1bcreset-line\n"
    b"\xc2\x9b2J\xc2\x9d0;PWNED-C1\xc2\x9c c1-line\n"
    b"\x9b2J raw-8bit-line\n"
    b"\x1b]8;;http://evil.invalid/PWNED-LINK\x07link-line\x1b]8;;\x07\n"
    b"\x1bP+qPWNED-DCS\x1b\\dcs-line\n"
    b"\x1b[2J\x1b[H\x1b[?1049l\x1b[31mcolour-line\x1b[0m\n"
    b"\x1b]52;c;UFdORUQtU1BMSVQ="  # an OSC split over two lines, never terminated
    b"\nsplit-line\n"
    b"END-MARKER\n"
)


def foreign_escapes(data: bytes) -> list[bytes]:
    """Escape sequences that are not Textual's own: CSI, OSC 22 pointer shape, OSC 52 copy."""
    found = []
    for m in re.finditer(rb"\x1b(.)", data, re.DOTALL):
        if m.group(1) == b"[":
            continue
        if data.startswith(b"\x1b]52;c;", m.start()):
            continue
        if re.match(rb"\x1b\]22;[a-z-]{1,20}\x07", data[m.start() : m.start() + 30]):
            continue  # Textual's own pointer-shape request (OSC 22 "default")
        found.append(data[m.start() : m.start() + 40])
    return found


CSI = re.compile(rb"\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]")  # ECMA-48's shape
SGR = re.compile(rb"\x1b\[[0-9;:]*m")
CUP = re.compile(rb"\x1b\[[0-9]+;[0-9]+H")  # Textual always names the row and the column
# What Textual 8.2 writes besides: on start (mouse, focus, paste, alt screen, the kitty
# keyboard flags, two mode queries, cursor hidden, no autowrap) and their resets on exit.
TEXTUAL_START = {
    b"\x1b[?1000h", b"\x1b[?1003h", b"\x1b[?1004h", b"\x1b[?1006h", b"\x1b[?1015h",
    b"\x1b[?1049h", b"\x1b[?2004h", b"\x1b[?2026$p", b"\x1b[?2048$p", b"\x1b[?25l",
    b"\x1b[?7l", b"\x1b[>25u",
}  # fmt: skip
TEXTUAL_EXIT = {
    b"\x1b[?1000l", b"\x1b[?1003l", b"\x1b[?1004l", b"\x1b[?1006l", b"\x1b[?1015l",
    b"\x1b[?1049l", b"\x1b[?2004l", b"\x1b[?25h", b"\x1b[?7h", b"\x1b[<u",
}  # fmt: skip


def foreign_csi(data: bytes, allowed: set[bytes]) -> list[bytes]:
    """Every CSI in `data` that is not a colour, a cursor move or one of `allowed`."""
    return [
        m.group()
        for m in CSI.finditer(data)
        if not (SGR.fullmatch(m.group()) or CUP.fullmatch(m.group()) or m.group() in allowed)
    ]


def test_the_csi_check_sees_what_a_log_could_inject() -> None:
    """The check itself: a clear, a cursor home, the alternate screen left, an erase line and a
    scroll region are each reported; Textual's own colours and moves are not."""
    textual = b"\x1b[38;2;1;2;3m\x1b[12;1Hx\x1b[0m\x1b[?1049h"
    injected = [b"\x1b[2J", b"\x1b[H", b"\x1b[?1049l", b"\x1b[2K", b"\x1b[1;5r"]
    assert foreign_csi(textual, TEXTUAL_START) == []
    assert foreign_csi(textual + b"".join(injected), TEXTUAL_START) == injected


def test_no_log_escape_reaches_the_terminal(tmp_path: Path) -> None:
    log = tmp_path / "attack.log"
    log.write_bytes(b"ordinary first line\n" + ATTACKS)
    term = Pty([sys.executable, "-m", "rocmtui.console.logviewer", str(log)])
    try:
        term.read_until(b"END-MARKER")
        term.read_until(b"colour-line")
        # wrap on, find something, dim, then the same after the file grows with more attacks
        term.send(b"w")
        term.send(b"/")
        term.read_until(b"find [")
        term.send(b"line\r")
        term.read_until(b"/line/")
        term.send(b"dn")
        with log.open("ab") as f:
            f.write(ATTACKS.replace(b"END-MARKER", b"SECOND-MARKER"))
        term.read_until(b"SECOND-MARKER")
        start = term.mark()
        before_copy = bytes(term.out)
        term.send(b"y")  # copy the screen: the one OSC 52 allowed, on request only
        term.read_until(b"\x1b]52;c;")
        term.read_until(b"\x07", timeout=5)
        running = bytes(term.out)  # all it wrote while it ran: the log's bytes were on screen
    finally:
        term.close()
    out = bytes(term.out)
    assert foreign_csi(running, TEXTUAL_START) == []
    assert foreign_csi(out[len(running) :], TEXTUAL_EXIT) == []
    assert b"\x1b]52" not in before_copy
    for secret in (b"PWNED", b"evil.invalid", b"UFdORUQ"):
        assert secret not in out, secret
    assert b"\x1bc" not in out
    assert b"\x1b]0;" not in out and b"\x1b]2;" not in out and b"\x1b]8;" not in out
    text = out.decode("utf-8", "replace")
    assert not re.search("[\x80-\x9f]", text), "a C1 control reached the terminal"
    assert foreign_escapes(out) == []
    # the copy holds the sanitised screen text, and nothing of the attacks
    copies = re.findall(rb"\x1b\]52;c;([A-Za-z0-9+/=]*)\x07", out[start:])
    assert len(copies) == 1
    copied = base64.b64decode(copies[0]).decode()
    assert "SECOND-MARKER" in copied and "colour-line" in copied
    assert "\x1b" not in copied and "PWNED" not in copied
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", copied)
