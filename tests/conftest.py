"""Every test runs against a temporary home: no real ~/.claude, ~/.codex or store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import HS, write_turns

from histstore.store.store import Store


@pytest.fixture(autouse=True)
def _temp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("HISTORY_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("HS_LOCK_TIMEOUT", "5")
    monkeypatch.delenv("HS_DEBUG", raising=False)
    monkeypatch.delenv("MEMORY_DIR", raising=False)


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
