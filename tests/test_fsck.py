"""fsck finds each kind of damage, tolerates what a crash leaves, and repairs it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from helpers import HS, turn_record

from histstore.ops.fsck import fsck
from histstore.store.packs import Pack
from histstore.store.store import Store


def setup(hs: HS) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    hs("record", input=json.dumps(turn_record(2)))


def findings(store_path: Path) -> list[tuple[str, str, str]]:
    with Store.open(store_path) as s:
        return [(f.severity, f.check, f.message) for f in fsck(s)]


def test_clean_store(hs: HS, store_path: Path) -> None:
    setup(hs)
    assert findings(store_path) == []
    r = hs("fsck")
    assert r.exit_code == 0 and r.stdout.strip() == "ok: the store is consistent"


def test_missing_object_is_an_error(hs: HS, store_path: Path) -> None:
    setup(hs)
    turn_obj = hs.json_lines("log", "--json")[0]["object"]
    (store_path / "objects" / turn_obj[:2] / turn_obj[2:]).unlink()
    got = findings(store_path)
    assert any(s == "error" and "missing turn" in m for s, _, m in got)
    r = hs("fsck")
    assert r.exit_code == 7 and "error" in r.stderr


def test_torn_refs_log_line_is_tolerated_and_reported(hs: HS, store_path: Path) -> None:
    setup(hs)
    with open(store_path / "refs.log", "ab") as f:
        f.write(b'{"op": "abc", "time": "2026-0')
    got = findings(store_path)
    assert [(s, c) for s, c, _ in got] == [("warning", "refs-log")]
    r = hs("fsck")
    assert r.exit_code == 0 and "torn" in r.stdout
    # the next operation closes the torn line; it stays a tolerated warning
    hs("record", input=json.dumps(turn_record(3)))
    got = findings(store_path)
    assert [(s, c) for s, c, _ in got] == [("warning", "refs-log")]
    assert len(hs.json_lines("log", "--json")) == 3


def test_damaged_log_entry_breaks_the_chain(hs: HS, store_path: Path) -> None:
    setup(hs)
    lines = (store_path / "refs.log").read_text().splitlines()
    lines[0] = lines[0][:20]  # a complete entry damaged in the middle of the log
    (store_path / "refs.log").write_text("\n".join(lines) + "\n")
    got = findings(store_path)
    assert any(s == "error" and "does not follow" in m for s, _, m in got)


def test_ref_moved_behind_the_logs_back_is_an_error(hs: HS, store_path: Path) -> None:
    setup(hs)
    first = hs.json_lines("plumbing", "refs-log")[0]["changes"][0]["new"]
    (store_path / "refs" / "sessions" / "sess-a").write_text(first + "\n")
    got = findings(store_path)
    assert any(s == "error" and "refs log says" in m for s, _, m in got)


def test_interrupted_operation_is_a_warning_and_repair_completes_it(
    hs: HS, store_path: Path
) -> None:
    setup(hs)
    ops = hs.json_lines("plumbing", "refs-log")
    change = ops[-1]["changes"][0]
    # a crash after the log entry, before the ref moved
    (store_path / "refs" / "sessions" / "sess-a").write_text(change["old"] + "\n")
    (store_path / "refs.applied").write_text(ops[0]["op"] + "\n")
    got = findings(store_path)
    assert [(s, c) for s, c, _ in got] == [("warning", "refs-log")]
    r = hs("fsck", "--repair")
    assert r.exit_code == 0 and "completed an operation" in r.stdout
    assert findings(store_path) == []
    assert (store_path / "refs" / "sessions" / "sess-a").read_text().strip() == change["new"]


def test_leftover_pack_of_a_killed_import(hs: HS, store_path: Path) -> None:
    setup(hs)
    (store_path / "objects" / "pack" / "tmp-999999-abcdef.pack").write_bytes(b"HSPACK\x00\x01x")
    got = findings(store_path)
    assert [(s, c) for s, c, _ in got] == [("warning", "pack")]
    r = hs("fsck", "--repair")
    assert r.exit_code == 0
    assert not list((store_path / "objects" / "pack").glob("tmp-*"))


def test_a_leftover_pack_named_with_no_possible_pid_is_one_too(hs: HS, store_path: Path) -> None:
    """tmp-<pid>-… with a number no process can have (it crashed os.kill)."""
    setup(hs)
    (store_path / "objects" / "pack" / "tmp-3000000000-abcdef.pack").write_bytes(b"HSPACK")
    assert [(s, c) for s, c, _ in findings(store_path)] == [("warning", "pack")]
    r = hs("fsck", "--repair")
    assert r.exit_code == 0 and "removed an unfinished pack" in r.stdout
    assert not list((store_path / "objects" / "pack").glob("tmp-*"))


def test_broken_pack_index_is_a_finding_not_a_crash(
    hs: HS, store_path: Path, tmp_path: Path
) -> None:
    hs("init")
    recs = [turn_record(i) for i in range(1, 60)]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    hs("import", str(path))
    idx = next((store_path / "objects" / "pack").glob("pack-*.idx"))
    idx.write_bytes(b"")
    r = hs("fsck")
    assert r.exit_code == 7
    assert "pack index is truncated" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_junk_pack_without_index_is_a_warning_repair_keeps_it(hs: HS, store_path: Path) -> None:
    setup(hs)
    (store_path / "objects" / "pack").mkdir(exist_ok=True)
    orphan = store_path / "objects" / "pack" / "pack-abc.pack"
    orphan.write_bytes(b"HSPACK\x00\x01")
    # a young one may be an import between its pack and its index: left alone
    assert findings(store_path) == []
    os.utime(orphan, (time.time() - 7200, time.time() - 7200))
    assert [(s, c) for s, c, _ in findings(store_path)] == [("warning", "pack")]
    r = hs("fsck", "--repair")
    assert r.exit_code == 0, r.stderr
    assert "holds no readable object (not a pack of this format); left in place" in r.stdout
    assert orphan.exists(), "repair never deletes a pack"


def _imported_pack(hs: HS, store_path: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    hs("init")
    recs = [turn_record(i) for i in range(1, 41)]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert hs("import", str(path)).exit_code == 0
    turns = [t["object"] for t in hs.json_lines("log", "--json", "-n", "100")]
    assert len(turns) == 40
    (idx,) = (store_path / "objects" / "pack").glob("pack-*.idx")
    return idx, turns


def test_repair_reindexes_a_pack_whose_index_went_missing(
    hs: HS, store_path: Path, tmp_path: Path
) -> None:
    """Format 1 deleted such a pack ("removed a pack with no index") though refs
    reached its objects: history gone even once the index was put back."""
    idx, turns = _imported_pack(hs, store_path, tmp_path)
    saved = idx.read_bytes()
    idx.rename(tmp_path / "away.idx")
    pack = idx.with_suffix(".pack")
    os.utime(pack, (time.time() - 7200, time.time() - 7200))
    r = hs("fsck")
    assert r.exit_code == 7 and "missing" in r.stderr
    r = hs("fsck", "--repair")
    assert "rebuilt its index from its frames" in r.stdout, r.stdout + r.stderr
    assert pack.exists()
    assert idx.read_bytes() == saved, "the rebuilt index is the one that was lost"
    r = hs("fsck")
    assert r.exit_code == 0 and r.stdout.strip() == "ok: the store is consistent"
    assert [t["object"] for t in hs.json_lines("log", "--json", "-n", "100")] == turns


def test_repair_rebuilds_a_damaged_index_and_keeps_the_pack(
    hs: HS, store_path: Path, tmp_path: Path
) -> None:
    idx, turns = _imported_pack(hs, store_path, tmp_path)
    data = bytearray(idx.read_bytes())
    data[len(data) // 2] ^= 0xFF
    idx.write_bytes(bytes(data))
    r = hs("fsck")
    assert r.exit_code == 7 and "pack index checksum mismatch" in r.stderr
    r = hs("fsck", "--repair")
    assert "rebuilt its index" in r.stdout
    assert hs("fsck").exit_code == 0
    assert len(hs.json_lines("log", "--json", "-n", "100")) == len(turns)


def test_a_pack_whose_file_is_gone_is_reported_with_what_it_held(
    hs: HS, store_path: Path, tmp_path: Path
) -> None:
    idx, _ = _imported_pack(hs, store_path, tmp_path)
    idx.with_suffix(".pack").unlink()
    r = hs("fsck", "--repair")
    assert r.exit_code == 7
    assert "its pack file is missing; it held " in r.stderr
    assert idx.exists(), "the index is what tells what was lost: kept"


def test_repair_walks_past_a_damaged_frame(hs: HS, store_path: Path, tmp_path: Path) -> None:
    idx, _ = _imported_pack(hs, store_path, tmp_path)
    pack = idx.with_suffix(".pack")
    held = Pack(idx).n
    idx.unlink()
    data = bytearray(pack.read_bytes())
    data[len(data) // 2] ^= 0xFF
    pack.write_bytes(bytes(data))
    r = hs("fsck", "--repair")
    assert "rebuilt its index from its frames" in r.stdout
    assert "held no whole object" in r.stdout
    # every other object is back under a new name; the damaged one is missing
    (new_idx,) = (store_path / "objects" / "pack").glob("pack-*.idx")
    assert new_idx != idx and Pack(new_idx).n == held - 1
    r = hs("fsck")
    assert r.exit_code == 7 and "missing" in r.stderr


def test_malformed_session_object_is_found(hs: HS, store_path: Path) -> None:
    hs("init")
    bad = hs.json_lines(
        "plumbing",
        "hash-object",
        "-w",
        "-t",
        "session",
        "-",
        input='{"session_id": "x", "turns": []}',
    )[0]["id"]
    r = hs("plumbing", "update-ref", "sessions/x", bad)
    assert r.exit_code == 2 and "not a session revision" in r.stderr
    got = findings(store_path)
    assert any(s == "error" and "not a session revision" in m for s, _, m in got)


def test_garbage_in_a_ref_is_corruption(hs: HS, store_path: Path) -> None:
    setup(hs)
    (store_path / "refs" / "sessions" / "sess-a").write_bytes(b"\xff\xfegarbage\n")
    # hs log reads the summary (it follows the refs log, not each ref file);
    # what reads the ref finds the damage
    r = hs("log", "--session", "sess-a")
    assert r.exit_code == 7 and "does not hold an object id" in r.stderr
    r = hs("fsck")
    assert r.exit_code == 7 and "Traceback" not in r.stderr


def test_a_missing_turn_object_is_damage_with_the_fsck_hint(
    hs: HS, store_path: Path, tmp_path: Path
) -> None:
    """A pack index gone missing: hs log says the store is damaged (exit 7)
    and how to mend it, not "no object" (exit 4)."""
    idx, _ = _imported_pack(hs, store_path, tmp_path)
    idx.rename(tmp_path / "away.idx")
    (idx.parent / "multi-pack-index").unlink(missing_ok=True)
    r = hs("log")
    assert r.exit_code == 7 and r.stdout == ""
    assert "is missing" in r.stderr and "hs fsck" in r.stderr and len(r.stderr.splitlines()) == 1
