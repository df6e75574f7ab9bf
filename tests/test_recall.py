"""hs recall and the recall index: what it finds, how it scopes, how it says
nothing was found, and how its generations swap."""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import HS, turn_record, write_turns

from histstore.ops.importing import import_paths
from histstore.recall.index import RecallIndex
from histstore.recall.query import UNTRUSTED_LABEL, Query, excerpt
from histstore.store.store import Store


def ago(days: float) -> str:
    t = datetime.now(UTC) - timedelta(days=days)
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def corpus(
    app: str = "/home/dev/src/app", other: str = "/home/dev/src/other"
) -> list[dict[str, Any]]:
    return [
        turn_record(
            1,
            project=app,
            session_id="s-app",
            asked_at=ago(40),
            asked="How should login_user handle expired tokens?",
            answered="We decided: refresh them in the auth middleware.",
            files=["src/auth.py"],
            edited=["src/middleware.py"],
        ),
        turn_record(
            2,
            project=app,
            session_id="s-app",
            asked_at=ago(3),
            asked="Make the cache faster",
            answered="Switched the zephyrquartz cache to LRU.",
            files=["src/cache.py"],
            edited=[],
        ),
        turn_record(
            3,
            project=other,
            session_id="s-other",
            asked_at=ago(2),
            asked="Fetch the payment docs",
            answered="The gateway retries twice.",
            files=["docs/payments_gateway.md"],
            edited=[],
            tainted=True,
            tools={"WebFetch": 1},
        ),
        turn_record(
            4,
            project=other,
            session_id="s-other",
            asked_at=ago(1),
            asked="Anything about login_user here?",
            answered="No, only billing code.",
            files=[],
            edited=[],
        ),
    ]


@pytest.fixture
def filled(store: Store, tmp_path: Path) -> Store:
    import_paths(store, [write_turns(tmp_path / "t.jsonl", corpus())])
    return store


def ids(res: Any) -> list[str]:
    return [h.turn_id for h in res.hits]


@pytest.mark.parametrize("fallback", [False, True])
def test_found_by_asked_answered_and_file_name(filled: Store, fallback: bool) -> None:
    index = RecallIndex(filled)
    assert ids(index.search("expired", fallback=fallback)) == ["turn-0001"]
    assert ids(index.search("middleware", fallback=fallback)) == ["turn-0001"]
    assert ids(index.search("zephyrquartz", fallback=fallback)) == ["turn-0002"]
    assert ids(index.search("payments_gateway", fallback=fallback)) == ["turn-0003"]
    assert ids(index.search("cache.py", fallback=fallback)) == ["turn-0002"]
    # login_user is a phrase: it finds both turns that say it, newest first among equals
    assert ids(index.search("login_user", fallback=fallback)) == ["turn-0004", "turn-0001"]


def test_fallback_answers_the_same_on_the_same_data(filled: Store) -> None:
    index = RecallIndex(filled)
    for q in [
        "login_user",
        "cache",
        "gateway retries",
        "tokens middleware",
        "billing",
        "payment docs",
        "nothing-like-this",
    ]:
        for project in (None, "/home/dev/src/app"):
            a = index.search(q, project=project, k=10)
            b = index.search(q, project=project, k=10, fallback=True)
            assert sorted(ids(a)) == sorted(ids(b)), q
            assert [h.excerpt for h in sorted(a.hits, key=lambda h: h.turn_id)] == [
                h.excerpt for h in sorted(b.hits, key=lambda h: h.turn_id)
            ]
            assert a.outcome == b.outcome and (a.path, b.path) == ("fts5", "like")


def test_project_scoping_and_everywhere(filled: Store) -> None:
    index = RecallIndex(filled)
    assert ids(index.search("login_user", project="/home/dev/src/app")) == ["turn-0001"]
    assert ids(index.search("login_user", project="/home/dev/src/other")) == ["turn-0004"]
    assert len(ids(index.search("login_user"))) == 2
    res = index.search("payment", project="/home/dev/src/app")
    assert res.hits == [] and res.outcome == "no-match"


def test_days_window_and_the_three_empty_answers(store: Store, tmp_path: Path) -> None:
    index = RecallIndex(store)
    assert index.search("anything").outcome == "empty"  # nothing recorded yet
    import_paths(store, [write_turns(tmp_path / "t.jsonl", corpus())])
    assert ids(index.search("expired", days=60)) == ["turn-0001"]
    res = index.search("expired", days=7)
    assert res.hits == [] and res.outcome == "no-match-in-days"
    assert index.search("zzzunknown", days=7).outcome == "no-match"
    assert ids(index.search("cache", days=7)) == ["turn-0002"]


