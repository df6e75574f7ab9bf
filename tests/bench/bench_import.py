"""Import benchmarks: throughput, the parse floor it is compared with, re-import, size.

Every figure is a measurement of this run (pytest-benchmark), quoted as a ratio to
a baseline measured in the same run; nothing here asserts on time. The asserts
are functional facts (every turn imported, a re-import records no operation).

Baselines (the floor any importer pays on the same file):

* ``parse`` -- read the file line by line and ``json.loads`` every line;
* ``parse+hash+zstd`` -- that, plus each line's canonical JSON hashed with blake3
  and compressed with zstd level 3 (a reused compressor), as the object store does;
* ``git fast-import`` -- the same records written to a bare git repository by
  ``git fast-import`` (each line a blob, each session a commit on its own ref
  with a tree of its turns), the JSON parsed in Python to find the session:
  what git pays to store the same history (issue 12 asks an import, objects
  + refs + index, of at most 1.0x this).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchutil as bu
import blake3
import pytest
import zstandard

from histstore.history.importing import ImportReport
from histstore.ops.importing import import_paths
from histstore.store.codec import canonical_json
from histstore.store.store import Store

MB = 1e6

# ---------------------------------------------------------------------------
# helpers


def _jsonl_files(path: Path) -> list[Path]:
    return [path] if path.is_file() else sorted(path.rglob("*.jsonl"))


def parse_floor(path: Path) -> int:
    """Read every line of the file(s) and json.loads it; the number of lines parsed."""
    n = 0
    loads = json.loads
    for f in _jsonl_files(path):
        with open(f, "rb") as fh:
            for line in fh:
                if line.strip():
                    loads(line)
                    n += 1
    return n


def parse_hash_zstd_floor(path: Path) -> int:
    """parse_floor plus blake3 and zstd-3 of each line's canonical JSON."""
    n = 0
    loads = json.loads
    compress = zstandard.ZstdCompressor(level=3).compress
    for f in _jsonl_files(path):
        with open(f, "rb") as fh:
            for line in fh:
                if line.strip():
                    payload = canonical_json(loads(line))
                    blake3.blake3(payload).digest()
                    compress(payload)
                    n += 1
    return n


def git_fast_import(path: Path, repo: Path) -> int:
    """Write the records of ``path`` to a new bare repository with ``git
    fast-import``: one blob per line, one commit per session naming its turns.
    Returns the lines written."""
    shutil.rmtree(repo, ignore_errors=True)
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    proc = subprocess.Popen(
        ["git", "-C", str(repo), "fast-import", "--quiet"], stdin=subprocess.PIPE
    )
    assert proc.stdin is not None
    w = proc.stdin
    sessions: dict[str, list[tuple[str, int]]] = {}
    n = 0
    for f in _jsonl_files(path):
        with open(f, "rb") as fh:
            for line in fh:
                if not line.strip():
                    continue
                n += 1
                rec = json.loads(line)
                w.write(b"blob\nmark :%d\ndata %d\n" % (n, len(line)))
                w.write(line)
                w.write(b"\n")
                sessions.setdefault(rec["session_id"], []).append((rec["turn_id"], n))
    for sid, turns in sessions.items():
        w.write(
            b"commit refs/heads/s/%s\ncommitter hs <hs@localhost> 1700000000 +0000\ndata 6\nimport\n"
            % sid.encode()
        )
        for tid, mark in turns:
            w.write(b"M 100644 :%d %s\n" % (mark, tid.encode()))
        w.write(b"\n")
    w.close()
    assert proc.wait() == 0
    return n


def _run_import(
    benchmark: Any, fresh_store: Callable[[], Store], path: Path, rounds: int
) -> tuple[ImportReport, Store]:
    """Import ``path`` into a fresh empty store each round; the last round's
    report and store (still open: its size is read by the caller)."""
    last: dict[str, Any] = {}

    def setup() -> tuple[tuple[Store], dict[str, Any]]:
        store = fresh_store()
        last["store"] = store
        return (store,), {}

    def run(store: Store) -> ImportReport:
        return import_paths(store, [path], command="bench import")

    report = benchmark.pedantic(run, setup=setup, rounds=rounds, iterations=1, warmup_rounds=0)
    return report, last["store"]


def _floor(benchmark: Any, name: str, fn: Callable[[Path], int], c: bu.Corpus, rounds: int) -> None:
    n = benchmark.pedantic(fn, args=(c.path,), rounds=rounds, iterations=1, warmup_rounds=0)
    assert n == c.stats.lines
    entry = bu.record(name, benchmark, turns=c.turns, raw_bytes=c.bytes)
    secs = entry.get("seconds_median")
    if secs:
        turns_s, mb_s = c.turns / secs, c.bytes / MB / secs
        benchmark.extra_info.update(turns_per_s=round(turns_s), mb_per_s=round(mb_s, 1))
        bu.note(f"{name}: {secs:.2f} s median, {turns_s:,.0f} turns/s, {mb_s:.1f} MB/s")


