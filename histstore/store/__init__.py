"""The store: what is on disk and how it is written.

Owns the codec (canonical JSON, ids, zstd frames), the object kinds, the object
store (loose objects and packs), refs and the operation log (the refs log),
the writers' lock, config.toml, redaction before hashing, and the one write
path every file goes through. Imports nothing else of histstore but errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from histstore.store.store import Store

__all__ = ["Store"]


def __getattr__(name: str) -> Any:
    # `Store` is loaded on first use: a module that needs only the write helpers
    # or the clock (a capture that finds the store locked) skips the codec,
    # the object kinds and the rest
    if name == "Store":
        from histstore.store.store import Store

        return Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
