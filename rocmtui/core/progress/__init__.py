"""What a build log says: BuildKit steps (`buildkit`), ninja's counter and rates (`ninja`),
sccache's statistics (`sccache`), fed line by line into `tracker.ProgressTracker`, which
publishes the frozen `jobprogress`.
"""
