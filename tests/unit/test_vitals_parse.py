"""Node vitals from recorded text: node_exporter's exposition, the /proc script's output, and
the rates derived from two readings (rocmtui.core.vitals)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from rocmtui.core.config.fleetfile import ConfigError, parse_config
from rocmtui.core.vitals import exposition, procfs
from rocmtui.core.vitals.nodevitals import SOURCE_SSH
from rocmtui.core.vitals.reading import Reading, TreeProcess, derive
from rocmtui.core.vitals.sshsource import remote_command

DATA = Path(__file__).resolve().parents[1] / "data" / "vitals"
# recorded on this machine: node_exporter 1.5 filtered to the vitals' collectors, and
# procfs.SCRIPT run by sh while the dev fleet's three engines ran
EXPORTER = (DATA / "node_exporter.txt").read_text()
PROC = (DATA / "proc.txt").read_text()
THINK_ROOT = "/srv/fleet/engines/snoc-think/data"


def test_node_exporter_text_gives_the_host_figures() -> None:
    samples = exposition.parse(EXPORTER.splitlines())
    assert samples.skipped == 0 and samples.count > 20
    reading = exposition.to_reading(samples, THINK_ROOT + "/buildkit")
    assert reading.cpu_count == 2
    assert reading.cpu_total_seconds and reading.cpu_busy_seconds
    assert 0 < reading.cpu_busy_seconds < reading.cpu_total_seconds
    assert reading.mem_total_bytes and reading.mem_available_bytes is not None
    assert reading.mem_available_bytes < reading.mem_total_bytes
    assert reading.oom_kills == 0 and reading.swap_in_pages is not None
    assert reading.psi_cpu_some_seconds is not None and reading.psi_io_full_seconds is not None
    # the data root's own mount (a bind mount here), not "/"
    assert reading.data_root_total_bytes and reading.data_root_free_bytes
    assert not reading.missing


def test_the_longest_mount_holding_the_data_root_is_chosen() -> None:
    text = (
        'node_filesystem_size_bytes{device="a",mountpoint="/"} 1000\n'
        'node_filesystem_avail_bytes{device="a",mountpoint="/"} 900\n'
        'node_filesystem_size_bytes{device="b",mountpoint="/var/lib"} 100\n'
        'node_filesystem_avail_bytes{device="b",mountpoint="/var/lib"} 10\n'
        'node_filesystem_size_bytes{device="c",mountpoint="/var/lib/dock"} 5\n'
        'node_filesystem_avail_bytes{device="c",mountpoint="/var/lib/dock"} 5\n'
    )
    reading = exposition.to_reading(exposition.parse(text.splitlines()), "/var/lib/docker")
    assert (reading.data_root_free_bytes, reading.data_root_total_bytes) == (10, 100)


def test_garbage_and_escape_sequences_never_get_through() -> None:
    text = (
        "this is not a metric line {{{\n"
        'node_load1{broken="unterminated} 3\n'
        "node_load1 not-a-number\n"
        "\x00\x01\x02\n"
        'node_filesystem_size_bytes{mountpoint="/\x1b]52;c;AAAA\x07/x\\"q",device="d"} 7\n'
        'node_filesystem_avail_bytes{mountpoint="/\x1b[31mred",device="d"} 1\n'
        "node_load1 2.5\n"
        "node_load1 NaN\n"
    )
    samples = exposition.parse(text.splitlines())
    assert samples.one("node_load1") == 2.5
    # the broken label, the bad number, the line naming no metric, the NaN (a family the
    # vitals do not read is passed over uncounted)
    assert samples.skipped == 4
    for labels, _ in samples.values("node_filesystem_avail_bytes") + samples.values(
        "node_filesystem_size_bytes"
    ):
        assert "\x1b" not in labels["mountpoint"] and "\x07" not in labels["mountpoint"]
    assert samples.values("node_filesystem_size_bytes")[0][0]["mountpoint"].endswith('x"q')


def test_the_number_of_samples_kept_is_capped() -> None:
    lines = (f'node_cpu_seconds_total{{cpu="{i}",mode="idle"}} 1' for i in range(10**6))
    samples = exposition.parse(lines)
    assert samples.count == exposition.MAX_SAMPLES


def test_the_proc_script_output_gives_the_host_and_the_engine_tree() -> None:
    reading = procfs.parse(PROC, "/", "/tmp/rt2fcjg8pb/d.sock")
    assert reading.cpu_count == 2 and reading.load1 is not None
    assert reading.mem_total_bytes and reading.swap_in_pages is not None
    assert reading.oom_kills == 0
    assert reading.psi_cpu_some_avg10 is not None and reading.psi_io_full_avg10 is not None
    assert reading.data_root_total_bytes and reading.data_root_free_bytes
    assert reading.tree is not None
    pids = {p.pid for p in reading.tree}
    # snoc-think's dockerd and the containerd it started, not the other two engines
    assert {15720, 15760} <= pids and not {15691, 15706, 15808, 15945} & pids
    assert not [m for m in reading.missing if "engine" in m]


def test_the_default_engine_is_the_one_without_a_host_flag() -> None:
    engines = {
        10: ["dockerd", "-H", "unix:///tmp/other.sock"],
        20: ["/usr/bin/dockerd", "--containerd=/run/containerd/containerd.sock"],
        30: [
            "containerd-shim-runc-v2",
            "-namespace",
            "moby",
            "-address",
            "/run/containerd/containerd.sock",
        ],
        40: ["containerd-shim-runc-v2", "-address", "/elsewhere.sock"],
    }
    procs = [
        procfs.Proc(10, 1, "dockerd", 1.0),
        procfs.Proc(20, 1, "dockerd", 2.0),
        procfs.Proc(21, 20, "runc", 0.5),
        procfs.Proc(30, 1, "containerd-shim", 0.1),
        procfs.Proc(31, 30, "cc1plus", 50.0),
        procfs.Proc(40, 1, "containerd-shim", 0.1),
        procfs.Proc(41, 40, "sleep", 0.0),
    ]
    tree, why = procfs.engine_tree(procs, engines, None)
    assert why is None and tree is not None
    assert [p.pid for p in tree] == [20, 21, 30, 31]
    tree, why = procfs.engine_tree(procs, {10: engines[10], 20: engines[20]}, "/nowhere.sock")
    assert tree is None and why and "no dockerd" in why


def test_a_kernel_without_psi_and_a_cut_answer_say_so() -> None:
    text = PROC.replace("@psi cpu\n", "@psi cpu\nabsent\n@x\n")
    cut = text.split("@psi io")[0].replace("@psi cpu\nabsent", "@psi cpu\nabsent")
    reading = procfs.parse(cut, None, None)
    assert "psi: no /proc/pressure on this kernel" in reading.missing
    assert "vitals: the node's answer was cut short" in reading.missing
    assert any(m.startswith("data root: not known yet") for m in reading.missing)
    assert reading.cpu_count == 2  # what came before the cut is kept


def test_stat_lines_with_odd_names_parse() -> None:
    proc = procfs.parse_stat_line(
        "123 (a) (b\x1b[2J) S 7 1 1 0 -1 0 0 0 0 0 150 50 20 30 20 0 1 0 1 1 1"
    )
    assert proc is not None and (proc.pid, proc.ppid) == (123, 7)
    assert proc.seconds == pytest.approx(2.5) and "\x1b" not in proc.comm
    assert procfs.parse_stat_line("garbage") is None
    assert procfs.parse_stat_line("1 (x) S") is None


def test_the_remote_command_keeps_the_data_root_one_quoted_word() -> None:
    hostile = "/data/$(touch /tmp/pwned)'; rm -rf / #"
    words = shlex.split(remote_command(hostile, "/run/$(x).sock"))
    assert words == ["sh", "-c", procfs.SCRIPT, "vitals", hostile, "/run/$(x).sock"]


def _reading(busy: float, total: float, tree: list[TreeProcess], psi: float) -> Reading:
    return Reading(
        cpu_count=2,
        cpu_busy_seconds=busy,
        cpu_total_seconds=total,
        psi_io_some_seconds=psi,
        mem_total_bytes=1000,
        mem_available_bytes=250,
        swap_total_bytes=0,
        swap_free_bytes=0,
        swap_in_pages=10,
        tree=tree,
    )


def test_rates_come_from_the_previous_counters() -> None:
    first = derive(
        "n",
        SOURCE_SSH,
        _reading(100, 200, [TreeProcess(1, "dockerd", 10.0), TreeProcess(2, "gone", 5.0)], 1.0),
        1000.0,
        None,
    )
    assert first.host_cpu_percent is None and first.engine_cpu_percent is None
    assert first.mem_used_percent == 75.0 and first.swap_used_percent == 0.0
    tree = [TreeProcess(1, "dockerd", 10.1), TreeProcess(3, "cc1plus", 1.9)]
    second = derive("n", SOURCE_SSH, _reading(103, 204, tree, 1.5), 1002.0, first)
    assert second.host_cpu_percent == 150.0  # 3 of 4 CPU-seconds busy on 2 CPUs
    # an exited process takes its time with it; a new one counts from zero
    assert second.engine_cpu_percent == 100.0
    assert second.busiest is not None and second.busiest.name == "cc1plus"
    assert second.busiest.cpu_percent == 95.0
    assert second.psi_io_some_avg10 == 25.0
    # readings too far apart give no rates
    late = derive("n", SOURCE_SSH, _reading(110, 300, tree, 2.0), 5000.0, second)
    assert late.host_cpu_percent is None and late.engine_cpu_percent is None


def test_a_bad_node_exporter_url_names_the_key(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text('[[nodes]]\nname = "g"\nnode_exporter = "snoc-think:9100"\n')
    with pytest.raises(ConfigError) as caught:
        parse_config(path)
    assert caught.value.key == "nodes.g.node_exporter"
    path.write_text('[[nodes]]\nname = "g"\nnode_exporter = "http://snoc-think:9100/metrics"\n')
    assert parse_config(path).nodes[0].node_exporter == "http://snoc-think:9100/metrics"


def test_vitals_survive_the_monitor_wire() -> None:
    """A console attached to the monitor gets every figure (the counters stay behind; a
    malformed one is the wire's ProtocolError, tests/unit/test_monitor_wire.py)."""
    from msgspec.structs import replace

    from rocmtui.core.hostmonitor.wire import decode
    from rocmtui.core.snapshotviews import snapshot_json
    from tests.support.snapshots import recorded

    tree = [TreeProcess(1, "dockerd", 10.0)]
    first = derive("snoc-think", SOURCE_SSH, _reading(100, 200, tree, 1.0), 1000.0, None)
    tree = [TreeProcess(1, "dockerd", 10.1), TreeProcess(3, "cc1plus", 1.9)]
    vitals = derive("snoc-think", SOURCE_SSH, _reading(103, 204, tree, 1.5), 1002.0, first)
    snap = recorded.fleet()
    snap = replace(snap, nodes=(snap.nodes[0], replace(snap.nodes[1], vitals=vitals)))
    data = snapshot_json(snap, now=1003.0)
    assert data["nodes"][1]["vitals"]["age"] == 1.0
    back = decode(data).nodes[1].vitals
    assert back == replace(vitals, counters=None)
    assert decode(data).nodes[0].vitals is None


def test_status_says_each_node_s_vitals_in_one_line() -> None:
    from msgspec.structs import replace

    from rocmtui.core.vitals.nodevitals import NodeVitals
    from rocmtui.core.vitals.summary import summary

    busy = NodeVitals(
        node="snoc-think", source=SOURCE_SSH, taken_at=100.0, host_cpu_percent=1580.4,
        engine_cpu_percent=1490.0, mem_used_percent=71.2, data_root_free_bytes=38 << 30,
        data_root_total_bytes=400 << 30, psi_io_some_avg10=12.0, build_cache_bytes=12 << 30,
    )  # fmt: skip
    assert summary(busy, 101.0) == (
        "cpu 1580% eng 1490% mem 71% · 38.0G free of 400.0G · io 12% · cache 12.0G (ssh)"
    )
    stale = replace(busy, error="ssh vitals: no complete answer in 2.5s (link hung?)")
    assert summary(stale, 160.0).endswith("(ssh), 1m00s old")
    bare = NodeVitals(node="g", source="engine", taken_at=100.0)
    assert summary(bare, 100.0) == "no figures (engine)"


def test_the_engine_s_own_memory_cgroup_counts_its_oom_kills() -> None:
    """The kernel's oom_kill counts every node's on a shared kernel; the engine's cgroup only
    its own: snoc-think's dockerd (15720) had 3, the others' cgroups said nothing."""
    text = PROC.replace("@engines\n", "@engines\n@oom 15720 3\n@oom 15808 junk\n", 1)
    assert procfs.parse(text, "/", "/tmp/rt2fcjg8pb/d.sock").engine_oom_kills == 3
    assert procfs.parse(text, "/", "/tmp/rt3_jxu787/d.sock").engine_oom_kills is None
    assert procfs.parse(text, "/", "/tmp/rtio1gdduu/d.sock").engine_oom_kills is None
    tree = procfs.parse(text, "/", "/tmp/rt2fcjg8pb/d.sock").tree
    assert tree is not None and {15720, 15760} <= {p.pid for p in tree}  # engines intact
