"""The Claude Code importer on real session files (../shared/samples/claude-code).

The samples are not part of the project: this module skips when they are absent.
Prompts are counted here with an independent scan that follows the turn boundary
rule of the importer (FORMATS.md section 1, plus ``!`` shell-mode and ``#`` memory
wrappers, which are local input and never start a turn).
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from histstore.history.importers import Problem, SessionMeta
from histstore.history.importers.claude_code import find_files, is_claude_code_line, parse_file

SAMPLES = (pathlib.Path(__file__).resolve().parents[2] / ".." / "shared" / "samples").resolve()
CLAUDE = SAMPLES / "claude-code"

if not CLAUDE.is_dir():
    pytest.skip(
        f"real Claude Code samples not found at {CLAUDE} (only present in the dev workspace)",
        allow_module_level=True,
    )

pytestmark = pytest.mark.samples

FILES = find_files(CLAUDE)
NOT_PROMPT_PREFIXES = (
    "Caveat: The messages below were generated",
    "<local-command-caveat>",
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<user-memory-input>",
    "[Request interrupted by user",
)


def _records(path: pathlib.Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out


def _is_subagent_file(path: pathlib.Path, records: list[dict[str, Any]]) -> bool:
    if path.name.startswith("agent-"):
        return True
    first = next((r for r in records if "isSidechain" in r), None)
    return first is not None and first["isSidechain"] is True


def _prompt_uuids(records: list[dict[str, Any]], sidechain_ok: bool) -> set[str]:
    uuids = set()
    commands = set()
    for r in records:
        if r.get("type") != "user":
            continue
        if r.get("isSidechain") and not sidechain_ok:
            continue
        if r.get("isMeta") or r.get("isCompactSummary") or r.get("isVisibleInTranscriptOnly"):
            continue
        content = r["message"]["content"]
        if isinstance(content, str):
            text = content
        else:
            types = {b.get("type") for b in content}
            if "tool_result" in types or not types & {"text", "image"}:
                continue
            text = "\n".join(b["text"] for b in content if b.get("type") == "text")
        if text.lstrip().startswith(("<command-name>", "<command-message>")):
            commands.add(r["uuid"])
            continue
        if text.lstrip().startswith(NOT_PROMPT_PREFIXES):
            continue
        uuids.add(r["uuid"])
    # a slash command the agent worked on is a prompt too
    return uuids | {c for c in commands if _worked_on(records, c, uuids | commands)}


def _worked_on(records: list[dict[str, Any]], uuid: str, prompts: set[str]) -> bool:
    """Whether an assistant line descends from ``uuid`` (by parentUuid) before
    another prompt or command: the agent did work for that command."""
    children: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r.get("parentUuid"):
            children.setdefault(r["parentUuid"], []).append(r)
    todo = list(children.get(uuid, []))
    while todo:
        r = todo.pop()
        if r.get("type") == "assistant":
            return True
        if r.get("uuid") in prompts:
            continue
        todo.extend(children.get(r.get("uuid", ""), []))
    return False


def _parse(path: pathlib.Path) -> tuple[list[dict[str, Any]], list[Problem], list[SessionMeta]]:
    out = list(parse_file(path, lambda s: s))
    return (
        [o for o in out if isinstance(o, dict)],
        [o for o in out if isinstance(o, Problem)],
        [o for o in out if isinstance(o, SessionMeta)],
    )


def test_samples_found() -> None:
    assert FILES, f"no .jsonl files under {CLAUDE}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CLAUDE)))
def test_sample_file(path: pathlib.Path) -> None:
    records = _records(path)
    turns, problems, metas = _parse(path)

    assert problems == [], problems
    assert len(metas) == 1
    assert all(is_claude_code_line(r) for r in records)

    ids = [t["turn_id"] for t in turns]
    assert len(ids) == len(set(ids)), "duplicate turn ids"

    sub = _is_subagent_file(path, records)
    prompts = _prompt_uuids(records, sidechain_ok=sub)
    if sub:
        session_ids = {r["sessionId"] for r in records if "sessionId" in r}
        assert len(session_ids) == 1
        (parent,) = session_ids
        assert parent != path.stem
        for t in turns:
            assert t["subagent"], t["turn_id"]
            assert t["session_id"] == parent
        # every prompt is a turn; a file whose prompt line is missing gets one extra
        assert prompts <= set(ids)
        if any(r.get("type") == "assistant" for r in records):
            assert turns
    else:
        assert set(ids) == prompts
        for t in turns:
            assert t["subagent"] is None
            assert t["session_id"] in {r["sessionId"] for r in records if "sessionId" in r}

    if turns:
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        raw = [ln for t in turns for ln in t["raw"]]
        assert sorted(raw) == sorted(lines), "every non-empty line lands in exactly one turn"

    # a prompt queued while the agent worked goes with the turn it opens
    owner = {
        n: t["turn_id"] for t in turns for a, k in t["source"]["lines"] for n in range(a, a + k)
    }
    heads = {t["source"]["line"]: t["turn_id"] for t in turns}
    physical = [json.loads(x) if x.strip() else {} for x in path.read_text("utf-8").split("\n")]
    for n, r in enumerate(physical, 1):
        if r.get("type") == "queue-operation":
            nxt = next(
                (
                    m
                    for m in range(n + 1, len(physical) + 1)
                    if m in heads or (physical[m - 1].get("type") == "user")
                ),
                None,
            )
            if nxt in heads:
                assert owner[n] == heads[nxt], f"queue line {n}"

    # no work is outside every turn: each main-chain assistant text is a step
    said = {
        b["text"]
        for r in records
        if r.get("type") == "assistant" and (sub or not r.get("isSidechain"))
        for b in (r["message"]["content"] if isinstance(r["message"]["content"], list) else [])
        if b.get("type") == "text" and b.get("text")
    }
    steps = {s["text"] for t in turns for s in t["steps"] if s["type"] == "assistant"}
    assert said <= steps, sorted(said - steps)[:3]

    for t in turns:
        assert t["agent"] == "claude-code"
        assert not t["asked"].lstrip().startswith("<ide_"), t["turn_id"]  # IDE context
        assert t["status"] in ("completed", "failed", "interrupted")
        assert t["source"]["file"] == str(path)
        assert t["source"]["line"] <= t["source"]["end_line"]
        assert isinstance(t["project"], str) and t["project"]
        for s in t["steps"]:
            if s["type"] == "tool":
                assert isinstance(s["name"], str) and isinstance(s["input"], dict)
        json.dumps(t)  # JSON-able


def test_subagent_results_point_at_subagent_files() -> None:
    """The parent's Task/Agent tool results name sub-agents whose files we import."""
    agent_ids = set()
    for path in FILES:
        if _is_subagent_file(path, _records(path)):
            for t in _parse(path)[0]:
                agent_ids.add(t["subagent"])
    linked = set()
    for path in FILES:
        for r in _records(path):
            result = r.get("toolUseResult")
            if isinstance(result, dict) and isinstance(result.get("agentId"), str):
                linked.add(result["agentId"])
    assert linked <= agent_ids


def test_import_every_sample_into_a_store(tmp_path: pathlib.Path) -> None:
    """End to end: every sample file imports into one store that fsck passes,
    holding as many turns as the parser finds, at most half the raw size; a
    second import adds nothing."""
    from histstore.ops.fsck import fsck
    from histstore.ops.importing import import_paths
    from histstore.store.objectstore import DiskObjectStore
    from histstore.store.store import Store

    root = SAMPLES / "claude-code"
    store, _ = Store.init(tmp_path / "store")
    with store:
        rep = import_paths(store, [root])
        assert rep.problems == []
        assert [f for f in fsck(store) if f.severity == "error"] == []
        stored = sum(len(s.turns) for s in store.sessions())
        assert stored == rep.turns_added > 0
        raw = sum(p.stat().st_size for p in root.rglob("*.jsonl"))
        assert isinstance(store.objects, DiskObjectStore)
        assert store.objects.size_on_disk() <= 0.5 * raw
        again = import_paths(store, [root])
        assert again.operation is None and again.files == 0 and again.files_unchanged > 0
