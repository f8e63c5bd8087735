"""The socket and lock names hashed without OpenSSL are the names hashlib gave."""

from __future__ import annotations

import hashlib
from pathlib import Path

from rocmtui.core.digests import sha256_hex
from rocmtui.core.hostmonitor.place import MonitorPlace


def test_the_digest_is_hashlibs() -> None:
    for data in (b"", b"/srv/fleet/rocmtui.toml", "flotte ü".encode(), b"x" * 100_000):
        assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_a_monitors_socket_keeps_its_name() -> None:
    # a console of this version finds a monitor started by the previous one, and back
    place = MonitorPlace(Path("/run/state"), "/srv/fleet/rocmtui.toml")
    old = hashlib.sha256(b"/srv/fleet/rocmtui.toml").hexdigest()[:12]
    assert place.socket == Path(f"/run/state/monitor-{old}.sock")
