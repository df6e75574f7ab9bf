"""``hs capture``: what the agents' hooks run. A fake agent writes a
real-format transcript line by line and fires each hook as the agent would;
every turn lands once, the cost of a capture stays flat, and the agent never
sees anything: exit 0, nothing on stdout or stderr, whatever happens (the
store locked, missing or corrupt, the payload bad, the transcript lagging).
Every home is the test's temporary HOME (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_agents import FakeClaude, FakeCodex
from helpers import HS

from histstore.capture.journal import Journal
from histstore.ops.fsck import fsck
from histstore.store.objectstore import DiskObjectStore
from histstore.store.store import Store

#: turns the fake agent writes in the long runs (`make test-deep`: 1,000)
TURNS = int(os.environ.get("HS_CAPTURE_TURNS", "50"))


@pytest.fixture
def claude(tmp_path: Path) -> FakeClaude:
    return FakeClaude(Path(os.environ["HOME"]) / ".claude")


def fire(hs: HS, store: Path, agent: str, payload: Any, *extra: str) -> None:
    """Run the hook as the agent does; it must say nothing and exit 0."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    r = hs("--store", str(store), "capture", agent, *extra, input=text)
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")


def turns(store_path: Path) -> dict[str, Any]:
    """turn id -> its turn object, over every session."""
    with Store.open(store_path) as s:
        return {t.turn_id: s.get_json(t.object, "turn") for x in s.sessions() for t in x.turns}


def last_run(store_path: Path, agent: str, event: str) -> dict[str, Any]:
    runs = [
        r
        for r in Journal.of_store(store_path).last_runs()
        if r["agent"] == agent and r["event"] == event
    ]
    assert runs, Journal.of_store(store_path).last_runs()
    return runs[0]


