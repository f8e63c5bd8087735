"""Tests against real parts: dockerd, buildx, the registry, nginx, the CLI as a process."""
