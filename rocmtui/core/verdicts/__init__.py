"""Stall verdicts: whether a silent build needs a person, from its node's evidence.

A running build silent past `stall_after_seconds` is judged, not assumed stalled: `verdict` holds
the inputs and the `Verdict` (state, kind, one human line), `judge` is the pure rule that makes
one, `window` keeps a node's recent vitals so "idle through the silence" and "unreachable since
the silence began" can be told, and `context` gathers a build's inputs (its log's tail, its
node's window, its usual duration in the cost book) for the job readers. A package's
`__init__` imports nothing, so importing one module loads only that module.
"""
