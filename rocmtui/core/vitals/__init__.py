"""Node vitals: what every node's host and engine are doing, from the first source that answers.

`model` holds the immutable `NodeVitals` snapshot that probes return and the stall verdicts
read. A package's `__init__` imports nothing, so importing one module loads only that module.
"""
