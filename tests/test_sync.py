"""hs remote / push / pull / sync: the commands, incremental transfer, merging,
undo of a pull, recall and export after a pull (docs/sync.md)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from helpers import HS, turn_record, write_turns
from synctools import (
    add_turns,
    memory_files,
    ops_count,
    snapshot,
    state,
    turn_ids,
    write_memory,
)

from histstore.errors import CorruptObject
from histstore.ops.forget import forget, resolve_target, unforget
from histstore.ops.fsck import fsck
from histstore.overlay.markers import Overlay
from histstore.recall.index import RecallIndex
from histstore.store.codec import canonical_json, hash_object
from histstore.store.kinds import SessionRev, TurnEntry
from histstore.store.store import Store
from histstore.sync.engine import sync, synced_refs
from histstore.sync.merge import merge_markers, merge_memory, merge_sessions
from histstore.sync.walk import Objects


@pytest.fixture
def two(tmp_path: Path) -> tuple[Store, Store]:
    a, _ = Store.init(tmp_path / "a")
    b, _ = Store.init(tmp_path / "b")
    yield a, b
    a.close()
    b.close()


def clean(store: Store) -> None:
    errors = [f for f in fsck(store) if f.severity == "error"]
    assert errors == [], errors


def cli(tmp_path: Path, *, remote_store: bool = False) -> tuple[HS, Path, Path]:
    """A local store with three turns and the remote `lap` at tmp/b."""
    hs = HS()
    a, b = tmp_path / "a", tmp_path / "b"
    assert hs("-C", str(a), "init").exit_code == 0
    recs = [turn_record(i, asked=f"question {i} about the ocelot cache") for i in range(3)]
    r = hs("-C", str(a), "import", str(write_turns(tmp_path / "in.jsonl", recs)))
    assert r.exit_code == 0, r.stderr
    if remote_store:
        assert hs("-C", str(b), "init").exit_code == 0
    assert hs("-C", str(a), "remote", "add", "lap", str(b)).exit_code == 0
    return hs, a, b


# --------------------------------------------------------------------------- hs remote


def test_remote_add_list_remove(tmp_path: Path) -> None:
    hs, a, b = cli(tmp_path)
    config = tomllib.loads((a / "config.toml").read_text())
    assert config["remotes"] == {"lap": {"path": str(b)}}
    r = hs("-C", str(a), "remote", "list")
    assert r.exit_code == 0 and r.stdout == f"lap\t{b}  (no store there yet)\n"
    out = hs.json_lines("-C", str(a), "remote", "list", "--json")
    assert out == [{"name": "lap", "path": str(b), "store": False, "tracking_refs": 0}]
    r = hs("-C", str(a), "push", "lap", "--init")
    assert r.exit_code == 0, r.stderr
    assert hs.json_lines("-C", str(a), "remote", "list", "--json")[0]["tracking_refs"] == 1
    r = hs("-C", str(a), "remote", "remove", "lap")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("removed remote lap (1 remote-tracking ref deleted, operation ")
    with Store.open(a) as s:
        assert s.refs.list_refs("remotes/") == {}
        assert "remotes" not in s.config
    assert (b / "config.toml").exists()  # the remote store is untouched
    r = hs("-C", str(a), "remote", "list")
    assert r.stdout.startswith("no remotes")


@pytest.mark.parametrize(
    "args,code,words",
    [
        (["remote", "add", "../up", "PATH"], 2, "remote name '../up' is not allowed"),
        (["remote", "add", "a b", "PATH"], 2, "is not allowed"),
        (["remote", "add", "lap", "PATH"], 2, "remote 'lap' already exists"),
        (["remote", "add", "file", "FILE"], 2, "is a file, not a store folder"),
        (["remote", "add", "self", "SELF"], 2, "is this store itself"),
        (["remote", "add", "in", "INSIDE"], 2, "is inside this store"),
        (["remote", "add", "up", "HOLDS"], 2, "holds this store"),
        (["remote", "remove", "nope"], 4, "no remote 'nope'"),
        (["push", "nope"], 4, "no remote 'nope'"),
        (["pull", "nope"], 4, "no remote 'nope'"),
        (["sync", "nope"], 4, "no remote 'nope'"),
        (["push", "lap"], 3, "no store at"),
        (["pull", "lap"], 3, "no store at"),
        (["sync", "lap"], 3, "no store at"),
        (["push", "../x"], 2, "is not allowed"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    tmp_path: Path, args: list[str], code: int, words: str
) -> None:
    hs, a, b = cli(tmp_path)
    f = tmp_path / "a-file"
    f.write_text("not a store")
    paths = {
        "PATH": str(tmp_path / "c"),
        "FILE": str(f),
        "SELF": str(a),
        "INSIDE": str(a / "objects" / "mirror"),
        "HOLDS": str(tmp_path),
    }
    args = [paths.get(x, x) for x in args]
    before = snapshot(a)
    r = hs("-C", str(a), *args)
    assert r.exit_code == code, (r.stdout, r.stderr)
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("hs: error: ") and words in r.stderr, r.stderr
    assert snapshot(a) == before
    assert not b.exists()  # no store was made at the remote's path


def test_push_without_a_store_says_how_to_make_one(tmp_path: Path) -> None:
    hs, a, b = cli(tmp_path)
    r = hs("-C", str(a), "push", "lap")
    assert r.exit_code == 3
    assert r.stderr == (
        f"hs: error: no store at {b} (remote lap); hint: `hs push lap --init` creates one there\n"
    )


def test_a_bad_remote_entry_blocks_neither_the_others_nor_its_removal(tmp_path: Path) -> None:
    hs, a, b = cli(tmp_path, remote_store=True)
    text = (a / "config.toml").read_text()
    (a / "config.toml").write_text(text + '\n[remotes.bad]\npth = "/typo"\n')
    r = hs("-C", str(a), "remote", "list")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == (
        "bad\t(bad entry in config.toml: has no path; "
        "set [remotes.bad] path, or `hs remote remove bad`)\n"
        f"lap\t{b}\n"
    )
    out = hs.json_lines("-C", str(a), "remote", "list", "--json")
    assert [(o["name"], o.get("error")) for o in out] == [("bad", "has no path"), ("lap", None)]
    assert hs("-C", str(a), "push", "lap").exit_code == 0  # the other remote works
    r = hs("-C", str(a), "push", "bad")
    assert r.exit_code == 2 and "remote 'bad' has no path" in r.stderr
    r = hs("-C", str(a), "remote", "remove", "bad")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "removed remote bad\n"
    assert tomllib.loads((a / "config.toml").read_text())["remotes"] == {"lap": {"path": str(b)}}


def test_a_non_empty_folder_without_a_store_is_never_offered_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import histstore.porcelain.sync_cli as sync_cli

    hs, a, b = cli(tmp_path)
    b.mkdir()
    (b / "notes.txt").write_text("someone's files")
    before = snapshot(a)
    monkeypatch.setattr(sync_cli, "_on_terminal", lambda: True)  # no question asked either
    for cmd in (["push"], ["push", "--init"], ["pull"], ["sync"], ["push", "--dry-run"]):
        r = hs("-C", str(a), *cmd, "lap")
        assert r.exit_code == 2, (cmd, r.stderr)
        assert r.stderr == (
            f"hs: error: remote lap: {b} is not empty and holds no store; hint: point the "
            "remote at an empty or new folder (`hs remote remove lap`, then "
            "`hs remote add lap PATH`)\n"
        ), cmd
    assert snapshot(a) == before and sorted(p.name for p in b.iterdir()) == ["notes.txt"]


def test_a_remote_inside_this_store_is_refused_when_used(tmp_path: Path) -> None:
    """A path written into config.toml by hand (hs remote add refuses it)."""
    hs, a, _ = cli(tmp_path)
    inside = a / "mirror"
    text = (a / "config.toml").read_text()
    (a / "config.toml").write_text(text + f'\n[remotes.in]\npath = "{inside}"\n')
    for cmd in ("push", "pull", "sync", "push --dry-run"):
        r = hs("-C", str(a), *cmd.split(), "in", "--init" if cmd == "push" else "--json")
        assert r.exit_code == 2, (cmd, r.stderr)
        assert f"remote in: {inside} is inside this store" in r.stderr
    assert not inside.exists()


@pytest.mark.parametrize("answer", ["y", "n"])
def test_on_a_terminal_push_asks_before_it_creates_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str
) -> None:
    import histstore.porcelain.sync_cli as sync_cli

    hs, a, b = cli(tmp_path)
    monkeypatch.setattr(sync_cli, "_on_terminal", lambda: True)
    r = hs("-C", str(a), "push", "lap", input=f"{answer}\n")
    assert f"no store at {b} (remote lap): create one there?" in r.stderr
    if answer == "y":
        assert r.exit_code == 0, r.stderr
        assert (
            f"created a store at {b}\npushed to lap" in r.stdout
        )  # (the runner echoes the answer)
        assert (b / "config.toml").exists()
    else:
        assert r.exit_code == 3 and "`hs push lap --init` creates one there" in r.stderr
        assert not b.exists()


def test_pull_and_sync_human_output(tmp_path: Path) -> None:
    hs, a, b = cli(tmp_path, remote_store=True)
    hs("-C", str(b), "import", str(write_turns(tmp_path / "b.jsonl", [turn_record(7)])))
    r = hs("-C", str(a), "pull", "lap")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"pulled from lap ({b}): sent 0 objects (0 B), received 2 objects (")
    assert lines[1].startswith("  local: 1 ref moved, 1 remote-tracking ref moved (operation ")
    assert lines[2] == "  merged: sessions/sess-a"
    assert len(lines) == 3 and r.stderr == ""
    r = hs("-C", str(a), "sync", "lap")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith(f"synced with lap ({b}): sent 5 objects (")
    assert "  remote: 1 ref moved (operation " in r.stdout


def test_remote_path_that_became_a_file(tmp_path: Path) -> None:
    hs, a, b = cli(tmp_path)
    b.write_text("a file now")
    before = snapshot(a)
    for cmd in ("push", "pull", "sync", "push --dry-run", "sync --dry-run"):
        args = [*cmd.split(), "lap"] + (["--init"] if cmd == "push" else [])
        r = hs("-C", str(a), *args)
        assert r.exit_code == 2, r.stderr
        assert "is a file, not a store folder" in r.stderr and len(r.stderr.splitlines()) == 1
    assert snapshot(a) == before and b.read_text() == "a file now"


def test_push_init_then_the_remote_holds_everything(tmp_path: Path) -> None:
    hs, a, b = cli(tmp_path)
    r = hs("-C", str(a), "push", "lap", "--init", "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["initialized"] is True and out["direction"] == "push"
    assert out["sent"]["objects"] == 4  # three turns and a session revision
    assert out["received"] == {"objects": 0, "bytes": 0}
    assert out["remote_operation"] and out["local_operation"]
    assert [c["ref"] for c in out["remote_changes"]] == ["sessions/sess-a"]
    with Store.open(a) as sa, Store.open(b) as sb:
        assert synced_refs(sa) == synced_refs(sb)
        assert sa.refs.list_refs("remotes/") == {
            "remotes/lap/sessions/sess-a": synced_refs(sa)["sessions/sess-a"]
        }
        clean(sa)
        clean(sb)
        op = sb.operations()[-1]
        assert op.command == "hs push lap" and op.extra["kind"] == "sync"


def test_a_first_push_counts_the_bytes_its_dry_run_said(tmp_path: Path) -> None:
    """Bytes are payloads, uncompressed (docs/sync.md): the first push, which
    copies packs whole, counted their compressed size instead."""
    hs, a, _b = cli(tmp_path)
    r = hs("-C", str(a), "gc", "--full")  # the objects in a pack, as a first push finds them
    assert r.exit_code == 0, r.stderr
    dry = json.loads(hs("-C", str(a), "push", "lap", "--init", "-n", "--json").stdout)
    real = json.loads(hs("-C", str(a), "push", "lap", "--init", "--json").stdout)
    with Store.open(a) as sa:
        payloads = sum(len(sa.objects.get(o)[1]) for o in sa.objects.iter_ids())
    assert dry["sent"] == real["sent"] == {"objects": 4, "bytes": payloads}


def test_a_first_push_dry_run_after_a_purge_says_what_the_push_sends(tmp_path: Path) -> None:
    """Its walk did not skip what a purge removed, as the push's does: it
    stopped at the first purged id (exit 4, "object … was purged")."""
    hs, a, _b = cli(tmp_path)
    more = [turn_record(7, asked="a passing thought about ZQX-private-9")]
    assert hs("-C", str(a), "import", str(write_turns(tmp_path / "m.jsonl", more))).exit_code == 0
    r = hs("-C", str(a), "purge", "--text", "ZQX-private-9", "--confirm", "ZQX-private-9")
    assert r.exit_code == 0, r.stderr
    r = hs("-C", str(a), "push", "lap", "--init", "-n", "--json")
    assert r.exit_code == 0, r.stderr
    dry = json.loads(r.stdout)
    real = json.loads(hs("-C", str(a), "push", "lap", "--init", "--json").stdout)
    assert [c["ref"] for c in dry["remote_changes"]] == [c["ref"] for c in real["remote_changes"]]
    assert dry["sent"]["objects"] >= 4


def test_undo_of_a_remote_removal_is_refused(tmp_path: Path) -> None:
    """It brought the tracking refs back without the remote's entry: refs
    describing no remote, which a later `remote add` of the name took over."""
    hs, a, _b = cli(tmp_path)
    assert hs("-C", str(a), "push", "lap", "--init").exit_code == 0
    r = hs("-C", str(a), "remote", "remove", "lap")
    assert r.exit_code == 0, r.stderr
    op = hs.json_lines("-C", str(a), "ops", "--json")[0]["op"]
    before = snapshot(a)
    r = hs("-C", str(a), "undo")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        f"hs: error: cannot undo {op}: it removed the remote 'lap'; hint: add it again with "
        "`hs remote add lap PATH`; the next sync brings its tracking refs back\n"
    )
    assert snapshot(a) == before


def test_push_human_output_and_up_to_date(tmp_path: Path) -> None:
    hs, a, b = cli(tmp_path, remote_store=True)
    r = hs("-C", str(a), "push", "lap")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"pushed to lap ({b}): sent 4 objects (")
    assert lines[0].endswith("received 0 objects (0 B)")
    assert lines[1].startswith("  remote: 1 ref moved (operation ")
    assert lines[2].startswith("  local: 1 remote-tracking ref moved (operation ")
    assert r.stderr == ""
    for cmd in ("push", "pull", "sync"):
        r = hs("-C", str(a), cmd, "lap")
        assert r.exit_code == 0
        assert r.stdout == f"lap ({b}) is up to date: nothing moved, no operation recorded\n"


def test_dry_run_writes_nothing_and_tells_what_would_move(tmp_path: Path) -> None:
    hs, a, b = cli(tmp_path, remote_store=True)
    hs("-C", str(b), "import", str(write_turns(tmp_path / "b.jsonl", [turn_record(9)])))
    before_a, before_b = snapshot(a), snapshot(b)
    r = hs("-C", str(a), "sync", "lap", "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    dry = json.loads(r.stdout)
    assert snapshot(a) == before_a and snapshot(b) == before_b
    assert dry["dry_run"] is True and dry["merged"] == ["sessions/sess-a"]
    r = hs("-C", str(a), "sync", "lap", "--dry-run")
    assert r.stdout.startswith(f"dry run: sync lap ({b}); nothing written\n")
    assert "would merge: sessions/sess-a" in r.stdout
    real = json.loads(hs("-C", str(a), "sync", "lap", "--json").stdout)
    for key in ("sent", "received", "merged", "merge_objects"):
        assert dry[key] == real[key], key
    assert [c["ref"] for c in dry["local_changes"]] == [c["ref"] for c in real["local_changes"]]
    # a dry run of a first push to a path with no store
    c = tmp_path / "c"
    hs("-C", str(a), "remote", "add", "fresh", str(c))
    r = hs("-C", str(a), "push", "fresh", "--dry-run", "--json")
    out = json.loads(r.stdout)
    assert out["initialized"] is True and out["sent"]["objects"] == 7 and not c.exists()
    # a sync never creates a store: its dry run fails as it does
    for args in (["sync", "fresh", "--dry-run"], ["sync", "fresh"]):
        r = hs("-C", str(a), *args)
        assert (r.exit_code, r.stdout) == (3, ""), args
        assert r.stderr.startswith(f"hs: error: no store at {c} (remote fresh)"), r.stderr
    assert not c.exists()
    c.mkdir()
    (c / "notes.txt").write_text("something else")
    r = hs("-C", str(a), "push", "fresh", "--dry-run")
    assert r.exit_code == 2 and "is not empty and holds no store" in r.stderr


def test_every_sync_command_has_help(tmp_path: Path) -> None:
    hs = HS()
    for cmd in (["remote"], ["push"], ["pull"], ["sync"], ["remote", "add"]):
        r = hs(*cmd, "--help")
        assert r.exit_code == 0 and "Usage" in r.stdout


# --------------------------------------------------------------------------- incremental


def test_a_sync_moves_only_what_is_new(two: tuple[Store, Store], tmp_path: Path) -> None:
    a, b = two
    add_turns(a, tmp_path, list(range(40)), session_id="s1")
    add_turns(a, tmp_path, list(range(40, 60)), session_id="s2")
    first = sync(a, b, "b")
    assert first.sent.objects == 62  # 60 turns, 2 session revisions
    ops_a, ops_b = ops_count(a.root), ops_count(b.root)
    # nothing new: nothing moves, no operation anywhere
    again = sync(a, b, "b")
    assert again.nothing and again.sent.objects == again.received.objects == 0
    assert (ops_count(a.root), ops_count(b.root)) == (ops_a, ops_b)
    # N new turns into an existing session: N turn objects and one revision
    n = 7
    add_turns(a, tmp_path, list(range(100, 100 + n)), session_id="s1")
    rep = sync(a, b, "b")
    assert rep.sent.objects == n + 1 and rep.received.objects == 0
    assert [c.ref for c in rep.remote_changes] == ["sessions/s1"]
    # blobs come along: a turn with a long tool output and raw records
    big = turn_record(
        200,
        session_id="s3",
        raw=['{"x": 1}'],
        steps=[{"type": "tool", "id": "t", "name": "Read", "input": {}, "output": "y" * 2000}],
    )
    add = write_turns(tmp_path / "big.jsonl", [big])
    from histstore.ops.importing import import_paths

    import_paths(a, [add])
    rep = sync(a, b, "b")
    assert rep.sent.objects == 4  # the turn, its raw blob, its output blob, a revision
    assert state(a) == state(b)
    clean(a)
    clean(b)


def test_pull_moves_only_what_is_new(two: tuple[Store, Store], tmp_path: Path) -> None:
    a, b = two
    add_turns(b, tmp_path, list(range(10)), session_id="s1")
    rep = sync(a, b, "b", push=False)
    assert rep.received.objects == 11 and rep.sent.objects == 0 and rep.remote_operation is None
    add_turns(b, tmp_path, [50, 51], session_id="s1")
    rep = sync(a, b, "b", push=False)
    assert rep.received.objects == 3
    assert sync(a, b, "b", push=False).nothing


# --------------------------------------------------------------------------- merging


def test_sessions_recorded_on_both_sides_end_with_the_union(
    two: tuple[Store, Store], tmp_path: Path
) -> None:
    a, b = two
    add_turns(a, tmp_path, [1, 2], session_id="s")
    sync(a, b, "b")
    add_turns(a, tmp_path, [3, 4], session_id="s")
    add_turns(b, tmp_path, [5, 6], session_id="s")
    rep = sync(a, b, "b")
    assert rep.merged == ["sessions/s"]
    assert a.session_ref("s") == b.session_ref("s")
    merged = a.session("s")
    assert [t.turn_id for t in merged.turns] == [f"turn-000{i}" for i in range(1, 7)]
    assert len(merged.parents) == 2 and merged.parents == sorted(merged.parents)
    assert set(merged.parents) == {c.old for c in rep.local_changes} | {
        c.old for c in rep.remote_changes
    }
    # the next revision of either side builds on the merge, and syncs as a fast-forward
    add_turns(b, tmp_path, [7], session_id="s")
    rep = sync(a, b, "b")
    assert rep.merged == [] and rep.received.objects == 2
    clean(a)
    clean(b)


def _rev(sid: str, turns: list[TurnEntry], parent: str | None = None) -> dict[str, Any]:
    """A full revision of ``turns`` (a merge reads each side whole either way)."""
    parents = [parent] if parent else []
    return SessionRev(sid, "/p", "hs", None, turns, parents=parents, count=len(turns)).as_json()


def test_session_merge_is_one_object_whichever_side_makes_it() -> None:
    from histstore.store.objectstore import MemoryObjectStore

    store = MemoryObjectStore()
    objs = Objects(store)

    def put(d: dict[str, Any]) -> str:
        return store.put("session", canonical_json(d))

    t1 = TurnEntry("t1", "1" * 64, "2026-01-01T00:00:00.000Z")
    base = put(_rev("s", [t1]))
    # the same turn revised differently on both sides: the later asked_at wins
    x = TurnEntry("t2", "2" * 64, "2026-01-02T00:00:00.000Z")
    y = TurnEntry("t2", "3" * 64, "2026-01-03T00:00:00.000Z")
    t1b = TurnEntry("t1", "4" * 64, "2026-01-01T00:00:00.000Z")  # revised on one side only
    a = put(_rev("s", [t1, x], parent=base))
    b = put(_rev("s", [t1b, y], parent=base))
    m1, m2 = merge_sessions(objs, a, b), merge_sessions(objs, b, a)
    assert m1 == m2
    rev = SessionRev.from_json(json.loads(objs.made[m1][1]))
    assert rev.parents == sorted([a, b]) and rev.full
    assert [t.object for t in rev.turns] == ["4" * 64, "3" * 64]
    # a fast-forward makes nothing
    assert merge_sessions(objs, base, a) == a == merge_sessions(objs, a, base)


def test_marker_merge_later_wins_and_an_unforget_holds_everywhere(
    two: tuple[Store, Store], tmp_path: Path
) -> None:
    a, b = two
    add_turns(a, tmp_path, [1, 2], session_id="s")
    sync(a, b, "b")
    t = resolve_target(b, "turn-0001")
    forget(b, t, mode="exclude", confirm=t.id)
    sync(a, b, "b")
    assert Overlay.read(a).excludes("s", "turn-0001") is not None
    unforget(a, resolve_target(a, "turn-0001"), confirm="turn-0001")
    rep = sync(a, b, "b")
    assert [c.ref for c in rep.remote_changes] == ["overlay/s~turn-0001"]
    assert Overlay.read(b).hides("s", "turn-0001") is None
    assert state(a) == state(b)
    # two markers for one target made apart: the later one says what holds,
    # through a merge marker that is one object whichever side makes it
    forget(b, resolve_target(b, "turn-0002"), confirm="turn-0002")
    forget(a, resolve_target(a, "turn-0002"), mode="exclude", confirm="turn-0002")
    ma, mb = a.refs.read("overlay/s~turn-0002"), b.refs.read("overlay/s~turn-0002")
    assert ma and mb
    sync(a, b, "b")
    objs = Objects(a.objects, b.objects)
    m = merge_markers(objs, ma, mb)
    assert m == merge_markers(objs, mb, ma) == a.refs.read("overlay/s~turn-0002")
    assert b.refs.read("overlay/s~turn-0002") == m
    body = a.get_json(m, "marker")
    assert (body["mode"], body["state"]) == ("exclude", "active")
    assert body["parents"] == sorted([ma, mb])
    for s in (a, b):  # both heads stay objects, reachable through the merge marker
        assert s.objects.has(ma) and s.objects.has(mb)
    clean(a)
    clean(b)


def test_an_exclusion_is_never_weakened_by_a_change_that_had_not_seen_it(
    two: tuple[Store, Store], tmp_path: Path
) -> None:
    a, b = two
    add_turns(a, tmp_path, [1, 2, 3], session_id="s")
    sync(a, b, "b")
    # a later tombstone made where the exclusion was not known
    forget(a, resolve_target(a, "turn-0001"), mode="exclude", confirm="turn-0001")
    forget(b, resolve_target(b, "turn-0001"), confirm="turn-0001")
    # an unforget made where a later exclusion was not known
    forget(a, resolve_target(a, "turn-0002"), confirm="turn-0002")
    sync(a, b, "b")
    forget(a, resolve_target(a, "turn-0002"), mode="exclude", confirm="turn-0002")
    unforget(b, resolve_target(b, "turn-0002"), confirm="turn-0002")
    rep = sync(a, b, "b")
    assert "overlay/s~turn-0002" in rep.merged
    for s in (a, b):
        for tid in ("turn-0001", "turn-0002"):
            assert Overlay.read(s).excludes("s", tid) is not None, (s.root, tid)
        from histstore.overlay.export import exported_turns

        assert {t["turn_id"] for _, t in exported_turns(s)} == {"turn-0003"}
    # an unforget made after the merge has seen it: it holds everywhere
    unforget(b, resolve_target(b, "turn-0001"), confirm="turn-0001")
    rep = sync(a, b, "b")
    assert rep.merged == []
    for s in (a, b):
        assert Overlay.read(s).hides("s", "turn-0001") is None
    assert state(a) == state(b)
    clean(a)
    clean(b)


def test_memory_changed_on_both_sides_merges_per_file(
    two: tuple[Store, Store], tmp_path: Path, hs: HS
) -> None:
    a, b = two
    write_memory(a, "system", {"a.md": b"a0", "b.md": b"b0", "c.md": b"c0", "d.md": b"d0"})
    sync(a, b, "b")
    write_memory(
        a,
        "system",
        {"a.md": b"a-left", "b.md": b"b0", "c.md": b"c-left", "d.md": b"d0"},
        time="2026-03-02T10:00:00.000Z",
    )
    write_memory(
        b,
        "system",
        # b.md changed here only, c.md changed on both sides, d.md deleted here
        {"a.md": b"a0", "b.md": b"b-right", "c.md": b"c-right", "e.md": b"new"},
        time="2026-03-03T10:00:00.000Z",
    )
    ra, rb = a.refs.read("memory/system"), b.refs.read("memory/system")
    assert ra and rb
    rep = sync(a, b, "b")
    assert rep.merged == ["memory/system"]
    assert [(c.scope, c.file) for c in rep.memory_conflicts] == [("system", "c.md")]
    assert a.refs.read("memory/system") == b.refs.read("memory/system")
    files = memory_files(a, "system")
    # one side's change taken; the conflict takes the later revision's version;
    # d.md was deleted on one side only
    assert files == {"a.md": b"a-left", "b.md": b"b-right", "c.md": b"c-right", "e.md": b"new"}
    rev = a.get_json(a.refs.read("memory/system") or "", "memrev")
    assert rev["kind"] == "merge" and rev["message"] == "merge"
    assert rev["parents"] == sorted([ra, rb]) and rev["time"] == "2026-03-03T10:00:00.000Z"
    blobs = sorted(hash_object("blob", v) for v in (b"c-left", b"c-right"))
    assert rev["conflicts"] == [{"file": "c.md", "versions": blobs}]
    assert {m["side"] for m in rep.memory_changes()} == {"local", "remote"}
    # both versions stay reachable as revisions
    assert memory_files(a, "system") and a.objects.has(ra) and b.objects.has(ra)


def test_memory_deletion_loses_to_a_modification() -> None:
    from histstore.store.objectstore import MemoryObjectStore

    store = MemoryObjectStore()
    objs = Objects(store)

    def rev(files: dict[str, bytes], parents: list[str], time: str) -> str:
        blobs = {n: store.put("blob", v) for n, v in files.items()}
        tree = store.put("memtree", canonical_json({"files": blobs}))
        body = {
            "scope": "system",
            "project": None,
            "tree": tree,
            "parents": parents,
            "time": time,
            "kind": "write",
            "message": "m",
        }
        return store.put("memrev", canonical_json(body))

    base = rev({"x.md": b"0"}, [], "2026-01-01T00:00:00.000Z")
    deleted = rev({}, [base], "2026-01-03T00:00:00.000Z")  # later, but a deletion
    changed = rev({"x.md": b"1"}, [base], "2026-01-02T00:00:00.000Z")
    m1, c1 = merge_memory(objs, deleted, changed)
    m2, c2 = merge_memory(objs, changed, deleted)
    assert m1 == m2 and c1 == c2
    assert [(c.file, c.versions) for c in c1] == [("x.md", [hash_object("blob", b"1")])]
    tree = json.loads(objs.made[json.loads(objs.made[m1][1])["tree"]][1])
    assert tree == {"files": {"x.md": hash_object("blob", b"1")}}


def _note(slug: str, description: str) -> bytes:
    from histstore.memory.rules import render_note

    return render_note("user", slug.title(), description, f"About {slug}.").encode()


def _entry(slug: str, description: str) -> str:
    return f"- [{slug.title()}](user_{slug}.md) — {description}\n"


def test_notes_added_on_two_machines_keep_both_index_lines(
    two: tuple[Store, Store], tmp_path: Path
) -> None:
    """MEMORY.md merges by entry: two machines adding different notes from a
    common base do not conflict, and the merged index names both (so the
    merged directory passes the memory rules)."""
    from histstore.memory.check import check_dir

    a, b = two
    base = {"MEMORY.md": ("# Memory\n" + _entry("tabs", "tabs")).encode()}
    base["user_tabs.md"] = _note("tabs", "tabs")
    write_memory(a, "system", base)
    sync(a, b, "b")
    left = dict(base, **{"user_go.md": _note("go", "go")})
    left["MEMORY.md"] = base["MEMORY.md"] + _entry("go", "go").encode()
    right = dict(base, **{"user_rust.md": _note("rust", "rust")})
    right["MEMORY.md"] = base["MEMORY.md"] + _entry("rust", "rust").encode()
    write_memory(a, "system", left, time="2026-03-02T10:00:00.000Z")
    write_memory(b, "system", right, time="2026-03-03T10:00:00.000Z")  # the later one
    rep = sync(a, b, "b")
    assert rep.merged == ["memory/system"] and rep.memory_conflicts == []
    files = memory_files(a, "system")
    assert files == memory_files(b, "system")
    # the winner's lines in its order, then the entry only the other side has
    assert files["MEMORY.md"].decode() == (
        "# Memory\n" + _entry("tabs", "tabs") + _entry("rust", "rust") + _entry("go", "go")
    )
    rev = a.get_json(a.refs.read("memory/system") or "", "memrev")
    assert "conflicts" not in rev
    folder = tmp_path / "merged"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    assert check_dir(folder) == []


def test_an_index_entry_changed_differently_on_both_sides_is_the_only_conflict() -> None:
    from histstore.store.objectstore import MemoryObjectStore

    store = MemoryObjectStore()

    def rev(index: str, parents: list[str], time: str) -> str:
        tree = store.put("memtree", canonical_json({"files": {"MEMORY.md": blob(index)}}))
        body = {
            "scope": "system",
            "project": None,
            "tree": tree,
            "parents": parents,
            "time": time,
            "kind": "write",
            "message": "m",
        }
        return store.put("memrev", canonical_json(body))

    def blob(text: str) -> str:
        return store.put("blob", text.encode())

    def merged_index(m: str) -> str:
        _, payload = objs.get(m)
        tree = json.loads(objs.get(json.loads(payload)["tree"])[1])
        return objs.get(tree["files"]["MEMORY.md"])[1].decode()

    o = "# Memory\n" + _entry("a", "a") + _entry("b", "b") + _entry("c", "c")
    base = rev(o, [], "2026-01-01T00:00:00.000Z")
    # left: a changed, b removed, a heading added; right (later): a changed
    # otherwise, c changed, d added, a comment added
    left = "# Memory\n## Mine\n" + _entry("a", "left") + _entry("c", "c") + _entry("e", "e")
    right = "# Memory\n<!-- x -->\n" + _entry("a", "right") + _entry("b", "b")
    right += _entry("c", "right") + _entry("d", "d")
    rl = rev(left, [base], "2026-01-02T00:00:00.000Z")
    rr = rev(right, [base], "2026-01-03T00:00:00.000Z")
    objs = Objects(store)
    m1, c1 = merge_memory(objs, rl, rr)
    m2, c2 = merge_memory(objs, rr, rl)
    assert m1 == m2 and c1 == c2  # symmetric
    assert [(c.file, c.versions) for c in c1] == [("MEMORY.md", sorted([blob(left), blob(right)]))]
    assert merged_index(m1) == (
        "# Memory\n<!-- x -->\n"
        + _entry("a", "right")  # both changed: the later revision's line
        + _entry("c", "right")  # b removed on one side only
        + _entry("d", "d")
        + _entry("e", "e")
    )


def test_a_memory_conflict_is_reported_by_the_command(tmp_path: Path) -> None:
    hs, a, b = cli(tmp_path, remote_store=True)
    with Store.open(a) as sa, Store.open(b) as sb:
        write_memory(sa, "system", {"n.md": b"left"})
        write_memory(sb, "system", {"n.md": b"right"}, time="2026-03-02T00:00:00.000Z")
    r = hs("-C", str(a), "sync", "lap")
    assert r.exit_code == 0, r.stderr
    assert (
        "memory conflict: system n.md: both versions kept; settle with hs memory restore\n"
        in r.stdout
    )
    out = hs.json_lines("-C", str(a), "sync", "lap", "--json")[0]
    assert out["memory_conflicts"] == []  # settled for sync: both hold the merge


def test_a_fast_forward_onto_a_merge_with_conflicts_says_so(tmp_path: Path) -> None:
    """Desk and laptop merge a conflict through the hub; a third machine that
    later pulls the merge (a fast-forward: it makes no merge itself) is told
    too, from the conflicts the merge revision recorded."""
    hs, a, hub = cli(tmp_path, remote_store=True)
    c = tmp_path / "c"
    assert hs("-C", str(c), "init").exit_code == 0
    assert hs("-C", str(c), "remote", "add", "hub", str(hub)).exit_code == 0
    with Store.open(a) as sa, Store.open(hub) as sh:
        write_memory(sa, "system", {"n.md": b"left"})
        write_memory(sh, "system", {"n.md": b"right"}, time="2026-03-02T00:00:00.000Z")
    assert "memory conflict: system n.md" in hs("-C", str(a), "sync", "lap").stdout
    r = hs("-C", str(c), "pull", "hub")
    assert r.exit_code == 0, r.stderr
    assert (
        "memory conflict: system n.md: both versions kept by a merge made on another "
        "store; settle with hs memory restore\n" in r.stdout
    )
    with Store.open(c) as sc:
        rev = sc.get_json(sc.refs.read("memory/system") or "", "memrev")
    assert rev["kind"] == "merge"
    c2 = tmp_path / "c2"
    hs("-C", str(c2), "init")
    hs("-C", str(c2), "remote", "add", "hub", str(hub))
    out = hs.json_lines("-C", str(c2), "pull", "hub", "--json")[0]
    assert out["merged"] == []
    assert out["memory_conflicts"] == [
        {
            "scope": "system",
            "file": "n.md",
            "versions": rev["conflicts"][0]["versions"],
            "merged_here": False,
        }
    ]
    # nothing new: nothing said again
    assert "memory conflict" not in hs("-C", str(c2), "pull", "hub").stdout


# --------------------------------------------------------------------------- undo, recall, export


def test_undo_of_a_pull_takes_its_ref_changes_back(tmp_path: Path) -> None:
    hs, a, b = cli(tmp_path, remote_store=True)
    recs = [turn_record(i, session_id="s-b", asked=f"platypus question {i}") for i in range(3)]
    hs("-C", str(b), "import", str(write_turns(tmp_path / "b.jsonl", recs)))
    with Store.open(a) as sa:
        before = sa.refs.list_refs()
    r = hs("-C", str(a), "pull", "lap")
    assert r.exit_code == 0, r.stderr
    found = hs.json_lines("-C", str(a), "recall", "--everywhere", "--json", "platypus")[0]
    assert len(found["hits"]) == 3
    r = hs("-C", str(a), "undo")
    assert r.exit_code == 0, r.stderr
    with Store.open(a) as sa:
        assert sa.refs.list_refs() == before
        assert sa.operations()[-1].extra["kind"] == "undo"
        clean(sa)
    found = hs.json_lines("-C", str(a), "recall", "--everywhere", "--json", "platypus")[0]
    assert found["hits"] == []
    # the next pull brings it back
    assert hs("-C", str(a), "pull", "lap").exit_code == 0
    found = hs.json_lines("-C", str(a), "recall", "--everywhere", "--json", "platypus")[0]
    assert len(found["hits"]) == 3


def test_recall_after_a_pull_finds_new_turns_and_hides_newly_forgotten(
    two: tuple[Store, Store], tmp_path: Path
) -> None:
    a, b = two
    add_turns(a, tmp_path, [1, 2, 3], session_id="s")
    RecallIndex(a).build()
    sync(a, b, "b")
    add_turns(b, tmp_path, [4], session_id="s", asked="a narwhal question")
    t = resolve_target(b, "turn-0002")
    forget(b, t, confirm=t.id)
    before = RecallIndex(a).status()
    rep = sync(a, b, "b", push=False)
    assert rep.index == "catch-up"
    index = RecallIndex(a)
    after = index.status()
    # one commit in the serving generation, not a new one
    assert after.generation == before.generation and after.applied_op != before.applied_op
    assert index.holds(turn_id="turn-0002") == 0  # gone from the index itself
    assert [h.turn_id for h in index.search("narwhal").hits] == ["turn-0004"]
    hits = {h.turn_id for h in index.search("login_user", k=10).hits}
    assert hits == {"turn-0001", "turn-0003"}
    # no marker moved: a catch-up
    add_turns(b, tmp_path, [5], session_id="s")
    assert sync(a, b, "b", push=False).index == "catch-up"
    assert RecallIndex(a).holds(turn_id="turn-0005") == 1


def test_an_exclusion_arriving_by_pull_never_shows(tmp_path: Path) -> None:
    hs, a, b = cli(tmp_path, remote_store=True)
    recs = [turn_record(i, session_id="s-b", asked=f"wombat secret {i}") for i in range(10, 13)]
    hs("-C", str(b), "import", str(write_turns(tmp_path / "b.jsonl", recs)))
    r = hs("-C", str(b), "forget", "turn-0011", "--confirm", "turn-0011", "--exclude")
    assert r.exit_code == 0, r.stderr
    r = hs("-C", str(a), "pull", "lap", "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    # the marker lands in the same operation as the turns it hides
    refs = {c["ref"] for c in out["local_changes"]}
    assert {"sessions/s-b", "overlay/s-b~turn-0011"} <= refs
    with Store.open(a) as sa:
        op = sa.operations()[-1]
        assert {"sessions/s-b", "overlay/s-b~turn-0011"} <= {c.ref for c in op.changes}
        assert (sa.root / "overlay" / "exclusions.jsonl").read_text().count("turn-0011") == 1
        clean(sa)
    found = hs.json_lines("-C", str(a), "recall", "--everywhere", "--json", "-k", "10", "wombat")
    assert sorted(h["turn_id"] for h in found[0]["hits"]) == ["turn-0010", "turn-0012"]
    exported = hs("-C", str(a), "export").stdout
    assert "turn-0011" not in exported and "wombat secret 11" not in exported
    assert "wombat secret 12" in exported


def test_remote_store_must_not_be_this_store(two: tuple[Store, Store]) -> None:
    a, _ = two
    from histstore.errors import BadInput

    with pytest.raises(BadInput):
        sync(a, Store.open(a.root), "self")


def test_turn_ids_after_sync_both_ways(two: tuple[Store, Store], tmp_path: Path) -> None:
    a, b = two
    add_turns(a, tmp_path, [1], session_id="x")
    add_turns(b, tmp_path, [2], session_id="y")
    sync(a, b, "b")
    assert turn_ids(a) == turn_ids(b) == {"turn-0001", "turn-0002"}
    assert state(a) == state(b)


def test_a_pulled_memory_scope_brings_a_clean_directory_along(tmp_path: Path) -> None:
    """hs pull moves memory refs; a scope's configured directory follows only
    when it holds exactly the old revision (histstore.memory.follow)."""
    hs, a, b = cli(tmp_path, remote_store=True)
    da, db = tmp_path / "mem-a", tmp_path / "mem-b"
    da.mkdir()
    db.mkdir()
    assert hs("-C", str(a), "memory", "dir", "--set", str(da)).exit_code == 0
    assert hs("-C", str(b), "memory", "dir", "--set", str(db)).exit_code == 0
    assert hs("-C", str(b), "remote", "add", "desk", str(a)).exit_code == 0
    (da / "MEMORY.md").write_text("- [Tabs](user_tabs.md) — tabs\n")
    (da / "user_tabs.md").write_text("first\n")
    assert hs("-C", str(a), "memory", "snapshot").exit_code == 0
    r = hs("-C", str(b), "pull", "desk")
    assert r.exit_code == 0, r.stderr
    assert f"memory: {db}: 2 files updated" in r.stdout
    assert (db / "user_tabs.md").read_text() == "first\n"
    # the next revision arrives: the clean directory follows again
    (da / "user_tabs.md").write_text("second\n")
    hs("-C", str(a), "memory", "snapshot")
    out = hs.json_lines("-C", str(b), "pull", "desk", "--json")[0]
    assert out["memory_dirs"] == [f"{db}: 1 file updated"]
    assert (db / "user_tabs.md").read_text() == "second\n"
    # an edit not recorded on this machine is never overwritten
    (db / "user_tabs.md").write_text("my own edit\n")
    (da / "user_tabs.md").write_text("third\n")
    hs("-C", str(a), "memory", "snapshot")
    r = hs("-C", str(b), "pull", "desk")
    assert r.exit_code == 0 and "has edits not recorded: left as it is" in r.stdout
    assert (db / "user_tabs.md").read_text() == "my own edit\n"


def test_damage_in_the_remote_is_refused_at_the_border(tmp_path: Path) -> None:
    hs, a, b = cli(tmp_path, remote_store=True)
    hs(
        "-C",
        str(b),
        "import",
        str(write_turns(tmp_path / "b.jsonl", [turn_record(5, session_id="y")])),
    )
    with Store.open(b) as sb:
        rev = sb.session_ref("y")
    # a ref file naming another session's revision (what a half-copied or
    # hand-edited folder can hold)
    (b / "refs" / "sessions" / "x").write_text(f"{rev}\n")
    with Store.open(a) as sa:
        refs_before, ops_before = sa.refs.list_refs(), ops_count(a)
        assert not sa.objects.has(rev)
    remote_before = snapshot(b)
    r = hs("-C", str(a), "pull", "lap")
    assert r.exit_code == 7, r.stderr
    assert r.stderr.startswith(
        f"hs: error: the remote store's ref sessions/x points at {rev[:12]}: "
        "a revision of another session; no ref was moved"
    )
    # exactly what docs/sync.md says: no ref, no log entry on either side; the
    # objects the bulk copy brought before the check stay, named by no ref
    with Store.open(a) as sa:
        assert sa.refs.list_refs() == refs_before and ops_count(a) == ops_before
        assert sa.objects.has(rev) and rev not in sa.refs.list_refs().values()
        clean(sa)
    assert snapshot(b) == remote_before
    # and they are not sent again: a second refused pull writes nothing at all
    local_after = snapshot(a)
    assert hs("-C", str(a), "pull", "lap").exit_code == 7
    assert snapshot(a) == local_after and snapshot(b) == remote_before


def test_the_progress_bar_shows_only_for_long_transfers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from histstore.porcelain.sync_cli import BAR_AFTER, _Bar

    short = _Bar("syncing", enabled=True)
    short(1, BAR_AFTER - 1)
    assert short.bar is None
    off = _Bar("syncing", enabled=False)  # not a terminal, or --json
    off(1, 1000)
    assert off.bar is None
    bar = _Bar("syncing", enabled=True)
    for done in range(1, 101):
        bar(done, 100)
    assert bar.bar is not None and bar.done == 100
    bar.close()
    assert bar.bar is None
    assert capsys.readouterr().out == ""  # the bar never writes to stdout


def test_a_fast_forward_reads_a_revision_or_two_however_long_the_history() -> None:
    from histstore.store.objectstore import MemoryObjectStore

    store = MemoryObjectStore()
    revs: list[str] = []
    parent = None
    for i in range(2000):  # a session recorded a turn at a time
        t = TurnEntry(f"t{i}", f"{i:064x}", "2026-01-01T00:00:00.000Z")
        parent = store.put("session", canonical_json(_rev("s", [t], parent=parent)))
        revs.append(parent)
    reads: list[str] = []
    real_get = store.get

    def get(oid: str) -> tuple[str, bytes]:
        reads.append(oid)
        return real_get(oid)

    store.get = get  # type: ignore[method-assign]
    objs = Objects(store)
    assert merge_sessions(objs, revs[-2], revs[-1]) == revs[-1]
    assert merge_sessions(objs, revs[-1], revs[-3]) == revs[-1]
    assert len(reads) <= 8, len(reads)


@pytest.mark.parametrize("hold", [0, 64_000])
def test_a_walk_keeps_at_most_its_budget_of_payloads(
    hold: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first sync of a session recorded a turn at a time (a chain of
    revisions, each naming every turn so far) must not hold the whole chain's
    payloads: a counting source logs every read and every emit, and the bytes
    read but not yet emitted never exceed the walk's budget (an object with
    children past the budget is read again when it is emitted)."""
    import histstore.sync.walk as sync_mod
    from histstore.store.objectstore import MemoryObjectStore

    store = MemoryObjectStore()
    turns: list[TurnEntry] = []
    parent = None
    for i in range(300):
        blob = store.put("blob", f"turn {i} ".encode() * 100)
        turns.append(TurnEntry(f"t{i}", blob, "2026-01-01T00:00:00.000Z"))
        parent = store.put("session", canonical_json(_rev("s", turns, parent=parent)))
    assert parent is not None
    total = sum(len(p) for k, p in store.objects.values() if k == "session")
    assert total > 4 * hold + 1_000_000  # the chain is far larger than the budget

    log: list[tuple[str, str, int]] = []  # ("get" | "emit", id, bytes)

    class Counting:
        def get(self, oid: str) -> tuple[str, bytes]:
            kind, payload = store.get(oid)
            log.append(("get", oid, len(payload)))
            return kind, payload

    def emit(oid: str, kind: str, payload: bytes) -> None:
        log.append(("emit", oid, len(payload)))

    monkeypatch.setattr(sync_mod, "HOLD_BYTES", hold, raising=False)
    sync_mod.walk_missing(Counting(), MemoryObjectStore(), [parent], emit)
    emitted = [oid for what, oid, _ in log if what == "emit"]
    assert sorted(emitted) == sorted(store.objects)
    # a payload is kept from the last time it was read until it is emitted
    # (a read followed by another read of the same id was not kept)
    last_get = {oid: i for i, (what, oid, _) in enumerate(log) if what == "get"}
    held = most = 0
    for i, (what, oid, size) in enumerate(log):
        if what == "get" and last_get[oid] == i:
            held += size
        elif what == "emit":
            held -= size
        most = max(most, held)
    # the frames the budget lets keep their payload, plus the one being read
    assert most <= hold + max(len(p) for _, p in store.objects.values()), most


