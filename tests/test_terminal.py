"""Stored text never acts on the terminal (issue 16): every human view shows its
control characters as printable text (histstore.display); --json and --raw
stay exact.

Fault: a turn holding ``ESC[2J`` and ``ESC]0;title BEL`` cleared the screen and
retitled the tmux pane when ``hs log --oneline`` printed it; real samples emit
``^[[1m`` through ``hs show --full``. Escapes were stripped only on a pipe, by
accident (click strips some ANSI sequences when stdout is no terminal), so the
views are checked here through a pseudo-terminal."""

from __future__ import annotations

import ast
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import HS, turn_record
from ptytools import raw_output, read_all

from histstore.display import visible

ROOT = Path(__file__).resolve().parents[1]

# Every kind of sequence that acts on a terminal: clear screen, set title (OSC,
# ended by BEL and by ST), write the clipboard (OSC 52), SGR bold and blink,
# cursor moves, a carriage return and backspaces that print over text, DEL, NUL,
# a vertical tab and form feed, C1 CSI (U+009B) and NEL (U+0085), a bidi override
# and isolate, a line separator.
HOSTILE = (
    "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b]2;pwned\x1b\\\x1b]52;c;ZXZpbA==\x07"
    "\x1b[1mbold\x1b[5m\x1b[0m\x1b[10A\rover\x08\x08\x7f\x00\x0b\x0c"
    "\x9b31m\x85\u202eevil\u2066x\u2069\u2028end"
)
SHOWN = "^[[2J"  # how the first sequence looks in a human view

# what may never reach the terminal from stored text: C0 but LF and TAB, DEL,
# C1, the bidi controls and the line/paragraph separators
FORBIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
)


def test_visible_shows_every_control_character() -> None:
    assert visible("a\x1b[2Jb") == "a^[[2Jb"
    assert visible("\x07\x00\x7f\r\x08") == "^G^@^?^M^H"
    assert visible("line\r\nnext\tcol\n") == "line\nnext\tcol\n"  # CR LF is a line end
    assert visible("\x9b31m\x85") == "\\x9b31m\\x85"
    assert visible("\u202eevil\u2028") == "\\u202eevil\\u2028"
    assert visible("one\nfield\t", lines=False) == "one^Jfield^I"
    assert visible("plain ünïcode → ok") == "plain ünïcode → ok"
    # every code point where a control is (and a few beyond): nothing that
    # acts on a terminal is left, and applying it again changes nothing
    every = "".join(map(chr, (*range(0x3000), *range(0xFFF0, 0x10000), 0x1F600, 0x10FFFF)))
    for lines in (True, False):
        once = visible(every, lines=lines)
        assert not FORBIDDEN.search(once)
        assert visible(once, lines=lines) == once
    assert "\n" not in visible(every, lines=False)


