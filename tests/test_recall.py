"""hs recall and the recall index: what it finds in every part of a turn, how it
ranks and scopes, how it says where a hit matched and why nothing was found,
how its generations are built, caught up, rolled back and compacted, and the
scan that answers the same without the engine."""

from __future__ import annotations

import json
import random
import shutil
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import tantivy
from helpers import HS, turn_record, write_turns

import histstore.recall.replay as replay
from histstore.ops.importing import import_paths
from histstore.recall import engine
from histstore.recall.engine import FIELDS as ENGINE_FIELDS
from histstore.recall.fields import FIELDS, Part, parts
from histstore.recall.hits import excerpt
from histstore.recall.index import RecallIndex, compact, recall
from histstore.recall.query import (
    _TOKEN,
    UNTRUSTED_LABEL,
    Query,
    Scope,
    approx_tokens,
    fold,
    tokens,
)
from histstore.store.store import Store


def ago(days: float) -> str:
    t = datetime.now(UTC) - timedelta(days=days)
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def tool(name: str, inp: dict[str, Any], out: str, error: bool = False) -> dict[str, Any]:
    return {"type": "tool", "id": "t", "name": name, "input": inp, "output": out, "is_error": error}


def corpus(
    app: str = "/home/dev/src/app", other: str = "/home/dev/src/other"
) -> list[dict[str, Any]]:
    return [
        turn_record(
            1,
            project=app,
            session_id="s-app",
            asked_at=ago(40),
            asked="How should login_user handle expired tokens? See FW-007.",
            answered="We decided: refresh them in the auth middleware.",
            files=["src/auth.py"],
            edited=["src/middleware.py"],
            agent="claude-code",
            steps=[
                {"type": "thinking", "text": "the refresh belongs near the quagmire of sessions"},
                tool("Bash", {"command": "pytest -q tests/test_auth.py"}, "1 failed"),
                tool(
                    "Bash",
                    {"command": "make check"},
                    "E   ValueError: TokenWithException raised in refresh\n"
                    + "FAILED tests/test_auth.py::test_refresh_WithException\n"
                    + "x " * 300,
                    True,
                ),
            ],
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
            agent="codex",
            steps=[
                {"type": "assistant", "text": "Let me grep for the eviction policy first."},
                tool("Grep", {"pattern": "evict_lru"}, "src/cache.py"),
            ],
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


def search(store: Store, text: str, scan: bool = False, **kw: Any) -> Any:
    return RecallIndex(store).search(text, fallback=scan, **kw)


# --------------------------------------------------------------- what it finds


@pytest.mark.parametrize("scan", [False, True], ids=["engine", "scan"])
def test_every_part_of_a_turn_is_searched_and_says_where(filled: Store, scan: bool) -> None:
    def where(text: str) -> list[tuple[str, str, str]]:
        return [(h.turn_id, h.field, h.where) for h in search(filled, text, scan).hits]

    assert where("expired") == [("turn-0001", "asked", "in the prompt")]
    assert where("middleware") == [("turn-0001", "answered", "in the answer")]
    assert where("zephyrquartz") == [("turn-0002", "answered", "in the answer")]
    assert where("payments_gateway") == [("turn-0003", "paths", "in a file path")]
    assert where("quagmire") == [("turn-0001", "thinking", "in thinking")]
    assert where("eviction") == [("turn-0002", "said", "in the conversation")]
    assert where("evict_lru") == [("turn-0002", "tool_in", "in Grep input")]
    assert where("test_auth.py") == [("turn-0001", "tool_in", "in Bash input")]
    # a tool output, stored as a blob (over 512 bytes): found in the part's text
    assert where("_WithException") == [("turn-0001", "tool_out", "in Bash output")]
    assert where("TokenWithException") == [("turn-0001", "tool_out", "in Bash output")]
    assert where("Exception") == []  # a token is a whole run of letters and digits
    ex = search(filled, "TokenWithException", scan).hits[0].excerpt
    assert ex.startswith("E ValueError: TokenWithException raised") and ex.endswith("…")
    # login_user is a phrase: both turns that say it, newest first among equals
    assert ids(search(filled, "login_user", scan)) == ["turn-0004", "turn-0001"]


@pytest.mark.parametrize("scan", [False, True], ids=["engine", "scan"])
def test_identifiers_match_as_typed_and_as_their_parts(filled: Store, scan: bool) -> None:
    for text in ("login_user", "login", "FW-007", "fw", "007", "src/auth.py", "auth.py", "auth"):
        assert "turn-0001" in ids(search(filled, text, scan)), text
    assert ids(search(filled, "login-user", scan)) == ["turn-0004", "turn-0001"]
    assert ids(search(filled, "user_login", scan)) == []  # the parts in another order


def test_the_scan_answers_the_same_on_the_same_data(filled: Store) -> None:
    for q in [
        "login_user",
        "cache",
        "gateway retries",
        "tokens middleware refresh",
        "billing",
        "payment docs",
        "pytest make",
        "nothing-like-this",
    ]:
        for kw in ({}, {"project": "/home/dev/src/app"}, {"days": 10}, {"agent": "codex"}):
            a = search(filled, q, k=10, **kw)
            b = search(filled, q, True, k=10, **kw)
            assert [(h.turn_id, h.field, h.where, h.excerpt) for h in a.hits] == [
                (h.turn_id, h.field, h.where, h.excerpt) for h in b.hits
            ], (q, kw)
            for x, y in zip(a.hits, b.hits, strict=True):
                assert x.score == pytest.approx(y.score, rel=1e-3), (q, kw)
            assert a.outcome == b.outcome and (a.path, b.path) == ("tantivy", "scan")


def test_common_terms_are_ranked_by_bm25_not_by_time(store: Store, tmp_path: Path) -> None:
    # "deploy" is in every turn; the oldest says it most and in its prompt
    recs = [turn_record(1, asked_at=ago(30), asked="deploy deploy deploy the deploy script")]
    recs += [
        turn_record(n, asked_at=ago(30 - n), asked=f"note {n}", answered="then deploy later")
        for n in range(2, 40)
    ]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    res = search(store, "deploy", k=10)
    assert ids(res)[0] == "turn-0001"
    scores = [h.score for h in res.hits]
    assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)
    # equal scores: newest first
    tied = [h.turn_id for h in res.hits[1:]]
    assert tied == [f"turn-{n:04d}" for n in range(39, 30, -1)]


def test_function_words_only(filled: Store) -> None:
    res = search(filled, "what did we do about it")
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
    assert ids(search(store, "marmalade", k=10)) == ["turn-0001"]


def test_excerpt_is_centred_on_the_first_matching_term() -> None:
    text = ("lorem ipsum " * 40) + "the zephyrquartz cache was the culprit " + ("dolor sit " * 40)
    ex = excerpt(text, Query.parse("zephyrquartz").terms)
    assert ex is not None and "zephyrquartz" in ex
    assert ex.startswith("…") and ex.endswith("…") and len(ex) <= 170
    assert excerpt("nothing here", Query.parse("zephyrquartz").terms) is None
    # token-wise: 'log' does not match inside 'login'
    assert excerpt("login failed", Query.parse("log").terms) is None


WRITTEN = [
    "il-ħobż tajjeb",
    "Azərbaycan dili",
    "İstanbul'da kaldık",
    "Новый год, ещё їжак",
    "σελίδα ΟΔΟΣ",
    "लॉगिन की समस्या",
    "বাংলা ভাষা",
    "ปัญหา การเข้าสู่ระบบ",
    "שָׁלוֹם עולם",
    "مُشكلة تسجيل",
    "한국어 로그인",
    "ログインが できない",
    "Café Straße ﬁle µs token™",
]


@pytest.mark.parametrize("text", WRITTEN)
def test_excerpts_and_marks_find_every_word_as_the_index_tokenizes_it(text: str) -> None:
    """Excerpts and the marks on a recall's lines find a term where the
    index's own tokens are, in every script (Python's folding splits or joins
    words the index does not)."""
    from histstore.plumbing.term import highlight_phrases
    from histstore.recall.query import token_spans

    assert [t for _, _, t in token_spans(text)] == tokens(text)
    assert all(text[a:b] and tokens(text[a:b]) == [t] for a, b, t in token_spans(text))
    for word in text.split():
        terms = Query.parse(word).terms
        if not terms:
            continue  # a function word
        assert excerpt("lorem " + text + " ipsum", terms) is not None, word
        marked = highlight_phrases(text, [list(t) for t in terms], token_spans)
        assert any(style == "match" for _, style in marked.pieces), word


def test_parts_skip_what_repeats_the_prompt_and_answer() -> None:
    turn = turn_record(
        1,
        asked="the prompt",
        answered="the answer",
        steps=[
            {"type": "user", "text": "the prompt"},
            {"type": "assistant", "text": "on my way"},
            tool("Read", {"file_path": "/a.py", "limit": 5}, "print(1)"),
            {"type": "assistant", "text": "the answer"},
        ],
    )
    got = parts(turn, lambda oid: None)
    assert [(p.field, p.text, p.tool) for p in got] == [
        ("asked", "the prompt", None),
        ("answered", "the answer", None),
        ("paths", "src/auth.py", None),
        ("paths", "src/middleware.py", None),
        ("said", "on my way", None),
        ("tool_in", "/a.py\n5", "Read"),
        ("tool_out", "print(1)", "Read"),
    ]
    assert Part("tool_out", "x", None).where == "in a tool output"
    assert ENGINE_FIELDS == FIELDS


def test_tokens_fold_case_and_accents_like_the_index(store: Store, tmp_path: Path) -> None:
    """tokens are the index analyzer's; approx_tokens (without the tantivy
    package) makes the same wherever the two fold alike."""
    for text in ("Café ÜBER login_user Straße", "한국어 로그인", "हिन्दी में", "token™ ½x ΟΔΟΣ"):
        assert tokens(text) == engine.analyzer().analyze(text), text
    assert tokens("Café ÜBER login_user Straße") == ["cafe", "uber", "login", "user", "strasse"]
    assert approx_tokens("Café ÜBER login_user Straße") == tokens("Café ÜBER login_user Straße")
    assert approx_tokens("한국어 로그인") == ["한국어", "로그인"]  # syllables, not jamo
    # a token of 40 bytes or more is dropped as written, before it is folded
    long = [
        "a" * 38 + "é",  # 40 bytes written, 39 folded: dropped
        "a" * 37 + "é",  # 39 bytes: kept
        "A" * 39 + " " + "B" * 40,
        "\ufb01" * 13 + "a",  # a ligature of 3 bytes folds to two letters
        "Straße " + "b" * 40 + " ok",
        "x" * 39,
        "x" * 40,
        # a letter that grows and a mark that goes: the same length, other places
        "ß " + "a" * 39 + "— \u0301",
        " \u0301—" + "a" * 39 + " ß",
    ]
    for text in long:
        assert engine.analyzer().analyze(text) == approx_tokens(text), text
    # a circled letter is a letter to Tantivy, not to Python's \w: the runs as
    # written pair apart, and a long token there is measured as folded (kept)
    odd = "ß xⒶy " + "a" * 39 + " " + "é" * 20 + " Ⓑ"
    assert approx_tokens(odd) == ["ss", "xay", "a" * 39, "e" * 20, "b"]
    assert tokens(odd) == ["ss", "xay", "a" * 39, "b"]
    # random texts of letters that fold to other lengths, with marks at word
    # edges: wherever the two fold alike (not İ, roman numerals, a mark inside
    # a word: docs/architecture.md), they drop the same long tokens
    rng = random.Random(5)
    letters = list("abcdefghijklmnopqrstuvwxyzABCZ0123456789") * 4 + list("éÉüçñøåßæœﬁı _-/—")
    unlimited = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    unlimited = unlimited.filter(tantivy.Filter.lowercase()).filter(tantivy.Filter.ascii_fold())
    whole = unlimited.build()
    compared = 0
    for _ in range(2000):
        text = "".join(rng.choice(letters) for _ in range(rng.randint(1, 120)))
        if rng.random() < 0.3:
            text = text.replace(" ", " \u0301", 1)
        if whole.analyze(text) != _TOKEN.findall(fold(text)):
            continue  # they fold apart
        compared += 1
        assert engine.analyzer().analyze(text) == approx_tokens(text), text
    assert compared > 1500
    import_paths(
        store, [write_turns(tmp_path / "t.jsonl", [turn_record(1, asked="Un café au lait")])]
    )
    assert ids(search(store, "cafe")) == ["turn-0001"]
    assert ids(search(store, "CAFÉ", True)) == ["turn-0001"]


def test_without_tantivy_the_scan_tokenizes_in_python(
    filled: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    import histstore.recall.query as query_mod

    monkeypatch.setattr(query_mod, "_ANALYZE", [])
    monkeypatch.setitem(sys.modules, "tantivy", None)  # the package is not installed
    assert tokens("Café login_user") == ["cafe", "login", "user"]
    assert query_mod._ANALYZE[0] is approx_tokens
    assert ids(search(filled, "login_user", True)) == ["turn-0004", "turn-0001"]


@pytest.mark.parametrize("scan", [False, True], ids=["engine", "scan"])
def test_a_word_of_any_script_finds_its_turn(store: Store, tmp_path: Path, scan: bool) -> None:
    """The engine reads each query word with the index's own analyzer: a word
    Python folds or splits otherwise (Hangul to jamo, Devanagari at its vowel
    signs) is still the index's tokens."""
    recs = [
        turn_record(1, asked="한국어 로그인 문제를 고쳐 주세요"),
        turn_record(2, asked="हिन्दी में लॉगिन की समस्या"),
        turn_record(3, asked="Un café au lait"),
    ]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    for word, turn in (("로그인", "turn-0001"), ("हिन्दी", "turn-0002"), ("समस्या", "turn-0002")):
        assert ids(search(store, word, scan)) == [turn], word
    assert ids(search(store, "CAFÉ", scan)) == ["turn-0003"]
    assert Query.parse("the Café").terms == (("cafe",),)  # "the" is a function word


# --------------------------------------------------------------- scope


@pytest.mark.parametrize("scan", [False, True], ids=["engine", "scan"])
def test_project_by_path_by_name_with_or_without_a_slash(filled: Store, scan: bool) -> None:
    for project in ("/home/dev/src/app", "/home/dev/src/app/", "app", "app/"):
        assert ids(search(filled, "login_user", scan, project=project)) == ["turn-0001"], project
    assert ids(search(filled, "login_user", scan, project="other")) == ["turn-0004"]
    assert ids(search(filled, "login_user", scan, project="/elsewhere/app")) == []
    assert ids(search(filled, "login_user", scan, project="src/app")) == []  # a path, not a name
    assert len(ids(search(filled, "login_user", scan))) == 2
    res = search(filled, "payment", scan, project="/home/dev/src/app")
    assert res.hits == [] and res.outcome == "no-match" and res.scope == "/home/dev/src/app"


def test_project_is_the_turns_own_not_its_sessions(store: Store, tmp_path: Path) -> None:
    recs = [
        turn_record(1, session_id="s", project="/p/first", asked="kumquat one"),
        turn_record(2, session_id="s", project="/p/second", asked="kumquat two"),
    ]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    for scan in (False, True):
        assert ids(search(store, "kumquat", scan, project="/p/second")) == ["turn-0002"]
        assert ids(search(store, "kumquat", scan, project="first")) == ["turn-0001"]


@pytest.mark.parametrize("scan", [False, True], ids=["engine", "scan"])
def test_agent_session_and_days(filled: Store, scan: bool) -> None:
    assert ids(search(filled, "cache login_user", scan, agent="codex")) == ["turn-0002"]
    assert ids(search(filled, "login_user", scan, session="s-other")) == ["turn-0004"]
    assert ids(search(filled, "expired", scan, days=60)) == ["turn-0001"]
    res = search(filled, "expired", scan, days=7)
    assert res.hits == [] and res.outcome == "no-match-in-days"
    assert search(filled, "zzzunknown", scan, days=7).outcome == "no-match"
    assert ids(search(filled, "cache", scan, days=7)) == ["turn-0002"]


def test_scope_of_bad_input() -> None:
    from histstore.errors import BadInput

    for kw in ({"days": 0}, {"agent": " "}, {"session": ""}):
        with pytest.raises(BadInput):
            Scope.of(None, **kw)
    with pytest.raises(BadInput):
        Scope.of("  ")


def test_the_three_empty_answers(store: Store, tmp_path: Path) -> None:
    assert search(store, "anything").outcome == "empty"  # nothing recorded yet
    assert search(store, "anything", True).outcome == "empty"
    import_paths(store, [write_turns(tmp_path / "t.jsonl", corpus())])
    assert search(store, "the and of").outcome == "no-terms"
    assert search(store, "okapi").outcome == "no-match"


# --------------------------------------------------------------- the CLI


def test_new_turns_are_searchable_when_the_command_returns(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1, asked="first quokka")))
    gen_before = hs.json_lines("plumbing", "index-status")[0]["generation"]
    hs("record", input=json.dumps(turn_record(2, asked="second quokka")))
    status = hs.json_lines("plumbing", "index-status")[0]
    assert status["generation"] == gen_before  # no rebuild: a commit in place
    assert status["stale"] is False and status["rows"] == 2
    out = hs.json_lines("recall", "--everywhere", "--json", "quokka")[0]
    assert [h["turn_id"] for h in out["hits"]] == ["turn-0002", "turn-0001"]
    assert {h["field"] for h in out["hits"]} == {"asked"} and out["path"] == "tantivy"
    assert all(h["score"] > 0 and h["where"] == "in the prompt" for h in out["hits"])


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
    assert lines[1] == "  in the prompt: How should login_user handle expired tokens? See FW-007."
    assert "project:" not in r.stdout  # one project searched: not named
    assert "  edited: src/middleware.py" in lines and "  read: src/auth.py" in lines
    assert UNTRUSTED_LABEL not in r.stdout
    r = hs("recall", "--everywhere", "gateway")
    assert "  project: /home/dev/src/other" in r.stdout.splitlines()
    assert f"  {UNTRUSTED_LABEL}" in r.stdout.splitlines()
    r = hs("recall", "-e", "TokenWithException")
    assert "  in Bash output: E ValueError: TokenWithException raised in refresh" in r.stdout
    r = hs("recall", "gateway")
    assert r.exit_code == 0 and r.stdout.startswith("no turn matches 'gateway' in ")
    assert "(try --everywhere)" in r.stdout
    r = hs("recall", "--project", "other", "gateway")
    assert r.exit_code == 0 and "turn turn-0003" in r.stdout
    r = hs("recall", "--everywhere", "--days", "7", "expired")
    assert "in the last 7 days" in r.stdout
    r = hs("recall", "-e", "--agent", "codex", "cache")
    assert "turn turn-0002" in r.stdout and "turn-0001" not in r.stdout
    r = hs("recall", "-e", "--session", "s-other", "login_user")
    assert "turn turn-0004" in r.stdout and "turn-0001" not in r.stdout
    r = hs("recall", "the", "of", "and")
    assert r.stdout.startswith("nothing to look for")
    out = hs.json_lines("recall", "--everywhere", "--json", "-k", "1", "login_user")[0]
    assert out["outcome"] == "found" and len(out["hits"]) == 1
    assert out["hits"][0]["field"] == "asked" and out["hits"][0]["score"] > 0
    for bad in (
        ["-k", "0"],
        ["-k", "11"],
        ["--days", "0"],
        ["--everywhere", "--project", "x"],
        ["--agent", ""],
    ):
        r = hs("recall", *bad, "login")
        assert r.exit_code == 2 and r.stderr.startswith("hs: error: "), bad
        assert r.stdout == ""


