"""The summary: hs log, status and show read it, and it always agrees with
reading every session (histstore/history/summary.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import HS, turn_record, write_turns

from histstore.history.project import project_key
from histstore.history.summary import Summary
from histstore.ops.importing import import_paths, record_turn
from histstore.ops.undo import undo
from histstore.store.oplog import RefChange
from histstore.store.store import Store


def _scanned(store: Store, project: str | None = None) -> list[tuple[str, str, str, str]]:
    """Every current turn, newest first, read from the sessions (no summary)."""
    out = []
    for s in store.sessions():
        for t in s.turns:
            own = t.project or s.project
            if project is None or own == project:
                out.append((t.asked_at, t.turn_id, s.session_id, t.object))
    out.sort(reverse=True)
    return out


def _summarized(store: Store, project: str | None = None) -> list[tuple[str, str, str, str]]:
    with Summary(store) as s:
        return [
            (r.entry.asked_at, r.entry.turn_id, r.session.session_id, r.entry.object)
            for r in s.log(projects=None if project is None else {project})
        ]


def _agree(store: Store) -> None:
    assert _summarized(store) == _scanned(store)
    with Summary(store) as s:
        counts = s.counts()
    sessions = list(store.sessions())
    assert counts["sessions"] == len(sessions)
    assert counts["turns"] == sum(len(x.turns) for x in sessions)
    assert counts["operations"] == len(store.operations())
    # sessions' projects and turns per agent, counted as sessions come and go
    assert counts["projects"] == len({project_key(x.project) for x in sessions})
    agents: dict[str, int] = {}
    for x in sessions:
        agents[x.agent] = agents.get(x.agent, 0) + len(x.turns)
    assert counts["agents"] == agents
    # the turns per project, counted as turns come and go, as a scan counts them
    per: dict[str, int] = {}
    for x in sessions:
        for t in x.turns:
            k = project_key(t.project or x.project)
            per[k] = per.get(k, 0) + 1
    with Summary(store) as s:
        assert s.project_turns(100) == sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))


def test_the_summary_follows_every_kind_of_operation(store: Store, tmp_path: Path) -> None:
    _agree(store)  # empty
    recs = [
        turn_record(i, session_id=f"s{i % 3}", project=f"/home/dev/p{i % 4}") for i in range(1, 30)
    ]
    op = import_paths(store, [write_turns(tmp_path / "a.jsonl", recs)]).operation
    _agree(store)
    for i in range(30, 35):  # deltas, one turn each
        record_turn(store, json.dumps(turn_record(i, session_id="s1")))
        _agree(store)
    # a revised turn: same id, other content
    record_turn(store, json.dumps(turn_record(31, session_id="s1", answered="changed")))
    _agree(store)
    # a revised turn that moved to another project
    record_turn(store, json.dumps(turn_record(32, session_id="s1", project="/home/dev/p9")))
    _agree(store)
    assert op is not None
    # newest first: sessions moved back to older revisions, then removed
    for later in reversed(store.refs.operations_after(op.op) or []):
        undo(store, later.op)
        _agree(store)
    undo(store, op.op)
    _agree(store)
    assert _summarized(store) == []


def test_a_summary_left_behind_catches_up_and_a_damaged_one_is_rebuilt(
    store: Store, tmp_path: Path
) -> None:
    recs = [turn_record(i, session_id="s") for i in range(1, 10)]
    import_paths(store, [write_turns(tmp_path / "a.jsonl", recs)])
    _agree(store)
    # operations the summary was not told of (as a sync or a forget would be)
    from histstore.history.importing import store_record

    store_record(store, json.dumps(turn_record(50, session_id="t")), "hs record")
    _agree(store)
    path = store.root / "local" / "summary.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    path.write_bytes(b"this is no database" * 100)
    assert _summarized(store) == _scanned(store)  # dropped and rebuilt


def test_log_project_matches_the_turns_own_project(hs: HS, tmp_path: Path) -> None:
    """A session whose turns moved to another directory: --project names the
    turn's own (cli.md), not the session's."""
    hs("init")
    recs = [
        turn_record(1, session_id="s", project="/home/dev/app"),
        turn_record(2, session_id="s", project="/home/dev/lib"),
        turn_record(3, session_id="s", project="/home/dev/lib"),
    ]
    assert hs("import", str(write_turns(tmp_path / "a.jsonl", recs))).exit_code == 0
    got = hs.json_lines("log", "--json", "--project", "/home/dev/lib")
    assert [t["turn_id"] for t in got] == ["turn-0003", "turn-0002"]
    got = hs.json_lines("log", "--json", "--project", "/home/dev/app")
    assert [t["turn_id"] for t in got] == ["turn-0001"]


def test_log_limit_status_and_show_read_the_summary(
    hs: HS, store_path: Path, tmp_path: Path
) -> None:
    hs("init")
    recs = [turn_record(i, session_id=f"s{i % 4}") for i in range(1, 41)]
    hs("import", str(write_turns(tmp_path / "a.jsonl", recs)))
    r = hs("log", "--json", "-n", "5")
    got: list[Any] = [json.loads(x) for x in r.stdout.splitlines()]
    with Store.open(store_path) as s:
        want = _scanned(s)[:5]
    assert [(t["asked_at"], t["turn_id"]) for t in got] == [(w[0], w[1]) for w in want]
    st = json.loads(hs("status", "--json").stdout)
    assert (st["sessions"], st["turns"], st["operations"]) == (4, 40, 1)
    assert sum(st["agents"].values()) == 40
    r = hs("show", "turn-0007")
    assert r.exit_code == 0 and "turn turn-0007" in r.stdout
    r = hs("show", "turn-000")
    assert r.exit_code == 2 and "ambiguous" in r.stderr
    # the summary is the file that answered
    assert (store_path / "local" / "summary.sqlite").exists()


def test_oneline_ids_are_as_long_as_it_takes_to_name_one_turn(hs: HS, tmp_path: Path) -> None:
    """Early Codex turn ids are ``<session id>-<n>``: cut at 12 characters,
    every turn of a session looked the same and ``hs show`` refused them."""
    sid = "019aad50-a7e1-7c33-9a56-1b2c3d4e5f60"
    turns = [turn_record(n, session_id=sid, turn_id=f"{sid}-{n}") for n in (1, 2, 12)]
    turns.append(turn_record(4, session_id="s-other", turn_id="t-unrelated-turn-id"))
    hs("init")
    hs("import", str(write_turns(tmp_path / "t.jsonl", turns)))
    r = hs("log", "--oneline")
    assert r.exit_code == 0 and r.stderr == ""
    shown = [line.split()[0] for line in r.stdout.splitlines()]
    assert sorted(shown) == sorted([f"{sid}-1", f"{sid}-12", f"{sid}-2", "t-unrelated-"])
    for short in shown:  # each one names its turn alone
        assert hs("show", short).exit_code == 0, short


#: what each older schema lacks (dropped from a current file to make one)
_LACKS_4 = (
    "DROP TRIGGER session_added; DROP TRIGGER session_removed;"
    "DROP TABLE agent; DROP TABLE session_pkey;"
)
OLDER = {
    "2": _LACKS_4 + "DROP TRIGGER turn_added; DROP TRIGGER turn_removed; DROP TABLE project;",
    "3": _LACKS_4,
}


@pytest.mark.parametrize("schema", sorted(OLDER))
def test_an_older_summary_gains_what_it_lacks_without_a_rebuild(
    store: Store, tmp_path: Path, monkeypatch: Any, schema: str
) -> None:
    """Schema 2 gains the turns per project, 3 the sessions per agent and
    project, each counted once in place (a rebuild at 1M turns takes a
    minute); the triggers count from then on."""
    import sqlite3

    recs = [
        turn_record(i, session_id=f"s{i % 3}", project=f"/w/p{i % 2}", agent=("a", "b")[i % 2])
        for i in range(12)
    ]
    import_paths(store, [write_turns(tmp_path / "a.jsonl", recs)])
    _agree(store)
    conn = sqlite3.connect(store.root / "local" / "summary.sqlite", isolation_level=None)
    conn.executescript(OLDER[schema] + f"UPDATE meta SET value = '{schema}' WHERE key = 'schema';")
    conn.close()

    def no_rebuild(*a: Any) -> None:
        raise AssertionError("rebuilt")

    monkeypatch.setattr(Summary, "_reset", no_rebuild)
    _agree(store)
    record_turn(store, json.dumps(turn_record(20, session_id="s9", project="/w/p7", agent="c")))
    record_turn(store, json.dumps(turn_record(21, session_id="s0", agent="c")))
    _agree(store)  # the triggers count from now on
    with Summary(store) as s:
        assert s._meta(s.current(), "schema") == "4"


def test_a_log_unchanged_since_the_summary_matched_it_is_not_read(
    store: Store, tmp_path: Path, monkeypatch: Any
) -> None:
    """The summary keeps the refs log's version (inode, size, mtime) from when
    it last matched it: a reader finding that version needs nothing of the log
    (its newest entry, an import's, is megabytes at 1M turns); an append or a
    rewrite is a new version, and the summary is compared and caught up."""
    import_paths(store, [write_turns(tmp_path / "a.jsonl", [turn_record(1)])])
    _agree(store)
    calls: list[int] = []
    real = type(store.refs).last_op_id

    def counted(self: Any) -> str | None:
        calls.append(1)
        return real(self)

    monkeypatch.setattr(type(store.refs), "last_op_id", counted)
    with Store.open(store.root) as s, Summary(s) as summary:
        summary.current()
        assert calls == []  # matched, unchanged since
    # an operation the summary never saw (no session moved: nothing to replay)
    with store.lock():
        blob = store.objects.put("blob", b"x")
        store.refs.apply([RefChange("heads/test", None, blob)], "test")
    calls.clear()
    with Store.open(store.root) as s, Summary(s) as summary:
        summary.current()
        assert calls  # the log grew: compared, and caught up
        assert summary.counts()["operations"] == len(store.operations())
    calls.clear()
    with Store.open(store.root) as s, Summary(s) as summary:
        summary.current()
        assert calls == []
    # the same bytes put in its place (another inode, another mtime, as
    # atomic_write does): compared again, still matching
    log = store.refs.log_path
    tmp = log.with_name("refs.log.tmp")
    tmp.write_bytes(log.read_bytes())
    st = log.stat()
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    os.replace(tmp, log)
    with Store.open(store.root) as s, Summary(s) as summary:
        assert summary.counts()["turns"] == 1
        assert calls
    _agree(store)


def test_a_rebuild_never_counts_an_operation_still_moving_its_refs(
    store: Store, tmp_path: Path, monkeypatch: Any
) -> None:
    """An operation is logged, then its refs move, then ``refs.applied`` names
    it. A summary rebuilt in between (from the refs as they are) reflects the
    operation before it, so the next reader replays it once it is done."""
    from histstore.store.refs import RefStore

    import_paths(store, [write_turns(tmp_path / "a.jsonl", [turn_record(1)])])
    before = store.refs.applied()
    real = RefStore._apply_changes

    def crash(self: Any, *a: Any, **k: Any) -> None:
        raise KeyboardInterrupt  # killed once the operation is logged

    monkeypatch.setattr(RefStore, "_apply_changes", crash)
    with pytest.raises(KeyboardInterrupt):
        record_turn(store, json.dumps(turn_record(2, session_id="s-new")))
    monkeypatch.setattr(RefStore, "_apply_changes", real)
    logged = store.refs.last_op_id()
    assert logged != before and store.refs.applied() == before
    Summary(store).remove()
    with Store.open(store.root) as s, Summary(s) as summary:
        conn = summary.current()  # rebuilt from the refs, the new turn not among them
        assert summary._meta(conn, "applied_op") == before
        assert summary._meta(conn, "log_version") is None
    with Store.open(store.root) as s, s.lock():
        s.refs.recover()  # (taking the lock rolls it forward already)
        assert s.refs.applied() == logged  # the operation completed
    _agree(store)
    with Summary(store) as summary:
        assert summary.counts()["turns"] == 2
        assert summary.counts()["operations"] == len(store.operations())
