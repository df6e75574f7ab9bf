"""Import semantics: idempotent, incremental, revisions, sessions and sub-agents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import turn_record, write_turns

from histstore.history.reading import load_turn, log_entries
from histstore.history.sources import Sources, source_row
from histstore.ops.importing import import_paths, record_turn
from histstore.store.store import Store


def claude_line(**kw: object) -> str:
    base: dict[str, object] = {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/src/app",
        "sessionId": "11111111-2222-3333-4444-555555555555",
        "version": "2.0.40",
        "gitBranch": "main",
    }
    base.update(kw)
    return json.dumps(base)


def prompt(uuid: str, text: str, ts: str, parent: str | None = None) -> str:
    return claude_line(
        type="user",
        uuid=uuid,
        parentUuid=parent,
        timestamp=ts,
        message={"role": "user", "content": text},
    )


def answer(uuid: str, parent: str, text: str, ts: str, msg: str) -> str:
    return claude_line(
        type="assistant",
        uuid=uuid,
        parentUuid=parent,
        timestamp=ts,
        message={
            "id": msg,
            "model": "claude-sonnet-4",
            "role": "assistant",
            "type": "message",
            "content": [{"type": "text", "text": text}],
        },
    )


def test_grown_session_file_adds_only_new_turns(store: Store, tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "-home-dev-src-app"
    proj.mkdir(parents=True)
    f = proj / "11111111-2222-3333-4444-555555555555.jsonl"
    lines = [
        prompt("u1", "first question", "2026-05-01T10:00:00.000Z"),
        answer("a1", "u1", "first answer", "2026-05-01T10:00:05.000Z", "msg_1"),
    ]
    f.write_text("\n".join(lines) + "\n")
    rep = import_paths(store, [tmp_path / "projects"])
    assert (rep.turns_added, rep.sessions_added) == (1, 1)
    with open(f, "a") as fh:
        fh.write(prompt("u2", "second question", "2026-05-01T11:00:00.000Z", "a1") + "\n")
        fh.write(answer("a2", "u2", "second answer", "2026-05-01T11:00:03.000Z", "msg_2") + "\n")
    rep = import_paths(store, [tmp_path / "projects"])
    assert (rep.turns_added, rep.turns_unchanged, rep.sessions_updated) == (1, 1, 1)
    s = store.session("11111111-2222-3333-4444-555555555555")
    assert [t.turn_id for t in s.turns] == ["u1", "u2"]
    assert s.project == "/home/dev/src/app"
    turn = load_turn(store, s.turns[1].object)
    assert turn["asked"] == "second question" and turn["answered"] == "second answer"
    assert turn["agent"] == "claude-code" and turn["model"] == "claude-sonnet-4"
    # where it came from is beside the turn, not in it
    assert "source" not in turn
    assert Sources(store).of(s.turns[1].object)["line"] == 3
    # and the line of each of its raw records (what an export in the agent's
    # format puts back in order)
    assert Sources(store).where(s.turns[1].object)["lines"] == [3, 4]
    rep = import_paths(store, [tmp_path / "projects"])
    # as it was when last read: not read at all
    assert rep.operation is None and rep.files_unchanged == 1 and rep.files == 0


def test_same_turn_id_new_content_is_a_new_revision(store: Store, tmp_path: Path) -> None:
    record_turn(store, json.dumps(turn_record(1)))
    old_obj = store.session("sess-a").turns[0].object
    record_turn(store, json.dumps(turn_record(1, answered="revised answer")))
    s = store.session("sess-a")
    assert len(s.turns) == 1
    assert load_turn(store, s.turns[0].object)["answered"] == "revised answer"
    history = list(store.session_history("sess-a"))
    assert len(history) == 2
    assert history[1][1].turns[0].object == old_obj
    assert load_turn(store, old_obj)["answered"].startswith("answer 1")


def test_turns_of_a_session_are_in_time_order(store: Store, tmp_path: Path) -> None:
    recs = [
        turn_record(3, asked_at="2026-01-03T00:00:00Z"),
        turn_record(1, asked_at="2026-01-01T00:00:00Z"),
        turn_record(2, asked_at="2026-01-02T00:00:00Z"),
    ]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    assert [t.turn_id for t in store.session("sess-a").turns] == [
        "turn-0001",
        "turn-0002",
        "turn-0003",
    ]
    assert [e.turn_id for e in log_entries(store)] == ["turn-0003", "turn-0002", "turn-0001"]


def test_subagent_turns_belong_to_the_parent_session(store: Store, tmp_path: Path) -> None:
    sid = "11111111-2222-3333-4444-555555555555"
    proj = tmp_path / "projects" / "-home-dev-src-app"
    (proj / sid / "subagents").mkdir(parents=True)
    (proj / f"{sid}.jsonl").write_text(
        prompt("u1", "explore the code", "2026-05-01T10:00:00.000Z")
        + "\n"
        + answer("a1", "u1", "explored", "2026-05-01T10:05:00.000Z", "msg_1")
        + "\n"
    )
    (proj / sid / "subagents" / "agent-abc1234.jsonl").write_text(
        claude_line(
            type="user",
            uuid="s1",
            isSidechain=True,
            agentId="abc1234",
            timestamp="2026-05-01T10:00:10.000Z",
            message={"role": "user", "content": "find the login code"},
        )
        + "\n"
        + claude_line(
            type="assistant",
            uuid="s2",
            parentUuid="s1",
            isSidechain=True,
            agentId="abc1234",
            timestamp="2026-05-01T10:01:00.000Z",
            message={
                "id": "msg_s",
                "model": "claude-haiku",
                "role": "assistant",
                "type": "message",
                "content": [{"type": "text", "text": "it is in auth.py"}],
            },
        )
        + "\n"
    )
    rep = import_paths(store, [tmp_path / "projects"])
    assert rep.sessions_added == 1 and rep.turns_added == 2
    s = store.session(sid)
    assert [(t.turn_id, t.subagent) for t in s.turns] == [("u1", None), ("s1", "abc1234")]
    assert load_turn(store, s.turns[1].object)["answered"] == "it is in auth.py"


def test_large_outputs_are_stored_once(store: Store, tmp_path: Path) -> None:
    big = "the same large file content\n" * 200
    recs = [
        turn_record(
            i,
            steps=[
                {
                    "type": "tool",
                    "id": f"t{i}",
                    "name": "Read",
                    "input": {"file_path": "a.py"},
                    "output": big,
                    "is_error": False,
                    "at": None,
                }
            ],
        )
        for i in range(1, 51)
    ]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    blobs = [i for i in store.objects.iter_ids() if store.objects.get(i)[0] == "blob"]
    assert sum(1 for b in blobs if store.get_blob(b) == big.encode()) == 1


def test_failed_turn_keeps_its_tool_steps(store: Store, tmp_path: Path) -> None:
    steps = [
        {
            "type": "tool",
            "id": "t1",
            "name": "Bash",
            "input": {"command": "make"},
            "output": "error",
            "is_error": True,
            "at": None,
        },
    ]
    record_turn(store, json.dumps(turn_record(1, status="failed", answered="", steps=steps)))
    turn = load_turn(store, store.session("sess-a").turns[0].object)
    assert turn["status"] == "failed" and turn["steps"][0]["name"] == "Bash"


def test_claude_code_import_with_bad_line(store: Store, tmp_path: Path) -> None:
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "11111111-2222-3333-4444-555555555555.jsonl").write_text(
        prompt("u1", "q", "2026-05-01T10:00:00.000Z")
        + "\n{broken\n"
        + answer("a1", "u1", "ans", "2026-05-01T10:00:05.000Z", "m1")
        + "\n"
    )
    rep = import_paths(store, [proj])
    assert rep.turns_added == 1
    assert [(p.line, "JSON" in p.message) for p in rep.problems] == [(2, True)]


def test_project_scoping_uses_the_git_top_level_when_local(store: Store, tmp_path: Path) -> None:
    from histstore.history.project import project_key

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "pkg").mkdir(parents=True)
    assert project_key(str(repo / "src" / "pkg")) == str(repo)
    assert project_key(str(tmp_path)) == str(tmp_path)
    assert project_key("/no/such/machine/path") == "/no/such/machine/path"
    assert project_key("C:\\Users\\dev\\app") == "C:\\Users\\dev\\app"
    proj = tmp_path / "projects" / "-x"
    proj.mkdir(parents=True)
    (proj / "11111111-2222-3333-4444-555555555555.jsonl").write_text(
        claude_line(
            type="user",
            uuid="u1",
            cwd=str(repo / "src"),
            timestamp="2026-05-01T10:00:00.000Z",
            message={"role": "user", "content": "hello"},
        )
        + "\n"
    )
    import_paths(store, [proj])
    sid = "11111111-2222-3333-4444-555555555555"
    # the turn keeps the directory as recorded; scoping maps it to its project
    assert store.session(sid).project == str(repo / "src")
    assert [e.turn_id for e in log_entries(store, project=str(repo))] == ["u1"]
    assert [e.turn_id for e in log_entries(store, project=str(repo / "src"))] == ["u1"]
    assert log_entries(store, project=str(tmp_path / "elsewhere")) == []
    # what the disk holds at import time never changes what is stored
    (repo / ".git").rmdir()
    assert import_paths(store, [proj]).operation is None


def test_progress_reports_every_byte_read(store: Store, tmp_path: Path) -> None:
    recs = [turn_record(i, asked="x" * 3000) for i in range(1, 800)]
    path = write_turns(tmp_path / "t.jsonl", recs)
    (tmp_path / "notes.jsonl").write_text('{"something": "else"}\n')
    seen: list[int] = []
    import_paths(store, [path, tmp_path / "notes.jsonl"], progress=seen.append)
    assert len(seen) > 2  # a long file reports as it goes, not once at the end
    assert sum(seen) == path.stat().st_size + (tmp_path / "notes.jsonl").stat().st_size


def interleaved(n: int, sessions: int = 5) -> list[dict[str, object]]:
    return [
        turn_record(
            i, session_id=f"s{i % sessions}", asked_at=f"2026-04-01T{i // 60:02d}:{i % 60:02d}:00Z"
        )
        for i in range(n)
    ]


def test_long_import_flushes_staged_revisions_with_the_same_result(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from histstore.history.importing import Importer

    path = write_turns(tmp_path / "t.jsonl", interleaved(300))
    reference, _ = Store.init(tmp_path / "reference")
    with reference:
        import_paths(reference, [path])
        want = {s.session_id: [t.as_json() for t in s.turns] for s in reference.sessions()}
    monkeypatch.setattr(Importer, "FLUSH_TURNS", 40)
    rep = import_paths(store, [path])
    assert rep.turns_added == 300 and rep.sessions_added == 5
    got = {s.session_id: [t.as_json() for t in s.turns] for s in store.sessions()}
    assert got == want
    # each flush ended a pack; no staged revision became a parent in history
    assert len(list((store.root / "objects" / "pack").glob("pack-*.idx"))) >= 7
    for sid in got:
        assert [rev.parent for _, rev in store.session_history(sid)] == [None]
    assert len(store.operations()) == 1
    # a second long import on top revises from the refs, not the staged revisions
    changed = [dict(r, answered="changed") for r in interleaved(300)[:100]]
    rep = import_paths(store, [write_turns(tmp_path / "u.jsonl", changed)])
    assert (rep.turns_revised, rep.turns_unchanged, rep.sessions_updated) == (100, 0, 5)
    for sid in got:
        history = list(store.session_history(sid))
        assert len(history) == 2 and history[0][1].parent == history[1][0]


def test_a_long_import_keeps_where_its_turns_came_from_on_disk(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import holds a bounded number of source rows in memory (a million
    turns held ~600 MB of them): the rest wait in an unnamed temporary file.
    The table ends the same as with every row held, and nothing is left
    beside it."""
    from histstore.history.sources import PendingSources

    def rows(of: Store) -> list[tuple[object, ...]]:
        db = Sources(of)._db()
        assert db is not None
        return db.execute(
            "SELECT object, path, format, line, end_line, byte_offset, seq, raw_lines"
            " FROM turns ORDER BY seq"
        ).fetchall()

    path = write_turns(tmp_path / "t.jsonl", interleaved(50))
    reference, _ = Store.init(tmp_path / "reference")
    with reference:
        import_paths(reference, [path])
        want = rows(reference)
    spills: list[int] = []
    spill = PendingSources._spill

    def counted(self: PendingSources) -> None:
        spills.append(len(self._rows))
        spill(self)

    monkeypatch.setattr(PendingSources, "CHUNK", 7)
    monkeypatch.setattr(PendingSources, "_spill", counted)
    import_paths(store, [path])
    assert spills == [7] * 7  # 49 rows spilled, the 50th kept in memory
    got = rows(store)
    assert got == want and len(got) == 50 and [r[3] for r in got] == list(range(1, 51))
    assert sorted(p.name for p in (store.root / "local").iterdir()) == sorted(
        p.name for p in (reference.root / "local").iterdir()
    )


