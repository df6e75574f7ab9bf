"""hs forget / unforget / forgotten, export, ops and undo."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import HS, turn_record, write_turns

from histstore.ops.forget import forget, resolve_target
from histstore.overlay.markers import Overlay, load_marker
from histstore.recall.index import RecallIndex
from histstore.store.store import Store

SID_A = "sess-aaaa-1111"
SID_B = "sess-bbbb-2222"


def records() -> list[dict[str, Any]]:
    return [
        turn_record(
            1,
            session_id=SID_A,
            asked="the customer's invoice number is 4471 ocelot",
            answered="noted the ocelot invoice",
        ),
        turn_record(2, session_id=SID_A, asked="second question about ocelot billing"),
        turn_record(
            3, session_id=SID_B, asked="an unrelated ocelot question", project="/home/dev/src/other"
        ),
    ]


@pytest.fixture
def filled(hs: HS, tmp_path: Path) -> HS:
    hs("init")
    r = hs("import", str(write_turns(tmp_path / "in.jsonl", records())))
    assert r.exit_code == 0, r.stderr
    return hs


def recall_ids(hs: HS, query: str = "ocelot") -> list[str]:
    out = hs.json_lines("recall", "--everywhere", "--json", "-k", "10", query)[0]
    return sorted(h["turn_id"] for h in out["hits"])


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


# --------------------------------------------------------------- confirmation


def test_forget_needs_the_exact_id_and_writes_nothing_otherwise(
    filled: HS, store_path: Path
) -> None:
    before = snapshot(store_path)
    for args in (
        ["turn-0001"],
        ["turn-0001", "--confirm", "turn-000"],
        ["sess-", "--confirm", SID_A],
    ):
        r = filled("forget", *args)
        assert r.exit_code == 2, (args, r.stdout, r.stderr)
        assert snapshot(store_path) == before, args
    r = filled("forget", "turn-0001")
    assert "unconfirmed-target" in r.stderr and "--confirm turn-0001" in r.stderr
    r = filled("forget", "sess-", "--confirm", SID_A)
    assert (
        "ambiguous" in r.stderr
        and f"session {SID_A}" in r.stderr
        and f"session {SID_B}" in r.stderr
    )
    r = filled("forget", "no-such-thing", "--confirm", "no-such-thing")
    assert r.exit_code == 4 and "no session or turn 'no-such-thing' in the store" in r.stderr
    assert snapshot(store_path) == before


def test_forget_a_turn_by_prefix(filled: HS, store_path: Path) -> None:
    objects_before = snapshot(store_path / "objects")
    r = filled("forget", "turn-0001", "--confirm", "turn-0001", "--reason", "customer data")
    assert r.exit_code == 0, r.stderr
    assert "forgot turn turn-0001" in r.stdout and "tombstone" in r.stdout
    assert "operation " in r.stdout and "marker " in r.stdout and "generation gen-" in r.stdout
    assert recall_ids(filled) == ["turn-0002", "turn-0003"]
    # turn objects untouched: every object file there before is there, unchanged
    after = snapshot(store_path / "objects")
    assert all(after.get(k) == v for k, v in objects_before.items())
    with Store.open(store_path) as s:
        m = Overlay.read(s).markers[f"{SID_A}~turn-0001"]
        assert (m.mode, m.state, m.reason, m.session) == (
            "tombstone",
            "active",
            "customer data",
            SID_A,
        )


def test_forget_a_session_and_the_views(filled: HS, store_path: Path) -> None:
    r = filled("forget", SID_A, "--confirm", SID_A, "--exclude", "--json")
    out = json.loads(r.stdout)
    assert out["mode"] == "exclude" and out["rebuilt"] is True and out["target"]["turns"] == 2
    assert recall_ids(filled) == ["turn-0003"]
    excl = (store_path / "overlay" / "exclusions.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in excl] == [
        {"id": SID_A, "mode": "exclude", "ts": out["time"], "reason": ""}
    ]
    assert (store_path / "overlay" / "tombstones.jsonl").read_text() == ""
    filled("forget", "turn-0003", "--confirm", "turn-0003", "--reason", "why not")
    tomb = [
        json.loads(x)
        for x in (store_path / "overlay" / "tombstones.jsonl").read_text().splitlines()
    ]
    assert tomb == [{"id": "turn-0003", "ts": tomb[0]["ts"], "reason": "why not"}]
    assert recall_ids(filled) == []
    assert filled("fsck").exit_code == 0


def test_unforget_and_marker_history(filled: HS, store_path: Path) -> None:
    filled("forget", "turn-0002", "--confirm", "turn-0002")
    r = filled("unforget", "turn-0002", "--confirm", "turn-0002")
    assert r.exit_code == 0 and "back in recall" in r.stdout
    assert recall_ids(filled) == ["turn-0001", "turn-0002", "turn-0003"]
    filled("forget", "turn-0002", "--confirm", "turn-0002", "--exclude")
    with Store.open(store_path) as s:
        chain, rev = [], s.refs.read(f"overlay/{SID_A}~turn-0002")
        while rev:
            m = load_marker(s, rev)
            chain.append((m.mode, m.state))
            rev = m.parents[0] if m.parents else None
    assert chain == [("exclude", "active"), ("tombstone", "lifted"), ("tombstone", "active")]
    r = filled("unforget", "turn-0001", "--confirm", "turn-0001")
    assert r.exit_code == 4 and "is not forgotten" in r.stderr


def test_forgetting_twice_changes_nothing(filled: HS, store_path: Path) -> None:
    filled("forget", "turn-0001", "--confirm", "turn-0001")
    log = (store_path / "refs.log").read_bytes()
    r = filled("forget", "turn-0001", "--confirm", "turn-0001")
    assert r.exit_code == 0 and "already forgotten" in r.stdout
    assert (store_path / "refs.log").read_bytes() == log


# --------------------------------------------------------------- failure paths


def test_a_failed_rebuild_rolls_the_marker_back(
    filled: HS, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = filled.json_lines("plumbing", "index-status")[0]

    def broken(self: RecallIndex, **kw: Any) -> Any:
        raise OSError(28, "No space left on device (injected)")

    with monkeypatch.context() as m:
        m.setattr(RecallIndex, "catch_up", broken)
        r = filled("forget", "turn-0001", "--confirm", "turn-0001")
    assert r.exit_code == 8 and r.stdout == ""
    assert r.stderr.startswith("hs: error: rebuild-failed:") and "rolled back" in r.stderr
    assert r.stderr.count("\n") == 1
    after = filled.json_lines("plumbing", "index-status")[0]
    assert (after["generation"], after["applied_op"]) == (
        before["generation"],
        before["applied_op"],
    )
    assert recall_ids(filled) == ["turn-0001", "turn-0002", "turn-0003"]
    assert filled("forgotten").stdout.strip() == "nothing is forgotten"
    assert filled("fsck").exit_code == 0


def test_a_target_still_there_after_the_commit_is_blocked(
    filled: HS, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:
        m.setattr(RecallIndex, "holds", lambda self, **kw: 1)
        r = filled("forget", "turn-0001", "--confirm", "turn-0001")
    assert r.exit_code == 9 and r.stdout == ""
    assert r.stderr.startswith("hs: error: blocked-non-converged")
    assert "failed step: confirm" in r.stderr and r.stderr.count("\n") == 1
    assert "operation " in r.stderr
    assert "turn-0001" not in recall_ids(filled)  # the overlay still hides it


def test_recall_merges_the_overlay_before_the_commit(
    filled: HS, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash between the marker and the index commit: no reader sees the target."""

    def crash(self: RecallIndex, **kw: Any) -> Any:
        raise KeyboardInterrupt

    with monkeypatch.context() as m, Store.open(store_path) as s, pytest.raises(KeyboardInterrupt):
        m.setattr(RecallIndex, "catch_up", crash)
        forget(s, resolve_target(s, "turn-0001"), confirm="turn-0001")
    with Store.open(store_path) as s:
        assert RecallIndex(s).holds(turn_id="turn-0001") == 1  # the rows are still there
        assert "turn-0001" not in [h.turn_id for h in RecallIndex(s).search("ocelot", k=10).hits]


