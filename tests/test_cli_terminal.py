"""What a person at a terminal sees (issue 18): the pager, colour, Ctrl-C.

Each of these depends on a terminal, so the commands run on a pseudo-terminal
(tests/ptytools.py), with a fake pager (a shell command that writes what it
is given to a file) where one is wanted; the same commands on a pipe are
checked in-process. Exact bytes are compared: what a person sees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import HS, turn_record, write_turns
from ptytools import prompt_then_ctrl_c, views

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo" / "claude-projects"

Y, B, C, M, RED, END = "\x1b[33m", "\x1b[34m", "\x1b[36m", "\x1b[35m", "\x1b[1;31m", "\x1b[0m"


@pytest.fixture
def demo(hs: HS) -> list[dict[str, object]]:
    """The demo store (docs/cli.md's examples): its turns, newest first."""
    assert hs("init").exit_code == 0
    assert hs("import", str(DEMO)).exit_code == 0
    return hs.json_lines("log", "--json")


def _first_line(turn: dict[str, object]) -> str:
    """``hs log --oneline``'s line for the demo's newest turn, in colour."""
    return (
        f"{Y}{str(turn['turn_id'])[:12]}{END}  {B}2026-11-03 16:10{END}  "
        f"{Y}8a4d2c6e{END}  {M}claude-code{END}  Also run the full suite\n"
    )


def test_long_output_goes_through_the_pager_on_a_terminal(
    demo: list[dict[str, object]], tmp_path: Path
) -> None:
    f = {i: tmp_path / f"paged-{i}.txt" for i in range(12)}
    sid = "8a4d2c6e-1f3b-4d5a-8c7e-2b9d0f1a3c52"
    less_env = f'printf "%s" "$LESS" > {f[9]}; cat > /dev/null'
    runs: list[tuple[dict[str, str | None], list[str]]] = [
        ({"HS_PAGER": f"cat > {f[0]}"}, ["log", "--oneline"]),
        ({"HS_PAGER": f"cat > {f[1]}"}, ["-P", "log", "--oneline"]),
        ({"HS_PAGER": f"cat > {f[2]}"}, ["log", "--oneline", "--no-pager"]),
        ({"HS_PAGER": None, "PAGER": f"cat > {f[3]}"}, ["show", sid]),
        ({"HS_PAGER": f"cat > {f[4]}", "PAGER": f"cat > {f[5]}"}, ["ops"]),
        ({"HS_PAGER": f"cat > {f[6]}"}, ["show", "nope"]),
        ({"HS_PAGER": f"cat > {f[7]}"}, ["status"]),
        ({"HS_PAGER": f"cat > {f[8]}"}, ["log", "--json", "-n", "1"]),
        ({"HS_PAGER": less_env, "LESS": None}, ["log", "-n", "1"]),
        ({"HS_PAGER": f'printf "%s" "$LESS" > {f[10]}', "LESS": "-R"}, ["log", "-n", "1"]),
        ({"HS_PAGER": f"cat > {f[11]}", "TERM": "dumb"}, ["log", "--oneline", "-n", "1"]),
        ({"HS_PAGER": "cat"}, ["log", "--oneline", "-n", "1"]),
    ]
    out = views(runs)
    first = _first_line(demo[0])
    # paged: the terminal gets nothing of stdout, the pager all of it, in colour
    assert out[0] == ("", 0)
    assert f[0].read_text().startswith(first) and f[0].read_text().count("\n") == 5
    # -P before the command, --no-pager after it: straight to the terminal
    assert out[1] == (f[0].read_text(), 0) and not f[1].exists()
    assert out[2] == (f[0].read_text(), 0) and not f[2].exists()
    # $PAGER when $HS_PAGER is not set; $HS_PAGER first when both are
    assert out[3][1] == 0 and out[3][0] == ""
    assert f[3].read_text().startswith(f"session {Y}{sid}{END}\n")
    assert out[4] == ("", 0) and f[4].read_text().count("\n") == 2 and not f[5].exists()
    # an error before any output: one line on the terminal, no pager started
    assert out[5] == (
        "hs: error: no turn, session or object matches 'nope'; "
        "hint: see turn and session ids with `hs log`\n",
        4,
    )
    assert not f[6].exists()
    # not a listing, or not for people: never paged
    assert out[6][1] == 0 and out[6][0].startswith("store:") and not f[7].exists()
    assert json.loads(out[7][0])["turn_id"] == demo[0]["turn_id"] and not f[8].exists()
    # LESS=FRX unless LESS is set (as git does)
    assert out[8] == ("", 0) and f[9].read_text() == "FRX"
    assert out[9] == ("", 0) and f[10].read_text() == "-R"
    # TERM=dumb: no pager, no colour; HS_PAGER=cat: no pager
    assert out[10] == (
        f"{str(demo[0]['turn_id'])[:12]}  2026-11-03 16:10  8a4d2c6e  "
        "claude-code  Also run the full suite\n",
        0,
    )
    assert not f[11].exists()
    assert out[11] == (first, 0)


def test_a_pager_quit_early_ends_the_command_quietly(hs: HS, tmp_path: Path) -> None:
    """``q`` in less before the end: the rest is dropped, no BrokenPipe
    traceback, the command's own exit code (0). The output is larger than a
    pipe holds, so writing to the pager that is gone fails for certain."""
    big = "line of a long answer\n" * 20_000  # 440 KB
    path = write_turns(tmp_path / "t.jsonl", [turn_record(1, answered=big)])
    assert hs("init").exit_code == 0 and hs("import", str(path)).exit_code == 0
    head = tmp_path / "head.txt"
    out = views(
        [
            ({"HS_PAGER": "true"}, ["show", "turn-0001"]),
            ({"HS_PAGER": f"head -c 100 > {head}"}, ["show", "turn-0001"]),
            ({"HS_PAGER": "exit 3"}, ["log"]),
        ]
    )
    assert out == [("", 0), ("", 0), ("", 0)]
    got = head.read_bytes()
    assert len(got) == 100 and got.startswith(f"turn {Y}turn-0001{END}\nSession: ".encode())


def test_colour_on_a_terminal_unless_no_color_or_asked_otherwise(
    demo: list[dict[str, object]],
) -> None:
    first = _first_line(demo[0])
    plain = first.replace(Y, "").replace(B, "").replace(M, "").replace(END, "")
    line = ["-P", "log", "--oneline", "-n", "1"]
    out = views(
        [
            ({}, line),
            ({"NO_COLOR": "1"}, line),
            ({"NO_COLOR": ""}, line),  # set but empty: not asked for
            ({}, ["--color", "never", *line]),
            ({"NO_COLOR": "1"}, [*line, "--color", "always"]),
            ({}, ["-P", "recall", "-e", "login_user", "EXPIRY"]),
            ({}, ["-P", "log", "--oneline", "--grep", "CHECKOUT"]),
            ({}, ["lgo"]),
            ({}, ["log", "--jsno"]),
        ]
    )
    assert out[:5] == [(first, 0), (plain, 0), (first, 0), (plain, 0), (first, 0)]
    text, rc = out[5]
    assert rc == 0
    assert text.splitlines()[:3] == [
        f"{B}2026-10-12{END}  session {Y}5f0c1e7a{END}  turn {Y}64a19766-0fc{END}  "
        f"{M}claude-code{END}",
        f"  project: {C}/home/dev/src/webshop{END}",
        f"  in the prompt: Sessions never expire after login. How should {RED}login_user{END} "
        f"handle "
        f"token {RED}expiry{END}?",
    ]
    text, rc = out[6]
    assert rc == 0 and f"The {RED}checkout{END} tests fail on CI." in text
    assert text.count("\n") == 1
    # a usage error on a terminal: one line, as on a pipe (no box)
    assert out[7] == ("hs: error: no such command 'lgo'; hint: did you mean 'log'?\n", 2)
    assert out[8] == ("hs: error: hs log: no such option: --jsno; hint: did you mean --json?\n", 2)


def test_on_a_pipe_no_colour_and_no_pager_unless_asked(
    hs: HS, demo: list[dict[str, object]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paged = tmp_path / "paged.txt"
    monkeypatch.setenv("HS_PAGER", f"cat > {paged}")
    first = _first_line(demo[0])
    plain = first.replace(Y, "").replace(B, "").replace(M, "").replace(END, "")
    r = hs("log", "--oneline", "-n", "1")
    assert (r.exit_code, r.stdout, r.stderr) == (0, plain, "")
    r = hs("--color", "always", "log", "--oneline", "-n", "1")
    assert (r.exit_code, r.stdout, r.stderr) == (0, first, "")
    assert not paged.exists()
    r = hs("log", "--color", "sometimes")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == (
        "hs: error: hs log: invalid value for '--color': 'sometimes' is not one of "
        "'auto', 'always', 'never'; hint: see `hs log --help`\n"
    )


def test_colour_never_lets_a_stored_escape_through(hs: HS, tmp_path: Path) -> None:
    """A match marked inside stored escapes: the escapes are shown first
    (``^[``), the only raw ESC bytes are the colours around the match."""
    asked = "run \x1b]0;pwned\x07 then \x1b[31mpwned\x1b[0m"
    path = write_turns(tmp_path / "t.jsonl", [turn_record(1, asked=asked)])
    assert hs("init").exit_code == 0 and hs("import", str(path)).exit_code == 0
    r = hs("--color", "always", "log", "--oneline", "--grep", "pwned")
    assert r.exit_code == 0
    assert r.stdout.endswith(f"run ^[]0;{RED}pwned{END}^G then ^[[31m{RED}pwned{END}^[[0m\n"), (
        r.stdout
    )
    # recall marks whole tokens, as it matches them: "31mpwned" is one token
    r = hs("--color", "always", "recall", "-e", "pwned")
    assert f"\n  in the prompt: run ^[]0;{RED}pwned{END}^G then ^[[31mpwned^[[0m\n" in r.stdout


@pytest.mark.parametrize("case", ["forget", "memory write", "push --init question"])
def test_ctrl_c_at_a_prompt_exits_130_and_changes_nothing(
    hs: HS, demo: list[dict[str, object]], tmp_path: Path, store_path: Path, case: str
) -> None:
    mem = tmp_path / "memory"
    mem.mkdir()
    env = {"MEMORY_DIR": str(mem)}
    if case == "forget":
        args, asks = ["forget", "5f0c1e7a"], b"type the session id to confirm []:"
    elif case == "memory write":
        body = "Use tabs.\n\n**Why:** gofmt.\n\n**How to apply:** always."
        args = ["memory", "write", "--type", "feedback", "--slug", "tabs", "--name", "Tabs"]
        args += ["--description", "Indent with tabs", "--body", body]
        asks = b"write it? [y/N]:"
    else:
        assert hs("remote", "add", "usb", str(tmp_path / "usb")).exit_code == 0
        args, asks = ["push", "usb"], b"create one there? [y/N]:"
    log = (store_path / "refs.log").read_bytes()
    out, rc = prompt_then_ctrl_c(args, asks, env)
    assert rc == 130
    assert out.endswith(asks.decode() + " \nhs: interrupted\n"), out
    assert "Aborted" not in out and "Traceback" not in out
    assert (store_path / "refs.log").read_bytes() == log
    assert list(mem.iterdir()) == [] and not (tmp_path / "usb").exists()
