"""Recall benchmarks: the index's size, recall in-process against the bare
engine query, and ``hs recall`` as a process against ``rg -i``.

The spec is issue 12 ("Benchmarks"). Every figure is a measurement of this
run; nothing here asserts on time (the asserts are functional facts: every
turn is indexed, a planted rare term is found, every hit has a bm25 score and
a field).

Stores (each imported once per session; the import builds the index):

* ``recall_100k`` -- the seeded 100k turn JSONL (``turns_100k``), no steps;
* ``recall_100k_steps`` -- the same turns with their steps (tool calls with
  inputs and outputs, thinking): the index's size with every part indexed.

"Now" is frozen at the corpus end (``corpus.END``) so ``days`` windows cut the
corpus the same way on every run.

Figures, per query class (:data:`CLASSES`):

* ``recall_hs_100k[CLASS]`` -- ``RecallIndex(store).search(...)``, a fresh
  ``RecallIndex`` per call (as a CLI or a tool call does): p50 / p95;
* ``recall_engine_100k[CLASS]`` -- the bare engine query on an open searcher
  (the same terms, fields, weights and filters, top 5), no hits made: what
  hs adds (opening the generation, reading five turn objects, excerpts, the
  field each matched in) is the difference;
* ``recall_process_100k[QUERY]`` -- ``hs --store S recall --everywhere QUERY``
  as a whole process (wall time, median of several runs) against ``rg -i``
  over the source JSONL, output captured;
* ``recall_startup[*]`` -- ``python -c pass``, ``hs --help``, and ``hs recall``
  on a tiny store (the issue's bound: 50 ms).

The ``hs`` processes run from cached bytecode (``PYTHONPYCACHEPREFIX``) as an
installed tool does. At 1M turns: tests/bench/bench_1m.py (opt-in).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import benchutil as bu
import pytest

from histstore.ops.importing import import_paths
from histstore.recall import engine
from histstore.recall import index as recall_mod
from histstore.recall.index import RecallIndex
from histstore.recall.query import Query, Scope, base_name
from histstore.recall.search import filters_of
from histstore.store.store import Store

MB = 1e6
ROUNDS = int(os.environ.get("HS_BENCH_RECALL_ROUNDS", "100"))  # per class, hs and engine
WARMUP = 3
PROCESS_RUNS = int(os.environ.get("HS_BENCH_RECALL_PROCESS_RUNS", "7"))
K = 5
DAYS = 30

RARE = bu.corpus.RARE_TERMS[0]  # planted in ~0.01 % of turns
COMMON = "regression"  # planted in ~35 % of turns
assert COMMON in bu.corpus.COMMON_TERMS
# three vocabulary words in 10-15 % of turns each; three of mixed frequency (a
# pseudo-word in ~1.8 % of turns, an identifier, a class name)
THREE_COMMON = "retry timeout migration"
THREE_MIXED = "plegarcle parse_response ColumnError"
STOPWORD_LIKE = "function"  # a vocabulary word in ~94 % of turns
STEP_TERM = bu.corpus.STEP_TERMS[0]  # in failing commands' outputs only (steps corpus)


@dataclass(frozen=True)
class QueryClass:
    name: str
    text: str
    scope: str | None = None  # None: everywhere; "big": the largest project; "rare": RARE's
    days: int | None = None
    by_name: bool = False  # the project given by its last path component


CLASSES: tuple[QueryClass, ...] = (
    QueryClass("rare", RARE),
    QueryClass("rare_project", RARE, scope="rare"),
    QueryClass("rare_project_by_name", RARE, scope="rare", by_name=True),
    QueryClass("rare_days30", RARE, days=DAYS),
    QueryClass("common", COMMON),
    QueryClass("common_project", COMMON, scope="big"),
    QueryClass("common_days30", COMMON, days=DAYS),
    QueryClass("common_project_days30", COMMON, scope="big", days=DAYS),
    QueryClass("stopword_like", STOPWORD_LIKE),
    QueryClass("stopword_like_project_days30", STOPWORD_LIKE, scope="big", days=DAYS),
    QueryClass("rare_plus_common", f"{RARE} {COMMON}"),
    QueryClass("rare_plus_common_project", f"{RARE} {COMMON}", scope="rare"),
    QueryClass("three_common", THREE_COMMON),
    QueryClass("three_common_project", THREE_COMMON, scope="big"),
    QueryClass("three_mixed", THREE_MIXED),
    QueryClass("three_mixed_days30", THREE_MIXED, days=DAYS),
)
STEP_CLASSES: tuple[QueryClass, ...] = (
    QueryClass("step_output_rare", STEP_TERM),
    QueryClass("common", COMMON),
    QueryClass("stopword_like", STOPWORD_LIKE),
    QueryClass("three_mixed", THREE_MIXED),
    QueryClass("three_mixed_days30", THREE_MIXED, days=DAYS),
)

PROCESS_QUERIES: tuple[str, ...] = (
    RARE,
    COMMON,
    STOPWORD_LIKE,
    f"{RARE} {COMMON}",
    THREE_COMMON,
    THREE_MIXED,
)


# ---------------------------------------------------------------------------
# helpers


@dataclass
class RecallStore:
    """A store with the corpus imported and the index built."""

    store: Store
    root: Path
    corpus: bu.Corpus
    biggest_project: str
    rare_project: str
    index_bytes: int
    import_seconds: float

    def scope(self, qc: QueryClass) -> str | None:
        if qc.scope is None:
            return None
        path = self.biggest_project if qc.scope == "big" else self.rare_project
        return base_name(path) if qc.by_name else path


def percentile(data: list[float], p: float) -> float:
    """Nearest-rank percentile of ``data`` (seconds)."""
    s = sorted(data)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def p50_p95(data: list[float]) -> tuple[float, float]:
    return statistics.median(data), percentile(data, 95)


def bench_data(benchmark: Any) -> list[float] | None:
    stats = getattr(getattr(benchmark, "stats", None), "stats", None)
    data = getattr(stats, "data", None)
    return list(data) if data else None


def ms(seconds: float) -> str:
    if seconds < 0.001:
        return f"{seconds * 1000:.2f} ms"
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def code_version() -> str:
    """The commit measured (others edit the code while benchmarks run)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(bu.REPO), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def since_ms(days: int | None) -> int | None:
    if days is None:
        return None
    return int((bu.corpus.END.timestamp() - days * 86400) * 1000)