def _hostile_store(hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A store whose every stored string a view prints holds HOSTILE."""
    steps = [
        {"type": "user", "text": "user " + HOSTILE},
        {"type": "thinking", "text": "thinking " + HOSTILE},
        {
            "type": "tool",
            "id": "x",
            "name": "Bash" + HOSTILE,
            "input": {"command": "ls " + HOSTILE},
            "output": "output " + HOSTILE,
            "is_error": False,
            "at": None,
        },
        {"type": "assistant", "text": "assistant " + HOSTILE},
    ]
    hostile = turn_record(
        1,
        session_id="sess-hostile",
        project="/home/dev/" + HOSTILE,
        asked="zebraword asked " + HOSTILE,
        answered="answered " + HOSTILE,
        files=["read" + HOSTILE],
        edited=["edit" + HOSTILE],
        tools={"Bash" + HOSTILE: 2},
        model="model" + HOSTILE,
        agent="agent" + HOSTILE,
        subagent="sub" + HOSTILE,
        steps=steps,
        raw=[json.dumps({"raw": HOSTILE}, ensure_ascii=False)],
    )
    gone = turn_record(2, session_id="sess-gone", asked="tombstoned " + HOSTILE)
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (hostile, gone)))
    assert hs("init").exit_code == 0
    assert hs("import", str(path)).exit_code == 0
    r = hs("forget", "turn-0002", "--confirm", "turn-0002", "--reason", "reason " + HOSTILE)
    assert r.exit_code == 0, r.stderr
    mem = tmp_path / "memory"
    mem.mkdir()
    monkeypatch.setenv("MEMORY_DIR", str(mem))  # the pseudo-terminal's process inherits it
    note = HOSTILE.replace("\x00", "")  # a note is a text file: no NUL
    body = f"rule {note}\n\n**Why:** because {note}\n\n**How to apply:** always {note}"
    for desc, more in (("first", ""), ("second", " again")):
        r = hs(
            "memory",
            "write",
            "--type",
            "project",
            "--slug",
            "esc",
            "--name",
            "Escapes",
            "--description",
            desc,
            "--body",
            body + more,
            *(("--revise", "esc") if more else ()),
            "--yes",
        )
        assert r.exit_code == 0, r.stderr
    obj = _json_lines(hs, "log", "--json", "--session", "sess-hostile")[0]["object"]
    return {"object": obj, "memory": str(mem)}


def _json_lines(hs: HS, *args: str) -> list[Any]:
    """JSON lines split at LF only (str.splitlines would also split at the raw
    U+0085 and U+2028 that --json keeps exact)."""
    r = hs(*args)
    assert r.exit_code == 0, r.stderr
    return [json.loads(line) for line in r.stdout.split("\n") if line.strip()]


DRIVER = """
import json, sys
import typer
from histstore.porcelain.cli import app
command = typer.main.get_command(app)
for i, args in enumerate(json.loads(sys.argv[1])):
    sys.stdout.write(f"\\n=== view {i}\\n")
    sys.stdout.flush()
    try:
        rc = command.main(args, prog_name="hs", standalone_mode=False)
    except SystemExit as e:
        rc = e.code
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout.write(f"\\n=== exit {rc or 0}\\n")
    sys.stdout.flush()
"""


def _through_a_terminal(views: list[list[str]]) -> list[tuple[bytes, int]]:
    """Each view's output (stdout and stderr, as a terminal gets them) and its
    exit code, from one process whose stdout and stderr are a pseudo-terminal
    (output post-processing off, so a CR reaching it is one the command wrote)."""
    master, slave = pty.openpty()
    raw_output(slave)
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, json.dumps(views)],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        cwd=ROOT,
    )
    os.close(slave)
    out = read_all(master)
    os.close(master)
    assert proc.wait(timeout=60) == 0, bytes(out[-2000:])
    parts = re.split(rb"\n=== view \d+\n", bytes(out))[1:]
    assert len(parts) == len(views), bytes(out[-2000:])
    result = []
    for part in parts:
        body, _, rc = part.rpartition(b"\n=== exit ")
        result.append((body, int(rc.strip())))
    return result


# the only escapes a view writes on its own: the colours of
# histstore.plumbing.term, each around a piece of text already made visible
_OWN_COLOURS = re.compile(rb"\x1b\[(?:33|34|35|36|1;31|32|31|1|0)m")


def test_no_view_lets_stored_text_act_on_the_terminal(
    hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _hostile_store(hs, tmp_path, monkeypatch)
    # (view, arguments, whether it prints the hostile text (or how), the exit code)
    views: list[tuple[str, list[str], bool | str, int]] = [
        ("log", ["log"], True, 0),
        ("log --oneline", ["log", "--oneline"], True, 0),
        ("log --all", ["log", "--all"], True, 0),
        ("log --grep", ["log", "--oneline", "--grep", "pwned"], True, 0),
        ("show", ["show", "turn-0001"], True, 0),
        ("show --full", ["show", "--full", "turn-0001"], True, 0),
        ("show --all of a tombstone", ["show", "--all", "turn-0002"], True, 0),
        ("show a session", ["show", "sess-hostile"], True, 0),
        ("show an object", ["show", ids["object"]], "\\u001b[2J", 0),
        ("recall", ["recall", "--everywhere", "zebraword", "pwned"], True, 0),
        ("export markdown", ["export", "--format", "markdown"], True, 0),
        ("forgotten", ["forgotten"], True, 0),
        ("forget --list", ["forget", "--list"], True, 0),
        ("ops", ["ops"], False, 0),
        ("status", ["status"], False, 0),
        ("fsck", ["fsck"], False, 0),
        ("memory show", ["memory", "show", "project_esc.md"], True, 0),
        ("memory log", ["memory", "log"], False, 0),
        ("memory diff", ["memory", "diff"], "\\u202eevil", 0),
        ("memory check", ["memory", "check"], False, 0),
        ("memory scan", ["memory", "scan"], False, 0),
        ("an error quoting an argument", ["show", "\x1b[2Jnope\x07"], "\\x1b[2J", 4),
        (
            "an error quoting a file",
            ["memory", "write", "--from", str(tmp_path / "x\x1b[2J\x07.md")],
            True,
            4,
        ),
    ]
    # each view twice: in colour (a terminal: on by default), and without
    plain = [["--color", "never", *args] for _, args, _, _ in views]
    results = _through_a_terminal(plain + [args for _, args, _, _ in views])
    for i, (name, _args, shows, code) in enumerate(views):
        out, rc = results[i]
        coloured, crc = results[len(views) + i]
        assert rc == code and crc == code, (name, out[-500:])
        raw = FORBIDDEN.search(out.decode("utf-8"))
        assert raw is None, f"{name} let {raw.group()!r} reach the terminal: {out[:300]!r}"
        if shows:
            shown = shows if isinstance(shows, str) else SHOWN
            assert shown.encode() in out, f"{name} did not show the text: {out[:300]!r}"
        # colour adds our own codes around visible text, and nothing else
        assert _OWN_COLOURS.sub(b"", coloured) == out, name
    coloured_views = {
        views[i][0] for i in range(len(views)) if b"\x1b[" in results[len(views) + i][0]
    }
    assert {"log", "log --grep", "show", "recall", "ops", "memory diff"} <= coloured_views


def test_json_and_raw_stay_exact(hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = _hostile_store(hs, tmp_path, monkeypatch)
    r = hs("show", "--json", ids["object"])
    assert r.exit_code == 0 and "\u2028end" in r.stdout  # written as it is, as every --json
    row = _json_lines(hs, "log", "--json", "--session", "sess-hostile")[0]
    assert row["asked"] == "zebraword asked " + HOSTILE
    assert row["edited"] == ["edit" + HOSTILE]
    full = _json_lines(hs, "show", "--full", "--json", "turn-0001")[0]
    assert full["steps"][2]["output"] == "output " + HOSTILE
    r = hs("show", "--raw", "turn-0001")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout == json.dumps({"raw": HOSTILE}, ensure_ascii=False) + "\n"
    exported = _json_lines(hs, "export")
    assert exported[0]["answered"] == "answered " + HOSTILE
    note = _json_lines(hs, "memory", "show", "--json", "project_esc.md")[0]
    assert HOSTILE.replace("\x00", "") in note["text"]
    reason = _json_lines(hs, "forgotten", "--json")[0]["reason"]
    assert "\x1b]0;pwned\x07" in reason


def test_a_human_view_shows_what_the_json_holds(
    hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The text is shown, made visible, not dropped."""
    _hostile_store(hs, tmp_path, monkeypatch)
    r = hs("log", "--oneline", "--session", "sess-hostile")
    assert r.exit_code == 0 and r.stderr == ""
    assert "zebraword asked ^[[2J^[[H^[]0;pwned^G" in r.stdout
    r = hs("show", "turn-0001")
    assert r.exit_code == 0
    assert "Edited:  edit^[[2J" in r.stdout
    assert "^M" in r.stdout and "\\x9b31m" in r.stdout and "\\u202eevil" in r.stdout


def _first_function(tree: ast.Module) -> dict[int, str]:
    """Line of every node -> the top-level function it is in."""
    where: dict[int, str] = {}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef):
            for node in ast.walk(fn):
                if hasattr(node, "lineno"):
                    where[node.lineno] = fn.name
    return where