def test_a_long_lived_reader_reads_the_markers_again_only_once_they_moved(
    filled: HS, store_path: Path
) -> None:
    """Store.markers is kept while the refs stay as they were (a command asks
    several times), and read again after any operation, of another process
    (the MCP server's store, a forget by the CLI) or its own."""
    with Store.open(store_path) as reader:
        loads: list[str] = []
        real = reader.load_marker

        def counted(marker_id: str) -> Any:
            loads.append(marker_id)
            return real(marker_id)

        reader.load_marker = counted  # type: ignore[method-assign]
        assert reader.markers() == {}
        assert filled("forget", "turn-0001", "--confirm", "turn-0001").exit_code == 0
        first = reader.markers()
        assert [m.active for m in first.values()] == [True] and len(loads) == 1
        assert reader.markers() == first and len(loads) == 1  # nothing moved: not read again
        assert filled("unforget", "turn-0001", "--confirm", "turn-0001").exit_code == 0
        assert [m.active for m in reader.markers().values()] == [False] and len(loads) == 2
        # its own write: a marker on another turn
        forget(reader, resolve_target(reader, "turn-0003"), confirm="turn-0003")
        assert sorted(m.target for m in reader.markers().values() if m.active) == ["turn-0003"]


# --------------------------------------------------------------- listing


