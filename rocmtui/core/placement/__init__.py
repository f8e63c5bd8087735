"""Where a build should go: for one target × arch, every node's likely cache condition, its
ETA from the cost history, what runs there now, its load and free disk, and the node that
would finish first, with one line why (`rocmtui bake --node auto`, the bake dialog's node).

- `facts`: `NodeFacts` (what is known of a node, the input), `NodeEstimate` and `Placement`
  (the answer), all immutable;
- `choose`: `place(...)`, the pure rule from facts to a placement (the condition, the node);
- `eta`: how long the build would take under that condition (pure: the ETA rules);
- `changes`: which variables a launch changes, and what rebuilds that changed them met;
- `gather`: the facts from the fleet file, a fleet snapshot and the job store (blocking);
- `fleetsource`: that fleet snapshot, a running monitor's or one probe round's (blocking).

A package's `__init__` imports nothing, so importing one module loads only that module.
"""