class Reads:
    """Counts the objects read (each one verified: the cost of a capture)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.n = 0
        real = DiskObjectStore.get

        def get(this: DiskObjectStore, oid: str) -> Any:
            self.n += 1
            return real(this, oid)

        monkeypatch.setattr(DiskObjectStore, "get", get)


def objects_bytes(store_path: Path) -> int:
    return sum(p.stat().st_size for p in (store_path / "objects").rglob("*") if p.is_file())


# --------------------------------------------------------------------------- the long run


def test_every_turn_lands_once_and_a_capture_costs_the_same_at_the_end(
    hs: HS, store: Store, store_path: Path, claude: FakeClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = Reads(monkeypatch)
    per_capture: list[int] = []
    growth: list[int] = []
    ids = []
    for n in range(1, TURNS + 1):
        ids.append(claude.turn(f"question {n:05d} about the login flow", f"answer {n:05d}"))
        before, size = reads.n, objects_bytes(store_path)
        fire(
            hs,
            store_path,
            "claude-code",
            claude.payload("Stop", last_assistant_message=f"answer {n:05d}"),
        )
        per_capture.append(reads.n - before)
        growth.append(objects_bytes(store_path) - size)
        if n % 25 == 0:  # a sub-agent's stop and a compaction now and then
            fire(hs, store_path, "claude-code", claude.payload("PreCompact"))
    fire(hs, store_path, "claude-code", claude.payload("SessionEnd"))
    have = turns(store_path)
    assert sorted(have) == sorted(ids)
    assert [have[i]["answered"] for i in ids] == [f"answer {n:05d}" for n in range(1, TURNS + 1)]
    with Store.open(store_path) as s:
        (session,) = list(s.sessions())
        assert len(session.turns) == TURNS  # each once
        assert [f for f in fsck(s) if f.severity == "error"] == []
    # flat: the last captures read no more objects, and add no more bytes, than the first
    early, late = per_capture[5:15], per_capture[-10:]
    assert max(late) <= max(early), (early, late)
    assert sum(growth[-10:]) <= sum(growth[5:15]) * 1.2, (growth[5:15], growth[-10:])
    r = last_run(store_path, "claude-code", "Stop")
    assert (r["result"], r["turns_added"], r["waiting"]) == ("recorded", 1, 0)


def test_half_the_run_with_the_lock_held_by_another_process(
    hs: HS, store: Store, store_path: Path, claude: FakeClaude
) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, filelock; l = filelock.FileLock(sys.argv[1]); l.acquire();"
            " print('held', flush=True); sys.stdin.read()",
            str(store_path / "lock"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "held"
    n_half = max(4, TURNS // 2)
    ids = []
    try:
        for n in range(1, n_half + 1):
            ids.append(claude.turn(f"q {n}", f"a {n}", lag=n == n_half))
            fire(hs, store_path, "claude-code", claude.payload(last_assistant_message=f"a {n}"))
            r = last_run(store_path, "claude-code", "Stop")
            assert (r["result"], r["waiting"]) == ("spooled", n)
        assert turns(store_path) == {}  # nothing written while it was held
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    claude.flush()
    for n in range(n_half + 1, 2 * n_half + 1):
        ids.append(claude.turn(f"q {n}", f"a {n}"))
        fire(hs, store_path, "claude-code", claude.payload(last_assistant_message=f"a {n}"))
    have = turns(store_path)
    assert sorted(have) == sorted(ids)
    assert all(have[i]["answered"] == f"a {k}" for k, i in enumerate(ids, 1))
    assert Journal.of_store(store_path).spooled() == []
    assert last_run(store_path, "claude-code", "Stop")["result"] == "recorded"


# --------------------------------------------------------------------------- the lag


def test_a_lagging_transcript_takes_the_hooks_answer_then_the_next_event_reads_it(
    hs: HS, store: Store, store_path: Path, claude: FakeClaude
) -> None:
    secret = "sk-ant-api03-" + "A" * 93 + "AA"
    t1 = claude.turn("fix the login", "the real answer", lag=True)
    fire(hs, store_path, "claude-code", claude.payload(last_assistant_message=f"done {secret}"))
    got = turns(store_path)[t1]
    assert got["answered"].startswith("done ") and secret not in got["answered"]  # redacted
    assert got["extra"]["answered_from"] == "hook"
    r = last_run(store_path, "claude-code", "Stop")
    assert r["lagging"] is True and "lags" in r["message"]
    claude.flush()  # the agent writes its answer at last
    fire(hs, store_path, "claude-code", claude.payload("SessionEnd"))
    got = turns(store_path)[t1]
    assert got["answered"] == "the real answer"
    assert "answered_from" not in (got.get("extra") or {})


def test_a_finished_answer_with_a_secret_is_not_taken_from_the_hook(
    hs: HS, store: Store, store_path: Path, claude: FakeClaude
) -> None:
    """The stored answer is redacted; the hook's is compared redacted too, so
    an answer the transcript holds is never mistaken for a lagging one."""
    answer = "pushed with ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    t1 = claude.turn("push it", answer)
    fire(hs, store_path, "claude-code", claude.payload(last_assistant_message=answer))
    got = turns(store_path)[t1]
    assert got["answered"].startswith("pushed with ") and "ghp_aB3" not in got["answered"]
    assert "answered_from" not in (got.get("extra") or {})
    r = last_run(store_path, "claude-code", "Stop")
    assert (r["result"], r["lagging"], r["message"]) == ("recorded", False, "")


def test_a_late_payload_never_gives_its_answer_to_a_later_turn(
    hs: HS, store: Store, store_path: Path, claude: FakeClaude
) -> None:
    """A payload whose prompt_id is not the last turn's leaves that turn alone."""
    claude.turn("first", "first answer")
    stale = claude.payload(last_assistant_message="first answer, as the hook said")
    t2 = claude.turn("second", "second answer", lag=True)
    fire(hs, store_path, "claude-code", stale)
    assert turns(store_path)[t2]["answered"] == ""  # unfinished, and not given the stale answer


def test_a_subagents_stop_reads_its_own_transcript(
    hs: HS, store: Store, store_path: Path, claude: FakeClaude
) -> None:
    claude.turn("delegate it", "delegated")
    sub = claude.subagent("ab63947e14e828837", "look around", "found it")
    fire(
        hs,
        store_path,
        "claude-code",
        claude.payload(
            "SubagentStop",
            agent_id="ab63947e14e828837",
            agent_type="general-purpose",
            agent_transcript_path=str(sub),
            last_assistant_message="found it",
        ),
    )
    have = turns(store_path)
    assert {t.get("subagent") for t in have.values()} == {None, "ab63947e14e828837"}
    assert len(have) == 2


# --------------------------------------------------------------------------- a transcript being written


