"""ThreadGate: one thread in flight per key, released before its answer is delivered."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from rocmtui.core.probes._common import Stuck, ThreadGate


@pytest.fixture
def eager_switches() -> Iterator[None]:
    """Threads switch as often as the interpreter allows: a window between the answer's
    delivery and the key's release is then met within a few hundred rounds."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


async def test_asking_again_at_once_never_finds_the_answered_thread_stuck(
    eager_switches: None,
) -> None:
    gate = ThreadGate()
    stuck = 0
    for n in range(2000):
        try:
            assert await gate.run("engine", lambda n=n: n, timeout=5.0) == n
        except Stuck:
            stuck += 1
    assert stuck == 0
    assert gate.in_flight() == 0


async def test_a_thread_still_running_is_stuck_for_the_next_ask() -> None:
    import threading

    gate = ThreadGate()
    release = threading.Event()
    with pytest.raises(TimeoutError):
        await gate.run("engine", release.wait, timeout=0.05)
    with pytest.raises(Stuck):
        await gate.run("engine", lambda: 1, timeout=1.0)
    release.set()
