"""Widgets that render immutable snapshots and send intents up as messages."""
