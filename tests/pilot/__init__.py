"""The console driven by Textual's Pilot, and SVG snapshots."""
