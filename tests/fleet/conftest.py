"""Fixtures only the fleet tests use (the top-level conftest gives every kind the fleet, the
engine factory and the isolated environment).

- `registry_factory`, `webdav_factory`: your own instance, to kill or misconfigure; everything
  made is stopped at the end of the test.
- `hung_tcp_listener`: a listener that accepts and never answers.
- `small_disk`: a 4 MiB tmpfs for a state folder, unmounted at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from devfleet import HungTcpListener, ServiceHandle, start_registry, start_webdav
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.jobs.views import record_json
from tests.support.fulldisk import SIZE
from tests.support.jobs import kill_job_leftovers
from tests.support.realparts import require
from tests.support.smalldisk import small_tmpfs
from tests.support.stopper import Stopper


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted at the end (after every process in it is gone)."""
    require("root")
    with small_tmpfs(tmp_path / "small", SIZE) as point:
        try:
            yield point
        finally:
            if (point / "state" / "jobs.sqlite").exists():  # every supervisor ends on SIGTERM
                for record in JobStore(point / "state").list(limit=None):
                    kill_job_leftovers(record_json(record))


@pytest.fixture
def registry_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., ServiceHandle]]:
    """`registry_factory(htpasswd=False)` starts a registry of your own on a free loopback port
    (`.url`, `.port`; with htpasswd also `.username`/`.password`); stopped at test end."""
    require("docker-registry")
    stopper = Stopper()

    def make(htpasswd: bool = False) -> ServiceHandle:
        if htpasswd:
            require("htpasswd")
        return stopper.add(start_registry(tmp_path_factory.mktemp("registry"), htpasswd))  # type: ignore[no-any-return]

    try:
        yield make
    finally:
        stopper.stop_all()


@pytest.fixture
def webdav_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., ServiceHandle]]:
    """`webdav_factory(dav_ext=True)` starts nginx WebDAV of your own; `dav_ext=False` leaves
    out the dav-ext module (PROPFIND answers 405). Stopped at test end."""
    require("nginx")
    stopper = Stopper()

    def make(dav_ext: bool = True) -> ServiceHandle:
        if dav_ext:
            require("nginx-dav-ext")
        return stopper.add(start_webdav(tmp_path_factory.mktemp("webdav"), dav_ext))  # type: ignore[no-any-return]

    try:
        yield make
    finally:
        stopper.stop_all()


@pytest.fixture
def hung_tcp_listener() -> Iterator[HungTcpListener]:
    """A 127.0.0.1 listener that accepts and never answers (`.port`, `.url`, `.docker_host`)."""
    with HungTcpListener() as server:
        yield server