def index_bytes(store: Store) -> int:
    path = RecallIndex(store).current_path()
    assert path is not None
    return bu.sizes_under(path)


def rg_command(text: str, path: Path) -> list[str]:
    """``rg -i`` for any of the query's words (as hs ORs them)."""
    args = ["rg", "-i"]
    for word in text.split():
        args += ["-e", word]
    return [*args, str(path)]


#: where the ``hs`` processes keep their bytecode (PYTHONPYCACHEPREFIX)
PYC_DIR = Path(tempfile.gettempdir()) / f"hs-bench-pyc-{os.getuid()}"


def run_wall(argv: list[str], cwd: Path, *, pyc: bool = True) -> tuple[float, int, int]:
    """Run to completion with stdout captured: (wall seconds, exit code, stdout bytes)."""
    env = {k: v for k, v in os.environ.items() if k != "HS_RECALL_FALLBACK"}
    if pyc:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(PYC_DIR)
    began = time.perf_counter()
    proc = subprocess.run(
        argv, stdin=subprocess.DEVNULL, capture_output=True, cwd=cwd, env=env, check=False
    )
    wall = time.perf_counter() - began
    return wall, proc.returncode, len(proc.stdout)


def interleaved(
    argvs: dict[str, list[str]], cwd: Path, runs: int, ok: tuple[int, ...] = (0,)
) -> dict[str, float]:
    """Median wall seconds of each command, run in turns (one of each, then
    again), so a load spike from other work on the machine hits all alike."""
    for argv in argvs.values():
        run_wall(argv, cwd)  # warm-up (and bytecode)
    walls: dict[str, list[float]] = {k: [] for k in argvs}
    for _ in range(runs):
        for k, argv in argvs.items():
            wall, code, _ = run_wall(argv, cwd)
            assert code in ok, (k, code)
            walls[k].append(wall)
    return {k: statistics.median(v) for k, v in walls.items()}


def make_recall_store(c: bu.Corpus, root: Path, label: str) -> RecallStore:
    store, created = Store.init(root)
    assert created
    began = time.perf_counter()
    report = import_paths(store, [c.path], command=f"bench recall {label}")
    secs = time.perf_counter() - began
    assert report.turns_added == c.turns
    assert not report.index_error, report.index_error
    status = RecallIndex(store).status()
    assert status.rows == c.turns and not status.stale
    projects = Counter(s.project for s in store.sessions() for _ in s.turns)
    biggest = projects.most_common(1)[0][0]
    rare_turn = c.stats.rare[RARE][0]
    rare_project = next(
        s.project for s in store.sessions() if any(t.turn_id == rare_turn for t in s.turns)
    )
    size = index_bytes(store)
    store_bytes = store.objects.size_on_disk()  # type: ignore[attr-defined]
    bu.note(
        f"recall store {label}: {c.turns} turns imported and indexed in {secs:.1f} s; "
        f"index {size / MB:.1f} MB = {size / c.bytes:.3f}x the raw JSONL "
        f"({c.bytes / MB:.0f} MB; {status.segments} segments), objects "
        f"{store_bytes / MB:.0f} MB; largest project {biggest} "
        f"({projects[biggest] / c.turns:.0%} of turns), '{RARE}' in {rare_project}; "
        f"code {code_version()}"
    )
    return RecallStore(store, root, c, biggest, rare_project, size, secs)


