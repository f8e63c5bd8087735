"""Headless commands: thin shells over the core, for scripts, cron and people."""
