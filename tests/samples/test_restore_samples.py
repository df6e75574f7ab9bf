"""hs export --format claude-code|codex and hs restore on the real session
files in ../shared/samples: every one imported, exported again, equal to the
original line for line (outside redacted spans), and imported again to the
same turns.

The samples are not part of the project: this module skips when they are absent.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import HS

from histstore.history.importers import Problem, SessionMeta
from histstore.history.importers.claude_code import parse_file as parse_claude
from histstore.history.importing import store_paths
from histstore.store.store import Store

SAMPLES = (Path(__file__).resolve().parents[2] / ".." / "shared" / "samples").resolve()

if not SAMPLES.is_dir():
    pytest.skip(
        f"real agent samples not found at {SAMPLES} (only present in the dev workspace)",
        allow_module_level=True,
    )

pytestmark = pytest.mark.samples

CLAUDE = sorted((SAMPLES / "claude-code").rglob("*.jsonl"))
CODEX = sorted((SAMPLES / "codex").rglob("*.jsonl"))
REDACTED = re.compile(r"\[REDACTED:[A-Za-z0-9_.-]+\]")


def lines_of(path: Path) -> list[str]:
    return [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def same_outside_redactions(original: str, exported: str) -> bool:
    """``exported`` is ``original`` with some spans replaced by ``[REDACTED:kind]``."""
    if original == exported:
        return True
    parts = REDACTED.split(exported)
    if len(parts) == 1 or not original.startswith(parts[0]) or not original.endswith(parts[-1]):
        return False
    at = len(parts[0])
    for part in parts[1:-1]:
        found = original.find(part, at + 1)
        if found < 0:
            return False
        at = found + len(part)
    return len(original) - len(parts[-1]) > at


def identity(path: Path) -> tuple[str | None, str | None]:
    """(session id, sub-agent id or None) as the records of a file say."""
    session = agent = None
    side = None
    for text in lines_of(path):
        obj = json.loads(text)
        if obj.get("type") == "session_meta":
            return obj["payload"]["id"], None
        session = session or obj.get("sessionId")
        agent = agent or obj.get("agentId")
        if side is None and "isSidechain" in obj:
            side = obj["isSidechain"]
    sub = path.name.startswith("agent-") or side is True
    return session, (agent or path.stem.removeprefix("agent-")) if sub else None


def turns_in(path: Path) -> int:
    return sum(
        1
        for item in parse_claude(path, lambda s: s)
        if not isinstance(item, Problem | SessionMeta) and isinstance(item, dict)
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every sample imported into one store, every session exported with --dir."""
    root = tmp_path_factory.mktemp("restore-samples")
    store, _ = Store.init(root / "store")
    store_paths(store, [SAMPLES / "claude-code", SAMPLES / "codex"])
    sessions = {sid: store.session(sid).agent for sid in store.session_refs()}
    store.close()
    hs = HS()
    out: dict[str, Any] = {"root": root, "sessions": sessions, "files": {}}
    for sid, agent in sessions.items():
        d = root / "out" / sid
        r = hs(
            "-C",
            str(root / "store"),
            "export",
            "--format",
            agent,
            "--session",
            sid,
            "--dir",
            str(d),
        )
        assert r.exit_code == 0, r.stderr
        for f in d.rglob("*.jsonl"):
            out["files"][identity(f)] = f
    yield out


def _check(original: Path, exported: dict[str, Any]) -> None:
    key = identity(original)
    got = exported["files"].get(key)
    assert got is not None, f"{original.name}: no exported file for {key}"
    want, have = lines_of(original), lines_of(got)
    assert len(have) == len(want), f"{original.name}: {len(have)} lines, not {len(want)}"
    for n, (a, b) in enumerate(zip(want, have, strict=True), 1):
        assert same_outside_redactions(a, b), f"{original.name}:{n} differs outside redactions"


STORED_CLAUDE = [p for p in CLAUDE if turns_in(p)]


@pytest.mark.parametrize("path", STORED_CLAUDE, ids=lambda p: p.name)
def test_every_claude_code_sample_round_trips(path: Path, exported: dict[str, Any]) -> None:
    _check(path, exported)


@pytest.mark.parametrize("path", CODEX, ids=lambda p: p.parent.name)
def test_every_codex_sample_round_trips(path: Path, exported: dict[str, Any]) -> None:
    _check(path, exported)


def test_the_samples_with_no_turn_are_the_ones_nothing_is_stored_of() -> None:
    """A file holding no turn (empty, only a summary, only snapshots, a lone
    /model) gives no session to the store: there is nothing of it to restore."""
    empty = sorted(p.name for p in CLAUDE if p not in STORED_CLAUDE)
    assert len(empty) == 4
    for p in CLAUDE:
        if p not in STORED_CLAUDE:
            assert all('"assistant"' not in x for x in lines_of(p)) or not lines_of(p)


def test_the_exports_import_to_the_same_turns(exported: dict[str, Any]) -> None:
    root: Path = exported["root"]
    again, _ = Store.init(root / "again")
    store_paths(again, [root / "out"])
    first = Store.open(root / "store")
    try:
        for sid in first.session_refs():
            a = {t.turn_id: t.object for t in first.session(sid).turns}
            b = {t.turn_id: t.object for t in again.session(sid).turns}
            assert sorted(a) == sorted(b), sid  # the same turn ids
            assert a == b, sid  # and the very same turn objects
    finally:
        first.close()
        again.close()


def test_a_restored_sample_lands_where_each_agent_looks(
    exported: dict[str, Any], tmp_path: Path
) -> None:
    hs = HS()
    store = str(exported["root"] / "store")
    home = Path(os.environ["HOME"])
    for sid, agent in exported["sessions"].items():
        r = hs("-C", store, "restore", sid, "--json")
        assert r.exit_code == 0, r.stderr
        where = Path(json.loads(r.stdout)["files"][-1]["path"])
        if agent == "claude-code":
            assert where.parent.parent == home / ".claude" / "projects"
            assert where.name == f"{sid}.jsonl"
        else:
            assert where.parent.parent.parent.parent == home / ".codex" / "sessions"
            assert re.fullmatch(
                rf"rollout-\d{{4}}-\d\d-\d\dT\d\d-\d\d-\d\d-{sid}\.jsonl", where.name
            )
        assert (
            where.read_bytes()
            == next(f for k, f in exported["files"].items() if k == (sid, None)).read_bytes()
        )
