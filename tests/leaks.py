"""The leak test's corpus and scanner (imported as `leaks`; tests/ is on sys.path).

:func:`plant` writes Claude Code sessions that hold one example secret of
every rule kind (histstore.store.secret_examples) in every place a secret
turns up in real sessions: the prompt, the answer, a command a tool ran, the
command's output, a file a tool read (its path under a config folder and its
content), the thinking, the session's title; and a memory folder with a note
holding each. :func:`scan` looks for any of them in every byte under a store:
every file as it is on disk, every object decompressed, every frame of every
pack decompressed (whether its index names it or not), and SQLite's WAL files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import re2
import zstandard

from histstore.store import packs
from histstore.store.secret_examples import Example, examples
from histstore.store.store import Store

PROJECT = "/home/dev/src/vault"
#: how many kinds one turn holds (each place holds each of them on a line)
PER_TURN = 24
#: a forget reason is cut to 500 characters (after it is redacted)
REASON = 460


@dataclass
class Planted:
    projects: Path  # the Claude Code projects folder to import
    memory: Path  # a memory folder: notes holding every kind
    needles: list[str]  # every secret, as planted
    sessions: list[str]
    turns: list[str]  # SESSION~TURN of each turn planted
    notes: dict[str, str]  # memory target -> a forget reason holding its kinds
    examples: dict[str, Example]


def _rec(
    kind: str, uuid: str, parent: str | None, sid: str, n: int, **extra: Any
) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": PROJECT,
        "version": "2.0.42",
        "sessionId": sid,
        "type": kind,
        "uuid": uuid,
        "timestamp": f"2026-10-12T09:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
        **extra,
    }


def _assistant(uuid: str, parent: str, sid: str, n: int, content: list[Any]) -> dict[str, Any]:
    message = {
        "id": f"msg_{uuid[:8]}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": None,
        "usage": {"input_tokens": 1200, "output_tokens": 80},
    }
    return _rec("assistant", uuid, parent, sid, n, message=message)


def _session(sid: str, exs: list[Example], n: int) -> list[dict[str, Any]]:
    """One session, one turn holding every example in every place: the title,
    the prompt, the thinking, a command and its output, a file read (under a
    config folder whose path holds a secret too), the answer."""
    lines = "\n".join(ex.text for ex in exs)
    u = [f"{sid[:8]}-0000-4000-8000-{n + k:012d}" for k in range(8)]
    body = f"[default]\n{lines}\n"
    out = [
        {"type": "summary", "summary": " ".join(ex.text for ex in exs), "leafUuid": u[7]},
        _rec(
            "user", u[0], None, sid, n, message={"role": "user", "content": f"use these:\n{lines}"}
        ),
        _assistant(
            u[1], u[0], sid, n + 1, [{"type": "thinking", "thinking": lines, "signature": "s"}]
        ),
        _assistant(
            u[2],
            u[1],
            sid,
            n + 2,
            [{"type": "tool_use", "id": "tb", "name": "Bash", "input": {"command": lines}}],
        ),
        _rec(
            "user",
            u[3],
            u[2],
            sid,
            n + 3,
            message={
                "role": "user",
                "content": [
                    {"tool_use_id": "tb", "type": "tool_result", "content": "ran:\n" + lines}
                ],
            },
        ),
    ]
    parent = u[3]
    for i, ex in enumerate(exs):  # a config file per kind: its path and its content
        path = f"/home/dev/.config/vault/{ex.text}"
        a, r = f"{u[4]}{i:03d}", f"{u[5]}{i:03d}"
        out.append(
            _assistant(
                a,
                parent,
                sid,
                n + 4,
                [
                    {
                        "type": "tool_use",
                        "id": f"tr{i}",
                        "name": "Read",
                        "input": {"file_path": path},
                    }
                ],
            )
        )
        read = [{"tool_use_id": f"tr{i}", "type": "tool_result", "content": body}]
        file = {"filePath": path, "content": body, "numLines": len(exs) + 1, "startLine": 1}
        out.append(
            _rec(
                "user",
                r,
                a,
                sid,
                n + 5,
                message={"role": "user", "content": read},
                toolUseResult={"type": "text", "file": file},
            )
        )
        parent = r
    out.append(_assistant(u[7], parent, sid, n + 6, [{"type": "text", "text": f"done:\n{lines}"}]))
    return out


def _by_length(exs: list[Example], limit: int) -> list[list[Example]]:
    """The examples in groups whose texts, joined, fit ``limit`` characters."""
    groups: list[list[Example]] = [[]]
    for ex in exs:
        if groups[-1] and sum(len(e.text) + 1 for e in groups[-1]) + len(ex.text) > limit:
            groups.append([])
        groups[-1].append(ex)
    return groups


def plant(tmp: Path) -> Planted:
    """The corpus under ``tmp``: Claude Code sessions and a memory folder."""
    exs = examples()
    ordered = [exs[k] for k in sorted(exs)]
    projects = tmp / "claude-projects" / "-home-dev-src-vault"
    projects.mkdir(parents=True)
    sessions, turns = [], []
    for k in range(0, len(ordered), PER_TURN):
        sid = f"{k:08d}-0000-4000-8000-00000000{k:04d}"
        recs = _session(sid, ordered[k : k + PER_TURN], k * 10)
        (projects / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        sessions.append(sid)
        turns.append(f"{sid}~{recs[1]['uuid']}")
    memory = tmp / "memory"
    memory.mkdir()
    index, notes = [], {}
    for n, group in enumerate(_by_length(ordered, REASON)):
        slug = f"keys-{n:02d}"
        lines = "".join(f"- {ex.text}\n" for ex in group)
        note = f"---\nname: Keys {n}\ndescription: where keys {n} live\ntype: reference\n---\n\n{lines}"
        (memory / f"reference_{slug}.md").write_text(note)
        index.append(f"- [Keys {n}](reference_{slug}.md) — where keys {n} live\n")
        notes[f"memory@system@reference@{slug}"] = " ".join(ex.text for ex in group)
    (memory / "MEMORY.md").write_text("".join(index))
    needles = sorted({ex.secret for ex in exs.values()})
    return Planted(tmp / "claude-projects", memory, needles, sessions, turns, notes, exs)


class Finder:
    """Any of many literal needles in bytes, in one pass (RE2)."""

    def __init__(self, needles: Iterable[str]) -> None:
        self.needles = sorted(set(needles), key=len, reverse=True)
        alternation = b"|".join(re2.escape(n.encode("utf-8")) for n in self.needles)
        options = re2.Options()
        options.max_mem = 256 << 20
        self.rx = re2.compile(alternation, options)

    def find(self, data: bytes) -> set[str]:
        return {m.group(0).decode("utf-8", "replace") for m in self.rx.finditer(data)}


def scan(root: Path, finder: Finder) -> dict[str, set[str]]:
    """Where any needle is under the store at ``root``: each file as it lies
    (SQLite files and their WAL included), each object decompressed, each
    frame of each pack decompressed. ``{where: needles}``; empty: clean."""
    hits: dict[str, set[str]] = {}

    def note(where: str, data: bytes) -> None:
        found = finder.find(data)
        if found:
            hits.setdefault(where, set()).update(found)

    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        note(str(path.relative_to(root)), path.read_bytes())
    with Store.open(root) as store:
        for oid in store.objects.iter_ids():
            note(f"object {oid}", store.objects.get(oid)[1])
    plain = zstandard.ZstdDecompressor()
    for d in sorted((root / "objects").glob("??")):
        for f in sorted(d.iterdir()):
            if len(f.name) == 62:
                note(f"loose {d.name}{f.name}", _unzstd(plain, f.read_bytes()))
    for pack in sorted((root / "objects" / "pack").glob("*.pack")):
        fd = os.open(pack, os.O_RDONLY)
        dictionary = packs.read_header(fd, pack.name, close=True)
        dctx = packs.decompressor(dictionary) or plain
        data = pack.read_bytes()
        for _raw, off, length in packs.walk(pack).records:
            note(f"{pack.name}@{off}", _unzstd(dctx, data[off : off + length]))
    return hits


def _unzstd(dctx: zstandard.ZstdDecompressor, frame: bytes) -> bytes:
    return bytes(dctx.decompressobj().decompress(frame))
