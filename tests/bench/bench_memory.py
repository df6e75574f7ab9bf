"""Peak memory of importing a ~1 GB turn JSONL, measured in a separate process.

The import runs as ``hs --store S import --json FILE`` (what a person runs) in a
child process; its peak resident set size comes from ``os.wait4`` (that child's
own rusage, not the maximum over every child this run has waited for). A second
child that only reads the file and ``json.loads`` every line gives the baseline
RSS of a Python process streaming the same file.

The measured command is started by a small Python wrapper process, which waits
for it and reports its rusage. Started directly from pytest it would inherit
pytest's own peak: Linux carries the old address space's high-water RSS into
``ru_maxrss`` across ``exec`` (and ``subprocess`` uses vfork, so the "old"
address space is pytest's), which made a parse-only child show ~140 MB.

The one assert on a measured figure is a memory bound, not a timing: the import
must stream, so its peak RSS stays under ``RSS_LIMIT_MB`` whatever the file size.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import benchutil as bu
import pytest

MB = 1e6
TURNS_1GB = 540_000  # ~1.9 KB a turn: about 1 GB of turn JSONL
RSS_LIMIT_MB = 300
NEED_FREE_BYTES = 3 * 1024**3  # the file (~1 GB) and the store (~0.7 GB), with margin

PARSE_ONLY = """
import json, sys
loads = json.loads
n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        if line.strip():
            loads(line)
            n += 1
print(n)
"""


run_child = bu.run_child


def test_import_1gb_peak_rss(benchmark: Any, tmp_path: Path) -> None:
    free = shutil.disk_usage(tmp_path).free
    if free < NEED_FREE_BYTES:
        pytest.skip(f"needs ~3 GB free in {tmp_path}, has {free / 1024**3:.1f} GB")
    work = tmp_path / "mem"
    work.mkdir()
    try:
        c = bu.generate(work, "turns-1gb", "turns", TURNS_1GB)

        # baseline: a Python process that only streams and parses the same file
        floor = run_child([sys.executable, "-c", PARSE_ONLY, str(c.path)], work / "floor.out")
        assert floor["code"] == 0, floor["stderr"]
        assert int(floor["stdout"].strip()) == c.stats.lines

        hs = bu.hs_command()
        store = work / "store"
        init = run_child([*hs, "--store", str(store), "init"], work / "init.out")
        assert init["code"] == 0, init["stderr"]
        argv = [*hs, "--store", str(store), "import", "--json", str(c.path)]
        result: dict[str, Any] = {}

        def run() -> None:
            result.update(run_child(argv, work / "import.out"))

        benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
        assert result["code"] == 0, result["stderr"][-2000:]
        report = json.loads(result["stdout"].strip().splitlines()[-1])
        store_bytes = bu.sizes_under(store / "objects")
        peak = result["peak_rss_mb"]
        bu.record(
            "import_1gb_peak_rss",
            benchmark,
            turns=c.turns,
            raw_bytes=c.bytes,
            peak_rss_mb=round(peak, 1),
            parse_only_peak_rss_mb=round(floor["peak_rss_mb"], 1),
            import_seconds=round(result["seconds"], 2),
            import_cpu_seconds=round(result["cpu_seconds"], 2),
            parse_only_seconds=round(floor["seconds"], 2),
            turns_per_s=round(c.turns / result["seconds"]),
            store_bytes=store_bytes,
            store_over_raw=round(store_bytes / c.bytes, 3),
            rss_limit_mb=RSS_LIMIT_MB,
        )
        bu.note(
            f"import_1gb (`hs import`, child process): {c.turns} turns, {c.bytes / MB:.0f} MB raw; "
            f"peak RSS {peak:.0f} MB (limit {RSS_LIMIT_MB} MB; a parse-only process: "
            f"{floor['peak_rss_mb']:.0f} MB); {result['seconds']:.1f} s wall = "
            f"{c.turns / result['seconds']:,.0f} turns/s = "
            f"{result['seconds'] / floor['seconds']:.1f}x the parse-only process "
            f"({floor['seconds']:.1f} s); store/raw {store_bytes / c.bytes:.3f}"
        )
        assert report["turns_added"] == c.turns
        assert report["problems"] == []
        assert peak < RSS_LIMIT_MB, (
            f"import of {c.bytes / MB:.0f} MB peaked at {peak:.0f} MB RSS: it does not stream"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
