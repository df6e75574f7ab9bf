"""One contract, run against every ObjectStore implementation (disk and memory)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from histstore.errors import Ambiguous, BadInput, CorruptObject, NotFound
from histstore.store import packs, repack
from histstore.store.check import check_packs
from histstore.store.codec import hash_object
from histstore.store.objectstore import DiskObjectStore, MemoryObjectStore, ObjectStore


@pytest.fixture(params=["disk", "memory"])
def objects(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    if request.param == "disk":
        s = DiskObjectStore(tmp_path / "objects")
        yield s
        s.close()
    else:
        yield MemoryObjectStore()


class TestContract:
    def test_put_get_roundtrip(self, objects: ObjectStore) -> None:
        oid = objects.put("blob", b"hello")
        assert oid == hash_object("blob", b"hello")
        assert objects.has(oid)
        assert objects.get(oid) == ("blob", b"hello")

    def test_put_is_write_once(self, objects: ObjectStore) -> None:
        a = objects.put("turn", b"{}")
        b = objects.put("turn", b"{}")
        assert a == b
        assert list(objects.iter_ids()) == [a]

    def test_missing_is_not_found(self, objects: ObjectStore) -> None:
        with pytest.raises(NotFound):
            objects.get(hash_object("blob", b"nope"))
        assert not objects.has(hash_object("blob", b"nope"))

    def test_batch_commit_makes_objects_visible(self, objects: ObjectStore) -> None:
        with objects.batch() as b:
            ids = [b.put("blob", f"obj {i}".encode()) for i in range(100)]
            b.put("blob", b"obj 0")  # a duplicate within the batch costs nothing
            assert b.count == 100
        for i, oid in enumerate(ids):
            assert objects.get(oid) == ("blob", f"obj {i}".encode())
        assert sorted(objects.iter_ids()) == sorted(ids)

    def test_checkpoint_makes_objects_readable_and_goes_on(self, objects: ObjectStore) -> None:
        with objects.batch() as b:
            few = b.put("blob", b"one of few")
            b.checkpoint()
            assert objects.get(few) == ("blob", b"one of few")
            many = [b.put("blob", f"many {i}".encode()) for i in range(100)]
            b.checkpoint()
            assert all(objects.has(i) for i in many)
            later = b.put("blob", b"after the checkpoints")
            assert b.put("blob", b"one of few") == few
            assert b.count == 102
        assert objects.get(later) == ("blob", b"after the checkpoints")
        assert objects.count() == 102

    def test_batch_skips_objects_already_stored(self, objects: ObjectStore) -> None:
        objects.put("blob", b"old")
        with objects.batch() as b:
            b.put("blob", b"old")
            b.put("blob", b"new")
            assert b.count == 1

    def test_batch_abort_writes_nothing(self, objects: ObjectStore) -> None:
        with pytest.raises(RuntimeError), objects.batch() as b:
            for i in range(50):
                b.put("blob", f"x{i}".encode())
            raise RuntimeError("stop")
        assert list(objects.iter_ids()) == []

    def test_prefix_resolution(self, objects: ObjectStore) -> None:
        with objects.batch() as b:
            ids = [b.put("blob", str(i).encode()) for i in range(300)]
        target = ids[7]
        assert objects.resolve_prefix(target[:12]) == target
        assert objects.resolve_prefix(target.upper()[:12]) == target
        with pytest.raises(BadInput):
            objects.resolve_prefix("xyz!")
        with pytest.raises(NotFound):
            objects.resolve_prefix("0" * 64)
        # with 300 objects some 4-digit... 1-hex-digit prefixes are shared
        firsts: dict[str, int] = {}
        for i in ids:
            firsts[i[:4]] = firsts.get(i[:4], 0) + 1
        shared = [p for p, n in firsts.items() if n > 1]
        if shared:
            with pytest.raises(Ambiguous):
                objects.resolve_prefix(shared[0])


def test_disk_batch_of_many_objects_is_one_pack(tmp_path: Path) -> None:
    s = DiskObjectStore(tmp_path / "objects")
    with s.batch() as b:
        for i in range(1000):
            b.put("blob", f"object number {i}".encode())
    packs = list((tmp_path / "objects" / "pack").glob("pack-*.pack"))
    assert len(packs) == 1
    assert len(list((tmp_path / "objects" / "pack").glob("pack-*.idx"))) == 1
    assert not list(s.iter_loose())
    # another process (a fresh instance) finds every object through the index
    t = DiskObjectStore(tmp_path / "objects")
    assert t.count() == 1000
    assert t.get(hash_object("blob", b"object number 999")) == ("blob", b"object number 999")


def test_disk_small_batch_is_loose(tmp_path: Path) -> None:
    s = DiskObjectStore(tmp_path / "objects")
    with s.batch() as b:
        b.put("blob", b"one")
        b.put("blob", b"two")
    assert not list((tmp_path / "objects" / "pack").glob("*"))
    assert len(list(s.iter_loose())) == 2


def test_disk_flipped_byte_in_loose_object_is_corrupt(tmp_path: Path) -> None:
    s = DiskObjectStore(tmp_path / "objects")
    oid = s.put("blob", b"precious history " * 20)
    path = tmp_path / "objects" / oid[:2] / oid[2:]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptObject) as e:
        s.get(oid)
    assert oid in str(e.value)


def test_disk_flipped_byte_in_pack_is_corrupt(tmp_path: Path) -> None:
    s = DiskObjectStore(tmp_path / "objects")
    with s.batch() as b:
        ids = [b.put("blob", f"payload {i} ".encode() * 30) for i in range(100)]
    s.close()
    pack = next((tmp_path / "objects" / "pack").glob("pack-*.pack"))
    data = bytearray(pack.read_bytes())
    data[len(data) // 2] ^= 0xFF
    pack.write_bytes(bytes(data))
    t = DiskObjectStore(tmp_path / "objects")
    bad = []
    for oid in ids:
        try:
            t.get(oid)
        except CorruptObject as e:
            assert e.object_id == oid
            bad.append(oid)
    assert len(bad) == 1


def test_unfinished_pack_is_invisible(tmp_path: Path) -> None:
    """A pack without its index (an import killed before commit) is never read."""
    s = DiskObjectStore(tmp_path / "objects")
    b = s.batch()
    for i in range(100):
        b.put("blob", f"x{i}".encode())
    # no commit: the temp pack exists but no index points at it
    t = DiskObjectStore(tmp_path / "objects")
    assert t.count() == 0
    b.abort()
    assert not list((tmp_path / "objects" / "pack").glob("*"))


def _turnish(i: int) -> bytes:
    """Records alike the way turn records are: same fields, other values."""
    return (
        f'{{"asked":"please fix the failing test number {i} in tests/test_{i % 7}.py",'
        f'"steps":[{{"tool":"Bash","input":{{"command":"pytest -q tests/test_{i % 7}.py"}}}}],'
        f'"answered":"done: test {i} passes now","model":"a-model","turn":"t{i}"}}'
    ).encode()


def _dict_pack(tmp_path: Path, n: int = 400) -> tuple[DiskObjectStore, list[str]]:
    s = DiskObjectStore(tmp_path / "objects")
    with s.batch() as b:
        ids = [b.put("turn", _turnish(i)) for i in range(n)]
    written = repack.write_pack(s, ids)
    assert written is not None and written.objects == n
    for p in s.packs():
        if p.name != written.name:
            repack.remove_pack(p)
    return DiskObjectStore(tmp_path / "objects"), ids


def test_repacked_pack_shares_a_dictionary_and_reads_back(tmp_path: Path) -> None:
    s, ids = _dict_pack(tmp_path)
    (pack,) = s.packs()
    assert pack.dictionary, "400 alike records train a dictionary"
    for i, oid in enumerate(ids):
        assert s.get(oid) == ("turn", _turnish(i))
    # the dictionary pays for itself: frames are smaller than level-3 frames alone
    plain = DiskObjectStore(tmp_path / "plain")
    with plain.batch() as b:
        for i in range(400):
            b.put("turn", _turnish(i))
    (plain_pack,) = plain.packs()
    frames = sum(length for _, _, length in pack.entries())
    plain_frames = sum(length for _, _, length in plain_pack.entries())
    assert frames < plain_frames / 2


def test_few_objects_get_no_dictionary(tmp_path: Path) -> None:
    s = DiskObjectStore(tmp_path / "objects")
    ids = [s.put("blob", f"small {i}".encode()) for i in range(5)]
    written = repack.write_pack(s, ids)
    assert written is not None
    (pack,) = s.packs()
    assert pack.dictionary == b""
    assert [s.get(i)[1] for i in ids] == [f"small {i}".encode() for i in range(5)]


def test_truncated_dictionary_is_a_bad_pack(tmp_path: Path) -> None:
    s, ids = _dict_pack(tmp_path)
    (pack,) = s.packs()
    s.close()
    path = pack.pack_path
    data = path.read_bytes()
    path.write_bytes(data[: len(packs.PACK_MAGIC) + 4 + 10])
    t = DiskObjectStore(tmp_path / "objects")
    assert t.bad_packs and "dictionary" in next(iter(t.bad_packs.values()))
    with pytest.raises(NotFound):
        t.get(ids[0])


def test_format_1_pack_is_not_read_as_format_2(tmp_path: Path) -> None:
    s, _ = _dict_pack(tmp_path)
    (pack,) = s.packs()
    s.close()
    data = pack.pack_path.read_bytes()
    pack.pack_path.write_bytes(b"HSPACK\x00\x01" + data[len(packs.PACK_MAGIC) :])
    t = DiskObjectStore(tmp_path / "objects")
    assert "not a pack of this format" in next(iter(t.bad_packs.values()))


def _many_packs(tmp_path: Path, count: int) -> tuple[DiskObjectStore, list[str]]:
    s = DiskObjectStore(tmp_path / "objects")
    ids: list[str] = []
    for k in range(count):
        with s.batch() as b:
            ids += [b.put("blob", f"pack {k} object {i}".encode()) for i in range(40)]
    return s, ids


def test_multi_pack_index_finds_every_object(tmp_path: Path) -> None:
    s, ids = _many_packs(tmp_path, 6)
    repack.write_midx(s, s.packs())
    t = DiskObjectStore(tmp_path / "objects")
    midx = t.multi_pack_index()
    assert midx is not None and len(midx.packs) == 6 and midx.n == len(ids)
    assert sorted(t.iter_ids()) == sorted(ids)
    for oid in ids:
        assert t.has(oid)
    assert list(t.find_prefix(ids[0][:6])) == [i for i in sorted(ids) if i.startswith(ids[0][:6])]
    # a pack written after the index is still found, searched on its own
    with t.batch() as b:
        late = [b.put("blob", f"late {i}".encode()) for i in range(40)]
    u = DiskObjectStore(tmp_path / "objects")
    assert all(u.has(oid) for oid in late)
    assert u.count() == len(ids) + len(late)


def test_damaged_multi_pack_index_falls_back_to_each_pack(tmp_path: Path) -> None:
    s, ids = _many_packs(tmp_path, 3)
    repack.write_midx(s, s.packs())
    s.close()
    path = tmp_path / "objects" / "pack" / packs.MIDX_NAME
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    t = DiskObjectStore(tmp_path / "objects")
    # opening does not hash the whole index (fsck does); a read the index
    # sends astray (an object missed, bytes its id refuses) checks it, drops
    # it and reads past it
    assert all(t.get(oid)[0] == "blob" for oid in ids)
    assert t.bad_midx == "multi-pack index checksum mismatch"
    # fsck says so, and --repair writes it again
    u = DiskObjectStore(tmp_path / "objects")
    found = check_packs(u, repair=False)
    assert [(f.severity, f.message) for f in found] == [
        ("error", "multi-pack index checksum mismatch")
    ]
    assert [(f.severity, f.message) for f in check_packs(u, repair=True)] == [
        ("warning", "rewrote the multi-pack index (multi-pack index checksum mismatch)")
    ]
    v = DiskObjectStore(tmp_path / "objects")
    v.verify_midx()
    assert v.bad_midx is None and all(v.get(oid)[0] == "blob" for oid in ids)


@pytest.mark.parametrize("field", ["id", "pack", "offset"])
def test_every_record_of_the_multi_pack_index_damaged_still_reads(
    tmp_path: Path, field: str
) -> None:
    """The part of every record flipped: its id (the object looks missing),
    its pack number (past the packs it names) or its offset (other bytes)."""
    s, ids = _many_packs(tmp_path, 3)
    repack.write_midx(s, s.packs())
    s.close()
    path = tmp_path / "objects" / "pack" / packs.MIDX_NAME
    data = bytearray(path.read_bytes())
    n = len(ids)
    records = len(data) - 32 - n * 48
    at = {"id": 5, "pack": 32 + 3, "offset": 36 + 7}[field]
    for i in range(n):
        data[records + i * 48 + at] ^= 0xFF
    path.write_bytes(bytes(data))
    t = DiskObjectStore(tmp_path / "objects")
    assert all(t.get(oid)[0] == "blob" for oid in ids)
    assert check_packs(DiskObjectStore(tmp_path / "objects"), repair=False)[0].message == (
        "multi-pack index checksum mismatch"
    )


def test_removed_pack_in_the_multi_pack_index_reads_as_missing_until_rescan(
    tmp_path: Path,
) -> None:
    """gc writes the new index before it removes a pack; a reader holding the
    old one misses the removed pack's objects only if they are gone, and a
    rescan finds them where they went."""
    s, ids = _many_packs(tmp_path, 2)
    repack.write_midx(s, s.packs())
    reader = DiskObjectStore(tmp_path / "objects")
    assert reader.get(ids[0])[0] == "blob"
    written = repack.write_pack(s, ids)
    assert written is not None
    new = [p for p in s.packs() if p.name == written.name]
    repack.write_midx(s, new)
    for p in s.packs():
        if p.name != written.name:
            repack.remove_pack(p)
    assert all(reader.get(oid)[0] == "blob" for oid in ids)


def test_a_multi_pack_index_over_one_pack_is_not_kept(tmp_path: Path) -> None:
    """One pack's own index serves: writing a multi-pack index over fewer than
    two packs removes the one there was (as a store written before this left
    it), and a damaged one over a single pack is repaired by removing it."""
    s, ids = _many_packs(tmp_path, 1)
    path = tmp_path / "objects" / "pack" / packs.MIDX_NAME
    path.write_bytes(packs.midx_bytes(s.packs()))
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    t = DiskObjectStore(tmp_path / "objects")
    assert check_packs(t, repair=False)[0].message == "multi-pack index checksum mismatch"
    assert [(f.severity, f.message) for f in check_packs(t, repair=True)] == [
        ("warning", "removed the multi-pack index (multi-pack index checksum mismatch)")
    ]
    assert not path.exists() and t.bad_midx is None and t.multi_pack_index() is None
    assert check_packs(DiskObjectStore(tmp_path / "objects"), repair=False) == []
    assert all(t.get(oid)[0] == "blob" for oid in ids)
    repack.write_midx(t, t.packs())
    assert not path.exists()


def test_index_size_is_what_index_bytes_writes() -> None:
    for n in (0, 1, 7):
        records = [(bytes([i]) * 32, i * 10, 10) for i in range(n)]
        assert packs.index_size(n) == len(packs.index_bytes(records)[1])
