"""The console's core: fleet file, bake file, probes, jobs and logs. Never imports Textual."""
