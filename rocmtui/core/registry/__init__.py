"""The registry as the record: image references, manifests and their media types, and the
clients that ask an OCI distribution registry (Zot, the CNCF registry) what it holds.

- `refs`: image references (`host/repo:tag`) parsed and checked against the distribution spec.
- `media`: the four manifest kinds, the Accept header that names them, manifest parsing.
- `client`: the async client the matrix uses (one httpx client per host, bounded concurrency,
  every request under an overall deadline, tag listing through its pages, 401 as a state).
- `sync`: the same questions over the standard library, for the job supervisor (which runs
  without site-packages) when it checks what a push left in the registry.
"""
