"""Performance measures: each one changes how Python, glibc or Textual behave for speed or memory.

None of them changes what is shown. Each is here because a figure of bench/RESULTS.md needed
it; its docstring gives the figure measured with and without it. Remove a measure when its
figure holds without it (or its cause is fixed upstream), and say so in RESULTS.md.

- `install_strip_patch()`: Textual's `Strip` without self-references (fewer cycles for the GC).
- `settle_heap()`: `gc.freeze()` what start-up left alive (shorter full collections).
- `tune_malloc()`: a fixed glibc mmap threshold (read buffers go back to the OS whole).
- `release_freed_memory()`: `malloc_trim` after a followed log read many bytes.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Sequence
from typing import Any

from rich.style import Style
from textual.strip import Strip

# -- Textual's Strip ---------------------------------------------------------------------------
TEXTUAL_STRIP: dict[str, Callable[..., Any]] = {}  # Textual's own methods, before the patch


def install_strip_patch() -> None:
    """Make `Strip.divide` and `Strip.crop_extend` return the strip itself, uncached, when they
    leave it as it is (idempotent; call once before the first frame).

    Textual 8.2 caches their results on the strip, and when the operation changes nothing the
    result is the strip itself: it then refers to itself, a cycle only the garbage collector
    frees. The compositor does that to every full-width line it draws, so a pane following a
    fast build made ~900 cyclic Strips (~10,000 objects) every two seconds and the collector's
    passes paused keys.

    Figure: key to screen p95, pane following 20,000 lines/s, 4x30 presses interleaved with and
    without: 51 -> 37 ms, and 36 -> 31 ms in a second run. bench/RESULTS.md ("key to screen p95,
    log pane following 20,000 lines/s"): 31.8 ms beside Textual Log's 63.6 ms with it.
    Harmless if Textual stops caching itself; remove it then.
    """
    if TEXTUAL_STRIP:
        return
    divide, crop_extend = Strip.divide, Strip.crop_extend
    TEXTUAL_STRIP.update(divide=divide, crop_extend=crop_extend)

    def divide_(self: Strip, cuts: Any) -> Sequence[Strip]:
        length = self.cell_length
        if [cut for cut in cuts if cut <= length] == [length]:
            return [self]  # Textual: `[self]`, cached on self
        return divide(self, cuts)

    def crop_extend_(self: Strip, start: int, end: int, style: Style | None) -> Strip:
        if start == 0 and end == self.cell_length:
            return self  # Textual: extend (a no-op) then crop (a no-op), cached on self
        return crop_extend(self, start, end, style)

    Strip.divide = divide_  # type: ignore[method-assign]
    Strip.crop_extend = crop_extend_  # type: ignore[method-assign]


# -- the garbage collector ---------------------------------------------------------------------
def settle_heap() -> None:
    """Collect, then `gc.freeze()` what is alive, and turn the collector on: call once start-up
    is over (the console a few seconds after mount, when the first rounds and the bake file are
    on screen).

    `rocmtui` turns the collector off before the console imports anything (rocmtui/cli/main.py):
    every collection on the way up walked Textual's, Rich's and the console's objects again,
    only to find them alive (~55M instructions, 5% of the start to the first frame,
    bench/bench_start_instructions.py). The one collection here finds what start-up left.

    Python's oldest-generation collection walks every tracked object: after start-up that is
    Textual, Rich and the console's own modules (~60,000 objects that live as long as the
    process). Frozen, they are never scanned again (reference counting still frees them), so a
    full pass only walks what the console made since. Spacing full passes out instead was
    tried and made each longer (250-390 ms: the cycles pile up meanwhile).

    Figure: in the console following 20,000 lines/s, full passes took 35-80 ms each on the
    event loop before, and a key that arrived during one waited for it; bench/RESULTS.md's
    key-to-screen p95 over a following pane (31.8 ms, Textual Log 63.6 ms) is measured with it.
    """
    gc.collect()
    gc.freeze()
    gc.enable()


# -- glibc's allocator -------------------------------------------------------------------------
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD = 256 << 10  # bytes: allocations this big always come from (and go back by) mmap
_libc: Any = None
_libc_lock = threading.Lock()


def tune_malloc() -> Any:
    """Fix glibc's mmap threshold (once per process; before the first big read buffer) and
    return glibc, or None where there is none.

    glibc serves big allocations with mmap until the first one is freed, then raises its mmap
    threshold to that size: from then on each read buffer of a followed log came from the heap
    and left it fragmented. A fixed threshold keeps such buffers on mmap, returned whole when
    freed. (Searches read in chunks below it, so theirs stay on the heap: see
    core/logs/search.py's CHUNK.)

    Figure: +1.1 MB of RSS after following 5,000,000 lines without it; bench/RESULTS.md ("RSS
    after following 5,000,000 lines"): 35.6 MB beside 34.8 MB after 100,000, +2.5%, with it
    and `release_freed_memory`.
    """
    global _libc
    with _libc_lock:
        if _libc is None:
            import ctypes  # here: ~2 ms the console's first frame need not wait for
            import ctypes.util

            try:
                lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                lib.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                lib.malloc_trim.argtypes = [ctypes.c_size_t]
                _libc = lib
            except (OSError, AttributeError):
                _libc = False
    return _libc or None


def release_freed_memory() -> None:
    """Hand freed heap back to the OS (`malloc_trim(0)`); a no-op where there is no glibc.

    glibc keeps freed heap for reuse, and a followed log's RSS drifted up by the size of its
    read buffers; the follower calls this after every `TRIM_AFTER` bytes read
    (widgets/logview/follower.py).

    Figure: bench/RESULTS.md ("RSS after following 5,000,000 lines"): growth +2.5% from
    100,000 lines to 5,000,000 with it (the target is 10%).
    """
    lib = tune_malloc()
    if lib is not None:
        lib.malloc_trim(0)
