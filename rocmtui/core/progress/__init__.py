"""What a build log says: BuildKit steps (`buildkit`), ninja's counter and rates (`ninja`),
sccache's statistics (`sccache`), fed line by line into `tracker.ProgressTracker` (which
hands rawjson objects to `rawjson` and keeps its counters in `steps`), which publishes the
frozen `jobprogress`.
"""