def test_a_spill_the_disk_refuses_keeps_the_rows_in_memory(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk half-way through a spill must neither lose the import nor
    have half a line read back: the rows stay in memory from then on, and
    the table ends as it would have."""
    import errno
    import tempfile

    from histstore.history.sources import PendingSources

    path = write_turns(tmp_path / "t.jsonl", interleaved(30))
    reference, _ = Store.init(tmp_path / "reference")
    with reference:
        import_paths(reference, [path])
        db = Sources(reference)._db()
        assert db is not None
        want = db.execute("SELECT * FROM turns ORDER BY seq").fetchall()
    made = tempfile.TemporaryFile
    writes: list[int] = []

    class Full:
        def __init__(self, **kw: object) -> None:
            self.f = made(**kw)  # type: ignore[call-overload]

        def write(self, data: bytes) -> int:
            writes.append(len(data))
            if len(writes) == 2:  # the second spill: half of it, then the disk is full
                self.f.write(data[: len(data) // 2])
                raise OSError(errno.ENOSPC, "No space left on device")
            return int(self.f.write(data))

        def __iter__(self) -> object:
            return iter(self.f)

        def __getattr__(self, name: str) -> object:
            return getattr(self.f, name)

    monkeypatch.setattr(tempfile, "TemporaryFile", Full)
    monkeypatch.setattr(PendingSources, "CHUNK", 7)
    rep = import_paths(store, [path])
    assert rep.complete and rep.turns_added == 30 and not rep.problems
    assert len(writes) == 2  # no spill tried after the one refused
    db = Sources(store)._db()
    assert db is not None
    assert db.execute("SELECT * FROM turns ORDER BY seq").fetchall() == want


def test_a_session_moved_during_an_import_keeps_both(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer records into a session after this import read its ref: the
    commit merges onto the current revision (staged and pending turns alike)."""
    from histstore.history.importing import Importer

    monkeypatch.setattr(Importer, "FLUSH_TURNS", 10)
    record_turn(store, json.dumps(turn_record(9000, session_id="s0")))
    imp = Importer(store, "hs import test")
    with store.objects.batch() as batch:
        for i, rec in enumerate(interleaved(60)):
            imp.add_turn(batch, normalize(rec), ("t.jsonl", i + 1))
        # meanwhile, another process records into s0 and s1
        record_turn(store, json.dumps(turn_record(9001, session_id="s0")))
        record_turn(store, json.dumps(turn_record(9002, session_id="s1")))
        imp.commit(batch)
    ids = {s.session_id: {t.turn_id for t in s.turns} for s in store.sessions()}
    assert {"turn-9000", "turn-9001"} <= ids["s0"] and "turn-9002" in ids["s1"]
    assert sum(len(v) for v in ids.values()) == 63


def normalize(rec: dict[str, object]) -> dict[str, object]:
    from histstore.history.turn import normalize_turn

    return normalize_turn(rec)


def test_a_source_table_from_before_raw_lines_gains_the_column(
    store: Store, tmp_path: Path
) -> None:
    import sqlite3

    path = store.root / "local" / "sources.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE turns(object TEXT NOT NULL, path TEXT NOT NULL, format TEXT NOT NULL,"
        " line INTEGER, end_line INTEGER, byte_offset INTEGER, seq INTEGER NOT NULL,"
        " PRIMARY KEY(object, path))"
    )
    db.execute("INSERT INTO turns VALUES ('old', '/f.jsonl', 'claude-code', 3, 9, 120, 1)")
    db.commit()
    db.close()
    ro = Sources(store, readonly=True)  # read-only: no column added, the row still reads
    assert ro.where("old") == {
        "format": "claude-code",
        "file": "/f.jsonl",
        "line": 3,
        "end_line": 9,
        "offset": 120,
        "lines": None,
    }
    ro.close()
    rw = Sources(store)
    assert rw.of("old") == {
        "format": "claude-code",
        "file": "/f.jsonl",
        "line": 3,
        "end_line": 9,
        "offset": 120,
    }
    rw.record_rows(
        [source_row("new", {"format": "codex", "file": "/g.jsonl", "line": 2, "lines": [[1, 3]]})]
    )
    assert rw.where("new")["lines"] == [1, 2, 3]
    rw.close()


