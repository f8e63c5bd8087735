"""The one sanitiser for outside text (log bytes, host names, tags, variable values, replies).

Neither Rich nor Textual sanitises (HAZARDS.md, "The terminal"), so everything that did not come
from this program passes through here before it is shown or written to a terminal.

What survives: printable text, `\\t`, and SGR colours -- and those only as a *parsed state*
that is rendered again (a fresh `ESC [ 0;...m` or a Rich `Style`), never as the input's bytes.
What goes: every other CSI (also 8-bit `U+009B`), OSC/DCS/SOS/PM/APC strings (to BEL or ST, or
to the end of the line when unterminated), two-byte and nF `ESC` sequences (`ESC c` included),
C0 except `\\t`, DEL, C1 (U+0080-U+009F), bidi controls (U+061C, U+200E/F, U+202A-E,
U+2066-9) and U+2028/9 (they split lines in `str.splitlines`). Lone surrogates (from
`surrogateescape` decoding of environment values) become U+FFFD so text always encodes.

`\\r` acts as on a terminal: the text after it overwrites the line from column 0 (`a\\rb` ->
`b`, `abc\\rX` -> `Xbc`), so a trailing `\\r` (CRLF) is nothing. Columns are code points, not
cells: wide characters are not measured. Shown text is capped at `max_len` characters; a dim
marker says how many bytes were cut. Each line starts with default colours (line-based views
render lines independently, so state never leaks from one line into the next).

Speed: a line with nothing to remove costs one compiled-regex search and comes back unchanged.
"""

from __future__ import annotations

import functools
import os
import re
from typing import TYPE_CHECKING, TextIO

from rocmtui.core.text.sgr import DEFAULT, MARKER, SGRState, apply_sgr, render_sgr, rich_style

if TYPE_CHECKING:  # Rich is loaded by the first styled line only: probes and the CLI never ask
    from rich.text import Text

#: Shown characters per line before the rest is cut.
MAX_LINE = 8192
REASON_MAX = 160  # a reason or a tool's answer in one line (`one_line`)
#: Raw input looked at per line; beyond this the rest is dropped unread (and counted), so a
#: 10 MB line costs a bounded amount of work and memory.
MAX_RAW_LINE = 65536

_BIDI = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
# Anything that needs the slow path. `\t` (0x09) is the only C0 character missing.
_UNSAFE = f"[\\x00-\\x08\\x0a-\\x1f\\x7f-\\x9f{_BIDI}\\ud800-\\udfff]"
_STRING_BODY = r"[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
# What a terminal executes (C0) or ignores (DEL) inside an escape or a CSI without leaving it
# (the VT500 parser's "execute"/"ignore" entries): `ESC FS ] 52;...` is still a clipboard
# write there, so these belong to the sequence. Not LF (a sequence never runs past its line
# here), nor CAN, SUB or ESC, which end or restart one.
_IN_SEQ = r"\x00-\x09\x0b-\x17\x19\x1c-\x1f\x7f"
_CSI_REST = rf"[0-?{_IN_SEQ}]*[ -/{_IN_SEQ}]*[@-~]?"
# One token per thing to remove or act on. The pattern *starts* with the character class of
# every introducer, so `re` skips clean stretches at C speed instead of trying each branch at
# every position; lookbehinds then pick what the introducer starts (SGR before other CSI
# before the generic two-byte ESC). Group 1 holds SGR parameters. Callers tell CR, LF and
# surrogates apart by the token's first character.
_TOKEN = (
    _UNSAFE
    + rf"(?:(?<=\x1b)[{_IN_SEQ}]*(?:\[([0-9;:]{{0,64}})m|\[{_CSI_REST}|[\]PX^_]"
    + _STRING_BODY
    + rf"|[ -/{_IN_SEQ}]*[0-~]?)"
    rf"|(?<=\x9b){_CSI_REST}"
    r"|(?<=[\x90\x98\x9d\x9e\x9f])" + _STRING_BODY + r")?"
)


