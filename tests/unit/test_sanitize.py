"""The sanitiser on hand-written and random input: what survives, what goes, and invariants."""

from __future__ import annotations

import random
import re

import pytest
from rich.console import Console
from rich.text import Text

from rocmtui.core.text.sanitize import (
    MAX_LINE,
    StreamDecoder,
    one_line,
    safe_terminal_bytes,
    sanitize_line,
    sanitize_text,
    sgr_line,
    styled_line,
)

# What the project itself renders: `ESC [ 0 (;digits)* m`, nothing else.
OUR_SGR = re.compile(r"\x1b\[0(?:;[0-9]+)*m")
FORBIDDEN = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]"
)


def assert_safe(line: str, *, sgr_allowed: bool = True) -> None:
    """No control character survives, except SGR sequences rendered by the project."""
    rest = OUR_SGR.sub("", line) if sgr_allowed else line
    bad = FORBIDDEN.search(rest)
    assert bad is None, f"{bad.group()!r} left in {line!r}"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain ascii", "plain ascii"),
        ("tab\tkept", "tab\tkept"),
        ("a\rb", "b"),
        ("abc\rX", "Xbc"),
        ("crlf\r", "crlf"),
        ("progress 10%\rprogress 100%", "progress 100%"),
        ("\x1b]0;evil title\x07after", "after"),
        ("\x1b]2;title\x1b\\after", "after"),
        ("\x1b]52;c;aGVsbG8=\x07clip", "clip"),
        ("\x1b]8;;http://evil/\x1b\\click\x1b]8;;\x1b\\", "click"),
        ("before\x1b]0;never terminated", "before"),
        ("\x1bPdcs payload\x1b\\x", "x"),
        ("\x1b_apc\x9cx", "x"),
        ("\x1bc\x1b7\x1b(Bz", "z"),
        ("\x1b[2J\x1b[H\x1b[?1049hscreen", "screen"),
        ("\x9b2J\x9b31m8bit", "8bit"),
        ("\x9d0;title\x07c1osc", "c1osc"),
        ("nul\x00bel\x07bs\x08del\x7fnel\x85", "nulbelbsdelnel"),
        ("bi\u202edi\u2066rect\u200f", "bidirect"),
        ("lone \udc80 surrogate", "lone \ufffd surrogate"),
        ("[/] [link=http://x]y[/link] [bold]", "[/] [link=http://x]y[/link] [bold]"),
        ("\x1b[1;31mred\x1b[0m text", "red text"),
        ("two\nlines", "two lines"),
        ("\x1b", ""),
        ("\x1b[", ""),
        ("\x1b[31", ""),
    ],
)
def test_sanitize_line(raw: str, shown: str) -> None:
    """Each kind of sequence goes, text stays, CR overwrites from column 0."""
    assert sanitize_line(raw) == shown
    assert_safe(sgr_line(raw))
    assert styled_line(raw).plain == shown


# Hostile step names: each sequence goes whole, never leaving its printable tail. A terminal
# executes C0 controls (and ignores DEL) met inside an escape or a CSI without leaving it, so
# `ESC FS ] 52;...` is still a clipboard write there: the tail is the sequence's, not text.
HOSTILE_NAMES = [
    ("[1/2] RUN \x1b]52;c;aGk=\x07x", "[1/2] RUN x"),
    ("RUN \x1b]8;id=1;http://evil/\x1b\\click\x1b]8;;\x1b\\ here", "RUN click here"),
    ("RUN \x1b[" + ";".join(str(i) for i in range(300)) + "Hx", "RUN x"),
    ("RUN \x1b[" + ";".join("1" * 100) + "mx", "RUN x"),
    ("RUN \x9b2J\x9b" + ";".join("9" * 80) + "mx", "RUN x"),
    ("RUN \x1b\x1c]52;c;aGk=\x07x", "RUN x"),
    ("RUN \x1b\x7f]52;c;aGk=\x07x", "RUN x"),
    ("RUN \x1b\x08\x0b]0;title\x07x", "RUN x"),
    ("RUN \x1b\r]52;c;aGk=\x07x", "RUN x"),
    ("RUN \x1b[3\x081mx", "RUN x"),
    ("RUN \x9b3\x0b1mx", "RUN x"),
    ("RUN \x1b(\x0eBx", "RUN x"),
    ("RUN [bold]x[/] \x1b]0;unterminated", "RUN [bold]x[/] "),
]


