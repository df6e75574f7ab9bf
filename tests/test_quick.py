"""The quick path (histstore.porcelain.quick): `hs log`, `hs show`, `hs status`
and `hs recall` without typer print exactly what the full CLI prints, with
the same exit code, for every argument they know; anything else is left to
the full CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HS, turn_record, write_turns

from histstore.porcelain.quick import Spec, dispatch, parse
from histstore.porcelain.reads_cmd import LOG, SHOW, STATUS


@pytest.fixture
def filled(hs: HS, tmp_path: Path) -> Path:
    """Two projects, two agents, a tombstoned and an excluded turn."""
    recs = [
        turn_record(1, session_id="s-app", project="/home/dev/app", asked="login_user expiry"),
        turn_record(2, session_id="s-app", project="/home/dev/app", answered="refresh tokens"),
        turn_record(3, session_id="s-cx", project="/home/dev/app", agent="codex", asked="cache"),
        turn_record(4, session_id="s-other", project="/home/dev/other", asked="zebra"),
        turn_record(5, session_id="s-other", project="/home/dev/other", asked="secret plan"),
    ]
    assert hs("init").exit_code == 0
    assert hs("import", str(write_turns(tmp_path / "t.jsonl", recs))).exit_code == 0
    for turn, mode in (("turn-0004", []), ("turn-0005", ["--exclude"])):
        r = hs("forget", turn, "--confirm", turn, *mode)
        assert r.exit_code == 0, r.stderr
    return Path(os.environ["HISTORY_DIR"])


def _object_of(hs: HS, turn: str) -> str:
    (out,) = hs.json_lines("show", "--json", turn)
    return str(out["object"])


CASES = [
    ["log"],
    ["log", "--oneline"],
    ["log", "--json"],
    ["log", "-n", "2"],
    ["log", "--max-count=1", "--oneline"],
    ["log", "-n", "-1"],
    ["log", "--since", "2w"],
    ["log", "--since", "soon"],
    ["log", "--grep", "LOGIN"],
    ["log", "--agent", "codex"],
    ["log", "--agent", "codx"],
    ["log", "--project", "other", "--all"],
    ["log", "--project", "/home/dev/app/"],
    ["log", "--session", "s-app", "--json"],
    ["log", "--color", "always", "-P"],
    ["log", "--color=never", "--no-pager", "--oneline"],
    ["show", "turn-0001"],
    ["show", "--full", "turn-0002"],
    ["show", "turn-0003", "--json"],
    ["show", "--json", "--full", "turn-0001"],
    ["show", "--raw", "turn-0001"],
    ["show", "turn-0004"],
    ["show", "--all", "turn-0004"],
    ["show", "--all", "--json", "turn-0005"],
    ["show", "s-other"],
    ["show", "s-app", "--json"],
    ["show", "turn-9999"],
    ["show", "turn-"],
    ["show", "--color", "always", "turn-0001"],
    ["status"],
    ["status", "--json"],
    ["recall", "-e", "login_user"],
    ["recall", "--everywhere", "--json", "-k", "1", "refresh"],
]


def test_the_quick_path_prints_what_the_cli_prints(
    hs: HS, filled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [*CASES, ["show", _object_of(hs, "turn-0001")], ["show", "--json", "0" * 64]]
    for args in cases:
        want = hs(*args)
        capsys.readouterr()
        code = dispatch(["--store", str(filled), *args])
        got = capsys.readouterr()
        assert code is not None, args
        assert (code, got.out, got.err) == (want.exit_code, want.stdout, want.stderr), args
    # the store given the other ways, or by $HISTORY_DIR
    for head in (["-C", str(filled)], [f"--store={filled}"], []):
        want = hs("log", "--oneline")
        capsys.readouterr()
        assert dispatch([*head, "log", "--oneline"]) == 0
        assert capsys.readouterr().out == want.stdout


def test_a_store_that_is_not_there_fails_as_in_the_cli(
    hs: HS, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """And a bad count is refused before the store is opened, as there."""
    for args in (["log"], ["show", "x"], ["status"], ["log", "-n", "-1"]):
        where = ["--store", str(tmp_path / "nowhere")]
        want = hs(*where, *args)
        capsys.readouterr()
        code = dispatch([*where, *args])
        got = capsys.readouterr()
        assert want.exit_code != 0 and got.err.startswith("hs: error: ")
        assert (code, got.out, got.err) == (want.exit_code, want.stdout, want.stderr), args


@pytest.mark.parametrize(
    "argv",
    [
        ["log", "--help"],
        ["log", "-n", "x"],
        ["log", "-n5"],
        ["log", "-n"],
        ["log", "--bogus"],
        ["log", "extra"],
        ["log", "--", "x"],
        ["log", "--json=1"],
        ["log", "--since", ""],  # an empty value: the full CLI refuses it
        ["log", "--session=  "],
        ["recall", "--project", "", "login"],
        ["show"],
        ["show", "a", "b"],
        ["show", "--full"],
        ["status", "extra"],
        ["status", "--color", "purple"],
        ["-P", "log"],
        ["--break-lock", "status"],
        ["--store=", "log"],
        ["-C", "", "status"],
        ["plumbing", "log"],
        ["memory", "show", "x"],
        ["-C", "/s", "memory", "log"],
        ["import"],
        [],
    ],
)
def test_what_the_quick_path_does_not_know_goes_to_the_full_cli(argv: list[str]) -> None:
    assert dispatch(argv) is None


def test_the_parse_of_each_command() -> None:
    unset = {"color": None, "no_pager": False}
    assert parse(["-C", "/s", "log", "-n", "3", "--oneline", "--grep=a b"], "log", LOG) == (
        "/s",
        {
            "session": None,
            "project": None,
            "since": None,
            "n": 3,
            "oneline": True,
            "grep": "a b",
            "all_": False,
            "agent": None,
            "json_out": False,
            **unset,
        },
    )
    assert parse(["show", "--all", "abc"], "show", SHOW) == (
        None,
        {"full": False, "raw": False, "all_": True, "json_out": False, "ident": "abc", **unset},
    )
    assert parse(["status", "-P"], "status", STATUS) == (
        None,
        {"json_out": False, "color": None, "no_pager": True},
    )


#: the prefix of a child script that runs ``hs`` in-process, each command
#: exiting 0: ``run('status')`` (the child's modules and collector are then
#: what a process of that command has)
RUN_MAIN = (
    "import sys\n"
    "from histstore.porcelain.entry import main\n"
    "def run(*argv):\n"
    "    sys.argv = ['hs', *argv]\n"
    "    try:\n"
    "        main()\n"
    "    except SystemExit as e:\n"
    "        assert e.code == 0, (argv, e.code)\n"
)


def run_child(code: str) -> str:
    """Run a child script (after RUN_MAIN); its stdout, once it exited 0 and said nothing on stderr."""
    r = subprocess.run(
        [sys.executable, "-c", RUN_MAIN + code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return r.stdout


def test_the_quick_commands_as_a_process_never_load_typer_or_inspect(filled: Path) -> None:
    """What the quick path is for: the start-up of typer and the app; and of
    inspect (with ast, dis, tokenize), which dataclasses imports and runs only
    for a class without a docstring (porcelain/entry.py, and
    tests/test_layers.py for the docstrings)."""
    out = run_child(
        "for argv in (['log', '--oneline'], ['show', 'turn-0001'], ['status'],\n"
        "             ['recall', '--everywhere', 'login_user']):\n"
        "    run(*argv)\n"
        "assert 'typer' not in sys.modules, 'typer was loaded'\n"
        "assert sys.version_info >= (3, 12) or 'dis' not in sys.modules, 'inspect was run'\n"
        "import dataclasses, inspect\n"
        "assert dataclasses.inspect.signature is inspect.signature  # the real one, once used\n"
    )
    # what each printed: the log (four turns, one forgotten: all five named), the turn
    # shown, the status, the hit
    assert sum("turn-000" in line for line in out.splitlines()[:5]) == 5
    assert "turn turn-0001" in out and "sessions:" in out
    assert "in the prompt: login_user expiry" in out


def test_a_quick_command_sets_the_collector_for_a_short_process(filled: Path) -> None:
    """porcelain/entry.py ``quick``: a quick command runs with the collector's
    first threshold raised (its start-up collects nothing) and freezes what
    it holds once done (the exit passes over none of it); a command the full
    CLI runs gets the collector as it was, nothing frozen."""
    out = run_child(
        "import gc\n"
        "from histstore.porcelain.entry import QUICK_GC_THRESHOLD\n"
        "before = gc.get_threshold()\n"
        "run('status', '--help')  # the full CLI\n"
        "assert gc.get_threshold() == before and gc.get_freeze_count() == 0\n"
        "run('status')\n"
        "assert gc.get_threshold() == (QUICK_GC_THRESHOLD, *before[1:]), gc.get_threshold()\n"
        "assert gc.isenabled() and gc.get_freeze_count() > 0\n"
    )
    assert "sessions:" in out  # the status was printed


def test_the_specs_field_types_are_no_strings_to_compile() -> None:
    """porcelain/quick.py has no ``from __future__ import annotations``: Spec's
    field types as strings would each be compiled by typing.NamedTuple, ~1 ms
    of every quick command's start-up."""
    assert not [t for t in Spec.__annotations__.values() if isinstance(t, str)]


