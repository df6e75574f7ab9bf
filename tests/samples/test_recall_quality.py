"""Recall quality on the real samples (../shared/samples: Claude Code and Codex).

tests/samples/recall_questions.json holds questions written from what was
decided or done in one turn of the samples (paraphrased, not copied), each
with the turns that answer it. hit@k is the share of questions answered by
one of the first k hits of `hs recall --everywhere` through the engine; the
scan (no engine) must give the same answers (on a twentieth of the questions,
or all of them under the deep profile; tests/test_recall.py compares the two
on every query of its shared fixture). The figures are printed (`pytest -s`); the
test fails when the engine falls below the floor the index was accepted at,
or when the scan does not answer every question as the engine does.

The samples are not part of the project: this module skips when they are absent.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import pytest

from histstore.ops.importing import import_paths
from histstore.recall.index import RecallIndex
from histstore.store.store import Store

HERE = pathlib.Path(__file__).resolve().parent
SAMPLES = (HERE.parents[1] / ".." / "shared" / "samples").resolve()
AGENTS = ("claude-code", "codex")
QUESTIONS = json.loads((HERE / "recall_questions.json").read_text())["questions"]
#: what the engine scored over the 60 questions when it replaced the FTS5
#: index (hit@1 0.87, hit@5 1.00; the FTS5 index: 0.87 and 0.95), less one
#: question's worth each
FLOOR_HIT1 = 0.85
FLOOR_HIT5 = 0.98

if not all((SAMPLES / a).is_dir() for a in AGENTS):
    pytest.skip(
        f"real agent samples not found at {SAMPLES} (only present in the dev workspace)",
        allow_module_level=True,
    )

pytestmark = pytest.mark.samples


def answers(store: Store, questions: list[dict[str, Any]], scan: bool) -> list[list[str]]:
    index = RecallIndex(store)
    return [[h.turn_id for h in index.search(q["q"], k=5, fallback=scan).hits] for q in questions]


def hit_at(found: list[list[str]]) -> tuple[float, float]:
    h1 = sum(bool(ids) and ids[0] in q["turns"] for q, ids in zip(QUESTIONS, found, strict=True))
    h5 = sum(any(i in q["turns"] for i in ids) for q, ids in zip(QUESTIONS, found, strict=True))
    return h1 / len(QUESTIONS), h5 / len(QUESTIONS)


def test_the_question_set_is_paraphrased_and_big_enough() -> None:
    assert len(QUESTIONS) >= 30
    assert all(q["turns"] and q["q"].strip() for q in QUESTIONS)


def test_hit_at_1_and_5(store: Store, capsys: Any) -> None:
    import_paths(store, [SAMPLES / a for a in AGENTS])
    engine = answers(store, QUESTIONS, scan=False)
    e1, e5 = hit_at(engine)
    # the scan reads every turn per question (~0.35 s each over the samples):
    # a twentieth of the questions here, every one under the deep profile
    every = os.environ.get("HS_HYPOTHESIS_PROFILE") == "deep"
    picked = range(len(QUESTIONS)) if every else range(0, len(QUESTIONS), 20)
    scan = answers(store, [QUESTIONS[i] for i in picked], scan=True)
    with capsys.disabled():
        print(
            f"\nrecall quality over {len(QUESTIONS)} questions: engine hit@1 {e1:.2f} "
            f"hit@5 {e5:.2f}; the scan answered {len(scan)} of them as the engine did: "
            f"{scan == [engine[i] for i in picked]}"
        )
    assert e1 >= FLOOR_HIT1 and e5 >= FLOOR_HIT5
    assert scan == [engine[i] for i in picked]