#: where the porcelain prints exact bytes: --raw records, export output (the
#: library made markdown visible), and the diff's lines (made visible, then
#: coloured)
EXACT = {("reads_cmd.py", "_show_turn"), ("cli.py", "export"), ("memory_cli.py", "diff")}


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "porcelain").glob("*.py")))
def test_human_views_print_only_through_say(name: str) -> None:
    """Every typer.echo of the porcelain (and every call of render's
    ``raw_line``, its typer-free twin) prints JSON, or is one of EXACT, or is
    render.say itself: anything else would print stored text as it is."""
    tree = ast.parse((ROOT / "porcelain" / name).read_text())
    where = _first_function(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        echo = (
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "echo"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "typer"
        )
        if not (echo or (isinstance(node.func, ast.Name) and node.func.id == "raw_line")):
            continue
        fn = where.get(node.lineno, "")
        first: Any = node.args[0] if node.args else None
        is_json = (
            isinstance(first, ast.Call)
            and isinstance(first.func, ast.Attribute)
            and first.func.attr == "dumps"
        )
        made_visible = (
            isinstance(first, ast.Call)
            and isinstance(first.func, ast.Name)
            and first.func.id == "visible"
        )
        assert is_json or made_visible or (name, fn) in EXACT, (
            f"porcelain/{name}:{node.lineno} ({fn}) prints with typer.echo: use say()"
        )


def test_only_a_line_feed_starts_a_line_in_a_view(hs: HS, tmp_path: Path) -> None:
    """str.splitlines breaks at CR, VT, FF, FS…, NEL, U+2028/9: a view split
    stored text there and started real lines. Only LF (or CR LF) ends a line;
    every other separator shows where it is, and a one-line field (an agent,
    a path) never starts a line."""
    text = "a\rb\x0bc\x0cd\x1ce\u2028f\u2029g\x85h"
    rec = turn_record(1, turn_id="t-sep", asked=text, answered="x\r\ny", agent="my\nagent")
    rec["files"] = ["src/a\nb.py"]
    hs("init")
    assert hs("record", input=json.dumps(rec)).exit_code == 0
    shown = visible(text)
    assert "\n" not in shown
    r = hs("show", "t-sep")
    assert r.exit_code == 0 and f"    {shown}\n" in r.stdout, r.stdout
    assert "    x\n    y\n" in r.stdout  # CR LF is a line end
    one = hs("log", "--oneline")
    assert one.exit_code == 0 and one.stdout.count("\n") == 1 and "my^Jagent" in one.stdout
    md = hs("export", "--format", "markdown")
    assert md.exit_code == 0
    assert f"> {shown}\n" in md.stdout
    assert "agent: my^Jagent" in md.stdout and "`src/a^Jb.py`" in md.stdout
    assert hs("forget", "t-sep", "--confirm", "t-sep").exit_code == 0
    gone = hs("forgotten")
    assert gone.exit_code == 0 and "of my^Jagent)" in gone.stdout
