"""SHA-256 of short names (the monitor's socket, build slot locks) without OpenSSL.

`hashlib` loads and initialises OpenSSL's provider on import: ~5.5 M instructions, 0.6% of the
bare Textual app's whole start, paid on the attached console's way to its first frame only to
name the monitor's socket. Python's own SHA-256 module (the one `hashlib` falls back to) gives
the same digest, so names stay what they were, for monitors and consoles of either version.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of `data` in hex, as `hashlib.sha256(data).hexdigest()`."""
    module = _own_sha256()
    if module is not None:
        return str(module.sha256(data).hexdigest())
    import hashlib  # a Python built without its own: OpenSSL's

    return hashlib.sha256(data).hexdigest()


@functools.cache
def _own_sha256() -> ModuleType | None:
    """Python's own SHA-256 module, looked up once: an import that fails is not remembered,
    so `_sha2` (3.12 and later) was searched for on 3.11 at every call, three times on the
    attached console's way to its first frame (~0.5 M instructions)."""
    for name in ("_sha2", "_sha256"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None
