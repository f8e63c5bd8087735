"""The fleet file (TOML): where it is (`find`), its settings (`fleetfile`: `FleetConfig`,
`load_config`), its tables (`tables`, `remote`), validated with one-line errors that name the
file, the line and the key (`validate`).
"""