def test_forgotten_lists_markers_and_narrates_stale_ones(filled: HS, tmp_path: Path) -> None:
    filled("forget", SID_B, "--confirm", SID_B, "--reason", "private")
    filled("forget", "turn-0001", "--confirm", "turn-0001", "--exclude")
    rows = filled.json_lines("forgotten", "--json")
    assert [(r["target"], r["mode"], r["hides"], r["stale"]) for r in rows] == [
        ("turn-0001", "exclude", 1, False),
        (SID_B, "tombstone", 1, False),
    ]
    assert filled("forget", "--list").stdout == filled("forgotten").stdout
    # the import that brought the sessions is undone: the markers now hide nothing
    ops = filled.json_lines("ops", "--json")
    imp = next(o["op"] for o in ops if o["command"].startswith("hs import"))
    assert filled("undo", imp).exit_code == 0
    rows = filled.json_lines("forgotten", "--json")
    assert [(r["target"], r["hides"], r["stale"]) for r in rows] == [
        ("turn-0001", 0, True),
        (SID_B, 0, True),
    ]
    out = filled("forgotten").stdout
    assert f"stale: session {SID_B} is not in the store" in out and "private" in out


@pytest.mark.parametrize("target", [f"{SID_A}~", "~", "~turn-0001", " ~turn-0001"])
def test_a_session_turn_pair_with_an_empty_half_is_refused(
    filled: HS, store_path: Path, target: str
) -> None:
    """An empty half of SESSION~TURN is a prefix of every session (or turn):
    ``hs forget '~b75'`` found a turn in any session. As hs show does: both."""
    before = snapshot(store_path)
    for cmd in ("forget", "unforget", "purge"):
        r = filled(cmd, target, "--confirm", target)
        assert (r.exit_code, r.stdout) == (2, ""), cmd
        assert r.stderr == (
            f"hs: error: {target.strip()}: give both parts; hint: SESSION~TURN, as hs log shows\n"
        ), cmd
    assert snapshot(store_path) == before


def test_a_prefix_of_two_forgotten_turns_no_longer_stored_is_ambiguous(filled: HS) -> None:
    """Turns whose import was undone are named through their markers: a
    prefix two of them share took whichever marker came first."""
    for t in ("turn-0001", "turn-0002"):
        target = f"{SID_A}~{t}"
        assert filled("forget", target, "--confirm", target).exit_code == 0
    imp = next(o["op"] for o in filled.json_lines("ops", "--json") if "import" in o["command"])
    assert filled("undo", imp).exit_code == 0
    prefix = f"{SID_A}~turn-000"
    r = filled("unforget", prefix, "--confirm", prefix)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.splitlines() == [
        f"hs: error: target '{prefix}' is ambiguous (2 forgotten turns); hint: give more of the ids",
        f"  turn {SID_A}~turn-0001",
        f"  turn {SID_A}~turn-0002",
    ]
    whole = f"{SID_A}~turn-0002"
    r = filled("unforget", whole, "--confirm", whole)
    assert r.exit_code == 0, r.stderr
    assert [m["target"] for m in filled.json_lines("forgotten", "--json")] == ["turn-0001"]


def test_list_with_a_target_is_refused(filled: HS, store_path: Path) -> None:
    """``hs forget --list TARGET`` listed every marker, the target unread;
    ``hs purge --list TARGET`` likewise: one or the other."""
    before = snapshot(store_path)
    r = filled("forget", "--list", SID_A)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        f"hs: error: --list takes no target ('{SID_A}'): it lists every marker; "
        "hint: hs forget --list [--agent NAME]\n"
    )
    for args in (["purge", "--list", SID_A], ["purge", "--list", "--text", "x"]):
        r = filled(*args)
        assert (r.exit_code, r.stdout) == (2, ""), args
        assert r.stderr == (
            "hs: error: --list takes no target, --text or --confirm: it lists every purge; "
            "hint: hs purge --list\n"
        )
    assert snapshot(store_path) == before


