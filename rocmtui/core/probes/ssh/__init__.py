"""ssh:// engines over the system's OpenSSH: one kept master connection per node (`master`), dial-
stdio sessions over it (`dial`), and the requests adapter that lets the docker SDK use them
(`adapter`).
"""