def test_function_words_only(filled: Store) -> None:
    res = RecallIndex(filled).search("what did we do about it")
    assert res.outcome == "no-terms" and res.hits == []
    q = Query.parse("What did we decide about the login function two weeks ago?")
    assert [" ".join(t) for t in q.terms] == ["login", "function"]


def test_same_turn_id_twice_is_one_hit(store: Store, tmp_path: Path) -> None:
    recs = [
        turn_record(1, asked="unique marmalade question", session_id="a"),
        turn_record(1, asked="unique marmalade question", session_id="b"),
    ]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    import_paths(store, [write_turns(tmp_path / "u.jsonl", [dict(recs[0], answered="revised")])])
    assert ids(RecallIndex(store).search("marmalade", k=10)) == ["turn-0001"]


def test_excerpt_is_centred_on_the_first_matching_term() -> None:
    text = ("lorem ipsum " * 40) + "the zephyrquartz cache was the culprit " + ("dolor sit " * 40)
    ex = excerpt(text, Query.parse("zephyrquartz").terms)
    assert ex is not None and "zephyrquartz" in ex
    assert ex.startswith("…") and ex.endswith("…") and len(ex) <= 170
    assert excerpt("nothing here", Query.parse("zephyrquartz").terms) is None
    # token-wise: 'log' does not match inside 'login'
    assert excerpt("login failed", Query.parse("log").terms) is None


def test_new_turns_are_searchable_when_the_command_returns(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1, asked="first quokka")))
    gen_before = hs.json_lines("plumbing", "index-status")[0]["generation"]
    hs("record", input=json.dumps(turn_record(2, asked="second quokka")))
    status = hs.json_lines("plumbing", "index-status")[0]
    assert status["generation"] == gen_before  # no rebuild: caught up in place
    assert status["stale"] is False and status["rows"] == 2
    out = hs.json_lines("recall", "--everywhere", "--json", "quokka")[0]
    assert [h["turn_id"] for h in out["hits"]] == ["turn-0002", "turn-0001"]


