"""Helpers that hold no tests: black-box drivers, real parts, stand-ins."""