@functools.cache
def _compiled() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(`_UNSAFE`, `_TOKEN`) compiled, on first use: ~11M instructions that text which is all
    printable (names, states and reasons, most lines) never needs, nor the console's first
    frame."""
    return re.compile(_UNSAFE), re.compile(_TOKEN)


Run = tuple[str, SGRState]

# Bytes that can never start anything to remove: tab, newline, printable ASCII, and every byte
# >= 0x80 (non-ASCII lines are checked again as text, where C1 and bidi controls are visible).
_SAFE_BYTES = bytes([9, 10, *range(0x20, 0x7F), *range(0x80, 0x100)])


def _is_clean(s: str) -> bool:
    """Nothing to remove. `str.isprintable` runs at C speed and is False for every character
    `_UNSAFE` matches (Cc, Cf, Zl, Zp, Cs), so it settles most lines; the regex decides the rest
    (lines with a tab, or harmless non-printables such as NBSP)."""
    return s.isprintable() or _compiled()[0].search(s) is None


def _plain_repl(m: re.Match[str]) -> str:
    first = m.group()[0]
    if first == "\r":
        return "\r"
    if first == "\n":
        return " "
    if "\ud800" <= first <= "\udfff":
        return "\ufffd"
    return ""


def _overlay_plain(text: str) -> str:
    """Carriage returns as a terminal shows them: each part overwrites from column 0."""
    parts = text.split("\r")
    result = parts[0]
    for part in parts[1:]:
        result = part + result[len(part) :]
    return result


def _cut_marker(cut_text: str, extra: int) -> str:
    return f" … [{len(cut_text.encode('utf-8')) + extra} bytes cut]"


def _precap(s: str, max_len: int) -> tuple[str, int]:
    """Bound the work on huge input: look at no more than MAX_RAW_LINE (or 8 x max_len)."""
    limit = max(MAX_RAW_LINE, 8 * max_len)
    if len(s) <= limit:
        return s, 0
    return s[:limit], len(s[limit:].encode("utf-8", "replace"))


def sanitize_line(s: str, max_len: int = MAX_LINE, *, extra_cut: int = 0) -> str:
    """Plain, escape-free text for one line (names, values, reasons). Colours are dropped and a
    newline inside becomes a space. `extra_cut` adds bytes already dropped upstream to the
    marker (the stream decoder uses it)."""
    if not extra_cut and len(s) <= max_len and _is_clean(s):
        return s
    s, pre = _precap(s, max_len)
    text = _compiled()[1].sub(_plain_repl, s)
    if "\r" in text:
        text = _overlay_plain(text)
    cut = pre + extra_cut
    if len(text) > max_len or cut:
        return text[:max_len] + _cut_marker(text[max_len:], cut)
    return text


def _flat_repl(m: re.Match[str]) -> str:
    token = m.group()
    if len(token) == 1 and token.isspace():  # CR, VT, FF, FS..US, NEL, U+2028/9: a break
        return " "
    if "\ud800" <= token[0] <= "\udfff":
        return "\ufffd"
    return ""


def one_line(text: object, limit: int = REASON_MAX) -> str:
    """Outside text as one short line for a message or a reason (an error, a tool's answer): what
    `sanitize_line` keeps, every run of whitespace (line breaks, tabs, `\r`) one space, cut to
    `limit` characters with `…`, so `a\r\nb` reads `a b`. Each line is cleaned on its own
    first: an unterminated OSC ends with its line, and a break inside an escape sequence
    (which a terminal executes without leaving the sequence) never turns it into text."""
    raw, _ = _precap(str(text), max(limit, MAX_LINE))
    pattern = _compiled()[1]
    lines = (ln if _is_clean(ln) else pattern.sub(_flat_repl, ln) for ln in raw.split("\n"))
    flat = " ".join(" ".join(lines).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def sanitize_text(s: str, max_len: int = MAX_LINE) -> str:
    """Like `sanitize_line` for multi-line text (server replies, tracebacks): `\\n` is kept and
    each line is sanitised on its own."""
    return "\n".join(sanitize_line(line, max_len) for line in s.split("\n"))


def _runs(s: str) -> list[Run]:
    """Split `s` into (text, colour state) runs, applying SGR, CR overwrite and removals."""
    parts: list[list[Run]] = [[]]
    state = DEFAULT
    pos = 0
    for m in _compiled()[1].finditer(s):
        start = m.start()
        if start > pos:
            parts[-1].append((s[pos:start], state))
        pos = m.end()
        sgr = m.group(1)
        if sgr is not None:
            state = apply_sgr(state, sgr)
            continue
        first = s[start]
        if first == "\r":
            parts.append([])
        elif first == "\n":
            parts[-1].append((" ", state))
        elif "\ud800" <= first <= "\udfff":
            parts[-1].append(("\ufffd", state))
    if pos < len(s):
        parts[-1].append((s[pos:], state))
    if len(parts) == 1:
        return parts[0]
    return _overlay_runs(parts)


def _overlay_runs(parts: list[list[Run]]) -> list[Run]:
    """CR overwrite with colours, cell by cell (only lines that mix `\\r` and SGR get here)."""
    chars: list[str] = []
    states: list[SGRState] = []
    for runs in parts:
        col = 0
        for text, state in runs:
            for ch in text:
                if col < len(chars):
                    chars[col] = ch
                    states[col] = state
                else:
                    chars.append(ch)
                    states.append(state)
                col += 1
    out: list[Run] = []
    for ch, state in zip(chars, states, strict=True):
        if out and out[-1][1] == state:
            out[-1] = (out[-1][0] + ch, state)
        else:
            out.append((ch, state))
    return out


def _styled_runs(s: str, max_len: int, extra_cut: int) -> list[Run]:
    """Runs for a line known to need the slow path, capped, with the cut marker if any."""
    s, pre = _precap(s, max_len)
    runs = _runs(s)
    cut = pre + extra_cut
    total = sum(len(text) for text, _ in runs)
    if total <= max_len and not cut:
        return runs
    kept: list[Run] = []
    room = max_len
    cut_parts: list[str] = []
    for text, state in runs:
        if room >= len(text):
            kept.append((text, state))
            room -= len(text)
        else:
            if room:
                kept.append((text[:room], state))
            cut_parts.append(text[room:])
            room = 0
    kept.append((_cut_marker("".join(cut_parts), cut), MARKER))
    return kept


def sgr_line(s: str, max_len: int = MAX_LINE, *, extra_cut: int = 0) -> str:
    """Sanitised text whose only escapes are SGR sequences rendered here (canonical
    `ESC [ 0;...m`, ending with a reset when a colour is open). Input SGR is parsed, never
    copied. This is the form `StreamDecoder` returns and `styled_line` accepts."""
    if not extra_cut and len(s) <= max_len and _is_clean(s):
        return s
    if "\x1b[" not in s:
        return sanitize_line(s, max_len, extra_cut=extra_cut)
    out: list[str] = []
    current = DEFAULT
    for text, state in _styled_runs(s, max_len, extra_cut):
        if state != current:
            out.append(render_sgr(state))
            current = state
        out.append(text)
    if current != DEFAULT:
        out.append("\x1b[0m")
    return "".join(out)


def styled_line(s: str, max_len: int = MAX_LINE) -> Text:
    """A Rich `Text` for one line: SGR colours kept as styles, everything else as
    `sanitize_line`. Never interprets Rich markup (`[/]`, `[link=x]` stay literal)."""
    # on first use: kept off `--help`
    from rich.text import Span, Text

    if len(s) <= max_len and _is_clean(s):
        return Text(s)
    if "\x1b[" not in s:
        return Text(sanitize_line(s, max_len))
    plain: list[str] = []
    spans: list[Span] = []
    offset = 0
    for text, state in _styled_runs(s, max_len, 0):
        if state != DEFAULT:
            spans.append(Span(offset, offset + len(text), rich_style(state)))
        plain.append(text)
        offset += len(text)
    return Text("".join(plain), spans=spans)


def color_wanted(stream: TextIO) -> bool:
    """Whether to write colours to `stream`: never when NO_COLOR is set (any non-empty
    value); always when FORCE_COLOR is (`--color always` sets it, so `rocmtui logs JOB
    --color always | less -R` keeps colour); else when it is a terminal and TERM is not
    `dumb`."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def safe_terminal_bytes(
    line: str, *, color: bool = True, max_len: int = MAX_LINE, end: str = "\n"
) -> bytes:
    """Bytes that are safe to write to a terminal for one line of outside text (plus `end`):
    with `color`, only SGR sequences rendered by this module; without, plain text."""
    text = sgr_line(line, max_len) if color else sanitize_line(line, max_len)
    return (text + end).encode("utf-8")


