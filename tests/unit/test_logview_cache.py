"""The log view's line cache: least recently used goes first, and nothing it drops waits for
the garbage collector (Textual's LRUCache left every cleared entry in a reference cycle)."""

from __future__ import annotations

import gc
import weakref

from textual.cache import LRUCache

from rocmtui.console.widgets.logview.cache import LineCache


class Line:
    """A stand-in for a rendered line: something a weak reference can watch."""


def test_least_recently_used_goes_first() -> None:
    cache: LineCache[int, str] = LineCache(3)
    for n in range(3):
        cache.set(n, f"line {n}")
    assert cache.get(0) == "line 0"  # 0 is now the most recent
    cache.set(3, "line 3")
    assert list(cache.keys()) == [2, 0, 3]  # 1 was the least recently used
    assert cache.get(1) is None and len(cache) == 3
    cache.discard(2)
    cache.discard(99)
    assert list(cache.keys()) == [0, 3]


def dropped_at_once(cache: LineCache[int, Line] | LRUCache[int, Line]) -> bool:
    """Fill, clear, and say whether every value was freed by reference counting alone."""
    values = [Line() for _ in range(50)]
    refs = [weakref.ref(v) for v in values]
    for n, value in enumerate(values):
        cache.set(n, value)
    cache.get(10)
    del values, value
    gc.disable()
    try:
        cache.clear()
        return all(r() is None for r in refs)
    finally:
        gc.enable()


def test_a_cleared_cache_frees_its_lines_at_once() -> None:
    gc.collect()
    assert dropped_at_once(LineCache(64))
    # why it exists: Textual's cache leaves them to the collector
    assert not dropped_at_once(LRUCache(64))
    gc.collect()
