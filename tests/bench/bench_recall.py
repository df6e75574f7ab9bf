"""Recall benchmarks: latency in-process against the raw FTS5 query, and the
``hs recall`` process against ``rg -i`` over the source JSONL.

The spec is the "Speed" section of issue 3. Every figure is a measurement of
this run; nothing here asserts on time (the asserts are functional facts: the
store holds every turn, a planted rare term is found).

The store: the seeded 100k turn JSONL (the ``turns_100k`` fixture) imported
once per session into one store (the import builds the recall index). "Now" is
frozen at the corpus end (``corpus.END``, 2026-11-01) so ``days`` windows cut
the corpus the same way on every run.

Figures, per query class (:data:`CLASSES`):

* ``recall_hs_100k[CLASS]`` -- ``RecallIndex(store).search(...)``, a fresh
  ``RecallIndex`` per call (as a CLI or a tool call does), p50 / p95;
* ``recall_raw_fts5_100k[CLASS]`` -- the naive query straight on the FTS5 table
  over a connection kept open: every term of the query OR-ed (the same MATCH
  string ``hs`` builds before it bounds the work for common terms), the same
  project and days filters, ``ORDER BY bm25 LIMIT 5``, then the five rows' text
  fetched; p50 / p95 and hs/raw. ``hs`` deliberately bounds the work for common
  terms, so it may be *faster* than this naive query: both are reported.
* ``recall_connect_100k`` -- the fixed cost of a read-only connection (open,
  read the meta table, close) that ``hs`` pays per call and the raw query does
  not: most of hs's overhead where the raw query is fast.
* ``recall_process_100k[QUERY]`` -- ``hs --store S recall --everywhere QUERY``
  as a whole process (wall time, median of several runs) against
  ``rg -i QUERY corpus.jsonl`` with its output captured (not sent to /dev/null,
  where rg stops at the first match);
* ``recall_startup[*]`` -- the floor of any Python CLI (``python -c pass``) and
  ``hs --help``.

The ``hs`` processes run from cached bytecode (``PYTHONPYCACHEPREFIX``, the
first run writes it), as an installed tool does; when the environment sets
``PYTHONDONTWRITEBYTECODE`` (histstore then compiles its modules from source
on every start) the figure for that setting is given too.

At 1M turns (``HS_BENCH_1M=1``, off by default; needs ~15 GB free): the same
classes with fewer runs, and the process against rg.
"""

from __future__ import annotations

import math
import os
import shutil
import sqlite3
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

from histstore.history.project import project_key
from histstore.ops.importing import import_paths
from histstore.recall import index as recall_mod
from histstore.recall.index import RecallIndex
from histstore.recall.query import Query
from histstore.recall.search import proj_token
from histstore.store.store import Store

MB = 1e6
GB = 1024**3
ROUNDS = int(os.environ.get("HS_BENCH_RECALL_ROUNDS", "100"))  # per class, hs and raw
WARMUP = 3
PROCESS_RUNS = int(os.environ.get("HS_BENCH_RECALL_PROCESS_RUNS", "7"))
K = 5
DAYS = 30
#: a 1M turn corpus: ~1.9 GB JSONL, ~1.3 GB store, ~3-4 GB index, with margin
NEED_FREE_1M = 15 * 10**9
ENV_1M = "HS_BENCH_1M"

RARE = bu.corpus.RARE_TERMS[0]  # planted in ~0.01 % of turns
COMMON = "regression"  # planted in ~35 % of turns
assert COMMON in bu.corpus.COMMON_TERMS

# Three vocabulary words in 10-15 % of turns each (all "common" to hs: it takes
# the newest matching turns in scope, unranked), and three of mixed frequency (a pseudo-word in
# ~1.8 % of turns, an identifier, a class name).
THREE_COMMON = "retry timeout migration"
THREE_MIXED = "plegarcle parse_response ColumnError"
STOPWORD_LIKE = "function"  # a vocabulary word in ~94 % of turns


@dataclass(frozen=True)
class QueryClass:
    name: str
    text: str
    scope: str | None = None  # None: everywhere; "big": the largest project; "rare": RARE's
    days: int | None = None