# ---------------------------------------------------------------------------
# fixtures


@pytest.fixture(autouse=True)
def frozen_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """Days windows are counted back from the corpus end."""
    monkeypatch.setattr(recall_mod, "_now", lambda: bu.corpus.END)


@pytest.fixture(scope="session")
def recall_100k(
    turns_100k: bu.Corpus, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RecallStore]:
    root = tmp_path_factory.mktemp("recall-store") / "store"
    rs = make_recall_store(turns_100k, root, "100k")
    try:
        yield rs
    finally:
        rs.store.close()
        shutil.rmtree(root.parent, ignore_errors=True)


@pytest.fixture(scope="session")
def recall_100k_steps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RecallStore]:
    work = tmp_path_factory.mktemp("recall-steps")
    began = time.perf_counter()
    path = work / "turns-100k-steps.jsonl"
    stats = bu.corpus.write_turns_jsonl(path, 100_000, bu.SEED, steps=True)
    c = bu.Corpus(path, stats, time.perf_counter() - began)
    bu.note(
        f"corpus turns-100k-steps: {stats.turns} turns with steps, {stats.bytes / MB:.1f} MB raw, "
        f"generated in {c.seconds:.1f} s"
    )
    rs = make_recall_store(c, work / "store", "100k with steps")
    try:
        yield rs
    finally:
        rs.store.close()
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------
# in-process: hs against the bare engine query


def hs_call(rs: RecallStore, qc: QueryClass) -> Callable[[], Any]:
    scope = rs.scope(qc)

    def call() -> Any:
        return RecallIndex(rs.store).search(qc.text, project=scope, days=qc.days, k=K)

    return call


def engine_call(rs: RecallStore, qc: QueryClass) -> Callable[[], int]:
    """The bare engine query: the same query and filters, top K, on an open searcher."""
    path = RecallIndex(rs.store).current_path()
    assert path is not None
    index = engine.open_index(path)
    searcher = index.searcher()
    scope = Scope.of(rs.scope(qc), days=qc.days)
    terms = Query.parse(qc.text).terms

    def call() -> int:
        tq = engine.text_query(searcher, index.schema, terms)
        if tq is None:
            return 0
        full = engine.with_filters(
            tq.query, engine.filter_query(index.schema, filters_of(scope, since_ms(qc.days)))
        )
        return len(searcher.search(full, K, count=False).hits)

    return call


def timed(fn: Callable[[], Any], rounds: int, warmup: int = WARMUP) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(rounds):
        began = time.perf_counter()
        fn()
        out.append(time.perf_counter() - began)
    return out


def describe(qc: QueryClass, rs: RecallStore | None = None) -> str:
    where = "everywhere"
    if qc.scope is not None:
        where = f"project={rs.scope(qc) if rs else qc.scope}"
    days = f", days={qc.days}" if qc.days else ""
    return f"'{qc.text}', {where}{days}"


def check_hits(result: Any) -> None:
    """Every hit ranked by bm25 and saying where it matched."""
    assert all(h.score > 0 and h.field and h.where for h in result.hits), result.hits
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)


def measure_classes(
    name: str, rs: RecallStore, classes: tuple[QueryClass, ...], rounds: int
) -> dict[str, dict[str, float]]:
    """hs and the bare engine per class, interleaved class by class; the figures."""
    out: dict[str, dict[str, float]] = {}
    for qc in classes:
        res = hs_call(rs, qc)()
        check_hits(res)
        if qc.name.startswith(("rare", "step")) and qc.days is None:
            assert res.outcome == "found", (qc.name, res.outcome)
        h50, h95 = p50_p95(timed(hs_call(rs, qc), rounds))
        e50, e95 = p50_p95(timed(engine_call(rs, qc), rounds))
        out[qc.name] = {"hs_p50_ms": h50 * 1e3, "hs_p95_ms": h95 * 1e3, "engine_p95_ms": e95 * 1e3}
        fields = Counter(h.field for h in res.hits)
        bu.note(
            f"{name}[{qc.name}] ({describe(qc, rs)}): hs p50 {ms(h50)} / p95 {ms(h95)}; "
            f"engine alone p50 {ms(e50)} / p95 {ms(e95)}; {len(res.hits)} hits ({res.outcome}), "
            f"top score {res.hits[0].score if res.hits else 0:.2f}, fields "
            f"{dict(fields)}; {rounds} runs"
        )
    return out


