"""Forget benchmarks: ``forget`` end to end at 100k turns (target: 1 s or less).

The store: the seeded 100k turn JSONL (the ``turns_100k`` fixture) imported
once per session into one store (the import builds the recall index), as in
``bench_recall.py``. Nothing here asserts on time; the asserts are functional
facts (the target is gone from the index after a forget and back after an
unforget or an undo, the commands exit 0).

Figures:

* ``forget_100k[KIND-MODE]`` -- ``histstore.forgetting.forget(store, target,
  mode=MODE, confirm=target.id, command=...)`` for one turn or one session of
  ~20 turns (KIND), tombstone or exclude (MODE), the target resolved once
  beforehand; each round is followed by ``unforget`` (timed separately, p50
  given as ``unforget``) so every round starts from the same state;
* ``forget_resolve_100k[*]`` -- ``resolve_target`` alone (a whole turn id, a
  whole session id, an 8-character turn prefix) and its two parts: loading
  every session revision (``store.sessions()``) and the first prompt of every
  session (one turn object per session);
* ``forget_process_100k[KIND]`` -- ``hs --store S forget ID --confirm ID`` as a
  whole process, then ``hs --store S undo`` of it (timed separately);
* ``forget_breakdown_100k`` -- where the time of one forget and one unforget
  goes (timers wrapped around resolve_target, the marker write, the views,
  ``RecallIndex.catch_up`` with its writer, replay and commit, and the
  confirmation query), then the top of a cProfile of one forget; and the
  size of the generation every forget commits into (never copied).

A forget or unforget is a delete (or re-add) and a commit in the serving
generation: its cost does not grow with the store (1M: tests/bench/bench_1m.py).
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import benchutil as bu
import pytest

from histstore.ops import forget as forgetting_mod
from histstore.ops.forget import Target, forget, resolve_target, unforget
from histstore.ops.importing import import_paths
from histstore.ops.undo import find_operation
from histstore.overlay.markers import Overlay
from histstore.recall import engine as engine_mod
from histstore.recall import replay as replay_mod
from histstore.recall.generations import Generations
from histstore.recall.index import RecallIndex
from histstore.store import views as views_mod
from histstore.store.store import Store

MB = 1e6
ROUNDS = int(os.environ.get("HS_BENCH_FORGET_ROUNDS", "5"))
PROCESS_RUNS = int(os.environ.get("HS_BENCH_FORGET_PROCESS_RUNS", "5"))
SESSION_TURNS = 20  # the size of the session forgotten whole
TARGET_S = 1.0  # the spec: a forget end to end at 100k turns in 1 s or less

#: where the ``hs`` processes keep their bytecode (as an installed tool does)
PYC_DIR = Path(tempfile.gettempdir()) / f"hs-bench-pyc-{os.getuid()}"


# ---------------------------------------------------------------------------
# helpers


@dataclass
class ForgetStore:
    """A store with the corpus imported and the index built, and the targets:
    two turns and two sessions of ~20 turns (one each for the in-process
    benchmarks and the process benchmarks, so they never share a marker)."""

    store: Store
    root: Path
    corpus: bu.Corpus
    turn: Target
    session: Target
    cli_turn: Target
    cli_session: Target
    sessions: int


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def bench_data(benchmark: Any) -> list[float] | None:
    """The per-round seconds of a finished benchmark (None with --benchmark-disable)."""
    meta = getattr(benchmark, "stats", None)
    stats = getattr(meta, "stats", None)
    return None if stats is None else list(stats.data)


def run_wall(argv: list[str], cwd: Path) -> tuple[float, int, str]:
    """Run to completion (stdin closed, output captured), bytecode cached:
    (wall seconds, exit code, stdout + stderr)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(PYC_DIR)
    began = time.perf_counter()
    proc = subprocess.run(
        argv, stdin=subprocess.DEVNULL, capture_output=True, cwd=cwd, env=env, check=False
    )
    wall = time.perf_counter() - began
    return wall, proc.returncode, proc.stdout.decode() + proc.stderr.decode()


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    out = fn()
    return time.perf_counter() - began, out


def holds(store: Store, t: Target) -> int:
    return RecallIndex(store).holds(
        session_id=t.session, turn_id=t.id if t.kind == "turn" else None
    )


