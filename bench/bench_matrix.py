"""Figures for the published matrix, against a real registry (docker-registry on loopback).

    python bench/bench_matrix.py [--quick] [--runs 5] [--json OUT]

1. `rocmtui matrix --json` for 8 targets × 3 arches (24 tags, every one in the registry, the
   bake prints and image facts already kept from a first run), beside the same 24 HEAD requests
   made by a bare asyncio/httpx loop, both as processes started the same way (the interpreter,
   its imports, the requests): target <= 2x. The in-process times (rocmtui's `seconds` and the
   loop's own) are in the note.
2. 100 repositories × 20 tags (100 targets × 20 arches: 2,000 tags): the fill, with the bake
   prints kept (the registry's part plus the verdicts), from `rocmtui matrix --json`'s own
   `seconds`, beside the bare loop's 2,000 HEADs at the same concurrency: target no slower
   than that loop (<= 1.0x; it was < 3 s, set beside a 2.2 s loop, but the loop alone took
   3.28 s on a loaded run of this shared machine, issue 27). The
   first, cold fill (20 `bake --print` runs, every image's labels read) is shown beside it.
3. The console answering keys while the matrix of (2) fills: `?` typed, the time until the
   help text is on the terminal, while the published screen asks the registry again and again
   (ctrl+r after each answer): p95 target < 50 ms, beside the same keys with the console idle.

Nothing asserts; it prints a table (and JSON with --json). The machine may be shared: every
figure is beside its anchor from the same run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # devfleet/ (not in the wheel)
import common
from tui import Pty

ROOT = Path(__file__).resolve().parents[1]
ACCEPT = (
    "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.docker.distribution.manifest.v2+json"
)

BARE_LOOP = r"""
import asyncio, json, sys, time
import httpx

async def main(base, paths, concurrency):
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, trust_env=False) as client:
        async def head(path):
            async with gate:
                r = await client.head(base + path, headers={"Accept": ACCEPT})
                return r.headers.get("docker-content-digest")
        started = time.monotonic()
        digests = await asyncio.gather(*(head(p) for p in paths))
        return time.monotonic() - started, sum(1 for d in digests if d)

