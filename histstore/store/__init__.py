"""The store: what is on disk and how it is written.

Owns the codec (canonical JSON, ids, zstd frames), the object kinds, the object
store (loose objects and packs), refs and the operation log (the refs log),
the writers' lock, config.toml, redaction before hashing, and the one write
path every file goes through. Imports nothing else of histstore but errors.
"""

from histstore.store.store import Store

__all__ = ["Store"]
