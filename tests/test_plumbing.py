"""`hs plumbing ...`: one JSON object per line, stable fields, compare-and-swap."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import HS, turn_record

from histstore.store.codec import hash_object


def test_hash_object_without_and_with_write(hs: HS, tmp_path: Path) -> None:
    hs("init")
    f = tmp_path / "abc"
    f.write_bytes(b"abc")
    out = hs.json_lines("plumbing", "hash-object", str(f))[0]
    assert out == {
        "id": hash_object("blob", b"abc"),
        "kind": "blob",
        "size": 3,
        "written": False,
        "redacted": False,
    }
    assert hs("plumbing", "cat-object", out["id"]).exit_code == 4
    out = hs.json_lines("plumbing", "hash-object", "-w", str(f))[0]
    assert out["written"] is True
    got = hs.json_lines("plumbing", "cat-object", out["id"][:10])[0]
    assert got == {"id": out["id"], "kind": "blob", "size": 3, "text": "abc"}
    r = hs("plumbing", "cat-object", "--raw", out["id"])
    assert r.stdout == "abc"


def test_hash_object_w_redacts_bytes_that_are_not_utf8_too(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    import leaks

    hs("init")
    secret = "ghp_" + "C1d2" * 9
    f = tmp_path / "odd"
    f.write_bytes(b"caf\xe9 " + secret.encode() + b" \xff")
    out = hs.json_lines("plumbing", "hash-object", "-w", str(f))[0]
    assert out["written"] is True and out["redacted"] is True
    r = hs("plumbing", "cat-object", "--raw", out["id"])
    assert r.stdout_bytes == b"caf\xe9 [REDACTED:github-token] \xff"
    assert leaks.scan(store_path, leaks.Finder([secret])) == {}


def test_hash_object_json_kinds_are_canonicalised(hs: HS) -> None:
    hs("init")
    a = hs.json_lines("plumbing", "hash-object", "-t", "turn", "-", input='{"b": 1, "a": 2}')[0]
    b = hs.json_lines("plumbing", "hash-object", "-t", "turn", "-", input='{"a":2,"b":1}')[0]
    assert a["id"] == b["id"]
    r = hs("plumbing", "hash-object", "-t", "turn", "-", input="not json")
    assert r.exit_code == 2 and "must be JSON" in r.stderr
    r = hs("plumbing", "hash-object", "-t", "tree", "-", input="x")
    assert r.exit_code == 2 and "unknown object kind 'tree'" in r.stderr


def test_hash_object_write_redacts(hs: HS) -> None:
    hs("init")
    secret = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    out = hs.json_lines("plumbing", "hash-object", "-w", "-", input=f"token {secret}")[0]
    assert out["redacted"] is True
    text = hs.json_lines("plumbing", "cat-object", out["id"])[0]["text"]
    assert secret not in text and "[REDACTED:" in text


def test_show_ref_update_ref_and_refs_log(hs: HS) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    refs = hs.json_lines("plumbing", "show-ref")
    assert [r["ref"] for r in refs] == ["sessions/sess-a"]
    current = refs[0]["id"]
    hs("record", input=json.dumps(turn_record(2)))
    newer = hs.json_lines("plumbing", "show-ref", "sessions/")[0]["id"]
    assert newer != current

    # compare-and-swap: a stale expected value is refused and changes nothing
    r = hs("plumbing", "update-ref", "sessions/sess-a", current, "--old", current)
    assert r.exit_code == 5 and "expected" in r.stderr
    assert hs.json_lines("plumbing", "show-ref")[0]["id"] == newer
    out = hs.json_lines("plumbing", "update-ref", "sessions/sess-a", current, "--old", newer[:12])[
        0
    ]
    assert out["old"] == newer and out["new"] == current and out["op"]
    assert hs.json_lines("plumbing", "show-ref")[0]["id"] == current

    ops = hs.json_lines("plumbing", "refs-log")
    assert [o["command"].split()[1] for o in ops] == ["record", "record", "plumbing"]
    assert ops[2]["changes"] == [{"ref": "sessions/sess-a", "old": newer, "new": current}]
    assert ops[2]["parent"] == ops[1]["op"]
    assert len(hs.json_lines("plumbing", "refs-log", "-n", "1")) == 1


def test_update_ref_refuses_bad_names_and_kinds(hs: HS, store_path: Path) -> None:
    hs("init")
    blob = hs.json_lines("plumbing", "hash-object", "-w", "-", input="x")[0]["id"]
    for name in ["sessions/../../x", "../x", "sessions/a\nb", "nope/x", "sessions/" + "x" * 300]:
        r = hs("plumbing", "update-ref", name, blob)
        assert r.exit_code == 2, name
    r = hs("plumbing", "update-ref", "sessions/x", blob)
    assert r.exit_code == 2 and "must point at a session object" in r.stderr
    r = hs("plumbing", "update-ref", "sessions/x", "0" * 64)
    assert r.exit_code == 4
    assert not (store_path / "refs.log").exists()
    assert not any((store_path / "refs").rglob("*"))


def test_plumbing_fsck_json_lines(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    r = hs("plumbing", "fsck")
    assert r.exit_code == 0 and r.stdout == ""
    obj = next(p for p in (store_path / "objects").rglob("*") if p.is_file())
    data = bytearray(obj.read_bytes())
    data[-1] ^= 0xFF
    obj.write_bytes(bytes(data))
    r = hs("plumbing", "fsck")
    assert r.exit_code == 7
    findings = [json.loads(line) for line in r.stdout.splitlines()]
    assert findings and all(set(f) == {"severity", "check", "subject", "message"} for f in findings)
    assert any(f["check"] == "object" and f["severity"] == "error" for f in findings)
