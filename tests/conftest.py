"""Every test runs against a temporary home: no real ~/.claude, ~/.codex or store."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import HS, write_turns
from hypothesis import settings

from histstore.store import fsutil
from histstore.store.store import Store

# Property tests run derandomised (the same examples every run) in `make test`
# and CI; `make test-deep` explores with fresh random examples, more of them.
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("deep", derandomize=False)
settings.load_profile(os.environ.get("HS_HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection loaded (the modules, plugins and the tests' items) lives
    as long as the run: frozen, the collector's full passes no longer walk it,
    and they come ten times less often (they took ~5% of a worker's CPU)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(700, 10, 100)


@pytest.fixture(autouse=True)
def _no_fsync(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """fsync off (histstore.store.fsutil's test-only switch), in this process and
    in the processes a test starts, except in the tests of durability (marked
    ``durability``: crashes, kills), which keep every fsync."""
    if request.node.get_closest_marker("durability") is not None:
        monkeypatch.setattr(fsutil, "FSYNC", True)
        monkeypatch.delenv("HS_TEST_NO_FSYNC", raising=False)
    else:
        monkeypatch.setattr(fsutil, "FSYNC", False)
        monkeypatch.setenv("HS_TEST_NO_FSYNC", "1")


@pytest.fixture(autouse=True)
def _temp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    # the agents' own config folders default to HOME: never a real one
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("HISTORY_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("HS_LOCK_TIMEOUT", "5")
    monkeypatch.delenv("HS_DEBUG", raising=False)
    monkeypatch.delenv("MEMORY_DIR", raising=False)
    # what a hook starts in the background runs in the hook instead: no
    # process outlives its test (tests/test_capture.py checks the detaching)
    monkeypatch.setenv("HS_CAPTURE_DETACH", "0")
    monkeypatch.delenv("HS_CAPTURE_BUDGET", raising=False)
    # the agents' own overrides of where they keep history: never the real ones
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    # what the terminal gets: no pager a test did not ask for (a real less
    # would wait for a key), colour decided by the test, times in UTC
    monkeypatch.setenv("HS_PAGER", "")
    for name in ("PAGER", "LESS", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def store(store_path: Path) -> Iterator[Store]:
    s, _ = Store.init(store_path)
    yield s
    s.close()


@pytest.fixture
def hs() -> HS:
    return HS()


@pytest.fixture
def make_turns(tmp_path: Path) -> Callable[..., Path]:
    def make(records: list[dict[str, Any]], name: str = "turns.jsonl") -> Path:
        return write_turns(tmp_path / name, records)

    return make