@pytest.mark.parametrize(("last", "then"), [('{"b": ', "2}\n"), ('{"b": 2}', "\n")])
def test_reading_stops_at_a_line_still_being_written(tmp_path: Path, last: str, then: str) -> None:
    """A last line without its newline is the agent's, maybe half written:
    reading stops after it, so what is written meanwhile is never read as a
    line of its own and no line number shifts; the next read starts there."""
    from histstore.history.importers import Problem, Resume
    from histstore.history.importers.jsonl import json_lines

    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n' + last)
    problems: list[Problem] = []
    lines = json_lines(path, lambda s: s, problems)
    first, second = next(lines), next(lines)
    assert (first.lineno, first.obj, first.unfinished) == (1, {"a": 1}, False)
    assert (second.lineno, second.unfinished) == (2, True)
    with path.open("a") as f:  # the agent ends its line, and writes another
        f.write(then + '{"c": 3}\n')
    assert (list(lines), problems) == ([], [])
    at = len('{"a": 1}\n')
    again = list(json_lines(path, lambda s: s, problems, start=Resume(at, 2, {})))
    assert [(x.lineno, x.at, x.obj, x.error) for x in again] == [
        (2, at, {"b": 2}, None),
        (3, at + len('{"b": 2}\n'), {"c": 3}, None),
    ]
    assert problems == []


# --------------------------------------------------------------------------- codex


def test_codex_stop_and_notify(hs: HS, store: Store, store_path: Path) -> None:
    codex = FakeCodex(Path(os.environ["HOME"]) / ".codex")
    t1 = codex.turn("Fix the login bug", "Fixed it.")
    fire(hs, store_path, "codex", codex.stop_payload("Fixed it."))
    t2 = codex.turn("And the tests", "Added them.")
    # notify: the payload is the last argument, the rollout found by the thread id
    note = json.dumps(codex.notify_payload("And the tests", "Added them."))
    r = hs("--store", str(store_path), "capture", "codex", "--notify", "--", note)
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    have = turns(store_path)
    assert set(have) == {t1, t2}
    assert have[t2]["answered"] == "Added them."
    assert last_run(store_path, "codex", "notify")["turns_added"] == 1


def test_notify_runs_the_program_it_was_put_in_front_of(
    hs: HS, store: Store, store_path: Path, tmp_path: Path
) -> None:
    codex = FakeCodex(Path(os.environ["HOME"]) / ".codex")
    codex.turn("hi", "hello")
    out = tmp_path / "chained.txt"
    prog = [sys.executable, "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])", str(out)]
    note = json.dumps(codex.notify_payload("hi", "hello"))
    r = hs("--store", str(store_path), "capture", "codex", "--notify", "--", *prog, note)
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    # (HS_CAPTURE_DETACH=0: the chained program ran, and was waited for, in the hook)
    assert json.loads(out.read_text())["thread-id"] == codex.sid
    assert len(turns(store_path)) == 1


# --------------------------------------------------------------------------- never breaks the agent


def test_a_bad_payload_is_recorded_and_the_agent_sees_nothing(
    hs: HS, store: Store, store_path: Path
) -> None:
    for bad in ("", "not json", "[1, 2]", json.dumps({"hook_event_name": "Stop"})):
        fire(hs, store_path, "claude-code", bad)
    failures = list(Journal.of_store(store_path).failures())
    assert len(failures) == 4
    assert "names no session_id" in failures[-1]["message"]
    r = hs("--store", str(store_path), "hooks", "status", "claude-code")
    assert r.exit_code == 0
    assert "failures: 4 in the last 7 days" in r.stdout


