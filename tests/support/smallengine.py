"""An engine of its own (in a netns) whose data root is a 160 MiB tmpfs, and a fleet file naming
only it: what the disk verdict and the data-root alert tests fill."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

from devfleet.dockerd import start_engine
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.control import cancel_job, list_jobs
from tests.support.jobs import DEMO_BAKE
from tests.support.smalldisk import small_tmpfs

DATA_ROOT_SIZE = 160 * 1024 * 1024


@contextlib.contextmanager
def one_node_fleet(
    tmp_path: Path, name: str, docker_host: str, settings: str = ""
) -> Iterator[Path]:
    """A fleet file naming only node `name` (gfx1201, the demo bake file, a state folder of
    its own, no registry or WebDAV that answers), with `settings` lines before its tables;
    builds still running on it at the end are cancelled."""
    config = tmp_path / "rocmtui.toml"
    config.write_text(
        f"bake_file = {json.dumps(str(DEMO_BAKE))}\n"
        f"state_dir = {json.dumps(str(tmp_path / 'state'))}\n"
        f"{settings}"
        '[registry]\nurl = "http://127.0.0.1:9"\n[webdav]\nurl = "http://127.0.0.1:9/"\n'
        f'[[nodes]]\nname = "{name}"\ndocker_host = "{docker_host}"\n'
        'gfx = "gfx1201"\n'
    )
    try:
        yield config
    finally:
        loaded = load_config(config)
        for job in list_jobs(loaded, limit=None):
            if job.ended_at is None:
                cancel_job(loaded, job.id, grace=2.0)


@contextlib.contextmanager
def small_disk_engine(
    tmp_path: Path, base_tar: Path, prefix: str, settings: str
) -> Iterator[tuple[Path, str]]:
    """(fleet file, node name) for the block: the node `prefix` plus four hex digits, the fleet
    file's top-level `settings` lines (e.g. "stall_after_seconds = 8\\n") before its tables.
    Builds still running at the end are cancelled, then the engine stops and the tmpfs goes."""
    name = f"{prefix}{uuid.uuid4().hex[:4]}"
    (tmp_path / "engines").mkdir()
    # the engine's folder, not its data root: stopping an engine unmounts what is under that
    with small_tmpfs(tmp_path / "engines" / name, DATA_ROOT_SIZE):
        engine = start_engine(tmp_path, name, True, "gfx1201", base_tar=base_tar)
        try:
            with one_node_fleet(tmp_path, name, engine.docker_host, settings) as config:
                yield config, name
        finally:
            engine.stop(grace=5.0)
