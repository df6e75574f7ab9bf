"""hs gc: repacks, removes only what nothing reaches, keeps readers reading."""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from helpers import HS, turn_record, write_turns

from histstore.ops import gc as gcmod
from histstore.ops import gc_plan
from histstore.ops.fsck import fsck
from histstore.store.codec import hash_object
from histstore.store.objectstore import DiskObjectStore
from histstore.store.store import Store

OLD = time.time() - 10 * 86400  # well past the grace period


def _set_gc(store_path: Path, **values: Any) -> None:
    path = store_path / "config.toml"
    config = tomllib.loads(path.read_text())
    config.setdefault("gc", {}).update(values)
    path.write_text(tomli_w.dumps(config))


def _age(path: Path) -> None:
    os.utime(path, (OLD, OLD))


def _age_all(store_path: Path) -> None:
    for dirpath, _, files in os.walk(store_path / "objects"):
        for f in files:
            _age(Path(dirpath) / f)


def _files(store_path: Path) -> dict[str, int]:
    out = {}
    for dirpath, _, files in os.walk(store_path):
        for f in files:
            p = Path(dirpath) / f
            out[str(p.relative_to(store_path))] = p.stat().st_mtime_ns
    return out


def _files_named(store_path: Path) -> set[str]:
    return {Path(f).name for f in _files(store_path)}


def _log(hs: HS) -> list[Any]:
    return hs.json_lines("log", "--json", "-n", "1000")


def _clean(store_path: Path) -> None:
    with Store.open(store_path) as s:
        assert [f for f in fsck(s) if f.severity == "error"] == []


def _imported(hs: HS, tmp_path: Path, n: int = 60, name: str = "a", sessions: int = 4) -> Path:
    recs = [
        turn_record(i, session_id=f"{name}{i % sessions}", asked=f"{name} question {i} " * 8)
        for i in range(1, n + 1)
    ]
    path = write_turns(tmp_path / f"{name}.jsonl", recs)
    r = hs("import", str(path))
    assert r.exit_code == 0, r.stderr
    return path


def test_gc_on_an_empty_store(hs: HS, store_path: Path) -> None:
    hs("init")
    r = hs("gc")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("freed 0 B\n  objects: 0 B -> 0 B\n")
    assert r.stderr == ""


def test_gc_packs_loose_objects_and_every_read_is_the_same(
    hs: HS, store_path: Path, tmp_path: Path
) -> None:
    hs("init")
    for i in range(1, 9):
        assert hs("record", input=json.dumps(turn_record(i))).exit_code == 0
    before = _log(hs)
    shown = hs("show", "--full", before[0]["turn_id"]).stdout
    objects = DiskObjectStore(store_path / "objects")
    assert len(list(objects.iter_loose())) > 8
    r = hs("gc")
    assert r.exit_code == 0, r.stderr
    assert "loose objects packed" in r.stdout
    assert list(objects.iter_loose()) == []
    assert len(objects.packs()) == 1
    assert _log(hs) == before
    assert hs("show", "--full", before[0]["turn_id"]).stdout == shown
    assert hs("recall", "--everywhere", "login_user").exit_code == 0
    _clean(store_path)


