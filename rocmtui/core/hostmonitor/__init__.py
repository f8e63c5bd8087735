"""One monitor per host: the probe loop as a long-running process that consoles attach to.

`rocmtui monitor` (rocmtui/core/hostmonitor/service.py) runs the core's `FleetMonitor` on the
fleet file's refresh, serves every snapshot to consoles over a unix socket in the state folder
and serves Prometheus metrics over HTTP. Consoles attach to it instead of probing on their own.

One protocol, two transports. The wire format is the one the console's private monitor child
(rocmtui/core/hostmonitor/ownchild.py) has always spoken: newline-delimited JSON, one
`snapshotviews.snapshot_json` per line from the monitor; any line from the console asks for a round
now; end of input means the console is gone. The shared monitor opens each socket session with
one `{"hello": {...}}` line (who it is, its protocol version, how old its latest snapshot is),
then sends its latest snapshot at once and every snapshot after. The private child keeps its
pipes: a pipe needs no path, no permissions and no lock, and its end is the console's end, so
the child can never outlive its console. What both share is `wire` (encoding, decoding) and the
console's relay, which reads either transport through the same `rounds()` shape.

Where (`place`): `<state folder>/monitor-<key>.sock` and `.lock`, `<key>` a hash of the fleet
file's path, so one state folder serves several fleet files and each gets one monitor. The
monitor holds an flock on the `.lock` file for its whole life and writes who it is into it; the
kernel drops the lock when the process dies however it dies, so a second monitor refuses while
the first lives (and names it), and a socket left by a killed monitor is known stale (nobody
holds the lock) and replaced. A console checks the lock first: no monitor costs it one
`flock` call, never a connection attempt to a dead socket.

`links` is all a console (and `rocmtui` with no command, before it imports Textual) uses: it
opens the console's source of rounds, the host's monitor through `client` or else the
console's own child (`ownchild`), and never imports the probes (docker SDK, httpx, psutil,
`core.probes.round`), so an attached console's start-up pays for none of them.
"""
