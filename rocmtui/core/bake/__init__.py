"""The bake file: as written (`file`: variables, targets, groups; `scan`, `jsonform`, `merge`,
`targets`), where it is (`find`), and as buildx resolves it (`resolve`: `docker buildx bake
--print`).
"""
