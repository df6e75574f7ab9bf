"""``hs watch``: imports as agent files change, debounced (one import per
burst), through files and folders that go away, stopping cleanly. Driven
by explicit events and a fake clock, and once for real (watchdog, a short
bounded wait on a condition, never a sleep)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from fake_agents import FakeClaude
from helpers import HS
from ptytools import ctrl_c_as_on_a_terminal
from watchdog.events import (
    DirCreatedEvent,
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
)

from histstore.capture.watch import Debouncer, Watcher
from histstore.errors import BadInput
from histstore.store.store import Store


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def stored(store_path: Path) -> set[str]:
    with Store.open(store_path) as s:
        return {t.turn_id for x in s.sessions() for t in x.turns}


def test_the_debouncer_waits_for_quiet_and_never_past_max_wait() -> None:
    clock = Clock()
    d = Debouncer(quiet=2.0, max_wait=10.0, clock=clock)
    assert d.wait() is None and not d.due()
    for _ in range(3):
        d.add(Path("a.jsonl"))
        clock.t += 1.0  # a change every second: never quiet for 2
        assert not d.due()
    d.add(Path("b.jsonl"))
    clock.t += 2.0
    assert d.due() and d.take() == [Path("a.jsonl"), Path("b.jsonl")]
    assert d.wait() is None
    for _ in range(12):  # an agent that never pauses is still imported
        d.add(Path("c.jsonl"))
        clock.t += 1.0
        if d.due():
            break
    assert clock.t - 100.0 - 5.0 <= 10.0 and d.take() == [Path("c.jsonl")]


def test_one_import_per_burst_and_files_that_go_away(store: Store, store_path: Path) -> None:
    home = Path(os.environ["HOME"]) / ".claude"
    a = FakeClaude(home, sid="aaaaaaaa-0000-4000-8000-000000000001")
    b = FakeClaude(home, sid="bbbbbbbb-0000-4000-8000-000000000002")
    clock = Clock()
    events: list[dict[str, Any]] = []
    w = Watcher(store, [home / "projects"], debounce=1.0, report=events.append, clock=clock)
    ids = set()
    for n in range(5):  # the agents write line by line: many events, one burst
        ids.add(a.turn(f"a{n}", f"x{n}"))
        w.changed(a.path)
        ids.add(b.turn(f"b{n}", f"y{n}"))
        w.changed(b.path)
        assert not w.step(0)
    clock.t += 1.0
    assert w.step(0) and w.imports == 1
    assert stored(store_path) == ids
    (imported,) = [e for e in events if e["event"] == "imported"]
    assert imported["files"] == 2 and imported["turns_added"] == 10
    # a file deleted before its import is left out; a rotated one is read where it went
    a.turn("a5", "x5")
    gone = b.path
    moved = b.path.with_name("cccccccc-0000-4000-8000-000000000003.jsonl")
    b.turn("b5", "y5")
    os.replace(b.path, moved)
    w.changed(gone)
    w.changed(moved)
    w.changed(a.path)
    w.changed(home / "projects" / "nowhere.jsonl")
    assert not w.step(0)  # collected
    clock.t += 1.0
    assert w.step(0) and w.imports == 2
    assert len(stored(store_path)) == 12
    assert [e for e in events if e["event"] == "error"] == []
    clock.t += 5.0
    assert not w.step(0)  # nothing changed: nothing imported


def test_a_busy_store_keeps_the_batch_for_the_next_round(
    store: Store, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HS_LOCK_TIMEOUT", "0")
    home = Path(os.environ["HOME"]) / ".claude"
    a = FakeClaude(home)
    clock = Clock()
    events: list[dict[str, Any]] = []
    with Store.open(store_path) as s:
        w = Watcher(s, [home], debounce=0.5, report=events.append, clock=clock)
        tid = a.turn("q", "a")
        w.changed(a.path)
        assert not w.step(0)
        clock.t += 1.0
        with store.lock():
            assert not w.step(0)
        assert "locked" in events[-1]["message"]
        clock.t += 1.0
        assert w.step(0)
    assert stored(store_path) == {tid}


def test_the_real_watcher_imports_what_an_agent_writes(store: Store, store_path: Path) -> None:
    home = Path(os.environ["HOME"]) / ".claude"
    (home / "projects").mkdir(parents=True)
    events: list[dict[str, Any]] = []
    seen = threading.Condition()

    def report(e: dict[str, Any]) -> None:
        with seen:
            events.append(e)
            seen.notify_all()

    w = Watcher(store, [home / "projects"], debounce=0.05, report=report)
    stop = threading.Event()
    t = threading.Thread(target=w.run, args=(stop,), kwargs={"poll": 0.05})
    t.start()
    try:
        with seen:
            assert seen.wait_for(lambda: any(e["event"] == "watching" for e in events), 10)
        a = FakeClaude(home)  # a new folder and file appear while it watches
        tid = a.turn("watched", "seen")
        with seen:
            assert seen.wait_for(
                lambda: any(e["event"] == "imported" and e["turns_added"] for e in events), 10
            ), events
    finally:
        stop.set()
        t.join(10)
    assert not t.is_alive() and events[-1] == {"event": "stopped"}
    assert stored(store_path) == {tid}


def _watch_process(store_path: Path, *paths: str) -> subprocess.Popen[str]:
    """``hs watch [PATH…] --json`` as a process whose Ctrl-C is a terminal's."""
    argv = [sys.executable, "-m", "histstore.porcelain.entry", "--store", str(store_path)]
    return subprocess.Popen(
        [*argv, "watch", *paths, "--debounce", "0.05", "--json"],
        preexec_fn=ctrl_c_as_on_a_terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_hs_watch_as_a_process_stops_cleanly_on_ctrl_c(store_path: Path, hs: HS) -> None:
    hs("init")
    home = Path(os.environ["HOME"]) / ".claude"
    (home / "projects").mkdir(parents=True)
    proc = _watch_process(store_path)
    assert proc.stdout is not None
    try:
        first = json.loads(proc.stdout.readline())  # blocks until it watches
        assert first == {"event": "watching", "roots": [str(home / "projects")]}
        tid = FakeClaude(home).turn("from a process", "ok")
        while True:  # each line is an event; the import is one of the next
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            e = json.loads(line)
            if e["event"] == "imported" and e["turns_added"]:
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert json.loads(out.splitlines()[-1]) == {"event": "stopped"}
    assert err == ""
    assert stored(store_path) == {tid}


A_SID = "aaaaaaaa-0000-4000-8000-000000000001"
B_SID = "bbbbbbbb-0000-4000-8000-000000000002"


def test_a_file_named_is_watched_alone_not_the_files_beside_it(
    store: Store, store_path: Path
) -> None:
    """Its folder is what the observer watches; only the file named gets
    through (written, or moved into place), never a sibling or a new folder."""
    home = Path(os.environ["HOME"]) / ".claude"
    a = FakeClaude(home, sid=A_SID)
    tid = a.turn("mine", "ok")
    b = FakeClaude(home, sid=B_SID)
    b.turn("a sibling's", "not imported")
    w = Watcher(store, [a.path.resolve()], debounce=0.0, clock=Clock())
    handler = w.handler()
    folder = a.path.parent.resolve()
    sibling = str(b.path.resolve())
    for event in (
        FileCreatedEvent(sibling),
        FileModifiedEvent(sibling),
        FileMovedEvent(str(folder / "x.tmp"), sibling),
        DirCreatedEvent(str(folder / "subagents")),
    ):
        handler.dispatch(event)
    assert w.events.empty()
    handler.dispatch(FileMovedEvent(str(folder / "a.tmp"), str(a.path.resolve())))
    handler.dispatch(FileModifiedEvent(str(a.path.resolve())))
    assert w.step(0) and stored(store_path) == {tid}


def test_hs_watch_of_one_file_imports_that_file_alone(store_path: Path, hs: HS) -> None:
    hs("init")
    home = Path(os.environ["HOME"]) / ".claude"
    a = FakeClaude(home, sid=A_SID)
    t1 = a.turn("before", "watched")
    proc = _watch_process(store_path, str(a.path))
    assert proc.stdout is not None

    def next_import() -> dict[str, Any]:
        while True:
            line = proc.stdout.readline() if proc.stdout else ""
            assert line, proc.stderr.read() if proc.stderr else ""
            e = json.loads(line)
            if e["event"] == "imported" and e["turns_added"]:
                return e

    try:
        first = json.loads(proc.stdout.readline())
        assert first == {"event": "watching", "roots": [str(a.path.resolve())]}
        assert next_import()["files"] == 1  # the file as it was
        FakeClaude(home, sid=B_SID).turn("beside it", "not watched")  # written first
        t2 = a.turn("while watched", "seen")
        assert next_import()["files"] == 1
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (proc.returncode, err) == (0, "")
    assert json.loads(out.splitlines()[-1]) == {"event": "stopped"}
    assert stored(store_path) == {t1, t2}


def test_hs_watch_with_nothing_to_watch(hs: HS, store: Store, tmp_path: Path) -> None:
    r = hs("watch")
    assert r.exit_code == 4 and r.stdout == ""
    assert r.stderr.startswith("hs: error: no agent history found to watch (looked in ")
    r = hs("watch", str(tmp_path / "nope"))
    assert r.exit_code == 4 and "no such file or folder" in r.stderr


@pytest.mark.parametrize("seconds", [float("nan"), float("inf"), -1.0, 3601.0])
def test_a_debounce_that_is_no_number_of_seconds_is_refused(store: Store, seconds: float) -> None:
    """``hs watch --debounce nan`` imported at once, ``inf`` never (click's
    range lets both through)."""
    with pytest.raises(BadInput, match=r"--debounce .*: give the seconds of quiet, from 0 to 3600"):
        Watcher(store, [], debounce=seconds)