def test_forgotten_never_shows_an_excluded_targets_text(
    filled: HS, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault: `hs forgotten` printed the excluded turn's own first prompt beside
    its reason. An exclusion is counted and named by id only: in `forgotten`,
    `forget --list`, their --json, and the confirmation and result of an
    unforget; a tombstone's first prompt is quoted."""
    import histstore.porcelain.cli as cli

    filled("forget", "turn-0001", "--confirm", "turn-0001", "--exclude", "--reason", "pii")
    filled("forget", SID_B, "--confirm", SID_B, "--exclude")
    filled("forget", "turn-0002", "--confirm", "turn-0002")  # a tombstone
    excluded = ("4471", "invoice", "unrelated")
    for args in (["forgotten"], ["forgotten", "--json"], ["forget", "--list"]):
        r = filled(*args)
        assert r.exit_code == 0 and r.stderr == "", args
        assert "turn-0001" in r.stdout and SID_B in r.stdout, args
        assert not [w for w in excluded if w in r.stdout], (args, r.stdout)
        assert "second question about ocelot billing" in r.stdout, args  # the tombstone's
    rows = {row["target"]: row for row in filled.json_lines("forgotten", "--json")}
    assert rows["turn-0001"]["first_prompt"] == "" and rows[SID_B]["first_prompt"] == ""
    assert rows["turn-0001"]["hides"] == 1 and rows[SID_B]["hides"] == 1
    # unforget: its confirmation on a terminal, then its result, quote nothing
    monkeypatch.setattr(cli, "_on_terminal", lambda: True)
    r = filled("unforget", "turn-0001", input="turn-000\n")
    assert r.exit_code == 2 and "unforget turn turn-0001" in r.stderr
    assert "first prompt" not in r.stderr and "4471" not in r.stderr
    r = filled("unforget", SID_B, "--confirm", SID_B, "--json")
    assert r.exit_code == 0 and "unrelated" not in r.stdout
    assert json.loads(r.stdout)["target"]["first_prompt"] == ""
    # once lifted, it is quoted again where a forget asks for confirmation
    r = filled("forget", SID_B, input="x\n")
    assert r.exit_code == 2 and "first prompt: an unrelated ocelot question" in r.stderr


SECRET_REASON = "leaked key sk-ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa-ZZyyXXwwVV"
SECRET = SECRET_REASON.split()[-1]


def test_a_forget_reason_is_redacted_before_it_is_stored(filled: HS, store_path: Path) -> None:
    """Fault: `forget --reason` was stored as given, and the reason is synced and
    kept forever. It is redacted before the marker is hashed: no file of the
    store, no decompressed object and no view holds the secret."""
    r = filled("forget", "turn-0001", "--confirm", "turn-0001", "--reason", SECRET_REASON)
    assert r.exit_code == 0, r.stderr
    filled("forget", SID_B, "--confirm", SID_B, "--exclude", "--reason", SECRET_REASON)
    row = filled.json_lines("forgotten", "--json")[0]
    assert row["reason"].startswith("leaked key [REDACTED:")
    for args in (["forgotten"], ["forgotten", "--json"], ["ops"], ["ops", "--json"]):
        assert SECRET not in filled(*args).stdout, args
    store = Store.open(store_path)
    try:
        chunks = [p.read_bytes() for p in store_path.rglob("*") if p.is_file()]
        chunks += [store.objects.get(oid)[1] for oid in store.objects.iter_ids()]
    finally:
        store.close()
    assert len(chunks) > 10
    assert not [c[:80] for c in chunks if SECRET.encode() in c]


# --------------------------------------------------------------- export


def test_export_round_trip_gives_the_same_turn_objects(
    filled: HS, tmp_path: Path, store_path: Path
) -> None:
    out = tmp_path / "export.jsonl"
    assert filled("export", "-o", str(out)).exit_code == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(x)["turn_id"] for x in lines)
    other = tmp_path / "other"
    r = filled("--store", str(other), "init")
    assert r.exit_code == 0
    r = filled("--store", str(other), "import", str(out))
    assert r.exit_code == 0 and "turns: 3 added" in r.stdout, r.stderr

    def objects(store: Path) -> dict[str, str]:
        with Store.open(store) as s:
            return {t.turn_id: t.object for x in s.sessions() for t in x.turns}

    assert objects(other) == objects(store_path)


