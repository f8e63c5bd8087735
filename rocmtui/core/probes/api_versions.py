"""Which Docker API version to speak to an engine: negotiated from what the engine answers.

A pinned version breaks on upgrade (Docker 29 refuses clients below 1.44), and the docker
SDK's `version="auto"` adopts the engine's newest unchanged, whose response shapes rocmtui
has never read. So: the engine's newest (its /_ping `Api-Version`), capped at
`NEWEST_TESTED`, raised to the engine's minimum when it names one (/version's
`MinAPIVersion`, or the 400 that refuses an older client). Engines whose versions fall outside
what the SDK speaks say so in one line.
"""

from __future__ import annotations

import re

#: The newest API version rocmtui has read the answers of (Docker 28.5: 1.51).
NEWEST_TESTED = "1.51"
#: The oldest the docker SDK speaks (docker-py 7: MINIMUM_DOCKER_API_VERSION).
OLDEST_SDK = "1.24"
#: What a client is built with before the engine has answered: only unversioned paths
#: (/_ping, /version, /info) are asked before the negotiated version replaces it.
FIRST_CONTACT = NEWEST_TESTED

_VERSION = re.compile(r"^(\d{1,3})\.(\d{1,3})$")
_REFUSAL = re.compile(r"[Mm]inimum supported API version is (\d{1,3}\.\d{1,3})")


class ApiTooOld(Exception):
    """The engine speaks no API version the SDK can use; `str()` says so in one line."""


def parse(version: str | None) -> tuple[int, int] | None:
    """`"1.44"` -> (1, 44); None for anything else."""
    m = _VERSION.match((version or "").strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def negotiate(newest: str | None, minimum: str | None = None) -> str:
    """The version to speak to an engine whose newest is `newest` and oldest `minimum`.

    Raises `ApiTooOld` when the engine's newest is below `OLDEST_SDK`."""
    top, floor = parse(newest), parse(minimum)
    if top is not None and top < _must(OLDEST_SDK):
        raise ApiTooOld(
            f"engine API {newest} is older than {OLDEST_SDK}, the oldest the docker SDK speaks"
        )
    chosen = min(top, _must(NEWEST_TESTED)) if top is not None else _must(NEWEST_TESTED)
    if floor is not None and floor > chosen:
        chosen = floor
    return f"{chosen[0]}.{chosen[1]}"


def note(newest: str | None, minimum: str | None) -> str | None:
    """One line when the engine is newer than rocmtui knows (its oldest above NEWEST_TESTED),
    else None."""
    floor = parse(minimum)
    if floor is not None and floor > _must(NEWEST_TESTED):
        return (
            f"engine API {minimum}-{newest or '?'} is newer than {NEWEST_TESTED}, the newest"
            f" rocmtui is tested with: spoken at {minimum}"
        )
    return None


def refused_minimum(exc: BaseException) -> str | None:
    """The minimum an engine named when it refused a client as too old, else None."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    text = str(getattr(exc, "explanation", None) or exc)
    if status not in (None, 400):
        return None
    m = _REFUSAL.search(text)
    return m.group(1) if m else None


def _must(version: str) -> tuple[int, int]:
    parsed = parse(version)
    assert parsed is not None
    return parsed
