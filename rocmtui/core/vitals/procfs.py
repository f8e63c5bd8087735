"""A node's /proc, read by one small fixed script, parsed defensively into a `Reading`.

The ssh source runs `SCRIPT` on the node through its kept connection (one session, no login);
the local source reads the same files itself (`read_local`). Either way the text is parsed by
`parse`, which never raises: a section that is missing or garbled leaves its figures None and
says so in `missing`.

The engine's process tree: a RUN step's processes descend from dockerd (BuildKit's runc
executor) or from a containerd shim (the containerd worker); shims re-parent to init, so they
are matched by the containerd socket they name (`-address`), which is dockerd's
`--containerd` or its own `EXEC_ROOT/containerd/containerd.sock`. The dockerd is the one
serving the node's socket (several engines may share one kernel, as on the dev fleet).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable

from msgspec import Struct

from rocmtui.core.text.sanitize import sanitize_line
from rocmtui.core.vitals.reading import Reading, TreeProcess

#: the script the ssh source runs: fixed text, its arguments (the data root, the engine's
#: socket when the URL names one) passed as "$1" and "$2" by the remote shell, never
#: interpolated. Sections start with "@"; "@root" and "@host" carry a value on their line.
#: With no data root known yet (a node's first round) the node's docker CLI names it. A data
#: root the ssh user may not reach (statvfs needs search permission on every folder above it)
#: is measured at a mount of its filesystem that it can reach (`mounts_of`); one that is not
#: there is said so, never measured as another filesystem.
SCRIPT = r"""d=$1 s=$2
if [ -z "$d" ] && command -v docker >/dev/null 2>&1; then
  d=$(docker ${s:+--host "unix://$s"} info --format '{{.DockerRootDir}}' 2>/dev/null)
fi
echo "@root $d"
echo "@host ${DOCKER_HOST:-}"
echo @stat; grep '^cpu' /proc/stat
echo @loadavg; cat /proc/loadavg
echo @meminfo; cat /proc/meminfo
echo @vmstat; grep -E '^(pswpin|oom_kill) ' /proc/vmstat
for f in cpu io memory; do echo "@psi $f"; cat /proc/pressure/$f 2>/dev/null || echo absent; done
echo @fs
if [ -n "$d" ]; then
  if out=$(stat -f -c '%S %b %a' -- "$d" 2>&1); then echo "$out"
  else case $out in
    *ermission*) awk -v d="$d/" '
      { mp[NR] = $5; mm[NR] = $3 }
      $5 == "/" || index(d, $5 "/") == 1 { if (length($5) >= length(b)) { b = $5; dev = $3 } }
      END { print b; for (i = 1; i <= NR; i++) if (mm[i] == dev && mp[i] != b) print mp[i] }
    ' /proc/self/mountinfo | {
      ok=; while read -r m; do stat -f -c '%S %b %a' -- "$m" 2>/dev/null && { ok=1; break; }; done
      [ -n "$ok" ] || echo "no statvfs of the data root or of its filesystem's mounts"; };;
    *) echo "$out";;
  esac; fi
fi
echo @engines
for p in /proc/[0-9]*; do
  { read -r c < "$p/comm"; } 2>/dev/null || continue
  case $c in dockerd|containerd|containerd-shim*)
    printf '%s ' "${p#/proc/}"; tr '\0' ' ' < "$p/cmdline" 2>/dev/null; echo;;
  esac
  [ "$c" = dockerd ] && { while IFS=: read -r id ctl path; do
    case $id:$ctl in *:memory) f=/sys/fs/cgroup/memory$path/memory.oom_control;;
      0:) f=/sys/fs/cgroup$path/memory.events;; *) continue;; esac
    while read -r k v; do [ "$k" = oom_kill ] && echo "@oom ${p#/proc/} $v"; done < "$f"
  done < "$p/cgroup"; } 2>/dev/null