# --------------------------------------------------------------------------- redaction


def _edit_config(root: Path, **redact: Any) -> None:
    """Set keys of a store's [redact] table (None removes one), as a person
    or another release would."""
    import tomli_w

    config = tomllib.loads((root / "config.toml").read_text())
    section = config.setdefault("redact", {})
    for key, value in redact.items():
        if value is None:
            section.pop(key, None)
        else:
            section[key] = value
    (root / "config.toml").write_text(tomli_w.dumps(config))


def _redact_table(root: Path) -> dict[str, Any]:
    return dict(tomllib.loads((root / "config.toml").read_text())["redact"])


def test_stores_whose_patterns_differ_refuse_to_sync(tmp_path: Path) -> None:
    """Fault: `[redact] patterns` are per store and never synced, so a machine
    without a pattern synced an unredacted copy to one that has it. A sync
    between stores whose patterns differ is refused before anything moves."""
    hs, a, b = cli(tmp_path, remote_store=True)
    _edit_config(a, patterns=["ocelot-[0-9]+", "cache"])
    _edit_config(b, patterns=["cache", "tok_[a-z]+"])
    before = (snapshot(a), snapshot(b))
    for args in (["sync", "lap"], ["push", "lap"], ["pull", "lap"], ["sync", "lap", "--dry-run"]):
        r = hs("-C", str(a), *args)
        assert r.exit_code == 5, (args, r.stdout, r.stderr)
        assert r.stdout == ""
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("hs: error: redaction-mismatch:")
        assert "only here: 'ocelot-[0-9]+'; only in lap: 'tok_[a-z]+'" in r.stderr
        assert "hint: give both config.toml files the same [redact] patterns" in r.stderr
        assert (snapshot(a), snapshot(b)) == before, args
    # the same patterns, in any order: the sync goes ahead
    _edit_config(b, patterns=["tok_[a-z]+", "ocelot-[0-9]+", "cache"])
    _edit_config(a, patterns=["cache", "ocelot-[0-9]+", "tok_[a-z]+"])
    r = hs("-C", str(a), "sync", "lap")
    assert r.exit_code == 0, r.stderr
    with Store.open(a) as sa, Store.open(b) as sb:
        assert synced_refs(sa) == synced_refs(sb)