def test_cli_recall_without_the_engine(
    hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hs("init")
    assert hs("import", str(write_turns(tmp_path / "t.jsonl", corpus()))).exit_code == 0
    want = hs.json_lines("recall", "-e", "--json", "-k", "10", "login_user cache")[0]
    monkeypatch.setenv("HS_RECALL_FALLBACK", "1")
    got = hs.json_lines("recall", "-e", "--json", "-k", "10", "login_user cache")[0]
    assert got["path"] == "scan" and want["path"] == "tantivy"
    assert [h["turn_id"] for h in got["hits"]] == [h["turn_id"] for h in want["hits"]]


def test_cli_recall_nothing_recorded(hs: HS) -> None:
    hs("init")
    r = hs("recall", "anything")
    assert r.exit_code == 0 and r.stdout.startswith("nothing recorded yet")


def test_a_planted_secret_is_not_in_the_index_bytes(hs: HS, store_path: Path) -> None:
    hs("init")
    secret = "ghp_" + "Q7r8S9t0U1v2W3x4Y5z6A7b8C9d0E1f2G3h4"
    hs("record", input=json.dumps(turn_record(1, asked=f"token {secret} here", files=[secret])))
    files = [p for p in (store_path / "index").rglob("*") if p.is_file()]
    assert any(p.name == "meta.json" for p in files)
    for p in files:
        assert secret.encode() not in p.read_bytes(), p.name
        assert secret.lower().encode() not in p.read_bytes(), p.name


# --------------------------------------------------------------- generations


def test_index_is_rebuildable_to_the_same_answers(filled: Store) -> None:
    index = RecallIndex(filled)
    before = {q: ids(index.search(q, k=10)) for q in ["login_user", "cache", "gateway"]}
    first = index.status().generation
    index.build()
    assert index.status().generation != first
    assert {q: ids(index.search(q, k=10)) for q in before} == before


def test_rollback_serves_the_previous_generation(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1, asked="an early gecko")))
    first = hs.json_lines("plumbing", "index-status")[0]["generation"]
    built = hs.json_lines("plumbing", "index-build")[0]
    assert built["generation"] != first and built["stale"] is False
    # a change only the newer generation holds (its commit, with no refs-log
    # entry: what a bad build would look like)
    gen = tantivy.Index.open(str(store_path / "index" / built["generation"]))
    w = gen.writer(20_000_000, 1)
    w.delete_all_documents()
    w.commit()
    w.wait_merging_threads()
    del gen, w
    assert hs.json_lines("recall", "-e", "--json", "gecko")[0]["hits"] == []
    r = hs("plumbing", "index-rollback")
    assert r.exit_code == 0 and r.stderr == ""
    back = json.loads(r.stdout)
    assert back["generation"] == first and back["generations"] == [first, built["generation"]]
    assert (store_path / "index" / "CURRENT").read_text() == first + "\n"
    hits = hs.json_lines("recall", "-e", "--json", "gecko")[0]["hits"]
    assert [h["turn_id"] for h in hits] == ["turn-0001"]
    r = hs("plumbing", "index-rollback")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == "hs: error: no earlier generation of the recall index is kept\n"