class StreamDecoder:
    """Turn a byte stream (a log file read in chunks) into sanitised lines.

    `feed(data)` returns the lines completed by `data`; a partial last line is held until its
    newline arrives or `flush()` is called. Each line is returned as a `str` in the form of
    `sgr_line` (only project-rendered SGR escapes; with `keep_sgr=False`, plain text). Lines are
    decoded as UTF-8 only when complete, so a character split across reads is reassembled;
    invalid bytes become U+FFFD, never an exception. A held line keeps at most `max_raw` bytes;
    the excess is dropped as it arrives and counted in `discarded_bytes` and in the line's
    marker, so a 10 MB line costs at most `max_raw` bytes of memory.
    """

    def __init__(
        self, *, keep_sgr: bool = True, max_len: int = MAX_LINE, max_raw: int = MAX_RAW_LINE
    ) -> None:
        """Create a decoder; `max_len` caps shown characters, `max_raw` held bytes per line."""
        self.keep_sgr = keep_sgr
        self.max_len = max_len
        self.max_raw = max_raw
        self.lines = 0
        self.discarded_bytes = 0
        self._pending = bytearray()
        self._pending_cut = 0

    def _hold(self, data: bytes) -> None:
        room = self.max_raw - len(self._pending)
        if len(data) <= room:
            self._pending += data
        else:
            if room > 0:
                self._pending += data[:room]
            self._pending_cut += len(data) - max(room, 0)

    def _line(self, raw: bytes, cut: int, probes: list[bytes] | None = None) -> str:
        """One complete line. `probes` lists every control byte present in the read this line
        came from (None: unknown); an ASCII line holding none of them needs no scan at all."""
        self.lines += 1
        if (
            probes is not None
            and not cut
            and len(raw) <= self.max_len
            and raw.isascii()
            and not any(p in raw for p in probes)
        ):
            return raw.decode("ascii")
        if len(raw) > self.max_raw:
            cut += len(raw) - self.max_raw
            raw = raw[: self.max_raw]
        self.discarded_bytes += cut
        text = raw.decode("utf-8", "replace")
        if text.endswith("\r"):
            text = text[:-1]  # CRLF: the CR moves to column 0 and nothing follows
        if not cut and len(text) <= self.max_len and _is_clean(text):
            return text
        if self.keep_sgr:
            return sgr_line(text, self.max_len, extra_cut=cut)
        return sanitize_line(text, self.max_len, extra_cut=cut)

    def feed(self, data: bytes) -> list[str]:
        """Lines completed by `data`, sanitised, without their newline."""
        if b"\n" not in data:
            self._hold(data)
            return []
        segments = data.split(b"\n")
        # One C pass over the whole read finds which control bytes occur at all (usually only
        # ESC, or none); each line is then probed for those few with memchr-speed `in`.
        present = set(data.translate(None, _SAFE_BYTES))
        probes = [bytes([b]) for b in present] if len(present) <= 4 else None
        out: list[str] = []
        if self._pending or self._pending_cut:
            self._hold(segments[0])
            out.append(self._line(bytes(self._pending), self._pending_cut))
            self._pending.clear()
            self._pending_cut = 0
        else:
            out.append(self._line(segments[0], 0, probes))
        line = self._line
        out.extend(line(raw, 0, probes) for raw in segments[1:-1])
        self._hold(segments[-1])
        return out

    def flush(self) -> list[str]:
        """The held partial line (a file without a final newline), if any."""
        if not self._pending and not self._pending_cut:
            return []
        out = [self._line(bytes(self._pending), self._pending_cut)]
        self._pending.clear()
        self._pending_cut = 0
        return out
