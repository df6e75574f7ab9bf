"""The docs are part of the interface: every command is documented, and the
worked example in docs/format.md is the id the code computes."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from histstore.porcelain.cli import app
from histstore.store.codec import hash_object
from histstore.store.redact import KINDS
from histstore.store.ruleset import GITLEAKS_FILE

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command and sub-group under ``group``, with its path of names."""
    for name, cmd in sorted(group.commands.items()):
        yield (*path, name), cmd
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, (*path, name))


ALL = list(_commands(typer.main.get_command(app)))


def test_the_walk_finds_the_plumbing_subcommands() -> None:
    names = {" ".join(p) for p, _ in ALL}
    assert {"init", "import", "log", "plumbing", "plumbing cat-object"} <= names


@pytest.mark.parametrize("path,cmd", ALL, ids=[" ".join(p) for p, _ in ALL])
def test_every_command_has_help(path: tuple[str, ...], cmd: Any) -> None:
    assert (cmd.help or "").strip(), f"hs {' '.join(path)} has no help text"


@pytest.mark.parametrize("path,cmd", ALL, ids=[" ".join(p) for p, _ in ALL])
def test_every_command_has_an_example_in_its_help(path: tuple[str, ...], cmd: Any) -> None:
    assert re.search(r"^\s*Example: .*\bhs\b", cmd.help or "", re.M), (
        f"hs {' '.join(path)} --help has no 'Example: hs ...' line"
    )


@pytest.mark.parametrize("path,cmd", ALL, ids=[" ".join(p) for p, _ in ALL])
def test_every_command_is_documented(path: tuple[str, ...], cmd: Any) -> None:
    headings = {
        h
        for page in DOCS.glob("*.md")
        for h in re.findall(r"^### (hs .+?)\s*$", page.read_text(), re.M)
    }
    assert f"hs {' '.join(path)}" in headings, f"no page in docs/ has '### hs {' '.join(path)}'"


def test_format_worked_example_is_the_real_id() -> None:
    text = (DOCS / "format.md").read_text()
    start = text.index("#### Worked example: a blob")
    section = text[start : text.index("####", start + 1)]
    ids = re.findall(r"\b[0-9a-f]{64}\b", section)
    assert ids, "no 64-hex id next to the blob example in docs/format.md"
    assert set(ids) == {hash_object("blob", b"abc")}


@pytest.mark.parametrize("kind", KINDS)
def test_every_redaction_kind_is_documented(kind: str) -> None:
    text = (DOCS / "format.md").read_text()
    start = text.index("## Redaction")
    section = text[start : text.index("\n## ", start + 1)]
    assert f"`{kind}`" in section, f"docs/format.md, Redaction, does not name `{kind}`"


def _gitleaks_kinds_block() -> str:
    ids = [r["id"] for r in json.loads(GITLEAKS_FILE.read_text())["rules"]]
    return textwrap.fill(
        ", ".join(f"`{i}`" for i in ids) + ".",
        width=80,
        break_on_hyphens=False,
        break_long_words=False,
    )


def test_the_gitleaks_kinds_in_the_docs_are_generated_from_the_rules() -> None:
    """docs/format.md lists every gitleaks rule id, generated: on a rule update,
    paste the block this test prints."""
    text = (DOCS / "format.md").read_text()
    begin = "<!-- gitleaks kinds: generated from rules/gitleaks.json, checked by tests/test_docs.py -->\n"
    end = "\n<!-- end of gitleaks kinds -->"
    block = text[text.index(begin) + len(begin) : text.index(end)]
    assert block == _gitleaks_kinds_block(), "docs/format.md needs:\n" + _gitleaks_kinds_block()


ROOT = DOCS.parent


def test_every_test_named_in_invariants_exists() -> None:
    text = (DOCS / "invariants.md").read_text()
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", text)
    assert len(named) > 20
    for file, name in named:
        source = (ROOT / file).read_text()
        assert re.search(rf"^def {name}\(", source, re.M), f"{file}::{name} is not a test there"


def test_every_invariant_names_a_test() -> None:
    text = (DOCS / "invariants.md").read_text()
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    assert len(sections) >= 9
    for section in sections:
        assert "Tests:" in section and "::test_" in section, section.splitlines()[0]


def test_no_doc_or_test_cites_a_file_outside_the_repository() -> None:
    """The design notes and measurements beside the repository are not part of
    it: docs and tests cite invariants.md and their own figures instead. (The
    real-sample suite, which finds ../shared/samples and skips without it, is
    the one exception.)"""
    pages = [*DOCS.glob("*.md"), ROOT / "README.md"]
    tests = [
        p
        for p in (ROOT / "tests").rglob("*.py")
        if "samples" not in p.parts and p.name != "test_docs.py"
    ]
    for path in pages + tests:
        text = path.read_text()
        for cited in ("DESIGN.md", "MEASUREMENTS.md", "FORMATS.md", "DESIGN invariant"):
            assert cited not in text, f"{path.relative_to(ROOT)} cites {cited}"


def test_format_examples_have_their_ids() -> None:
    """Every worked example of docs/format.md that names a kind and an id:
    its canonical JSON (RFC 8785) hashes to that id, and it parses as that
    kind (so a stranger reimplementing the format can check against them)."""
    import json
    import re

    from histstore.store.codec import canonical_json, hash_object
    from histstore.store.kinds import parse

    text = (ROOT / "docs" / "format.md").read_text()
    found = re.findall(r"```json kind=(\w+) id=([0-9a-f]{64})\n(.*?)\n```", text, re.S)
    assert len(found) >= 8, "an example of every kind"
    assert {k for k, _, _ in found} >= {"turn", "session", "marker", "memtree", "memrev"}
    for kind, object_id, body in found:
        payload = canonical_json(json.loads(body))
        assert hash_object(kind, payload) == object_id, (kind, object_id)
        parse(object_id, kind, payload)
