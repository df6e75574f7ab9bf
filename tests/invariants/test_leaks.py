"""Invariant 5: no secret byte. One example secret of every rule kind
(histstore.store.secret_examples) planted in every place a secret turns up in
real sessions — the prompt, the answer, the thinking, a command a tool ran and
its output, a file a tool read (its content, and its path under a config
folder), a session's title, a memory note, a forget reason — then imported the
way a person would: no byte of the store holds any of them (every file, SQLite
files and WAL included; every object decompressed; every frame of every pack
decompressed), nor any export or human view; nor anything detect-secrets, as
an oracle, finds in what was planted. After ``hs purge`` and ``hs redact
--apply`` the same scan holds for what they removed (tests/test_purge.py)."""

from __future__ import annotations

import json
from pathlib import Path

import leaks
from helpers import HS

from histstore.store import secret_examples


def _ok(r: object) -> str:
    assert r.exit_code == 0, (r.stdout, r.stderr)  # type: ignore[attr-defined]
    return str(r.stdout) + str(r.stderr)  # type: ignore[attr-defined]


def _oracle(text: str, tmp: Path) -> list[str]:
    """What detect-secrets' plugins find in ``text`` (their secret values)."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    path = tmp / "planted.txt"
    path.write_text(text)
    with default_settings():
        found = SecretsCollection()
        found.scan_file(str(path))
        return [s.secret_value for _f, s in found if s.secret_value]


def test_no_planted_secret_reaches_a_byte_of_the_store_or_a_view(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    planted = leaks.plant(tmp_path / "in")
    assert len(planted.examples) == len(secret_examples.examples()) > 200
    texts = "\n".join(ex.text for ex in planted.examples.values()) + "\n"
    oracle = _oracle(texts, tmp_path)
    assert len(oracle) >= 20  # the oracle knows many of these kinds
    out = [_ok(hs("init"))]
    out.append(_ok(hs("import", str(planted.projects))))
    out.append(_ok(hs("memory", "dir", "--set", str(planted.memory))))
    out.append(_ok(hs("memory", "snapshot")))
    # a forget reason holding every kind (a note's marker costs no index swap)
    for target, reason in planted.notes.items():
        out.append(_ok(hs("forget", target, "--confirm", target, "--reason", reason)))
    turn = planted.turns[0]
    reason = planted.notes[next(iter(planted.notes))]
    out.append(_ok(hs("forget", turn, "--confirm", turn, "--reason", reason)))
    # every human view, every export format
    views = [
        ("log",),
        ("log", "--oneline"),
        ("log", "--json"),
        ("log", "--all"),
        ("status",),
        ("ops",),
        ("forgotten",),
        ("forget", "--list"),
        ("recall", "--everywhere", "use", "these", "done", "ran"),
        ("recall", "--everywhere", "--json", "default", "vault"),
        ("export", "--format", "jsonl"),
        ("export", "--format", "markdown"),
        ("memory", "log"),
        ("memory", "show", "MEMORY.md"),
        ("memory", "prompt", "--model", "claude-sonnet-4-5"),
        ("fsck",),
    ]
    for target in planted.notes:  # tombstoned: its text is shown
        views.append(("memory", "show", target.rsplit("@", 1)[1]))
    for sid in planted.sessions:
        views.append(("show", sid))
        views.append(("export", "--format", "claude-code", "--session", sid))
    for t in planted.turns[1:]:
        views += [
            ("show", t.split("~")[1], "--full"),
            ("show", t.split("~")[1], "--json", "--full"),
        ]
        views.append(("show", t.split("~")[1], "--raw"))
    finder = leaks.Finder([*planted.needles, *oracle])
    leaked: dict[str, set[str]] = {}
    for args in views:
        r = hs(*args)
        assert r.exit_code == 0, (args, r.stderr)
        if args[:3] == ("export", "--format", "claude-code"):
            assert r.stdout.count('"sessionId"') >= 8  # the session's records, redacted
        found = finder.find((r.stdout + r.stderr).encode())
        if found:
            leaked[" ".join(args)] = found
    assert leaked == {}
    assert finder.find("\n".join(out).encode()) == set()
    assert leaks.scan(store_path, finder) == {}
    # the scan can fail: the planted files themselves hold every secret
    assert len(finder.find(json.dumps(planted.notes).encode())) > 100
