"""The Textual console: a thin App, screens that coordinate, widgets that render snapshots."""