done
echo @procs; cat /proc/[0-9]*/stat 2>/dev/null
echo @end
"""
CLK_TCK = 100  # USER_HZ: /proc/stat and /proc/PID/stat count in these on every Linux
MAX_TREE = 5_000  # processes kept in an engine's tree
DEFAULT_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock")


class Proc(Struct, frozen=True):
    """One /proc/PID/stat line: what the tree walk needs."""

    pid: int
    ppid: int
    comm: str
    seconds: float  # utime + stime + cutime + cstime


def parse_stat_line(line: str) -> Proc | None:
    """A /proc/PID/stat line (comm may hold spaces and parentheses: split at the last ')')."""
    open_at, close_at = line.find("("), line.rfind(")")
    if open_at < 0 or close_at < open_at:
        return None
    try:
        pid = int(line[:open_at])
        fields = line[close_at + 2 :].split()
        ppid = int(fields[1])
        ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
    except (ValueError, IndexError):
        return None
    comm = sanitize_line(line[open_at + 1 : close_at], 32)
    return Proc(pid, ppid, comm, ticks / CLK_TCK)


def _flag(argv: list[str], *names: str) -> str | None:
    """The value of `--name=V` or `--name V` (or a short `-x V`) in `argv`."""
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg[len(name) + 1 :]
    return None


def engine_root(engines: dict[int, list[str]], socket: str | None) -> int | None:
    """The pid of the dockerd serving `socket` (None: the default one), if one is seen."""
    dockerds = {pid: argv for pid, argv in engines.items() if argv and argv[0].endswith("dockerd")}
    exact: list[int] = []
    default: list[int] = []
    for pid, argv in dockerds.items():
        hosts = [a for a in argv if "unix://" in a]
        if socket and any(a.endswith(socket) for a in hosts):
            exact.append(pid)
        elif not hosts and (not socket or socket in DEFAULT_SOCKETS):
            default.append(pid)
    root: int | None = (exact or default)[0] if exact or default else None
    if root is None and len(dockerds) == 1 and not socket:
        root = next(iter(dockerds))
    return root


def engine_tree(
    procs: Iterable[Proc], engines: dict[int, list[str]], socket: str | None
) -> tuple[list[Proc] | None, str | None]:
    """The processes of the engine serving `socket` (None: the default one): (tree, why not).

    `engines`: pid -> argv of each dockerd, containerd and shim seen."""
    root = engine_root(engines, socket)
    if root is None:
        return None, "engine cpu: no dockerd serving this node's socket is visible"
    argv = engines[root]
    containerd = _flag(argv, "--containerd")
    if containerd is None:
        exec_root = _flag(argv, "--exec-root") or "/var/run/docker"
        containerd = exec_root.rstrip("/") + "/containerd/containerd.sock"
    starts = {root}
    for pid, shim in engines.items():
        if shim and "containerd-shim" in shim[0] and _flag(shim, "-address") == containerd:
            starts.add(pid)
    table = {p.pid: p for p in procs}
    children: dict[int, list[int]] = {}
    for p in table.values():
        children.setdefault(p.ppid, []).append(p.pid)
    seen: set[int] = set()
    todo = [pid for pid in starts if pid in table]
    while todo and len(seen) < MAX_TREE:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo.extend(children.get(pid, ()))
    return [table[pid] for pid in sorted(seen)], None


def _sections(text: str) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The lines of each "@name" section, and the values of the one-line ones."""
    out: dict[str, list[str]] = {}
    values: dict[str, str] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith(("@root", "@host")):
            values[line[1:5]] = line[5:].strip()
            current = None
            continue
        if line.startswith("@oom "):  # "@oom PID COUNT" within the engines section
            words = line.split()
            if len(words) == 3:
                values[f"oom {words[1]}"] = words[2]
            continue
        if line.startswith("@"):
            current = out.setdefault(line[1:].strip(), [])
            continue
        if current is not None:
            current.append(line)
    return out, values