CLASSES: tuple[QueryClass, ...] = (
    QueryClass("rare", RARE),
    QueryClass("rare_project", RARE, scope="rare"),
    QueryClass("rare_days30", RARE, days=DAYS),
    QueryClass("common", COMMON),
    QueryClass("common_project", COMMON, scope="big"),
    QueryClass("common_days30", COMMON, days=DAYS),
    QueryClass("common_project_days30", COMMON, scope="big", days=DAYS),
    QueryClass("stopword_like", STOPWORD_LIKE),
    QueryClass("rare_plus_common", f"{RARE} {COMMON}"),
    QueryClass("rare_plus_common_project", f"{RARE} {COMMON}", scope="rare"),
    QueryClass("three_common", THREE_COMMON),
    QueryClass("three_common_project", THREE_COMMON, scope="big"),
    QueryClass("three_mixed", THREE_MIXED),
    QueryClass("three_mixed_days30", THREE_MIXED, days=DAYS),
)

PROCESS_QUERIES: tuple[str, ...] = (RARE, COMMON, f"{RARE} {COMMON}", THREE_COMMON, THREE_MIXED)


# ---------------------------------------------------------------------------
# helpers


@dataclass
class RecallStore:
    """A store with the corpus imported and the index built."""

    store: Store
    root: Path
    corpus: bu.Corpus
    index_path: Path
    biggest_project: str
    rare_project: str

    def scope(self, which: str | None) -> str | None:
        if which is None:
            return None
        return self.biggest_project if which == "big" else self.rare_project


def percentile(data: list[float], p: float) -> float:
    """Nearest-rank percentile of ``data`` (seconds)."""
    s = sorted(data)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def p50_p95(data: list[float]) -> tuple[float, float]:
    return statistics.median(data), percentile(data, 95)


def bench_data(benchmark: Any) -> list[float] | None:
    """The per-round seconds of a finished benchmark (None with --benchmark-disable)."""
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


def since_rowid(days: int | None) -> int | None:
    """The lowest rowid of a days window, as hs computes it (rowid = ms * 4096 + n)."""
    if days is None:
        return None
    from datetime import timedelta

    return int((recall_mod._now() - timedelta(days=days)).timestamp() * 1000) * 4096


def raw_sql(text: str, scope: str | None, days: int | None) -> tuple[str, list[Any]]:
    """The naive query: every term OR-ed, bm25 (hs's column weights), top K."""
    match = f"({Query.parse(text).fts()})"
    if scope is not None:
        match = f"proj : {proj_token(project_key(scope))} AND {match}"
    sql = "SELECT rowid, bm25(fts, 4.0, 2.0, 1.0, 0.0) FROM fts WHERE fts MATCH ?"
    args: list[Any] = [match]
    since = since_rowid(days)
    if since is not None:
        sql += " AND rowid >= ?"
        args.append(since)
    sql += " ORDER BY bm25(fts, 4.0, 2.0, 1.0, 0.0) LIMIT ?"
    args.append(K)
    return sql, args


def raw_query(conn: sqlite3.Connection, sql: str, args: list[Any]) -> int:
    """Run the ranked query and fetch the rows' text; the number of rows."""
    n = 0
    for rowid, _ in conn.execute(sql, args).fetchall():
        conn.execute(
            "SELECT turn_id, session_id, asked_at, asked, answered, files FROM turn"
            " WHERE rowid = ?",
            (rowid,),
        ).fetchone()
        n += 1
    return n


def rg_command(text: str, path: Path) -> list[str]:
    """``rg -i`` for any of the query's words (as hs ORs them)."""
    args = ["rg", "-i"]
    for word in text.split():
        args += ["-e", word]
    return [*args, str(path)]


#: where the ``hs`` processes keep their bytecode (PYTHONPYCACHEPREFIX): an
#: installed tool runs from compiled bytecode, but this environment may set
#: PYTHONDONTWRITEBYTECODE=1 (then histstore is compiled from source every run)
PYC_DIR = Path(tempfile.gettempdir()) / f"hs-bench-pyc-{os.getuid()}"


def run_wall(argv: list[str], cwd: Path, *, pyc: bool = True) -> tuple[float, int, int]:
    """Run to completion with stdout captured: (wall seconds, exit code, stdout bytes).
    ``pyc``: Python bytecode is cached (under PYC_DIR), as for an installed tool;
    else the environment is left as it is."""
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