def test_exclusions_never_leave_tombstones_do(filled: HS) -> None:
    filled("forget", "turn-0001", "--confirm", "turn-0001", "--exclude")
    filled("forget", "turn-0003", "--confirm", "turn-0003")  # tombstone: still exported
    filters = [
        [],
        ["--session", SID_A],
        ["--session", "sess-a"],
        ["--project", "/home/dev/src/app"],
        ["--since", "2000-01-01"],
        ["--format", "markdown"],
        ["--format", "markdown", "--session", SID_A],
    ]
    for f in filters:
        r = filled("export", *f)
        assert r.exit_code == 0, (f, r.stderr)
        assert "4471" not in r.stdout and "turn-0001" not in r.stdout, f
    ids = [json.loads(x)["turn_id"] for x in filled("export").stdout.splitlines()]
    assert ids == ["turn-0002", "turn-0003"]
    md = filled("export", "--format", "markdown").stdout
    assert md.startswith("# Session ") and "**Asked:**" in md and "turn `turn-0003`" in md


def test_export_bad_format(filled: HS) -> None:
    r = filled("export", "--format", "pdf")
    assert r.exit_code == 2 and "unknown export format 'pdf'" in r.stderr


@pytest.mark.parametrize("fmt", ["jsonl", "markdown"])
def test_export_into_a_folder_that_does_not_exist_is_refused(
    filled: HS, tmp_path: Path, fmt: str
) -> None:
    target = tmp_path / "no" / "such" / "out.txt"
    r = filled("export", "--format", fmt, "-o", str(target))
    assert r.exit_code == 4 and r.stdout == ""
    assert r.stderr.startswith(f"hs: error: --output {target}: there is no folder {target.parent}")
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "no").exists()


def test_export_onto_a_folder_is_refused_and_leaves_no_copy(filled: HS, tmp_path: Path) -> None:
    """A folder named as the output file: refused before anything is written
    (it used to fail at the rename, leaving the whole export in a temporary
    file beside it)."""
    folder = tmp_path / "out"
    folder.mkdir()
    r = filled("export", "-o", str(folder))
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == (
        f"hs: error: --output {folder} is a folder; hint: name a file in it, or another file\n"
    )
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert list(folder.iterdir()) == []


def test_a_failed_rename_leaves_no_temporary_file(tmp_path: Path) -> None:
    from histstore.store.fsutil import atomic_write

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("a file in it")
    with pytest.raises(OSError):
        atomic_write(tmp_path / "d", b"secret data")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "home"]


# --------------------------------------------------------------- ops and undo


def test_ops_and_undo_of_every_kind(filled: HS, store_path: Path) -> None:
    filled("record", input=json.dumps(turn_record(4, session_id=SID_B, asked="a late ocelot")))
    filled("forget", SID_A, "--confirm", SID_A)
    ops = filled.json_lines("ops", "--json")
    assert [o["command"].split()[1] for o in ops] == ["forget", "record", "import"]
    text = filled("ops").stdout
    assert text.index(ops[0]["op"]) < text.index(ops[2]["op"])
    # undo the forget: back in recall at once
    r = filled("undo")
    assert r.exit_code == 0 and f"undid {ops[0]['op']}" in r.stdout
    assert recall_ids(filled) == ["turn-0001", "turn-0002", "turn-0003", "turn-0004"]
    # undo the undo: forgotten again
    assert filled("undo").exit_code == 0
    assert recall_ids(filled) == ["turn-0003", "turn-0004"]
    # undo the record (by id): its turn is gone again
    assert filled("undo", ops[1]["op"][:8]).exit_code == 0
    assert recall_ids(filled) == ["turn-0003"]
    assert filled("fsck").exit_code == 0


def test_undo_of_an_import_hides_its_turns_again(filled: HS) -> None:
    assert filled("undo").exit_code == 0
    assert recall_ids(filled) == []
    assert filled("log").stdout.strip() == "no turns recorded yet"


def test_undo_conflicting_with_a_later_operation_changes_nothing(
    filled: HS, store_path: Path
) -> None:
    imp = filled.json_lines("ops", "--json")[0]["op"]
    filled("record", input=json.dumps(turn_record(5, session_id=SID_A)))
    before = snapshot(store_path)
    r = filled("undo", imp)
    assert r.exit_code == 5 and f"cannot undo {imp}" in r.stderr and f"sessions/{SID_A}" in r.stderr
    assert snapshot(store_path) == before
    r = filled("undo", "ffffffff")
    assert r.exit_code == 4


