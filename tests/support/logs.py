"""Log files for search tests: hostile generated logs and a reference search to compare with."""

from __future__ import annotations

import random
import re

from rocmtui.core.text.sanitize import sanitize_line


def reference(data: bytes, pattern: re.Pattern[str], invert: bool = False) -> list[int]:
    """Python's re over each line's shown text (no length cut: the search sees whole lines)."""
    lines = data.split(b"\n")
    if data.endswith(b"\n") or not data:
        lines.pop()
    return [
        i
        for i, raw in enumerate(lines)
        if (pattern.search(sanitize_line(raw.decode("utf-8", "replace"), 1 << 30)) is None)
        == invert
    ]


HOSTILE = [
    b"plain error: here",
    b"\x1b[31merr\x1b[0mor: split by colour",
    b"\x1b]0;error title\x07 osc then text",
    b"\x1b]52;c;ZXJyb3I=\x07 clipboard",
    b"progress 10%\rerror at 100%",
    b"error\rok",  # overwritten: shows "ok" + rest
    b"\xc2\x9b31m c1 csi then error",
    b"\xe2\x80\xaeerror reversed by bidi",
    b"\xff\xfe invalid utf8 error \xc3",
    b"caf\xc3\xa9 error \xe2\x80\x98quoted\xe2\x80\x99",
    b"\x1b]8;;http://x\x07link error text\x1b]8;;\x07",
    b"tab\terror\x00nul\x7fdel",
    b"ERROR: capital",
    b"",
    "\u212aelvin and \u017fign error".encode(),  # fold to k and s, ignoring case
    b"err\x1b[\x1b[0m31mor joined",  # removing one SGR makes another: shown as it is
    b"x" * 5000 + b" error at the end of a long line",
]


def hostile_log(rng: random.Random, n: int) -> bytes:
    """Lines drawn from HOSTILE and ordinary build lines."""
    out = []
    for i in range(n):
        if rng.random() < 0.3:
            out.append(rng.choice(HOSTILE))
        else:
            out.append(b"#%d %d.000 [%d/999] Building HIP object a%d.o" % (i % 40, i, i, i))
    return b"\n".join(out) + b"\n"
