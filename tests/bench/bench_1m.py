"""One million turns: what issue 12 asks at that scale, in one run (opt-in).

Off unless selected: ``make bench BENCH_ARGS='-k 1m'`` (or ``HS_BENCH_1M=1``).
Needs ~10 GB free and, on two shared cores, the better part of an hour.

In order, on the seeded 1M turn JSONL (no steps; ~1.9 GB):

* ``git fast-import`` of the same records (the baseline, as in bench_import);
* ``hs import`` as a process: wall time and its peak RSS (the issue: at most
  2 minutes and 300 MB), objects + refs + index;
* the index's size against the raw JSONL;
* recall in-process, every query class of bench_recall (p50 / p95, and the
  bare engine query), every hit with a score and a field;
* ``hs recall`` as a process against ``rg -i``;
* writes at 1M as processes: ``hs record`` of one turn, ``hs import`` of 100
  new turns, ``hs forget`` / ``hs unforget`` / ``hs undo`` of a turn and of
  a session (the issue: a forget at most 0.5 s);
* ``histstore.recall.index.compact`` after them (what ``hs gc`` calls).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import bench_recall as br
import benchutil as bu
import pytest

from histstore.recall.index import RecallIndex, compact
from histstore.store.store import Store

MB = 1e6
NEED_FREE = 10 * 10**9
RUNS = int(os.environ.get("HS_BENCH_1M_RUNS", "3"))
#: (smaller only to try the benchmark itself out)
TURNS = int(os.environ.get("HS_BENCH_1M_TURNS", "1000000"))


def wanted(config: Any) -> bool:
    keyword = str(config.getoption("keyword") or "")
    return os.environ.get("HS_BENCH_1M", "") not in ("", "0") or "1m" in keyword


def timed_process(argv: list[str], cwd: Path, stdin: bytes | None = None) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (MB) and stderr of one process, its own rusage:
    it is started by benchutil's small wrapper, which reads its rusage (started
    from pytest, whose RSS holds the 1M store's sessions by then, it would
    report pytest's peak: Linux keeps the high-water mark across exec)."""
    env = {k: v for k, v in os.environ.items() if k != "HS_RECALL_FALLBACK"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(br.PYC_DIR)
    usage = cwd / f"rusage-{time.monotonic_ns()}.json"
    proc = subprocess.run(
        [sys.executable, "-c", bu.WRAPPER, str(usage), *argv],
        cwd=cwd,
        env=env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0 or usage.exists(), err[-2000:]  # the command never started
    ru = json.loads(usage.read_text())
    usage.unlink()
    assert ru["code"] == 0, err[-2000:]
    return ru["seconds"], ru["maxrss_kib"] // 1024, err


def test_1m(benchmark: Any, request: pytest.FixtureRequest, tmp_path_factory: Any) -> None:
    if not wanted(request.config):
        pytest.skip("the 1M benchmark is opt-in: BENCH_ARGS='-k 1m' or HS_BENCH_1M=1")
    work = tmp_path_factory.mktemp("bench-1m")
    free = shutil.disk_usage(work).free
    if free < NEED_FREE:
        pytest.skip(f"1M turns need ~{NEED_FREE / 1e9:.0f} GB free, {free / 1e9:.0f} GB here")
    hs = bu.hs_command()
    out: dict[str, Any] = {}

    def run() -> None:
        c = bu.generate(work, "turns-1m", "turns", TURNS)
        out["corpus"] = c
        if shutil.which("git"):
            from bench_import import git_fast_import

            began = time.perf_counter()
            git_fast_import(c.path, work / "repo.git")
            out["gfi"] = time.perf_counter() - began
            shutil.rmtree(work / "repo.git", ignore_errors=True)
            bu.note(f"1m git fast-import of the same records: {out['gfi']:.1f} s")
        root = work / "store"
        subprocess.run([*hs, "--store", str(root), "init"], check=True, capture_output=True)
        wall, rss, _err = timed_process([*hs, "--store", str(root), "import", str(c.path)], work)
        out.update(import_s=wall, import_rss=rss)

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    c = out["corpus"]
    root = work / "store"
    ratio = f" = {out['import_s'] / out['gfi']:.2f}x git fast-import" if "gfi" in out else ""
    bu.note(
        f"1m hs import (objects + refs + index) as a process: {out['import_s']:.1f} s{ratio}; "
        f"peak RSS {out['import_rss']} MB; {c.turns / out['import_s']:,.0f} turns/s"
    )
    store = Store.open(root)
    try:
        _queries(store, root, c, work)
        _writes(store, root, work, hs)
    finally:
        store.close()
        shutil.rmtree(work, ignore_errors=True)


def _queries(store: Store, root: Path, c: bu.Corpus, work: Path) -> None:
    status = RecallIndex(store).status()
    assert status.rows == c.turns and not status.stale
    path = RecallIndex(store).current_path()
    assert path is not None
    size = bu.sizes_under(path)
    bu.note(
        f"1m index: {size / MB:.0f} MB = {size / c.bytes:.3f}x the raw JSONL "
        f"({c.bytes / MB:.0f} MB); {status.segments} segments"
    )
    projects = Counter(s.project for s in store.sessions() for _ in s.turns)
    biggest = projects.most_common(1)[0][0]
    rare_turn = c.stats.rare[br.RARE][0]
    rare_project = next(
        s.project for s in store.sessions() if any(t.turn_id == rare_turn for t in s.turns)
    )
    rs = br.RecallStore(store, root, c, biggest, rare_project, size, 0.0)
    old_now = br.recall_mod._now
    br.recall_mod._now = lambda: bu.corpus.END
    try:
        figures = br.measure_classes("recall_1m", rs, br.CLASSES, max(20, br.ROUNDS // 4))
    finally:
        br.recall_mod._now = old_now
    worst = max(v["hs_p95_ms"] for v in figures.values())
    bu.note(f"recall_1m: the slowest class's p95 is {worst:.1f} ms (hs, in-process)")
    have_rg = shutil.which("rg") is not None
    worst_rg = 0.0
    for text in br.PROCESS_QUERIES:
        argvs = {"hs": [*bu.hs_command(), "--store", str(root), "recall", "-e", *text.split()]}
        if have_rg:
            argvs["rg"] = br.rg_command(text, c.path)
        med = br.interleaved(argvs, work, RUNS, ok=(0, 1))
        line = f"recall_process_1m['{text}']: hs {br.ms(med['hs'])} median"
        if have_rg:
            worst_rg = max(worst_rg, med["hs"] / med["rg"])
            line += f"; rg -i {br.ms(med['rg'])}; hs/rg {med['hs'] / med['rg']:.2f}x"
        bu.note(line)


def _writes(store: Store, root: Path, work: Path, hs: list[str]) -> None:
    base = [*hs, "--store", str(root)]
    rec = {
        "turn_id": "bench-1m-record",
        "session_id": "bench-1m-session",
        "project": "/home/dev/src/bench",
        "asked_at": "2026-11-01T00:00:00.000Z",
        "asked": "one more turn recorded at a million",
        "answered": "recorded",
    }
    walls = [
        timed_process([*base, "record"], work, json.dumps(dict(rec, turn_id=f"r{i}")).encode())[0]
        for i in range(RUNS)
    ]
    bu.note(f"1m hs record of one turn: {br.ms(statistics.median(walls))} median of {RUNS}")
    more = work / "more.jsonl"
    more.write_text(
        "".join(
            json.dumps(dict(rec, turn_id=f"m{i}", session_id=f"more-{i % 5}")) + "\n"
            for i in range(100)
        )
    )
    wall, rss, _ = timed_process([*base, "import", str(more)], work)
    bu.note(f"1m hs import of 100 new turns: {br.ms(wall)}, peak RSS {rss} MB")
    sessions = sorted(store.sessions(), key=lambda s: s.session_id)
    session = min(sessions[100:200], key=lambda s: abs(len(s.turns) - 20))
    turn = sessions[len(sessions) // 2].turns[0]
    for kind, target in (("turn", turn.turn_id), ("session", session.session_id)):
        f, u, d = [], [], []
        for _ in range(RUNS):
            f.append(timed_process([*base, "forget", target, "--confirm", target], work)[0])
            u.append(timed_process([*base, "unforget", target, "--confirm", target], work)[0])
            d.append(timed_process([*base, "undo"], work)[0])  # the unforget undone: forgotten
            timed_process([*base, "undo"], work)  # that undo undone: not forgotten again
        bu.note(
            f"1m {kind} ({len(session.turns) if kind == 'session' else 1} turns) as processes: "
            f"hs forget {br.ms(statistics.median(f))}, hs unforget {br.ms(statistics.median(u))}, "
            f"hs undo {br.ms(statistics.median(d))} (medians of {RUNS})"
        )
    began = time.perf_counter()
    status = compact(store)
    bu.note(
        f"1m recall.index.compact (what hs gc calls) after the forgets: {time.perf_counter() - began:.1f} s; "
        f"{status.deleted} deleted documents left, {status.segments} segments"
    )
