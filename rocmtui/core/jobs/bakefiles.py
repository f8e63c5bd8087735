"""bake's own files for a job: kept off the state disk while bake runs, then in room kept for
them; and what its metadata file says (the image digest, the BuildKit history refs).

bake writes one file for rocmtui, after the build: `--metadata-file` (through a temporary file
in the same folder, then a rename). On a full state disk that write fails after the image was
built (and pushed): bake exits non-zero (102 on buildx 0.29, 1 on 0.13) and the build would
read `failed`. Everything else buildx writes for a job is written before it builds (its
`$DOCKER_CONFIG/buildx` activity and refs: a full disk there fails the build before it runs,
truly) or is its progress, which goes through the supervisor's pipe into the log
(`logwriter`). So:

- bake writes its metadata into a folder of this job's off the state disk (`runtime_root`:
  `$XDG_RUNTIME_DIR`, else `/dev/shm`, both in memory): a full state disk cannot refuse it;
- the supervisor takes `MetadataRoom` on the state disk at the job's start and, once bake has
  ended, writes the metadata into it in place (no new block is needed; the rest of the room
  padded with JSON whitespace) and names it `metadata.json` in the job's folder, where every
  reader looks; the outcome reads the file bake wrote, so it never waits on that copy.

With no such folder (neither exists), bake writes into the job's folder as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "META_ROOM_BYTES",
    "MetadataRoom",
    "bake_metadata_file",
    "build_refs_from_metadata",
    "digest_from_metadata",
    "forget",
    "metadata_file_in",
    "runtime_root",
    "target_refs_from_metadata",
]

META_ROOM_BYTES = 64 * 1024  # bake's metadata for a few targets; more is kept compact
_KEPT_KEYS = (  # what rocmtui reads of an entry, when the whole file does not fit its room
    "containerimage.digest",
    "containerimage.descriptor",
    "buildx.build.ref",
    "image.name",
)
_SHM = Path("/dev/shm")


def runtime_root(env: Mapping[str, str]) -> Path | None:
    """A folder of this user's in memory, off any disk: `$XDG_RUNTIME_DIR/rocmtui`, else
    `/dev/shm/rocmtui-UID`; None when neither base folder exists."""
    base = env.get("XDG_RUNTIME_DIR")
    if base and os.path.isabs(base) and os.path.isdir(base):
        return Path(base) / "rocmtui"
    if _SHM.is_dir() and os.access(_SHM, os.W_OK):
        return _SHM / f"rocmtui-{os.geteuid()}"
    return None


def bake_metadata_file(store_root: Path, job_dir: Path, env: Mapping[str, str]) -> Path:
    """Where bake writes a job's metadata (its folder made, this user's only): in
    `runtime_root`, under the store's and the job's names; the job's own folder when there is
    no such folder or it cannot be made."""
    root = runtime_root(env)
    if root is not None:
        store = hashlib.sha256(str(store_root.absolute()).encode()).hexdigest()[:12]
        folder = root / store / job_dir.name
        try:
            os.makedirs(root, mode=0o700, exist_ok=True)
            if _ours(root):  # never a folder (or a link) someone else made there first
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                return folder / "metadata.json"
        except OSError:
            pass
    return job_dir / "metadata.json"


def _ours(folder: Path) -> bool:
    """A real folder of this user's that nobody else can write."""
    info = os.lstat(folder)
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.geteuid()
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def metadata_file_in(argv: Sequence[str]) -> Path | None:
    """The `--metadata-file` of bake's argument list."""
    for index, word in enumerate(argv):
        if word == "--":
            break
        if word == "--metadata-file" and index + 1 < len(argv):
            return Path(argv[index + 1])
        if word.startswith("--metadata-file="):
            return Path(word.split("=", 1)[1])
    return None


