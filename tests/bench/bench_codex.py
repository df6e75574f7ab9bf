"""Codex CLI import: throughput on a ~1 GB corpus of rollouts, beside Claude Code's,
and the peak memory of importing one ~1 GB rollout (then its grown tail).

Corpora (tests/bench/corpus.py, the 0.12x generation: task events, phases,
exec_command with exec_command_end, apply_patch with patch_apply_end, web
searches, MCP calls, reasoning with its encrypted content, token counts) are
generated into pytest's temporary directory and deleted after.

* ``codex_import_1g``: ``import_paths`` in this process over ~1 GB of rollouts
  (one per session, ``sessions/YYYY/MM/DD/``), in MB/s and turns/s, beside the
  Claude Code import of the same run and the parse floor (read + ``json.loads``).
* ``codex_rollout_1g``: ``hs import`` in a child process (bu.run_child) of
  one rollout of every turn but the last three (~1 GB); its peak RSS must stay
  under :data:`RSS_LIMIT_MB` (the one assert on a measured figure: a memory
  bound, not a timing). Then the last three turns are appended, and
  ``hs import --dry-run`` says what the next import reads (the last turn again
  and what follows) before it runs.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import benchutil as bu
import pytest

from histstore.ops.importing import import_paths
from histstore.store.store import Store

MB = 1e6
#: ~24 KB a turn: about 1 GB of rollouts (HS_BENCH_CODEX_TURNS sets another size)
TURNS_1GB = int(os.environ.get("HS_BENCH_CODEX_TURNS", "43000"))
RSS_LIMIT_MB = 200
NEED_FREE_BYTES = 5 * 1024**3


def _floor(path: Path) -> int:
    n = 0
    loads = json.loads
    for f in sorted(path.rglob("*.jsonl")):
        with open(f, "rb") as fh:
            for line in fh:
                if line.strip():
                    loads(line)
                    n += 1
    return n


@pytest.fixture(scope="module")
def codex_1g(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("codex")
    if shutil.disk_usage(root).free < NEED_FREE_BYTES:
        pytest.skip("needs ~5 GB free for the Codex corpora and their stores")
    yield bu.generate(root, "codex-1g", "codex", TURNS_1GB)
    shutil.rmtree(root, ignore_errors=True)


def test_floor_parse_codex_1g(benchmark: Any, codex_1g: Any) -> None:
    n = benchmark.pedantic(_floor, args=(codex_1g.path,), rounds=1, iterations=1)
    assert n == codex_1g.stats.lines
    entry = bu.record("floor_parse_codex_1g", benchmark, turns=codex_1g.turns)
    secs = entry.get("seconds_median")
    if secs:
        bu.note(f"floor_parse_codex_1g: {secs:.1f} s, {codex_1g.bytes / MB / secs:.1f} MB/s")


def test_import_codex_1g(
    benchmark: Any,
    codex_1g: Any,
    claude_10k: Any,
    fresh_store: Callable[[], Store],
) -> None:
    c = codex_1g
    last: dict[str, Any] = {}

    def setup() -> tuple[tuple[Store], dict[str, Any]]:
        last["store"] = fresh_store()
        return (last["store"],), {}

    def run(store: Store) -> Any:
        return import_paths(store, [c.path], command="bench import codex")

    report = benchmark.pedantic(run, setup=setup, rounds=1, iterations=1, warmup_rounds=0)
    assert report.problems == [] and report.files_skipped == []
    assert report.turns_added == c.turns and report.files == c.stats.files
    store_bytes = last["store"].objects.size_on_disk()
    entry = bu.record(
        "import_codex_1g",
        benchmark,
        turns=c.turns,
        raw_bytes=c.bytes,
        files=c.stats.files,
        store_bytes=store_bytes,
        store_over_raw=round(store_bytes / c.bytes, 3),
    )
    secs = entry.get("seconds_median")
    if not secs:
        return
    mb_s, turns_s = c.bytes / MB / secs, c.turns / secs
    benchmark.extra_info.update(mb_per_s=round(mb_s, 1), turns_per_s=round(turns_s))
    # Claude Code beside it, on this machine in this run
    claude = bu.seconds("import_claude_10k")
    if claude is None:
        cc_store = fresh_store()
        began = time.perf_counter()
        rep = import_paths(cc_store, [claude_10k.path], command="bench import claude")
        claude = time.perf_counter() - began
        assert rep.turns_added == claude_10k.turns
    cc_mb_s, cc_turns_s = claude_10k.bytes / MB / claude, claude_10k.turns / claude
    floor = bu.seconds("floor_parse_codex_1g")
    parts = [
        f"import_codex_1g: {c.turns} turns in {c.stats.files} rollouts, {c.bytes / MB:.0f} MB: "
        f"{secs:.1f} s, {mb_s:.1f} MB/s, {turns_s:,.0f} turns/s; store/raw "
        f"{store_bytes / c.bytes:.3f}",
        f"Claude Code (claude_10k, {claude_10k.bytes / MB:.0f} MB): {cc_mb_s:.1f} MB/s, "
        f"{cc_turns_s:,.0f} turns/s",
    ]
    if floor:
        parts.append(f"= {secs / floor:.1f}x the parse floor")
    bu.note("; ".join(parts))


def _cut_last_turns(path: Path, n: int) -> bytes:
    """Cut the rollout before its last ``n`` turns (their ``task_started`` lines);
    return the bytes cut off, to append later."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        fh.seek(max(0, size - 8 * 1024 * 1024))
        tail = fh.read()
    base = size - len(tail)
    starts: list[int] = []
    i = tail.find(b"\n") + 1
    while 0 < i < len(tail):
        if b'"type":"task_started"' in tail[i : i + 160]:
            starts.append(i)
        i = tail.find(b"\n", i) + 1
    cut = base + starts[-n]
    with open(path, "r+b") as fh:
        fh.seek(cut)
        rest = fh.read()
        fh.truncate(cut)
    return rest