def test_no_store_and_a_corrupt_store(hs: HS, tmp_path: Path, claude: FakeClaude) -> None:
    """The agent works on while the store is missing, then corrupt: every
    hook exits 0 saying nothing and records why; once the store is there (and
    mended) the next hook stores every turn the transcript holds, once."""
    k = max(3, TURNS // 10)
    store_path = tmp_path / "later"
    ids = []
    for n in range(k):
        ids.append(claude.turn(f"q {n}", f"a {n}"))
        fire(hs, store_path, "claude-code", claude.payload(last_assistant_message=f"a {n}"))
    assert not store_path.exists()  # nothing created
    failures = list(Journal.fallback(store_path).failures())
    assert len(failures) == k and all(f["store"] == str(store_path) for f in failures)
    assert "no store at" in failures[0]["message"]
    r = hs("--store", str(store_path), "hooks", "status", "claude-code")
    assert r.exit_code == 0 and "store: none at" in r.stdout and "no store at" in r.stdout

    Store.init(store_path)[0].close()
    config = (store_path / "config.toml").read_bytes()
    (store_path / "config.toml").write_text("this is [not toml")
    for n in range(k, 2 * k):
        ids.append(claude.turn(f"q {n}", f"a {n}", lag=n == 2 * k - 1))
        fire(hs, store_path, "claude-code", claude.payload(last_assistant_message=f"a {n}"))
    failures = list(Journal.of_store(store_path).failures())
    assert len(failures) == k and all("config.toml" in f["message"] for f in failures)
    assert len(Journal.of_store(store_path).spooled()) == k  # kept for when it is mended

    (store_path / "config.toml").write_bytes(config)
    claude.flush()
    ids.append(claude.turn("mended", "at last"))
    fire(hs, store_path, "claude-code", claude.payload(last_assistant_message="at last"))
    have = turns(store_path)
    assert sorted(have) == sorted(ids)
    assert [have[i]["answered"] for i in ids[:-1]] == [f"a {n}" for n in range(2 * k)]
    assert Journal.of_store(store_path).spooled() == []


def test_an_unknown_agent_in_a_hook_is_recorded_not_raised(
    hs: HS, store: Store, store_path: Path
) -> None:
    r = hs("--store", str(store_path), "capture", "gemini", input="{}")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    (failure,) = Journal.of_store(store_path).failures()
    assert "unknown agent" in failure["message"]


def test_the_time_bound_stops_a_capture_and_keeps_its_payload(
    hs: HS,
    store: Store,
    store_path: Path,
    claude: FakeClaude,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    from histstore.capture import apply

    never = threading.Event()

    def stuck(*args: Any, **kw: Any) -> Any:
        never.wait()  # until the time bound's alarm interrupts it

    monkeypatch.setattr(apply, "apply_event", stuck)
    monkeypatch.setenv("HS_CAPTURE_BUDGET", "0.2")
    claude.turn("q", "a")
    fire(hs, store_path, "claude-code", claude.payload())
    r = last_run(store_path, "claude-code", "Stop")
    assert r["result"] == "failed" and "time bound" in r["message"]
    assert len(Journal.of_store(store_path).spooled()) == 1
    monkeypatch.undo()
    monkeypatch.setenv("HS_TEST_NO_FSYNC", "1")
    fire(hs, store_path, "claude-code", claude.payload("SessionEnd"))
    assert len(turns(store_path)) == 1 and Journal.of_store(store_path).spooled() == []


def test_a_payload_the_spool_cannot_keep_is_applied_at_once(
    hs: HS, store: Store, store_path: Path, claude: FakeClaude
) -> None:
    """``spool`` is a plain file: the payload cannot wait, so it is applied
    now (its answer too, the transcript lagging), and the spool's failure is
    recorded; with the store locked as well, the run is a failure, never
    ``unchanged`` or ``spooled``."""
    spool = store_path / "local" / "capture" / "spool"
    spool.parent.mkdir(parents=True, exist_ok=True)
    spool.write_text("not a folder")
    t1 = claude.turn("fix the login", "the real answer", lag=True)
    fire(hs, store_path, "claude-code", claude.payload(last_assistant_message="fixed it"))
    got = turns(store_path)
    assert set(got) == {t1} and got[t1]["answered"] == "fixed it"
    r = last_run(store_path, "claude-code", "Stop")
    assert (r["result"], r["turns_added"]) == ("recorded", 1)
    assert r["message"].startswith("applied at once: cannot spool the payload: ")
    (failure,) = Journal.of_store(store_path).failures()
    assert failure["message"].startswith("cannot spool the payload: ")
    claude.flush()
    t2 = claude.turn("and the tests", "added")
    with store.lock():
        fire(hs, store_path, "claude-code", claude.payload(last_assistant_message="added"))
    assert set(turns(store_path)) == {t1}
    r = hs("--store", str(store_path), "hooks", "status", "claude-code")
    assert (r.exit_code, r.stderr) == (0, "")
    assert "  Stop          not installed; last ran " in r.stdout
    assert ": failed: cannot spool the payload: " in r.stdout
    assert "and the store is locked by another writer" in r.stdout
    assert "failures: 2 in the last 7 days" in r.stdout
    fire(hs, store_path, "claude-code", claude.payload("SessionEnd"))
    assert set(turns(store_path)) == {t1, t2}  # the transcript is read by the next capture


@pytest.mark.parametrize(("detach", "whole"), [("0", False), ("1", True)])
def test_the_time_bound_covers_reading_stdin(
    hs: HS, store: Store, store_path: Path, claude: FakeClaude, detach: str, whole: bool
) -> None:
    """An agent that never closes the hook's stdin: the hook process still
    ends within its time bound (``HS_CAPTURE_BUDGET`` covers whatever the
    hook process does), exit 0, saying nothing, and records the failure; a
    whole payload read by then stays spooled for the next capture."""
    t1 = claude.turn("q", "a")
    payload = json.dumps(claude.payload()).encode()
    env = {**os.environ, "HS_CAPTURE_BUDGET": "0.2", "HS_CAPTURE_DETACH": detach}
    argv = [sys.executable, "-m", "histstore.porcelain.entry", "--store", str(store_path)]
    p = subprocess.Popen(
        [*argv, "capture", "claude-code"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    try:
        p.stdin.write(payload if whole else payload[:40])  # and never its end
        p.stdin.flush()
        p.wait(timeout=20)  # without the bound: not before stdin closes, here never
    finally:
        if p.poll() is None:
            p.kill()
        p.stdin.close()
    assert (p.returncode, p.stdout.read(), p.stderr.read()) == (0, b"", b"")
    (failure,) = Journal.of_store(store_path).failures()
    what = "its payload stays spooled" if whole else "the next capture reads its transcript"
    assert failure["message"] == (
        f"stopped after 0.2 s reading its payload (the hook's time bound): {what}"
    )
    r = last_run(store_path, "claude-code", "Stop" if whole else "unknown")
    assert r["result"] == "failed" and r["message"] == failure["message"]
    assert len(Journal.of_store(store_path).spooled()) == int(whole)
    assert turns(store_path) == {}
    r = hs("--store", str(store_path), "capture", "--drain")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    assert set(turns(store_path)) == ({t1} if whole else set())


@pytest.mark.parametrize("value", ["inf", "1e10", "nan", "-1", "0", "soon"])
def test_a_budget_that_is_no_number_of_seconds_is_the_default(
    hs: HS,
    store: Store,
    store_path: Path,
    claude: FakeClaude,
    monkeypatch: pytest.MonkeyPatch,
    value: str,
) -> None:
    """``HS_CAPTURE_BUDGET=inf`` overflowed the timer before the payload was
    spooled: the turn was neither recorded nor kept."""
    from histstore.porcelain import hook

    monkeypatch.setenv("HS_CAPTURE_BUDGET", value)
    assert hook.budget() == hook.BUDGET
    claude.turn("q", "a")
    fire(hs, store_path, "claude-code", claude.payload())
    assert last_run(store_path, "claude-code", "Stop")["result"] != "failed"
    assert len(turns(store_path)) == 1


def test_hs_import_applies_the_spool(
    hs: HS, store: Store, store_path: Path, claude: FakeClaude
) -> None:
    claude.turn("q", "the answer")
    with store.lock():  # held by this process: the capture's probe sees it too
        fire(
            hs,
            store_path,
            "claude-code",
            claude.payload(last_assistant_message="the answer, with AKIAIOSFODNN7EXAMPLE"),
        )
    # the spool keeps what the capture needs, never the answer's text
    spooled = [p for p in (store_path / "local" / "capture" / "spool").iterdir()]
    assert len(spooled) == 1 and b"AKIA" not in spooled[0].read_bytes()
    assert b"the answer" not in spooled[0].read_bytes()
    r = hs("import", str(tmp_dir := claude.path.parent))
    assert r.exit_code == 0, r.stderr
    assert "applied 1 spooled hook payload" in r.stdout
    assert tmp_dir.is_dir()
    (t,) = turns(store_path).values()
    assert t["answered"] == "the answer"  # from the transcript


# --------------------------------------------------------------------------- hs record


def test_hs_record_takes_a_hook_payload(
    hs: HS, store: Store, store_path: Path, claude: FakeClaude
) -> None:
    t1 = claude.turn("q", "a")
    r = hs("record", input=json.dumps(claude.payload()))
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("claude-code Stop: 1 turns added, 0 revised (operation ")
    assert set(turns(store_path)) == {t1}
    r = hs("record", "--json", input=json.dumps(claude.payload()))
    assert r.exit_code == 0 and json.loads(r.stdout)["turns_added"] == 0
    gone = claude.payload(transcript_path=str(claude.path.with_name("gone.jsonl")))
    r = hs("record", "--agent", "claude-code", input=json.dumps(gone))
    assert r.exit_code == 4 and "is not there" in r.stderr and r.stdout == ""


def test_hs_status_tells_of_captures(
    hs: HS, store: Store, store_path: Path, claude: FakeClaude
) -> None:
    r = hs("status")
    assert "capture:      no hook has run" in r.stdout
    claude.turn("q", "a")
    fire(hs, store_path, "claude-code", claude.payload())
    fire(hs, store_path, "claude-code", "garbage")
    r = hs("status")
    assert r.exit_code == 0
    assert "capture:      last claude-code unknown at" in r.stdout
    assert "1 failure in 7 days, the latest: the hook payload is not JSON" in r.stdout
    info = json.loads(hs("status", "--json").stdout)["capture"]
    assert info["failures"] == 1 and info["waiting"] == 0


def _wait_exit(pid: int, timeout: float = 60) -> None:
    """Wait (bounded) for a process that is not our child to end."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # already gone
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"process {pid} still running after {timeout} s"
    finally:
        os.close(fd)


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="waits with pidfd_open (Linux)")
def test_a_hook_process_hands_the_import_to_a_detached_process(
    hs: HS, store: Store, store_path: Path, claude: FakeClaude
) -> None:
    """As agents run it (no HS_CAPTURE_DETACH): the hook spools the payload,
    starts `hs capture --drain` in a session of its own and returns; that
    process applies it and records the hook's run."""
    t1 = claude.turn("in the background", "done")
    env = {k: v for k, v in os.environ.items() if k != "HS_CAPTURE_DETACH"}
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "histstore.porcelain.entry",
            "--store",
            str(store_path),
            "capture",
            "claude-code",
        ],
        input=json.dumps(claude.payload(last_assistant_message="done")).encode(),
        capture_output=True,
        env=env,
    )
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
    spooled = last_run(store_path, "claude-code", "Stop")
    if spooled["result"] == "spooled":  # the usual case: the drain has not finished yet
        assert spooled["message"] == "being applied in the background"
        assert isinstance(spooled["drain_pid"], int)
        _wait_exit(spooled["drain_pid"])
    assert set(turns(store_path)) == {t1}
    r = last_run(store_path, "claude-code", "Stop")
    assert (r["result"], r["turns_added"]) == ("recorded", 1)
    assert Journal.of_store(store_path).spooled() == []


def test_a_hook_that_finds_the_lock_held_loads_next_to_nothing(
    store: Store, store_path: Path, claude: FakeClaude
) -> None:
    """The hook process's fast path (what keeps it within tens of ms of a
    bare interpreter): with the lock held, it spools and returns having loaded
    nothing of histstore but the entry point and capture/fastspool.py."""
    from histstore.capture import fastspool
    from histstore.store.config import CONFIG_NAME

    assert fastspool.CONFIG == CONFIG_NAME
    claude.turn("q", "a")
    # the hook points its stdout at /dev/null: the child reports through a file
    code = (
        "import json, os, sys\n"
        "from histstore.porcelain.entry import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "mods = sorted(m for m in sys.modules if m.startswith('histstore'))\n"
        "heavy = sorted(m for m in ('typer', 'sqlite3', 'filelock', 'blake3') if m in sys.modules)\n"
        "open(os.environ['OUT'], 'w').write(json.dumps([code, mods, heavy]))\n"
    )
    out = store_path.parent / "loaded.json"
    argv = ["--store", str(store_path), "capture", "claude-code"]
    with store.lock():
        p = subprocess.run(
            [sys.executable, "-c", code, *argv],
            input=json.dumps(claude.payload()).encode(),
            capture_output=True,
            env={**os.environ, "OUT": str(out)},
        )
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
    code_, mods, heavy = json.loads(out.read_text())
    assert code_ == 0
    assert mods == [
        "histstore",
        "histstore.capture",
        "histstore.capture.fastspool",
        "histstore.porcelain",
        "histstore.porcelain.entry",
        "histstore.porcelain.hook",
    ]
    assert heavy == []
    assert len(Journal.of_store(store_path).spooled()) == 1


def test_hs_capture_drain_applies_the_spool(
    hs: HS, store: Store, store_path: Path, claude: FakeClaude
) -> None:
    t1 = claude.turn("q", "a")
    with store.lock():
        fire(hs, store_path, "claude-code", claude.payload())
    assert turns(store_path) == {}
    r = hs("--store", str(store_path), "capture", "--drain")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    assert set(turns(store_path)) == {t1}
    assert last_run(store_path, "claude-code", "Stop")["result"] == "recorded"