@pytest.mark.parametrize(("raw", "shown"), HOSTILE_NAMES)
def test_a_whole_sequence_goes_never_its_tail(raw: str, shown: str) -> None:
    assert sanitize_line(raw) == shown
    assert OUR_SGR.sub("", sgr_line(raw)) == shown
    assert styled_line(raw).plain == shown
    assert one_line(raw) == shown.strip()


def test_an_unterminated_osc_ends_with_its_line() -> None:
    """To the end of the line, never beyond: a step's error of several lines keeps the next."""
    raw = "boom \x1b]0;owned\nthe next line says why\r\nand \x1b]52;c;aGk=\x07this"
    assert one_line(raw) == "boom the next line says why and this"
    assert sanitize_text(raw) == "boom \nthe next line says why\nand this"
    assert sanitize_line("boom \x1b]0;owned\nnext") == "boom  next"
    decoder = StreamDecoder()
    assert decoder.feed(raw.encode() + b"\n") == ["boom ", "the next line says why", "and this"]


def test_one_line_turns_every_break_into_one_space() -> None:
    assert one_line("a\r\nb") == "a b"
    assert one_line("a\x0bb\x0cc\x1cd\u2028e\x85f\tg") == "a b c d e f g"
    assert one_line("x" * 300, 20) == "x" * 19 + "…"


def test_clean_line_is_returned_unchanged() -> None:
    """The fast path hands back the very same object."""
    line = "[1234/23456] Building HIP object caffe2/CMakeFiles/torch_hip.dir/foo.hip.o"
    assert sanitize_line(line) is line
    assert sgr_line(line) is line


def test_sgr_is_parsed_and_rendered_again() -> None:
    """Colours survive as a fresh canonical sequence, never the input's own bytes."""
    out = sgr_line("\x1b[01;031mX\x1b[38:2::9:8:7mY\x1b[mZ")
    assert out == "\x1b[0;1;31mX\x1b[0;1;38;2;9;8;7mY\x1b[0mZ"
    assert sgr_line("\x1b[1mopen") == "\x1b[0;1mopen\x1b[0m"  # a reset closes the line
    # 8-bit CSI is dropped even when it would be an SGR.
    assert sgr_line("\x9b31mred") == "red"


def test_styled_line_styles_and_markup() -> None:
    """SGR becomes Rich styles; markup-looking text stays literal and renders as-is."""
    text = styled_line("\x1b[1;38;5;196mhot\x1b[0m [/] [link=x]y")
    assert isinstance(text, Text)
    assert text.plain == "hot [/] [link=x]y"
    assert text.spans[0].start == 0 and text.spans[0].end == 3
    style = text.spans[0].style
    assert not isinstance(style, str)
    assert style.bold and style.color is not None and style.color.number == 196
    assert style.link is None
    console = Console(width=80, color_system="truecolor", force_terminal=True, record=True)
    with console.capture() as cap:
        console.print(text)
    assert "[/] [link=x]y" in cap.get()
    assert "\x1b]8" not in cap.get()  # no live hyperlink


def test_line_cap_marks_the_cut() -> None:
    """Long lines are cut to max_len with a marker counting the dropped bytes."""
    assert sanitize_line("é" * 10, 4) == "éééé … [12 bytes cut]"
    long = "x" * (MAX_LINE + 100)
    assert sanitize_line(long) == "x" * MAX_LINE + " … [100 bytes cut]"
    styled = styled_line("\x1b[32m" + "y" * 20, 5)
    assert styled.plain == "yyyyy … [15 bytes cut]"
    assert_safe(sgr_line("\x1b[32m" + "y" * 20, 5))


def test_huge_input_is_bounded() -> None:
    """A 10 MB string is cut without scanning all of it into the result."""
    huge = "\x1b[31m" + "z" * 10_000_000 + "\rA"
    out = sanitize_line(huge)
    assert out.startswith("z" * 100)
    assert len(out) < MAX_LINE + 64
    assert out.endswith("bytes cut]")


def test_sanitize_text_keeps_newlines() -> None:
    """Multi-line replies keep their line breaks, each line cleaned."""
    assert sanitize_text("a\x1b[2J\nb\x07\r\n") == "a\nb\n"


def test_terminal_bytes_colour_and_plain() -> None:
    """With colour only our SGR; without colour (NO_COLOR, not a tty) plain text."""
    raw = "\x1b]0;t\x07\x1b[33mwarn\x1b[0m \x1bc"
    assert safe_terminal_bytes(raw) == b"\x1b[0;33mwarn\x1b[0m \n"
    assert safe_terminal_bytes(raw, color=False) == b"warn \n"


