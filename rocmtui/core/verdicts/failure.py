"""Why a build failed, and what to do next: the failed build's verdict.

The console said "failed at STEP" and left the operator to read the log. Most failures of a
fleet like this one have a handful of causes that each want a different next step: the build's
own command failed (read its first error line), the node ran out of memory or disk, the
registry refused or could not be reached, the link to the node's engine broke, the sccache
store did not answer, a file the Dockerfile copies is missing, bake asked for privileges, or
the engine lost a layer while unpacking the finished image (a known BuildKit bug with today's
Docker and its containerd image store: the build's steps all finished, and a rebuild is all
cached). `explain` is the pure rule: the failing step's text and bake's last error line in,
one `FailureWhy` out, with the line that decided it as its evidence. The first rule that
matches wins, in the order below (a disk or memory cause inside a compile step is the node's,
not the compiler's). Text the rule cannot place says only the step and its first error line:
never a guess dressed as a cause.

Pure and cheap (a few regexes over at most `MAX_LINES` lines): a job reader may call it on
every refresh.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Sequence

from msgspec import Struct

from rocmtui.core.text.sanitize import sanitize_line

#: At most this many lines of the failing step's text are read (its error tail is bounded too).
MAX_LINES = 64
#: An evidence line is cut to this many characters.
EVIDENCE_CHARS = 200


class FailureCause(enum.StrEnum):
    """Which evidence decided why a build failed."""

    ENGINE_BUG = "engine-bug"  # the engine lost a layer unpacking the image (not the build's)
    DISK = "disk"  # no space left on a device
    MEMORY = "memory"  # a process was killed (exit 137, "Killed signal"): most likely OOM
    REGISTRY_AUTH = "registry-auth"  # the registry refused: not logged in, no right to push
    REGISTRY_DOWN = "registry-down"  # the registry could not be reached
    SCCACHE = "sccache"  # the sccache store did not answer
    LINK = "link"  # the connection to the node's engine broke mid-build
    CONTEXT = "context"  # a file the Dockerfile copies is not in the build context
    PRIVILEGES = "privileges"  # bake asked for privileges that were not granted
    COMMAND = "command"  # the build's own command failed (a compiler error, a test)
    UNKNOWN = "unknown"  # none of the above: the step and its first error line only


class FailureWhy(Struct, frozen=True):
    """A failed build's cause, one line why, one line what to do next, and the log line that
    decided it (sanitised, cut; None when the cause came from the exit code alone)."""

    cause: FailureCause
    why: str
    next: str
    evidence: str | None = None

    @property
    def short(self) -> str:
        """A few words for a table cell."""
        return _SHORT[self.cause]

    def line(self) -> str:
        """`why; next: ...` for a log header, a notice or `rocmtui jobs`."""
        return f"{self.why}; next: {self.next}"


_SHORT = {
    FailureCause.ENGINE_BUG: "engine lost a layer: rebuild",
    FailureCause.DISK: "disk full",
    FailureCause.MEMORY: "killed: out of memory?",
    FailureCause.REGISTRY_AUTH: "registry refused the push",
    FailureCause.REGISTRY_DOWN: "registry unreachable",
    FailureCause.SCCACHE: "sccache store down",
    FailureCause.LINK: "link to the engine lost",
    FailureCause.CONTEXT: "file missing from context",
    FailureCause.PRIVILEGES: "privileges not granted",
    FailureCause.COMMAND: "its command failed",
    FailureCause.UNKNOWN: "see the log",
}

_I = re.IGNORECASE
_ENGINE_BUG = re.compile(r"parent snapshot \S+ does not exist", _I)
_DISK = re.compile(r"no space left on device|disk quota exceeded", _I)
_KILLED = re.compile(
    r"exit code: 137\b|signal: killed|Killed signal terminated program|\bKilled\s*$"
    r"|out of memory|cannot allocate memory|std::bad_alloc",
    _I,
)
_AUTH = re.compile(
    r"\b401 Unauthorized|\b403 Forbidden|insufficient_scope|authentication required"
    r"|requested access to the resource is denied|failed to authorize|unauthorized:",
    _I,
)
_NET = re.compile(
    r"connection refused|no such host|i/o timeout|TLS handshake timeout|network is unreachable"
    r"|server gave HTTP response to HTTPS client|context deadline exceeded",
    _I,
)
_PUSHING = re.compile(r"\bpush|exporting to image|/v2/|\bregistry\b|failed to do request", _I)
_SCCACHE = re.compile(r"sccache", _I)
_SCCACHE_FAIL = re.compile(
    r"error|fail|refused|timed? ?out|unreachable|could not|couldn't|panic|denied", _I
)
_LINK = re.compile(
    r"error reading from server|code = Unavailable|connection reset by peer|closing transport"
    r"|broken pipe|Cannot connect to the Docker daemon|failed to dial gRPC|transport is closing"
    r"|unexpected EOF|ssh: .*(closed|refused|timed out)|^link to \S+ down\b",
    _I,
)
_CONTEXT = re.compile(
    r"failed to compute cache key|failed to calculate checksum|\"/[^\"]*\": not found"
    r"|failed to read dockerfile|lstat .*: no such file or directory",
    _I,
)
_PRIVILEGES = re.compile(
    r"additional privileges requested|entitlement[s]? .*(not allowed|granted|requested)"
    r"|is not allowed: entitlement|requires? .*--allow",
    _I,
)
_EXIT = re.compile(r"(?:did not complete successfully|executor failed running).*exit code: (\d+)")


#: A command's own error line, best first: a compiler's `error:`, then a fatal one, then any
#: line that says error or failed and is no warning (clang's `-Wpass-failed` is a warning).
_ERRORISH = (
    re.compile(r"\berror:"),
    re.compile(r"\bfatal\b", _I),
    re.compile(r"^(?!.*\bwarning\b).*(\berror\b|\bfailed\b)", _I),
)
_BAKE = re.compile(r"^(?:#\d+ )?ERROR\b")
#: A line of BuildKit's closing summary or of a step's output: `#12 3.456 text` or `3.456 text`.
_STAMP = re.compile(r"^(?:#\d+ )?\d+\.\d+ ")


def tail_text(lines: Sequence[str]) -> list[str]:
    """The lines that say why, from the end of a failed build's log as BuildKit prints it: the
    closing summary's output lines (between its `------` rules, time stamps removed), every
    `#N ERROR:` line and bake's own `ERROR:` line; at most `MAX_LINES`."""
    out: list[str] = []
    inside = False
    for line in lines[-4 * MAX_LINES :]:
        if line.startswith("------"):
            inside = not inside
            continue
        if inside and line.startswith(" > "):
            continue  # the step's name: the record has it
        if inside or _BAKE.match(line):
            out.append(_STAMP.sub("", line, count=1))
    return out[-MAX_LINES:]


