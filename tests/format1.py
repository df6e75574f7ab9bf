"""A format-1 store written by hand, as docs/format.md ("Version 1") describes
it, for the tests of ``hs upgrade``: Python's sorted-key JSON, session
revisions listing every turn with ``parent``/``merged``, turns holding their
``source``, markers with ``ts``/``parent``, one file per ref, ``HSPACK\\0\\1``
packs. (Written from the spec, not by the code that reads format 2.)"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import blake3
import zstandard

from histstore.store.refs import RefStore


def f1_json(obj: Any) -> bytes:
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


class F1Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True)
        (root / "objects" / "pack").mkdir(parents=True)
        (root / "refs").mkdir()
        (root / "config.toml").write_text(
            '[store]\nformat = 1\nid = "00000000-0000-4000-8000-000000000001"\n'
            'created = "2026-01-01T00:00:00.000Z"\n\n[redact]\npatterns = []\n'
        )
        self.parent: str | None = None
        self.refs: dict[str, str] = {}
        self._paths = RefStore(root)
        self.cctx = zstandard.ZstdCompressor(level=3)

    # objects

    def put(self, kind: str, payload: bytes) -> str:
        data = f"{kind} {len(payload)}\0".encode() + payload
        oid = str(blake3.blake3(data).hexdigest())
        path = self.root / "objects" / oid[:2] / oid[2:]
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(self.cctx.compress(data))
        return oid

    def put_json(self, kind: str, obj: Any) -> str:
        return self.put(kind, f1_json(obj))

    def pack(self, ids: list[str]) -> None:
        """Move these loose objects into one format-1 pack."""
        body = bytearray(b"HSPACK\x00\x01")
        records = []
        for oid in ids:
            path = self.root / "objects" / oid[:2] / oid[2:]
            frame = path.read_bytes()
            records.append((bytes.fromhex(oid), len(body), len(frame)))
            body += frame
        records.sort()
        fan = [0] * 256
        for raw, _, _ in records:
            fan[raw[0]] += 1
        for i in range(1, 256):
            fan[i] += fan[i - 1]
        idx = bytearray(b"HSIDX\x00\x00\x01") + struct.pack(">256I", *fan)
        for rec in records:
            idx += struct.pack(">32sQI", *rec)
        digest = blake3.blake3(bytes(idx)).digest()
        idx += digest
        name = digest.hex()[:40]
        (self.root / "objects" / "pack" / f"pack-{name}.pack").write_bytes(bytes(body))
        (self.root / "objects" / "pack" / f"pack-{name}.idx").write_bytes(bytes(idx))
        for oid in ids:
            (self.root / "objects" / oid[:2] / oid[2:]).unlink()

    # kinds, as format 1 wrote them

    def turn(self, n: int, session: str, project: str = "/home/dev/app", **over: Any) -> str:
        d = {
            "turn_id": f"t{n:03d}",
            "session_id": session,
            "project": project,
            "asked_at": f"2026-02-{1 + n % 27:02d}T09:{n % 60:02d}:00.000Z",
            "asked": f"question {n} about login_user",
            "answered": f"answer {n}",
            "agent": "claude-code",
            "source": {"format": "turns", "file": f"/data/{session}.jsonl", "line": n},
            "raw": {"blob": self.put("blob", f'{{"n": {n}}}\n'.encode()), "lines": 1, "size": 9},
            "steps": [],
        }
        d.update(over)
        return self.put_json("turn", d)

    def entry(self, n: int, oid: str) -> dict[str, Any]:
        return {
            "turn_id": f"t{n:03d}",
            "object": oid,
            "asked_at": f"2026-02-{1 + n % 27:02d}T09:{n % 60:02d}:00.000Z",
        }

    def session(
        self,
        sid: str,
        entries: list[dict[str, Any]],
        parent: str | None = None,
        merged: str | None = None,
        title: str | None = None,
    ) -> str:
        d: dict[str, Any] = {
            "session_id": sid,
            "project": "/home/dev/app",
            "agent": "claude-code",
            "title": title,
            "parent": parent,
            "turns": entries,
        }
        if merged is not None:
            d["merged"] = merged
        return self.put_json("session", d)

    def marker(
        self,
        target: str,
        kind: str,
        session: str,
        mode: str,
        state: str,
        parent: str | None,
        reason: str = "",
    ) -> str:
        return self.put_json(
            "marker",
            {
                "target": target,
                "target_kind": kind,
                "session": session,
                "mode": mode,
                "state": state,
                "reason": reason,
                "ts": "2026-02-20T10:00:00.000Z",
                "parent": parent,
            },
        )

    def memrev(self, scope: str, files: dict[str, bytes], parents: list[str], msg: str) -> str:
        tree = self.put_json(
            "memtree", {"files": {k: self.put("blob", v) for k, v in files.items()}}
        )
        return self.put_json(
            "memrev",
            {
                "scope": scope,
                "project": None,
                "tree": tree,
                "parents": parents,
                "time": "2026-02-21T10:00:00.000Z",
                "kind": "write",
                "message": msg,
            },
        )

    # refs and the log

    def op(self, changes: dict[str, str | None], command: str, **extra: Any) -> str:
        ch = [{"ref": k, "old": self.refs.get(k), "new": v} for k, v in changes.items()]
        body: dict[str, Any] = {
            "time": f"2026-02-22T10:00:{len(self._ops()):02d}.000Z",
            "command": command,
            "parent": self.parent,
            "changes": ch,
        }
        if extra:
            body["extra"] = extra
        op = str(blake3.blake3(f1_json(body)).hexdigest())[:16]
        with open(self.root / "refs.log", "ab") as f:
            f.write(f1_json({"op": op, **body}) + b"\n")
        for k, v in changes.items():
            path = self._paths._path(k)
            if v is None:
                path.unlink()
                self.refs.pop(k)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(v + "\n")
                self.refs[k] = v
        (self.root / "refs.applied").write_text(op + "\n")
        self.parent = op
        return op

    def _ops(self) -> list[bytes]:
        try:
            return (self.root / "refs.log").read_bytes().splitlines()
        except FileNotFoundError:
            return []


def tree_digest(root: Path, skip: tuple[str, ...] = (".upgrade", "lock", "lock.owner")) -> str:
    """A digest of every file under ``root`` but ``skip`` (names at its top)."""
    h = blake3.blake3()
    for dirpath, dirs, files in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        if rel.parts and rel.parts[0] in skip:
            continue
        dirs.sort()
        for f in sorted(files):
            if not rel.parts and (f in skip or f.startswith(".lock.owner")):
                continue
            h.update(str(rel / f).encode() + b"\0" + (Path(dirpath) / f).read_bytes())
    return str(h.hexdigest())
