"""hs purge and hs redact (docs/cli.md): irreversible by design, previewed, and
afterwards no byte of what went anywhere under the store (every file, every
object and every pack frame decompressed: tests/leaks.py's scan)."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import leaks
import pytest
import tomli_w
from helpers import HS, turn_record, write_turns
from synctools import snapshot

from histstore.recall.index import RecallIndex
from histstore.store.oplog import RefChange
from histstore.store.store import Store

MARK = "ZQX-PURGEME-4417"


def _ok(r: object) -> None:
    assert r.exit_code == 0, (r.stdout, r.stderr)  # type: ignore[attr-defined]


def _store(hs: HS, tmp: Path, *, where: str = "in") -> Path:
    """Two sessions (in one pack), one ('gone') whose every turn holds MARK
    (and a tool output long enough to be a blob); a forgotten turn of it with a reason
    (a commit into the index: its segments keep the deleted turn's terms), and a
    second generation built, so the index has several; the summary and source
    table made."""

    def steps(i: int) -> list[dict[str, object]]:
        out = ("line of output\n" * 60) + f"{MARK} {i}"
        tool = {"type": "tool", "id": "t", "name": "Bash", "input": {"command": "cat notes"}}
        return [{**tool, "output": out, "is_error": False, "at": None}]

    recs = [turn_record(i, session_id="keep") for i in range(10, 40)]  # a pack, not loose
    recs += [
        turn_record(i, session_id="gone", asked=f"what about {MARK} {i}?", steps=steps(i))
        for i in range(4, 7)
    ]
    folder = tmp / where
    folder.mkdir(parents=True, exist_ok=True)
    path = write_turns(folder / "t.jsonl", recs)
    _ok(hs("init"))
    _ok(hs("import", str(path)))
    _ok(hs("forget", "gone~turn-0005", "--confirm", "gone~turn-0005", "--reason", f"has {MARK}"))
    _ok(hs("plumbing", "index-build"))
    _ok(hs("log"))
    return path


def _scan(root: Path, *needles: str) -> dict[str, set[str]]:
    return leaks.scan(root, leaks.Finder(needles))


def test_without_confirm_a_purge_is_a_preview_that_changes_nothing(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    _store(hs, tmp_path)
    before = snapshot(store_path)
    r = hs("purge", "gone")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    assert r.stdout.splitlines() == [
        "purge session gone: this cannot be undone",
        "  what it removes is gone from this store for good, and from every store it syncs "
        "with (hs sync carries the purge)",
        "  it removes 8 objects: 3 blobs, 1 marker, 1 session revision, 3 turns",
        "  refs it moves or removes: 2",
        "  sessions: gone",
        "  turns: gone~turn-0004, gone~turn-0005, gone~turn-0006",
        "nothing was removed: to purge, run again with --confirm repeating the target",
    ]
    assert MARK not in r.stdout
    assert snapshot(store_path) == before
    r = hs("purge", "gone", "--json")
    assert r.exit_code == 0 and r.stderr == ""
    preview = json.loads(r.stdout)
    assert preview["dry_run"] is True and preview["objects"] == 8
    assert preview["by_kind"] == {"blob": 3, "marker": 1, "session": 1, "turn": 3}
    r = hs("purge", "gone", "--confirm", "gon")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr == (
        "hs: error: unconfirmed-target: the confirmation 'gon' is not session gone; "
        "hint: repeat the exact id: --confirm gone\n"
    )
    assert snapshot(store_path) == before


def test_on_a_terminal_a_purge_shows_what_goes_and_asks_for_the_target(
    hs: HS, tmp_path: Path, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from histstore.porcelain import purge_cli

    _store(hs, tmp_path)
    before = snapshot(store_path)
    monkeypatch.setattr(purge_cli, "_on_terminal", lambda: True)
    r = hs("purge", "gone~turn-0004", input="gone~turn-000\n")
    assert r.exit_code == 2 and "purge" not in r.stdout  # (the runner echoes what was typed)
    assert r.stderr.startswith("purge turn gone~turn-0004: this cannot be undone\n")
    assert "type the turn id to purge it for good" in r.stderr
    assert r.stderr.endswith(
        "is not turn turn-0004; hint: repeat the exact id: --confirm turn-0004\n"
    )
    assert MARK not in r.stderr
    assert snapshot(store_path) == before
    r = hs("purge", "gone~turn-0004", input="turn-0004\n")
    assert r.exit_code == 0, r.stderr
    assert "\npurged turn gone~turn-0004: 2 objects removed (1 blob, 1 turn)\n" in r.stdout
    r = hs("purge", "--text", MARK, input="not it\n")
    assert r.exit_code == 2 and "unconfirmed-target" in r.stderr
    assert MARK not in r.stderr  # the text is typed hidden, never shown


def test_a_purged_session_leaves_no_byte_and_no_trace_but_ids(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    path = _store(hs, tmp_path)
    assert _scan(store_path, MARK)  # the scan can fail
    assert len(RecallIndex(Store.open(store_path)).generations()) > 1
    r = hs("purge", "gone", "--confirm", "gone")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[0] == (
        "purged session gone: 8 objects removed (3 blobs, 1 marker, 1 session revision, 3 turns)"
    )
    assert lines[1].startswith("  purge ") and "1 pack rewritten" in lines[1]
    assert lines[2].startswith("  recall index rebuilt: gen-")
    assert lines[-1] == (
        "  hs sync carries the purge to the stores this one syncs with; hs undo cannot undo it"
    )
    assert _scan(store_path, MARK) == {}
    with Store.open(store_path) as store:
        index = RecallIndex(store)
        assert [g.name for g in index.generations()] == [index.current_path().name]  # type: ignore[union-attr]
        assert set(store.session_refs()) == {"keep"}
        assert not (store_path / "purge-pending").exists()
    r = hs("fsck")
    assert (r.exit_code, r.stderr) == (0, "")
    r = hs("show", "gone")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout.startswith("session gone\n\n    purged (")
    # its time as every view gives one: local, to the second (TZ here is UTC)
    assert re.search(r"purged \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, purge ", r.stdout)
    r = hs("show", "turn-0004", "--json")
    assert r.exit_code == 0
    assert json.loads(r.stdout)["purged"]["what"] == "turn"
    r = hs("log", "--oneline")
    assert r.exit_code == 0 and "gone" not in r.stdout and r.stdout.count("\n") == 30
    r = hs("recall", "--everywhere", "what", "about")
    assert r.exit_code == 0 and "gone" not in r.stdout
    # imported again (a copy: the file itself is known and not read), the
    # purged turns are never stored again
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    r = hs("import", str(copy), "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["turns_purged"] == 3
    assert _scan(store_path, MARK) == {}


def test_undo_cannot_undo_a_purge(hs: HS, tmp_path: Path, store_path: Path) -> None:
    _store(hs, tmp_path)
    more = write_turns(tmp_path / "more.jsonl", [turn_record(8, session_id="gone")])
    _ok(hs("import", str(more)))
    _ok(hs("purge", "gone", "--confirm", "gone"))
    before = snapshot(store_path)
    r = hs("undo")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert "it is a purge, and what a purge removed is gone for good" in r.stderr
    assert r.stderr.endswith("hint: a purge cannot be undone; see hs purge --list\n")
    # nor an operation that would bring back what it removed
    ops = [json.loads(ln) for ln in hs("plumbing", "refs-log").stdout.splitlines()]
    imported = [o["op"] for o in ops if o["extra"].get("kind") == "import"][-1]
    r = hs("undo", imported)
    assert r.exit_code == 2
    assert "would bring back" in r.stderr and "a purge removed for good" in r.stderr
    assert snapshot(store_path) == before


def test_undo_cannot_bring_back_a_session_only_the_refs_log_named(hs: HS, store_path: Path) -> None:
    """A turn recorded, the recording undone, then a purge of its text: no ref
    named the session, so no ref moved off it. Undoing the undo would point a
    ref at the revision listing the purged turn (every read of it would fail):
    refused, and a ref put there by hand is an error fsck reports."""
    _ok(hs("init"))
    _ok(hs("record", input=json.dumps(turn_record(1, asked=f"about {MARK}"))))
    rev = hs.json_lines("plumbing", "show-ref")[0]["id"]
    _ok(hs("undo"))
    undo_op = hs.json_lines("ops", "--json")[0]["op"]
    _ok(hs("purge", "--text", MARK, "--confirm", MARK))
    before = snapshot(store_path)
    r = hs("undo", undo_op)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        f"hs: error: cannot undo {undo_op}: it would bring back 1 object(s) a purge removed "
        "for good; hint: see hs purge --list\n"
    )
    assert snapshot(store_path) == before
    assert hs("log").exit_code == 0
    before = snapshot(store_path)
    r = hs("plumbing", "update-ref", "sessions/sess-a", rev)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        f"hs: error: {rev[:12]} shows what a purge removed for good; hint: see hs purge --list\n"
    )
    assert snapshot(store_path) == before
    with Store.open(store_path) as s:  # put there all the same (no command does)
        s.apply([RefChange("sessions/sess-a", None, rev)], "test")
    r = hs("fsck")
    assert r.exit_code == 7
    assert "sessions/sess-a: shows purged turn object " in r.stdout + r.stderr


def test_a_purged_turn_leaves_its_session_and_says_purged(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    _store(hs, tmp_path)
    r = hs("purge", "gone~turn-0006", "--confirm", "gone~turn-0006")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("purged turn gone~turn-0006: 2 objects removed (1 blob, 1 turn)")
    with Store.open(store_path) as store:
        s = store.session("gone")
        assert [t.turn_id for t in s.turns] == ["turn-0004", "turn-0005"]
    r = hs("show", "gone~turn-0006")
    assert r.exit_code == 0 and "purged (" in r.stdout
    r = hs("fsck")
    assert r.exit_code == 0 and r.stderr == ""
    assert "warning: purged 1 reference to objects purge " in r.stdout
    assert "removed: accepted\nok: the store is consistent (1 warning)\n" in r.stdout
    r = hs("purge", "--list")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout.rstrip().endswith("turn gone~turn-0006  (2 objects)")


def test_purge_text_removes_it_from_objects_the_refs_log_and_local_files(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    # the text in the path of the imported file too: the refs log's command
    # and the source table hold it
    _store(hs, tmp_path, where=f"dir-{MARK}")
    assert MARK in (store_path / "refs.log").read_text()
    r = hs("purge", "--text", MARK)
    assert r.exit_code == 0 and r.stderr == ""
    assert (
        r.stdout.splitlines()[0] == "purge every place the text given occurs: this cannot be undone"
    )
    assert MARK not in r.stdout
    r = hs("purge", "--text", MARK, "--confirm", MARK)
    assert r.exit_code == 0, r.stderr
    assert MARK not in r.stdout + r.stderr
    assert _scan(store_path, MARK) == {}
    r = hs("fsck")
    assert (r.exit_code, r.stderr) == (0, "")
    with Store.open(store_path) as store:
        asked = [store.get_json(t.object)["asked"] for t in store.session("gone").turns]
        assert asked[0] == "what about [REDACTED:purged] 4?"
    r = hs("ops")
    assert r.exit_code == 0 and "[REDACTED:purged]" in r.stdout
    r = hs("forgotten")
    assert r.exit_code == 0 and "reason: has [REDACTED:purged]" in r.stdout
    r = hs("purge", "--text", MARK, "--confirm", MARK)
    assert (r.exit_code, r.stdout) == (
        0,
        "the text occurs nowhere in the store: nothing to purge\n",
    )


DEMO = Path(__file__).resolve().parents[1] / "demo" / "claude-projects"
DEMO_SESSION = "5f0c1e7a-3b2d-4c8e-9a61-0d2f4b6c8e10"
DEMO_TITLE = "Session expiry for login_user"


def _demo(hs: HS, tmp_path: Path) -> Path:
    src = tmp_path / "projects"
    shutil.copytree(DEMO, src)
    _ok(hs("init"))
    _ok(hs("import", str(src)))
    return src


def test_a_session_purge_leaves_its_title_nowhere_and_an_import_brings_it_not_back(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    """The source table keeps where each file's next import resumes, with
    what the lines before said: the session's title and directory. A session
    purge empties that for the files that held it."""
    src = _demo(hs, tmp_path)
    assert _scan(store_path, DEMO_TITLE) != {}
    _ok(hs("purge", DEMO_SESSION, "--confirm", DEMO_SESSION))
    assert _scan(store_path, DEMO_TITLE) == {}
    r = hs("import", str(src))
    assert r.exit_code == 0, r.stderr
    assert "turns: 0 added" in r.stdout
    assert _scan(store_path, DEMO_TITLE) == {}


@pytest.mark.parametrize("then", ["a new turn", "the last turn grows"])
def test_a_purged_sessions_turns_never_come_back_as_its_file_grows(
    hs: HS, tmp_path: Path, store_path: Path, then: str
) -> None:
    """The file's next import reads its last turn again (from the queue lines
    before its prompt): the same turn, maybe grown into another object; it is
    skipped as purged, by its session and turn id. A new turn is new."""
    src = tmp_path / "projects"
    shutil.copytree(DEMO, src)
    path = next(src.rglob(f"{DEMO_SESSION}.jsonl"))
    lines = path.read_text().splitlines(keepends=True)
    last = next(i for i, ln in enumerate(lines) if "Check what the OWASP" in ln)
    queue = {"type": "queue-operation", "timestamp": "2026-11-03T15:59:59.000Z"}
    queued = [
        json.dumps({**queue, "operation": "enqueue", "sessionId": DEMO_SESSION}) + "\n",
        json.dumps({**queue, "operation": "dequeue", "sessionId": DEMO_SESSION}) + "\n",
    ]
    path.write_text("".join(lines[:last] + queued + lines[last:]))
    _ok(hs("init"))
    _ok(hs("import", str(src)))
    _ok(hs("purge", DEMO_SESSION, "--confirm", DEMO_SESSION))
    tail = json.loads(lines[-1])
    more = {**tail, "parentUuid": tail["uuid"], "uuid": "7baa50aa-0000-4000-8000-00000000aaaa"}
    more["timestamp"] = "2026-11-03T16:30:00.000Z"
    more["message"] = {
        **tail["message"],
        "id": "msg_more",
        "content": [{"type": "text", "text": "And one more thing on the OWASP guidance."}],
    }
    added = [json.dumps(more) + "\n"]
    if then == "a new turn":
        prompt = json.loads(lines[last])
        added = [
            json.dumps(
                {
                    **prompt,
                    "uuid": "b75768f3-0000-4000-8000-00000000bbbb",
                    "parentUuid": tail["uuid"],
                    "timestamp": "2026-11-03T16:20:00.000Z",
                    "message": {"role": "user", "content": "A brand new question"},
                }
            )
            + "\n"
        ]
    with path.open("a") as f:
        f.writelines(added)
    r = hs("import", str(src))
    assert r.exit_code == 0, r.stderr
    assert "purged (not stored again)" in r.stdout
    shown = hs("log", "--oneline").stdout
    assert "OWASP" not in shown and "login_user" not in shown
    assert ("A brand new question" in shown) is (then == "a new turn")


def test_a_text_purge_rewrites_a_resume_state_and_an_import_brings_it_not_back(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    """The title held the text: the state is rewritten in place, not the
    file forgotten (read again, it would give the title back)."""
    src = _demo(hs, tmp_path)
    text = "Session expiry"
    _ok(hs("purge", "--text", text, "--confirm", text))
    assert _scan(store_path, text) == {}
    before = hs.json_lines("ops", "--json")
    r = hs("import", str(src))
    assert r.exit_code == 0, r.stderr
    assert "nothing new: no operation recorded" in r.stdout
    assert hs.json_lines("ops", "--json") == before
    assert _scan(store_path, text) == {}
    with Store.open(store_path) as store:
        assert store.session(DEMO_SESSION).title == "[REDACTED:purged] for login_user"


def test_gc_removes_a_purged_object_a_fresh_pack_brought_back(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    """A pack copied back from a backup holds what a purge removed: a daily gc
    rewrites it without those objects, though the pack is fresh and too big
    to be rolled up."""
    _store(hs, tmp_path)
    packs = store_path / "objects" / "pack"
    saved = {f.name: f.read_bytes() for f in packs.iterdir() if f.suffix in (".pack", ".idx")}
    _ok(hs("purge", "gone", "--confirm", "gone"))
    assert _scan(store_path, MARK) == {}
    for name, data in saved.items():
        (packs / name).write_bytes(data)
    assert _scan(store_path, MARK) != {}
    r = hs("gc")
    assert r.exit_code == 0, r.stderr
    assert _scan(store_path, MARK) == {}, (r.stdout, sorted(p.name for p in packs.iterdir()))
    _ok(hs("fsck"))


def test_fsck_repair_never_makes_a_purged_object_readable_again(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    """A pack from before a purge comes back without its index: the repair
    rebuilds the index, which reaches the purged objects, and removes them."""
    _store(hs, tmp_path)
    packs = store_path / "objects" / "pack"
    saved = {f.name: f.read_bytes() for f in packs.iterdir() if f.suffix == ".pack"}
    _ok(hs("purge", "gone", "--confirm", "gone"))
    purged = hs.json_lines("purge", "--list", "--json")
    assert purged
    for name, data in saved.items():
        if not (packs / name).exists():
            (packs / name).write_bytes(data)
    r = hs("fsck", "--repair")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert _scan(store_path, MARK) == {}
    r = hs("fsck")
    assert (r.exit_code, r.stderr) == (0, ""), r.stdout


@pytest.mark.parametrize("target", ["s-7", "s-7~turn-0001"])
def test_a_session_only_the_refs_log_names_can_be_purged(
    hs: HS, store_path: Path, target: str
) -> None:
    """Its recording undone, the session is in no ref, but its objects stay
    for undo: a purge finds it through the log, as it finds what to remove."""
    _ok(hs("init"))
    _ok(hs("record", input=json.dumps(turn_record(1, session_id="s-7", asked=f"on {MARK}"))))
    _ok(hs("undo"))
    assert _scan(store_path, MARK) != {}
    r = hs("purge", target)
    assert r.exit_code == 0, r.stderr
    assert "nothing was removed: to purge, run again with --confirm" in r.stdout
    r = hs("purge", target, "--confirm", target)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("purged ")
    assert _scan(store_path, MARK) == {}
    r = hs("fsck")
    assert (r.exit_code, r.stderr) == (0, ""), r.stdout


def test_a_purge_stopped_by_damage_elsewhere_says_it_was_the_purge(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    from histstore.store.objectstore import DiskObjectStore

    _store(hs, tmp_path)
    keep = next(t["object"] for t in hs.json_lines("log", "--json") if t["session_id"] == "keep")
    objects = DiskObjectStore(store_path / "objects")
    pack = next(p for p in objects.packs() if p.entry(bytes.fromhex(keep)))
    off, length = pack.entry(bytes.fromhex(keep))  # type: ignore[misc]
    data = bytearray(pack.pack_path.read_bytes())
    data[off + length // 2] ^= 0xFF
    pack.pack_path.write_bytes(bytes(data))
    before = snapshot(store_path)
    r = hs("purge", "gone", "--confirm", "gone")
    assert (r.exit_code, r.stdout) == (7, "")
    assert r.stderr.startswith(f"hs: error: purge stopped: object {keep} cannot be read (")
    assert r.stderr.endswith(
        "; hint: run `hs fsck` (and `hs fsck --repair`); the purge removed nothing\n"
    )
    assert snapshot(store_path) == before


def test_purge_refuses_what_it_cannot_do_and_changes_nothing(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    _store(hs, tmp_path)
    before = snapshot(store_path)
    cases = [
        (("purge",), "hs: error: name one thing to purge: a TARGET or --text TEXT"),
        (("purge", "gone", "--text", MARK), "hs: error: name one thing to purge"),
        (("purge", "--text", "abc", "--confirm", "abc"), "is 3 characters long; give at least 6"),
        (("purge", "--text", "turn-0004", "--confirm", "turn-0004"), "occurs in the id of a"),
        (("purge", "--text", MARK, "--confirm", "nope"), "unconfirmed-target"),
        (("purge", "nosuch", "--confirm", "nosuch"), "no session or turn 'nosuch' in the store"),
    ]
    for args, want in cases:
        r = hs(*args)
        assert r.exit_code in (2, 4), (args, r.stderr)
        assert r.stdout == "" and want in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    config = tomllib.loads((store_path / "config.toml").read_text())
    config["redact"]["patterns"] = ["never-matches-[0-9]{40}", MARK]
    (store_path / "config.toml").write_text(tomli_w.dumps(config))
    r = hs("purge", "--text", MARK, "--confirm", MARK)
    assert r.exit_code == 2 and "the text occurs in config.toml" in r.stderr
    del before["config.toml"]
    after = snapshot(store_path)
    del after["config.toml"]
    assert after == before


def test_a_purged_memory_note_leaves_the_store_and_its_folder(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    mdir = tmp_path / "memory"
    mdir.mkdir()
    note = "---\nname: Deploy\ndescription: the deploy key is {}\ntype: reference\n---\n\n{}\n"
    (mdir / "reference_deploy.md").write_text(note.format(MARK, MARK))
    (mdir / "reference_other.md").write_text(note.format("elsewhere", "nothing here"))
    (mdir / "MEMORY.md").write_text(
        f"- [Deploy](reference_deploy.md) — the deploy key is {MARK}\n"
        "- [Other](reference_other.md) — the deploy key is elsewhere\n"
    )
    _ok(hs("init"))
    _ok(hs("memory", "dir", "--set", str(mdir)))
    _ok(hs("memory", "snapshot"))
    (mdir / "reference_deploy.md").write_text(note.format(MARK, MARK + " again"))
    _ok(hs("memory", "snapshot"))
    target = "memory@system@reference@deploy"
    r = hs("purge", target, "--confirm", target)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith(f"purged memory note {target}: 3 objects removed (3 blobs)")
    assert "memory: 2 files updated\n" in r.stdout  # the note gone, its index line too
    assert _scan(store_path, MARK) == {}
    assert sorted(p.name for p in mdir.iterdir()) == ["MEMORY.md", "reference_other.md"]
    assert MARK not in (mdir / "MEMORY.md").read_text()
    r = hs("memory", "show", "MEMORY.md")
    assert r.exit_code == 0 and "Other" in r.stdout and MARK not in r.stdout
    r = hs("fsck")
    assert (r.exit_code, r.stderr) == (0, "")
    # the folder's copy of it, written back, is never recorded again
    (mdir / "reference_deploy.md").write_text(note.format(MARK, MARK))
    r = hs("memory", "snapshot")
    assert r.exit_code == 2 and "a purge removed for good" in r.stderr


def test_a_text_purge_takes_the_text_out_of_the_memory_folder_too(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    """The folder holds what it was last given (the text, before the purge
    rewrote its revision): it follows, so the text leaves it, and a snapshot
    afterwards records nothing new."""
    mdir = tmp_path / "memory"
    mdir.mkdir()
    note = "---\nname: Deploy\ndescription: where the key is\ntype: reference\n---\n\n{}\n"
    (mdir / "reference_deploy.md").write_text(note.format(f"the key is {MARK}, and {MARK}."))
    (mdir / "MEMORY.md").write_text(f"- [Deploy](reference_deploy.md) — see {MARK}\n")
    _ok(hs("init"))
    _ok(hs("memory", "dir", "--set", str(mdir)))
    _ok(hs("memory", "snapshot"))
    r = hs("purge", "--text", MARK, "--confirm", MARK)
    assert r.exit_code == 0, r.stderr
    assert "memory: 2 files updated\n" in r.stdout and "edits not recorded" not in r.stdout
    placeholder = "[REDACTED:purged]"
    body = (mdir / "reference_deploy.md").read_text()
    assert body == note.format(f"the key is {placeholder}, and {placeholder}.")
    assert MARK not in (mdir / "MEMORY.md").read_text()
    assert _scan(store_path, MARK) == {}
    assert not [f for f in mdir.rglob("*") if f.is_file() and MARK in f.read_text()]
    r = hs("memory", "snapshot")
    assert r.exit_code == 0, r.stderr
    assert "nothing" in r.stdout
    for args in (("memory", "log"), ("memory", "diff")):
        r = hs(*args)
        assert r.exit_code == 0, (args, r.stderr)
        assert MARK not in r.stdout
    # the version before the purge is a hole the diff names
    assert "@" in r.stdout.splitlines()[0] and r.stdout.splitlines()[0].endswith(
        " (purged: its content is gone)"
    )


def test_a_later_purge_never_overwrites_an_edit_of_an_earlier_ones_placeholder(
    hs: HS, tmp_path: Path
) -> None:
    """Only the files the purge being completed rewrote are read as given with
    its text: a placeholder an earlier purge left, edited since (not yet
    recorded), is an edit, and no edit is ever overwritten."""
    mdir = tmp_path / "memory"
    mdir.mkdir()
    note = "---\nname: {0}\ndescription: about {0}\ntype: reference\n---\n\n{1}\n"
    (mdir / "reference_one.md").write_text(note.format("One", f"key at {MARK}"))
    (mdir / "reference_two.md").write_text(note.format("Two", "token at QWERTY-99881"))
    (mdir / "MEMORY.md").write_text(
        "- [One](reference_one.md) — about One\n- [Two](reference_two.md) — about Two\n"
    )
    _ok(hs("init"))
    _ok(hs("memory", "dir", "--set", str(mdir)))
    _ok(hs("memory", "snapshot"))
    _ok(hs("purge", "--text", MARK, "--confirm", MARK))
    one = (mdir / "reference_one.md").read_text()
    assert "[REDACTED:purged]" in one
    edited = one.replace("[REDACTED:purged]", "vault://deploy-key-new")
    (mdir / "reference_one.md").write_text(edited)
    r = hs("purge", "--text", "QWERTY-99881", "--confirm", "QWERTY-99881")
    assert r.exit_code == 0, r.stderr
    assert "has edits not recorded: left as it is" in r.stdout
    assert (mdir / "reference_one.md").read_text() == edited


def test_redact_lists_then_applies_the_current_rules_and_patterns(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    secret = "ACME-771234"
    recs = [turn_record(i, asked=f"the licence is {secret}, code {i}") for i in range(1, 4)]
    _ok(hs("init"))
    _ok(hs("import", str(write_turns(tmp_path / "t.jsonl", recs))))
    _ok(hs("forget", "turn-0001", "--confirm", "turn-0001", "--reason", f"licence {secret}"))
    r = hs("redact")
    assert (r.exit_code, r.stdout, r.stderr) == (
        0,
        "everything stored is redacted by the current rules: nothing would change\n",
        "",
    )
    config = tomllib.loads((store_path / "config.toml").read_text())
    config["redact"]["patterns"] = ["ACME-[0-9]{6}"]
    config["redact"]["rulesets"] = ["0+histstore-16", config["redact"]["ruleset"]]
    (store_path / "config.toml").write_text(tomli_w.dumps(config))
    before = snapshot(store_path)
    r = hs("redact")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout.splitlines() == [
        "would redact 4 objects: 1 marker, 3 turns",
        "  secrets by kind: custom 4",
        "nothing was changed: `hs redact --apply` writes the redacted revisions and purges",
        "  the old bytes (irreversible)",
    ]
    assert snapshot(store_path) == before
    r = hs("redact", "--apply")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines()[0] == "redacted 4 objects: 1 marker, 3 turns"
    assert secret not in r.stdout
    assert _scan(store_path, secret) == {}
    config = tomllib.loads((store_path / "config.toml").read_text())
    assert config["redact"]["rulesets"] == [config["redact"]["ruleset"]]
    r = hs("redact", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["objects"] == 0
    r = hs("fsck")
    assert (r.exit_code, r.stderr) == (0, "")
    r = hs("redact", "--apply", "--dry-run")
    assert r.exit_code == 2 and "contradict" in r.stderr


def test_sync_carries_a_purge_and_never_brings_it_back(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    path = _store(hs, tmp_path)
    remote = tmp_path / "b"
    _ok(hs("remote", "add", "lap", str(remote)))
    _ok(hs("push", "lap", "--init"))
    # the other store goes on with the session on its own
    more = write_turns(tmp_path / "more.jsonl", [turn_record(9, session_id="gone", asked=MARK)])
    _ok(hs("-C", str(remote), "import", str(more)))
    _ok(hs("purge", "gone", "--confirm", "gone"))
    r = hs("sync", "lap")
    assert r.exit_code == 0, r.stderr
    assert "  purges: 1 carried to the remote, 1 from it, each completed where it arrived" in (
        r.stdout.splitlines()
    )
    assert _scan(remote, MARK) == {}
    assert _scan(store_path, MARK) == {}
    r = hs("sync", "lap")
    assert r.exit_code == 0 and "up to date" in r.stdout
    # the other store imports the same file: it stores none of what was purged
    r = hs("-C", str(remote), "import", str(path), "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["turns_purged"] == 3
    assert _scan(remote, MARK) == {}
    r = hs("-C", str(remote), "fsck")
    assert (r.exit_code, r.stderr) == (0, "")


def test_sync_carries_a_note_purge_and_both_stores_merge_without_it(tmp_path: Path) -> None:
    """The other store wrote the note again on its own (and a note of its
    own): each completes the other's purge, the merge of the two memory
    revisions reads a base whose index a purge removed as none, and neither
    store keeps a byte of the note."""
    from synctools import memory_files, write_memory

    from histstore.ops import purge
    from histstore.ops.fsck import fsck
    from histstore.sync.engine import sync, synced_refs

    a, _ = Store.init(tmp_path / "a")
    b, _ = Store.init(tmp_path / "b")
    index = f"- [D](reference_d.md) — has {MARK}\n- [O](reference_o.md) — other\n"
    write_memory(
        a,
        "system",
        {
            "MEMORY.md": index.encode(),
            "reference_d.md": f"{MARK}\n".encode(),
            "reference_o.md": b"o\n",
        },
    )
    sync(a, b, "b")
    files = {
        "MEMORY.md": (index + "- [N](reference_n.md) — new\n").encode(),
        "reference_d.md": f"{MARK} again\n".encode(),
        "reference_o.md": b"o\n",
        "reference_n.md": b"n\n",
    }
    write_memory(b, "system", files, time="2026-03-02T10:00:00.000Z")
    target = "memory@system@reference@d"
    t = purge.resolve(a, target, target)
    purge.purge(a, purge.target_planner(t), command="hs purge")
    r = sync(a, b, "b")
    assert (r.purges_sent, r.purges_received) == (1, 1)  # b's own versions, back to a
    for s in (a, b):
        assert sorted(memory_files(s, "system")) == [
            "MEMORY.md",
            "reference_n.md",
            "reference_o.md",
        ]
        assert [f for f in fsck(s) if f.severity == "error"] == []
        assert _scan(s.root, MARK) == {}
    assert synced_refs(a) == synced_refs(b)
    assert memory_files(a, "system")["MEMORY.md"] == (
        "- [O](reference_o.md) — other\n- [N](reference_n.md) — new\n".encode()
    )


def test_a_purge_takes_what_the_capture_records_hold_of_it(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    """A hook's payload waits in the capture spool as it came (docs/format.md,
    "Capture records"): a session purge removes the session's payloads, its
    last-run records and failure lines; a text purge rewrites every record
    holding the text. The other sessions' records stay."""
    from histstore.capture.journal import Journal

    _store(hs, tmp_path)
    journal = Journal.of_store(store_path)

    def payload(session: str, text: str) -> str:
        return json.dumps({"session_id": session, "last_assistant_message": text})

    journal.spool("claude-code", payload("gone", f"the answer holds {MARK}"))
    journal.spool("claude-code", payload("keep", "nothing here"))
    # Codex's notify program is handed the thread's id as `thread-id`
    notify = {"type": "agent-turn-complete", "thread-id": "gone", "turn-id": "t9"}
    journal.spool("codex", json.dumps(notify))
    # the spool keeps no answer (fastspool.kept): the text never reached it
    assert not any(p.startswith("local/capture/spool") for p in _scan(store_path, MARK))
    journal.ran("claude-code", "Stop", {"session": "gone", "message": MARK, "result": "recorded"})
    journal.failure("claude-code", "Stop", f"could not read {MARK}", session="gone")
    journal.failure("claude-code", "Stop", "could not read", session="keep")
    assert _scan(store_path, MARK)
    r = hs("purge", "gone")
    assert r.exit_code == 0 and "  capture records rewritten or removed: 4" in r.stdout
    _ok(hs("purge", "gone", "--confirm", "gone"))
    assert _scan(store_path, MARK) == {}
    assert [json.loads(e.text).get("session_id") for e in journal.spooled()] == ["keep"]
    assert [f.get("session") for f in journal.failures()] == ["keep"]
    assert journal.last_runs() == []
    # a text purge rewrites the records that hold the text, and keeps them
    journal.failure("claude-code", "Stop", f"now {MARK} here", session="keep")
    _ok(hs("purge", "--text", MARK, "--confirm", MARK))
    assert _scan(store_path, MARK) == {}
    texts = sorted(str(f.get("message")) for f in journal.failures())
    assert texts == ["could not read", "now [REDACTED:purged] here"]