ACCEPT = sys.argv[4]
paths = json.loads(open(sys.argv[2]).read())
seconds, found = asyncio.run(main(sys.argv[1], paths, int(sys.argv[3])))
print(json.dumps({"seconds": seconds, "found": found}))
"""


def _req(
    method: str, url: str, data: bytes | None = None, ctype: str | None = None
) -> tuple[int, dict[str, str]]:
    req = urllib.request.Request(url, data=data, method=method)
    if ctype:
        req.add_header("Content-Type", ctype)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.status, {k.lower(): v for k, v in resp.headers.items()}


def _blob(base: str, repo: str, data: bytes) -> str:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    _, headers = _req("POST", f"{base}/v2/{repo}/blobs/uploads/")
    location = headers["location"]
    location = location if location.startswith("http") else base + location
    sep = "&" if "?" in location else "?"
    _req("PUT", f"{location}{sep}digest={digest}", data, "application/octet-stream")
    return digest


def fill_registry(base: str, repos: list[str], tags: list[str], version: str) -> None:
    """One image per repository (its pin label as the bake file says), under every tag."""

    def one(repo: str) -> None:
        config = json.dumps(
            {
                "architecture": "amd64",
                "os": "linux",
                "created": "2026-12-01T00:00:00Z",
                "config": {"Labels": {"rocm-bake.pin.PYTORCH_VERSION": version}},
                "rootfs": {"type": "layers", "diff_ids": []},
                "repo": repo,
            }
        ).encode()
        layer = f"bench layer {repo}".encode()
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {
                    "mediaType": "application/vnd.docker.container.image.v1+json",
                    "size": len(config),
                    "digest": _blob(base, repo, config),
                },
                "layers": [
                    {
                        "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                        "size": len(layer),
                        "digest": _blob(base, repo, layer),
                    }
                ],
            }
        ).encode()
        for tag in tags:
            _req(
                "PUT",
                f"{base}/v2/{repo}/manifests/{tag}",
                manifest,
                "application/vnd.docker.distribution.manifest.v2+json",
            )

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, repos))


def bake_file(path: Path, targets: int, arches: list[str], registry: str) -> Path:
    """A bake file of `targets` targets, each tagged per arch, labelled with its pin."""
    lines = [
        f'variable "REGISTRY" {{\n  default = "{registry}"\n}}',
        'variable "PYTORCH_VERSION" {\n  default = "2.15.0"\n}',
        f'variable "GFX_ARCH" {{\n  default = "{arches[0]}"\n}}',
        f'variable "SUPPORTED_GFX_ARCHES" {{\n  default = "{",".join(arches)}"\n}}',
        'target "_pinned" {\n  labels = {\n'
        '    "rocm-bake.pin.PYTORCH_VERSION" = PYTORCH_VERSION\n  }\n}',
    ]
    for i in range(targets):
        lines.append(
            f'target "t{i:03d}" {{\n  inherits = ["_pinned"]\n'
            f'  tags     = ["${{REGISTRY}}/bench/t{i:03d}:${{PYTORCH_VERSION}}-${{GFX_ARCH}}"]\n}}'
        )
    path.write_text("\n\n".join(lines) + "\n")
    return path


def fleet_file(path: Path, bake: Path, registry_url: str, state: Path, tmp: Path) -> Path:
    path.write_text(
        f'bake_file = "{bake}"\nstate_dir = "{state}"\nrefresh_seconds = 5.0\n\n'
        f'[registry]\nurl = "{registry_url}"\n\n'
        "[matrix]\nrefresh_seconds = 600\ndeadline_seconds = 60\n\n"
        f'[[nodes]]\nname = "bench"\ndocker_host = "unix://{tmp}/none.sock"\n'
    )
    return path


def env_for(tmp: Path) -> dict[str, str]:
    keep = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
    return {
        **keep,
        "HOME": str(tmp / "home"),
        "XDG_STATE_HOME": str(tmp / "xdg"),
        "TERM": "xterm-256color",
        "TZ": "UTC",
    }


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    took = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{argv[:4]} exited {done.returncode}: {done.stderr[-500:]}")
    return took, done.stdout


def matrix_run(config: Path, env: dict[str, str]) -> tuple[float, dict]:
    took, out = timed(
        [sys.executable, "-m", "rocmtui", "--config", str(config), "matrix", "--json"], env
    )
    return took, json.loads(out)


def bare_run(
    base: str, paths: list[str], concurrency: int, tmp: Path, env: dict[str, str]
) -> tuple[float, dict]:
    listing = tmp / "paths.json"
    listing.write_text(json.dumps(paths))
    took, out = timed(
        [sys.executable, "-c", BARE_LOOP, base, str(listing), str(concurrency), ACCEPT], env
    )
    return took, json.loads(out)


def head_paths(data: dict) -> list[str]:
    out = []
    for row in data["rows"]:
        for cell in row["cells"]:
            repo, tag = cell["tag"].split("/", 1)[1].rsplit(":", 1)
            out.append(f"/v2/{repo}/manifests/{tag}")
    return out


def figure_small(base: str, address: str, tmp: Path, runs: int) -> list[dict]:
    arches = ["gfx950", "gfx1201", "gfx1250"]
    fill_registry(
        base, [f"bench/t{i:03d}" for i in range(8)], [f"2.15.0-{a}" for a in arches], "2.15.0"
    )
    bake = bake_file(tmp / "small.hcl", 8, arches, address)
    config = fleet_file(tmp / "small.toml", bake, base, tmp / "state-small", tmp)
    env = env_for(tmp)
    _, first = matrix_run(config, env)  # keeps the prints and the image facts
    paths = head_paths(first)
    ours, theirs, ours_in, theirs_in = [], [], [], []
    for _ in range(runs):  # alternating, so load hits both
        took, data = matrix_run(config, env)
        ours.append(took)
        ours_in.append(data["seconds"])
        took, bare = bare_run(base, paths, 8, tmp, env)
        theirs.append(took)
        theirs_in.append(bare["seconds"])
    counts = first["counts"]
    o, t = common.median(ours), common.median(theirs)
    return [
        common.row(
            "rocmtui matrix --json, 8 targets x 3 arches (24 HEADs), s",
            o,
            t,
            unit="s",
            anchor_name="bare asyncio/httpx loop, same HEADs",
            target="<= 2x",
            ok=o <= 2 * t,
            note=f"median of {runs}; in-process {common.median(ours_in):.3f} s vs "
            f"{common.median(theirs_in):.3f} s; verdicts {counts}",
        )
    ]


def figure_large(
    base: str, address: str, tmp: Path, runs: int, targets: int, arch_count: int
) -> tuple[list[dict], Path]:
    arches = [f"gfx{950 + i}" for i in range(arch_count)]
    fill_registry(
        base, [f"bench/t{i:03d}" for i in range(targets)], [f"2.15.0-{a}" for a in arches], "2.15.0"
    )
    bake = bake_file(tmp / "large.hcl", targets, arches, address)
    config = fleet_file(tmp / "large.toml", bake, base, tmp / "state-large", tmp)
    env = env_for(tmp)
    _, cold = matrix_run(config, env)
    paths = head_paths(cold)
    warm, bare = [], []
    for _ in range(runs):
        _, data = matrix_run(config, env)
        warm.append(data["seconds"])
        _, loop = bare_run(base, paths, 8, tmp, env)
        bare.append(loop["seconds"])
    w, b = common.median(warm), common.median(bare)
    tags = len(paths)
    return [
        common.row(
            f"fill {targets} repos x {arch_count} tags ({tags} tags), s",
            w,
            b,
            unit="s",
            anchor_name="bare asyncio/httpx loop, same HEADs, concurrency 8",
            # 3 s was set beside a loop of 2.2 s; on a loaded machine the loop itself takes
            # over 3 s (3.28 s in issue 27's run), so the target is the ratio: no slower than
            # the bare HEADs at the same concurrency
            target="<= 1.0x",
            ok=w <= b,
            note=f"median of {runs}; {w:.2f} s (was < 3 s absolute); rocmtui's own `seconds` "
            "(bake prints kept, image facts kept); "
            f"concurrency 8; verdicts {data['counts']}",
        ),
        common.row(
            f"first fill of the same ({tags} tags, {arch_count} bake --print), s",
            cold["seconds"],
            unit="s",
            note=f"{cold['requests']} registry requests (HEADs, manifests, configs, tag lists)",
        ),
    ], config


def key_latency_during_fills(
    config: Path, env: dict[str, str], presses: int, busy: bool
) -> list[float]:
    """`?` to help text, `presses` times, while the published screen asks again and again
    (`busy`) or sits idle on its last answer."""
    term = Pty([sys.executable, "-m", "rocmtui", "--config", str(config)], env, 140, 45)
    samples: list[float] = []
    try:
        term.wait_for(b"rocmtui", timeout=60)
        time.sleep(1.0)
        mark = term.size
        term.type(b"m")
        term.wait_for(b"published", mark, timeout=120)
        term.wait_for(b"answered", mark, timeout=180)  # the first answer is on screen
        for i in range(presses):
            if busy and i % 4 == 0:
                term.type(b"\x12")  # ctrl+r: ask the registry again
                time.sleep(0.3)
            if (took := term.key_to_help(0.25)) is not None:
                samples.append(took)
    finally:
        term.stop()
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=0)
    parser.add_argument("--presses", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="short runs (also BENCH_QUICK=1)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    quick = args.quick or common.quick()
    runs = args.runs or (3 if quick else 7)
    presses = args.presses or (12 if quick else 40)
    if shutil.which("docker-registry") is None or shutil.which("docker") is None:
        print("docker-registry and docker buildx are needed", file=sys.stderr)
        return 1
    print(f"load average: {os.getloadavg()}")
    from devfleet.services import start_registry

    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="rocmtui-bench-matrix-") as tmp_name:
        tmp = Path(tmp_name)
        registry = start_registry(tmp / "registry")
        try:
            base, address = registry.url, registry.address
            rows += figure_small(base, address, tmp, runs)
            large, config = figure_large(base, address, tmp, runs, 100, 20)
            rows += large
            env = env_for(tmp)
            busy = key_latency_during_fills(config, env, presses, busy=True)
            idle = key_latency_during_fills(config, env, presses, busy=False)
            b, i = common.p95(busy) * 1000, common.p95(idle) * 1000
            rows.append(
                common.row(
                    "key to screen p95 while 2,000 tags fill again and again, ms",
                    b,
                    i,
                    unit="ms",
                    anchor_name="the same keys, published screen idle",
                    target="< 50 ms",
                    ok=b < 50,
                    note=f"{len(busy)}/{presses} presses seen; median "
                    f"{common.median(busy) * 1000:.0f} ms "
                    f"(idle {common.median(idle) * 1000:.0f}); ctrl+r before every 4th press",
                )
            )
        finally:
            registry.stop()
    common.emit(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
