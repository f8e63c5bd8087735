"""A least-recently-used cache whose entries are freed the moment they leave it.

Textual's `LRUCache` keeps its entries on a circular linked list of Python lists; `clear()`
drops the dict but leaves that circle, with every cached value on it, to the garbage
collector. A log view following a fast build clears its line caches on every update, so
~1,000 rendered lines a second (each Strip with its seven caches) waited for the collector,
whose full passes then paused keys. Here an `OrderedDict` keeps the order: no cycles, and a
dropped entry is freed by its reference count at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import KeysView
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LineCache(Generic[K, V]):
    """At most `maxsize` entries; `get` marks an entry as recently used."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        """The value, or None."""
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def set(self, key: K, value: V) -> None:
        """Add or replace; the least recently used entries go past `maxsize`."""
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.maxsize:
            self._items.popitem(last=False)

    def discard(self, key: K) -> None:
        """Drop one entry if present."""
        self._items.pop(key, None)

    def clear(self) -> None:
        """Drop every entry."""
        self._items.clear()

    def keys(self) -> KeysView[K]:
        """The keys, least recently used first."""
        return self._items.keys()

    def __len__(self) -> int:
        return len(self._items)
