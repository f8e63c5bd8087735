"""bake's metadata file: where bake writes it (off the state disk), the room it is kept in, and
what is kept when it does not fit."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rocmtui.core.jobs.bakefiles import (
    MetadataRoom,
    bake_metadata_file,
    build_refs_from_metadata,
    compact,
    digest_from_metadata,
    forget,
    metadata_file_in,
)

DIGEST = "sha256:" + "ab" * 32
META = {
    "demo-base": {
        "containerimage.digest": DIGEST,
        "buildx.build.ref": "default/default/abcdefghijklmnopqrstuvwxy",
        "buildx.build.provenance": {"big": "x" * 100_000},
    }
}


def test_bake_writes_its_metadata_in_the_runtime_folder(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    job_dir = tmp_path / "state" / "jobs" / "20261206-1200-abcd"
    job_dir.mkdir(parents=True)
    path = bake_metadata_file(tmp_path / "state", job_dir, {"XDG_RUNTIME_DIR": str(runtime)})
    assert path.name == "metadata.json" and path.parent.name == job_dir.name
    assert path.is_relative_to(runtime / "rocmtui") and path.parent.is_dir()
    assert (path.parent.stat().st_mode & 0o777) == 0o700


def test_a_runtime_folder_someone_else_can_write_is_not_used(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    (runtime / "rocmtui").mkdir(parents=True)
    os.chmod(runtime / "rocmtui", 0o777)
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    path = bake_metadata_file(tmp_path, job_dir, {"XDG_RUNTIME_DIR": str(runtime)})
    assert path == job_dir / "metadata.json"


def test_the_metadata_file_is_found_in_bakes_arguments() -> None:
    argv = ["docker", "buildx", "bake", "--metadata-file", "/m.json", "--", "--metadata-file"]
    assert metadata_file_in(argv) == Path("/m.json")
    assert metadata_file_in(["bake", "--metadata-file=/x.json"]) == Path("/x.json")
    assert metadata_file_in(["bake", "--", "--metadata-file", "/no"]) is None


def test_kept_in_its_room_readable_as_bake_wrote_it(tmp_path: Path) -> None:
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    room = MetadataRoom(job_dir, size=256 * 1024)
    assert room.held and (job_dir / ".metadata.room").stat().st_size == 256 * 1024
    source = tmp_path / "run" / "metadata.json"
    source.parent.mkdir()
    source.write_text(json.dumps(META))
    kept = room.keep(source)
    assert kept == job_dir / "metadata.json" and not (job_dir / ".metadata.room").exists()
    assert json.loads(kept.read_text()) == META  # the padding is JSON whitespace
    assert digest_from_metadata(kept, "demo-base") == DIGEST
    assert build_refs_from_metadata(kept) == ["abcdefghijklmnopqrstuvwxy"]
    forget(source, job_dir)
    assert not source.parent.exists()


def test_too_big_for_its_room_keeps_what_rocmtui_reads(tmp_path: Path) -> None:
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    room = MetadataRoom(job_dir, size=4096)
    source = tmp_path / "metadata.json"
    source.write_text(json.dumps(META))
    kept = room.keep(source)
    assert kept == job_dir / "metadata.json"
    assert json.loads(kept.read_text()) == {
        "demo-base": {
            "buildx.build.ref": "default/default/abcdefghijklmnopqrstuvwxy",
            "containerimage.digest": DIGEST,
        }
    }
    assert compact(b"not json") == b"not json"


def test_no_metadata_gives_the_room_back(tmp_path: Path) -> None:
    room = MetadataRoom(tmp_path)
    assert room.keep(tmp_path / "absent.json") is None
    assert not (tmp_path / ".metadata.room").exists()
