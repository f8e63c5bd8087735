"""Recorded fleet data for the console's Pilot and SVG snapshot tests."""
