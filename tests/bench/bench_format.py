"""Format 2 benchmarks (issue 11): objects and refs against git fast-import,
turns recorded one at a time, store bytes against the raw files, gc, and the
reads the summary makes constant (log, status, show as processes).

Figures are ratios against baselines measured in the same run; nothing here
asserts on time. ``HS_BENCH_1M=1`` also builds a 1M-turn store (minutes, a few
GB under the temporary directory) for the reads, a no-op sync and a
re-import with nothing new.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import benchutil as bu
import pytest

from histstore.history.importing import store_paths
from histstore.ops import gc as gcmod
from histstore.ops.importing import import_paths, record_turn
from histstore.store.objectstore import DiskObjectStore
from histstore.store.store import Store
from histstore.sync.engine import sync


def _objects_bytes(store: Store) -> int:
    objs = store.objects
    assert isinstance(objs, DiskObjectStore)
    return int(objs.size_on_disk())


# ------------------------------------------------------------------ fast-import


def _fast_import_stream(path: Path, out: Path) -> int:
    """The same records as a git fast-import stream: a blob per turn record,
    a commit per session naming its turns, a ref per session."""
    sessions: dict[str, list[tuple[int, str]]] = {}
    mark = 0
    with open(path, "rb") as src, open(out, "wb") as dst:
        for line in src:
            if not line.strip():
                continue
            rec = json.loads(line)
            mark += 1
            dst.write(b"blob\nmark :%d\ndata %d\n" % (mark, len(line)) + line + b"\n")
            sessions.setdefault(rec["session_id"], []).append((mark, rec["turn_id"]))
        for sid, turns in sessions.items():
            msg = f"session {sid}".encode()
            dst.write(
                f"commit refs/heads/s/{sid}\ncommitter hs <hs@example.invalid> 0 +0000\n".encode()
                + b"data %d\n" % len(msg)
                + msg
                + b"\n"
            )
            for m, tid in turns:
                dst.write(f"M 100644 :{m} {tid}\n".encode())
            dst.write(b"\n")
    return len(sessions)


def test_git_fast_import_100k(benchmark: Any, turns_100k: bu.Corpus, tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    stream = tmp_path / "stream"
    sessions = _fast_import_stream(turns_100k.path, stream)

    def setup() -> tuple[tuple[Path], dict[str, Any]]:
        repo = tmp_path / f"repo-{time.monotonic_ns()}"
        subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
        return (repo,), {}

    def run(repo: Path) -> None:
        with open(stream, "rb") as fh:
            subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, stdin=fh, check=True)

    benchmark.pedantic(run, setup=setup, rounds=2, iterations=1)
    bu.record("git_fast_import_100k", benchmark, sessions=sessions)
    stream.unlink()


def test_objects_and_refs_100k(benchmark: Any, turns_100k: bu.Corpus, tmp_path: Path) -> None:
    """Objects and refs only (no recall index, no summary): what fast-import does."""

    def setup() -> tuple[tuple[Store], dict[str, Any]]:
        root = tmp_path / f"store-{time.monotonic_ns()}"
        return (Store.init(root)[0],), {}

    def run(store: Store) -> None:
        rep = store_paths(store, [turns_100k.path], command="bench")
        assert rep.turns_added == turns_100k.turns
        store.close()

    benchmark.pedantic(run, setup=setup, rounds=2, iterations=1)
    entry = bu.record("objects_refs_100k", benchmark)
    git = bu.seconds("git_fast_import_100k")
    if git and entry.get("seconds_median"):
        ratio = entry["seconds_median"] / git
        benchmark.extra_info["x_git_fast_import"] = round(ratio, 2)
        bu.note(
            f"objects+refs of 100k turns: {entry['seconds_median']:.1f} s = {ratio:.2f}x "
            f"git fast-import ({git:.1f} s) of the same records (target <= 0.7x)"
        )


# ------------------------------------------------------------ one at a time


def test_record_1000_turns_one_at_a_time(benchmark: Any, tmp_path: Path) -> None:
    """Bytes written and time per recorded turn at turn 1,000 against turn 10
    of the same session (target <= 1.5x each)."""
    store, _ = Store.init(tmp_path / "store")
    times: list[float] = []
    sizes: list[int] = []

    def turn(i: int) -> str:
        return json.dumps(
            {
                "turn_id": f"t{i:05d}",
                "session_id": "one-long-session",
                "project": "/home/dev/app",
                "asked_at": f"2026-03-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
                "asked": f"question {i}: how should login_user refresh tokens?",
                "answered": f"answer {i}: in the middleware, step {i}",
            }
        )

    def run() -> None:
        for i in range(1, 1001):
            before = _objects_bytes(store)
            t = time.perf_counter()
            record_turn(store, turn(i))
            times.append(time.perf_counter() - t)
            sizes.append(_objects_bytes(store) - before)

    benchmark.pedantic(run, rounds=1, iterations=1)
    early_t = sorted(times[5:15])[5]
    late_t = sorted(times[990:1000])[5]
    early_b = sum(sizes[5:15]) / 10
    late_b = sum(sizes[990:1000]) / 10
    bu.record(
        "record_one_at_a_time",
        benchmark,
        ms_at_10=round(early_t * 1000, 2),
        ms_at_1000=round(late_t * 1000, 2),
        bytes_at_10=early_b,
        bytes_at_1000=late_b,
    )
    bu.note(
        f"recording turn 1,000 of a session: {late_t * 1000:.1f} ms, {late_b:.0f} B written; "
        f"turn 10: {early_t * 1000:.1f} ms, {early_b:.0f} B: time {late_t / early_t:.2f}x, "
        f"bytes {late_b / early_b:.2f}x (target <= 1.5x each)"
    )
    store.close()


# ------------------------------------------------------------------ store size


def _size_after_gc(store: Store) -> tuple[int, int]:
    before = _objects_bytes(store)
    gcmod.gc(store, full=True)
    return before, _objects_bytes(store)


@pytest.mark.parametrize("which", ["claude-code", "codex"])
def test_store_bytes_real_samples(benchmark: Any, tmp_path: Path, which: str) -> None:
    samples = bu.REPO.parent / "shared" / "samples" / which
    if not samples.is_dir():
        pytest.skip(f"real samples not found at {samples}")
    raw = bu.sizes_under(samples, ".jsonl")
    got: dict[str, int] = {}

    def run() -> None:
        root = tmp_path / f"s-{time.monotonic_ns()}"
        store, _ = Store.init(root)
        import_paths(store, [samples], command="bench")
        got["import"], got["gc"] = _size_after_gc(store)
        store.close()

    benchmark.pedantic(run, rounds=1, iterations=1)
    bu.record("store_bytes_" + which, benchmark, raw=raw, **got)
    bu.note(
        f"store bytes, real {which} samples ({raw / 1e6:.1f} MB raw JSONL): "
        f"{got['import'] / raw:.3f}x after import, {got['gc'] / raw:.3f}x after hs gc --full "
        "(target <= 0.35x)"
    )


def test_store_bytes_synthetic_100k(benchmark: Any, turns_100k: bu.Corpus, tmp_path: Path) -> None:
    got: dict[str, int] = {}

    def run() -> None:
        store, _ = Store.init(tmp_path / "store")
        store_paths(store, [turns_100k.path], command="bench")
        got["import"], got["gc"] = _size_after_gc(store)
        store.close()

    benchmark.pedantic(run, rounds=1, iterations=1)
    raw = turns_100k.bytes
    bu.record("store_bytes_synthetic_100k", benchmark, raw=raw, **got)
    bu.note(
        f"store bytes, synthetic 100k turns ({raw / 1e6:.0f} MB raw): "
        f"{got['import'] / raw:.3f}x after import, {got['gc'] / raw:.3f}x after hs gc --full "
        "(target <= 0.35x)"
    )
    shutil.rmtree(tmp_path / "store", ignore_errors=True)


# ------------------------------------------------------------------------ gc


def test_gc_100k_with_10k_loose(benchmark: Any, turns_100k: bu.Corpus, tmp_path: Path) -> None:
    """A 100k-turn store, packed, then ~10k loose objects (records one at a
    time): hs gc's daily run, against a cp -a of the objects."""
    base = tmp_path / "base"
    store, _ = Store.init(base)
    store_paths(store, [turns_100k.path], command="bench")
    gcmod.gc(store, full=True)
    n = 0
    while sum(1 for _ in store.objects.iter_loose()) < 10_000:  # type: ignore[attr-defined]
        from histstore.history.importing import store_record

        n += 1
        store_record(
            store,
            json.dumps(
                {
                    "turn_id": f"loose-{n}",
                    "session_id": f"loose-{n % 50}",
                    "project": "/home/dev/app",
                    "asked_at": "2026-04-01T10:00:00Z",
                    "asked": f"question {n}",
                    "answered": f"answer {n}",
                }
            ),
            "bench",
        )
    store.close()
    reports: list[gcmod.GcReport] = []

    def setup() -> tuple[tuple[Path], dict[str, Any]]:
        root = tmp_path / f"gc-{time.monotonic_ns()}"
        shutil.copytree(base, root)
        return (root,), {}

    def run(root: Path) -> None:
        with Store.open(root) as s:
            reports.append(gcmod.gc(s))
        shutil.rmtree(root)

    benchmark.pedantic(run, setup=setup, rounds=2, iterations=1)
    t = time.perf_counter()
    subprocess.run(["cp", "-a", str(base / "objects"), str(tmp_path / "cp")], check=True)
    cp = time.perf_counter() - t
    entry = bu.record("gc_100k_10k_loose", benchmark, cp_a_seconds=cp, **reports[-1].as_json())
    secs = entry.get("seconds_median") or 0
    bu.note(
        f"hs gc, 100k turns + {reports[-1].loose_packed} loose: {secs:.2f} s "
        f"({reports[-1].packs_rewritten} packs rewritten) = {secs / cp:.1f}x cp -a of the "
        f"objects ({cp:.2f} s)"
    )


