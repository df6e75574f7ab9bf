"""The Codex importer on real rollout files (../shared/samples/codex).

The samples are not part of the project: this module skips when they are absent.
What the importer gives is checked against facts read here straight from the JSON
lines, not through the importer: the prompts (the ``event_msg/user_message``
lines, or for a file without any, the user response items that are not injected
context), the final answer of each prompt, interrupted turns, patched and read
files. ``_derived/`` holds a trimmed fixture made from real rollouts (timestamps
replaced by ``[trimmed for fixture]``); only timestamp problems are allowed there.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from histstore.history.importers import Problem, Resume, SessionMeta
from histstore.history.importers.codex import is_codex_line, parse_file

SAMPLES = (pathlib.Path(__file__).resolve().parents[2] / ".." / "shared" / "samples").resolve()
CODEX = SAMPLES / "codex"

if not CODEX.is_dir():
    pytest.skip(
        f"real Codex samples not found at {CODEX} (only present in the dev workspace)",
        allow_module_level=True,
    )

pytestmark = pytest.mark.samples

FILES = sorted(p for p in CODEX.rglob("*.jsonl") if p.is_file())
NOT_PROMPT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions for ",
    "<permissions instructions>",
    "<collaboration_mode>",
    "<skills_instructions>",
    "<turn_aborted>",
)


def _records(path: pathlib.Path) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            out.append((n, json.loads(line)))
    return out


def _payload(rec: dict[str, Any]) -> dict[str, Any]:
    p = rec.get("payload")
    return p if isinstance(p, dict) else {}


def _is(rec: dict[str, Any], kind: str, ptype: str) -> bool:
    return rec.get("type") == kind and _payload(rec).get("type") == ptype


def _prompt_lines(records: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, str]]:
    """(line, text) of every prompt, counted straight from the records."""
    events = [
        (n, _payload(r)["message"])
        for n, r in records
        if _is(r, "event_msg", "user_message")
        and _payload(r).get("kind") not in ("user_instructions", "environment_context")
        and not _payload(r)["message"].lstrip().startswith(NOT_PROMPT_PREFIXES)
    ]
    if events:
        return events
    # no typed prompt events at all: the user response items that are not context
    items = []
    for n, r in records:
        p = _payload(r)
        if _is(r, "response_item", "message") and p.get("role") == "user":
            text = "\n".join(c["text"] for c in p["content"] if c.get("type") == "input_text")
            if not text.lstrip().startswith(NOT_PROMPT_PREFIXES):
                items.append((n, text))
    return items


def _expected_answer(segment: list[dict[str, Any]]) -> str:
    """The answer of one prompt's lines: the last final_answer message, else a
    task_complete's last_agent_message, else the last assistant message."""
    finals, assistants, completions = [], [], []
    for r in segment:
        p = _payload(r)
        if _is(r, "response_item", "message") and p.get("role") == "assistant":
            text = "\n".join(c["text"] for c in p["content"] if c.get("type") == "output_text")
            assistants.append(text)
            if p.get("phase") == "final_answer":
                finals.append(text)
        if _is(r, "event_msg", "task_complete") and p.get("last_agent_message"):
            completions.append(p["last_agent_message"])
    if finals:
        return str(finals[-1])
    if completions:
        return str(completions[0])
    return str(assistants[-1]) if assistants else ""


def _parse(path: pathlib.Path) -> tuple[list[dict[str, Any]], list[Problem], list[SessionMeta]]:
    out = list(parse_file(path, lambda s: s))
    return (
        [o for o in out if isinstance(o, dict)],
        [o for o in out if isinstance(o, Problem)],
        [o for o in out if isinstance(o, SessionMeta)],
    )


def test_samples_found() -> None:
    assert len(FILES) >= 5, f"expected the Codex rollouts under {CODEX}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CODEX)))
