"""Shared fixtures: an isolated environment for every test, and the real local fleet.

- autouse `_isolated_env`: HOME, XDG_* (XDG_CONFIG_DIRS too), DOCKER_CONFIG and
  ROCMTUI_LOCK_DIR point at the test's temp dir;
  ROCMTUI_CONFIG, ROCMTUI_STATE_DIR and DOCKER_HOST/DOCKER_CONTEXT are unset.
- session `fleet`: a `devfleet.DevFleet` (three engines — snoc-strix in the host netns,
  snoc-think and snoc-gaming each in a netns of their own — registry and WebDAV), with
  `fleet.config_path` its rocmtui.toml. Shared: never stop or break its parts; use a factory.
- `config`: a fleet file of this test's own for the shared fleet and bake/demo.hcl (real
  builds); at the end every job it started that still runs is cancelled and its leftovers killed.
- `engine_factory`: a dockerd of your own, to kill or misconfigure; stopped at the test's end.
- `hung_unix_socket`, `drip_server`: hostile servers for probe tests.
- `--phase side-by-side|alone`: the tests marked `alone` left out, or only those (`make pytest`
  runs the first under pytest-xdist, then the second in one process).

Fixtures only one kind uses live in that kind's conftest (tests/fleet/conftest.py: the
registry, WebDAV and small-disk fixtures; tests/e2e/conftest.py: the tmux terminal).

Everything started is stopped by pid in fixture teardown, again by an atexit safety net, and on
SIGTERM/SIGHUP (turned into KeyboardInterrupt so pytest runs its teardowns); parts of a session
killed outright are recorded in a ledger and stopped by the next session.
"""

from __future__ import annotations

import atexit
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devfleet import (
    OLD_ENGINE,
    DevFleet,
    DripServer,
    EngineHandle,
    EngineKind,
    HungUnixSocket,
    build_base_tar,
    close_ledger,
    reap,
    start_engine,
    start_fleet,
    stop_all_started,
    use_ledger,
)
from tests.support import realparts
from tests.support.realparts import require
from tests.support.stopper import Stopper

#: Every part a test session starts is also recorded here, so a session killed hard (SIGKILL,
#: OOM) is cleaned up by the next one; ledgers of sessions still running are left alone.
LEDGERS = Path(tempfile.gettempdir()) / "rocmtui-devfleet-ledgers"

atexit.register(stop_all_started)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    """Reap what dead sessions left; let SIGTERM/SIGHUP unwind through pytest's teardowns
    instead of killing it outright."""
    if os.geteuid() == 0:  # only root can have started (and can stop) fleet parts
        reap(LEDGERS)
        use_ledger(LEDGERS)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _interrupt)


#: Fixtures that start parts of the real fleet: a test using one (even through another fixture)
#: carries the `fleet` marker, so that `-m "not fleet"` leaves out every test that needs it.
FLEET_FIXTURES = frozenset(
    {"fleet", "config", "engine_factory", "registry_factory", "webdav_factory", "base_tar"}
)


PHASES = ("side-by-side", "alone")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--phase",
        choices=PHASES,
        default=None,
        help="side-by-side: leave out the tests marked `alone` (for -n N); alone: run only "
        "those. `make pytest` runs the first in parallel, then the second in one process.",
    )