def test_a_store_made_by_push_init_takes_this_stores_patterns(tmp_path: Path) -> None:
    hs, a, b = cli(tmp_path)
    _edit_config(a, patterns=["ocelot-[0-9]+"])
    r = hs("-C", str(a), "push", "lap", "--init")
    assert r.exit_code == 0, r.stderr
    assert _redact_table(b)["patterns"] == ["ocelot-[0-9]+"]
    assert hs("-C", str(a), "sync", "lap").exit_code == 0


def test_a_store_records_the_rule_set_its_writers_redact_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """config.toml names the rule set (it decides the ids of what is stored):
    `hs init` records this hs's; the first write of an hs with other rules
    (another release) records its own and keeps the list of every rule set
    the objects may carry, every other key untouched."""
    from histstore.store import redact

    hs, a, _b = cli(tmp_path)
    current = redact.ruleset_id()
    table = _redact_table(a)
    assert table["ruleset"] == current and table["rulesets"] == [current]
    assert tomllib.loads((a / "config.toml").read_text())["remotes"]["lap"]
    monkeypatch.setattr(redact, "ruleset_id", lambda: "9+test:" + "0" * 64)
    r = hs("-C", str(a), "record", input=json.dumps(turn_record(7)))
    assert r.exit_code == 0, r.stderr
    table = _redact_table(a)
    assert table["ruleset"] == "9+test:" + "0" * 64
    assert table["rulesets"] == [current, "9+test:" + "0" * 64]
    assert table["patterns"] == []
    assert tomllib.loads((a / "config.toml").read_text())["remotes"]["lap"]
    # a reader records nothing
    before = snapshot(a)
    monkeypatch.setattr(redact, "ruleset_id", lambda: "10+other:" + "1" * 64)
    assert hs("-C", str(a), "log", "--oneline").exit_code == 0
    assert snapshot(a) == before