def _import_figures(
    benchmark: Any,
    name: str,
    c: bu.Corpus,
    report: ImportReport,
    store: Store,
    floors: tuple[str, ...],
) -> None:
    store_bytes = store.objects.size_on_disk()  # type: ignore[attr-defined]
    ratio = store_bytes / c.bytes
    entry = bu.record(
        name,
        benchmark,
        turns=c.turns,
        raw_bytes=c.bytes,
        store_bytes=store_bytes,
        store_over_raw=round(ratio, 3),
        objects_written=report.objects_written,
    )
    secs = entry.get("seconds_median")
    if not secs:
        return
    turns_s, mb_s = c.turns / secs, c.bytes / MB / secs
    benchmark.extra_info.update(turns_per_s=round(turns_s), mb_per_s=round(mb_s, 1))
    parts = [
        f"{name}: {secs:.2f} s median ({entry['seconds_min']:.2f} min), "
        f"{turns_s:,.0f} turns/s, {mb_s:.1f} MB/s, store/raw {ratio:.3f} "
        f"({store_bytes / MB:.1f} MB for {c.bytes / MB:.1f} MB)"
    ]
    for floor in floors:
        base = bu.seconds(floor)
        if base:
            x = secs / base
            benchmark.extra_info[f"x_{floor}"] = round(x, 2)
            parts.append(f"= {x:.1f}x {floor}")
    bu.note("; ".join(parts))


def _check_full_import(report: ImportReport, c: bu.Corpus) -> None:
    assert report.problems == []
    assert report.files_skipped == []
    assert report.turns_added == c.turns
    assert report.operation is not None


# ---------------------------------------------------------------------------
# turn JSONL, 10k turns (baselines first: the import figures quote them)


def test_floor_parse_10k(benchmark: Any, turns_10k: bu.Corpus) -> None:
    _floor(benchmark, "floor_parse_10k", parse_floor, turns_10k, rounds=5)


def test_floor_parse_hash_zstd_10k(benchmark: Any, turns_10k: bu.Corpus) -> None:
    _floor(benchmark, "floor_parse_hash_zstd_10k", parse_hash_zstd_floor, turns_10k, rounds=5)


def test_import_turns_10k(
    benchmark: Any, turns_10k: bu.Corpus, fresh_store: Callable[[], Store]
) -> None:
    report, store = _run_import(benchmark, fresh_store, turns_10k.path, rounds=3)
    _check_full_import(report, turns_10k)
    _import_figures(
        benchmark,
        "import_turns_10k",
        turns_10k,
        report,
        store,
        ("floor_parse_10k", "floor_parse_hash_zstd_10k"),
    )


# ---------------------------------------------------------------------------
# turn JSONL, 100k turns


def test_floor_parse_100k(benchmark: Any, turns_100k: bu.Corpus) -> None:
    _floor(benchmark, "floor_parse_100k", parse_floor, turns_100k, rounds=2)


def test_floor_parse_hash_zstd_100k(benchmark: Any, turns_100k: bu.Corpus) -> None:
    _floor(benchmark, "floor_parse_hash_zstd_100k", parse_hash_zstd_floor, turns_100k, rounds=1)


