"""Screens: the fleet screen, the log panes, the published matrix, help. None knows another:
what the operator asks for goes up as an intent (rocmtui.app.intents)."""