def test_a_store_from_before_the_rule_set_was_recorded(tmp_path: Path) -> None:
    """A store whose config names no rule set was written by the 16 built-in
    patterns; its first write records this hs's after that one."""
    from histstore.store import redact
    from histstore.store.config import LEGACY_RULESET

    hs, a, _b = cli(tmp_path)
    _edit_config(a, ruleset=None, rulesets=None)
    assert hs("-C", str(a), "record", input=json.dumps(turn_record(8))).exit_code == 0
    table = _redact_table(a)
    assert table["rulesets"] == [LEGACY_RULESET, redact.ruleset_id()]


def test_a_sync_brings_both_stores_to_the_union_of_their_rule_sets(tmp_path: Path) -> None:
    """Rule sets come with a release, not with a setting a person can align
    before a sync: stores written by different releases sync, and each
    records every rule set whose redaction the objects it received carry
    (what `hs redact --apply` must re-redact)."""
    from histstore.store import redact

    hs, a, b = cli(tmp_path, remote_store=True)
    r = hs("-C", str(b), "import", str(write_turns(tmp_path / "b.jsonl", [turn_record(40)])))
    assert r.exit_code == 0
    old = "1+gitleaks-v8.30.0-27:" + "4a8780a8b5bf" * 5 + "abcd"
    _edit_config(b, ruleset=old, rulesets=[old])  # b was written by an older release
    current = redact.ruleset_id()
    first = "0+histstore-16"
    _edit_config(a, rulesets=[first, current])  # a holds objects of the first one too
    r = hs("-C", str(a), "sync", "lap")
    assert r.exit_code == 0, r.stderr
    assert _redact_table(a)["rulesets"] == [first, current, old]
    table = _redact_table(b)
    assert table["ruleset"] == current  # this hs wrote to it (the sync's operation)
    assert table["rulesets"] == [old, first, current]
    # nothing new: nothing recorded
    before = (snapshot(a), snapshot(b))
    assert hs("-C", str(a), "sync", "lap").exit_code == 0
    assert (snapshot(a), snapshot(b)) == before