def test_floor_git_fast_import_100k(benchmark: Any, turns_100k: bu.Corpus, tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo.git"
    n = benchmark.pedantic(
        git_fast_import, args=(turns_100k.path, repo), rounds=1, iterations=1, warmup_rounds=0
    )
    assert n == turns_100k.turns
    entry = bu.record("floor_git_fast_import_100k", benchmark, turns=n)
    size = bu.sizes_under(repo)
    shutil.rmtree(repo, ignore_errors=True)
    secs = entry.get("seconds_median")
    if secs:
        bu.note(f"floor_git_fast_import_100k: {secs:.2f} s, repository {size / MB:.0f} MB")


def test_import_turns_100k(
    benchmark: Any, turns_100k: bu.Corpus, fresh_store: Callable[[], Store]
) -> None:
    report, store = _run_import(benchmark, fresh_store, turns_100k.path, rounds=2)
    _check_full_import(report, turns_100k)
    _import_figures(
        benchmark,
        "import_turns_100k",
        turns_100k,
        report,
        store,
        ("floor_parse_100k", "floor_parse_hash_zstd_100k", "floor_git_fast_import_100k"),
    )
    # the index's share: a build of it alone from the stored turns
    from histstore.recall.index import RecallIndex

    index = RecallIndex(store)
    began = time.perf_counter()
    status = index.build()
    build_s = time.perf_counter() - began
    path = index.current_path()
    assert path is not None and status.rows == turns_100k.turns
    size = bu.sizes_under(path)
    whole = bu.seconds("import_turns_100k")
    share = f", {build_s / whole:.0%} of the import" if whole else ""
    bu.note(
        f"index_build_100k (the recall index alone, from the stored turns): {build_s:.2f} s"
        f"{share}; {size / MB:.1f} MB = {size / turns_100k.bytes:.3f}x the raw JSONL"
    )
    per_turn_10k, per_turn_100k = bu.seconds("import_turns_10k"), bu.seconds("import_turns_100k")
    if per_turn_10k and per_turn_100k:
        scale = (per_turn_100k / 100_000) / (per_turn_10k / 10_000)
        benchmark.extra_info["per_turn_cost_100k_over_10k"] = round(scale, 2)
        bu.note(f"import cost per turn at 100k / at 10k: {scale:.2f}x (1.0 = linear)")


def test_reimport_turns_100k(benchmark: Any, turns_100k: bu.Corpus, tmp_path: Path) -> None:
    """Importing the same file again adds nothing and records no operation."""
    store, _ = Store.init(tmp_path / "store")
    try:
        first = import_paths(store, [turns_100k.path], command="bench import")
        _check_full_import(first, turns_100k)
        ops_before = len(store.operations())
        size_before = store.objects.size_on_disk()  # type: ignore[attr-defined]

        def run() -> ImportReport:
            return import_paths(store, [turns_100k.path], command="bench re-import")

        again = benchmark.pedantic(run, rounds=2, iterations=1, warmup_rounds=0)
        assert again.operation is None
        assert again.turns_added == 0
        assert again.turns_revised == 0
        # an unchanged file is skipped whole (format 2's source table), or read and
        # found unchanged
        assert again.turns_unchanged in (0, turns_100k.turns)
        assert again.objects_written == 0
        assert again.sessions_added == again.sessions_updated == 0
        assert len(store.operations()) == ops_before
        assert store.objects.size_on_disk() == size_before  # type: ignore[attr-defined]
        entry = bu.record("reimport_turns_100k", benchmark, turns=turns_100k.turns)
        secs = entry.get("seconds_median")
        if secs:
            parts = [
                f"reimport_turns_100k (nothing new, no operation): {secs:.2f} s median, "
                f"{turns_100k.turns / secs:,.0f} turns/s"
            ]
            for ref in ("import_turns_100k", "floor_parse_100k"):
                base = bu.seconds(ref)
                if base:
                    benchmark.extra_info[f"x_{ref}"] = round(secs / base, 2)
                    parts.append(f"= {secs / base:.2f}x {ref}")
            bu.note("; ".join(parts))
    finally:
        store.close()
        shutil.rmtree(tmp_path / "store", ignore_errors=True)


# ---------------------------------------------------------------------------
# Claude Code session files, 10k turns


def test_floor_parse_claude_10k(benchmark: Any, claude_10k: bu.Corpus) -> None:
    _floor(benchmark, "floor_parse_claude_10k", parse_floor, claude_10k, rounds=3)


def test_import_claude_10k(
    benchmark: Any, claude_10k: bu.Corpus, fresh_store: Callable[[], Store]
) -> None:
    report, store = _run_import(benchmark, fresh_store, claude_10k.path, rounds=3)
    _check_full_import(report, claude_10k)
    assert report.files == claude_10k.stats.files
    _import_figures(
        benchmark, "import_claude_10k", claude_10k, report, store, ("floor_parse_claude_10k",)
    )


# ---------------------------------------------------------------------------
# store size on the real Claude Code samples


def test_store_size_real_samples(benchmark: Any, fresh_store: Callable[[], Store]) -> None:
    if not bu.SAMPLES.is_dir():
        pytest.skip(f"real samples not found at {bu.SAMPLES} (they live beside the repo)")
    raw_jsonl = bu.sizes_under(bu.SAMPLES, ".jsonl")
    raw_all = bu.sizes_under(bu.SAMPLES)
    last: dict[str, Store] = {}

    def setup() -> tuple[tuple[Store], dict[str, Any]]:
        last["store"] = fresh_store()
        return (last["store"],), {}

    def run(store: Store) -> ImportReport:
        return import_paths(store, [bu.SAMPLES], command="bench import samples")

    report = benchmark.pedantic(run, setup=setup, rounds=3, iterations=1, warmup_rounds=0)
    assert report.turns_added > 0
    assert report.operation is not None
    store_bytes = last["store"].objects.size_on_disk()  # type: ignore[attr-defined]
    ratio = store_bytes / raw_jsonl
    entry = bu.record(
        "store_size_real_samples",
        benchmark,
        files=report.files,
        files_skipped=len(report.files_skipped),
        problems=len(report.problems),
        turns=report.turns_added,
        sessions=report.sessions_added,
        raw_jsonl_bytes=raw_jsonl,
        raw_all_bytes=raw_all,
        store_bytes=store_bytes,
        store_over_raw=round(ratio, 3),
    )
    secs = entry.get("seconds_median")
    timing = f", import {secs:.2f} s median" if secs else ""
    bu.note(
        f"real Claude Code samples: {report.files} files ({len(report.files_skipped)} skipped, "
        f"{len(report.problems)} problems), {report.turns_added} turns in "
        f"{report.sessions_added} sessions; store/raw {ratio:.3f} "
        f"({store_bytes / MB:.2f} MB for {raw_jsonl / MB:.2f} MB of .jsonl){timing}"
    )