def test_sample_file(path: pathlib.Path) -> None:
    records = _records(path)
    turns, problems, metas = _parse(path)
    derived = "_derived" in path.parts

    if derived:
        assert all("no usable timestamp" in p.message for p in problems), problems
    else:
        assert problems == [], problems
    assert all(is_codex_line(r) for _, r in records)
    assert len(metas) == 1
    first_meta = next(_payload(r) for _, r in records if r["type"] == "session_meta")
    assert metas[0].session_id == first_meta["id"] and metas[0].project == first_meta["cwd"]

    # every prompt is a turn, in order, asking what the person typed
    prompts = _prompt_lines(records)
    assert prompts, "every sample has prompts"
    assert [t["asked"] for t in turns] == [text for _, text in prompts]
    ids = [t["turn_id"] for t in turns]
    assert len(ids) == len(set(ids)), "duplicate turn ids"

    # each turn's facts, from the lines between its prompt and the next one
    bounds = [n for n, _ in prompts] + [len(records) + 10**9]
    for t, start, end in zip(turns, bounds, bounds[1:], strict=False):
        segment = [r for n, r in records if start <= n < end]
        assert t["answered"] == _expected_answer(segment), t["turn_id"]
        aborted = any(_is(r, "event_msg", "turn_aborted") for r in segment)
        assert (t["status"] == "interrupted") == aborted, t["turn_id"]
        patched = {
            f
            for r in segment
            if _is(r, "event_msg", "patch_apply_end") and _payload(r).get("success")
            for f in _payload(r).get("changes", {})
        }
        assert patched <= set(t["edited"]), t["turn_id"]
        read = {
            c["path"]
            for r in segment
            if _is(r, "event_msg", "exec_command_end")
            for c in _payload(r).get("parsed_cmd", [])
            if c.get("type") == "read" and c["path"].startswith("/")
        }
        assert read <= set(t["files"]), t["turn_id"]
        assert t["session_id"] == first_meta["id"]
        assert t["agent"] == "codex"
        assert t["source"]["line"] <= t["source"]["end_line"]
        assert t["model"], t["turn_id"]
        json.dumps(t)  # JSON-able

    # every turn with an answer in the file found it
    if not derived:
        assert all(t["answered"] for t in turns if t["status"] == "completed")

    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    assert [ln for t in turns for ln in t["raw"]] == lines, "every line in one turn, in order"


def test_generations_are_covered() -> None:
    versions = set()
    for path in FILES:
        for _, r in _records(path)[:1]:
            versions.add(_payload(r).get("cli_version", "")[:4])
    assert {"0.60", "0.12", "0.14"} <= versions


def test_import_every_sample_into_a_store(tmp_path: pathlib.Path) -> None:
    """End to end: every rollout imports into one store that fsck passes, holding
    as many turns as there are prompts; a second import adds nothing."""
    from histstore.ops.fsck import fsck
    from histstore.ops.importing import import_paths
    from histstore.store.store import Store

    store, _ = Store.init(tmp_path / "store")
    with store:
        rep = import_paths(store, [CODEX])
        assert all("no usable timestamp" in p.message for p in rep.problems), rep.problems
        assert rep.files == len(FILES) and rep.files_skipped == []
        assert [f for f in fsck(store) if f.severity == "error"] == []
        stored = sum(len(s.turns) for s in store.sessions())
        assert stored == rep.turns_added == sum(len(_prompt_lines(_records(p))) for p in FILES)
        assert {s.agent for s in store.sessions()} == {"codex"}
        again = import_paths(store, [CODEX])
        assert again.operation is None and again.files_unchanged == len(FILES)
        assert again.files == 0  # as they were: not read


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CODEX)))
def test_resumed_reads_of_a_growing_sample(path: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The sample as if read while Codex wrote it: cut after a few lines, read,
    then read the whole file from the Resume; the turns are those of one read."""
    whole = list(parse_file(path, lambda s: s))
    expected = {t["turn_id"]: t for t in whole if isinstance(t, dict)}
    lines = path.read_bytes().splitlines(keepends=True)
    copy = tmp_path / path.name
    for k in sorted({len(lines) * i // 5 for i in range(1, 5)} | {len(lines) - 1}):
        copy.write_bytes(b"".join(lines[:k]))
        first = list(parse_file(copy, lambda s: s))
        resume = first[-1]
        assert isinstance(resume, Resume)
        copy.write_bytes(b"".join(lines))
        second = list(parse_file(copy, lambda s: s, resume=resume))
        merged = {t["turn_id"]: t for t in first + second if isinstance(t, dict)}
        for t in merged.values():
            t["source"]["file"] = str(path)
        assert merged == expected, f"cut after line {k}"
        assert second[-1] == whole[-1]
