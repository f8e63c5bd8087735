"""SHA-256 of short names (the monitor's socket, build slot locks) without OpenSSL.

`hashlib` loads and initialises OpenSSL's provider on import: ~5.5 M instructions, 0.6% of the
bare Textual app's whole start, paid on the attached console's way to its first frame only to
name the monitor's socket. Python's own SHA-256 module (the one `hashlib` falls back to) gives
the same digest, so names stay what they were, for monitors and consoles of either version.
"""

from __future__ import annotations

import importlib


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of `data` in hex, as `hashlib.sha256(data).hexdigest()`."""
    for name in ("_sha2", "_sha256"):  # Python's own: 3.12 and later; 3.11
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return str(module.sha256(data).hexdigest())
    import hashlib  # a Python built without its own: OpenSSL's

    return hashlib.sha256(data).hexdigest()
