"""`rocmtui bake --node auto` answers when a TLS engine accepts and never answers (issue 39: one
call was seen silent for 120 s on the dev fleet with its TLS node; not reproduced). The probe
round, the placement and the CLI's exit are each bounded: the node is said down, never chosen,
and the command returns with the reason."""

from __future__ import annotations

import json
from pathlib import Path

from devfleet.hostile import HungTcpListener
from devfleet.tls import TestCA
from tests.support.jobs import DEMO_BAKE, run_cli
from tests.support.realparts import require


def test_node_auto_answers_with_a_tls_engine_that_never_handshakes(
    tmp_path: Path, hung_tcp_listener: HungTcpListener
) -> None:
    require("openssl")
    ca = TestCA(tmp_path / "ca")
    client = ca.client(tmp_path / "client")
    config = tmp_path / "rocmtui.toml"
    config.write_text(
        f"bake_file = {json.dumps(str(DEMO_BAKE))}\n"
        f"state_dir = {json.dumps(str(tmp_path / 'state'))}\n\n"
        '[[nodes]]\nname = "snoc-gaming"\n'
        f"docker_host = {json.dumps(hung_tcp_listener.docker_host)}\n"
        f"tls_ca = {json.dumps(str(client.ca))}\ntls_cert = {json.dumps(str(client.cert))}\n"
        f'tls_key = {json.dumps(str(client.key))}\ngfx = "gfx1201"\n'
    )
    # run_cli's timeout (a test failure, never a hang of the suite) is far past the deadlines
    done = run_cli(config, "bake", "demo-vllm", "--node", "auto", "--arch", "gfx1201", "--json")
    assert done.returncode == 1, done.stderr
    answer = json.loads(done.stdout)
    assert answer["started"] is False
    node = answer["placement"]["nodes"][0]
    assert node["node"] == "snoc-gaming" and node["eligible"] is False
    assert node["why_not"].startswith("down"), node["why_not"]
    assert "no node can build it: snoc-gaming: not chosen: down" in done.stderr
    assert hung_tcp_listener.accepted >= 1  # the probe really connected, then waited