def generation_bytes(store: Store) -> tuple[int, int]:
    """(bytes of the current generation, of its segments' delete files)."""
    path = RecallIndex(store).current_path()
    assert path is not None
    return bu.sizes_under(path), bu.sizes_under(path, ".del")


def make_forget_store(c: bu.Corpus, root: Path) -> ForgetStore:
    store, created = Store.init(root)
    assert created
    began = time.perf_counter()
    report = import_paths(store, [c.path], command="bench forget 100k")
    secs = time.perf_counter() - began
    assert report.turns_added == c.turns
    assert not getattr(report, "index_error", None), report.index_error
    assert RecallIndex(store).current_path() is not None, "the import did not build the index"
    # targets: sessions of exactly SESSION_TURNS turns (else the nearest size),
    # and a turn from the middle of two other sessions
    sessions = sorted(store.sessions(), key=lambda s: s.session_id)
    by_size = sorted(sessions, key=lambda s: (abs(len(s.turns) - SESSION_TURNS), s.session_id))
    whole = by_size[:2]
    rest = [s for s in sessions if s not in whole and len(s.turns) >= 3]
    picks = [rest[len(rest) // 3], rest[2 * len(rest) // 3]]
    turns = [resolve_target(store, s.turns[len(s.turns) // 2].turn_id) for s in picks]
    whole_t = [resolve_target(store, s.session_id) for s in whole]
    gen, _dels = generation_bytes(store)
    bu.note(
        f"forget store 100k: {c.turns} turns in {len(sessions)} sessions imported and indexed "
        f"in {secs:.1f} s; generation {gen / MB:.0f} MB; "
        f"targets: turn {turns[0].id}, session {whole_t[0].id} ({whole_t[0].turns} turns)"
    )
    return ForgetStore(store, root, c, turns[0], whole_t[0], turns[1], whole_t[1], len(sessions))


# ---------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="session")
def forget_100k(
    turns_100k: bu.Corpus, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ForgetStore]:
    root = tmp_path_factory.mktemp("forget-store") / "store"
    fs = make_forget_store(turns_100k, root)
    try:
        yield fs
    finally:
        fs.store.close()
        shutil.rmtree(root.parent, ignore_errors=True)


# ---------------------------------------------------------------------------
# in-process: forget, then unforget


CASES = [(k, m) for k in ("turn", "session") for m in ("tombstone", "exclude")]


@pytest.mark.parametrize(("kind", "mode"), CASES, ids=[f"{k}-{m}" for k, m in CASES])
def test_forget_100k(benchmark: Any, forget_100k: ForgetStore, kind: str, mode: str) -> None:
    fs = forget_100k
    store = fs.store
    t = fs.turn if kind == "turn" else fs.session
    before = holds(store, t)
    assert before == t.turns, (before, t.turns)
    undo_s: list[float] = []
    pending = [False]

    def restore() -> None:
        if pending[0]:
            secs, res = timed(
                lambda: unforget(store, t, confirm=t.id, command=f"hs unforget {t.id}")
            )
            assert res.changed
            undo_s.append(secs)
            pending[0] = False

    def run() -> Any:
        res = forget(store, t, mode=mode, confirm=t.id, command=f"hs forget {t.id}")
        pending[0] = True
        return res

    # one untimed warm-up pair: the first write of a kind (a new overlay ref
    # folder, a new marker ref) and a cold page cache are not what is measured
    run()
    restore()
    undo_s.clear()
    res = benchmark.pedantic(run, setup=restore, rounds=ROUNDS, iterations=1, warmup_rounds=0)
    assert res.changed and holds(store, t) == 0
    restore()
    assert holds(store, t) == t.turns
    data = bench_data(benchmark)
    name = f"forget_100k[{kind}-{mode}]"
    figures: dict[str, Any] = {"target": t.id, "turns": t.turns, "mode": mode}
    u50 = statistics.median(undo_s)
    figures.update(unforget_p50_ms=round(u50 * 1000, 1), unforget_runs=len(undo_s))
    line = f"{name} ({t.turns} turn{'s' if t.turns != 1 else ''}):"
    if data:
        f50 = statistics.median(data)
        figures.update(forget_p50_ms=round(f50 * 1000, 1), forget_max_ms=round(max(data) * 1000, 1))
        line += f" forget p50 {ms(f50)} (max {ms(max(data))})"
        line += f" {'within' if f50 <= TARGET_S else 'OVER'} the {TARGET_S:.0f} s target;"
    line += f" unforget p50 {ms(u50)} (max {ms(max(undo_s))}); {len(undo_s)} rounds"
    bu.record(name, benchmark, **figures)
    bu.note(line)


# ---------------------------------------------------------------------------
# resolve_target: it walks every session to resolve an id or a prefix


def test_forget_resolve_100k(benchmark: Any, forget_100k: ForgetStore) -> None:
    fs = forget_100k
    store = fs.store
    calls: dict[str, Callable[[], Any]] = {
        "turn id": lambda: resolve_target(store, fs.turn.id),
        "session id": lambda: resolve_target(store, fs.session.id),
        "turn prefix 8": lambda: resolve_target(store, fs.turn.id[:8]),
        "store.sessions() alone": lambda: sum(1 for _ in store.sessions()),
        "first prompts alone": lambda: [
            forgetting_mod._first_prompt(store, s.turns[0].object) for s in sessions if s.turns
        ],
    }
    sessions = list(store.sessions())
    resolve_target(store, fs.turn.id)  # warm
    benchmark.pedantic(calls["turn id"], rounds=ROUNDS, iterations=1, warmup_rounds=1)
    out: dict[str, float] = {}
    for label, fn in calls.items():
        out[label] = statistics.median(timed(fn)[0] for _ in range(ROUNDS))
    forget_p50 = bu.RESULTS.get("forget_100k[turn-tombstone]", {}).get("forget_p50_ms")
    share = ""
    if forget_p50:
        whole = out["turn id"] * 1000 + forget_p50
        share = (
            f"; resolve + forget of a turn = {whole:.1f} ms, resolve is "
            f"{out['turn id'] * 1000 / whole:.0%} of it"
        )
    bu.record(
        "forget_resolve_100k",
        benchmark,
        sessions=fs.sessions,
        **{k.replace(" ", "_"): round(v * 1000, 1) for k, v in out.items()},
    )
    bu.note(
        f"forget_resolve_100k ({fs.sessions} sessions, medians of {ROUNDS}): "
        + ", ".join(f"{k} {ms(v)}" for k, v in out.items())
        + share
    )


# ---------------------------------------------------------------------------
# the command as a person runs it

#: the phases of `hs forget ID --confirm ID` in one fresh process, each timed:
#: what the CLI pays beyond the in-process figures (imports, cold caches)
PHASES = """
import json, sys, time
t0 = time.perf_counter()
from histstore.store import Store
from histstore.ops.forget import forget, resolve_target, unforget
import histstore.porcelain.cli  # noqa: F401  (what `hs` imports before it runs)
t1 = time.perf_counter()
store = Store.open(__import__("pathlib").Path(sys.argv[1]))
t2 = time.perf_counter()
t = resolve_target(store, sys.argv[2])
t3 = time.perf_counter()
forget(store, t, confirm=t.id, command="hs forget " + t.id)
t4 = time.perf_counter()
unforget(store, t, confirm=t.id, command="hs unforget " + t.id)
t5 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "open": t2 - t1, "resolve_target": t3 - t2,
                  "forget": t4 - t3, "unforget": t5 - t4}))
"""


@pytest.mark.parametrize("kind", ["turn", "session"])
def test_forget_process_100k(
    benchmark: Any, forget_100k: ForgetStore, kind: str, tmp_path: Path
) -> None:
    fs = forget_100k
    t = fs.cli_turn if kind == "turn" else fs.cli_session
    base = [*bu.hs_command(), "--store", str(fs.root)]
    forget_argv = [*base, "forget", t.id, "--confirm", t.id]
    undo_argv = [*base, "undo"]
    undo_s: list[float] = []
    pending = [False]

    def restore() -> None:
        if pending[0]:
            wall, code, out = run_wall(undo_argv, tmp_path)
            assert code == 0, out
            undo_s.append(wall)
            pending[0] = False

    def run() -> None:
        _wall, code, out = run_wall(forget_argv, tmp_path)
        assert code == 0, out
        pending[0] = True

    run()  # warm-up pair (writes the bytecode cache too)
    restore()
    undo_s.clear()
    help_s = statistics.median(
        run_wall([*bu.hs_command(), "--help"], tmp_path)[0] for _ in range(5)
    )
    benchmark.pedantic(run, setup=restore, rounds=PROCESS_RUNS, iterations=1, warmup_rounds=0)
    assert holds(fs.store, t) == 0
    restore()
    assert holds(fs.store, t) == t.turns
    data = bench_data(benchmark)
    name = f"forget_process_100k[{kind}]"
    u50 = statistics.median(undo_s)
    figures: dict[str, Any] = {
        "target": t.id,
        "turns": t.turns,
        "undo_median_ms": round(u50 * 1000, 1),
        "hs_help_median_ms": round(help_s * 1000, 1),
    }
    line = f"{name} ({t.turns} turn{'s' if t.turns != 1 else ''}):"
    if data:
        f50 = statistics.median(data)
        figures["forget_median_ms"] = round(f50 * 1000, 1)
        line += f" hs forget ID --confirm ID {ms(f50)} median (max {ms(max(data))})"
        line += f" {'within' if f50 <= TARGET_S else 'OVER'} the {TARGET_S:.0f} s target;"
    line += (
        f" hs undo {ms(u50)} median (max {ms(max(undo_s))}); {len(undo_s)} runs;"
        f" hs --help {ms(help_s)} (startup floor)"
    )
    # the same forget in one fresh process, phase by phase (median of 3)
    phases: dict[str, list[float]] = {}
    for _ in range(3):
        _wall, code, out = run_wall([sys.executable, "-c", PHASES, str(fs.root), t.id], tmp_path)
        assert code == 0, out
        for k, v in json.loads(out.strip().splitlines()[-1]).items():
            phases.setdefault(k, []).append(v)
    split = {k: statistics.median(v) for k, v in phases.items()}
    figures.update({f"fresh_{k}_ms": round(v * 1000, 1) for k, v in split.items()})
    line += "; in one fresh process: " + ", ".join(f"{k} {ms(v)}" for k, v in split.items())
    bu.record(name, benchmark, **figures)
    bu.note(line)


# ---------------------------------------------------------------------------
# where the time goes


class Timers:
    """Seconds and calls per label, from wrappers put around functions."""

    def __init__(self) -> None:
        self.secs: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def wrap(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.secs[label] = self.secs.get(label, 0.0) + time.perf_counter() - began
                self.calls[label] = self.calls.get(label, 0) + 1

        return wrapper

    def reset(self) -> None:
        self.secs.clear()
        self.calls.clear()

    def lines(self, total: float, order: list[str]) -> list[str]:
        out = []
        for label in order:
            if label in self.secs:
                s = self.secs[label]
                n = self.calls[label]
                calls = f" ({n} calls)" if n != 1 else ""
                out.append(f"    {label}: {ms(s)}{calls}, {s / total:.0%}")
        return out


#: (label, owner, attribute): the functions timed, outermost first; the
#: owners are the modules or classes the code under test looks them up in
WRAPPED: list[tuple[str, Any, str]] = [
    ("resolve_target", forgetting_mod, "resolve_target"),
    ("_set_marker (lock + marker + op + views)", forgetting_mod, "_set_marker"),
    ("  put_marker (marker object)", forgetting_mod, "put_marker"),
    ("  Store.apply (refs log + ref)", Store, "apply"),
    ("  write_views (overlay views)", views_mod, "write_views"),
    ("  Overlay.read (every marker)", Overlay, "read"),
    ("RecallIndex.catch_up", RecallIndex, "catch_up"),
    ("  replay.pending (the refs log after applied_op)", replay_mod, "pending"),
    ("  engine.open_index", engine_mod, "open_index"),
    ("  replay.Writer (a writer)", replay_mod.Writer, "__init__"),
    ("  replay.apply (deletes and adds)", replay_mod, "apply"),
    ("  Writer.commit (commit + merges)", replay_mod.Writer, "commit"),
    ("  write_meta (applied_op)", Generations, "write_meta"),
    ("RecallIndex.status", RecallIndex, "status"),
    ("RecallIndex.holds (confirmation query)", RecallIndex, "holds"),
]


def _breakdown(
    monkeypatch: pytest.MonkeyPatch, fs: ForgetStore, t: Target, verb: str
) -> tuple[float, Timers]:
    timers = Timers()
    with monkeypatch.context() as mp:
        for label, owner, attr in WRAPPED:
            fn = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
            if isinstance(fn, classmethod):
                inner = timers.wrap(label, fn.__func__)
                mp.setattr(owner, attr, classmethod(inner))
            else:
                mp.setattr(owner, attr, timers.wrap(label, fn))
        began = time.perf_counter()
        target = forgetting_mod.resolve_target(fs.store, t.id)
        if verb == "forget":
            res = forget(fs.store, target, confirm=t.id, command=f"hs forget {t.id}")
        else:
            res = unforget(fs.store, target, confirm=t.id, command=f"hs unforget {t.id}")
        total = time.perf_counter() - began
    assert res.changed
    return total, timers


def test_forget_breakdown_100k(
    benchmark: Any, forget_100k: ForgetStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    fs = forget_100k
    store = fs.store
    order = [label for label, _o, _a in WRAPPED]
    lines: list[str] = []
    gen, dels = generation_bytes(store)
    figures: dict[str, Any] = {"generation_mb": round(gen / MB, 1)}
    for t in (fs.turn, fs.session):
        for verb in ("forget", "unforget"):
            total, timers = _breakdown(monkeypatch, fs, t, verb)
            parts = timers.secs
            lines.append(
                f"  {verb} {t.kind} ({t.turns} turns), resolve_target included: {ms(total)}"
            )
            lines += timers.lines(total, order)
            figures[f"{verb}_{t.kind}_total_ms"] = round(total * 1000, 1)
            for label in ("RecallIndex.catch_up", "  Writer.commit (commit + merges)"):
                if label in parts:
                    key = label.strip().split(" ")[0].replace(".", "_")
                    figures[f"{verb}_{t.kind}_{key}_ms"] = round(parts[label] * 1000, 1)
    # what `hs undo` pays before its commit: it finds the last operation by
    # reading the whole refs log (find_operation -> store.operations())
    find_s = statistics.median(timed(lambda: find_operation(store, None))[0] for _ in range(ROUNDS))
    n_ops = len(store.operations())
    figures.update(undo_find_operation_ms=round(find_s * 1000, 2), ops=n_ops)
    overlay_s = statistics.median(timed(lambda: Overlay.read(store))[0] for _ in range(ROUNDS))
    n_markers = len(Overlay.read(store).markers)
    figures.update(overlay_read_ms=round(overlay_s * 1000, 2), overlay_refs=n_markers)
    # one forget under cProfile, the top by cumulative time
    profile = cProfile.Profile()
    t = fs.turn
    target = resolve_target(store, t.id)

    def profiled() -> None:
        profile.enable()
        try:
            forget(store, target, confirm=t.id, command=f"hs forget {t.id}")
        finally:
            profile.disable()

    benchmark.pedantic(profiled, rounds=1, iterations=1, warmup_rounds=0)
    assert holds(store, t) == 0
    status = RecallIndex(store).status()
    figures.update(deleted_docs=status.deleted, segments=status.segments)
    unforget(store, target, confirm=t.id, command=f"hs unforget {t.id}")
    assert holds(store, t) == t.turns
    buf = io.StringIO()
    pstats.Stats(profile, stream=buf).sort_stats("cumulative").print_stats(18)
    bu.record("forget_breakdown_100k", benchmark, **figures)
    bu.note(
        f"forget_breakdown_100k: generation {gen / MB:.1f} MB ({dels / 1e3:.0f} kB of delete "
        f"files), {status.segments} segments, {status.deleted} documents deleted but not yet "
        f"merged away; hs undo's find_operation (whole refs log, {n_ops} ops) {ms(find_s)}; "
        f"Overlay.read with {n_markers} overlay refs {ms(overlay_s)}\n" + "\n".join(lines)
    )
    print("\n[bench] cProfile of one forget (turn, tombstone), by cumulative time:")
    print(buf.getvalue())
