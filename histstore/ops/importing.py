"""Import and record as callers use them: turns stored, then what follows.

:func:`import_paths` and :func:`record_turn` store turns as one operation
(histstore.history.importing), then bring the derived data along before they
return: the recall index catches up, so a recorded turn is searchable at
once, and (after an import) every memory folder config.toml names is
snapshotted; and once loose objects pile up, they are packed
(``hs gc --auto``). The turns are committed whatever happens after: an index that
cannot follow is reported in ``index_error``, and the next write or
``hs recall`` catches it up.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from histstore.errors import HistError
from histstore.history.importers import Progress
from histstore.history.importing import ImportReport, store_paths, store_record
from histstore.history.summary import Summary, Unavailable
from histstore.memory.folders import snapshot_configured
from histstore.ops import gc
from histstore.recall.index import RecallIndex
from histstore.store.store import Store


def import_paths(
    store: Store,
    paths: Iterable[Path],
    *,
    fmt: str | None = None,
    command: str = "hs import",
    progress: Progress | None = None,
) -> ImportReport:
    """Import files and folders; per-line problems are reported, the rest imports."""
    report = store_paths(store, paths, fmt=fmt, command=command, progress=progress)
    refresh_index(store, report)
    # the memory directories config.toml names are recorded alongside the sessions
    report.memory_operations = [
        op.op for _scope, op in snapshot_configured(store, command=command + " (memory snapshot)")
    ]
    auto_gc(store, report)
    return report


def record_turn(store: Store, text: str, command: str = "hs record") -> tuple[str, ImportReport]:
    """Store one turn given as JSON text (``hs record``); (turn id, report)."""
    turn_id, report = store_record(store, text, command)
    refresh_index(store, report)
    auto_gc(store, report)
    return turn_id, report


def refresh_index(store: Store, report: ImportReport) -> None:
    """Bring the recall index up to date, so new turns are searchable as soon as
    the command returns. The turns are committed whatever happens here; a failure
    is reported, and the next write or `hs plumbing index-build` catches up."""
    if report.operation is None:
        return
    try:
        RecallIndex(store).catch_up()
    except (HistError, OSError, ValueError) as e:
        report.index_error = str(e)
    # the summary too, so the next hs log or status reads it as it is
    with contextlib.suppress(Unavailable, HistError, sqlite3.Error, OSError), Summary(store) as s:
        s.current()


def auto_gc(store: Store, report: ImportReport) -> None:
    """``hs gc --auto`` once loose objects piled up (a repack, no pruning): the
    turns are stored whatever happens here; a failure is reported."""
    if report.operation is None:
        return
    try:
        done = gc.auto(store)
    except (HistError, OSError) as e:
        report.gc_error = str(e)
        return
    if done is not None:
        report.auto_gc = done.as_json()
