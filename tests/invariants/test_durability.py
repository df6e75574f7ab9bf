"""Invariants 1, 2 and 8: acknowledged writes survive a kill, objects are never
changed, readers need no lock, and concurrent writers lose nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import filelock
import pytest
from helpers import HS, turn_record, write_turns

from histstore.ops.fsck import fsck
from histstore.ops.importing import import_paths
from histstore.store.store import Store

#: these tests kill writers at chosen points: every fsync must stay on
pytestmark = pytest.mark.durability

IMPORTER = r"""
import sys
from pathlib import Path
from histstore.store import Store
from histstore.ops.importing import import_paths
store = Store.open(Path(sys.argv[1]))
print("started", flush=True)
for f in sys.argv[2:]:
    import_paths(store, [Path(f)], command="hs import " + f)
    print(f, flush=True)  # acknowledged: import_paths returned
"""


def make_files(tmp_path: Path, n_files: int, per_file: int) -> dict[Path, list[str]]:
    files: dict[Path, list[str]] = {}
    for f in range(n_files):
        recs = []
        for i in range(per_file):
            n = f * per_file + i
            # half the turns go to one session every file shares, so imports merge
            sid = "shared" if i % 2 else f"s{f}"
            text = f"turn {n} " + "lorem ipsum dolor sit amet " * 40
            recs.append(turn_record(n, session_id=sid, asked=text, turn_id=f"t{n:06d}"))
        path = write_turns(tmp_path / f"in{f:02d}.jsonl", recs)
        files[path] = [r["turn_id"] for r in recs]
    return files


def stored_turn_ids(store: Store) -> set[str]:
    return {t.turn_id for s in store.sessions() for t in s.turns}


def errors(store: Store) -> list[str]:
    return [f"{f.check} {f.subject}: {f.message}" for f in fsck(store) if f.severity == "error"]


@pytest.mark.parametrize("kill_after", [0, 1, 3, 6, 10])
def test_killed_import_leaves_a_consistent_store_holding_what_was_acknowledged(
    tmp_path: Path, store_path: Path, kill_after: int
) -> None:
    """Killed (SIGKILL) at an observed point: as soon as the child has
    acknowledged ``kill_after`` imports, so the kill lands while the next one
    is running."""
    Store.init(store_path)[0].close()
    files = make_files(tmp_path, n_files=12, per_file=50)
    proc = subprocess.Popen(
        [sys.executable, "-c", IMPORTER, str(store_path), *map(str, files)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    seen = [proc.stdout.readline().strip() for _ in range(kill_after + 1)]
    assert seen[0] == "started" and all(seen), seen
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate()
    out = "\n".join([*seen[1:], out])
    acknowledged = [Path(line) for line in out.splitlines() if line]
    with Store.open(store_path) as store:
        assert errors(store) == []
        have = stored_turn_ids(store)
        for f in acknowledged:
            assert set(files[f]) <= have, f"turns of {f.name} lost after a kill"
        # the next import completes what the killed one had not
        import_paths(store, list(files))
        assert have | {t for ids in files.values() for t in ids} == stored_turn_ids(store)
        assert errors(store) == []


def test_objects_are_never_modified_or_deleted(tmp_path: Path, store: Store) -> None:
    def snapshot() -> dict[str, bytes]:
        root = store.root / "objects"
        return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    import_paths(store, [write_turns(tmp_path / "a.jsonl", [turn_record(i) for i in range(60)])])
    first = snapshot()
    import_paths(
        store,
        [write_turns(tmp_path / "b.jsonl", [turn_record(i, answered="new") for i in range(60)])],
    )
    import_paths(store, [tmp_path / "a.jsonl"])  # back to the first content: a new revision
    later = snapshot()
    for name, data in first.items():
        assert later.get(name) == data, f"object file {name} changed or vanished"


def test_readers_never_take_the_lock(
    hs: HS, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    monkeypatch.setenv("HS_LOCK_TIMEOUT", "0.2")
    other = filelock.FileLock(str(store_path / "lock"))
    with other:  # another writer holds the lock
        for args in (
            ["log"],
            ["show", "turn-0001"],
            ["status"],
            ["plumbing", "show-ref"],
            ["plumbing", "refs-log"],
            ["plumbing", "cat-object", hs.json_lines("log", "--json")[0]["object"]],
        ):
            r = hs(*args)
            assert r.exit_code == 0, (args, r.stderr)
        r = hs("record", input=json.dumps(turn_record(2)))
        assert r.exit_code == 6
        assert "locked by another writer" in r.stderr
    assert hs("record", input=json.dumps(turn_record(2))).exit_code == 0


def test_two_importers_at_once_lose_nothing(tmp_path: Path, store_path: Path) -> None:
    Store.init(store_path)[0].close()
    files = make_files(tmp_path, n_files=4, per_file=300)
    paths = list(files)
    env = {**os.environ, "HS_LOCK_TIMEOUT": "60"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", IMPORTER, str(store_path), *map(str, paths[i::2])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(2)
    ]
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with Store.open(store_path) as store:
        assert stored_turn_ids(store) == {t for ids in files.values() for t in ids}
        assert errors(store) == []
        assert len(store.operations()) == 4


def test_readers_see_whole_operations_while_an_import_runs(
    tmp_path: Path, store_path: Path
) -> None:
    """A reader in a loop during imports never fails and never sees a turn count go down."""
    Store.init(store_path)[0].close()
    files = make_files(tmp_path, n_files=6, per_file=100)
    proc = subprocess.Popen(
        [sys.executable, "-c", IMPORTER, str(store_path), *map(str, files)],
        stdout=subprocess.PIPE,
        text=True,
    )
    seen = 0
    while proc.poll() is None:
        with Store.open(store_path) as store:
            n = len(stored_turn_ids(store))
        assert n >= seen
        seen = n
    proc.communicate()
    assert proc.returncode == 0
