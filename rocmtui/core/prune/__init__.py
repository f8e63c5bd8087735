"""Room on the builders: a node's BuildKit cache, shown, asked, pruned.

`plan` is pure: the cache records, the filters (`--keep-storage`, `--until`) and what a prune
with them would remove; `engine` asks the node's engine (its `/system/df` and `/build/prune`,
over the same endpoints the probes use); `action` is the one door: refused read-only and while
a build runs on the node (unless asked), it shows the plan, asks, prunes, and records who pruned
what and when in the job store (`record`). A package's `__init__` imports nothing.
"""