@pytest.mark.parametrize("given", ["", "  "])
def test_undo_of_an_empty_operation_id_is_refused(filled: HS, store_path: Path, given: str) -> None:
    """An empty id (``hs undo "$OP"`` with OP unset) is a prefix of every
    operation: it named the newest one and undid it. It is refused."""
    before = snapshot(store_path)
    r = filled("undo", given)
    assert r.exit_code == 2, r.stdout
    assert r.stdout == ""
    assert r.stderr == (
        "hs: error: the operation id is empty; hint: name one from `hs ops`, "
        "or give none to undo the last\n"
    )
    assert snapshot(store_path) == before


# --------------------------------------------------------------- log and show


def test_log_and_show_give_forgotten_turns_only_as_such(filled: HS) -> None:
    filled("forget", "turn-0001", "--confirm", "turn-0001")
    out = filled("log").stdout
    assert "forgotten (tombstone since " in out and "4471" not in out
    assert "4471" not in filled("log", "--oneline").stdout
    row = next(x for x in filled.json_lines("log", "--json") if x["turn_id"] == "turn-0001")
    assert row["forgotten"]["mode"] == "tombstone" and "asked" not in row
    shown = filled("show", "turn-0001")
    assert "forgotten (tombstone since " in shown.stdout and "4471" not in shown.stdout
    assert "4471" not in filled("show", "--full", "turn-0001").stdout
    assert "4471" not in filled("show", SID_A).stdout
    obj = filled.json_lines("log", "--all", "--json")[-1]["object"]
    assert "4471" not in filled("show", obj).stdout
    assert "4471" in filled("log", "--all").stdout
    assert "4471" in filled("show", "--all", "turn-0001").stdout


# --------------------------------------------------------------- concurrency


def test_a_reader_never_sees_the_target_after_forget_returned(filled: HS, store_path: Path) -> None:
    done = threading.Event()
    seen_after: list[list[str]] = []
    errors: list[BaseException] = []

    def reader() -> None:
        s = Store.open(store_path)
        index = RecallIndex(s)
        while True:
            finished = done.is_set()
            try:
                hits = [h.turn_id for h in index.search("ocelot", k=10).hits]
            except BaseException as e:  # pragma: no cover - the failure tested for
                errors.append(e)
                return
            if finished:
                seen_after.append(hits)
                if len(seen_after) > 20:
                    return

    t = threading.Thread(target=reader)
    t.start()
    r = filled("forget", "turn-0001", "--confirm", "turn-0001")
    done.set()
    t.join()
    assert r.exit_code == 0 and errors == []
    assert all("turn-0001" not in hits for hits in seen_after)


FORGETTER = r"""
import sys
from pathlib import Path
from histstore.store import Store
from histstore.ops.forget import forget, resolve_target
s = Store.open(Path(sys.argv[1]))
t = resolve_target(s, sys.argv[2])
forget(s, t, confirm=t.id, command="hs forget " + t.id)
"""


def test_two_forgets_at_once_both_land(filled: HS, store_path: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", FORGETTER, str(store_path), tid],
            stderr=subprocess.PIPE,
            text=True,
        )
        for tid in ("turn-0001", "turn-0003")
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert recall_ids(filled) == ["turn-0002"]
    assert {r["target"] for r in filled.json_lines("forgotten", "--json")} == {
        "turn-0001",
        "turn-0003",
    }
    assert filled("fsck").exit_code == 0


def test_fsck_checks_the_views(filled: HS, store_path: Path) -> None:
    filled("forget", "turn-0001", "--confirm", "turn-0001")
    (store_path / "overlay" / "tombstones.jsonl").write_text("")
    r = filled("fsck")
    assert r.exit_code == 7 and "does not match the overlay refs" in r.stderr
    assert filled("fsck", "--repair").exit_code == 0
    assert filled("fsck").exit_code == 0
    assert "turn-0001" in (store_path / "overlay" / "tombstones.jsonl").read_text()


def test_a_forget_never_weakens_an_exclusion(filled: HS) -> None:
    filled("forget", "turn-0001", "--confirm", "turn-0001", "--exclude", "--reason", "pii")
    r = filled("forget", "turn-0001", "--confirm", "turn-0001")
    assert r.exit_code == 0 and "already forgotten" in r.stdout
    row = filled.json_lines("forgotten", "--json")[0]
    assert (row["mode"], row["reason"]) == ("exclude", "pii")
    # a tombstone can be made an exclusion
    filled("forget", "turn-0002", "--confirm", "turn-0002")
    filled("forget", "turn-0002", "--confirm", "turn-0002", "--exclude")
    assert "turn-0002" not in filled("export").stdout