# -------------------------------------------------------------- fast reads


def _reads(root: Path, label: str, benchmark: Any, tmp_path: Path) -> None:
    hs = bu.hs_command()
    env = {**os.environ, "HISTORY_DIR": str(root)}
    turn = json.loads(
        subprocess.run(
            [*hs, "log", "--json", "-n", "1"], env=env, capture_output=True, check=True
        ).stdout
    )["turn_id"]
    cases = {
        "log -n 20": [*hs, "log", "-n", "20", "--oneline"],
        "status": [*hs, "status"],
        "show <turn>": [*hs, "show", turn],
        "python start-up floor": [sys.executable, "-c", "pass"],
    }
    figures = {}
    for name, args in cases.items():
        runs = []
        for _ in range(7):
            t = time.perf_counter()
            subprocess.run(args, env=env, capture_output=True, check=True)
            runs.append(time.perf_counter() - t)
        figures[name] = sorted(runs)[3]
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    bu.record(f"reads_{label}", benchmark, **{k: round(v * 1000, 1) for k, v in figures.items()})
    bu.note(
        f"reads as processes, {label}: "
        + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in figures.items())
        + " (target <= 100 ms each; the last is the start-up floor)"
    )


def test_reads_100k(benchmark: Any, turns_100k: bu.Corpus, tmp_path: Path) -> None:
    store, _ = Store.init(tmp_path / "store")
    import_paths(store, [turns_100k.path], command="bench")
    store.close()
    _reads(tmp_path / "store", "100k", benchmark, tmp_path)
    shutil.rmtree(tmp_path / "store", ignore_errors=True)