def test_recall_classes_100k(benchmark: Any, recall_100k: RecallStore) -> None:
    rounds = ROUNDS
    figures: dict[str, Any] = {}

    def run() -> None:
        figures.update(measure_classes("recall_100k", recall_100k, CLASSES, rounds))

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    worst = max(v["hs_p95_ms"] for v in figures.values())
    bu.record("recall_classes_100k", benchmark, worst_hs_p95_ms=round(worst, 2))
    bu.note(f"recall_100k: the slowest class's p95 is {worst:.1f} ms (hs, in-process)")


def test_recall_classes_100k_steps(benchmark: Any, recall_100k_steps: RecallStore) -> None:
    figures: dict[str, Any] = {}

    def run() -> None:
        figures.update(
            measure_classes("recall_100k_steps", recall_100k_steps, STEP_CLASSES, ROUNDS // 2)
        )

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    rs = recall_100k_steps
    res = RecallIndex(rs.store).search(STEP_TERM, k=10)
    assert {h.turn_id for h in res.hits} == set(rs.corpus.stats.step_rare[STEP_TERM])
    assert {h.where for h in res.hits} == {"in Bash output"}
    bu.record(
        "recall_classes_100k_steps",
        benchmark,
        index_over_raw=round(rs.index_bytes / rs.corpus.bytes, 3),
    )
    bu.note(
        f"recall_100k_steps: index {rs.index_bytes / MB:.1f} MB for {rs.corpus.bytes / MB:.0f} MB "
        f"of JSONL = {rs.index_bytes / rs.corpus.bytes:.3f}x; '{STEP_TERM}' found in exactly its "
        f"{len(res.hits)} turns, each 'in Bash output'"
    )


# ---------------------------------------------------------------------------
# the command as a person runs it


def test_recall_process_100k(benchmark: Any, recall_100k: RecallStore, tmp_path: Path) -> None:
    rs = recall_100k
    have_rg = shutil.which("rg") is not None
    lines: list[str] = []
    worst = 0.0

    def run() -> None:
        nonlocal worst
        for text in PROCESS_QUERIES:
            argvs = {
                "hs": [*bu.hs_command(), "--store", str(rs.root), "recall", "-e", *text.split()]
            }
            if have_rg:
                argvs["rg"] = rg_command(text, rs.corpus.path)
            med = interleaved(argvs, tmp_path, PROCESS_RUNS, ok=(0, 1))
            line = f"recall_process_100k['{text}']: hs recall -e {ms(med['hs'])} median"
            if have_rg:
                ratio = med["hs"] / med["rg"]
                worst = max(worst, ratio)
                line += f"; rg -i {ms(med['rg'])}; hs/rg {ratio:.2f}x"
            lines.append(line)

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    for line in lines:
        bu.note(line)
    if have_rg:
        bu.record("recall_process_100k", benchmark, worst_hs_over_rg=round(worst, 2))
        bu.note(f"recall_process_100k: the worst class is {worst:.2f}x rg -i")
    else:
        bu.note(
            "recall_process_100k: rg skipped: ripgrep is not installed (make bench installs it)"
        )


def test_recall_startup(benchmark: Any, tmp_path: Path) -> None:
    """``hs recall`` on a tiny store (50 turns) against the floor of any Python
    CLI and against ``hs --help`` (which loads typer)."""
    c = bu.generate(tmp_path, "turns-50", "turns", 50)
    root = tmp_path / "tiny"
    store, _ = Store.init(root)
    import_paths(store, [c.path])
    store.close()
    argvs = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "hs --help": [*bu.hs_command(), "--help"],
        "hs recall (tiny store)": [*bu.hs_command(), "--store", str(root), "recall", "-e", RARE],
        "hs recall --json (tiny store)": [
            *bu.hs_command(),
            "--store",
            str(root),
            "recall",
            "-e",
            "--json",
            "function",
        ],
    }
    out: dict[str, float] = {}

    def run() -> None:
        out.update(interleaved(argvs, tmp_path, PROCESS_RUNS * 2))

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    floor = out["python -c pass"]
    tiny = out["hs recall (tiny store)"]
    bu.record("recall_startup", benchmark, **{k: round(v * 1000, 1) for k, v in out.items()})
    bu.note(
        "recall_startup: "
        + "; ".join(f"{k} {ms(v)}" for k, v in out.items())
        + f"; hs recall - python -c pass = {ms(tiny - floor)}"
    )
    assert (
        json.loads(
            subprocess.run(
                argvs["hs recall --json (tiny store)"], capture_output=True, text=True
            ).stdout
        )["path"]
        == "tantivy"
    )
