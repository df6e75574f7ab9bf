"""Purge benchmarks: ``hs purge`` and ``hs redact`` on a 10k-turn store, as
ratios to ``hs gc`` on the same store (``make bench BENCH_ARGS='-k purge'``).

The store: the seeded 10k-turn JSONL (``turns_10k``) imported, its recall
index built, then copied afresh for every round (a purge is irreversible).
Nothing here asserts on time; the asserts are functional facts (the target
is gone, the text is nowhere).

Figures (median seconds, and each as a ratio to ``gc_10k``):

* ``gc_10k`` -- ``gc(store)`` on the imported store (the baseline);
* ``gc_full_10k`` -- ``gc(store, full=True)``;
* ``purge_session_10k`` -- a session of ~20 turns: the plan (the refs log,
  the kept set: a mark of the whole store), the packs holding it rewritten,
  the index rebuilt;
* ``purge_turn_10k`` -- one turn;
* ``purge_text_10k`` -- a text in a handful of turns (every object read);
* ``redact_preview_10k`` / ``redact_apply_10k`` -- ``hs redact`` with a
  pattern that matches a handful of turns (every object redacted again).
"""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchutil as bu
import pytest
import tomli_w

from histstore.ops import gc as gcmod
from histstore.ops import purge, rewrite
from histstore.ops.importing import import_paths
from histstore.recall.index import RecallIndex
from histstore.store.store import Store

ROUNDS = 3


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, turns_10k: bu.Corpus) -> Path:
    root = tmp_path_factory.mktemp("purge") / "store"
    store, _ = Store.init(root)
    rep = import_paths(store, [turns_10k.path], command="bench import")
    assert rep.turns_added == turns_10k.turns
    RecallIndex(store).catch_up()
    store.close()
    return root


def _fresh(base: Path, tmp: Path) -> Callable[[], tuple[tuple[Store], dict[str, Any]]]:
    n = [0]

    def setup() -> tuple[tuple[Store], dict[str, Any]]:
        n[0] += 1
        root = tmp / f"round-{n[0]}"
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(base, root)
        return (Store.open(root),), {}

    return setup


def _bench(benchmark: Any, name: str, base: Path, tmp: Path, run: Callable[[Store], Any]) -> Any:
    out: list[Any] = []

    def go(store: Store) -> None:
        out.append(run(store))
        store.close()

    benchmark.pedantic(go, setup=_fresh(base, tmp), rounds=ROUNDS, iterations=1)
    entry = bu.record(name, benchmark)
    gc_s = bu.seconds("gc_10k")
    if gc_s and entry.get("seconds_median"):
        bu.note(
            f"{name}: {entry['seconds_median']:.2f} s, {entry['seconds_median'] / gc_s:.2f}x gc_10k"
        )
    return out[-1]


def _session(base: Path) -> tuple[str, int]:
    with Store.open(base) as s:
        sizes = sorted((len(x.turns), x.session_id) for x in s.sessions())
    n, sid = next(((n, sid) for n, sid in sizes if n >= 15), sizes[-1])
    return sid, n


def test_gc_10k(benchmark: Any, base: Path, tmp_path: Path) -> None:
    rep = _bench(benchmark, "gc_10k", base, tmp_path, lambda s: gcmod.gc(s))
    bu.note(f"gc_10k: {bu.seconds('gc_10k'):.2f} s ({rep.objects_before} objects)")


def test_gc_full_10k(benchmark: Any, base: Path, tmp_path: Path) -> None:
    _bench(benchmark, "gc_full_10k", base, tmp_path, lambda s: gcmod.gc(s, full=True))


def test_purge_session_10k(benchmark: Any, base: Path, tmp_path: Path) -> None:
    sid, n = _session(base)

    def run(s: Store) -> Any:
        t = purge.resolve(s, sid, sid)
        return purge.purge(s, purge.target_planner(t), command="bench purge", confirm=None)

    rep = _bench(benchmark, "purge_session_10k", base, tmp_path, run)
    assert rep.plan.kinds.get("turn") == n
    bu.note(f"purge_session_10k: a session of {n} turns, {len(rep.plan.drop)} objects")


def test_purge_turn_10k(benchmark: Any, base: Path, tmp_path: Path) -> None:
    sid, _ = _session(base)
    with Store.open(base) as s:
        tid = s.session(sid).turns[0].turn_id

    def run(s: Store) -> Any:
        t = purge.resolve(s, f"{sid}~{tid}", f"{sid}~{tid}")
        return purge.purge(s, purge.target_planner(t), command="bench purge")

    rep = _bench(benchmark, "purge_turn_10k", base, tmp_path, run)
    assert rep.plan.kinds.get("turn") == 1


def _rare_text(base: Path) -> str:
    """A word of some turn's prompt that few others hold."""
    with Store.open(base) as s:
        sess = next(iter(s.sessions()))
        asked = str(s.get_json(sess.turns[0].object)["asked"])
    return max(asked.split(), key=len)


def test_purge_text_10k(benchmark: Any, base: Path, tmp_path: Path) -> None:
    text = _rare_text(base)
    rep = _bench(
        benchmark,
        "purge_text_10k",
        base,
        tmp_path,
        lambda s: purge.purge(s, rewrite.text_planner(text), command="bench purge --text"),
    )
    bu.note(f"purge_text_10k: {len(rep.plan.drop)} objects rewritten ({rep.plan.kinds})")


def _with_pattern(store: Store, pattern: str) -> Store:
    root = store.root
    config = tomllib.loads((root / "config.toml").read_text())
    config["redact"]["patterns"] = [pattern]
    (root / "config.toml").write_text(tomli_w.dumps(config))
    store.close()
    return Store.open(root)


def test_redact_preview_10k(benchmark: Any, base: Path, tmp_path: Path) -> None:
    text = _rare_text(base)
    _bench(
        benchmark,
        "redact_preview_10k",
        base,
        tmp_path,
        lambda s: purge.preview(_with_pattern(s, text), rewrite.redact_planner()),
    )


def test_redact_apply_10k(benchmark: Any, base: Path, tmp_path: Path) -> None:
    text = _rare_text(base)
    rep = _bench(
        benchmark,
        "redact_apply_10k",
        base,
        tmp_path,
        lambda s: rewrite.redact_apply(_with_pattern(s, text), command="bench redact --apply"),
    )
    bu.note(f"redact_apply_10k: {len(rep.plan.drop)} objects redacted again")
