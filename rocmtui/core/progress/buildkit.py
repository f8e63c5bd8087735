"""BuildKit's progress formats, as printed by `docker buildx` 0.13.1 (see tests/data/buildkit).

Plain (`--progress=plain`): blocks of `#N ...` lines. A block opens after an empty line with a
header `#N [target stage i/n] NAME` (or `#N NAME` for unprefixed vertices such as
`exporting to image`); inside it `#N 0.318 TEXT` is build output (seconds since the step
started, then the text), `#N DONE 1.2s`, `#N CACHED`, `#N ERROR: MSG`, `#N CANCELED` end the
step, `#N ...` pauses it (another step prints; its header is repeated when it resumes) and any
other `#N TEXT` is a status line (transfers, `exporting layers`). Output always carries the time,
so `#5 0.532 #9 DONE` is step 5 printing text, never step 9 finishing.

Rawjson (`--progress=rawjson`): buildx 0.13.1 writes each solve-status object *pretty-printed
over several lines* (`{` ... `}` at column 0), with `vertexes` (digest, name, started,
completed, cached, error), `statuses` and `logs` (vertex, stream, base64 `data`, timestamp). A
log chunk need not end at a newline. One-line objects are accepted too.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from msgspec import Struct

# `#N ` and, for build output, the seconds since the step started: `#N 12.345 `. Only the
# prefix is matched (the rest is sliced off) so a 3 KB hipcc line costs no regex scan. The
# number is capped so a hostile line cannot make int() slow.
PLAIN_LINE = re.compile(r"#(\d{1,9}) (?:(\d{1,9}\.\d{1,9})(?: |\Z))?")
PLAIN_DONE = re.compile(r"DONE (\d{1,9}(?:\.\d{1,9})?)s\Z")
BUILDER_LINE = re.compile(r'building with "([^"]*)" instance')
_PREFIX = re.compile(r"\[([^\]]{0,200})\] ?")
_INDEX = re.compile(r"(\d{1,6})/(\d{1,6})\Z")

#: Biggest rawjson object kept while it is assembled; larger ones are dropped (and counted).
MAX_JSON_OBJECT = 8 << 20


class StepName(Struct, frozen=True):
    """A vertex name split into its parts: `[alpha builder 2/4] RUN make` ->
    target `alpha`, stage `builder`, index 2, total 4, title `RUN make`."""

    target: str | None
    stage: str | None
    index: int | None
    total: int | None
    internal: bool
    title: str


def parse_step_name(name: str, known_targets: set[str]) -> StepName:
    """Split a vertex name. A single word before `i/n` is a target if bake has named it as one
    (`[alpha internal]` comes first for every target of a multi-target bake), else a stage.
    Words in `[... internal]` and bare `[word]` are recorded as targets into `known_targets`."""
    m = _PREFIX.match(name)
    if m is None:
        return StepName(None, None, None, None, False, name)
    words = m.group(1).split()
    title = name[m.end() :]
    index = total = None
    if words and (im := _INDEX.match(words[-1])):
        index, total = int(im.group(1)), int(im.group(2))
        words.pop()
    internal = bool(words) and words[-1] == "internal"
    if internal:
        words.pop()
    target = stage = None
    if len(words) >= 2:
        target, stage = words[0], words[1]
    elif len(words) == 1:
        if internal or index is None or words[0] in known_targets:
            target = words[0]
            known_targets.add(target)
        else:
            stage = words[0]
    return StepName(target, stage, index, total, internal, title)


def iso_seconds(value: Any) -> float | None:
    """An RFC 3339 timestamp (nanoseconds allowed) as POSIX seconds; None when absent or zero
    (buildx writes `0001-01-01T00:00:00Z` for "unset")."""
    if not isinstance(value, str) or not value or value.startswith("0001-"):
        return None
    text = value.strip()
    m = re.match(r"(.*T\d\d:\d\d:\d\d)(\.\d+)?(.*)\Z", text)
    if m is None:
        return None
    frac = (m.group(2) or "")[:7]  # fromisoformat wants at most microseconds
    tz = m.group(3)
    if tz in ("Z", "z"):
        tz = "+00:00"
    try:
        return datetime.fromisoformat(m.group(1) + frac + tz).timestamp()
    except ValueError:
        return None


def decode_log_data(value: Any) -> bytes:
    """The bytes of a rawjson `logs[].data` (base64); empty on anything malformed."""
    if not isinstance(value, str):
        return b""
    try:
        return base64.b64decode(value, validate=False)
    except (binascii.Error, ValueError):
        return b""


class JsonObjectAssembler:
    """Collects the lines of pretty-printed rawjson objects and yields each parsed object.

    `feed(line)` returns the parsed dict when `line` completes an object, the string "more"
    while inside one, and None when `line` is not rawjson at all (plain text such as buildx's
    final `ERROR: failed to solve: ...`). Malformed or oversized objects are counted in
    `dropped` and skipped.
    """

    def __init__(self) -> None:
        """Start outside any object."""
        self._parts: list[str] | None = None
        self._size = 0
        #: Whether an object is being collected (a plain attribute: read for every line).
        self.inside = False
        self.dropped = 0
        self.objects = 0

    def _parse(self, text: str) -> dict[str, Any] | None:
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            self.dropped += 1
            return None
        if not isinstance(obj, dict):
            self.dropped += 1
            return None
        self.objects += 1
        return obj

    def feed(self, line: str) -> dict[str, Any] | str | None:
        """Take one line (without its newline)."""
        if self._parts is None:
            if line == "{":
                self._parts = [line]
                self._size = 1
                self.inside = True
                return "more"
            if line.startswith("{") and line.rstrip().endswith("}"):
                return self._parse(line) or "more"
            return None
        if line != "}" and not line.startswith((" ", "\t")):
            # Pretty-printed members are indented: an unindented line means the object was
            # cut off (a killed client); give it up and let the line be read as text.
            self._parts = None
            self.inside = False
            self.dropped += 1
            return None
        if self._size <= MAX_JSON_OBJECT:
            self._parts.append(line)
            self._size += len(line) + 1
        if line != "}":
            return "more"
        parts, self._parts = self._parts, None
        self.inside = False
        if self._size > MAX_JSON_OBJECT:
            self.dropped += 1
            return "more"
        return self._parse("\n".join(parts)) or "more"


def items(obj: dict[str, Any], key: str) -> Iterator[dict[str, Any]]:
    """The dict entries of list `obj[key]`, skipping anything of the wrong shape."""
    value = obj.get(key)
    if isinstance(value, list):
        for entry in value:
            if isinstance(entry, dict):
                yield entry