def test_an_undo_the_index_cannot_follow_is_rolled_back(
    filled: HS, monkeypatch: pytest.MonkeyPatch
) -> None:
    filled("forget", "turn-0001", "--confirm", "turn-0001")
    ops_before = len(filled.json_lines("ops", "--json"))

    def broken(self: RecallIndex, **kw: Any) -> Any:
        raise OSError(28, "No space left on device (injected)")

    with monkeypatch.context() as m:
        m.setattr(RecallIndex, "catch_up", broken)
        r = filled("undo")
    assert r.exit_code == 8 and "rolled back" in r.stderr
    assert "turn-0001" not in recall_ids(filled)
    assert [x["target"] for x in filled.json_lines("forgotten", "--json")] == ["turn-0001"]
    assert len(filled.json_lines("ops", "--json")) == ops_before + 2  # the undo and its rollback
    assert filled("fsck").exit_code == 0


def test_show_of_a_forgotten_session(filled: HS) -> None:
    filled("forget", SID_A, "--confirm", SID_A)
    r = filled("show", SID_A)
    assert "forgotten (tombstone since " in r.stdout and "Title" not in r.stdout
    assert "turn-0001" not in r.stdout
    assert "Turns:   2" in filled("show", "--all", SID_A).stdout


def test_update_ref_on_an_overlay_ref_keeps_the_views(filled: HS, store_path: Path) -> None:
    filled("forget", "turn-0001", "--confirm", "turn-0001")
    ops = filled.json_lines("plumbing", "refs-log")
    marker_change = ops[-1]["changes"][0]
    r = filled(
        "plumbing", "update-ref", f"overlay/{SID_A}~turn-0001", "-", "--old", marker_change["new"]
    )
    assert r.exit_code == 0, r.stderr
    assert (store_path / "overlay" / "tombstones.jsonl").read_text() == ""
    assert filled("fsck").exit_code == 0


def test_an_exclusion_holds_under_a_tombstone_on_the_same_turn(filled: HS) -> None:
    filled("forget", SID_A, "--confirm", SID_A, "--exclude")
    filled("forget", "turn-0001", "--confirm", "turn-0001")  # a tombstone inside it
    for f in ([], ["--session", SID_A], ["--format", "markdown"]):
        assert "4471" not in filled("export", *f).stdout, f
    row = next(x for x in filled.json_lines("log", "--json") if x["turn_id"] == "turn-0001")
    assert row["forgotten"]["mode"] == "exclude"
    assert "forgotten (exclusion since " in filled("log").stdout


def test_a_refused_forget_touches_no_file_even_of_the_index(filled: HS, store_path: Path) -> None:
    before = snapshot(store_path)
    assert filled("forget", "turn-0001", "--confirm", "nope").exit_code == 2
    assert filled("forget", SID_A, "--confirm", "nope").exit_code == 2
    assert snapshot(store_path) == before


def test_show_of_a_forgotten_sessions_revision_object(filled: HS, store_path: Path) -> None:
    filled("forget", SID_A, "--confirm", SID_A, "--exclude")
    with Store.open(store_path) as s:
        rev = s.session_ref(SID_A)
    assert rev is not None
    r = filled("show", rev)
    assert "forgotten (exclusion since " in r.stdout and "turn-0001" not in r.stdout


