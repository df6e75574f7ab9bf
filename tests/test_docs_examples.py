"""docs/cli.md's examples are real runs (issue 18): they cannot go stale.

A block preceded by ``<!-- example: STATE -->`` is run: a store is made in
STATE (:data:`STATES`, from the demo sessions ``make demo`` imports), with
the store's clock fixed so operation and marker ids are the same on every
run, then each ``$ hs ...`` line of the block is run in it, in order, and
what a person would see (stdout and stderr) must be the lines that follow
it. Paths are written as a person's would be (:func:`_paths`); in a block
marked ``<!-- example: STATE (sizes vary) -->`` a byte count may differ.

After a change to what a command prints, run
``HS_UPDATE_DOCS=1 .venv/bin/pytest tests/test_docs_examples.py`` to write
the blocks again from the runs, and read the diff.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import HS

from histstore.store import clock

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "docs" / "cli.md"

SESSION = "5f0c1e7a-3b2d-4c8e-9a61-0d2f4b6c8e10"  # the demo's session about login expiry
CHECKOUT_TURN = "1837a9e6-9740-5ed1-a09e-853ef2fb5008"  # "The checkout tests fail on CI."

#: how to make each state, from an empty folder
STATES: dict[str, list[str]] = {
    "none": [],
    "demo": ["init", "import demo/claude-projects"],
}
STATES["demo-forgotten"] = [
    *STATES["demo"],
    f'forget 5f0c --confirm {SESSION} --reason "client names in the prompts"',
    f"forget {CHECKOUT_TURN} --exclude --confirm {CHECKOUT_TURN} "
    '--reason "pasted a customer address"',
]
STATES["demo-unforgotten"] = [
    *STATES["demo-forgotten"],
    f"unforget {SESSION} --confirm {SESSION}",
]

BLOCK = re.compile(r"<!-- example: ([\w-]+)( \(sizes vary\))? -->\n(```\w*\n)(.*?)(```)", re.S)
SIZE = re.compile(r"\b\d+(?:\.\d)? (?:B|KB|MB)\b")


def _blocks(text: str) -> list[re.Match[str]]:
    return list(BLOCK.finditer(text))


class Clock:
    """The store's clock from 2026-11-30 05:41:25 UTC, 10 ms a reading;
    :meth:`reset` starts it again (each example starts from the same time)."""

    START = datetime(2026, 11, 30, 5, 41, 25, tzinfo=UTC)

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.ticks = 0

    def __call__(self) -> str:
        t = self.START + timedelta(milliseconds=10 * self.ticks)
        self.ticks += 1
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    import histstore.memory.folders
    import histstore.ops.forget

    assert histstore.memory.folders and histstore.ops.forget  # they read the clock too

    fake = Clock()
    original = clock.now_rfc3339
    for mod in list(sys.modules.values()):
        if getattr(mod, "now_rfc3339", None) is original:
            monkeypatch.setattr(mod, "now_rfc3339", fake)
    return fake


def _paths(store: Path, home: Path) -> list[tuple[str, str]]:
    """What a run's paths are shown as: a person's (longest first)."""
    return [
        (str(store), "/home/dev/.local/share/histstore"),
        (str(ROOT), "/home/dev/src/histstore"),
        (str(home), "/home/dev"),
    ]


def _run_block(hs: HS, state: str, body: str, store: Path, home: Path) -> Iterator[str]:
    """The block as the runs write it: each command line, then its output."""
    for line in STATES[state]:
        r = hs(*shlex.split(line))
        assert r.exit_code == 0, (line, r.output)
    for line in body.splitlines():
        if not line.startswith("$ "):
            continue
        yield line
        command = re.sub(r"\s{2,}#.*$", "", line[2:])
        words = shlex.split(command)
        assert words[0] == "hs", line
        out = hs(*words[1:]).output
        for real, shown in _paths(store, home):
            out = out.replace(real, shown)
        yield from out.splitlines()


def test_the_examples_are_marked() -> None:
    found = _blocks(CLI.read_text())
    assert len(found) >= 15
    assert {m.group(1) for m in found} <= set(STATES)


def test_the_examples_in_docs_cli_md_are_real_runs(
    hs: HS,
    fixed_clock: Clock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    store_path: Path,
) -> None:
    monkeypatch.chdir(ROOT)
    home = Path(os.environ["HOME"])
    text = CLI.read_text()
    wrong: list[str] = []
    pieces: list[str] = []
    at = 0
    for i, m in enumerate(_blocks(text)):
        state, sizes, fence, body, end = m.groups()
        fixed_clock.reset()
        store = store_path.parent / f"store-{i}"
        monkeypatch.setenv("HISTORY_DIR", str(store))
        got = "\n".join(_run_block(hs, state, body, store, home)) + "\n"
        pieces += [text[at : m.start(4)], got]
        at = m.end(4)
        # SQLite files may take other sizes elsewhere: such a block compares
        # its sizes as "a size"
        same = SIZE.sub("N", got) == SIZE.sub("N", body) if sizes else got == body
        if not same:
            wrong.append(f"example {i} ({state}) should read:\n{fence}{got}{end}")
    pieces.append(text[at:])
    if os.environ.get("HS_UPDATE_DOCS"):
        CLI.write_text("".join(pieces))
        return
    assert not wrong, (
        "docs/cli.md's examples differ from real runs "
        "(HS_UPDATE_DOCS=1 writes them):\n\n" + "\n\n".join(wrong)
    )


def _demo_ids(hs: HS) -> set[str]:
    assert hs("init").exit_code == 0
    assert hs("import", str(ROOT / "demo" / "claude-projects")).exit_code == 0
    turns = hs.json_lines("log", "--json")
    return {t["turn_id"] for t in turns} | {t["session_id"] for t in turns}


def test_every_demo_id_in_the_docs_is_one_the_demo_makes(hs: HS) -> None:
    """A UUID in docs/cli.md that begins as a demo session or turn does is
    that id whole (``make demo`` makes them), and none is a placeholder
    (``00000000-0000-4000-8000-…``): an example that names the demo names
    what a reader gets."""
    ids = _demo_ids(hs)
    by_start = {i[:8]: i for i in ids}
    found = set(
        re.findall(
            r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", CLI.read_text()
        )
    )
    wrong = sorted(u for u in found if u[:8] in by_start and u != by_start[u[:8]])
    assert not wrong, f"docs/cli.md: ids that are not the demo's: {wrong}"
    assert not [u for u in found if u.startswith("00000000-")], "placeholder ids in docs/cli.md"