def test_a_bad_rule_set_entry_is_bad_input(tmp_path: Path) -> None:
    hs, a, _b = cli(tmp_path)
    _edit_config(a, rulesets="not a list")
    r = hs("-C", str(a), "log")
    assert r.exit_code == 2 and "[redact] ruleset must be a rule-set id" in r.stderr


def test_a_first_push_copies_packs_whole_and_verifies_them(tmp_path: Path) -> None:
    """push --init into an empty store: the pack files arrive byte for byte,
    each object re-hashed once on the way; a damaged object stops it before
    the pack's index (so the pack is never visible) and no ref moves."""
    from histstore.store.objectstore import DiskObjectStore

    a, _ = Store.init(tmp_path / "a")
    add_turns(a, tmp_path, list(range(60)), session_id="s")
    a.objects.put("blob", b"a loose one")
    b, _ = Store.init(tmp_path / "b")
    rep = sync(a, b, "b", pull=False)
    assert rep.sent.objects == a.objects.count()
    src = {p.name: p.read_bytes() for p in (tmp_path / "a" / "objects" / "pack").glob("pack-*")}
    dst = {p.name: p.read_bytes() for p in (tmp_path / "b" / "objects" / "pack").glob("pack-*")}
    assert src == dst and src
    assert b.session_refs() == a.session_refs()
    assert [f for f in fsck(b) if f.severity == "error"] == []
    # a flipped byte in the local pack: the copy refuses it
    objs = a.objects
    assert isinstance(objs, DiskObjectStore)
    (pack,) = objs.packs()
    data = bytearray(pack.pack_path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    pack.pack_path.write_bytes(bytes(data))
    c, _ = Store.init(tmp_path / "c")
    with pytest.raises(CorruptObject):
        sync(Store.open(tmp_path / "a"), c, "c", pull=False)
    assert not list((tmp_path / "c" / "objects" / "pack").glob("*.idx"))
    assert c.session_refs() == {}


def test_a_push_leaves_the_index_caught_up_by_its_meta_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A push (with --init or not) and a sync that only pushes record an
    operation here (the remote-tracking refs): the index follows it before
    the command returns — its applied_op moved, no Tantivy writer made — so
    `hs fsck` finds it current (format.md: a writer that committed an
    operation catches the index up)."""
    import histstore.recall.replay as replay

    hs, a, _b = cli(tmp_path)
    writers: list[int] = []

    class Counted(replay.Writer):
        def __init__(self, *args: Any, **kw: Any) -> None:
            writers.append(1)
            super().__init__(*args, **kw)

    monkeypatch.setattr(replay, "Writer", Counted)

    def status() -> dict[str, Any]:
        st: dict[str, Any] = hs.json_lines("-C", str(a), "plumbing", "index-status")[0]
        return st

    def new_turn(n: int) -> None:
        recs = [turn_record(n, asked=f"question {n}")]
        r = hs("-C", str(a), "import", str(write_turns(tmp_path / f"{n}.jsonl", recs)))
        assert r.exit_code == 0, r.stderr

    for n, command in ((0, ["push", "lap", "--init"]), (7, ["push", "lap"]), (8, ["sync", "lap"])):
        if n:
            new_turn(n)
        before, made = status(), len(writers)
        r = hs("-C", str(a), *command)
        assert r.exit_code == 0 and r.stderr == "", command
        after = status()
        assert after["stale"] is False and after["applied_op"] != before["applied_op"], command
        assert after["generation"] == before["generation"] and after["rows"] == before["rows"]
        assert len(writers) == made, command  # the meta alone: no writer, no commit
        r = hs("-C", str(a), "fsck")
        assert r.exit_code == 0 and "behind" not in r.stdout + r.stderr, command
    # removing the remote drops its tracking refs: an operation of the same kind
    before = status()
    r = hs("-C", str(a), "remote", "remove", "lap")
    assert r.exit_code == 0, r.stderr
    after = status()
    assert after["stale"] is False and after["applied_op"] != before["applied_op"]
    r = hs("-C", str(a), "fsck")
    assert r.exit_code == 0 and "behind" not in r.stdout + r.stderr


def test_a_remote_named_by_a_secret_is_refused_and_the_log_keeps_no_secret(
    tmp_path: Path,
) -> None:
    """A remote's name names refs (remotes/<name>/…), which are never redacted:
    one that holds a secret is refused. A memory folder's path stays as given
    where hs must use it, and nowhere else."""
    import leaks

    hs, a, _b = cli(tmp_path)
    secret = "AKIA" + "QZ7X4RT2LM9PK3WB"
    r = hs("-C", str(a), "remote", "add", f"r-{secret}", str(tmp_path / "elsewhere"))
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        "hs: error: remote name 'r-[REDACTED:aws-access-key-id]' holds a secret; "
        "hint: give the remote another name\n"
    )
    mem = tmp_path / f"notes-{secret}"
    mem.mkdir()
    (mem / "MEMORY.md").write_text("# Memory\n")
    r = hs("-C", str(a), "memory", "snapshot", "--memory-dir", str(mem))
    assert r.exit_code == 0, r.stderr
    # the folder stays as given where hs must use it: config.toml, and the
    # operation's dir (hs undo puts the files back there)
    assert leaks.scan(a, leaks.Finder([secret])).keys() <= {"config.toml", "refs.log"}
    assert all('"dir"' in ln for ln in (a / "refs.log").read_text().splitlines() if secret in ln)
