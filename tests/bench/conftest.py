"""Fixtures for the benchmarks (``make bench``; never collected by ``make test``).

Benchmark files are named ``bench_*.py`` so the default ``python_files`` of
``make test`` does not pick them up; ``make bench`` collects them with
``-o python_files='bench_*.py'``.

Corpora are generated lazily (a session fixture runs only when a benchmark asks
for it), once per run, into pytest's temporary directory, from a fixed seed.
At the end of the run the figures each benchmark noted are printed again in one
section, ready to paste in a report.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def _load_benchutil() -> ModuleType:
    if "benchutil" in sys.modules:
        return sys.modules["benchutil"]
    spec = importlib.util.spec_from_file_location(
        "benchutil", Path(__file__).with_name("benchutil.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["benchutil"] = module
    spec.loader.exec_module(module)
    return module


bu = _load_benchutil()


@pytest.fixture(scope="session")
def turns_10k(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return bu.generate(tmp_path_factory.mktemp("corpus"), "turns-10k", "turns", 10_000)


@pytest.fixture(scope="session")
def turns_100k(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("corpus")
    yield bu.generate(root, "turns-100k", "turns", 100_000)
    shutil.rmtree(root, ignore_errors=True)  # ~190 MB


@pytest.fixture(scope="session")
def claude_10k(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("corpus")
    yield bu.generate(root, "claude-10k", "claude", 10_000)
    shutil.rmtree(root, ignore_errors=True)  # ~150 MB


@pytest.fixture
def fresh_store(tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """A factory of new empty stores, one per benchmark round. Making a new one
    deletes the previous (its figures are taken inside the round); all are closed
    and deleted after the benchmark."""
    from histstore.store.store import Store

    made: list[tuple[Any, Path]] = []

    def drop(store: Any, path: Path) -> None:
        store.close()
        shutil.rmtree(path, ignore_errors=True)

    def make() -> Any:
        if made:
            drop(*made[-1])
        path = tmp_path / f"store-{len(made)}"
        store, created = Store.init(path)
        assert created
        made.append((store, path))
        return store

    yield make
    for store, path in made:
        drop(store, path)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not bu.SUMMARY:
        return
    terminalreporter.section("histstore benchmark figures")
    for line in bu.SUMMARY:
        terminalreporter.write_line(line)
