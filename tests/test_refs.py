"""Refs: validated names, compare-and-swap, the refs log and crash recovery."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from histstore.errors import BadInput, Conflict, CorruptStore
from histstore.store import oplog
from histstore.store.codec import hash_object
from histstore.store.oplog import RefChange, one_line
from histstore.store.refs import PACKED_HEADER, RefStore, check_component, check_ref_name

A = hash_object("blob", b"a")
B = hash_object("blob", b"b")
C = hash_object("blob", b"c")


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "..",
        "../x",
        "a/b",
        "a\\b",
        ".hidden",
        "x..y",
        "nul\x00byte",
        "line\nbreak",
        "tab\tid",
        "bell\x07",
        "with space",
        "x" * 129,
        "name.lock",
        "/etc/passwd",
        "C:\\Windows",
        "ünïcode",
    ],
)
def test_ids_from_outside_cannot_escape_or_forge(bad: str) -> None:
    with pytest.raises(BadInput):
        check_component(bad, "session id")
    with pytest.raises(BadInput):
        check_ref_name("sessions/" + bad)


@pytest.mark.parametrize(
    "good", ["a2957e78-ccef-4cd4-9936-b7cc4c581e41", "sess_1", "x.y", "A+b=c@d"]
)
def test_ordinary_ids_are_accepted(good: str) -> None:
    assert check_component(good) == good
    assert check_ref_name("sessions/" + good)


def test_ref_names_need_a_known_namespace() -> None:
    for bad in ["sessions", "foo/bar", "sessions//x", "sessions/x/"]:
        with pytest.raises(BadInput):
            check_ref_name(bad)


def test_a_bad_name_never_touches_the_filesystem(tmp_path: Path) -> None:
    refs = RefStore(tmp_path / "store")
    with pytest.raises(BadInput):
        refs.apply([RefChange("sessions/../../escape", None, A)], "hs test")
    assert not (tmp_path / "escape").exists()
    assert not (tmp_path / "store").exists()


def test_compare_and_swap(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    op1 = refs.apply([RefChange("sessions/s1", None, A)], "hs one")
    assert op1 is not None and refs.read("sessions/s1") == A
    with pytest.raises(Conflict):
        refs.apply([RefChange("sessions/s1", None, B)], "hs stale")
    with pytest.raises(Conflict):
        refs.apply([RefChange("sessions/s1", C, B)], "hs stale")
    assert refs.read("sessions/s1") == A
    assert len(refs.operations()) == 1
    op2 = refs.apply([RefChange("sessions/s1", A, B), RefChange("sessions/s2", None, C)], "hs two")
    assert op2 is not None and op2.parent == op1.op
    assert refs.list_refs() == {"sessions/s1": B, "sessions/s2": C}
    # deleting a ref
    refs.apply([RefChange("sessions/s2", C, None)], "hs three")
    assert refs.read("sessions/s2") is None


def test_a_failed_cas_changes_nothing(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    refs.apply([RefChange("sessions/s1", None, A)], "hs one")
    before = (tmp_path / "refs.log").read_bytes()
    with pytest.raises(Conflict):
        refs.apply([RefChange("sessions/s2", None, B), RefChange("sessions/s1", B, C)], "hs x")
    assert (tmp_path / "refs.log").read_bytes() == before
    assert refs.read("sessions/s2") is None


def test_no_change_records_no_operation(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    refs.apply([RefChange("sessions/s1", None, A)], "hs one")
    assert refs.apply([RefChange("sessions/s1", A, A)], "hs same") is None
    assert len(refs.operations()) == 1


def test_log_entry_holds_all_changes_time_and_command(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    refs.apply(
        [RefChange("sessions/s1", None, A), RefChange("sessions/s2", None, B)],
        "hs import\nforged line",
    )
    lines = (tmp_path / "refs.log").read_text().splitlines()
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert entry["command"] == "hs import forged line"
    assert [c["ref"] for c in entry["changes"]] == ["sessions/s1", "sessions/s2"]
    assert entry["time"].endswith("Z")
    assert one_line("a\n\tb  c") == "a b c"


def test_torn_last_line_is_tolerated(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    refs.apply([RefChange("sessions/s1", None, A)], "hs one")
    with open(tmp_path / "refs.log", "ab") as f:
        f.write(b'{"op":"deadbeef","time":"2026-')  # a crash mid-append
    ops = refs.operations()
    assert len(ops) == 1
    assert refs.last_operation() is not None
    bad = [ln for ln in refs.read_log() if ln.op is None]
    assert len(bad) == 1 and "torn" in (bad[0].error or "")
    # the next append closes the torn line instead of gluing onto it
    refs.apply([RefChange("sessions/s1", A, B)], "hs two")
    assert [o.command for o in refs.operations()] == ["hs one", "hs two"]
    assert refs.read("sessions/s1") == B


def test_crash_between_log_and_refs_rolls_forward(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    refs.apply([RefChange("sessions/s1", None, A)], "hs one")
    # simulate: the entry of a second operation reached the log, the refs did not
    refs_before = refs.list_refs()
    real_apply = refs._apply_changes
    refs._apply_changes = lambda op: (_ for _ in ()).throw(KeyboardInterrupt())  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        refs.apply([RefChange("sessions/s1", A, B), RefChange("sessions/s2", None, C)], "hs two")
    refs._apply_changes = real_apply  # type: ignore[method-assign]
    assert refs.list_refs() == refs_before
    fresh = RefStore(tmp_path)
    done = fresh.recover()
    assert done is not None and done.command == "hs two"
    assert fresh.list_refs() == {"sessions/s1": B, "sessions/s2": C}
    assert fresh.recover() is None


@pytest.mark.parametrize("bad", ["abc\n", "a.", "CON", "nul.txt", "com1", "Lpt9.x"])
def test_trailing_newlines_dots_and_device_names_are_refused(bad: str) -> None:
    with pytest.raises(BadInput):
        check_component(bad)


def test_a_long_capitalised_id_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    with pytest.raises(BadInput):
        refs.apply([RefChange("sessions/" + "A" * 125, None, A)], "hs x")
    assert refs.operations() == []
    refs.apply([RefChange("sessions/" + "a" * 128, None, A)], "hs y")


def test_ids_differing_in_case_never_share_a_file(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    refs.apply([RefChange("sessions/Abc", None, A), RefChange("sessions/abc", None, B)], "hs x")
    files = sorted(p.name for p in (tmp_path / "refs" / "sessions").iterdir())
    assert files == ["^abc", "abc"]  # distinct even where the disk folds case
    assert refs.list_refs() == {"sessions/Abc": A, "sessions/abc": B}
    assert refs.read("sessions/Abc") == A


def test_a_ref_cannot_be_both_file_and_folder(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    refs.apply([RefChange("remotes/o/x", None, A)], "hs one")
    with pytest.raises(Conflict):
        refs.apply([RefChange("remotes/o/x/y", None, B)], "hs two")
    refs.apply([RefChange("remotes/o/p/q", None, B)], "hs three")
    with pytest.raises(Conflict):
        refs.apply([RefChange("remotes/o/p", None, C)], "hs four")
    assert len(refs.operations()) == 2


def test_operations_after_reads_back_from_the_end(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    ops = []
    for i in range(5):
        old = refs.read("sessions/s")
        new = hash_object("blob", str(i).encode())
        ops.append(refs.apply([RefChange("sessions/s", old, new)], f"hs op {i}"))
    with open(tmp_path / "refs.log", "ab") as f:
        f.write(b'{"torn')
    assert [o.command for o in refs.operations_after(ops[2].op) or []] == ["hs op 3", "hs op 4"]
    assert refs.operations_after(ops[4].op) == []
    assert refs.operations_after("0" * 16) is None
    assert len(refs.operations_after(None) or []) == 5


def test_the_newest_entry_of_a_long_log_is_read_from_its_end(tmp_path: Path) -> None:
    """The id a derived view compares comes from the last bytes of the log
    when its last line is whole; a torn last line, a parent or none, and a
    line longer than a read (an import's) all give what a full parse gives."""
    refs = RefStore(tmp_path)
    assert refs.last_op_id() is None
    first = refs.apply(many(3000, A), "hs import")  # one line of ~250 KB
    assert refs.last_op_id() == first.op
    assert next(refs.newest_first_json())["op"] == first.op
    assert next(refs.newest_first_json()) == first.as_json()
    second = refs.apply([RefChange("sessions/s001", A, B)], "hs record")
    assert second.parent == first.op and refs.last_op_id() == second.op
    with open(tmp_path / "refs.log", "ab") as f:
        f.write(b'{"changes":[],"command":"x","op":"0123456789abcdef","parent":null,"ti')
    assert refs.last_op_id() == second.op  # the torn line is not an entry
    assert [d["op"] for d in refs.newest_first_json()] == [second.op, first.op]
    assert [o.op for o in refs.newest_first()] == [second.op, first.op]
    # damage a full parse refuses is no entry either, however well it ends
    with open(tmp_path / "refs.log", "ab") as f:
        f.write(
            b'\n\x00\x00,"op":"00000000000000aa","parent":null,"time":"2026-01-01T00:00:00Z"}\n'
        )
        f.write(b'{"changes":[1],"command":"x","op":"00000000000000bb","parent":null,"time":"t"}\n')
    last = refs.last_operation()
    assert last is not None and refs.last_op_id() == second.op == last.op
    assert next(refs.newest_first_json())["op"] == second.op
    # a long last line (read from its ends) damaged in its middle: parsed, skipped
    good = json.dumps(first.as_json(), separators=(",", ":"), sort_keys=True).encode()
    damaged = good[:1000] + b"\x01" + good[1001:]
    assert good.startswith(b'{"changes":[') and len(good) > oplog.LONG_LINE
    with open(tmp_path / "refs.log", "ab") as f:
        f.write(damaged + b"\n")
    assert RefStore(tmp_path).last_op_id() == second.op
    brief = {k: v for k, v in second.as_json().items() if k != "changes"}
    assert RefStore(tmp_path).newest_brief() == brief  # the damaged line skipped


def test_the_newest_entry_without_its_changes_is_read_from_its_end(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    assert refs.newest_brief() is None
    cases = [("hs import a", 3000), ("hs record", 1), ('hs import "],\\', 2000)]
    for i, (command, n) in enumerate(cases):
        value = hash_object("blob", command.encode())
        op = refs.apply(many(n, value, prefix=f"sessions/r{i}-"), command, extra={"kind": "x"})
        want = {k: v for k, v in op.as_json().items() if k != "changes"}
        assert refs.newest_brief() == want
        full = next(refs.newest_first_json())
        assert {k: v for k, v in full.items() if k != "changes"} == want


# --------------------------------------------------------------- packed refs


def many(n: int, value: str, prefix: str = "sessions/s") -> list[RefChange]:
    return [RefChange(f"{prefix}{i:03d}", None, value) for i in range(n)]


def test_a_bulk_operation_writes_packed_refs_not_a_file_per_ref(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    refs.apply(many(40, A), "import")
    assert (tmp_path / "packed-refs").is_file()
    assert not (tmp_path / "refs" / "sessions").exists() or not any(
        (tmp_path / "refs" / "sessions").iterdir()
    )
    assert refs.read("sessions/s007") == A
    assert len(refs.list_refs("sessions/")) == 40
    # a small operation after it: a loose file, which wins over the packed line
    refs.apply([RefChange("sessions/s007", A, B)], "record")
    assert (tmp_path / "refs" / "sessions" / "s007").is_file()
    assert refs.read("sessions/s007") == B and refs.list_refs()["sessions/s007"] == B
    # deleting a packed ref takes it out of packed-refs
    refs.apply([RefChange("sessions/s008", A, None)], "undo")
    assert refs.read("sessions/s008") is None and "sessions/s008" not in refs.list_refs()
    assert "sessions/s008" not in (tmp_path / "packed-refs").read_text()


def test_any_under_and_list_refs_by_prefix_over_many_packed_refs(tmp_path: Path) -> None:
    """Whether a namespace holds a ref, loose or packed (what markers() asks on
    every recall), without parsing packed-refs: right after each change."""
    refs = RefStore(tmp_path)
    assert refs.any_under("overlay") is False
    refs.apply([*many(40, A), *many(1, A, "remotes/o/overlay/x")], "import")
    assert refs.any_under("overlay") is False and refs.any_under("sessions") is True
    refs.apply(many(40, B, "overlay/t"), "bulk forget")  # packed, no loose file
    assert not (tmp_path / "refs" / "overlay").exists()
    assert refs.any_under("overlay") is True
    # a prefix's packed refs are found by bisection, loose ones over them
    assert list(refs.list_refs("overlay/")) == [f"overlay/t{i:03d}" for i in range(40)]
    assert list(refs.list_refs("sessions/s00")) == [f"sessions/s{i:03d}" for i in range(10)]
    assert list(refs.list_refs("remotes/")) == ["remotes/o/overlay/x000"]
    assert refs.list_refs("zzz/") == {} and len(refs.list_refs()) == 81
    refs.apply([RefChange("overlay/t005", B, A)], "one forget")  # a loose file
    assert refs.list_refs("overlay/t00")["overlay/t005"] == A
    assert len(refs.list_refs("overlay/t00")) == 10
    refs.apply(
        [RefChange(f"overlay/t{i:03d}", A if i == 5 else B, None) for i in range(40)], "bulk undo"
    )
    assert refs.any_under("overlay") is False
    (tmp_path / "packed-refs").write_text("garbage\n")
    with pytest.raises(CorruptStore):
        refs.any_under("overlay")


def test_any_under_over_packed_refs_sees_only_its_own_namespace(tmp_path: Path) -> None:
    """The bisection stops at the first name at or after ``<ns>/``: names that
    sort just before or after it (``overlay-x/``, ``overlay0/``) are another
    namespace, and a damaged line where it stops is left to a search of every
    byte (which still finds a real ref)."""
    refs = RefStore(tmp_path)
    data = (
        PACKED_HEADER
        + b"\n"
        + b"".join(
            f"{A} {name}\n".encode() for name in ("memory/m", "overlay-x/a", "overlay0/b", "zz/c")
        )
    )
    (tmp_path / "packed-refs").write_bytes(data)
    assert refs.any_under("overlay") is False
    assert refs.any_under("overlay-x") is True and refs.any_under("zz") is True
    assert refs.any_under("zzz") is False and refs.any_under("a") is False
    line = f"{A} overlay0/b\n".encode()
    (tmp_path / "packed-refs").write_bytes(
        data.replace(line, b"damaged overlay0/b\n" + f"{A} overlay/real\n".encode())
    )
    assert RefStore(tmp_path).any_under("overlay") is True


def test_packing_moves_every_loose_ref_into_one_file_and_changes_no_value(
    tmp_path: Path,
) -> None:
    refs = RefStore(tmp_path)
    for i in range(5):
        refs.apply([RefChange(f"sessions/x{i}", None, A)], "record")
    refs.apply([RefChange("overlay/t~u", None, B)], "forget")
    before = refs.list_refs()
    assert refs.pack() == 6
    assert refs.list_refs() == before
    assert [p for p in (tmp_path / "refs").rglob("*") if p.is_file()] == []
    assert RefStore(tmp_path).read("overlay/t~u") == B


def test_a_ref_and_a_folder_of_refs_conflict_across_packed_and_loose(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    refs.apply(many(20, A, "remotes/o/sessions/s"), "push")
    with pytest.raises(Conflict):
        refs.apply([RefChange("remotes/o/sessions/s001/x", None, B)], "push")
    refs.apply([RefChange("remotes/o/x/y", None, B)], "push")
    refs.pack()
    with pytest.raises(Conflict):
        refs.apply([RefChange("remotes/o/x", None, B)], "push")


def test_a_crash_after_packed_refs_before_the_loose_files_go_rolls_forward(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk write's loose files (older values) still there: the refs read as
    before the operation, and the next writer completes it."""
    refs = RefStore(tmp_path)
    refs.apply([RefChange(f"sessions/s{i:03d}", None, A) for i in range(3)], "record")
    real = RefStore._write_ref

    def crash(self: RefStore, name: str, value: str | None, *, sync: bool) -> None:
        raise KeyboardInterrupt  # dies once packed-refs is written

    monkeypatch.setattr(RefStore, "_write_ref", crash)
    change = [RefChange(f"sessions/s{i:03d}", A if i < 3 else None, B) for i in range(30)]
    with pytest.raises(KeyboardInterrupt):
        refs.apply(change, "import")
    monkeypatch.setattr(RefStore, "_write_ref", real)
    fresh = RefStore(tmp_path)
    assert fresh.read("sessions/s000") == A  # the loose file of before still wins
    assert fresh.recover() is not None
    assert set(fresh.list_refs().values()) == {B} and len(fresh.list_refs()) == 30


def test_a_ref_or_a_namespace_is_found_in_packed_refs_by_bisection(tmp_path: Path) -> None:
    """Without parsing the file: every ref, every prefix, names absent or
    sorting between others, the same as the parsed file gives; a damaged
    line under the prefix is damage, as in the full parse."""
    names = sorted(
        {f"sessions/{a}{b}{i}" for a in "0aZz" for b in "-._9" for i in range(12)}
        | {f"overlay/s~t{i}" for i in range(30)}
        | {"memory/system", "remotes/o/sessions/x"}
    )
    refs = RefStore(tmp_path)
    refs.apply([RefChange(n, None, A if i % 2 else B) for i, n in enumerate(names)], "import")
    whole = RefStore(tmp_path).packed()
    assert sorted(whole) == names
    prefixes = ["sessions/", "sessions/0", "sessions/a-", "sessions/z", "sessions/Z._1", "o"]
    prefixes += ["overlay/s~t1", "memory/", "remotes/", "sessions/0-.", "sessions/~", "a", "zz"]
    for prefix in prefixes:
        fresh = RefStore(tmp_path)
        want = {k: v for k, v in whole.items() if k.startswith(prefix)}
        assert fresh.list_refs(prefix) == want, prefix
        assert fresh._packed is None  # found without parsing the whole file
    for name in [*names, "sessions/0", "sessions/zz", "memory/other", "overlay/s~t99"]:
        assert RefStore(tmp_path).read(name) == whole.get(name), name
    data = (tmp_path / "packed-refs").read_bytes()
    line = f"{whole['memory/system']} memory/system".encode()
    (tmp_path / "packed-refs").write_bytes(data.replace(line, b"not-an-id memory/system"))
    with pytest.raises(CorruptStore):
        RefStore(tmp_path).list_refs("memory/")


@pytest.mark.parametrize("many", [False, True], ids=["loose", "packed"])
def test_the_state_changes_with_every_ref_an_operation_moves(tmp_path: Path, many: bool) -> None:
    """``RefStore.state`` is what a reader keeps beside refs it listed: it
    changes when the log grows, when refs.applied is replaced, and — between
    the two, where an operation's own derived files are written
    (``before_done``) — with every ref file this process writes."""
    refs = RefStore(tmp_path)
    seen = [refs.state()]
    real = refs._write_ref

    def write(*a: object, **k: object) -> None:
        seen.append(refs.state())  # the log has grown: the refs have not moved
        real(*a, **k)  # type: ignore[arg-type]

    refs._write_ref = write  # type: ignore[method-assign]
    count = RefStore.BULK + 1 if many else 1
    changes = [
        RefChange(f"sessions/s{i}", None, hash_object("blob", b"%d" % i)) for i in range(count)
    ]
    refs.apply(changes, "test", before_done=lambda: seen.append(refs.state()))
    seen.append(refs.state())
    assert seen[1] != seen[0]  # logged
    assert seen[-2] != seen[1]  # moved, not yet done
    assert seen[-1] != seen[-2]  # done
    assert refs.state() == seen[-1]  # and steady while nothing moves
