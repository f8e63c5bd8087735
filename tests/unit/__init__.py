"""Core units: pure and fast (`make test-unit`)."""