def make_recall_store(c: bu.Corpus, root: Path, label: str) -> RecallStore:
    store, created = Store.init(root)
    assert created
    began = time.perf_counter()
    report = import_paths(store, [c.path], command=f"bench recall {label}")
    secs = time.perf_counter() - began
    assert report.turns_added == c.turns
    assert not getattr(report, "index_error", None), report.index_error
    index = RecallIndex(store)
    path = index.current_path()
    assert path is not None, "the import did not build the recall index"
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        biggest = conn.execute(
            "SELECT project FROM turn GROUP BY pkey ORDER BY count(*) DESC LIMIT 1"
        ).fetchone()[0]
        rare_ids = c.stats.rare[RARE]
        rare_project = conn.execute(
            "SELECT project FROM turn WHERE turn_id = ?", (rare_ids[0],)
        ).fetchone()[0]
        rows = conn.execute("SELECT count(*) FROM turn").fetchone()[0]
    finally:
        conn.close()
    index_bytes = path.stat().st_size
    store_bytes = store.objects.size_on_disk()  # type: ignore[attr-defined]
    bu.note(
        f"recall store {label}: {rows} turns imported and indexed in {secs:.1f} s; "
        f"index {index_bytes / MB:.0f} MB, objects {store_bytes / MB:.0f} MB; "
        f"largest project {biggest}, '{RARE}' project {rare_project}; code {code_version()}"
    )
    return RecallStore(store, root, c, path, biggest, rare_project)


def disk_note(where: Path) -> tuple[bool, str]:
    free = shutil.disk_usage(where).free
    fits = free > NEED_FREE_1M
    line = (
        f"1M turns (~1.9 GB JSONL + ~1.3 GB store + ~3-4 GB index) vs {free / 1e9:.0f} GB free "
        f"in {where}: {'fits' if fits else 'does NOT fit'} (needs >{NEED_FREE_1M / 1e9:.0f} GB)"
    )
    return fits, line


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
    _fits, line = disk_note(root.parent)
    enabled = os.environ.get(ENV_1M, "") not in ("", "0")
    bu.note(line + ("; the 1M benchmark is on" if enabled else f"; set {ENV_1M}=1 to run it"))
    try:
        yield rs
    finally:
        rs.store.close()
        shutil.rmtree(root.parent, ignore_errors=True)  # ~0.7 GB


# ---------------------------------------------------------------------------
# in-process: hs against the raw FTS5 query


def _hs_call(rs: RecallStore, qc: QueryClass) -> Callable[[], Any]:
    scope = rs.scope(qc.scope)

    def call() -> Any:
        return RecallIndex(rs.store).search(qc.text, project=scope, days=qc.days, k=K)

    return call


def _timed(fn: Callable[[], Any], rounds: int, warmup: int = WARMUP) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(rounds):
        began = time.perf_counter()
        fn()
        out.append(time.perf_counter() - began)
    return out


def _describe(qc: QueryClass) -> str:
    where = "everywhere" if qc.scope is None else f"project={qc.scope}"
    days = f", days={qc.days}" if qc.days else ""
    return f"'{qc.text}', {where}{days}"


@pytest.mark.parametrize("qc", CLASSES, ids=[c.name for c in CLASSES])
def test_recall_hs_100k(benchmark: Any, recall_100k: RecallStore, qc: QueryClass) -> None:
    call = _hs_call(recall_100k, qc)
    result = benchmark.pedantic(call, rounds=ROUNDS, iterations=1, warmup_rounds=WARMUP)
    if qc.name.startswith("rare") and qc.days is None:
        assert result.outcome == "found", result.outcome
    data = bench_data(benchmark)
    name = f"recall_hs_100k[{qc.name}]"
    figures: dict[str, Any] = {
        "query": qc.text,
        "scope": qc.scope or "everywhere",
        "days": qc.days,
        "outcome": result.outcome,
        "hits": len(result.hits),
    }
    if data:
        p50, p95 = p50_p95(data)
        figures.update(p50_ms=round(p50 * 1000, 3), p95_ms=round(p95 * 1000, 3), runs=len(data))
    bu.record(name, benchmark, **figures)
    if data:
        bu.note(
            f"{name} ({_describe(qc)}): p50 {ms(p50)}, p95 {ms(p95)} over {len(data)} runs; "
            f"{len(result.hits)} hits ({result.outcome})"
        )