def test_source_rows_are_written_beside_another_writer(store: Store, tmp_path: Path) -> None:
    """Captures run in parallel, and each records its turns' sources after the
    store lock: a transaction that read the table, then wrote, failed at once
    ("database is locked") when another process committed in between. It takes
    the write lock first now: the other writer waits, this one succeeds."""
    import sqlite3

    sources = Sources(store)
    sources.record_rows([source_row("a" * 64, {"file": "/s/a.jsonl", "format": "claude-code"})])
    db = sources._db(write=True)
    assert db is not None
    other = sqlite3.connect(sources.path, timeout=0, isolation_level=None)
    said: list[str] = []

    def meanwhile(statement: str) -> None:
        if statement.startswith("INSERT OR REPLACE INTO turns") and not said:
            try:
                other.execute(
                    "INSERT OR REPLACE INTO turns (object, path, format, seq)"
                    " VALUES ('b', '/s/b.jsonl', 'claude-code', 99)"
                )
                said.append("the other writer got in")
            except sqlite3.OperationalError as e:
                said.append(f"the other writer waits: {e}")

    db.set_trace_callback(meanwhile)
    try:
        sources.record_rows([source_row("c" * 64, {"file": "/s/c.jsonl", "format": "claude-code"})])
    finally:
        db.set_trace_callback(None)
        other.close()
    assert said == ["the other writer waits: database is locked"]
    assert {o for o, _ in sources.all_turns()} >= {"a" * 64, "c" * 64}
    sources.close()
