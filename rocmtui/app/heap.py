"""Keep the garbage collector's full passes short.

Python's oldest-generation collection walks every tracked object. Right after start-up that is
Textual, Rich and the console's own modules (~60,000 objects that live as long as the process),
and while a log pane follows a fast build the churn of rendered lines triggered such a pass every
second or two: measured in the console following 20,000 lines/s, each took 35-80 ms on the event
loop, and a key that arrived during one waited for it. (Most of that churn's cycles are gone
since: see rocmtui/app/strips.py and widgets/lru.py; the passes that remain still walk what is
not frozen.)

`settle()`, called once start-up is over (the app calls it a few seconds after mount, when the
first rounds and the bake file are on screen), collects and then `gc.freeze()`s what is alive:
those objects are never scanned again (refcounting still frees them if they are dropped), so a
full pass only walks what the console made since. The thresholds stay CPython's: spacing the
full passes out was tried and made each one longer (250-390 ms, the cycles pile up meanwhile).
"""

from __future__ import annotations

import gc


def settle() -> None:
    """Freeze what start-up left alive."""
    gc.collect()
    gc.freeze()
