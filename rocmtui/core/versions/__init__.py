"""The version check: each pin beside the newest upstream release (`upstream`) and beside what
the registry's images were built from (`report`)."""