#: The command a failed RUN ran, inside BuildKit's error line: its words are the build's own
#: (a script that greps for "no space left" is not a full disk).
_COMMAND = re.compile(
    r"(executor failed running \[).*(\]: exit code)|(process \").*(\" did not complete)"
)


def _without_command(line: str) -> str:
    return _COMMAND.sub(lambda m: f"{m.group(1) or m.group(3)}…{m.group(2) or m.group(4)}", line)


def _first(pattern: re.Pattern[str], lines: list[str]) -> str | None:
    return next((line for line in lines if pattern.search(line)), None)


def _cut(line: str, pattern: re.Pattern[str] | None = None) -> str:
    """One safe line of evidence; a long one keeps the words that matched (an error's cause
    is at the end of `failed to solve: failed to push ...: connection refused`)."""
    line = line.strip()
    found = pattern.search(line) if pattern is not None else None
    if found is not None and len(line) > EVIDENCE_CHARS and found.end() > EVIDENCE_CHARS - 40:
        start = max(0, min(found.start() - 40, found.end() - EVIDENCE_CHARS + 2))
        line = "…" + line[start + 1 :]
    return sanitize_line(line, EVIDENCE_CHARS)


def explain(
    text: Iterable[str],
    exit_code: int | None = None,
    node: str | None = None,
) -> FailureWhy:
    """Why the build failed (the module doc): `text` the failing step's error lines and bake's
    own last error line (outside text: only read and sanitised), `exit_code` bake's, `node`
    where it ran. The step itself is not said: every reader shows it beside the why."""
    lines = [
        _without_command(line)
        for line in (t for _, t in zip(range(MAX_LINES), text, strict=False))
        if line
    ]
    on = f" on {sanitize_line(node, 40)}" if node else ""
    where = node or "the node"
    if (hit := _first(_ENGINE_BUG, lines)) is not None:
        return FailureWhy(
            FailureCause.ENGINE_BUG,
            f"the engine{on} lost a layer while unpacking the finished image into its image "
            "store (a known BuildKit bug with today's Docker and its containerd store); the "
            "build's steps had finished",
            "rebuild it: its steps are cached, so it takes seconds",
            _cut(hit, _ENGINE_BUG),
        )
    if (hit := _first(_DISK, lines)) is not None:
        return FailureWhy(
            FailureCause.DISK,
            f"a disk filled up{on}",
            f"free space on {where}'s data root (prune its build cache), then rebuild",
            _cut(hit, _DISK),
        )
    if (hit := _first(_PRIVILEGES, lines)) is not None:
        return FailureWhy(
            FailureCause.PRIVILEGES,
            "bake asked for privileges the launch did not grant",
            "launch it again and allow what bake asks for in the dialog",
            _cut(hit, _PRIVILEGES),
        )
    sccache = next(
        (line for line in lines if _SCCACHE.search(line) and _SCCACHE_FAIL.search(line)), None
    )
    if sccache is not None and (_NET.search(sccache) or "server" in sccache.lower()):
        return FailureWhy(
            FailureCause.SCCACHE,
            "the sccache store did not answer",
            "check the WebDAV store (rocmtui status shows its health), then rebuild",
            _cut(sccache, _SCCACHE_FAIL),
        )
    if (hit := _first(_AUTH, lines)) is not None:
        return FailureWhy(
            FailureCause.REGISTRY_AUTH,
            "the registry refused the push: not logged in, or not allowed to push there",
            "log in to the registry on this host (docker login), then rebuild",
            _cut(hit, _AUTH),
        )
    net = [line for line in lines if _NET.search(line)]
    if (hit := next((line for line in net if _PUSHING.search(line)), None)) is not None:
        return FailureWhy(
            FailureCause.REGISTRY_DOWN,
            "the registry could not be reached",
            "check the registry (rocmtui status shows its health), then rebuild",
            _cut(hit, _NET),
        )
    if (hit := _first(_LINK, lines)) is not None:
        return FailureWhy(
            FailureCause.LINK,
            f"the connection to {where}'s engine broke mid-build",
            f"check {where} (rocmtui status); the engine may have restarted; then rebuild",
            _cut(hit, _LINK),
        )
    if (hit := _first(_KILLED, lines)) is not None or exit_code == 137:
        return FailureWhy(
            FailureCause.MEMORY,
            f"a process was killed{on}, most likely by the kernel's OOM killer",
            f"lower the compile jobs (MAX_JOBS) or build where memory is free; {where}'s "
            "vitals show its OOM count",
            _cut(hit, _KILLED) if hit is not None else None,
        )
    if (hit := _first(_CONTEXT, lines)) is not None:
        return FailureWhy(
            FailureCause.CONTEXT,
            "a file the Dockerfile reads is not in the build context",
            "check the path in the step and the bake file's context, then rebuild",
            _cut(hit, _CONTEXT),
        )
    status = next((m for line in lines if (m := _EXIT.search(line))), None)
    if status is not None:
        output = [line for line in lines if not _EXIT.search(line) and not _BAKE.match(line)]
        first = next(
            (line for pattern in _ERRORISH for line in output if pattern.search(line)),
            next(iter(output), None),
        )
        said = f": {_cut(first)}" if first else ""
        return FailureWhy(
            FailureCause.COMMAND,
            f"the build's own command failed (exit {status.group(1)}){said}",
            "read the step's output in its log, fix, then rebuild",
            _cut(first) if first else _cut(status.group(0)),
        )
    first = lines[0] if lines else None
    return FailureWhy(
        FailureCause.UNKNOWN,
        f"no cause rocmtui knows: {_cut(first)}" if first else "the log's end names no cause",
        "read its log",
        _cut(first) if first else None,
    )


__all__ = ["EVIDENCE_CHARS", "MAX_LINES", "FailureCause", "FailureWhy", "explain", "tail_text"]