def _keep_phase(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests of the other phase (none without --phase)."""
    phase = config.getoption("phase")
    if phase is None:
        return
    alone = phase == "alone"
    kept = [i for i in items if (i.get_closest_marker("alone") is not None) == alone]
    dropped = [i for i in items if (i.get_closest_marker("alone") is not None) != alone]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A phase that finds none of its tests in the selection has passed (`make pytest
    PYTEST_ARGS=tests/unit` has no test that must run alone)."""
    if session.config.getoption("phase") and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse to run a test that starts fleet parts without the `fleet` marker; keep the
    tests of this --phase."""
    unmarked = [
        f"{item.nodeid} (uses {', '.join(sorted(FLEET_FIXTURES & set(names)))})"
        for item in items
        if FLEET_FIXTURES & set(names := getattr(item, "fixturenames", ()))
        and item.get_closest_marker("fleet") is None
    ]
    if unmarked:
        raise pytest.UsageError(
            "tests that need the real fleet must carry @pytest.mark.fleet:\n  "
            + "\n  ".join(unmarked)
        )
    _keep_phase(config, items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """`require` knows which test asks (its fixtures are set up after this)."""
    realparts.CURRENT = item


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session is over: stop anything a teardown missed, then drop this session's ledger."""
    stop_all_started()
    close_ledger()
    if os.geteuid() == 0:
        from devfleet.links import drop_guard_if_unused

        drop_guard_if_unused()  # a namespace's veth can outlive its deletion by a moment


@pytest.fixture(autouse=True)
def _isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Never the real home: config, state, cache, data and docker config live in a temp dir."""
    root = tmp_path_factory.mktemp("env")
    for var, sub in (
        ("HOME", "home"),
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_CONFIG_DIRS", "config-dirs"),  # the system-wide fleet file: never /etc/xdg
        ("XDG_STATE_HOME", "state"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_RUNTIME_DIR", "runtime"),  # bake's metadata while it runs: never /run/user
        ("DOCKER_CONFIG", "docker"),
        ("ROCMTUI_LOCK_DIR", "locks"),  # slot locks too: never the machine-wide /run/lock
    ):
        (root / sub).mkdir()
        monkeypatch.setenv(var, str(root / sub))
    for var in (
        "ROCMTUI_CONFIG",
        "ROCMTUI_STATE_DIR",
        "DOCKER_HOST",
        "DOCKER_CONTEXT",
        "DOCKER_TLS_VERIFY",
        "DOCKER_CERT_PATH",
        "BUILDX_BUILDER",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="session")
def base_tar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The busybox root-filesystem tar every engine imports as rocm-base:local (built once)."""
    require("busybox")
    return build_base_tar(tmp_path_factory.mktemp("base"))


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevFleet]:
    """The shared real fleet: 3 engines (2 in their own netns), registry, WebDAV, forwarders."""
    require("fleet")
    workdir = tmp_path_factory.mktemp("fleet")
    t0 = time.monotonic()
    running = start_fleet(workdir)
    running.extra["up_seconds"] = time.monotonic() - t0
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def config(tmp_path: Path, fleet: DevFleet) -> Iterator[Path]:
    """A fleet file for the session fleet and the demo bake file; at the end, every job of
    this test that still runs is cancelled and anything left of it killed."""
    from rocmtui.core.config.fleetfile import load_config
    from rocmtui.core.jobs.control import cancel_job, list_jobs
    from rocmtui.core.jobs.views import record_json
    from tests.support.jobs import kill_job_leftovers, write_config

    require("docker-buildx")
    path = write_config(tmp_path, fleet)
    yield path
    loaded = load_config(path)
    for job in list_jobs(loaded, limit=None):
        if job.ended_at is None:
            cancel_job(loaded, job.id, grace=2.0)
        kill_job_leftovers(record_json(job))


@pytest.fixture
def engine_factory(
    tmp_path_factory: pytest.TempPathFactory, base_tar: Path
) -> Iterator[Callable[..., EngineHandle]]:
    """`engine_factory(name="node", netns=True, gfx="gfx1201", import_base=True,
    kind=OLD_ENGINE)` starts a dockerd of your own (by default in a fresh netns, so killing it
    disturbs nobody) and returns its EngineHandle once it answers; stopped (netns removed) at
    test end. `kind` (a devfleet `EngineKind`) picks today's engine instead of 20.10."""
    require("dockerd", "netns")
    stopper = Stopper()
    workdir = tmp_path_factory.mktemp("engines")
    counter = iter(range(1000))

    def make(
        name: str | None = None,
        netns: str | bool | None = True,
        gfx: str | None = "gfx1201",
        import_base: bool = True,
        kind: EngineKind = OLD_ENGINE,
    ) -> EngineHandle:
        node = name or f"node{next(counter)}"
        if kind.current:
            require("current-engine")
        handle = start_engine(
            workdir,
            node,
            netns,
            gfx,
            import_base_image=import_base,
            base_tar=base_tar,
            kind=kind,
        )
        return stopper.add(handle)  # type: ignore[no-any-return]

    try:
        yield make
    finally:
        stopper.stop_all()


@pytest.fixture
def hung_unix_socket() -> Iterator[HungUnixSocket]:
    """A unix socket that accepts and never answers (`.path`, `.docker_host`)."""
    with HungUnixSocket() as server:
        yield server


@pytest.fixture
def drip_server() -> Iterator[DripServer]:
    """An HTTP server sending one byte every 0.5 s forever (`.url`, `.port`)."""
    with DripServer() as server:
        yield server
