"""Hostile node_exporters (LoopbackHTTP stand-ins): garbage, a huge or endless body, escape
sequences in label values, one that hangs. Each gives a clear line naming its source, nothing
raw reaches the vitals, and the deadline is kept. The node's engine is a socket that does not
exist (no real part needed): the exporter is all it has."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rocmtui.core.config.fleetfile import NodeConfig
from rocmtui.core.probes import HttpClients, NodeProber
from rocmtui.core.vitals.exporter import MAX_BODY
from rocmtui.core.vitals.gather import VitalsProber
from rocmtui.core.vitals.nodevitals import NodeVitals
from tests.support.loopback import Handler, LoopbackHTTP, send

DATA = Path(__file__).resolve().parents[1] / "data" / "vitals"
EXPORTER = (DATA / "node_exporter.txt").read_bytes()
DEADLINE = 2.0
MARGIN = 1.5  # scheduling slack on a loaded 2-core machine; never a speed assertion
Exporter = Callable[[str], str]


def _answers() -> dict[str, Callable[[Handler, LoopbackHTTP], None]]:
    def good(h: Handler, _: LoopbackHTTP) -> None:
        send(h, 200, {"Content-Type": "text/plain"}, EXPORTER)

    def garbage(h: Handler, _: LoopbackHTTP) -> None:
        send(h, 200, {}, b"<html><body>\x1b]52;c;AAAA\x07 it works!\n\x00\xff\xfe</body></html>\n")

    def escapes(h: Handler, _: LoopbackHTTP) -> None:
        evil = (
            'node_filesystem_size_bytes{device="/dev/x\\u\x1b[2J",mountpoint="/"} 100\n'
            'node_filesystem_avail_bytes{device="/dev/x\\u\x1b[2J",mountpoint="/"} 40\n'
            'node_load1{x="\x1b]0;owned\x07"} 3.5\n'
        )
        send(h, 200, {}, EXPORTER + evil.encode())

    def huge(h: Handler, _: LoopbackHTTP) -> None:
        pad = b"# " + b"x" * 1000 + b"\n"
        send(h, 200, {}, EXPORTER + pad * (MAX_BODY // len(pad) + 10))

    def endless(h: Handler, http: LoopbackHTTP) -> None:
        h.send_response(200)
        h.end_headers()
        h.wfile.write(EXPORTER)
        line = b'node_cpu_seconds_total{cpu="9",mode="idle"} 1\n' * 1000
        while not http.stopping.is_set():
            try:
                h.wfile.write(line)
            except OSError:
                return

    def hangs(h: Handler, http: LoopbackHTTP) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "100000")
        h.end_headers()
        while not http.stopping.wait(0.3):  # one byte now and then, never done
            try:
                h.wfile.write(b"#")
                h.wfile.flush()
            except OSError:
                return

    def error(h: Handler, _: LoopbackHTTP) -> None:
        send(h, 500, {}, b"\x1b[31mboom\n")

    return {
        "good": good,
        "garbage": garbage,
        "escapes": escapes,
        "huge": huge,
        "endless": endless,
        "hangs": hangs,
        "error": error,
    }


@pytest.fixture
def exporter() -> Iterator[Exporter]:
    """`exporter(kind)` serves one hostile kind on loopback and returns its /metrics URL."""
    started: list[LoopbackHTTP] = []

    def make(kind: str) -> str:
        answer = _answers()[kind]
        holder: list[LoopbackHTTP] = []
        http = LoopbackHTTP(lambda h: answer(h, holder[0]))
        holder.append(http)
        started.append(http)
        return f"{http.url}/metrics"

    yield make
    for http in started:
        http.stop()


async def _vitals(url: str, tmp_path: Path, previous: NodeVitals | None = None) -> NodeVitals:
    node = NodeConfig(
        "snoc-gaming", docker_host=f"unix://{tmp_path}/no.sock", local=False, node_exporter=url
    )
    prober = NodeProber()
    clients = HttpClients()
    vitals = VitalsProber(prober.engines, clients, prober.gate)
    try:
        started = time.monotonic()
        got = await vitals.vitals(node, previous, DEADLINE)
        assert time.monotonic() - started < DEADLINE + MARGIN
    finally:
        await clients.aclose()
        prober.close()
    assert got is not None
    return got


def _clean(v: NodeVitals) -> None:
    text = repr(v)
    for bad in ("\x1b", "\x07", "\x00", "\\x1b", "\\x07"):
        assert bad not in text, text


async def test_a_good_exporter_gives_the_host_figures(exporter: Exporter, tmp_path: Path) -> None:
    v = await _vitals(exporter("good"), tmp_path)
    assert v.source == "node_exporter" and v.error is None
    assert v.mem_total_bytes and v.cpu_count and v.load1 is not None
    # the engine is not there: its build cache and data root are missing, and said so
    assert any(m.startswith("engine API:") for m in v.missing), v.missing


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("garbage", "node_exporter: not metrics"),
        ("hangs", "node_exporter: no complete answer in"),
        ("error", "node_exporter: HTTP 500"),
    ],
)
async def test_a_useless_exporter_is_one_clear_line(
    exporter: Exporter, tmp_path: Path, kind: str, said: str
) -> None:
    v = await _vitals(exporter(kind), tmp_path)
    assert v.source == "engine", v
    assert v.error is not None and v.error.startswith(said), v.error
    assert "\n" not in v.error
    _clean(v)


async def test_escape_sequences_in_label_values_never_get_through(
    exporter: Exporter, tmp_path: Path
) -> None:
    v = await _vitals(exporter("escapes"), tmp_path)
    assert v.source == "node_exporter" and v.load1 is not None
    _clean(v)


@pytest.mark.parametrize("kind", ["huge", "endless"])
async def test_a_huge_or_endless_body_is_cut_and_said(
    exporter: Exporter, tmp_path: Path, kind: str
) -> None:
    v = await _vitals(exporter(kind), tmp_path)
    assert v.source == "node_exporter", v
    assert v.mem_total_bytes  # what came before the cut is read
    assert f"node_exporter: answer over {MAX_BODY >> 20} MiB, cut" in v.missing, v.missing
    _clean(v)


async def test_a_hung_exporter_keeps_the_previous_figures_with_their_age(
    exporter: Exporter, tmp_path: Path
) -> None:
    good = await _vitals(exporter("good"), tmp_path)
    later = await _vitals(exporter("hangs"), tmp_path, good)
    # nothing better than the engine (which is not there) answered: the last host figures
    # stay, with their time (the console shows their age), and the error says why
    assert later.error is not None and later.error.startswith("node_exporter: no complete")
    assert later.error.endswith("figures kept from before")
    assert later.taken_at == good.taken_at and later.mem_total_bytes == good.mem_total_bytes
