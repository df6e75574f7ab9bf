"""Helpers shared by the benchmarks: corpus generation, the run's results, summary lines.

Loaded by ``conftest.py`` under the module name ``benchutil`` (the benchmark files
then ``import benchutil``); it loads ``corpus.py`` the way ``tests/test_corpus.py``
does, so both share one module object.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SAMPLES = REPO.parent / "shared" / "samples" / "claude-code"
SEED = 20260101


def _load_corpus() -> ModuleType:
    name = "histstore_bench_corpus"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, HERE / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


corpus = _load_corpus()

# name -> figures recorded by the benchmarks of this run (seconds, counts, ratios)
RESULTS: dict[str, dict[str, Any]] = {}
SUMMARY: list[str] = []


@dataclass(frozen=True)
class Corpus:
    """A generated corpus: ``path`` is a file (turn JSONL) or a folder (Claude Code)."""

    path: Path
    stats: Any  # corpus.Stats
    seconds: float  # time it took to generate

    @property
    def turns(self) -> int:
        return int(self.stats.turns)

    @property
    def bytes(self) -> int:
        return int(self.stats.bytes)


def generate(root: Path, what: str, fmt: str, n_turns: int) -> Corpus:
    """Write a corpus under ``root``: ``<what>.jsonl`` (turns) or ``<what>/``
    (claude; codex, codex-one: Codex rollouts, or one rollout of every turn)."""
    began = time.perf_counter()
    if fmt == "turns":
        path = root / f"{what}.jsonl"
        stats = corpus.write_turns_jsonl(path, n_turns, SEED)
    elif fmt in ("codex", "codex-one"):
        path = root / what
        stats = corpus.write_codex_sessions(path, n_turns, SEED, one_file=fmt == "codex-one")
    else:
        path = root / what
        stats = corpus.write_claude_projects(path, n_turns, SEED)
    seconds = time.perf_counter() - began
    note(
        f"corpus {what}: {stats.turns} turns, {stats.bytes / 1e6:.1f} MB raw, "
        f"{stats.files} file(s), generated in {seconds:.1f} s"
    )
    return Corpus(path, stats, seconds)


def timing(benchmark: Any) -> dict[str, float] | None:
    """min/median/mean seconds of a finished benchmark (None with --benchmark-disable)."""
    meta = getattr(benchmark, "stats", None)
    stats = getattr(meta, "stats", None)
    if stats is None:
        return None
    return {"min": stats.min, "median": stats.median, "mean": stats.mean, "rounds": stats.rounds}


def record(name: str, benchmark: Any, **figures: Any) -> dict[str, Any]:
    """Keep a benchmark's timing and figures for later ratios, and put the figures
    (with the median seconds) into its ``extra_info``."""
    entry: dict[str, Any] = dict(figures)
    t = timing(benchmark)
    if t is not None:
        entry["seconds_median"] = t["median"]
        entry["seconds_min"] = t["min"]
    RESULTS[name] = entry
    benchmark.extra_info.update(figures)
    return entry


def seconds(name: str) -> float | None:
    """Median seconds of a benchmark already run in this session, if any."""
    entry = RESULTS.get(name)
    return None if entry is None else entry.get("seconds_median")


def note(line: str) -> None:
    """Print a summary line now (visible with ``-s``) and again at the end of the run."""
    print(f"\n[bench] {line}", flush=True)
    SUMMARY.append(line)


def sizes_under(path: Path, suffix: str | None = None) -> int:
    """Bytes of the files under ``path`` (or of ``path``), optionally by suffix."""
    if path.is_file():
        return path.stat().st_size
    return sum(
        p.stat().st_size
        for p in path.rglob("*")
        if p.is_file() and (suffix is None or p.name.endswith(suffix))
    )


def hs_command() -> list[str]:
    """The `hs` a person runs: the venv's script, else the one on PATH."""
    import shutil

    hs = Path(sys.executable).with_name("hs")
    if hs.exists():
        return [str(hs)]
    found = shutil.which("hs")
    if found:
        return [found]
    return [sys.executable, "-c", "from histstore.porcelain.cli import main; main()"]


# argv: RESULT_FILE CMD...; runs CMD (stdio inherited) and writes its own rusage.
# The measured command is started by this small wrapper, which waits for it: started
# directly from pytest it would inherit pytest's own peak (Linux carries the old
# address space's high-water RSS into ru_maxrss across exec, and subprocess uses
# vfork), see bench_memory.py.
WRAPPER = """
import json, os, subprocess, sys, time
began = time.perf_counter()
proc = subprocess.Popen(sys.argv[2:])
_, status, ru = os.wait4(proc.pid, 0)
wall = time.perf_counter() - began
with open(sys.argv[1], "w") as fh:
    json.dump({"code": os.waitstatus_to_exitcode(status), "maxrss_kib": ru.ru_maxrss,
               "seconds": wall, "cpu_seconds": ru.ru_utime + ru.ru_stime}, fh)
"""


def run_child(argv: list[str], out: Path) -> dict[str, Any]:
    """Run a command to completion through the wrapper: its exit code, peak RSS (MB),
    wall and CPU seconds (of the command alone), stdout and stderr."""
    import json
    import subprocess

    usage = out.with_suffix(".rusage")
    err = out.with_suffix(".err")
    with open(out, "wb") as so, open(err, "wb") as se:
        wrapper = subprocess.run(
            [sys.executable, "-c", WRAPPER, str(usage), *argv],
            stdout=so,
            stderr=se,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    assert wrapper.returncode == 0 or usage.exists(), err.read_text(errors="replace")
    ru = json.loads(usage.read_text())
    return {
        "code": ru["code"],
        "peak_rss_mb": ru["maxrss_kib"] * 1024 / 1e6,  # ru_maxrss is in KiB on Linux
        "seconds": ru["seconds"],
        "cpu_seconds": ru["cpu_seconds"],
        "stdout": out.read_text(errors="replace"),
        "stderr": err.read_text(errors="replace"),
    }