def test_cli_recall_output(hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = tmp_path / "work" / "app"
    (app / ".git").mkdir(parents=True)
    (app / "src").mkdir()
    hs("init")
    recs = corpus(app=str(app))
    path = write_turns(tmp_path / "t.jsonl", recs)
    assert hs("import", str(path)).exit_code == 0
    monkeypatch.chdir(app / "src")  # the current project is the git top level
    r = hs("recall", "login_user")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(recs[0]["asked_at"][:10]) and "session s-app" in lines[0]
    assert "turn turn-0001" in lines[0]
    assert "project:" not in r.stdout  # one project searched: not named
    assert "  edited: src/middleware.py" in lines and "  read: src/auth.py" in lines
    assert UNTRUSTED_LABEL not in r.stdout
    r = hs("recall", "--everywhere", "gateway")
    assert "  project: /home/dev/src/other" in r.stdout.splitlines()
    assert f"  {UNTRUSTED_LABEL}" in r.stdout.splitlines()
    r = hs("recall", "gateway")
    assert r.exit_code == 0 and r.stdout.startswith("no turn matches 'gateway' in ")
    assert "(try --everywhere)" in r.stdout
    r = hs("recall", "--everywhere", "--days", "7", "expired")
    assert "in the last 7 days" in r.stdout
    r = hs("recall", "the", "of", "and")
    assert r.stdout.startswith("nothing to look for")
    out = hs.json_lines("recall", "--everywhere", "--json", "-k", "1", "login_user")[0]
    assert out["outcome"] == "found" and len(out["hits"]) == 1
    for bad in (["-k", "0"], ["-k", "11"], ["--days", "0"], ["--everywhere", "--project", "x"]):
        r = hs("recall", *bad, "login")
        assert r.exit_code == 2, bad


def test_cli_recall_nothing_recorded(hs: HS) -> None:
    hs("init")
    r = hs("recall", "anything")
    assert r.exit_code == 0 and r.stdout.startswith("nothing recorded yet")


def test_a_planted_secret_is_not_in_the_index_bytes(hs: HS, store_path: Path) -> None:
    hs("init")
    secret = "ghp_" + "Q7r8S9t0U1v2W3x4Y5z6A7b8C9d0E1f2G3h4"
    hs("record", input=json.dumps(turn_record(1, asked=f"token {secret} here", files=[secret])))
    files = [p for p in (store_path / "index").rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite" for p in files)
    for p in files:
        assert secret.encode() not in p.read_bytes(), p.name


def test_index_is_rebuildable_to_the_same_answers(filled: Store) -> None:
    index = RecallIndex(filled)
    before = {q: ids(index.search(q, k=10)) for q in ["login_user", "cache", "gateway"]}
    first = index.status().generation
    index.build()
    assert index.status().generation != first
    assert {q: ids(index.search(q, k=10)) for q in before} == before


def test_rollback_serves_the_previous_generation(hs: HS) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    first = hs.json_lines("plumbing", "index-status")[0]["generation"]
    built = hs.json_lines("plumbing", "index-build")[0]
    assert built["generation"] != first and built["stale"] is False
    back = hs.json_lines("plumbing", "index-rollback")[0]
    assert back["generation"] == first
    r = hs("plumbing", "index-rollback")
    assert r.exit_code == 2 and "no earlier generation" in r.stderr


def test_generations_are_pruned_to_the_last_few(filled: Store) -> None:
    index = RecallIndex(filled)
    for _ in range(5):
        index.build()
    assert len(index.generations()) == 3


def test_a_failed_rebuild_leaves_the_previous_generation_serving(
    filled: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = RecallIndex(filled)
    gen = index.status().generation
    calls = {"n": 0}
    real = RecallIndex._row

    def failing(self: RecallIndex, *args: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise sqlite3.OperationalError("disk I/O error (injected)")
        real(self, *args)

    monkeypatch.setattr(RecallIndex, "_row", failing)
    with pytest.raises(sqlite3.OperationalError):
        index.build()
    assert index.status().generation == gen
    assert ids(index.search("expired")) == ["turn-0001"]
    assert not [p for p in index.dir.iterdir() if p.name.endswith(".tmp")]


def test_readers_during_generation_swaps_never_fail_or_see_part(filled: Store) -> None:
    index = RecallIndex(filled)
    want = ids(index.search("login_user", k=10))
    errors: list[BaseException] = []
    seen: list[list[str]] = []
    stop = threading.Event()

    def reader() -> None:
        reader_store = Store.open(filled.root)
        r = RecallIndex(reader_store)
        while not stop.is_set():
            try:
                seen.append(ids(r.search("login_user", k=10)))
            except BaseException as e:  # pragma: no cover - the failure being tested
                errors.append(e)
                return

    t = threading.Thread(target=reader)
    t.start()
    try:
        for _ in range(8):
            index.build()
    finally:
        stop.set()
        t.join()
    assert errors == []
    assert seen and all(s == want for s in seen)


def test_without_fts5_the_like_path_serves(store: Store, tmp_path: Path) -> None:
    import_paths(store, [write_turns(tmp_path / "t.jsonl", corpus())])
    index = RecallIndex(store)
    index.build(fts=False)
    res = index.search("login_user")
    assert res.path == "like" and ids(res) == ["turn-0004", "turn-0001"]
    # and it keeps catching up
    import_paths(store, [write_turns(tmp_path / "u.jsonl", [turn_record(9, asked="a new ocelot")])])
    assert ids(index.search("ocelot")) == ["turn-0009"]


def test_fsck_checks_the_current_generation(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    assert hs("fsck").exit_code == 0
    gen = store_path / "index" / hs.json_lines("plumbing", "index-status")[0]["generation"]
    conn = sqlite3.connect(gen)
    conn.execute("DELETE FROM turn")
    conn.commit()
    conn.close()
    r = hs("fsck")
    assert r.exit_code == 7 and "holds 0 turns, the store 1" in r.stderr
    hs("plumbing", "index-build")
    assert hs("fsck").exit_code == 0


def test_recall_catches_up_an_index_left_behind(hs: HS, store_path: Path) -> None:
    """A store whose index is missing (written before it existed) or behind."""
    hs("init")
    hs("record", input=json.dumps(turn_record(1, asked="a lonely narwhal")))
    import shutil

    shutil.rmtree(store_path / "index")
    out = hs.json_lines("recall", "--everywhere", "--json", "narwhal")[0]
    assert [h["turn_id"] for h in out["hits"]] == ["turn-0001"]
    assert hs.json_lines("plumbing", "index-status")[0]["stale"] is False


def test_common_terms_are_bounded_but_never_lose_scoped_matches(
    filled: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import histstore.recall.search as recall

    index = RecallIndex(filled)
    # every term counts as common: the newest matches come, unranked
    monkeypatch.setattr(recall, "COMMON_DOCS", 0)
    assert ids(index.search("login_user tokens", k=10)) == ["turn-0004", "turn-0001"]
    # older matches exist outside the window: not "no match"
    res = index.search("login_user", project="/home/dev/src/app", days=30)
    assert res.hits == [] and res.outcome == "no-match-in-days"
    # an informative term that misses in scope does not hide a common one that matches
    monkeypatch.setattr(recall, "COMMON_DOCS", 1)
    res = index.search("login_user flaky", project="/home/dev/src/app")
    assert ids(res) == ["turn-0001"]
    # an informative term ranks first; common-term matches follow
    res = index.search("expired login_user", k=10)
    assert ids(res) == ["turn-0001", "turn-0004"]


def test_contractions_are_function_words() -> None:
    assert Query.parse("why don't we").terms == ()
    assert Query.parse("it\u2019s what they've done").terms == (("done",),)


def test_tokens_fold_case_and_accents_like_fts5(store: Store, tmp_path: Path) -> None:
    from histstore.recall.query import tokens

    assert tokens("Café ÜBER login_user") == ["cafe", "uber", "login", "user"]
    import_paths(
        store, [write_turns(tmp_path / "t.jsonl", [turn_record(1, asked="Un café au lait")])]
    )
    assert ids(RecallIndex(store).search("cafe")) == ["turn-0001"]


def test_a_damaged_index_file_is_corruption_not_a_crash(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    gen = store_path / "index" / hs.json_lines("plumbing", "index-status")[0]["generation"]
    gen.write_bytes(b"this is not a database" * 100)
    r = hs("recall", "--everywhere", "login")
    assert r.exit_code == 7 and "is damaged" in r.stderr and "index-build" in r.stderr
    assert hs("plumbing", "index-build").exit_code == 0
    assert hs("recall", "--everywhere", "login").exit_code == 0


def test_fsck_warns_when_turns_have_no_index(hs: HS, store_path: Path) -> None:
    import shutil

    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    shutil.rmtree(store_path / "index")
    r = hs("fsck")
    assert r.exit_code == 0 and "no recall index yet" in r.stdout


def test_a_long_lived_index_object_follows_swaps(filled: Store) -> None:
    """One RecallIndex searching many times (an agent's tool) keeps its
    connection only while CURRENT names the same generation."""
    reader = RecallIndex(Store.open(filled.root))
    assert ids(reader.search("expired")) == ["turn-0001"]
    writer = RecallIndex(filled)
    import_paths(
        filled,
        [write_turns(filled.root.parent / "x.jsonl", [turn_record(7, asked="expired again")])],
    )
    assert ids(reader.search("expired")) == ["turn-0007", "turn-0001"]  # caught up in place
    writer.build()
    writer.build()
    writer.build()  # the generation the reader had is pruned
    assert ids(reader.search("expired")) == ["turn-0007", "turn-0001"]
    reader.close()


def test_a_big_catch_up_builds_a_generation_instead(
    filled: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import histstore.recall.replay as recall

    index = RecallIndex(filled)
    before = index.status().generation
    monkeypatch.setattr(recall, "REBUILD_CHANGES", 1)
    recs = [turn_record(50 + i, session_id=f"bulk-{i}", asked=f"bulk wombat {i}") for i in range(3)]
    import_paths(filled, [write_turns(tmp_path / "bulk.jsonl", recs)])
    status = index.status()
    assert status.generation != before and status.stale is False
    assert sorted(ids(index.search("wombat", k=10))) == ["turn-0050", "turn-0051", "turn-0052"]
    # a forget far behind swaps in a whole new generation too
    from histstore.ops.forget import forget, resolve_target

    recs = [turn_record(60 + i, session_id=f"more-{i}", asked="more wombat") for i in range(3)]
    import_paths(filled, [write_turns(tmp_path / "more.jsonl", recs)])
    forget(filled, resolve_target(filled, "turn-0050"), confirm="turn-0050")
    assert "turn-0050" not in ids(index.search("wombat", k=10))


def test_recall_agent_keeps_one_agents_turns_and_an_empty_query_is_refused(
    hs: HS, tmp_path: Path
) -> None:
    hs("init")
    recs = [
        turn_record(1, turn_id="t-cc", session_id="s-cc", agent="claude-code"),
        turn_record(2, turn_id="t-cx", session_id="s-cx", agent="codex"),
    ]
    assert hs("import", str(write_turns(tmp_path / "t.jsonl", recs))).exit_code == 0
    r = hs("recall", "-e", "--agent", "codex", "login_user")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout.splitlines()[0].endswith("session s-cx  turn t-cx  codex")
    assert "t-cc" not in r.stdout
    out = hs.json_lines("recall", "-e", "--agent", "codex", "--json", "login_user")[0]
    assert out["agent"] == "codex" and [h["turn_id"] for h in out["hits"]] == ["t-cx"]
    r = hs("recall", "-e", "--agent", "aider", "login_user")
    assert r.exit_code == 0 and r.stdout == "no turn of aider matches 'login_user'\n"
    r = hs("recall", "  ")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == "hs: error: the query is empty; hint: give the words to look for\n"
