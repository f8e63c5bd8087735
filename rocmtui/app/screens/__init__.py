"""Screens: the fleet screen, the log panes, help."""
