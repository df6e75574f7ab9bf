"""hs upgrade: a format-1 store becomes format 2 in place, nothing lost, old
ids still resolve; killed at any write step it is one or the other."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from format1 import F1Store, tree_digest
from helpers import HS

from histstore.ops.fsck import fsck
from histstore.ops.upgrade import upgrade
from histstore.store.store import Store


def build_f1(root: Path) -> dict[str, Any]:
    """A format-1 store with every kind: a session recorded turn by turn, one
    that lost a turn, a merge, a forgotten turn (its marker under the old
    name), an unforgotten session, memory with two revisions and its base,
    an undo, and some objects in a format-1 pack."""
    f = F1Store(root)
    t = {n: f.turn(n, "s-a") for n in range(1, 5)}
    e = {n: f.entry(n, t[n]) for n in t}
    a1 = f.session("s-a", [e[1]])
    f.op({"sessions/s-a": a1}, "hs record")
    a2 = f.session("s-a", [e[1], e[2]], parent=a1)
    f.op({"sessions/s-a": a2}, "hs record")
    a3 = f.session("s-a", [e[1], e[2], e[3]], parent=a2, title="Login")
    imp = f.op({"sessions/s-a": a3}, "hs import x.jsonl")
    undo = f.op({"sessions/s-a": a2}, f"hs undo {imp}", kind="undo", undoes=imp)
    a4 = f.session("s-a", [e[1], e[2], e[3]], parent=a2, title="Login")
    f.op({"sessions/s-a": a4}, "hs import x.jsonl")
    b = {n: f.turn(n, "s-b") for n in range(10, 13)}
    eb = {n: f.entry(n, b[n]) for n in b}
    b1 = f.session("s-b", [eb[10], eb[11], eb[12]])
    b2 = f.session("s-b", [eb[10], eb[12]], parent=b1)  # a turn dropped
    b3 = f.session("s-b", [eb[10], eb[11], eb[12]], parent=b2, merged=b1)  # a merge
    f.op({"sessions/s-b": b1}, "hs import b.jsonl")
    f.op({"sessions/s-b": b2}, "hs import b.jsonl")
    f.op({"sessions/s-b": b3}, "hs sync lap")
    m1 = f.marker("t002", "turn", "s-a", "exclude", "active", None, reason="pasted a key")
    f.op({"overlay/t002": m1}, "hs forget s-a~t002 --exclude", kind="overlay")
    s1 = f.marker("s-b", "session", "s-b", "tombstone", "active", None)
    f.op({"overlay/s-b": s1}, "hs forget s-b", kind="overlay")
    s2 = f.marker("s-b", "session", "s-b", "tombstone", "lifted", s1)
    unforget = f.op({"overlay/s-b": s2}, "hs unforget s-b", kind="overlay", target="s-b")
    r1 = f.memrev("system", {"MEMORY.md": b"# Memory\n"}, [], "first")
    r2 = f.memrev("system", {"MEMORY.md": b"# Memory\n- a\n", "user_me.md": b"me\n"}, [r1], "two")
    f.op({"memory/system": r1}, "hs memory write", kind="memory", memory_kind="write")
    f.op({"memory/system": r2}, "hs memory write", kind="memory", memory_kind="write")
    (root / "memory-base").mkdir()
    (root / "memory-base" / "system").write_text(r2 + "\n")
    f.pack([t[1], t[2], a1, a2, b1])
    return {"turns": t, "undo": undo, "import": imp, "unforget": unforget}


@pytest.fixture
def f1(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp_path / "store"
    return root, build_f1(root)


def test_every_command_on_a_format_1_store_says_to_upgrade(
    hs: HS, f1: tuple[Path, dict[str, Any]]
) -> None:
    root, _ = f1
    for args in (["log"], ["status"], ["recall", "login"], ["gc"]):
        r = hs("-C", str(root), *args)
        assert (r.exit_code, r.stdout) == (3, ""), args  # as cli.md documents
        assert "format version 1" in r.stderr and "run `hs upgrade`" in r.stderr, args


def test_upgrade_keeps_every_turn_revision_marker_memory_and_operation(
    hs: HS, f1: tuple[Path, dict[str, Any]]
) -> None:
    root, _ = f1
    r = hs("-C", str(root), "upgrade")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("upgraded to format 2: ")
    assert not (root / ".upgrade").exists()
    with Store.open(root) as s:
        assert [x for x in fsck(s) if x.severity == "error"] == []
        a = s.session("s-a")
        assert [t.turn_id for t in a.turns] == ["t001", "t002", "t003"]
        assert a.title == "Login"
        history = [rev for rev, _ in s.session_history("s-a")]
        assert len(history) == 3  # a4, a2, a1: the chain is kept
        b = s.session("s-b")
        assert [t.turn_id for t in b.turns] == ["t010", "t011", "t012"]
        assert len(b.parents) == 2  # the merge
        for t in a.turns + b.turns:
            turn = s.get_json(t.object, "turn")
            assert "source" not in turn and t.project == "/home/dev/app"
        markers = s.markers()
        assert set(markers) == {"s-a~t002", "s-b"}  # the turn's marker renamed
        assert markers["s-a~t002"].reason == "pasted a key" and markers["s-a~t002"].excludes
        assert not markers["s-b"].active and len(markers["s-b"].parents) == 1
        assert len(s.operations()) == 13
        mem = s.refs.read("memory/system")
        assert mem is not None
    # the excluded turn stays excluded; the rest reads as before
    log = hs.json_lines("-C", str(root), "log", "--json")
    assert {x["turn_id"] for x in log if x.get("object")} >= {"t001", "t003", "t010"}
    assert "t002" not in {x["turn_id"] for x in log if x.get("asked")}
    assert hs("-C", str(root), "memory", "log").exit_code == 0
    # where each turn came from is beside it now
    r = hs("-C", str(root), "show", "t003")
    assert r.exit_code == 0 and "/data/s-a.jsonl" in r.stdout


def test_an_old_id_still_shows_what_it_showed(hs: HS, f1: tuple[Path, dict[str, Any]]) -> None:
    root, ids = f1
    assert hs("-C", str(root), "upgrade").exit_code == 0
    old = ids["turns"][3]
    r = hs("-C", str(root), "show", old[:12])
    assert r.exit_code == 0, r.stderr
    assert "question 3 about login_user" in r.stdout
    assert "format-1 id" in r.stderr
    # an old operation id: undoing the unforget forgets the session again
    assert len(hs.json_lines("-C", str(root), "forgotten", "--json")) == 1  # the excluded turn
    r = hs("-C", str(root), "undo", ids["unforget"])
    assert r.exit_code == 0, r.stderr
    assert len(hs.json_lines("-C", str(root), "forgotten", "--json")) == 2


def test_a_second_upgrade_changes_nothing(hs: HS, f1: tuple[Path, dict[str, Any]]) -> None:
    root, _ = f1
    assert hs("-C", str(root), "upgrade").exit_code == 0
    before = tree_digest(root)
    r = hs("-C", str(root), "upgrade")
    assert r.exit_code == 0 and r.stdout.strip() == f"the store at {root} is format 2 already"
    assert tree_digest(root) == before


def test_upgrade_refuses_what_is_not_a_store(hs: HS, tmp_path: Path) -> None:
    r = hs("-C", str(tmp_path / "none"), "upgrade")
    assert r.exit_code == 2 and r.stderr.startswith("hs: error: no store at ")
    assert not (tmp_path / "none").exists()


def test_an_upgrade_refused_for_damage_leaves_nothing_behind(
    hs: HS, f1: tuple[Path, dict[str, Any]]
) -> None:
    """A missing object stops the upgrade before its commit: the store is the
    format-1 store it was, and no half-built new store is left in it."""
    root, made = f1
    oid = made["turns"][3]  # a loose one (the pack holds 1 and 2)
    (root / "objects" / oid[:2] / oid[2:]).unlink()
    before = tree_digest(root, skip=("lock", "lock.owner"))
    r = hs("-C", str(root), "upgrade")
    assert (r.exit_code, r.stdout) == (7, "")
    assert r.stderr.startswith(f"hs: error: cannot upgrade: object {oid}")
    assert not (root / ".upgrade").exists()
    assert tree_digest(root, skip=("lock", "lock.owner")) == before


def test_a_remotes_tracking_ref_of_a_turn_marker_is_renamed_too(hs: HS, tmp_path: Path) -> None:
    """A turn's overlay ref is ``<session>~<turn>`` in format 2, and so is
    the tracking ref a sync left of it (else the next sync sees a new ref)."""
    root = tmp_path / "store"
    f = F1Store(root)
    t1 = f.turn(1, "s-a")
    f.op({"sessions/s-a": f.session("s-a", [f.entry(1, t1)])}, "hs record")
    m1 = f.marker("t001", "turn", "s-a", "exclude", "active", None, reason="a key")
    remotes = ("lap", "overlay", "devoverlay")  # (a remote's name may hold "overlay")
    tracking = {f"remotes/{r}/overlay/t001": m1 for r in remotes}
    f.op({"overlay/t001": m1, **tracking}, "hs sync lap", kind="overlay")
    assert hs("-C", str(root), "upgrade").exit_code == 0
    refs = {d["ref"] for d in hs.json_lines("-C", str(root), "plumbing", "show-ref")}
    assert {"overlay/s-a~t001", *(f"remotes/{r}/overlay/s-a~t001" for r in remotes)} <= refs
    assert not {"overlay/t001", *tracking} & refs
    r = hs("-C", str(root), "fsck")
    assert r.exit_code == 0, r.stdout + r.stderr


def test_sync_between_format_1_and_format_2_is_refused(
    hs: HS, f1: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    root, _ = f1
    two = tmp_path / "two"
    assert hs("-C", str(two), "init").exit_code == 0
    assert hs("-C", str(two), "remote", "add", "old", str(root)).exit_code == 0
    before = tree_digest(root)
    r = hs("-C", str(two), "sync", "old")
    assert r.exit_code != 0
    assert "format version 1" in r.stderr and "hs upgrade" in r.stderr
    assert tree_digest(root) == before


# ------------------------------------------------------------ killed at each step

STEPS = ("replace", "rename", "unlink", "rmdir", "mkdir")


def _killed(root: Path, kill_at: int, counts: Path | None = None) -> int:
    """hs upgrade in a forked child that dies (os._exit) before its
    ``kill_at``-th write step; with ``counts``, it lives and writes there how
    many steps it took and the step that wrote the commit record."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        count = 0
        commit_at = done_at = -1

        def guarded(name: str) -> Any:
            real = getattr(os, name)

            def call(*a: Any, **k: Any) -> Any:
                nonlocal count, commit_at, done_at
                if count == kill_at:
                    os._exit(9)
                if name == "replace" and str(a[1]).endswith("COMMIT"):
                    commit_at = count
                if name == "unlink" and str(a[0]).endswith("COMMIT"):
                    done_at = count
                count += 1
                return real(*a, **k)

            return call

        for name in STEPS:
            setattr(os, name, guarded(name))
        try:
            upgrade(root)
        except BaseException:
            os._exit(3)
        if counts is not None:
            counts.write_text(f"{count} {commit_at} {done_at}")
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _content(root: Path) -> Any:
    with Store.open(root) as s:
        assert [x for x in fsck(s) if x.severity == "error"] == []
        return (
            {
                x.session_id: [(t.turn_id, s.get_json(t.object, "turn")["asked"]) for t in x.turns]
                for x in s.sessions()
            },
            {k: (m.mode, m.state) for k, m in s.markers().items()},
            len(s.operations()),
        )