def test_full_writes_its_pack_harder_than_a_daily_gc(
    hs: HS, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daily gc compresses at repack.LEVEL with the usual dictionary;
    --full (every pack rewritten) at repack.FULL_LEVEL with a dictionary of
    up to repack.FULL_DICT_SIZE, and what it wrote reads back the same."""
    from histstore.store import repack

    asked: list[dict[str, Any]] = []
    real = repack.write_pack

    def spy(*a: Any, **k: Any) -> Any:
        asked.append({n: k[n] for n in ("level", "dict_size")})
        return real(*a, **k)

    monkeypatch.setattr(repack, "write_pack", spy)
    hs("init")
    for i in range(1, 5):
        assert hs("record", input=json.dumps(turn_record(i))).exit_code == 0
    before = _log(hs)
    assert hs("gc").exit_code == 0
    assert hs("record", input=json.dumps(turn_record(5))).exit_code == 0
    assert hs("gc", "--full").exit_code == 0
    assert asked == [
        {"level": repack.LEVEL, "dict_size": repack.DICT_SIZE},
        {"level": repack.FULL_LEVEL, "dict_size": repack.FULL_DICT_SIZE},
    ]
    assert repack.FULL_LEVEL > repack.LEVEL and repack.FULL_DICT_SIZE > repack.DICT_SIZE
    assert _log(hs)[1:] == before
    _clean(store_path)


def test_unreachable_objects_go_once_past_the_grace_period(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    stray = hs.json_lines("plumbing", "hash-object", "-w", "-t", "blob", "-", input="stray")
    stray_id = stray[0]["id"]
    young = hs.json_lines("plumbing", "hash-object", "-w", "-t", "blob", "-", input="young")
    young_id = young[0]["id"]
    objects = DiskObjectStore(store_path / "objects")
    _age_all(store_path)
    os.utime(objects._loose_path(young_id))  # written just now: a writer may name it next
    r = hs("gc")
    assert r.exit_code == 0, r.stderr
    assert "1 object nothing reaches were removed" in r.stdout
    objects = DiskObjectStore(store_path / "objects")
    assert not objects.has(stray_id)
    assert objects.has(young_id)
    assert len(_log(hs)) == 1
    _clean(store_path)


def test_dry_run_says_what_it_would_free_and_changes_nothing(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    hs("plumbing", "hash-object", "-w", "-t", "blob", "-", input="stray " * 500)
    _age_all(store_path)
    files = _files(store_path)
    r = hs("gc", "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("would free ")
    assert "1 object nothing reaches would be removed" in r.stdout
    assert _files(store_path) == files
    r = hs("gc", "-n", "--json")
    got = json.loads(r.stdout)
    assert got["dry_run"] is True and got["pruned"] == 1
    assert _files(store_path) == files
    # the estimate counts the new pack's index (on a small store most of it)
    done = json.loads(hs("gc", "--json").stdout)
    assert abs(got["bytes_after"] - done["bytes_after"]) < 0.1 * done["bytes_after"], (got, done)


def test_an_undone_import_stays_for_the_retention_window(
    hs: HS, store_path: Path, tmp_path: Path
) -> None:
    hs("init")
    _imported(hs, tmp_path, 40)
    op = hs.json_lines("ops", "--json")[-1]["op"]
    turn = _log(hs)[0]["object"]
    assert hs("undo", op).exit_code == 0
    assert _log(hs) == []
    _age_all(store_path)
    assert hs("gc").exit_code == 0
    objects = DiskObjectStore(store_path / "objects")
    assert objects.has(turn), "the refs log inside the window reaches it: undo can redo it"
    # past the window (a day later, kept for none), nothing reaches it
    later = datetime.now(UTC) + timedelta(days=1)
    _set_gc(store_path, retention_days=0)
    with Store.open(store_path) as s:
        rep = gcmod.gc(s, now=later)
        assert rep.pruned > 40
        assert not s.objects.has(turn)
        assert s.objects.count() == 0
    _clean(store_path)  # the log's older entries name what gc removed: no error
    redo = hs.json_lines("ops", "--json")[0]["op"]  # newest first: the undo
    r = hs("undo", redo)
    assert r.exit_code == 2
    assert r.stderr.startswith(f"hs: error: cannot undo {redo}: it is older than gc's retention")
    assert _log(hs) == []


def test_a_reused_object_is_freshened_and_survives(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("plumbing", "hash-object", "-w", "-t", "blob", "-", input="shared bytes")
    _age_all(store_path)
    with Store.open(store_path) as s:
        # a writer that finds the object stored and will name it once it commits
        with s.objects.batch() as b:
            b.put("blob", b"shared bytes")
        rep = gcmod.gc(s)
        assert rep.pruned == 0
        assert s.objects.has(hash_object("blob", b"shared bytes"))


def test_an_object_freshened_during_gc_is_not_removed(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    stray = hs.json_lines("plumbing", "hash-object", "-w", "-t", "blob", "-", input="x")[0]["id"]
    _age_all(store_path)
    with Store.open(store_path) as s:
        objects = s.objects
        assert isinstance(objects, DiskObjectStore)

        def step(name: str) -> None:
            if name == "pack":  # after the plan: a writer outside the lock reuses it
                objects.freshen(stray)

        rep = gcmod.gc(s, step=step)
        assert rep.kept_fresh == [stray]
        assert objects.has(stray)


def _pack_names(store_path: Path) -> set[str]:
    return {p.name for p in (store_path / "objects" / "pack").glob("pack-*.pack")}


def test_gc_is_geometric_a_daily_run_leaves_the_big_pack(
    hs: HS, store_path: Path, tmp_path: Path
) -> None:
    hs("init")
    _imported(hs, tmp_path, 300, "big")
    assert hs("gc").exit_code == 0
    (big,) = _pack_names(store_path)
    for day in range(1, 6):
        _imported(hs, tmp_path, 10, f"day{day}")
        hs("record", input=json.dumps(turn_record(900 + day, session_id=f"rec{day}")))
        r = hs("gc", "--json")
        assert r.exit_code == 0, r.stderr
        # the big pack is never rewritten by a daily run; the rest stays a
        # progression (each pack at least twice the next smaller), so packs
        # stay few however many days go by
        assert big in _pack_names(store_path)
        sizes = sorted(p.stat().st_size for p in (store_path / "objects" / "pack").glob("*.pack"))
        assert all(b >= gc_plan.FACTOR * a for a, b in itertools.pairwise(sizes)), sizes
        # several packs: one multi-pack index over them all
        midx = DiskObjectStore(store_path / "objects").multi_pack_index()
        names = sorted(n.removesuffix(".pack") for n in _pack_names(store_path))
        assert len(names) > 1 and midx is not None and sorted(midx.packs) == names
    before = _log(hs)
    r = hs("gc", "--full", "--json")
    assert json.loads(r.stdout)["packs_after"] == 1
    # one pack left: its own index serves, the multi-pack index is gone
    assert not (store_path / "objects" / "pack" / "multi-pack-index").exists()
    assert _log(hs) == before
    _clean(store_path)


def test_geometric_split() -> None:
    assert gc_plan.geometric_split([], 0) == 0
    assert gc_plan.geometric_split([100], 10) == 0
    assert gc_plan.geometric_split([100], 60) == 1  # 60 + 100 is not half of nothing
    assert gc_plan.geometric_split([10, 20, 400], 1) == 0  # already a progression
    assert gc_plan.geometric_split([10, 15, 400], 1) == 2
    assert gc_plan.geometric_split([50, 60, 400, 1000], 5) == 2
    assert gc_plan.geometric_split([30, 400, 1000], 20) == 1  # the new pack joins the first
    assert gc_plan.geometric_split([1, 1, 1, 1], 1) == 4


def test_a_reader_in_a_loop_during_gc_never_fails(hs: HS, store_path: Path, tmp_path: Path) -> None:
    hs("init")
    _imported(hs, tmp_path, 80)
    ids = [t["object"] for t in _log(hs)]
    errors: list[BaseException] = []
    stop = threading.Event()
    reads = [0]

    def reader() -> None:
        with Store.open(store_path) as s:
            while not stop.is_set():
                try:
                    for i in ids:
                        s.get_json(i, "turn")
                        reads[0] += 1
                except BaseException as e:
                    errors.append(e)
                    return

    t = threading.Thread(target=reader)
    t.start()
    try:
        with Store.open(store_path) as s:
            for round_ in range(6):
                s.objects.put("blob", f"round {round_}".encode())
                _age_all(store_path)
                gcmod.gc(s, full=True)
    finally:
        stop.set()
        t.join()
    assert errors == []
    assert reads[0] > 0


def test_auto_runs_once_loose_objects_pass_the_threshold(hs: HS, store_path: Path) -> None:
    hs("init")
    _set_gc(store_path, auto_loose=256)
    r = hs("gc", "--auto", "--json")
    assert json.loads(r.stdout) == {"ran": False}
    # loose objects in the sampled fan-out folder: the estimate passes 256
    n = 0
    while not list((store_path / "objects").glob("17/*")):
        hs("plumbing", "hash-object", "-w", "-t", "blob", "-", input=f"filler {n}")
        n += 1
    r = hs("record", "--json", input=json.dumps(turn_record(1)))
    assert r.exit_code == 0, r.stderr
    auto = json.loads(r.stdout)["auto_gc"]
    assert auto is not None and auto["pruned"] == 0, "auto never prunes"
    assert list(DiskObjectStore(store_path / "objects").iter_loose()) == []
    _clean(store_path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gc", "--auto", "--full"], "hs: error: --auto takes neither --dry-run nor --full"),
        (["gc", "--auto", "-n"], "hs: error: --auto takes neither --dry-run nor --full"),
    ],
)
def test_gc_refuses_bad_arguments(hs: HS, store_path: Path, args: list[str], message: str) -> None:
    hs("init")
    files = _files(store_path)
    r = hs(*args)
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [message + "; hint: hs gc --auto"]
    assert _files(store_path) == files


def test_gc_refuses_a_bad_setting(hs: HS, store_path: Path) -> None:
    hs("init")
    _set_gc(store_path, retention_days="ninety")
    r = hs("gc")
    assert r.exit_code == 2
    assert "[gc] retention_days = 'ninety' is not a whole number" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    ("key", "value"),
    [("retention_days", 1_000_000), ("retention_days", 10**20), ("grace_seconds", 10**20)],
)
def test_gc_refuses_a_window_before_year_one(
    hs: HS, store_path: Path, key: str, value: int
) -> None:
    """It overflowed a date: an internal error, exit 1."""
    hs("init")
    _set_gc(store_path, **{key: value})
    files = _files(store_path)
    for args in (["gc", "--dry-run"], ["gc"]):
        r = hs(*args)
        assert (r.exit_code, r.stdout) == (2, ""), args
        assert r.stderr == (
            f"hs: error: config.toml: [gc] {key} = {value} reaches before year 1; "
            f"hint: e.g. {key} = {90 if key == 'retention_days' else 3600}\n"
        )
    assert _files(store_path) == files


def test_gc_stops_on_an_unreadable_object_and_removes_nothing(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    hs("plumbing", "hash-object", "-w", "-t", "blob", "-", input="stray")
    turn = _log(hs)[0]["object"]
    objects = DiskObjectStore(store_path / "objects")
    objects._loose_path(turn).write_bytes(b"garbage")
    _age_all(store_path)
    files = _files(store_path)
    r = hs("gc")
    assert r.exit_code == 7
    assert f"gc stopped: object {turn} cannot be read" in r.stderr
    assert _files(store_path) == files


@pytest.mark.parametrize("where", ["loose", "pack", "nowhere"])
def test_a_damaged_copy_in_a_kept_pack_is_healed_never_left_alone(
    hs: HS, store_path: Path, tmp_path: Path, where: str
) -> None:
    """A blob gc never reads (it names nothing) held twice: whole in a loose
    file or a small pack, damaged in the big pack gc would keep. The whole
    copy is all that is left of it: reads fall back on it, and gc rewrites
    the big pack with it instead of removing it. Both copies damaged: gc
    stops (exit 7) and removes nothing."""
    hs("init")
    _imported(hs, tmp_path)
    raw = {"raw": ['{"the": "record as the agent wrote it"}']}
    assert hs("record", input=json.dumps(turn_record(99, **raw))).exit_code == 0
    objects = DiskObjectStore(store_path / "objects")
    blob = next(i for i in objects.iter_ids() if objects.get(i)[0] == "blob")
    saved = objects.codec.encode("blob", objects.get(blob)[1])[1]  # its loose file
    assert hs("gc", "--full").exit_code == 0
    (big,) = objects.packs()
    objects._loose_path(blob).parent.mkdir(parents=True, exist_ok=True)
    objects._loose_path(blob).write_bytes(saved)
    if where == "nowhere":  # the loose copy damaged too
        objects._loose_path(blob).write_bytes(saved[:-3] + bytes(3))
    if where == "pack":  # the whole copy in a small pack, which a daily gc rolls up
        for i in range(40):
            hs("plumbing", "hash-object", "-w", "-t", "blob", "-", input=f"filler {i} " * 50)
        fresh = DiskObjectStore(store_path / "objects")
        gcmod.repack.write_pack(fresh, set(fresh.iter_loose()))
        gcmod.repack.remove_loose(fresh, list(fresh.iter_loose()))
        gcmod.repack.write_midx(fresh, fresh.packs())
    off, length = big.entry(bytes.fromhex(blob))  # type: ignore[misc]
    data = bytearray(big.pack_path.read_bytes())
    data[off + length // 2] ^= 0xFF
    big.pack_path.write_bytes(bytes(data))
    _age_all(store_path)  # no file is fresh: the blob is reached, never read
    files = _files(store_path)
    r = hs("gc")
    if where == "nowhere":
        assert (r.exit_code, r.stdout) == (7, ""), r.stderr
        assert r.stderr.startswith(f"hs: error: gc stopped: object {blob} cannot be read (")
        assert r.stderr.endswith("; gc removed nothing\n")
        assert _files(store_path) == files
        return
    assert r.exit_code == 0, r.stderr
    assert big.pack_path.name not in _files_named(store_path)  # rewritten away
    _clean(store_path)
    r = hs("plumbing", "cat-object", "--raw", blob)
    assert r.exit_code == 0 and r.stdout_bytes == objects.codec.decode(blob, saved, None)[1]


def test_a_forgotten_turn_stays_hidden_once_gc_packed_the_refs(hs: HS, store_path: Path) -> None:
    """gc packs loose refs; overlay and memory refs must still be found."""
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    hs("record", input=json.dumps(turn_record(2, asked="the secret plan")))
    assert hs("forget", "turn-0002", "--confirm", "turn-0002").exit_code == 0
    assert "the secret plan" not in hs("log").stdout
    r = hs("gc")
    assert "loose refs packed" in r.stdout
    assert not list((store_path / "refs" / "overlay").glob("*"))
    assert "the secret plan" not in hs("log").stdout
    assert "the secret plan" not in hs("recall", "--everywhere", "secret").stdout
    assert len(hs.json_lines("forgotten", "--json")) == 1


def test_a_pack_compressed_on_several_threads_is_the_one_a_single_thread_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Frames are compressed side by side and written in order: the same
    objects make the same pack, byte for byte, with one thread or several
    (and batches cut across them)."""
    from histstore.store import repack

    packs = []
    for threads, batch, batch_bytes in ((1, 1000, 32 << 20), (3, 7, 32 << 20), (2, 1000, 300)):
        monkeypatch.setattr(repack, "THREADS", threads)
        monkeypatch.setattr(repack, "BATCH", batch)
        monkeypatch.setattr(repack, "BATCH_BYTES", batch_bytes)
        objects = DiskObjectStore(tmp_path / f"objects-{threads}-{batch}-{batch_bytes}")
        ids = [objects.put("blob", f"object {i} ".encode() * (i % 13 + 1)) for i in range(100)]
        written = repack.write_pack(objects, ids)
        assert written is not None and written.objects == 100
        pack = objects.pack_dir / f"{written.name}.pack"
        packs.append(pack.read_bytes())
        assert all(objects.get(i)[0] == "blob" for i in ids)
    assert packs[0] == packs[1] == packs[2]


def test_a_pack_asks_for_a_dictionary_of_a_64th_of_its_sample_within_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dictionary asked of the trainer is a 64th of the sampled bytes, no
    less than DICT_SIZE and no more than the ``dict_size`` given (gc --full:
    FULL_DICT_SIZE); the frames are compressed at the level given. (The
    bounds are scaled down here: real ones need megabytes of objects.)"""
    from histstore.store import repack

    monkeypatch.setattr(repack, "DICT_SIZE", 512)
    asked: list[int] = []
    levels: list[int] = []
    real_train, real_compressor = repack.train, repack._compressor
    monkeypatch.setattr(repack, "train", lambda s, size: asked.append(size) or real_train(s, size))
    monkeypatch.setattr(
        repack, "_compressor", lambda lv, d: levels.append(lv) or real_compressor(lv, d)
    )
    objects = DiskObjectStore(tmp_path / "objects")
    ids = [
        objects.put("blob", f"record {i}: {'x' * (100 + i % 200)} {i * 7919}".encode())
        for i in range(400)
    ]
    total = sum(len(b"blob %d\0" % len(objects.get(i)[1])) + len(objects.get(i)[1]) for i in ids)
    assert 600 < total // 64 < 4096
    for dict_size, want in ((4096, total // 64), (600, 600), (100, 512)):
        asked.clear()
        repack.write_pack(objects, ids, level=repack.FULL_LEVEL, dict_size=dict_size)
        assert asked == [want], (dict_size, total)
    assert levels == [repack.FULL_LEVEL] * 3
