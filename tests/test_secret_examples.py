"""An example secret for every kind of the rule set (histstore.store.secret_examples):
what a leak test plants, one of every rule kind."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from helpers import HS, turn_record

from histstore.store import ruleset, secret_examples
from histstore.store.redact import DEFAULT, KINDS
from histstore.store.store import Store

EXAMPLES = secret_examples.examples()


def test_every_kind_has_an_example() -> None:
    assert list(EXAMPLES) == list(ruleset.kinds())
    assert set(EXAMPLES) == set(KINDS) - {"custom"}
    assert len(EXAMPLES) > 200  # gitleaks' rules and histstore's own


@pytest.mark.parametrize("kind", list(EXAMPLES))
def test_each_example_is_caught_as_its_kind(kind: str) -> None:
    """The rule of that kind alone reports the secret as that kind, and the
    whole redactor removes it, wherever it stands: alone, in a sentence, in a
    JSON string. A secret of at least 8 characters: a rule that reports only a
    piece of a longer credential (a label group) would leave the rest."""
    ex = EXAMPLES[kind]
    assert ex.kind == kind and ex.secret in ex.text and len(ex.secret) >= 8
    data = ex.text.encode()
    found = [
        data[f.start : f.end].decode()
        for rank, r in enumerate(ruleset.rules())
        if r.kind == kind or r.check is not None
        for f in ruleset.scan(data, (rank,))
        if f.kind == kind
    ]
    assert ex.secret in found, ex
    for planted in (ex.text, f"look: {ex.text}\n"):
        out = DEFAULT(planted)
        assert ex.secret not in out and "[REDACTED:" in out, (planted, out)
    record = json.loads(DEFAULT(json.dumps({"output": ex.text})))
    assert ex.secret not in record["output"]


def test_examples_are_the_same_on_every_run() -> None:
    """Seeded by the kind's name: a fresh draw gives the same text."""
    rules = ruleset.rules()
    for kind in random.Random(16).sample(list(EXAMPLES), 8):
        again = secret_examples._draw(kind, rules)
        assert again == EXAMPLES[kind]


def _detect_secrets(text: str, tmp: Path) -> list[str]:
    """Every secret value detect-secrets' plugins find in ``text``."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    path = tmp / "examples.txt"
    path.write_text(text)
    with default_settings():
        collection = SecretsCollection()
        collection.scan_file(str(path))
        return [s.secret_value for _file, s in collection if s.secret_value]


def test_no_example_reaches_the_store(hs: HS, tmp_path: Path, store_path: Path) -> None:
    """Every example planted in a turn's prompt, answer, tool input, tool output
    and thinking: no byte of the store (every file, every object decompressed)
    holds any of them, nor anything detect-secrets finds in them."""
    lines = [ex.text for ex in EXAMPLES.values()]
    found = _detect_secrets("\n".join(lines) + "\n", tmp_path)
    assert len(found) >= 20  # the oracle knows many of these kinds
    text = "\n".join(lines)
    steps = [
        {"type": "thinking", "text": text},
        {
            "type": "tool",
            "id": "t",
            "name": "Bash",
            "input": {"command": text},
            "output": text,
            "is_error": False,
            "at": None,
        },
    ]
    rec = turn_record(1, asked=text, answered=text, steps=steps)
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    assert hs("init").exit_code == 0
    r = hs("import", str(path))
    assert r.exit_code == 0, r.stderr
    with Store.open(store_path) as store:
        chunks = [p.read_bytes() for p in store_path.rglob("*") if p.is_file()]
        chunks += [store.objects.get(oid)[1] for oid in store.objects.iter_ids()]
    needles = {ex.secret for ex in EXAMPLES.values()} | set(found)
    leaks = sorted(n for n in needles if any(n.encode() in c for c in chunks))
    assert not leaks
