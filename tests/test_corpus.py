"""The synthetic benchmark corpus (tests/bench/corpus.py): deterministic, well formed."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

N = 200
FIELDS = {
    "turn_id",
    "session_id",
    "project",
    "asked_at",
    "asked",
    "answered",
    "files",
    "edited",
    "tools",
    "tainted",
    "model",
    "agent",
    "status",
}
INTERRUPT = "[Request interrupted by user for tool use]"


def _load() -> ModuleType:
    name = "histstore_bench_corpus"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).parent / "bench" / "corpus.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


corpus = _load()


def _digest(paths: list[Path], root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _lines(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _is_prompt(rec: dict[str, Any]) -> bool:
    return (
        rec.get("type") == "user"
        and not rec.get("isMeta")
        and not rec.get("isSidechain")
        and isinstance(rec["message"]["content"], str)
    )


@pytest.fixture(scope="module")
def turns(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    path = tmp_path_factory.mktemp("turns") / "turns.jsonl"
    return corpus.write_turns_jsonl(path, N, seed=3), path


@pytest.fixture(scope="module")
def claude(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    root = tmp_path_factory.mktemp("claude") / "projects"
    return corpus.write_claude_projects(root, N, seed=3), root


def test_turns_deterministic(turns: tuple[Any, Path], tmp_path: Path) -> None:
    stats, path = turns
    again = corpus.write_turns_jsonl(tmp_path / "again.jsonl", N, seed=3)
    assert (tmp_path / "again.jsonl").read_bytes() == path.read_bytes()
    assert again.summary() == stats.summary()
    other = corpus.write_turns_jsonl(tmp_path / "other.jsonl", N, seed=4)
    assert (tmp_path / "other.jsonl").read_bytes() != path.read_bytes()
    assert other.turns == N


def test_claude_deterministic(claude: tuple[Any, Path], tmp_path: Path) -> None:
    stats, root = claude
    again = corpus.write_claude_projects(tmp_path / "p", N, seed=3)
    assert _digest(again.paths, tmp_path / "p") == _digest(stats.paths, root)


def test_turn_lines(turns: tuple[Any, Path]) -> None:
    stats, path = turns
    records = _lines(path)
    assert len(records) == N == stats.turns == stats.lines
    assert stats.bytes == path.stat().st_size
    assert stats.files == 1 and stats.paths == [path]
    ids = set()
    last_at: dict[str, str] = {}
    for rec in records:
        assert set(rec) == FIELDS
        assert rec["agent"] == "hs"
        assert rec["status"] in ("completed", "failed", "interrupted")
        assert isinstance(rec["tainted"], bool)
        assert rec["project"].startswith("/home/dev/src/")
        assert all(p.startswith(rec["project"] + "/") for p in rec["files"] + rec["edited"])
        assert all(isinstance(v, int) and v > 0 for v in rec["tools"].values())
        assert rec["tools"].get("Read", 0) >= len(rec["files"])
        assert rec["tools"].get("Edit", 0) >= len(rec["edited"])
        at = rec["asked_at"]
        assert len(at) == 24 and at.endswith("Z") and at[10] == "T" and at[19] == "."
        assert "2026-07-04" <= at < "2026-11-01"
        assert last_at.get(rec["session_id"], "") < at  # increasing within a session
        last_at[rec["session_id"]] = at
        ids.add(rec["turn_id"])
    assert len(ids) == N
    assert len(last_at) == stats.sessions
    assert len({r["project"] for r in records}) == stats.projects


def test_claude_files(claude: tuple[Any, Path]) -> None:
    stats, root = claude
    assert stats.files == len(stats.paths) == stats.sessions
    prompts = 0
    lines = 0
    for path in stats.paths:
        assert path.parent.parent == root
        records = _lines(path)
        lines += len(records)
        assert path.stem == next(r["sessionId"] for r in records if r["type"] != "summary")
        parent = None
        stamps = []
        for rec in records:
            if rec["type"] == "summary":
                assert set(rec) == {"type", "summary", "leafUuid"}
                continue
            assert rec["parentUuid"] == parent
            parent = rec["uuid"]
            assert rec["isSidechain"] is False and rec["userType"] == "external"
            assert path.parent.name == rec["cwd"].replace("/", "-")
            stamps.append(rec["timestamp"])
            prompts += _is_prompt(rec)
        assert stamps == sorted(stamps)
    assert prompts == N == stats.turns
    assert lines == stats.lines
    assert stats.bytes == sum(p.stat().st_size for p in stats.paths)


def test_claude_shapes(claude: tuple[Any, Path]) -> None:
    stats, _ = claude
    seen: set[str] = set()
    uses: dict[str, dict[str, Any]] = {}
    split_ids: dict[str, int] = {}
    for path in stats.paths:
        for rec in _lines(path):
            if rec["type"] == "assistant":
                msg = rec["message"]
                assert msg["id"].startswith("msg_") and len(msg["content"]) == 1
                split_ids[msg["id"]] = split_ids.get(msg["id"], 0) + 1
                block = msg["content"][0]
                if block["type"] == "tool_use":
                    uses[block["id"]] = block
            elif rec["type"] == "user" and isinstance(rec["message"]["content"], list):
                block = rec["message"]["content"][0]
                if block["type"] == "text":
                    assert block["text"] == INTERRUPT
                    seen.add("interrupt")
                    continue
                use = uses[block["tool_use_id"]]
                result = rec["toolUseResult"]
                seen.add(use["name"])
                if use["name"] == "Read" and not block.get("is_error"):
                    assert result["file"]["filePath"] == use["input"]["file_path"]
                    assert "\u2192" in block["content"]
                if use["name"] == "Edit":
                    assert result["oldString"] == use["input"]["old_string"]
                    assert result["oldString"] in result["originalFile"]
                if use["name"] == "Bash" and not block.get("is_error"):
                    assert result["stdout"] == block["content"]
    assert {"Read", "Edit", "Bash"} <= seen
    assert max(split_ids.values()) >= 2  # one API message over several lines


def test_same_history_in_both_formats(turns: tuple[Any, Path], claude: tuple[Any, Path]) -> None:
    _, path = turns
    stats, _ = claude
    records = _lines(path)
    prompts = [r for p in stats.paths for r in _lines(p) if _is_prompt(r)]
    by_id = {r["turn_id"]: r for r in records}
    assert {p["uuid"] for p in prompts} == set(by_id)
    for p in prompts:
        rec = by_id[p["uuid"]]
        assert p["message"]["content"] == rec["asked"]
        assert p["timestamp"] == rec["asked_at"]
        assert p["sessionId"] == rec["session_id"]


def test_rare_terms(turns: tuple[Any, Path], claude: tuple[Any, Path]) -> None:
    stats, path = turns
    want = corpus.rare_count(N)
    assert want == 1
    assert corpus.rare_count(100_000) == 10
    text = path.read_text(encoding="utf-8").lower()
    for term in corpus.RARE_TERMS:
        hits = [r["turn_id"] for r in _lines(path) if term in (r["asked"] + r["answered"])]
        assert sorted(hits) == sorted(stats.rare[term])
        assert len(hits) == want
        assert text.count(term) == want  # nowhere else, not even as a substring
    cstats, _ = claude
    assert cstats.rare == stats.rare
    for term in corpus.RARE_TERMS:
        n = sum(p.read_text(encoding="utf-8").lower().count(term) for p in cstats.paths)
        assert n == want


def test_common_terms(turns: tuple[Any, Path]) -> None:
    stats, path = turns
    records = _lines(path)
    for term in corpus.COMMON_TERMS:
        n = sum(term in (r["asked"] + r["answered"]).lower() for r in records)
        assert n == stats.common[term]
        assert n > N * 0.05  # rates are 12-35 %: > 10 % of turns in a large corpus


@pytest.fixture(scope="module")
def codex(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    root = tmp_path_factory.mktemp("codex")
    return corpus.write_codex_sessions(root, N, seed=3), root


def test_codex_deterministic(codex: tuple[Any, Path], tmp_path: Path) -> None:
    stats, root = codex
    again = corpus.write_codex_sessions(tmp_path / "c", N, seed=3)
    assert _digest(again.paths, tmp_path / "c") == _digest(stats.paths, root)
    assert stats.bytes == sum(p.stat().st_size for p in stats.paths)
    one = corpus.write_codex_sessions(tmp_path / "one", N, seed=3, one_file=True)
    assert one.files == 1 and one.turns == N


def test_codex_rollouts_import_as_the_same_history(
    codex: tuple[Any, Path], turns: tuple[Any, Path], tmp_path: Path
) -> None:
    """Every planned turn is one Codex turn (the same id, prompt, files read and
    edited, status, and answer when it finished), with no problem."""
    from histstore.history.importers.codex import parse_file

    stats, _ = codex
    _, path = turns
    plan = {r["turn_id"]: r for r in _lines(path)}
    got: dict[str, dict[str, Any]] = {}
    for p in stats.paths:
        assert p.name.startswith("rollout-") and p.parent.parent.parent.parent.name == "sessions"
        for item in parse_file(p, lambda s: s):
            assert isinstance(item, dict) or type(item).__name__ != "Problem", item
            if isinstance(item, dict):
                got[item["turn_id"]] = item
    assert set(got) == set(plan) and stats.turns == N
    for tid, t in got.items():
        want = plan[tid]
        assert (t["asked"], t["status"]) == (want["asked"], want["status"])
        assert t["files"] == want["files"] and t["edited"] == want["edited"]
        assert t["tainted"] == want["tainted"] and t["agent"] == "codex"
        if want["status"] != "interrupted":
            assert t["answered"] == want["answered"]