def test_decoder_reassembles_split_utf8_and_lines() -> None:
    """Characters and lines split across reads come out whole; bad bytes become U+FFFD."""
    dec = StreamDecoder()
    assert dec.feed(b"caf\xc3") == []
    assert dec.feed(b"\xa9 \xe2\x82") == []
    assert dec.feed(b"\xac\r\nbad \xff\xfe ok\n\x1b[1mB") == ["café €", "bad \ufffd\ufffd ok"]
    assert dec.flush() == ["\x1b[0;1mB\x1b[0m"]
    assert dec.flush() == []
    assert dec.lines == 3


def test_decoder_caps_a_huge_line() -> None:
    """A 10 MB line fed in chunks holds at most max_raw bytes and reports what it dropped."""
    dec = StreamDecoder(max_raw=4096)
    chunk = b"x" * 65536
    for _ in range(160):  # ~10 MB
        assert dec.feed(chunk) == []
        assert len(dec._pending) <= 4096
    out = dec.feed(b"tail\nnext\n")
    assert out[1] == "next"
    assert out[0].startswith("x" * 4096)
    assert f"{160 * 65536 + 4 - 4096} bytes cut" in out[0]
    assert dec.discarded_bytes == 160 * 65536 + 4 - 4096


def test_decoder_plain_mode() -> None:
    """keep_sgr=False writes no escape at all."""
    dec = StreamDecoder(keep_sgr=False)
    assert dec.feed(b"\x1b[31mred\x1b[0m\n") == ["red"]


# -- random input, fixed seed: the invariants hold for anything ------------------------------

ALPHABET = [
    b"\x1b", b"[", b"]", b"\x07", b"\\", b"m", b";", b"3", b"1", b"8", b"5", b"2", b"P", b"_",
    b"\r", b"\n", b"\t", b"\x00", b"\x7f", b"\xc2\x9b", b"\xc2\x9d", b"\xc2\x85", b"\xe2\x80\xae",
    b"\xff", b"\xc3", b"\xa9", b"a", b"b", b" ", b"c", b"?", b"\xf0\x9f\x98\x80",
]  # fmt: skip


def random_bytes(rng: random.Random, n: int) -> bytes:
    """Bytes biased towards escape syntax so sequences actually form."""
    return b"".join(rng.choice(ALPHABET) for _ in range(n))


def test_random_bytes_through_the_decoder() -> None:
    """Whatever the bytes and however they are chunked: safe lines, the right line count, and
    the same result as decoding in one piece."""
    rng = random.Random(20240601)
    for _ in range(300):
        data = random_bytes(rng, rng.randint(0, 400))
        whole = StreamDecoder()
        expected = whole.feed(data) + whole.flush()
        dec = StreamDecoder()
        got: list[str] = []
        pos = 0
        while pos < len(data):
            step = rng.randint(1, 7)
            got += dec.feed(data[pos : pos + step])
            pos += step
        got += dec.flush()
        assert got == expected
        assert len(got) == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        for line in got:
            assert_safe(line)
            assert sgr_line(line) == line  # already in final form
            assert_safe(safe_terminal_bytes(line, end="").decode("utf-8"))


def test_random_strings_through_every_entry_point() -> None:
    """Random code points (surrogates, C1, bidi included) never raise and never leak."""
    rng = random.Random(7)
    pool = [chr(c) for c in range(0, 0xA0)] + ["\u202e", "\u2066", "\ud800", "\udfff", "é", "["]
    for _ in range(500):
        s = "".join(rng.choice(pool) for _ in range(rng.randint(0, 120)))
        max_len = rng.choice([5, 40, MAX_LINE])
        plain = sanitize_line(s, max_len)
        assert_safe(plain, sgr_allowed=False)
        plain.encode("utf-8")
        if "cut]" not in plain:
            assert sanitize_line(plain, max_len) == plain  # idempotent
        assert_safe(sgr_line(s, max_len))
        text = styled_line(s, max_len)
        assert_safe(text.plain, sgr_allowed=False)
        assert text.plain == plain
        safe_terminal_bytes(s).decode("utf-8")


def test_core_text_modules_do_not_import_textual() -> None:
    """The sanitiser, redactor and progress parser load without Textual (core rule)."""
    import subprocess
    import sys

    code = (
        "import sys, rocmtui.core.text.sanitize, rocmtui.core.text.redact;"
        "import rocmtui.core.progress.tracker;"
        "sys.exit('textual' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
