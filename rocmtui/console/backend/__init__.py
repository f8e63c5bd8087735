"""The console's backend: its one door to the core (`access`), the core's records as the console's
views (`adapters`, `views`, `jobextras`), the workers' loops (`refresh`, `matrix_refresh`,
`matrix_child`) and their threads (`userthreads`). No Textual widget lives here.
"""