@pytest.fixture(scope="module")
def store_1m(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if os.environ.get("HS_BENCH_1M") != "1":
        pytest.skip("HS_BENCH_1M=1 builds a 1M-turn store (minutes, GBs)")
    root = tmp_path_factory.mktemp("m1")
    corpus = bu.generate(root, "turns-1m", "turns", 1_000_000)
    store, _ = Store.init(root / "store")
    t = time.perf_counter()
    import_paths(store, [corpus.path], command="bench import 1m")
    bu.note(f"import of 1M turns: {time.perf_counter() - t:.0f} s")
    gcmod.gc(store)
    store.close()
    yield root, corpus
    shutil.rmtree(root, ignore_errors=True)


def test_reads_1m(benchmark: Any, store_1m: Any, tmp_path: Path) -> None:
    root, _ = store_1m
    _reads(root / "store", "1M", benchmark, tmp_path)


def test_sync_noop_and_reimport_1m(benchmark: Any, store_1m: Any, tmp_path: Path) -> None:
    root, corpus = store_1m
    with Store.open(root / "store") as a:
        b, _ = Store.init(root / "remote")
        t = time.perf_counter()
        sync(a, b, "b", pull=False)
        first = time.perf_counter() - t
        t = time.perf_counter()
        rep = sync(a, b, "b")
        noop = time.perf_counter() - t
        assert not rep.remote_changes and not rep.local_changes
        t = time.perf_counter()
        again = import_paths(a, [corpus.path], command="bench reimport")
        reimport = time.perf_counter() - t
        assert again.operation is None
        b.close()
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    bu.record("sync_reimport_1m", benchmark, first_push=first, noop=noop, reimport=reimport)
    bu.note(
        f"1M turns: first push {first:.1f} s; sync with nothing new {noop:.2f} s (target <= 0.5); "
        f"re-import with nothing new {reimport:.2f} s (target <= 2)"
    )