def test_the_days_hint_ignores_forgotten_turns(
    filled: HS, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Documents a failed commit left in the index never make recall say older turns match."""
    with monkeypatch.context() as m:
        m.setattr(RecallIndex, "holds", lambda self, **kw: 1)
        m.setattr(RecallIndex, "catch_up", lambda self, **kw: 0)  # the documents stay
        assert filled("forget", "turn-0001", "--confirm", "turn-0001").exit_code == 9
    out = filled.json_lines("recall", "--everywhere", "--json", "--days", "1", "4471")[0]
    assert out["outcome"] == "no-match" and out["hits"] == []


def test_on_a_terminal_the_id_is_typed(
    filled: HS, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import histstore.porcelain.cli as cli

    monkeypatch.setattr(cli, "_on_terminal", lambda: True)
    before = snapshot(store_path)
    r = filled("forget", SID_A, input="sess-aaaa\n")  # not the exact id
    assert r.exit_code == 2 and "unconfirmed-target" in r.stderr
    assert f"forget session {SID_A}: 2 turns of session {SID_A}" in r.stderr
    assert "first prompt: the customer's invoice number is 4471 ocelot" in r.stderr
    assert snapshot(store_path) == before
    r = filled("forget", SID_A, input=f"{SID_A}\n")
    assert r.exit_code == 0 and f"forgot session {SID_A}" in r.stdout


def test_a_whole_turn_id_is_found_without_reading_every_session(
    filled: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forget and unforget of a whole turn id find its session through the index,
    or, once it is forgotten (no longer in the index), through its marker: no
    scan of every session (at 1M turns that scan took seconds)."""

    def no_scan(self: Store) -> Any:
        raise AssertionError("every session was read")

    with monkeypatch.context() as m:
        m.setattr(Store, "sessions", no_scan)
        assert filled("forget", "turn-0001", "--confirm", "turn-0001").exit_code == 0
        r = filled("unforget", "turn-0001", "--confirm", "turn-0001")
        assert r.exit_code == 0 and "back in recall" in r.stdout
    assert recall_ids(filled) == ["turn-0001", "turn-0002", "turn-0003"]
    # a turn id in two sessions, one of them forgotten whole: ambiguous
    filled("import", str(write_turns(tmp_path / "dup.jsonl", [turn_record(1, session_id=SID_B)])))
    filled("forget", SID_B, "--confirm", SID_B)
    r = filled("forget", "turn-0001", "--confirm", "turn-0001")
    assert r.exit_code == 2 and "ambiguous" in r.stderr


def _index_terms(store_path: Path, word: str) -> list[str]:
    """Where ``word`` is still a term of any generation's files (deleted
    documents included: a segment's term dictionary keeps them until merged),
    read by a fresh reader."""
    import tantivy

    from histstore.recall.fields import FIELDS

    found = []
    for gen in sorted((store_path / "index").glob("gen-*")):
        if gen.is_dir():
            searcher = tantivy.Index.open(str(gen)).searcher()
            found += [f"{gen.name}:{f}" for f in FIELDS if searcher.terms_with_prefix(f, word)]
    return found


def test_forget_unforget_undo_are_commits_and_gc_purges_the_text(
    filled: HS, store_path: Path
) -> None:
    """Each marker is a delete (or re-add) and a commit in the generation that
    serves, done before the command reports; the excluded text leaves the
    index files at the next hs gc (issue 12, point 5)."""

    def status() -> dict[str, Any]:
        return filled.json_lines("plumbing", "index-status")[0]

    before = status()
    gen = before["generation"]
    r = filled("forget", "turn-0001", "--confirm", "turn-0001", "--exclude")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout.splitlines()[-1] == (
        f"  index updated: generation {gen}; recall no longer finds it"
    )
    st = status()
    assert (st["generation"], st["rows"], st["deleted"], st["stale"]) == (
        gen,
        before["rows"] - 1,
        1,
        False,
    )
    assert recall_ids(filled) == ["turn-0002", "turn-0003"]
    r = filled("unforget", "turn-0001", "--confirm", "turn-0001")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout.splitlines()[-1] == f"  index updated: generation {gen}"
    st = status()
    assert (st["generation"], st["rows"], st["stale"]) == (gen, before["rows"], False)
    assert recall_ids(filled) == ["turn-0001", "turn-0002", "turn-0003"]
    r = filled("undo")  # of the unforget: excluded again
    assert r.exit_code == 0 and r.stderr == "" and r.stdout.startswith("undid ")
    st = status()
    assert (st["generation"], st["rows"], st["stale"]) == (gen, before["rows"] - 1, False)
    assert st["deleted"] >= 1
    assert recall_ids(filled) == ["turn-0002", "turn-0003"]
    # deleted, not gone: the segments still hold the excluded turn's terms
    assert _index_terms(store_path, "4471")
    r = filled("gc")
    assert r.exit_code == 0 and r.stderr == ""
    assert _index_terms(store_path, "4471") == []
    st = status()
    assert st["deleted"] == 0 and st["rows"] == before["rows"] - 1
    assert st["generations"] == [st["generation"]]
    assert recall_ids(filled) == ["turn-0002", "turn-0003"]
    assert _index_terms(store_path, "ocelot")  # what is still visible stays searchable