def test_upgrade_killed_before_each_write_step(tmp_path: Path) -> None:
    """Each step around the commit record and its removal, some of the moves
    between and of the others (``make test-deep``: every step): those before it all
    leave the format-1 store as it was, those after it (removing what was
    replaced) the format-2 store with leftovers — the same check each. A
    process killed keeps what it wrote in the page cache, so this checks the
    order of renames, not fsync (fsync off here: it made this test a minute
    long on a shared disk; the durability tests keep it on)."""
    base = tmp_path / "base"
    build_f1(base)
    f1_digest = tree_digest(base)
    whole = tmp_path / "whole"
    shutil.copytree(base, whole)
    assert _killed(whole, -1, tmp_path / "counts") == 0
    steps, commit_at, done_at = map(int, (tmp_path / "counts").read_text().split())
    assert steps >= 20 and 0 < commit_at < done_at < steps, (steps, commit_at, done_at)
    want = _content(whole)
    if os.environ.get("HS_HYPOTHESIS_PROFILE") == "deep":
        chosen = list(range(steps))
    else:
        # in CI: each side of the commit record and of its removal, four of
        # the moves between, and six spread over the build and the cleanup
        edges = {commit_at - 1, commit_at, commit_at + 1, done_at - 1, done_at, done_at + 1}
        moves = range(commit_at + 2, done_at - 1, max(1, (done_at - commit_at) // 4))
        spread = range(0, steps, max(1, steps // 6))
        chosen = sorted(edges | set(moves) | set(spread))
    for k in chosen:
        root = tmp_path / f"k{k}"
        shutil.copytree(base, root)
        assert _killed(root, k) == 9
        committed = (root / ".upgrade" / "COMMIT").exists()
        if not committed and "format = 1" in (root / "config.toml").read_text():
            # not committed: the format-1 store as it was
            assert tree_digest(root) == f1_digest, k
            upgrade(root)
        assert _content(root) == want, k
        # killed while it removed what it replaced: hs upgrade finishes that
        assert upgrade(root).already
        assert not (root / ".upgrade").exists()
        shutil.rmtree(root)
