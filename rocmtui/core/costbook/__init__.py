"""The cost book: what every finished build cost, kept in the job store, and what it tells.

- `cost`: a build's cache condition from evidence, the statistics per condition, regressions
  and the estimate of the next build (pure);
- `schema`: the job store's `build_costs` and `build_steps` tables;
- `book`: `CostBook`, bringing the book up to date from finished jobs and reading its rows;
- `report`: `HistoryReport`, the book read as `rocmtui history` prints it;
- `views`: `rocmtui history --json` as Structs;
- `estimate`: `CostEstimates`, the estimates the bake dialog and a running build's row show;
- `usual`: `UsualTimes`, the usual time of a target x arch for the stall verdicts.

Outside builds and their steps stay in `rocmtui.core.history`. A package's `__init__` imports
nothing, so importing one module loads only that module.
"""
