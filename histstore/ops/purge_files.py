"""What a purge rewrites or cleans besides objects and refs (histstore.ops.purge_run):
the refs log where it held the text (its chain kept), and the local files —
the source table, the summary, the memory folders' bases, what writers that
died left behind. Each step finds what is done done, so a completion after a
crash does it again safely.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import blake3

from histstore.history.sources import NAME as SOURCES_NAME
from histstore.history.summary import Summary
from histstore.memory.folders import BASE_DIR
from histstore.store import upgrading
from histstore.store.codec import canonical_json
from histstore.store.fsutil import PID_MAX, atomic_write, fsync_dir, pid_alive, unfinished_pack_pid
from histstore.store.oplog import Operation, read_log
from histstore.store.purged import PurgeEntry
from histstore.store.store import Store

# ------------------------------------------------------------------ the refs log


def rewrite_log(store: Store, edits: dict[str, dict[str, Any]], torn: dict[str, str]) -> int:
    """The refs log with the entries ``edits`` names rewritten (their command
    and ``extra``), each later entry's ``parent`` (and an undo's ``undoes``)
    following the ids that changed, written whole through the one write path;
    then ``refs.applied`` and the format-1 op map follow. Idempotent: once
    done, no entry has an id ``edits`` names. Returns entries rewritten."""
    lines = store.root.joinpath("refs.log").read_bytes().split(b"\n") if edits or torn else []
    if not lines:
        return 0
    ops = list(read_log(store.refs.log_path))
    if not any(ln.op is not None and ln.op.op in edits for ln in ops) and not any(
        line_key(raw) in torn for raw in lines
    ):
        return 0
    out: list[bytes] = []
    ids: dict[str, str] = {}
    changed = 0
    by_line = {ln.lineno: ln for ln in ops}
    for n, raw in enumerate(lines, 1):
        if not raw:
            out.append(raw)
            continue
        ln = by_line.get(n)
        if ln is None or ln.op is None:
            key = line_key(raw)
            out.append(torn[key].encode("utf-8") if key in torn else raw)
            continue
        op = ln.op
        new = Operation(op.op, op.time, op.command, op.changes, op.parent, dict(op.extra))
        if op.op in edits:
            e = edits[op.op]
            new.command = str(e.get("command", op.command))
            if "extra" in e:
                new.extra = dict(e["extra"] or {})
            changed += 1
        new.parent = ids.get(op.parent, op.parent) if op.parent else None
        for key in ("undoes",):
            if isinstance(new.extra.get(key), str):
                new.extra[key] = ids.get(new.extra[key], new.extra[key])
        new.op = new.derive_id()
        ids[op.op] = new.op
        out.append(canonical_json(new.as_json()))
    fmap = store.root / upgrading.MAP_DIR / upgrading.OPS
    if fmap.exists():
        rows = [ln.split(" ", 1) for ln in fmap.read_text("ascii").splitlines() if " " in ln]
        text = "".join(f"{o} {ids.get(n, n)}\n" for o, n in rows)
        atomic_write(fmap, text.encode("ascii"))
    atomic_write(store.refs.log_path, b"\n".join(out))
    applied = store.refs.applied()
    if applied and applied in ids:
        atomic_write(store.refs.applied_path, (ids[applied] + "\n").encode("ascii"))
    return changed


def line_key(raw: bytes) -> str:
    return str(blake3.blake3(raw).hexdigest())[:32]


# ------------------------------------------------------------------ local files


def clean_local(
    store: Store,
    drop: set[str],
    entries: list[PurgeEntry],
    files: set[str],
    states: dict[str, str] | None = None,
) -> None:
    """The local files forget what went: the source table's rows of purged
    turns (a replaced one follows its replacement) and of the files named
    (by hash), the resume states planned rewritten (``states``: a path's
    hash -> its new state), then VACUUM and a truncated WAL; the summary is removed (it is
    rebuilt from the refs); a memory folder's base on a purged revision
    follows its replacement or goes; leftovers of writers that died
    (temporary files, unfinished packs) and what ``hs upgrade`` replaced go."""
    replaced: dict[str, str] = {}
    for e in entries:
        replaced.update(e.replaced)
    purged = store.purged_ids()
    _clean_sources(store, purged, replaced, files, states or {})
    Summary(store).remove()
    base = store.root / BASE_DIR
    if base.is_dir():
        for f in sorted(base.iterdir()):
            with contextlib.suppress(OSError, UnicodeDecodeError):
                words = f.read_text("utf-8").split()
                if words and words[0] in replaced:
                    words[0] = replaced[words[0]]
                    atomic_write(f, (" ".join(words) + "\n").encode("utf-8"))
                elif words and words[0] in purged:
                    f.unlink()
    _remove_leftovers(store)
    if (store.root / upgrading.UPGRADE_DIR).exists() and not upgrading.committed(store.root):
        upgrading.remove_leftovers(store.root)


def _clean_sources(
    store: Store,
    purged: frozenset[str],
    replaced: dict[str, str],
    files: set[str],
    states: dict[str, str],
) -> None:
    path = store.root / "local" / SOURCES_NAME
    if not path.exists():
        return
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        conn.create_function("hs_key", 1, lambda p: path_key(str(p)), deterministic=True)
        conn.execute("BEGIN IMMEDIATE")
        for old, new in replaced.items():
            conn.execute("UPDATE OR REPLACE turns SET object = ? WHERE object = ?", (new, old))
        rows = [r[0] for r in conn.execute("SELECT DISTINCT object FROM turns")]
        for obj in rows:
            if obj in purged:
                conn.execute("DELETE FROM turns WHERE object = ?", (obj,))
        if states:
            for (p,) in conn.execute("SELECT path FROM files").fetchall():
                state = states.get(path_key(str(p)))
                if state is not None:
                    conn.execute("UPDATE files SET resume_state = ? WHERE path = ?", (state, p))
        if files:
            for table in ("turns", "files"):
                for (p,) in conn.execute(f"SELECT DISTINCT path FROM {table}").fetchall():
                    if path_key(str(p)) in files:
                        conn.execute(f"DELETE FROM {table} WHERE path = ?", (p,))
        conn.execute("COMMIT")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def read_only(path: Path) -> sqlite3.Connection:
    """A local SQLite file opened to read, and as an immutable file when no
    writer has it open: a preview leaves no -wal or -shm behind (as
    histstore.history.sources)."""
    wal = path.with_name(path.name + "-wal").exists()
    return sqlite3.connect(
        path.as_uri() + ("?mode=ro" if wal else "?mode=ro&immutable=1"), uri=True
    )


#: the resume-state fields that hold a session's title (Claude Code's
#: summary and ai-title, Codex's thread name): text of the session itself
_TITLE_KEYS = ("summary_title", "ai_title", "title")


def session_states(store: Store, turns: set[str]) -> dict[str, str]:
    """The resume states of the files that held ``turns`` (a session purge's)
    without the session's title. The rest stays as it is (where the last
    turn's lines begin, the directory): a later import reads that turn again
    as it read it before, and skips it as purged."""
    path = store.root / "local" / SOURCES_NAME
    if not path.exists() or not turns:
        return {}
    out: dict[str, str] = {}
    conn = read_only(path)
    try:
        held = {str(p) for p, obj in conn.execute("SELECT path, object FROM turns") if obj in turns}
        for p, state in conn.execute("SELECT path, resume_state FROM files"):
            if str(p) not in held:
                continue
            with contextlib.suppress(ValueError, TypeError):
                d = json.loads(str(state))
                if isinstance(d, dict) and any(d.get(k) is not None for k in _TITLE_KEYS):
                    d.update({k: None for k in _TITLE_KEYS if k in d})
                    out[path_key(str(p))] = json.dumps(d, sort_keys=True)
    except sqlite3.DatabaseError:
        return {}
    finally:
        conn.close()
    return out


def path_key(path: str) -> str:
    return str(blake3.blake3(path.encode("utf-8", "surrogateescape")).hexdigest())[:32]


def _remove_leftovers(store: Store) -> None:
    """Temporary files of writers that died (``.<name>.<pid>.tmp``, an
    unfinished ``tmp-<pid>-….pack``): they may hold what was purged."""
    for dirpath, _, names in os.walk(store.root):
        for name in names:
            pid = None
            if name.startswith(".") and name.endswith(".tmp"):
                # ``.<name>.<pid>.tmp`` (the owner record's: ``.<pid>.<thread>.tmp``)
                words = [w for w in name[:-4].split(".") if w.isdigit() and int(w) < PID_MAX]
                pid = int(words[-1]) if words else None
            else:
                pid = unfinished_pack_pid(name)
            if pid is not None and pid != os.getpid() and not pid_alive(pid):
                with contextlib.suppress(FileNotFoundError):
                    Path(dirpath, name).unlink()


# ------------------------------------------------------------------ capture records

#: the capture records of a store (histstore.capture.journal.DIR, docs/format.md
#: "Capture records"): read here as files, capture being a layer above ops
CAPTURE = Path("local") / "capture"


def capture_files(store: Store) -> dict[str, bytes]:
    """Every capture record file, path below ``local/capture/`` -> its bytes."""
    root = store.root / CAPTURE
    out: dict[str, bytes] = {}
    if root.is_dir():
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                with contextlib.suppress(OSError):
                    out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def capture_key(data: bytes) -> str:
    return str(blake3.blake3(data).hexdigest())[:32]


def session_edits(store: Store, session: str) -> dict[str, list[str | None]]:
    """The capture records of a session: its payloads waiting in the spool
    (the next capture or import reads its transcript again), its last-run
    records and its failures, removed."""
    edits: dict[str, list[str | None]] = {}
    for rel, data in capture_files(store).items():
        text = data.decode("utf-8", "replace")
        if rel.endswith(".jsonl") or ".jsonl." in rel:
            kept = [ln for ln in text.splitlines(keepends=True) if not _names(ln, session)]
            if len(kept) != len(text.splitlines()):
                edits[rel] = [capture_key(data), "".join(kept)]
        elif _names(text, session):
            edits[rel] = [capture_key(data), None]
    return edits


def _names(text: str, session: str) -> bool:
    """Whether a capture record (or the payload a spool entry holds) is of
    ``session``."""
    try:
        obj = json.loads(text)
    except ValueError:
        return False
    if not isinstance(obj, dict):
        return False
    if any(obj.get(k) == session for k in ("session", "session_id", "thread-id", "thread_id")):
        return True
    inner = obj.get("text")
    if isinstance(inner, str):
        with contextlib.suppress(ValueError):
            payload = json.loads(inner)
            return isinstance(payload, dict) and any(
                payload.get(k) == session for k in ("session_id", "thread-id", "thread_id")
            )
    return False


def clean_capture(store: Store, edits: dict[str, list[str | None]]) -> None:
    """Each capture record planned to change: rewritten (atomic write path) or
    removed, when it still holds the bytes it was planned from."""
    root = store.root / CAPTURE
    for rel, (old, new) in sorted(edits.items()):
        path = root / rel
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        if capture_key(data) != old:
            continue  # changed since (applied, rewritten): not what was planned
        if new is None:
            path.unlink()
            fsync_dir(path.parent)
        else:
            atomic_write(path, new.encode("utf-8"))
