"""The `hs` commands as a person types them: exit code, stdout and stderr."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import tomli_w
from helpers import HS, turn_record, write_turns

from histstore.store.codec import hash_object
from histstore.store.config import read_config


def test_init_creates_store_and_is_idempotent(hs: HS, store_path: Path) -> None:
    r = hs("init")
    assert r.exit_code == 0
    assert f"Initialized empty histstore in {store_path}" in r.stdout
    assert (store_path / "config.toml").is_file()
    assert read_config(store_path)["store"]["format"] == 2
    r = hs("init")
    assert r.exit_code == 0 and "already exists" in r.stdout


def test_store_option_beats_environment(hs: HS, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    r = hs("--store", str(other), "init")
    assert r.exit_code == 0
    assert (other / "config.toml").exists()
    assert not (tmp_path / "store").exists()


def test_default_store_is_platform_data_dir(hs: HS, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("HISTORY_DIR")
    r = hs("init")
    assert r.exit_code == 0
    assert (tmp_path / "home" / ".local" / "share" / "histstore" / "config.toml").exists()


def test_no_store_is_a_clear_error(hs: HS) -> None:
    r = hs("log")
    assert r.exit_code == 3
    assert r.stdout == ""
    assert r.stderr.startswith("hs: error: no store at ")
    assert "hint: create one with `hs init`" in r.stderr
    assert "Traceback" not in r.stderr


def test_unknown_format_version_is_refused(hs: HS, store_path: Path) -> None:
    hs("init")
    cfg = read_config(store_path)
    cfg["store"]["format"] = 99
    (store_path / "config.toml").write_text(tomli_w.dumps(cfg))
    r = hs("status")
    assert r.exit_code == 3
    assert "format version 99" in r.stderr and "reads version 2" in r.stderr


def test_import_log_show_status(hs: HS, make_turns: Callable[..., Path]) -> None:
    hs("init")
    path = make_turns([turn_record(i) for i in range(1, 4)])
    r = hs("import", str(path))
    assert r.exit_code == 0, r.stderr
    assert "sessions: 1 added" in r.stdout and "turns: 3 added" in r.stdout
    assert r.stderr == ""

    r = hs("log")
    assert r.exit_code == 0
    assert r.stdout.index("turn turn-0003") < r.stdout.index("turn turn-0001")
    assert "Edited:  src/middleware.py" in r.stdout and "Read:    src/auth.py" in r.stdout

    r = hs("log", "--oneline", "-n", "2")
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("turn-0003")

    rows = hs.json_lines("log", "--json")
    assert [x["turn_id"] for x in rows] == ["turn-0003", "turn-0002", "turn-0001"]
    assert rows[0]["tools"] == {"Edit": 1, "Read": 1}

    r = hs("show", "turn-0002")
    assert r.exit_code == 0
    assert "question 2" in r.stdout and "answer 2" in r.stdout

    r = hs("show", "sess-a")
    assert r.exit_code == 0 and "Turns:   3" in r.stdout

    info = hs.json_lines("status", "--json")[0]
    assert info["sessions"] == 1 and info["turns"] == 3 and info["operations"] == 1


def test_import_again_adds_nothing_and_records_no_operation(
    hs: HS, make_turns: Callable[..., Path], store_path: Path
) -> None:
    hs("init")
    path = make_turns([turn_record(i) for i in range(1, 4)])
    hs("import", str(path))
    log_before = (store_path / "refs.log").read_bytes()
    r = hs("import", str(path))
    assert r.exit_code == 0
    # the file is as it was when last read: it is not read at all
    assert "imported 0 files, 1 unchanged since the last import (not read)" in r.stdout
    assert "nothing new: no operation recorded" in r.stdout
    assert (store_path / "refs.log").read_bytes() == log_before


def test_import_reports_bad_lines_and_imports_the_rest(hs: HS, tmp_path: Path) -> None:
    hs("init")
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        json.dumps(turn_record(1))
        + "\n{not json\n"
        + json.dumps({"turn_id": "x", "session_id": "s"})
        + "\n"
        + json.dumps(turn_record(2))
        + "\n"
    )
    r = hs("import", str(path))
    assert r.exit_code == 1  # some input was not imported: said, and the rest stored
    assert "turns: 2 added" in r.stdout
    assert "hs: some input was not imported (0 file(s) skipped, 2 problem(s) above)" in r.stderr
    assert f"{path}:2: not valid JSON" in r.stderr
    assert f"{path}:3: turn is missing field(s)" in r.stderr


def test_import_json_summary(hs: HS, make_turns: Callable[..., Path]) -> None:
    hs("init")
    path = make_turns([turn_record(1)])
    rep = hs.json_lines("import", "--json", str(path))[0]
    assert rep["turns_added"] == 1 and rep["sessions_added"] == 1 and rep["operation"]


def test_import_missing_path_is_an_error(hs: HS, tmp_path: Path, store_path: Path) -> None:
    hs("init")
    before = sorted(p.name for p in store_path.rglob("*"))
    r = hs("import", str(tmp_path / "nope"))
    assert r.exit_code == 4
    assert "no such file or folder" in r.stderr
    assert sorted(p.name for p in store_path.rglob("*")) == before


def test_import_unknown_format_is_bad_input(hs: HS, make_turns: Callable[..., Path]) -> None:
    hs("init")
    r = hs("import", "--format", "nope", str(make_turns([turn_record(1)])))
    assert r.exit_code == 2 and "unknown format 'nope'" in r.stderr


def test_record_from_stdin(hs: HS) -> None:
    hs("init")
    rec = turn_record(5)
    r = hs("record", input=json.dumps(rec))
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("recorded turn turn-0005")
    r = hs("record", input=json.dumps(rec))
    assert "unchanged" in r.stdout
    rec["answered"] = "a better answer"
    r = hs("record", input=json.dumps(rec))
    assert r.stdout.startswith("revised turn turn-0005")
    assert hs.json_lines("log", "--json")[0]["answered"] == "a better answer"


def test_record_bad_input(hs: HS, store_path: Path) -> None:
    hs("init")
    for text, expect in [
        ("", "no turn on stdin"),
        ("{oops", "stdin is not JSON"),
        ("[]", "a turn must be a JSON object"),
        (json.dumps({**turn_record(1), "asked_at": "yesterday"}), "not an RFC 3339 time"),
        (json.dumps({**turn_record(1), "session_id": "../../etc"}), "session id"),
        (json.dumps({**turn_record(1), "tainted": "yes"}), "'tainted' must be true or false"),
    ]:
        r = hs("record", input=text)
        assert r.exit_code == 2, (text, r.stdout, r.stderr)
        assert expect in r.stderr
        assert len(r.stderr.strip().splitlines()) <= 2
    assert not (store_path / "refs.log").exists()


def test_log_filters(hs: HS, make_turns: Callable[..., Path]) -> None:
    hs("init")
    recs = [
        turn_record(1, session_id="s-one", asked_at="2026-01-01T00:00:00Z"),
        turn_record(2, session_id="s-two", project="/other", asked_at="2026-02-01T00:00:00Z"),
        turn_record(3, session_id="s-two", project="/other", asked_at="2026-03-01T00:00:00Z"),
    ]
    hs("import", str(make_turns(recs)))

    def ids(*args: str) -> list[str]:
        return [x["turn_id"] for x in hs.json_lines("log", "--json", *args)]

    assert ids("--session", "s-one") == ["turn-0001"]
    assert ids("--session", "s-t") == ["turn-0003", "turn-0002"]
    assert ids("--project", "/other") == ["turn-0003", "turn-0002"]
    assert ids("--since", "2026-02-01") == ["turn-0003", "turn-0002"]
    assert ids("--since", "2026-02-15T00:00:00Z") == ["turn-0003"]
    assert ids("-n", "1") == ["turn-0003"]
    r = hs("log", "--since", "last tuesday")
    assert r.exit_code == 2 and "--since 'last tuesday' is not a time" in r.stderr
    r = hs("log", "--session", "zzz")
    assert r.exit_code == 4 and "no session matches 'zzz'" in r.stderr


def test_log_since_relative(hs: HS) -> None:
    hs("init")
    hs("record", input=json.dumps(turn_record(1, asked_at="2020-01-01T00:00:00Z")))
    assert hs.json_lines("log", "--json", "--since", "2w") == []
    r = hs("log", "--since", "2w")
    assert r.exit_code == 0 and r.stdout.strip() == "no turns match"


def test_log_empty_store(hs: HS) -> None:
    hs("init")
    r = hs("log")
    assert r.exit_code == 0 and r.stdout.strip() == "no turns recorded yet"


def test_show_by_prefix_ambiguity_and_objects(hs: HS, make_turns: Callable[..., Path]) -> None:
    hs("init")
    hs("import", str(make_turns([turn_record(1), turn_record(2)])))
    r = hs("show", "turn-000")
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        "hs: error: 'turn-000' is ambiguous (2 matches); hint: give more characters of the id",
        "  turn sess-a~turn-0001",  # each one as it can be named
        "  turn sess-a~turn-0002",
    ]
    r = hs("show", "nothing-like-it")
    assert r.exit_code == 4 and "no turn, session or object matches" in r.stderr
    obj = hs.json_lines("show", "--json", "turn-0001")[0]["object"]
    r = hs("show", obj[:16])
    assert r.exit_code == 0 and r.stdout.startswith(f"turn {obj}")
    data = hs.json_lines("show", "--json", obj)[0]
    assert data["kind"] == "turn" and data["payload"]["turn_id"] == "turn-0001"


def test_show_full_and_raw(hs: HS, make_turns: Callable[..., Path]) -> None:
    hs("init")
    big = "line of a large file\n" * 100
    rec = turn_record(
        1,
        steps=[
            {"type": "user", "text": "read it", "at": None},
            {
                "type": "tool",
                "id": "t1",
                "name": "Read",
                "input": {"file_path": "a.py"},
                "output": big,
                "is_error": False,
                "at": None,
            },
            {"type": "assistant", "text": "done", "at": None, "model": "m"},
        ],
        raw=['{"a": 1}', '{"b": 2}'],
    )
    hs("import", str(make_turns([rec])))
    r = hs("show", "--full", "turn-0001")
    assert r.exit_code == 0
    assert "── tool Read" in r.stdout and "line of a large file" in r.stdout
    assert "── assistant" in r.stdout
    r = hs("show", "--raw", "turn-0001")
    assert r.stdout.splitlines() == ['{"a": 1}', '{"b": 2}']
    full = hs.json_lines("show", "--json", "--full", "turn-0001")[0]
    assert full["steps"][1]["output"] == big


def test_help_everywhere(hs: HS) -> None:
    r = hs("--help")
    assert r.exit_code == 0
    for cmd in ["init", "import", "record", "log", "show", "status", "fsck", "plumbing"]:
        assert cmd in r.stdout


def test_usage_error_exit_code(hs: HS) -> None:
    r = hs("log", "--no-such-flag")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr == (
        "hs: error: hs log: no such option: --no-such-flag; hint: see `hs log --help`\n"
    )


def test_no_bad_line_stops_an_import(hs: HS, tmp_path: Path) -> None:
    """Each of these lines is refused with its line number; the good ones import."""
    hs("init")
    good = json.dumps(turn_record(1))
    bad = [
        json.dumps(turn_record(2, asked_at="2026-13-45T00:00:00Z")),
        json.dumps(turn_record(3, asked_at="0001-01-01T00:00:00+01:00")),
        json.dumps(turn_record(4)).replace('"tainted": false', '"tainted": false, "x": NaN'),
        json.dumps(turn_record(5)).replace(
            '"tainted": false', '"tainted": false, "x": ' + "9" * 5000
        ),
        json.dumps(turn_record(6)).replace(
            '"tainted": false', '"tainted": false, "x": ' + "[" * 5000 + "]" * 5000
        ),
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([good, *bad, json.dumps(turn_record(7))]) + "\n")
    r = hs("import", str(path))
    assert r.exit_code == 1, r.stderr
    assert "turns: 2 added" in r.stdout
    for lineno in range(2, 7):
        assert f"{path}:{lineno}:" in r.stderr
    assert "internal error" not in r.stderr


def test_a_lone_surrogate_in_a_claude_file_imports(hs: HS, tmp_path: Path) -> None:
    hs("init")
    proj = tmp_path / "projects" / "-p"
    proj.mkdir(parents=True)
    line = json.dumps(
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": "s-1",
            "cwd": "/p",
            "isSidechain": False,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": "cut here \ud83d"},
        }
    )
    assert "\\ud83d" in line
    (proj / "s-1.jsonl").write_text(line + "\n")
    r = hs("import", str(tmp_path / "projects"))
    assert r.exit_code == 0 and "turns: 1 added" in r.stdout, r.stderr
    assert hs.json_lines("log", "--json")[0]["asked"] == "cut here \ufffd"


def test_since_out_of_range_is_bad_input(hs: HS) -> None:
    hs("init")
    r = hs("log", "--since", "99999999999y")
    assert r.exit_code == 2 and "--since" in r.stderr


def test_an_agent_name_that_misses_a_known_one_is_refused(hs: HS, tmp_path: Path) -> None:
    """--agent Codex (or a typo) matched nothing and said nothing: a near miss
    of a known agent is refused with the name it missed."""
    hs("init")
    hs("import", str(write_turns(tmp_path / "t.jsonl", [turn_record(1)])))
    for args in (["log"], ["export"], ["forgotten"], ["recall", "login_user", "--everywhere"]):
        r = hs(*args, "--agent", "Codex")
        assert r.exit_code == 2 and r.stdout == "", args
        assert r.stderr.startswith(
            "hs: error: --agent 'Codex': no such agent (did you mean 'codex'?)"
        )
        assert "claude-code" in r.stderr and len(r.stderr.splitlines()) == 1
    r = hs("log", "--agent", "claud-code")
    assert r.exit_code == 2 and "did you mean 'claude-code'?" in r.stderr
    # any other name is a filter (an agent whose turns came as turn JSONL)
    r = hs("log", "--agent", "aider")
    assert r.exit_code == 0 and r.stdout == "no turns match\n"
    # an agent hs knows, with no session here, is a filter that matches nothing
    r = hs("log", "--agent", "codex")
    assert r.exit_code == 0 and r.stdout == "no turns match\n"
    assert hs("log", "--agent", "hs").exit_code == 0


def test_an_ambiguous_session_operation_or_object_prefix_says_how_many_and_what_to_do(
    hs: HS,
) -> None:
    hs("init")
    for n, sid in enumerate(("s-alpha", "s-beta", "s-gamma")):
        assert hs("record", input=json.dumps(turn_record(n, session_id=sid))).exit_code == 0
    r = hs("export", "--session", "s-")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        "hs: error: session prefix 's-' is ambiguous (3 matches); "
        "hint: give more of the session id; see them with `hs log`\n"
        "  s-alpha\n  s-beta\n  s-gamma\n"
    )
    n = 3
    while True:  # operations until two share a first hex digit (17 at most)
        ops = [o["op"] for o in hs.json_lines("ops", "--json")]
        digit = next((d for d in "0123456789abcdef" if sum(o[0] == d for o in ops) > 1), None)
        if digit is not None:
            break
        assert hs("record", input=json.dumps(turn_record(n))).exit_code == 0
        n += 1
    shared = [o for o in ops if o.startswith(digit)]
    r = hs("undo", digit)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.splitlines()[0] == (
        f"hs: error: operation {digit!r} is ambiguous ({len(shared)} matches); "
        "hint: give more of the operation id; see them with `hs ops`"
    )
    assert sorted(r.stderr.splitlines()[1:]) == sorted(f"  {o}" for o in shared)[:10]
    assert hs("log", "--json", "-n", "100").exit_code == 0 and len(ops) == len(
        hs.json_lines("ops", "--json")
    )  # nothing undone
    seen: dict[str, bytes] = {}
    n = 0
    while True:  # two blobs whose ids share their first four hex digits
        data = f"blob {n}\n".encode()
        oid = hash_object("blob", data)
        if oid[:4] in seen:
            break
        seen[oid[:4]] = data
        n += 1
    pair = [
        hs.json_lines("plumbing", "hash-object", "-w", "-", input=d)[0]["id"]
        for d in (seen[oid[:4]], data)
    ]
    r = hs("plumbing", "cat-object", oid[:4])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        f"hs: error: object prefix {oid[:4]} is ambiguous (2 matches); "
        "hint: give more of the object id\n" + "".join(f"  {x}\n" for x in sorted(pair))
    )


def test_recall_from_a_directory_removed_under_it_says_so(
    hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hs("init")
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    r = hs("recall", "login_user")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        "hs: error: the current directory no longer exists: no project to look in; "
        "hint: cd to a project, or give --project DIR or --everywhere\n"
    )
    assert hs("recall", "--everywhere", "login_user").exit_code in (0, 1)


def test_a_prefix_of_many_turns_says_at_least_and_odd_bytes_search_nothing(
    hs: HS, make_turns: Callable[..., Path]
) -> None:
    """The summary hands at most 11 turns of a prefix: the count says
    "at least". An argument of bytes that are not UTF-8 matches nothing, and
    is no internal error, in show, log and export alike."""
    hs("init")
    hs("import", str(make_turns([turn_record(n) for n in range(1, 30)])))
    r = hs("show", "turn-00")
    assert r.exit_code == 2
    assert r.stderr.startswith("hs: error: 'turn-00' is ambiguous (at least 11 matches)")
    for args in (
        ["show", "ab\udcff"],
        ["log", "--agent", "\udcff"],
        ["export", "--agent", "\udcff"],
    ):
        r = hs(*args)
        assert r.exit_code in (0, 4) and "internal error" not in r.stderr, args


@pytest.mark.parametrize("summary", [True, False])
def test_status_counts_the_projects_the_turns_list(hs: HS, store_path: Path, summary: bool) -> None:
    """One session whose 12 turns are in 12 projects: the view lists 10 and
    says 2 more (it counted the session's one project, and said nothing)."""
    hs("init")
    recs = [turn_record(n, project=f"/home/dev/p{n:02d}") for n in range(1, 13)]
    for rec in recs:
        assert hs("record", input=json.dumps(rec)).exit_code == 0
    if not summary:
        (store_path / "local" / "summary.sqlite").unlink()
    r = hs("status")
    assert r.exit_code == 0
    assert "… and 2 more projects\n" in r.stdout
    info = hs.json_lines("status", "--json")[0]
    assert info["turn_projects"] == 12 and len(info["project_turns"]) == 10


def test_a_sessions_turns_are_listed_by_ids_show_takes(hs: HS) -> None:
    """Two turn ids alike in their first 12 characters: the session view
    printed both cut at 12, an id hs show refuses as ambiguous."""
    hs("init")
    for n, tid in enumerate(("019fc8be-3658-aaaa", "019fc8be-3658-bbbb"), 1):
        rec = turn_record(n, turn_id=tid, session_id="s-alike")
        assert hs("record", input=json.dumps(rec)).exit_code == 0
    r = hs("show", "s-alike")
    assert r.exit_code == 0
    ids = [ln.split()[0] for ln in r.stdout.splitlines() if ln.startswith("019fc8be")]
    assert len(ids) == 2 and len(set(ids)) == 2
    for short in ids:
        got = hs("show", short)
        assert got.exit_code == 0 and got.stdout.startswith("turn 019fc8be-3658-"), got.stderr


def test_a_warm_up_primed_with_warmup_shows_as_a_warm_up(hs: HS) -> None:
    hs("init")
    rec = turn_record(1, asked="Warmup", subagent="a1", extra={"warmup": True})
    assert hs("record", input=json.dumps(rec)).exit_code == 0
    r = hs("log", "--oneline")
    assert r.exit_code == 0 and "(sub-agent warm-up)" in r.stdout and "Warmup" not in r.stdout