def test_hs_recall_as_a_process_loads_only_what_a_search_needs(filled: Path) -> None:
    """What docs/architecture.md "Start-up time" says hs recall leaves
    unloaded, with an index caught up: the summary (with sqlite3; only an
    --agent is checked against it) and shutil (with zlib, bz2, lzma: only
    index writers remove)."""
    code = (
        "run('recall', '--everywhere', 'login_user')\n"
        "unwanted = ('sqlite3', 'shutil', 'histstore.history.summary')\n"
        "print(sorted(set(unwanted) & set(sys.modules)))\n"
    )
    run_child(code)  # the index caught up
    out = run_child(code)
    assert "in the prompt: login_user expiry" in out
    assert out.splitlines()[-1] == "[]", out


def test_json_reaches_a_stdout_that_cannot_encode_it(filled: Path, hs: HS) -> None:
    """As typer.echo writes it (UTF-8 where the stream's encoding cannot hold
    the text), from the quick path and from the full CLI alike."""
    r = hs("import", str(write_turns(filled.parent / "u.jsonl", [turn_record(9, asked="café")])))
    assert r.exit_code == 0, r.stderr
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    runs = [
        [sys.executable, "-m", "histstore.porcelain.entry", *args]
        for args in (["show", "--json", "turn-0009"], ["log", "--json", "-n", "1"])
    ] + [[sys.executable, "-m", "histstore.porcelain.cli", "show", "--json", "turn-0009"]]
    outs = []
    for argv in runs:
        p = subprocess.run(argv, capture_output=True, env=env, timeout=60, check=False)
        assert p.returncode == 0 and p.stderr == b"", p.stderr
        outs.append(p.stdout)
    assert "café".encode() in outs[0] and outs[0] == outs[2]
    assert "café".encode() in outs[1]
