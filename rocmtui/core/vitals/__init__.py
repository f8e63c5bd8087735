"""Node vitals: what every node's host and engine are doing, from the first source that answers.

`nodevitals` holds the immutable `NodeVitals` snapshot that probes return and the stall verdicts
read; `gather.VitalsProber` reads them each round from `exporter` (a node_exporter, parsed by
`exposition`), `sshsource` (/proc over the kept ssh connection, parsed by `procfs`),
`engineapi` (the engine's /info and /system/df) or this machine's /proc, and `reading.derive`
takes their rates; `inround` runs them in the probe round; `summary` words them for `status`.
A package's `__init__` imports nothing, so importing one module loads only that module.
"""
