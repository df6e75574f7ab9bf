"""`hs plumbing ...`: one JSON object per line, stable field names, no colour.

Interrogators (cat-object, show-ref, refs-log, fsck without --repair) never write.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from histstore.errors import BadInput, NotFound
from histstore.plumbing.common import PlumbingGroup, command_line, emit, new_app, open_store
from histstore.plumbing.report import check_count
from histstore.store.codec import KINDS, canonical_json, hash_object
from histstore.store.kinds import SessionRev

app = new_app(
    "Low-level commands for scripts: JSON lines in, JSON lines out.\n\n"
    "Example: hs plumbing show-ref sessions/",
    cls=PlumbingGroup,
)


def _read_input(path: str) -> bytes:
    if not path.strip():  # typer's '' would be the current directory
        raise BadInput("the path is empty", hint="name a file, or - for stdin")
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise NotFound(f"{path}: no such file") from None


@app.command("hash-object")
def hash_object_cmd(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(help="A file, or - for stdin.")] = "-",
    kind: Annotated[str, typer.Option("-t", "--type", help=f"One of {', '.join(KINDS)}.")] = "blob",
    write: Annotated[
        bool, typer.Option("-w", "--write", help="Also write it to the store.")
    ] = False,
) -> None:
    """Print the id of an object (JSON kinds are canonicalised first).

    Example: printf abc | hs plumbing hash-object
    """
    data = _read_input(path)
    if kind not in KINDS:
        raise BadInput(f"unknown object kind {kind!r}", hint=f"use one of {', '.join(KINDS)}")
    if kind != "blob":
        try:
            data = canonical_json(json.loads(data))
        except ValueError as e:
            raise BadInput(f"{path}: a {kind} object must be JSON ({e})") from None
    redacted = False
    if write:
        store = open_store(ctx)
        # what is written is redacted first, like everything else the store keeps
        clean = store.redactor.redact_bytes(data)
        redacted = clean != data
        data = canonical_json(json.loads(clean)) if kind != "blob" else clean
        object_id = store.objects.put(kind, data)
    else:
        object_id = hash_object(kind, data)
    emit({"id": object_id, "kind": kind, "size": len(data), "written": write, "redacted": redacted})


@app.command("cat-object")
def cat_object(
    ctx: typer.Context,
    object_id: Annotated[str, typer.Argument(metavar="ID", help="An object id or unique prefix.")],
    raw: Annotated[
        bool, typer.Option("--raw", help="Write the payload bytes as they are.")
    ] = False,
) -> None:
    """Print an object, verified: {"id", "kind", "size"} and "payload" (JSON kinds),
    "text" (a UTF-8 blob) or "base64" (any other blob).

    Example: hs plumbing cat-object 569f3e98
    """
    store = open_store(ctx)
    full = store.objects.resolve_prefix(object_id)
    kind, payload = store.objects.get(full)
    if raw:
        sys.stdout.buffer.write(payload)
        sys.stdout.buffer.flush()
        return
    out: dict[str, Any] = {"id": full, "kind": kind, "size": len(payload)}
    if kind == "blob":
        try:
            out["text"] = payload.decode("utf-8")
        except UnicodeDecodeError:
            out["base64"] = base64.b64encode(payload).decode("ascii")
    else:
        out["payload"] = json.loads(payload)
    emit(out)


@app.command("show-ref")
def show_ref(
    ctx: typer.Context,
    prefix: Annotated[str, typer.Argument(help="Only refs whose name starts with this.")] = "",
) -> None:
    """Every ref: {"ref", "id"} per line, sorted by name.

    Example: hs plumbing show-ref sessions/
    """
    store = open_store(ctx)
    for name, value in store.refs.list_refs(prefix).items():
        emit({"ref": name, "id": value})


def _opt_id(value: str | None) -> str | None:
    return None if value in (None, "", "-", "none") else value


@app.command("update-ref")
def update_ref(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The ref, e.g. sessions/<id>.")],
    new: Annotated[str, typer.Argument(help="The new object id, or - to delete the ref.")],
    old: Annotated[
        str | None,
        typer.Option("--old", help="Compare-and-swap: the value it must have now (- for absent)."),
    ] = None,
) -> None:
    """Move one ref, with compare-and-swap, as one operation in the refs log.

    Example: hs plumbing update-ref --old - heads/x 569f3e
    """
    from histstore.store.oplog import RefChange
    from histstore.store.purged import shows_purged
    from histstore.store.refs import KIND_OF_NAMESPACE, check_ref_name

    store = open_store(ctx)
    check_ref_name(name)
    new_id = _opt_id(new)
    if new_id is not None:
        new_id = store.objects.resolve_prefix(new_id)
        kind = store.objects.get(new_id)[0]
        want = KIND_OF_NAMESPACE.get(name.split("/")[0])
        if want and kind != want:
            raise BadInput(f"{name} must point at a {want} object; {new_id[:12]} is a {kind}")
        if kind == "session":
            try:
                rev = SessionRev.from_json(store.get_json(new_id))
            except ValueError as e:
                raise BadInput(f"{new_id[:12]}: {e}") from None
            if name.startswith("sessions/") and rev.session_id != name.split("/", 1)[1]:
                raise BadInput(f"{new_id[:12]} is a revision of session {rev.session_id!r}")
        if shows_purged(store, new_id):
            raise BadInput(
                f"{new_id[:12]} shows what a purge removed for good", hint="see hs purge --list"
            )
    old_id = _opt_id(old)
    if old_id is not None:
        old_id = store.objects.resolve_prefix(old_id)
    with store.lock():
        current = store.refs.read(name)
        expected = current if old is None else old_id
        op = store.apply(
            [RefChange(name, expected, new_id)],
            command_line(ctx, name, new),
            extra={"kind": "update-ref"},
        )
    emit({"ref": name, "old": current, "new": new_id, "op": op.op if op else None})


@app.command("refs-log")
def refs_log(
    ctx: typer.Context,
    n: Annotated[int | None, typer.Option("-n", help="Only the last N operations.")] = None,
) -> None:
    """The operation log, oldest first, one operation per line (torn lines skipped).

    Example: hs plumbing refs-log -n 3
    """
    check_count(n)
    store = open_store(ctx)
    ops = store.operations()
    if n is not None:
        ops = ops[-n:] if n > 0 else []
    for op in ops:
        emit(op.as_json())


@app.command("fsck")
def fsck_cmd(
    ctx: typer.Context,
    repair: Annotated[
        bool, typer.Option("--repair", help="Complete or clean what a crash left.")
    ] = False,
) -> None:
    """Re-hash every object, check every ref and refs-log entry; one JSON line per finding.
    Exit 7 when any finding is an error.

    Example: hs plumbing fsck
    """
    from histstore.ops.fsck import fsck  # reads every object: only this command needs it

    store = open_store(ctx)
    findings = fsck(store, repair=repair)
    for f in findings:
        emit(f.as_json())
    if any(f.severity == "error" for f in findings):
        raise typer.Exit(7)


@app.command("index-build")
def index_build(ctx: typer.Context) -> None:
    """Build a new generation of the recall index and swap it in.

    Example: hs plumbing index-build
    """
    from histstore.recall.index import RecallIndex

    emit(RecallIndex(open_store(ctx)).build().as_json())


@app.command("index-status")
def index_status(ctx: typer.Context) -> None:
    """The current generation, the operation it is built to, stale or not, rows.

    Example: hs plumbing index-status
    """
    from histstore.recall.index import RecallIndex

    emit(RecallIndex(open_store(ctx)).status().as_json())


@app.command("index-rollback")
def index_rollback(ctx: typer.Context) -> None:
    """Serve the previous generation again (it catches up on the next write).

    Example: hs plumbing index-rollback
    """
    from histstore.recall.index import RecallIndex

    emit(RecallIndex(open_store(ctx)).rollback().as_json())
