"""`hs mcp` benchmarks: a tool call over stdio against `hs recall --json` as a process.

The store: the seeded 100k turn JSONL (the ``turns_100k`` fixture) imported
into one store. The server is started once, as an agent starts it
(``python -m histstore.porcelain.cli --store S mcp`` over stdio), and driven by
the SDK's own client (tests/mcptools.py); each figure is the wall time of one
``tools/call`` round trip as the client sees it, p50 / p95 over ROUNDS calls
after a warm-up. Against it, the same query as ``hs --store S recall
--everywhere --json QUERY`` run as a whole process (median / p95 of
PROCESS_RUNS), which is what an agent shelling out pays per question.

Also: the server's start-up (spawn to the end of the ``initialize``
handshake, the client connected) and the floor of a call (``memory_list`` on
a store with no memory: the round trip and the store opened, no search).
Each is a pytest-benchmark (``make bench BENCH_ARGS='-k mcp'``; run with
``--benchmark-only`` like every benchmark here), and the process is measured
in the same test right after the tool calls, so the ratio compares figures of
one moment of a machine others share. Nothing asserts on time; the asserts
are functional (the answers found).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import benchutil as bu
import pytest
from mcptools import Server

from histstore.ops.importing import import_paths
from histstore.store.store import Store

ROUNDS = int(os.environ.get("HS_BENCH_MCP_ROUNDS", "60"))
PROCESS_RUNS = int(os.environ.get("HS_BENCH_MCP_PROCESS_RUNS", "9"))
STARTS = int(os.environ.get("HS_BENCH_MCP_STARTS", "5"))
WARMUP = 3

RARE = bu.corpus.RARE_TERMS[0]
COMMON = "regression"
QUERIES = {
    "rare": RARE,
    "common": COMMON,
    "rare_plus_common": f"{RARE} {COMMON}",
    "three_common": "retry timeout migration",
    "three_mixed": "plegarcle parse_response ColumnError",
}


def p95(data: list[float]) -> float:
    s = sorted(data)
    return s[max(0, -(-95 * len(s) // 100) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


@pytest.fixture(scope="session")
def mcp_100k(
    turns_100k: bu.Corpus, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, Server, Path]]:
    root = tmp_path_factory.mktemp("mcp-store")
    store, _ = Store.init(root / "store")
    began = time.perf_counter()
    report = import_paths(store, [turns_100k.path], command="bench mcp 100k")
    assert report.turns_added == turns_100k.turns
    store.close()
    bu.note(f"mcp store: {turns_100k.turns} turns imported in {time.perf_counter() - began:.1f} s")
    home = root / "home"
    home.mkdir()
    srv = Server(root / "store", root, home)
    try:
        yield root / "store", srv, home
    finally:
        srv.close()
        shutil.rmtree(root, ignore_errors=True)


def _data(benchmark: Any) -> list[float]:
    """The per-round seconds of a finished benchmark (empty with --benchmark-disable)."""
    stats = getattr(getattr(benchmark, "stats", None), "stats", None)
    return list(getattr(stats, "data", None) or [])


def _bench_call(benchmark: Any, srv: Server, name: str, args: dict[str, Any]) -> list[float]:
    benchmark.pedantic(
        lambda: srv.ok(name, args), rounds=ROUNDS, iterations=1, warmup_rounds=WARMUP
    )
    return _data(benchmark)


def _process(argv: list[str], cwd: Path) -> list[float]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = []
    for i in range(PROCESS_RUNS + 1):
        began = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, cwd=cwd, env=env, check=False)
        if i:  # the first run is a warm-up (bytecode, page cache)
            out.append(time.perf_counter() - began)
        assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.parametrize("which", list(QUERIES))
def test_mcp_recall_100k(benchmark: Any, mcp_100k: tuple[Path, Server, Path], which: str) -> None:
    store, srv, home = mcp_100k
    query = QUERIES[which]
    args = {"query": query, "everywhere": True, "k": 5}
    assert srv.ok("recall_history", args).startswith("20")  # it finds turns
    tool = _bench_call(benchmark, srv, "recall_history", args)
    if not tool:
        return  # --benchmark-disable: nothing was measured
    cli = _process([*bu.hs_command(), "--store", str(store), "recall", "-e", "--json", query], home)
    t50, t95 = statistics.median(tool), p95(tool)
    c50, c95 = statistics.median(cli), p95(cli)
    bu.record(
        f"mcp_recall_100k[{which}]",
        benchmark,
        query=query,
        tool_p50_ms=round(t50 * 1000, 2),
        tool_p95_ms=round(t95 * 1000, 2),
        process_p50_ms=round(c50 * 1000, 1),
        process_p95_ms=round(c95 * 1000, 1),
        process_over_tool_p50=round(c50 / t50, 1),
    )
    bu.note(
        f"mcp_recall_100k['{query}']: tool call {ms(t50)} p50 / {ms(t95)} p95 "
        f"({len(tool)} calls); hs recall --json process {ms(c50)} p50 / {ms(c95)} p95 "
        f"({PROCESS_RUNS} runs); process/tool {c50 / t50:.1f}x at p50"
    )


def _a_turn(srv: Server) -> str:
    text = srv.ok("recall_history", {"query": RARE, "everywhere": True, "k": 1})
    return text.split("  turn ", 1)[1].split()[0]


OTHER = {
    "memory_list": lambda srv: {},  # the floor: a round trip and the store opened
    "recent_sessions": lambda srv: {"everywhere": True, "limit": 20},
    "show_turn": lambda srv: {"turn_id": _a_turn(srv)},
}


@pytest.mark.parametrize("tool", list(OTHER))
def test_mcp_tool_100k(benchmark: Any, mcp_100k: tuple[Path, Server, Path], tool: str) -> None:
    _, srv, _ = mcp_100k
    args = OTHER[tool](srv)
    data = _bench_call(benchmark, srv, tool, args)
    if data:
        t50, t95 = statistics.median(data), p95(data)
        bu.record(f"mcp_tool_100k[{tool}]", benchmark, p50_ms=round(t50 * 1000, 2))
        bu.note(f"mcp_tool_100k[{tool}]: {ms(t50)} p50 / {ms(t95)} p95 ({len(data)} calls)")


def test_mcp_startup_100k(benchmark: Any, mcp_100k: tuple[Path, Server, Path]) -> None:
    """Spawn to connected (the SDK's initialize handshake done), then a new
    server's first recent_sessions (it reads every session revision once)."""
    store, _, home = mcp_100k
    first: list[float] = []
    connect: list[float] = []

    def start() -> None:
        began = time.perf_counter()
        s = Server(store, home, home)
        connect.append(time.perf_counter() - began)
        began = time.perf_counter()
        s.ok("recent_sessions", {"everywhere": True, "limit": 20})
        first.append(time.perf_counter() - began)
        s.close()

    benchmark.pedantic(start, rounds=STARTS, iterations=1, warmup_rounds=1)
    data = _data(benchmark)
    if data:
        bu.record("mcp_startup_100k", benchmark, median_ms=round(statistics.median(data) * 1000))
        bu.note(
            f"mcp_startup_100k: start, connect, first recent_sessions and close "
            f"{ms(statistics.median(data))} median of {len(data)} (min {ms(min(data))}); "
            f"of it spawn to connected {ms(statistics.median(connect[1:]))}, "
            f"the first recent_sessions {ms(statistics.median(first[1:]))}"
        )
