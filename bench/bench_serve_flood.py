"""`rocmtui serve` under a flood of websocket opens (issue 37): one client opening 200
websockets a second must not slow the other sessions' keys.

    python bench/bench_serve_flood.py [--rounds 3] [--keys 40] [--rate 200]

Two consoles are open from another client address (127.0.0.2); a key (Tab, then Shift+Tab:
the focus moves, so the screen changes) is sent over each one's websocket at a person's pace
and timed to the next screen frame. Rounds alternate: quiet (the anchor), then with a separate
process opening `--rate` websockets a second from 127.0.0.1, as a page would (its Origin and
Host), closing any that open. The server refuses most of them (429, the per-client start rate)
before anything starts. The fleet file is engineless (its node's socket does not exist): the
consoles are real, nothing else is needed. Nothing asserts; rows go to the table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common

from tests.support.jobs import engineless_fleet
from tests.support.serve import ServeProcess

FLOOD = """
import asyncio, collections, json, sys, time
import aiohttp

async def main(url, host, rate, seconds):
    counts = collections.Counter()
    async def one(http):
        try:
            ws = await http.ws_connect(url, headers={"Origin": f"http://{host}"},
                                       timeout=aiohttp.ClientWSTimeout(10))
        except aiohttp.WSServerHandshakeError as exc:
            counts[exc.status] += 1
            return
        except Exception as exc:
            counts[type(exc).__name__] += 1
            return
        counts[101] += 1
        await ws.close()
    connector = aiohttp.TCPConnector(local_addr=("127.0.0.1", 0), limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:
        tasks = []
        start = time.monotonic()
        sent = 0
        while time.monotonic() - start < seconds:
            due = int((time.monotonic() - start) * rate)
            while sent < due:
                tasks.append(asyncio.create_task(one(http)))
                sent += 1
            await asyncio.sleep(0.002)
        await asyncio.gather(*tasks)
        took = time.monotonic() - start
    answers = {str(k): v for k, v in counts.items()}
    print(json.dumps({"sent": sent, "seconds": took, "counts": answers}))

asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])))
"""
KEYS = ("\t", "\x1b[Z")  # Tab, Shift+Tab


async def drain(ws: aiohttp.ClientWebSocketResponse, quiet: float = 0.3) -> None:
    """Read frames until the screen has been still for `quiet` seconds."""
    while True:
        try:
            await asyncio.wait_for(ws.receive(), quiet)
        except TimeoutError:
            return


async def key_to_frame(ws: aiohttp.ClientWebSocketResponse, key: str) -> float | None:
    """Seconds from sending `key` to the next screen frame (None: none within 5 s)."""
    start = time.perf_counter()
    await ws.send_str(json.dumps(["stdin", key]))
    deadline = start + 5
    while time.perf_counter() < deadline:
        try:
            message = await asyncio.wait_for(ws.receive(), deadline - time.perf_counter())
        except TimeoutError:
            return None
        if message.type == aiohttp.WSMsgType.BINARY:
            return time.perf_counter() - start
        if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
            return None
    return None


async def measure(sockets: list[aiohttp.ClientWebSocketResponse], keys: int) -> list[float]:
    """Key-to-frame times in milliseconds over every socket, a key every ~150 ms."""
    times: list[float] = []
    for index in range(keys):
        ws = sockets[index % len(sockets)]
        await drain(ws, 0.15)
        took = await key_to_frame(ws, KEYS[(index // len(sockets)) % 2])
        if took is not None:
            times.append(took * 1000)
    return times


async def run(server: ServeProcess, rounds: int, keys: int, rate: float) -> list[common.Row]:
    host = server.host
    url = server.url.replace("http", "ws", 1) + "ws?width=120&height=40"
    connector = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))
    quiet: list[float] = []
    flooded: list[float] = []
    floods: list[dict[str, object]] = []
    serving = psutil.Process(server.process.pid)
    server_cpu = flood_cpu = flood_wall = 0.0
    async with aiohttp.ClientSession(connector=connector) as http:
        headers = {"Origin": f"http://{host}"}
        sockets = [await http.ws_connect(url, headers=headers) for _ in range(2)]
        for ws in sockets:
            await drain(ws, 2.0)  # drawn and settled
        for _ in range(rounds):
            quiet += await measure(sockets, keys)
            seconds = keys * 0.35 + 2  # the flood outlasts the keys measured under it
            flood = await asyncio.create_subprocess_exec(
                sys.executable, "-c", FLOOD, url, host, str(rate), str(seconds),
                stdout=subprocess.PIPE,
            )  # fmt: skip
            flooding = psutil.Process(flood.pid)
            cpu0, wall0 = sum(serving.cpu_times()[:2]), time.monotonic()
            await asyncio.sleep(1.0)  # the flood at full rate before the first key
            flooded += await measure(sockets, keys)
            with contextlib.suppress(psutil.Error):
                flood_cpu += sum(flooding.cpu_times()[:2])
            server_cpu += sum(serving.cpu_times()[:2]) - cpu0
            flood_wall += time.monotonic() - wall0
            out, _ = await flood.communicate()
            floods.append(json.loads(out))
        for ws in sockets:
            await ws.close()
    sent = sum(int(f["sent"]) for f in floods)  # type: ignore[call-overload]
    took = sum(float(f["seconds"]) for f in floods)  # type: ignore[arg-type]
    counts: dict[str, int] = {}
    for f in floods:
        for status, n in f["counts"].items():  # type: ignore[attr-defined]
            counts[status] = counts.get(status, 0) + n
    p95, anchor = common.p95(flooded), common.p95(quiet)
    return [
        common.row(
            f"serve: key -> screen p95 of other sessions, {rate:g} ws opens/s from one client (ms)",
            p95,
            anchor,
            unit="ms",
            anchor_name="the same keys with no flood (alternating rounds)",
            target="< 50 ms",
            ok=p95 < 50,
            note=f"{len(flooded)} keys under flood, {len(quiet)} quiet; medians "
            f"{common.median(flooded):.1f} / {common.median(quiet):.1f} ms; flood sent "
            f"{sent} opens at {sent / took:.0f}/s, answers {counts}; the server's own CPU "
            f"{server_cpu / flood_wall * 100:.0f}% of a core while flooded, the flooding "
            f"client's ~{flood_cpu / flood_wall * 100:.0f}% (same 2 cores); engineless fleet",
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2 if common.quick() else 3)
    parser.add_argument("--keys", type=int, default=20 if common.quick() else 40)
    parser.add_argument("--rate", type=float, default=200.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-serve-flood-") as folder:
        config = engineless_fleet(Path(folder))
        server = ServeProcess(config, "--idle-timeout", "0", "--max-sessions", "8")
        try:
            rows = asyncio.run(run(server, args.rounds, args.keys, args.rate))
        finally:
            server.stop()
    common.emit(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