def _kv(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        key, _, value = line.partition(":") if ":" in line else line.partition(" ")
        out[key.strip()] = value.strip()
    return out


def _kib(value: str | None) -> int | None:
    try:
        return int(value.split()[0]) * 1024 if value else None
    except (ValueError, IndexError):
        return None


def _psi_avg10(lines: list[str], kind: str) -> float | None:
    for line in lines:
        if line.startswith(kind + " "):
            m = re.search(r"\bavg10=([0-9.]+)", line)
            return float(m.group(1)) if m else None
    return None


def parse(text: str, data_root: str | None, socket: str | None) -> Reading:
    """The `Reading` in `SCRIPT`'s output (see the module docstring; never raises)."""
    sec, values = _sections(text)
    if not data_root and values.get("root", "").startswith("/"):
        data_root = sanitize_line(values["root"], 512)
    reading = Reading(data_root=data_root)
    if "end" not in sec:
        reading.missing.append("vitals: the node's answer was cut short")
    cpus = [line.split() for line in sec.get("stat", [])]
    try:
        total_line = next(f for f in cpus if f and f[0] == "cpu")
        ticks = [int(x) for x in total_line[1:9]]
        reading.cpu_count = sum(1 for f in cpus if f and re.fullmatch(r"cpu\d+", f[0])) or None
        reading.cpu_total_seconds = sum(ticks) / CLK_TCK
        reading.cpu_busy_seconds = (sum(ticks) - ticks[3] - ticks[4]) / CLK_TCK
    except (StopIteration, ValueError, IndexError):
        reading.missing.append("host cpu: /proc/stat unreadable")
    try:
        reading.load1 = float(sec.get("loadavg", [""])[0].split()[0])
    except (ValueError, IndexError):
        reading.missing.append("load: /proc/loadavg unreadable")
    mem = _kv(sec.get("meminfo", []))
    reading.mem_total_bytes = _kib(mem.get("MemTotal"))
    reading.mem_available_bytes = _kib(mem.get("MemAvailable"))
    reading.swap_total_bytes = _kib(mem.get("SwapTotal"))
    reading.swap_free_bytes = _kib(mem.get("SwapFree"))
    if reading.mem_total_bytes is None:
        reading.missing.append("memory: /proc/meminfo unreadable")
    vm = _kv(sec.get("vmstat", []))
    for key, attr in (("pswpin", "swap_in_pages"), ("oom_kill", "oom_kills")):
        try:
            setattr(reading, attr, int(vm[key]))
        except (KeyError, ValueError):
            reading.missing.append(f"{key}: not in /proc/vmstat")
    psi = {kind: sec.get(f"psi {kind}", ["absent"]) for kind in ("cpu", "io", "memory")}
    if all(lines[:1] == ["absent"] or not lines for lines in psi.values()):
        reading.missing.append("psi: no /proc/pressure on this kernel")
    else:
        reading.psi_cpu_some_avg10 = _psi_avg10(psi["cpu"], "some")
        reading.psi_io_some_avg10 = _psi_avg10(psi["io"], "some")
        reading.psi_io_full_avg10 = _psi_avg10(psi["io"], "full")
        reading.psi_memory_some_avg10 = _psi_avg10(psi["memory"], "some")
        reading.psi_memory_full_avg10 = _psi_avg10(psi["memory"], "full")
    _fs(reading, sec.get("fs", []), data_root)
    host = values.get("host", "")
    if not socket and host.startswith("unix://"):
        socket = host[len("unix://") :]
    engines: dict[int, list[str]] = {}
    for line in sec.get("engines", []):
        pid, _, cmd = line.partition(" ")
        if pid.isdigit():
            engines[int(pid)] = cmd.split()
    procs = [p for p in map(parse_stat_line, sec.get("procs", [])) if p is not None]
    tree, why = engine_tree(procs, engines, socket)
    root = engine_root(engines, socket)
    oom = values.get(f"oom {root}", "")
    reading.engine_oom_kills = int(oom) if oom.isdigit() else None
    reading.tree = None if tree is None else [TreeProcess(p.pid, p.comm, p.seconds) for p in tree]
    if why:
        reading.missing.append(why)
    return reading


def _fs(reading: Reading, lines: list[str], data_root: str | None) -> None:
    if not data_root:
        reading.missing.append("data root: not known yet (the engine has not said)")
        return
    try:
        block, total, avail = (int(x) for x in lines[0].split())
    except (ValueError, IndexError):
        said = sanitize_line(lines[0], 120) if lines else "no answer"
        reading.missing.append(f"data root: statvfs failed: {said}")
        return
    reading.data_root_total_bytes, reading.data_root_free_bytes = total * block, avail * block


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(1 << 20)
    except OSError:
        return ""


def mounts_of(path: str) -> list[str]:
    """The mount point holding `path` (its longest prefix in /proc/self/mountinfo), then every
    other mount of the same filesystem: statvfs of a data root needs search permission on
    every folder above it, and a mount of the same filesystem elsewhere has the same figures
    (a non-root reader of /var/lib/docker, mode 0710; a data root bind-mounted in a private
    folder)."""
    entries = []
    for line in _read("/proc/self/mountinfo").splitlines():
        fields = line.split()
        if len(fields) > 4:
            entries.append((fields[4], fields[2]))
    best, device = "/", ""
    for mount, dev in entries:
        if (path + "/").startswith(mount.rstrip("/") + "/") and len(mount) >= len(best):
            best, device = mount, dev
    return [best, *(m for m, dev in entries if dev == device and m != best)]


def _cgroup_ooms(pid: str) -> list[int]:
    """OOM kills counted by the memory cgroup of process `pid` (v1 memory.oom_control or v2
    memory.events `oom_kill`), at most one."""
    for line in _read(f"/proc/{pid}/cgroup").splitlines():
        ident, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if controllers.split(",").count("memory"):
            name = f"/sys/fs/cgroup/memory{path}/memory.oom_control"
        elif ident == "0" and not controllers:
            name = f"/sys/fs/cgroup{path}/memory.events"
        else:
            continue
        for entry in _read(name).splitlines():
            key, _, value = entry.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return [int(value)]
    return []


def read_local(data_root: str | None) -> str:
    """Blocking: `SCRIPT`'s output for this machine, read in-process (no shell, no fork)."""
    out = [f"@host {os.environ.get('DOCKER_HOST', '')}", "@stat"]
    out += [line for line in _read("/proc/stat").splitlines() if line.startswith("cpu")]
    out += ["@loadavg", _read("/proc/loadavg").strip(), "@meminfo", _read("/proc/meminfo")]
    out.append("@vmstat")
    out += [
        line
        for line in _read("/proc/vmstat").splitlines()
        if line.startswith(("pswpin ", "oom_kill "))
    ]
    for kind in ("cpu", "io", "memory"):
        out += [f"@psi {kind}", _read(f"/proc/pressure/{kind}") or "absent"]
    out.append("@fs")
    if data_root:
        try:
            st = os.statvfs(data_root)
        except PermissionError:  # measured at a mount of its filesystem this reader can reach
            st = None
            for path in mounts_of(data_root):
                with contextlib.suppress(OSError):
                    st = os.statvfs(path)
                    break
            if st is None:
                out.append(f"{data_root}: no statvfs of it or of its filesystem's mounts")
        except OSError as exc:
            st = None
            out.append(f"{data_root}: {exc.strerror}")
        if st is not None:
            out.append(f"{st.f_frsize} {st.f_blocks} {st.f_bavail}")
    out.append("@engines")
    pids = [name for name in os.listdir("/proc") if name.isdigit()]
    stats: list[str] = []
    for pid in pids:
        stat = _read(f"/proc/{pid}/stat").strip()
        if not stat:
            continue
        stats.append(stat)
        comm = stat[stat.find("(") + 1 : stat.rfind(")")]
        if comm in ("dockerd", "containerd") or comm.startswith("containerd-shim"):
            cmd = _read(f"/proc/{pid}/cmdline").replace("\0", " ").strip()
            out.append(f"{pid} {cmd}")
        if comm == "dockerd":
            out += [f"@oom {pid} {n}" for n in _cgroup_ooms(pid)]
    out += ["@procs", *stats, "@end"]
    return "\n".join(out)
