"""The state words of the brief's contract: shown on screen and written in JSON.

Keep the string values stable; other people's scripts read them.
"""

from __future__ import annotations

from enum import StrEnum


class NodeState(StrEnum):
    """A node's builder state."""

    OK = "ok"
    BUILDING = "building"
    STALLED = "stalled"
    DOWN = "down"
    UNKNOWN = "unknown"


class ServiceState(StrEnum):
    """Zot / WebDAV health."""

    OK = "ok"
    AUTH = "auth"  # up, but answers 401: credentials needed
    SLOW = "slow"  # answered correctly, but past the slow threshold
    DEGRADED = "degraded"  # answered, but not as the service should (5xx, wrong identity, 405 ...)
    DOWN = "down"  # no answer within the deadline, or refused


class JobState(StrEnum):
    """A bake job's state."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STALLED = "stalled"
    LOST = "lost"

    @property
    def finished(self) -> bool:
        """True for the states a job never leaves."""
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.LOST)


HEALTHY_NODE_STATES = frozenset({NodeState.OK, NodeState.BUILDING})
HEALTHY_SERVICE_STATES = frozenset({ServiceState.OK})

# State word -> a symbol, so a state reads without colour too (NO_COLOR, a monochrome terminal).
# One table for the console and the headless commands.
NODE_SYMBOLS: dict[str, str] = {
    NodeState.OK: "✓",
    NodeState.BUILDING: "▶",
    NodeState.STALLED: "‼",
    NodeState.DOWN: "✗",
    NodeState.UNKNOWN: "?",
}
SERVICE_SYMBOLS: dict[str, str] = {
    ServiceState.OK: "✓",
    ServiceState.AUTH: "⊙",
    ServiceState.SLOW: "◔",
    ServiceState.DEGRADED: "▲",
    ServiceState.DOWN: "✗",
}
JOB_SYMBOLS: dict[str, str] = {
    JobState.RUNNING: "▶",
    JobState.SUCCEEDED: "✓",
    JobState.FAILED: "✗",
    JobState.CANCELLED: "⊘",
    JobState.STALLED: "‼",
    JobState.LOST: "?",
}
# The closed loop's word for a pushing job (does the registry hold what it pushed?): see
# rocmtui.core.registry.pushcheck.
LOOP_SYMBOLS: dict[str, str] = {
    "in registry": "✓",
    "not found": "✗",
    "moved": "≠",
    "unchecked": "?",
}
