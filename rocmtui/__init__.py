"""rocmtui: a terminal console for the rocm-bake BuildKit fleet."""

__version__ = "0.1.0"