class MetadataRoom:
    """Room for bake's metadata in the job's folder, taken at the job's start and written in
    place once bake has ended (see the module doc)."""

    def __init__(self, job_dir: Path, size: int = META_ROOM_BYTES) -> None:
        self.room = job_dir / ".metadata.room"
        self.final = job_dir / "metadata.json"
        self.size = size
        self.held = False
        try:
            fd = os.open(self.room, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        except OSError:
            return
        try:
            os.posix_fallocate(fd, 0, size)
            self.held = True
        except OSError:  # no room even now: the copy then needs room when bake ends
            with contextlib.suppress(OSError):
                os.unlink(self.room)
        finally:
            os.close(fd)

    def keep(self, source: Path | None) -> Path | None:
        """Put bake's metadata from `source` into the job's folder as `metadata.json`, in the
        room taken at start; return where it can be read now (`source` again when it could not
        be kept; None when bake wrote none)."""
        if source is None or source == self.final:
            self.release()
            return source if source is not None and source.exists() else None
        try:
            data = source.read_bytes()
        except OSError:
            self.release()
            return None
        if len(data) > self.size:
            data = compact(data)
        if self._write(data) or self._write_anew(data):
            return self.final
        return source

    def _write(self, data: bytes) -> bool:
        if not self.held or len(data) > self.size:
            return False
        try:
            fd = os.open(self.room, os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            # padded with spaces (JSON whitespace) over the zeros fallocate gave: the room
            # stays the job's, so nothing else on a full disk gets room from it
            os.pwrite(fd, data.ljust(self.size, b" "), 0)
            os.fdatasync(fd)
            os.replace(self.room, self.final)
        except OSError:
            return False
        finally:
            os.close(fd)
        self.held = False
        return True

    def _write_anew(self, data: bytes) -> bool:
        """No room was held (or the data did not fit): a plain write, if the disk has room."""
        self.release()
        tmp = self.final.with_name(".metadata.json.tmp")
        try:
            tmp.write_bytes(data)
            os.replace(tmp, self.final)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            return False
        return True

    def release(self) -> None:
        """Give the room back (nothing to keep, or kept another way)."""
        if self.held:
            with contextlib.suppress(OSError):
                os.unlink(self.room)
            self.held = False


def compact(data: bytes) -> bytes:
    """bake's metadata with only what rocmtui reads of each entry (provenance and warnings
    can make it larger than its room)."""
    try:
        parsed = json.loads(data)
    except ValueError:
        return data
    if not isinstance(parsed, dict):
        return data
    out = {}
    for name, entry in parsed.items():
        if isinstance(entry, dict):
            out[name] = {k: entry[k] for k in _KEPT_KEYS if k in entry}
        elif name in _KEPT_KEYS:
            out[name] = entry
    return json.dumps(out, indent=2, sort_keys=True).encode()


def forget(source: Path | None, job_dir: Path) -> None:
    """Remove bake's own copy in the runtime folder (memory), once kept or given up."""
    if source is None or source.parent == job_dir:
        return
    shutil.rmtree(source.parent, ignore_errors=True)


def digest_from_metadata(path: Path, target: str) -> str | None:
    """The image digest bake wrote for `target` (`containerimage.digest`), if any.

    bake's metadata file maps each target to its build's metadata; a single-target file may
    also hold the keys at the top level, so both shapes are read.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    candidates = [data.get(target), data, *data.values()]
    for entry in candidates:
        if isinstance(entry, dict):
            digest = entry.get("containerimage.digest")
            if isinstance(digest, str) and digest.startswith("sha256:"):
                return digest
    return None


def target_refs_from_metadata(path: Path) -> list[tuple[str, str]]:
    """(target, BuildKit history record id) for each target bake built and named in its
    metadata (a group bake: one per target), in the file's order."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict):
        return []
    out: list[tuple[str, str]] = []
    for target, entry in data.items():
        if isinstance(entry, dict):
            ref = entry.get("buildx.build.ref")
            if isinstance(target, str) and isinstance(ref, str) and ref.strip():
                out.append((target, ref.strip().rsplit("/", 1)[-1]))
    return out


def build_refs_from_metadata(path: Path) -> list[str]:
    """The BuildKit history record ids bake wrote (`buildx.build.ref`, builder/node/id), one
    per target built: what ties this job to its history records."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict):
        return []
    refs: list[str] = []
    for entry in [data, *data.values()]:
        if isinstance(entry, dict):
            ref = entry.get("buildx.build.ref")
            if isinstance(ref, str) and ref.strip():
                last = ref.strip().rsplit("/", 1)[-1]
                if last not in refs:
                    refs.append(last)
    return refs