@pytest.mark.parametrize("qc", CLASSES, ids=[c.name for c in CLASSES])
def test_recall_raw_fts5_100k(benchmark: Any, recall_100k: RecallStore, qc: QueryClass) -> None:
    sql, args = raw_sql(qc.text, recall_100k.scope(qc.scope), qc.days)
    conn = sqlite3.connect(f"file:{recall_100k.index_path}?mode=ro", uri=True)
    try:
        n = benchmark.pedantic(
            raw_query, args=(conn, sql, args), rounds=ROUNDS, iterations=1, warmup_rounds=WARMUP
        )
    finally:
        conn.close()
    data = bench_data(benchmark)
    name = f"recall_raw_fts5_100k[{qc.name}]"
    figures: dict[str, Any] = {"query": qc.text, "match": args[0], "rows": n}
    if not data:
        bu.record(name, benchmark, **figures)
        return
    p50, p95 = p50_p95(data)
    figures.update(p50_ms=round(p50 * 1000, 3), p95_ms=round(p95 * 1000, 3), runs=len(data))
    hs = bu.RESULTS.get(f"recall_hs_100k[{qc.name}]", {})
    line = f"{name} ({_describe(qc)}): p50 {ms(p50)}, p95 {ms(p95)}; {n} rows"
    if "p50_ms" in hs:
        r50 = hs["p50_ms"] / (p50 * 1000)
        r95 = hs["p95_ms"] / (p95 * 1000)
        figures.update(hs_over_raw_p50=round(r50, 2), hs_over_raw_p95=round(r95, 2))
        line += (
            f"; hs p50 {ms(hs['p50_ms'] / 1000)} / p95 {ms(hs['p95_ms'] / 1000)}"
            f" = {r50:.2f}x / {r95:.2f}x raw"
        )
    bu.record(name, benchmark, **figures)
    bu.note(line)


def test_recall_connect_100k(benchmark: Any, recall_100k: RecallStore) -> None:
    """What every hs call pays before its query: CURRENT read, a read-only
    connection opened, the meta table read, the connection closed."""
    index = RecallIndex(recall_100k.store)

    def connect() -> None:
        path = index.current_path()
        assert path is not None
        conn = index._connect(path, write=False)
        try:
            index._meta(conn)
        finally:
            conn.close()

    benchmark.pedantic(connect, rounds=ROUNDS * 2, iterations=1, warmup_rounds=WARMUP)
    data = bench_data(benchmark)
    if data:
        p50, p95 = p50_p95(data)
        bu.record("recall_connect_100k", benchmark, p50_ms=round(p50 * 1000, 3))
        bu.note(
            f"recall_connect_100k (CURRENT + open + meta + close): p50 {ms(p50)}, p95 {ms(p95)}"
        )


# ---------------------------------------------------------------------------
# the command as a person runs it