def test_generations_are_pruned_to_the_last_few(filled: Store) -> None:
    index = RecallIndex(filled)
    for _ in range(5):
        index.build()
    assert len(index.generations()) == 3
    assert sorted(p.name for p in index.dir.iterdir() if p.name.endswith(".json")) == [
        f"{p.name}.json" for p in index.generations()
    ]


def test_a_failed_rebuild_leaves_the_previous_generation_serving(
    filled: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = RecallIndex(filled)
    gen = index.status().generation
    calls = {"n": 0}
    real = replay.Writer.document

    def failing(self: replay.Writer, *args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(5, "disk I/O error (injected)")
        return real(self, *args)

    monkeypatch.setattr(replay.Writer, "document", failing)
    with pytest.raises(OSError):
        index.build()
    assert index.status().generation == gen
    assert ids(index.search("expired")) == ["turn-0001"]
    assert not [p for p in index.dir.iterdir() if p.name.endswith(".tmp")]


def test_readers_during_builds_and_commits_never_fail_or_see_part(
    filled: Store, tmp_path: Path
) -> None:
    index = RecallIndex(filled)
    want = ids(index.search("login_user", k=10))
    errors: list[BaseException] = []
    seen: list[list[str]] = []
    stop = threading.Event()

    def reader() -> None:
        r = RecallIndex(Store.open(filled.root))
        while not stop.is_set():
            try:
                seen.append(ids(r.search("login_user", k=10)))
            except BaseException as e:  # pragma: no cover - the failure being tested
                errors.append(e)
                return

    t = threading.Thread(target=reader)
    t.start()
    try:
        for n in range(4):
            index.build()
            rec = turn_record(100 + n, session_id=f"x-{n}", asked="unrelated")
            import_paths(filled, [write_turns(tmp_path / f"x{n}.jsonl", [rec])])
    finally:
        stop.set()
        t.join()
    assert errors == []
    assert seen and all(s == want for s in seen)


def test_a_forget_is_a_commit_in_the_serving_generation(filled: Store) -> None:
    from histstore.ops.forget import forget, resolve_target, unforget

    index = RecallIndex(filled)
    before = index.status()
    t = resolve_target(filled, "turn-0001")
    forget(filled, t, mode="exclude", confirm="turn-0001")
    after = index.status()
    assert after.generation == before.generation and after.rows == before.rows - 1
    assert after.deleted == 1 and index.holds(turn_id="turn-0001") == 0
    unforget(filled, t, confirm="turn-0001")
    assert index.holds(turn_id="turn-0001") == 1 and index.status().rows == before.rows


def test_compact_purges_an_excluded_turns_text_from_the_index_files(filled: Store) -> None:
    from histstore.ops.forget import forget, resolve_target

    index = RecallIndex(filled)
    index.build()  # a second generation: it holds the text too
    word = "zephyrquartz"  # only turn-0002 says it

    def in_files() -> list[str]:
        found = []
        for gen in index.generations():
            searcher = tantivy.Index.open(str(gen)).searcher()  # a fresh reader
            found += [f for f in FIELDS if searcher.terms_with_prefix(f, word)]
        found += [
            p.name for p in index.dir.rglob("*") if p.is_file() and word in p.read_text("latin-1")
        ]
        return found

    forget(filled, resolve_target(filled, "turn-0002"), mode="exclude", confirm="turn-0002")
    assert ids(index.search(word)) == []
    assert in_files()  # deleted, not gone: its segment still holds the terms
    status = compact(filled)
    assert in_files() == []
    assert status.deleted == 0 and len(status.generations) == 1
    assert ids(index.search("cache login_user", k=10)) == ["turn-0004", "turn-0001"]
    assert status.rows == 3 and status.stale is False


def test_fsck_checks_the_current_generation(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    assert hs("fsck").exit_code == 0
    gen = store_path / "index" / hs.json_lines("plumbing", "index-status")[0]["generation"]
    index = tantivy.Index.open(str(gen))
    w = index.writer(20_000_000, 1)
    w.delete_all_documents()
    w.commit()
    w.wait_merging_threads()
    r = hs("fsck")
    assert r.exit_code == 7 and "holds 0 turns, the store 1" in r.stderr
    hs("plumbing", "index-build")
    assert hs("fsck").exit_code == 0


def test_recall_catches_up_an_index_left_behind(hs: HS, store_path: Path) -> None:
    """A store whose index is missing (written before it existed) or behind."""
    hs("init")
    hs("record", input=json.dumps(turn_record(1, asked="a lonely narwhal")))
    shutil.rmtree(store_path / "index")
    out = hs.json_lines("recall", "--everywhere", "--json", "narwhal")[0]
    assert [h["turn_id"] for h in out["hits"]] == ["turn-0001"]
    assert hs.json_lines("plumbing", "index-status")[0]["stale"] is False


def test_a_library_recall_catches_up_an_index_left_behind(hs: HS, store_path: Path) -> None:
    """Catching the index up before a search is the library's
    (histstore.recall.index.recall), not the CLI's: a library caller (the MCP
    server) finds a turn the index never saw, and leaves the index caught up."""
    hs("init")
    hs("record", input=json.dumps(turn_record(1, asked="a lonely narwhal")))
    shutil.rmtree(store_path / "index")
    with Store.open(store_path) as s:
        assert RecallIndex(s).behind()
        assert [h.turn_id for h in recall(s, "narwhal").hits] == ["turn-0001"]
        assert not RecallIndex(s).behind()


def test_an_index_of_schema_1_is_replaced(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1, asked="an old walrus")))
    shutil.rmtree(store_path / "index")
    (store_path / "index").mkdir()
    (store_path / "index" / "CURRENT").write_text("gen-3.sqlite\n")
    (store_path / "index" / "gen-3.sqlite").write_bytes(b"SQLite format 3\x00")
    out = hs.json_lines("recall", "--everywhere", "--json", "walrus")[0]
    assert [h["turn_id"] for h in out["hits"]] == ["turn-0001"]
    assert not (store_path / "index" / "gen-3.sqlite").exists()


def test_a_damaged_index_is_corruption_not_a_crash(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    gen = store_path / "index" / hs.json_lines("plumbing", "index-status")[0]["generation"]
    (gen / "meta.json").write_bytes(b"this is not an index" * 100)
    r = hs("recall", "--everywhere", "login")
    assert r.exit_code == 7 and "is damaged" in r.stderr and "index-build" in r.stderr
    assert r.stderr.count("\n") == 1
    assert hs("fsck").exit_code == 7
    assert hs("plumbing", "index-build").exit_code == 0
    assert hs("recall", "--everywhere", "login").exit_code == 0
    (store_path / "index" / "CURRENT").write_text("nonsense\n")
    r = hs("plumbing", "index-status")
    assert r.exit_code == 7 and "does not name a generation" in r.stderr


def test_fsck_warns_when_turns_have_no_index(hs: HS, store_path: Path) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    shutil.rmtree(store_path / "index")
    r = hs("fsck")
    assert r.exit_code == 0 and "no recall index yet" in r.stdout


def test_a_long_lived_index_object_follows_commits_and_builds(filled: Store) -> None:
    """One RecallIndex searching many times (an agent's tool) sees every commit,
    and moves to a new generation when CURRENT names one."""
    reader = RecallIndex(Store.open(filled.root))
    assert ids(reader.search("expired")) == ["turn-0001"]
    writer = RecallIndex(filled)
    import_paths(
        filled,
        [write_turns(filled.root.parent / "x.jsonl", [turn_record(7, asked="expired again")])],
    )
    assert ids(reader.search("expired")) == ["turn-0007", "turn-0001"]  # caught up in place
    for _ in range(3):
        writer.build()  # the generation the reader had is pruned
    assert ids(reader.search("expired")) == ["turn-0007", "turn-0001"]
    reader.close()


def test_a_big_catch_up_commits_in_place(filled: Store, tmp_path: Path) -> None:
    index = RecallIndex(filled)
    before = index.status()
    recs = [
        turn_record(50 + i, session_id=f"bulk-{i}", asked=f"bulk wombat {i}") for i in range(40)
    ]
    import_paths(filled, [write_turns(tmp_path / "bulk.jsonl", recs)])
    status = index.status()
    assert status.generation == before.generation and status.stale is False
    assert status.rows == before.rows + 40
    assert len(ids(index.search("wombat", k=10))) == 10


def test_operations_on_other_refs_read_nothing(
    hs: HS, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `hs push --init` leaves (thousands of remotes/ refs moved) is caught
    up by moving applied_op: no session is read, no document written."""
    hs("init")
    hs("record", input=json.dumps(turn_record(1)))
    with Store.open(store_path) as s:
        rev = s.session_ref("sess-a")
    for n in range(3):
        assert hs("plumbing", "update-ref", f"remotes/o/sessions/s{n}", str(rev)).exit_code == 0

    def no(*a: Any, **kw: Any) -> Any:
        raise AssertionError("a writer was made")

    with Store.open(store_path) as s:
        monkeypatch.setattr(replay, "Writer", no)
        monkeypatch.setattr(Store, "load_session", no)
        assert RecallIndex(s).catch_up() == 0
        assert RecallIndex(s).status().stale is False


def test_recall_is_the_one_entry_point(filled: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import histstore.recall.index as recall_mod

    res = recall(filled, "login_user", k=10)
    assert ids(res) == ["turn-0004", "turn-0001"] and res.path == "tantivy"
    monkeypatch.setenv(recall_mod.FALLBACK_ENV, "1")
    assert recall(filled, "login_user", k=10).path == "scan"
    monkeypatch.setenv(recall_mod.FALLBACK_ENV, "0")

    def missing() -> Any:
        raise recall_mod.HistError("the search engine cannot be loaded (no tantivy)")

    monkeypatch.setattr(recall_mod, "load_engine", missing)
    res = recall(filled, "login_user", k=10)
    assert res.path == "scan" and ids(res) == ["turn-0004", "turn-0001"]


def test_index_status_reports_segments_and_deletes(hs: HS, tmp_path: Path) -> None:
    hs("init")
    hs("import", str(write_turns(tmp_path / "t.jsonl", corpus())))
    st = hs.json_lines("plumbing", "index-status")[0]
    assert set(st) >= {"generation", "rows", "segments", "deleted", "engine", "stale"}
    assert st["rows"] == 4 and st["deleted"] == 0 and st["engine"].startswith("tantivy")


def test_the_quick_path_prints_what_the_cli_prints(
    hs: HS, store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`hs recall` runs without typer when it knows every argument: the same
    lines, the same exit codes; anything else goes to the full CLI."""
    from histstore.porcelain.recall_cmd import parse, quick

    hs("init")
    hs("import", str(write_turns(tmp_path / "t.jsonl", corpus())))
    cases = [
        ["recall", "-e", "login_user"],
        ["recall", "--everywhere", "--json", "-k", "1", "login_user"],
        ["recall", "--project=/home/dev/src/app", "--days", "60", "expired"],
        ["recall", "--project", "other", "gateway"],
        ["recall", "-e", "--agent", "codex", "cache"],
        ["recall", "-e", "-k", "11", "login"],
        ["recall", "-e", "--project", "x", "login"],
        ["recall", "-e", "the", "of"],
        ["recall", "-e", "--no-pager", "--color", "never", "login_user"],
        ["recall", "-e", "-P", "--color=always", "cache"],
    ]
    for args in cases:
        want = hs(*args)
        capsys.readouterr()
        code = quick(["--store", str(store_path), *args])
        got = capsys.readouterr()
        assert (code, got.out, got.err) == (want.exit_code, want.stdout, want.stderr), args
    for args in (
        ["recall", "--help"],
        ["recall", "-e", "--days", "x", "a"],
        ["recall", "--bogus", "a"],
        ["recall"],
        ["log", "recall"],
        ["recall", "-e", "--", "-a"],
        ["recall", "-e", "--color", "purple", "a"],
        ["-P", "recall", "a"],
    ):
        assert parse(args) is None, args
    assert parse(["-C", "/s", "recall", "a", "-e", "b"]) == (
        "/s",
        {
            "everywhere": True,
            "project": None,
            "days": None,
            "k": 5,
            "agent": None,
            "session": None,
            "json_out": False,
            "color": None,
            "no_pager": False,
            "words": ["a", "b"],
        },
    )


def test_a_build_adds_turns_newest_first(store: Store, tmp_path: Path) -> None:
    """Documents go in newest first across sessions (a days window then passes
    over whole segments; among equal scores the engine keeps the newer)."""
    recs = [
        turn_record(n, session_id="a" if n % 2 else "b", asked_at=ago(10 - n), asked="ibex")
        for n in range(1, 9)
    ] + [turn_record(9, session_id="c", asked_at=ago(20), asked="ibex")]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    order = [e.turn_id for _s, e in RecallIndex(store)._newest_first()]
    assert order == [f"turn-{n:04d}" for n in (8, 7, 6, 5, 4, 3, 2, 1, 9)]


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


# --------------------------------------------------------------- issue 12, point by point


@pytest.mark.parametrize("scan", [False, True], ids=["engine", "scan"])
def test_filters_select_inside_the_engine_not_among_the_best(
    store: Store, tmp_path: Path, scan: bool
) -> None:
    """The one turn in scope is the weakest match of 81: a filter applied to
    the best candidates (the engine fetches 50) would lose it."""
    loud = [
        turn_record(
            n,
            session_id="s-loud",
            project="/p/loud",
            agent="codex",
            asked_at=ago(30),
            asked="heron heron heron",
            answered="heron",
        )
        for n in range(1, 81)
    ]
    quiet = turn_record(
        99,
        session_id="s-quiet",
        project="/p/quiet",
        agent="claude-code",
        asked_at=ago(1),
        asked="what did the birds do",
        answered="among many other words about the pond a heron was seen once " * 4,
    )
    import_paths(store, [write_turns(tmp_path / "t.jsonl", [*loud, quiet])])
    assert "turn-0099" not in ids(search(store, "heron", scan, k=10))
    for kw in (
        {"project": "/p/quiet"},
        {"project": "/p/quiet/"},
        {"project": "quiet"},
        {"project": "quiet/"},
        {"agent": "claude-code"},
        {"session": "s-quiet"},
        {"days": 7},
    ):
        res = search(store, "heron", scan, **kw)
        assert ids(res) == ["turn-0099"], kw
        assert res.hits[0].field == "answered" and res.hits[0].score > 0, kw


def test_cli_filters_and_the_turns_own_project(hs: HS, tmp_path: Path) -> None:
    """--project is the turn's own project, by path or name; --agent and
    --session select inside the index (cli.md)."""
    hs("init")
    recs = [
        turn_record(1, session_id="s", project="/p/first", asked="kumquat one", agent="codex"),
        turn_record(2, session_id="s", project="/p/second", asked="kumquat two", agent="codex"),
        turn_record(3, session_id="t", project="/p/second", asked="kumquat three"),
    ]
    assert hs("import", str(write_turns(tmp_path / "t.jsonl", recs))).exit_code == 0

    def found(*args: str) -> list[str]:
        r = hs("recall", *args, "kumquat")
        assert r.exit_code == 0 and r.stderr == "", args
        return [
            line.split("turn ")[1].split()[0] for line in r.stdout.splitlines() if " turn " in line
        ]

    assert found("--project", "/p/second") == ["turn-0003", "turn-0002"]
    assert found("--project", "/p/second/") == ["turn-0003", "turn-0002"]
    assert found("--project", "first") == ["turn-0001"]
    assert found("--project", "second", "--session", "s") == ["turn-0002"]
    assert found("-e", "--agent", "codex") == ["turn-0002", "turn-0001"]
    r = hs("recall", "--project", "first", "--session", "t", "kumquat")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout == "no turn matches 'kumquat' in first in session t (try --everywhere)\n"
    out = hs.json_lines("recall", "-e", "--session", "t", "--json", "kumquat")[0]
    assert out["session"] == "t" and [h["turn_id"] for h in out["hits"]] == ["turn-0003"]


def test_cli_scan_fallback_gives_the_engines_answer(
    hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HS_RECALL_FALLBACK forces the scan: the same hits, fields, excerpts,
    scores and human output on the shared fixture; only ``path`` differs."""
    hs("init")
    assert hs("import", str(write_turns(tmp_path / "t.jsonl", corpus()))).exit_code == 0
    queries = [
        ["-e", "-k", "10", "login_user cache"],
        ["-e", "_WithException"],
        ["--project", "app", "tokens refresh"],
        ["-e", "--days", "10", "gateway cache"],
        ["-e", "--agent", "codex", "evict_lru"],
    ]
    engine = [(hs("recall", *q), hs("recall", "--json", *q)) for q in queries]
    monkeypatch.setenv("HS_RECALL_FALLBACK", "1")
    for q, (text, js) in zip(queries, engine, strict=True):
        t2, j2 = hs("recall", *q), hs("recall", "--json", *q)
        assert (t2.exit_code, t2.stdout, t2.stderr) == (0, text.stdout, ""), q
        a, b = json.loads(js.stdout), json.loads(j2.stdout)
        assert (a.pop("path"), b.pop("path")) == ("tantivy", "scan")
        for x, y in zip(a["hits"], b["hits"], strict=True):
            assert x.pop("score") == pytest.approx(y.pop("score"), rel=1e-3), q
        assert a == b and a["hits"], q


def test_a_push_init_then_a_record_commits_in_place(
    hs: HS, store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hs push --init` (a remotes/ ref per session moved) moves the index's
    applied_op past its operation and nothing else; the next write reads only
    what it changed: no rebuild, no session read for the push (the FTS5 index
    counted those refs and rebuilt)."""
    hs("init")
    recs = [turn_record(n, session_id=f"s-{n}", asked=f"topic {n}") for n in range(1, 7)]
    assert hs("import", str(write_turns(tmp_path / "t.jsonl", recs))).exit_code == 0
    with Store.open(store_path) as s:
        index = RecallIndex(s)
        gen = index.gens.current()
        assert gen is not None
        before_push = gen.applied_op
    assert hs("remote", "add", "lap", str(tmp_path / "lap")).exit_code == 0
    r = hs("push", "lap", "--init")
    assert r.exit_code == 0, r.stderr
    with Store.open(store_path) as s:
        assert len(s.refs.list_refs("remotes/")) >= 6
        index = RecallIndex(s)
        gen = index.gens.current()
        # a push moves no session of this store: its index only follows it
        assert gen is not None and gen.applied_op != before_push and not index.behind()
        assert gen.applied_op == s.refs.last_op_id()
    read: list[str | None] = []
    real = replay._entries

    def entries(store: Store, rev: str | None) -> Any:
        read.append(rev)
        return real(store, rev)

    def no_build(self: RecallIndex) -> int:
        raise AssertionError("a catch-up rebuilt the index")

    monkeypatch.setattr(replay, "_entries", entries)
    monkeypatch.setattr(RecallIndex, "_build", no_build)
    r = hs("record", input=json.dumps(turn_record(9, session_id="s-new", asked="a late okapi")))
    assert r.exit_code == 0 and r.stderr == ""
    st = hs.json_lines("plumbing", "index-status")[0]
    assert st["generation"] == gen.name and st["stale"] is False and st["rows"] == 7
    assert read == [None, read[1]] and read[1] is not None  # the new session's revision only
    out = hs.json_lines("recall", "-e", "--json", "okapi")[0]
    assert [h["turn_id"] for h in out["hits"]] == ["turn-0009"]


def test_a_search_never_waits_for_an_index_writer(hs: HS, store_path: Path) -> None:
    """An index behind while a writer holds the index lock: recall answers from
    what is there (no error, no wait) and catches up once the lock is free."""
    import filelock

    hs("init")
    hs("record", input=json.dumps(turn_record(1, asked="first capybara")))
    with Store.open(store_path) as s:
        gen = RecallIndex(s).gens.current()
        assert gen is not None
        applied = gen.applied_op
    hs("record", input=json.dumps(turn_record(2, asked="second capybara")))
    with Store.open(store_path) as s:
        gens = RecallIndex(s).gens
        gen = gens.current()
        assert gen is not None
        gens.write_meta(gen.name, {**gen.meta, "applied_op": applied})
        # the commit of turn 2 is undone too: the generation as it was then
        engine_index = tantivy.Index.open(str(gen.path))
        w = engine_index.writer(20_000_000, 1)
        w.delete_documents_by_term("key", "turn-0002~sess-a")
        w.commit()
        w.wait_merging_threads()
    held = filelock.FileLock(str(store_path / "index" / "lock"))
    with held.acquire(timeout=0):
        out = hs.json_lines("recall", "-e", "--json", "capybara")[0]
        assert [h["turn_id"] for h in out["hits"]] == ["turn-0001"]
    r = hs("recall", "-e", "capybara")
    assert r.exit_code == 0 and r.stderr == "" and "turn turn-0002" in r.stdout


@pytest.mark.parametrize("fallback", [False, True])
def test_among_many_equal_scores_the_newest_come_first(
    store: Store, tmp_path: Path, fallback: bool
) -> None:
    """120 turns scored alike, imported oldest first in four imports (each a
    catch-up, the newest last in the index): the engine kept the first 50 it
    met in the index and ordered those by time, so the oldest came first."""
    days = list(range(120))
    start = datetime(2025, 1, 1, tzinfo=UTC)
    recs = [
        turn_record(
            i,
            session_id=f"s-{i % 5}",
            asked="the papaya question",
            answered="the papaya answer",
            asked_at=(start + timedelta(days=d)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            turn_id=f"t-{d:03d}",
        )
        for i, d in enumerate(days)
    ]
    for n in range(4):
        import_paths(store, [write_turns(tmp_path / f"p{n}.jsonl", recs[n * 30 : n * 30 + 30])])
    res = RecallIndex(store).search("papaya", k=5, fallback=fallback)
    assert len({h.score for h in res.hits}) == 1
    assert [h.turn_id for h in res.hits] == ["t-119", "t-118", "t-117", "t-116", "t-115"]


# --------------------------------------------------------------- odd input, long words, parts

#: how Python reads the argument b"caf\xe9" (not UTF-8): a lone surrogate
NOT_UTF8 = "caf\udce9"
#: 40 bytes: a token this long is not indexed (remove_long), but keeps its place
LONG_HEX = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize("scan", [False, True], ids=["engine", "scan"])
def test_arguments_that_are_not_utf8_are_read_as_the_store_spells_them(
    store: Store, tmp_path: Path, scan: bool
) -> None:
    """A query or filter with bytes that are not UTF-8 (Python's lone
    surrogates) never reaches the analyzer or a filter term as such: its odd
    bytes are spelled ``\\xNN``, as the store keeps a file name that is not
    UTF-8 — the same answer with or without the engine, never an internal error."""
    recs = [
        turn_record(
            1, asked="open caf\\xe9.txt", project="/p\\xff", agent="a\\xff", session_id="s-1"
        ),
        turn_record(2, asked="open café.txt", session_id="s-2"),
    ]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    assert Query.parse(NOT_UTF8).terms == (("caf", "xe9"),)
    assert ids(search(store, NOT_UTF8, scan)) == ["turn-0001"]
    res = search(store, "open", scan, project="/p\udcff")
    assert ids(res) == ["turn-0001"] and res.scope == "/p\\xff"
    assert ids(search(store, "open", scan, agent="a\udcff")) == ["turn-0001"]
    res = search(store, "open", scan, session="s\udcff")
    assert res.hits == [] and res.outcome == "no-match"
    # a lone surrogate that is no escaped byte (from JSON: the MCP tool) is U+FFFD
    assert Query.parse("\ud800open").text == "\ufffdopen"
    assert search(store, "\ud800open", scan).outcome == "found"


def test_cli_arguments_that_are_not_utf8_give_the_same_answer_on_both_paths(
    hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hs("init")
    recs = [turn_record(1, asked="open caf\\xe9.txt", project="/p\\xff", agent="a\\xff")]
    assert hs("import", str(write_turns(tmp_path / "t.jsonl", recs))).exit_code == 0
    asks = [
        ["-e", NOT_UTF8],
        ["--project", "/p\udcff", "open"],
        ["-e", "--agent", "a\udcff", "open"],
        ["-e", "--session", "s\udcff", "open"],
    ]
    answers = []
    for fallback in ("0", "1"):
        monkeypatch.setenv("HS_RECALL_FALLBACK", fallback)
        got = [hs("recall", *a) for a in asks]
        for a, r in zip(asks, got, strict=True):
            assert (r.exit_code, r.stderr) == (0, ""), (a, r.stderr)
        answers.append([r.stdout for r in got])
    assert answers[0] == answers[1]
    found, project, agent, session = answers[0]
    assert "turn turn-0001" in found and "in the prompt: open caf\\xe9.txt" in found
    assert "turn turn-0001" in project and "turn turn-0001" in agent
    assert session.startswith("no turn matches 'open' in session s\\xff")  # as searched


@pytest.mark.parametrize("scan", [False, True], ids=["engine", "scan"])
def test_a_word_too_long_to_index_keeps_its_place_in_a_phrase(
    store: Store, tmp_path: Path, scan: bool
) -> None:
    """The index drops a token of 40 bytes or more but keeps its position: a
    query keeps it too, as a place any one token fills, so a phrase around a
    long token finds the turn that holds it and only that one."""
    long_id = "foo_" + "x" * 45 + "_bar"
    recs = [
        turn_record(1, asked=f"look at /tmp/cache/{LONG_HEX}/index.json please"),
        turn_record(2, asked=f"rename {long_id} now"),
        turn_record(3, asked="the cache index.json and foo_bar live elsewhere"),
    ]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    res = search(store, f"cache/{LONG_HEX}/index.json", scan)
    assert ids(res) == ["turn-0001"]
    assert res.hits[0].where == "in the prompt" and LONG_HEX in res.hits[0].excerpt
    assert ids(search(store, long_id, scan)) == ["turn-0002"]
    assert ids(search(store, "foo_bar", scan)) == ["turn-0003"]  # not foo_<45 x>_bar
    assert ids(search(store, "cache/index.json", scan)) == ["turn-0003"]
    q = Query.parse(f"cache/{LONG_HEX}/index.json")
    assert q.terms == (("cache", "index", "json"),)  # as shown and marked
    assert q.phrases == (("cache", None, "index", "json"),)  # as searched
    from histstore.errors import BadInput

    for text in (LONG_HEX, f"the {LONG_HEX}", f"/{LONG_HEX}/"):
        with pytest.raises(BadInput, match="40 bytes or more"):
            search(store, text, scan)


def test_cli_a_query_of_only_long_words_says_why_nothing_is_searched(hs: HS) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1, asked=f"commit {LONG_HEX} broke it")))
    r = hs("recall", "-e", LONG_HEX)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == (
        f"hs: error: nothing to look for: {LONG_HEX!r} holds no word recall can search "
        "(a word of 40 bytes or more is not indexed); "
        "hint: look for other words of the turn, or a shorter part of that word\n"
    )


@pytest.mark.parametrize("scan", [False, True], ids=["engine", "scan"])
def test_separate_parts_of_a_turn_never_form_a_phrase(
    store: Store, tmp_path: Path, scan: bool
) -> None:
    """Each part is its own value of its field (a position apart): the end of
    one step's input and the start of the next are not a phrase."""
    steps = [
        tool("Bash", {"command": "grep -r widget"}, "x"),
        tool("Bash", {"command": "gadget --list"}, "y"),
    ]
    recs = [turn_record(1, asked="two steps here", answered="done", steps=steps)]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    assert search(store, "widget-gadget", scan).outcome == "no-match"
    res = search(store, "gadget-list", scan)
    assert [(h.turn_id, h.where, h.excerpt) for h in res.hits] == [
        ("turn-0001", "in Bash input", "gadget --list")
    ]
    assert ids(search(store, "widget gadget", scan)) == ["turn-0001"]  # two terms
    # two file paths are two parts too
    assert search(store, "auth.py/src", scan).outcome == "no-match"
    res = search(store, "src/middleware.py", scan)
    assert [(h.where, h.excerpt) for h in res.hits] == [("in a file path", "src/middleware.py")]


def test_cli_separate_parts_never_form_a_phrase(hs: HS, tmp_path: Path) -> None:
    hs("init")
    steps = [
        tool("Bash", {"command": "grep -r widget"}, "x"),
        tool("Bash", {"command": "gadget --list"}, "y"),
    ]
    rec = turn_record(1, asked="two steps here", answered="done", steps=steps)
    assert hs("import", str(write_turns(tmp_path / "t.jsonl", [rec]))).exit_code == 0
    r = hs("recall", "-e", "widget-gadget")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "no turn matches 'widget-gadget'\n", "")


def test_an_excerpt_that_shows_no_term_says_it_is_the_prompt() -> None:
    from histstore.recall.hits import locate

    turn = turn_record(1, asked="lorem ipsum " * 30)
    text, where, field = locate(turn, Query.parse("zebra"), "tool_in", lambda oid: None)
    assert where == "the prompt (matched in a tool input)" and field == "tool_in"
    assert text.endswith("…") and len(text) <= 161 and text.startswith("lorem ipsum")
    short = turn_record(1, asked="a short prompt")
    assert locate(short, Query.parse("zebra"), "answered", lambda oid: None) == (
        "a short prompt",
        "the prompt (matched in the answer)",
        "answered",
    )


def test_an_excerpt_is_centred_on_the_whole_match() -> None:
    """A phrase whose tokens are far apart (punctuation, a long token between)
    is shown whole, centred; the width is kept."""
    lorem, dolor = "lorem ipsum " * 40, " dolor sit" * 40
    ex = excerpt(lorem + "login" + "=" * 100 + "user" + dolor, Query.parse("login_user").terms)
    assert ex is not None and "login=" in ex and "=user" in ex
    assert ex.startswith("…") and ex.endswith("…") and len(ex) <= 162
    assert ex.index("login") > 15 and len(ex) - ex.index("user") > 15  # room both sides
    phrase = Query.parse(f"cache/{LONG_HEX}/index.json").phrases
    ex = excerpt(lorem + f"/tmp/cache/{LONG_HEX}/index.json" + dolor, phrase)
    assert ex is not None and f"/tmp/cache/{LONG_HEX}/index.json" in ex
    assert excerpt(lorem + f"/tmp/cache/x/{LONG_HEX}/index.json" + dolor, phrase) is None
    # non-ASCII text goes by the analyzer's tokens: the same places
    ex = excerpt("é " * 100 + f"cache/{LONG_HEX}/index.json" + " é" * 100, phrase)
    assert ex is not None and f"cache/{LONG_HEX}/index.json" in ex
    # a match wider than the excerpt starts it
    wide = excerpt(lorem + "login" + "-" * 300 + "user" + dolor, Query.parse("login_user").terms)
    assert wide is not None and wide.startswith("…login-")


@pytest.mark.parametrize("scan", [False, True], ids=["engine", "scan"])
def test_project_through_a_symlink_matches_the_path_as_given_and_resolved(
    store: Store, tmp_path: Path, scan: bool
) -> None:
    real, link = tmp_path / "real", tmp_path / "link"
    (real / "shop").mkdir(parents=True)
    link.symlink_to(real)
    recs = [
        turn_record(1, session_id="s1", project=str(link / "shop"), asked="fix login_user"),
        turn_record(2, session_id="s2", project=str(real / "shop"), asked="more login_user"),
        turn_record(3, session_id="s3", project="/elsewhere/shop", asked="no login_user"),
    ]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    res = search(store, "login_user", scan, project=str(link / "shop"))
    assert sorted(ids(res)) == ["turn-0001", "turn-0002"]  # as given, and resolved
    assert res.scope == str(real / "shop")  # the real path's key names the scope
    # the recorded paths are not resolved (a turn recorded elsewhere keeps its path)
    assert ids(search(store, "login_user", scan, project=str(real / "shop"))) == ["turn-0002"]


def test_cli_project_through_a_symlink(hs: HS, tmp_path: Path) -> None:
    """A turn recorded under a symlink (`$HOME/link/shop`, link -> real) is
    found by that path as given, as `hs log --project` finds it."""
    import os

    home = Path(os.environ["HOME"])
    (home / "real" / "shop").mkdir(parents=True)
    (home / "link").symlink_to(home / "real")
    hs("init")
    rec = turn_record(1, project=str(home / "link" / "shop"), asked="fix login_user")
    hs("record", input=json.dumps(rec))
    assert "turn-0001" in hs("log", "--project", str(home / "link" / "shop")).stdout
    r = hs("recall", "--project", str(home / "link" / "shop"), "login_user")
    assert r.exit_code == 0 and r.stderr == ""
    assert "turn turn-0001" in r.stdout and "in the prompt: fix login_user" in r.stdout


def test_positions_keep_the_place_of_a_long_token(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """query.positioned (the index's tokenizer) and approx_positioned (Python,
    without the tantivy package) keep a long token's place alike; the scan
    without the package finds a phrase around one."""
    import sys

    import histstore.recall.query as query_mod

    texts = [
        f"cache/{LONG_HEX}/index.json",
        "a" * 38 + "é x",  # 40 bytes written: dropped
        "Straße " + "b" * 40 + " ok",
        "x " + "é" * 20 + " y",
        f"{LONG_HEX} lead",
        f"tail {LONG_HEX}",
    ]
    for text in texts:
        placed = query_mod.approx_positioned(text)
        while placed and placed[-1] is None:
            placed.pop()
        assert query_mod.positioned(text) == placed, text
    assert query_mod.positioned(f"cache/{LONG_HEX}/index.json") == ["cache", None, "index", "json"]
    assert query_mod.positioned(f"tail {LONG_HEX}") == ["tail"]
    assert query_mod.positioned(f"{LONG_HEX} lead") == [None, "lead"]
    recs = [turn_record(1, asked=f"see cache/{LONG_HEX}/index.json"), turn_record(2)]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    monkeypatch.setattr(query_mod, "_ANALYZE", [])
    monkeypatch.setitem(sys.modules, "tantivy", None)  # the package is not installed
    assert ids(search(store, f"cache/{LONG_HEX}/index.json", True)) == ["turn-0001"]
    assert ids(search(store, "cache/index.json", True)) == []


def test_the_scan_and_the_engine_agree_on_odd_input(store: Store, tmp_path: Path) -> None:
    """The cases above, hit for hit, field for field, excerpt for excerpt."""
    steps = [
        tool("Bash", {"command": "grep -r widget"}, f"cache/{LONG_HEX}/index.json"),
        tool("Bash", {"command": "gadget --list"}, "widget " + "é" * 20 + " gadget"),
    ]
    recs = [
        turn_record(1, asked=f"look at /tmp/cache/{LONG_HEX}/index.json", steps=steps),
        turn_record(2, asked="rename foo_" + "x" * 45 + "_bar now", session_id="s2"),
        turn_record(3, asked="open caf\\xe9.txt cache index.json foo_bar", session_id="s3"),
        # a part ending in a long token: the next part starts a place after
        # its last token kept, the long one taking none
        turn_record(
            4,
            session_id="s4",
            steps=[tool("Read", {"path": "a"}, f"alpha {LONG_HEX}"), tool("Read", {}, "beta")],
        ),
    ]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    for q in [
        f"cache/{LONG_HEX}/index.json",
        "foo_bar",
        "foo_" + "x" * 45 + "_bar",
        "widget-gadget",
        "widget_" + "é" * 20 + "_gadget",
        "gadget list widget",
        NOT_UTF8,
        "index.json",
        f"alpha_{LONG_HEX}_beta",
        "alpha_beta",
        f"alpha_{LONG_HEX}_{LONG_HEX}_beta",
    ]:
        a = search(store, q, k=10)
        b = search(store, q, True, k=10)
        assert [(h.turn_id, h.field, h.where, h.excerpt) for h in a.hits] == [
            (h.turn_id, h.field, h.where, h.excerpt) for h in b.hits
        ], q
        for x, y in zip(a.hits, b.hits, strict=True):
            assert x.score == pytest.approx(y.score, rel=1e-3), q
        assert a.outcome == b.outcome, q


def test_after_a_forget_scores_differ_from_the_scan_until_gc(filled: Store) -> None:
    """docs: Tantivy counts a deleted document in bm25 (N, n, the average
    length) until its segment is merged away; the scan counts visible turns.
    After a forget the hits are the same but their scores may differ, until
    `hs gc` (compact) rewrites the segment."""
    from histstore.ops.forget import forget, resolve_target

    forget(filled, resolve_target(filled, "turn-0002"), mode="exclude", confirm="turn-0002")

    def answers(scan: bool) -> list[tuple[str, float]]:
        return [(h.turn_id, h.score) for h in search(filled, "login_user cache", scan, k=10).hits]

    engine_hits, scan_hits = answers(False), answers(True)
    assert [t for t, _ in engine_hits] == [t for t, _ in scan_hits]
    assert [s for _, s in engine_hits] != pytest.approx([s for _, s in scan_hits], rel=1e-3)
    compact(filled)
    assert [s for _, s in answers(False)] == pytest.approx([s for _, s in answers(True)], rel=1e-3)
