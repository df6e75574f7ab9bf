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
Nothing asserts on time; the asserts are functional (the answers found).
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


def _calls(srv: Server, name: str, args: dict[str, Any]) -> list[float]:
    for _ in range(WARMUP):
        srv.ok(name, args)
    out = []
    for _ in range(ROUNDS):
        began = time.perf_counter()
        srv.ok(name, args)
        out.append(time.perf_counter() - began)
    return out


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
def test_mcp_recall_100k(mcp_100k: tuple[Path, Server, Path], which: str) -> None:
    store, srv, home = mcp_100k
    query = QUERIES[which]
    args = {"query": query, "everywhere": True, "k": 5}
    assert srv.ok("recall_history", args).startswith("20")  # it finds turns
    tool = _calls(srv, "recall_history", args)
    cli = _process([*bu.hs_command(), "--store", str(store), "recall", "-e", "--json", query], home)
    t50, t95 = statistics.median(tool), p95(tool)
    c50, c95 = statistics.median(cli), p95(cli)
    bu.RESULTS[f"mcp_recall_100k[{which}]"] = {
        "tool_p50_ms": round(t50 * 1000, 2),
        "tool_p95_ms": round(t95 * 1000, 2),
        "process_p50_ms": round(c50 * 1000, 1),
        "process_p95_ms": round(c95 * 1000, 1),
    }
    bu.note(
        f"mcp_recall_100k['{query}']: tool call {ms(t50)} p50 / {ms(t95)} p95 "
        f"({ROUNDS} calls); hs recall --json process {ms(c50)} p50 / {ms(c95)} p95 "
        f"({PROCESS_RUNS} runs); process/tool {c50 / t50:.1f}x at p50"
    )


def test_mcp_floor_and_startup_100k(mcp_100k: tuple[Path, Server, Path]) -> None:
    store, srv, home = mcp_100k
    floor = _calls(srv, "memory_list", {})
    sessions = _calls(srv, "recent_sessions", {"everywhere": True, "limit": 20})
    show = _calls(srv, "show_turn", {"turn_id": _a_turn(srv)})
    starts = []
    cold = 0.0
    for i in range(STARTS):
        began = time.perf_counter()
        s = Server(store, home, home)
        starts.append(time.perf_counter() - began)
        if i == 0:  # a new server's first listing reads every session revision
            began = time.perf_counter()
            s.ok("recent_sessions", {"everywhere": True, "limit": 20})
            cold = time.perf_counter() - began
        s.close()
    bu.note(
        f"mcp_floor_100k: memory_list (no memory) {ms(statistics.median(floor))} p50 / "
        f"{ms(p95(floor))} p95; recent_sessions (4406 sessions) "
        f"{ms(statistics.median(sessions))} p50 / {ms(p95(sessions))} p95, a new server's "
        f"first {ms(cold)}; show_turn "
        f"{ms(statistics.median(show))} p50 / {ms(p95(show))} p95; server start to connected "
        f"{ms(statistics.median(starts))} median of {STARTS} (min {ms(min(starts))})"
    )


def _a_turn(srv: Server) -> str:
    text = srv.ok("recall_history", {"query": RARE, "everywhere": True, "k": 1})
    return text.split("  turn ", 1)[1].split()[0]