@pytest.mark.parametrize("text", PROCESS_QUERIES)
def test_recall_process_100k(
    benchmark: Any, recall_100k: RecallStore, text: str, tmp_path: Path
) -> None:
    hs = [
        *bu.hs_command(),
        "--store",
        str(recall_100k.root),
        "recall",
        "--everywhere",
        *text.split(),
    ]
    out: dict[str, Any] = {}

    def run() -> None:
        _wall, code, size = run_wall(hs, tmp_path)
        out.update(code=code, size=size)

    benchmark.pedantic(run, rounds=PROCESS_RUNS, iterations=1, warmup_rounds=1)
    assert out["code"] == 0
    data = bench_data(benchmark)
    name = f"recall_process_100k[{text}]"
    figures: dict[str, Any] = {"query": text, "hs_stdout_bytes": out["size"]}
    parts = []
    if data:
        hs_med = statistics.median(data)
        figures["hs_median_ms"] = round(hs_med * 1000, 1)
        parts.append(f"hs recall --everywhere: {ms(hs_med)} median of {len(data)}")
    if shutil.which("rg") is None:
        parts.append("rg skipped: ripgrep is not installed (make bench installs it)")
    else:
        rg = rg_command(text, recall_100k.corpus.path)
        run_wall(rg, tmp_path)  # warm-up
        walls = []
        for _ in range(PROCESS_RUNS):
            wall, code, size = run_wall(rg, tmp_path)
            assert code in (0, 1)
            walls.append(wall)
        rg_med = statistics.median(walls)
        figures.update(rg_median_ms=round(rg_med * 1000, 1), rg_stdout_bytes=size)
        parts.append(f"rg -i (output piped, {size / MB:.1f} MB): {ms(rg_med)} median")
        if data:
            figures["hs_over_rg"] = round(hs_med / rg_med, 2)
            parts.append(f"hs/rg {hs_med / rg_med:.2f}x")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        walls = [run_wall(hs, tmp_path, pyc=False)[0] for _ in range(max(3, PROCESS_RUNS // 2))]
        no_pyc = statistics.median(walls)
        figures["hs_no_bytecode_median_ms"] = round(no_pyc * 1000, 1)
        parts.append(f"hs without cached bytecode (as this env runs it): {ms(no_pyc)} median")
    bu.record(name, benchmark, **figures)
    bu.note(f"{name}: " + "; ".join(parts))


STARTUP: dict[str, tuple[str, Callable[[], list[str]], bool]] = {
    "python_pass": (
        "python -c pass (the venv's python)",
        lambda: [sys.executable, "-c", "pass"],
        True,
    ),
    "hs_help": ("hs --help", lambda: [*bu.hs_command(), "--help"], True),
    "hs_help_env_bytecode": (
        "hs --help with this environment's bytecode setting "
        f"(PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})",
        lambda: [*bu.hs_command(), "--help"],
        False,
    ),
}


@pytest.mark.parametrize("what", list(STARTUP))
def test_recall_startup(benchmark: Any, what: str, tmp_path: Path) -> None:
    label, make_argv, pyc = STARTUP[what]
    argv = make_argv()
    codes: list[int] = []

    def run() -> None:
        codes.append(run_wall(argv, tmp_path, pyc=pyc)[1])

    benchmark.pedantic(run, rounds=PROCESS_RUNS * 2, iterations=1, warmup_rounds=1)
    assert set(codes) == {0}
    data = bench_data(benchmark)
    if data:
        med = statistics.median(data)
        bu.record(f"recall_startup[{what}]", benchmark, median_ms=round(med * 1000, 1))
        bu.note(f"recall_startup[{what}] {label}: {ms(med)} median of {len(data)}")


# ---------------------------------------------------------------------------
# optional: 1M turns


def test_recall_1m(benchmark: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    """1M turns: import once (the benchmark's one round), then the same classes
    (fewer runs) and the process against rg. Off unless HS_BENCH_1M=1."""
    if os.environ.get(ENV_1M, "") in ("", "0"):
        pytest.skip(f"the 1M recall benchmark is optional: set {ENV_1M}=1 to run it")
    work = tmp_path_factory.mktemp("recall-1m")
    fits, line = disk_note(work)
    if not fits:
        pytest.skip(line)
    rounds = max(10, ROUNDS // 4)
    try:
        c = bu.generate(work, "turns-1m", "turns", 1_000_000)
        made: dict[str, RecallStore] = {}

        def build() -> None:
            made["rs"] = make_recall_store(c, work / "store", "1M")

        benchmark.pedantic(build, rounds=1, iterations=1, warmup_rounds=0)
        rs = made["rs"]
        try:
            conn = sqlite3.connect(f"file:{rs.index_path}?mode=ro", uri=True)
            for qc in CLASSES:
                res = _hs_call(rs, qc)()
                h50, h95 = p50_p95(_timed(_hs_call(rs, qc), rounds))
                sql, args = raw_sql(qc.text, rs.scope(qc.scope), qc.days)
                r50, r95 = p50_p95(_timed(lambda: raw_query(conn, sql, args), rounds))  # noqa: B023
                benchmark.extra_info[f"{qc.name}_hs_p50_ms"] = round(h50 * 1000, 2)
                benchmark.extra_info[f"{qc.name}_hs_p95_ms"] = round(h95 * 1000, 2)
                benchmark.extra_info[f"{qc.name}_raw_p50_ms"] = round(r50 * 1000, 2)
                benchmark.extra_info[f"{qc.name}_raw_p95_ms"] = round(r95 * 1000, 2)
                bu.note(
                    f"recall_1m[{qc.name}] ({_describe(qc)}): hs p50 {ms(h50)} / p95 {ms(h95)}; "
                    f"raw FTS5 p50 {ms(r50)} / p95 {ms(r95)}; hs/raw {h50 / r50:.2f}x / "
                    f"{h95 / r95:.2f}x; {len(res.hits)} hits ({res.outcome}); {rounds} runs"
                )
            conn.close()
            for text in PROCESS_QUERIES:
                argv = [*bu.hs_command(), "--store", str(rs.root), "recall", "--everywhere"]
                argv += text.split()
                hs_med = statistics.median(
                    [run_wall(argv, work)[0] for _ in range(max(3, PROCESS_RUNS // 2))]
                )
                parts = [f"hs {ms(hs_med)} median"]
                if shutil.which("rg"):
                    rg = rg_command(text, c.path)
                    rg_med = statistics.median(
                        [run_wall(rg, work)[0] for _ in range(max(3, PROCESS_RUNS // 2))]
                    )
                    parts.append(f"rg -i {ms(rg_med)} median; rg/hs {rg_med / hs_med:.1f}x")
                else:
                    parts.append("rg skipped: not installed")
                bu.note(f"recall_process_1m[{text}]: " + "; ".join(parts))
        finally:
            rs.store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