def test_import_one_codex_rollout_1g(benchmark: Any, tmp_path: Path) -> None:
    if shutil.disk_usage(tmp_path).free < NEED_FREE_BYTES:
        pytest.skip("needs ~5 GB free for the Codex rollout and its store")
    work = tmp_path / "one"
    work.mkdir()
    try:
        c = bu.generate(work, "codex-one-1g", "codex-one", TURNS_1GB)
        (rollout,) = c.stats.paths
        rest = _cut_last_turns(rollout, 3)
        size = rollout.stat().st_size
        hs = bu.hs_command()
        store = work / "store"
        assert bu.run_child([*hs, "--store", str(store), "init"], work / "i.out")["code"] == 0
        argv = [*hs, "--store", str(store), "import", "--json", str(rollout)]
        result: dict[str, Any] = {}

        def run() -> None:
            result.update(bu.run_child(argv, work / "import.out"))

        benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
        assert result["code"] == 0, result["stderr"][-2000:]
        report = json.loads(result["stdout"].strip().splitlines()[-1])
        assert report["turns_added"] == c.turns - 3 and report["problems"] == []
        peak, secs = result["peak_rss_mb"], result["seconds"]

        # it grows by three turns: the next import reads its last turn again, and those
        with open(rollout, "ab") as fh:
            fh.write(rest)
        dry = [*hs, "--store", str(store), "import", "--dry-run", "--json", str(rollout)]
        plan = bu.run_child(dry, work / "dry.out")
        assert plan["code"] == 0, plan["stderr"]
        new_bytes = json.loads(plan["stdout"])["new_bytes"]
        assert len(rest) < new_bytes < len(rest) + size // 1000
        again = bu.run_child(argv, work / "again.out")
        assert again["code"] == 0, again["stderr"][-2000:]
        grown = json.loads(again["stdout"].strip().splitlines()[-1])
        assert (grown["turns_added"], grown["turns_unchanged"]) == (3, 1)

        bu.record(
            "import_one_codex_rollout_1g",
            benchmark,
            turns=c.turns - 3,
            raw_bytes=size,
            peak_rss_mb=round(peak, 1),
            seconds=round(secs, 2),
            grown_new_bytes=new_bytes,
            grown_seconds=round(again["seconds"], 2),
            grown_peak_rss_mb=round(again["peak_rss_mb"], 1),
            rss_limit_mb=RSS_LIMIT_MB,
        )
        bu.note(
            f"import_one_codex_rollout_1g (`hs import`, child process): {c.turns - 3} turns, "
            f"{size / MB:.0f} MB in one rollout: {secs:.1f} s = {size / MB / secs:.1f} MB/s, "
            f"{(c.turns - 3) / secs:,.0f} turns/s; peak RSS {peak:.0f} MB (limit "
            f"{RSS_LIMIT_MB} MB); grown by 3 turns: {new_bytes / 1e3:.0f} kB read again, "
            f"{again['seconds']:.1f} s, peak RSS {again['peak_rss_mb']:.0f} MB"
        )
        assert peak < RSS_LIMIT_MB, f"{size / MB:.0f} MB rollout peaked at {peak:.0f} MB RSS"
    finally:
        shutil.rmtree(work, ignore_errors=True)
