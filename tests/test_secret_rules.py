"""The rule set: gitleaks' rules as data with their licence, histstore's own
rules, what each must catch and leave alone, and the rule-set id."""

from __future__ import annotations

import json
import re
import shutil
import sysconfig
from pathlib import Path

import pytest
from secretcases import ASSIGNED, MUST_CATCH, NOT_SECRETS, Case

from histstore.store import redact, ruleset, secret_rules
from histstore.store.redact import DEFAULT, KINDS, RULESET_VERSION, redact_json_line, ruleset_id

MARKER = re.compile(r"\[REDACTED:([a-z0-9-]+)\]")

#: the digest of each rule-set version: a change to any rule, word list or the
#: data file must come with a new version (raise secret_rules.VERSION)
PINNED = {
    "1+gitleaks-v8.30.0-27": "dda9b22e5024b8423a14d7c3124657b3dd3a44ad0864e37c1eacae2b1411dac9",
    "2+gitleaks-v8.30.0-27": "3b908dd438230ba33cfeb039edf7e95ae108b85ad8e4b10970c914cfb4a49cae",
    # 3: a marker is never taken for a secret; curl-auth-user finds every secret of a
    # line; azure-ad-client-secret is found in a path; a rejected match is looked
    # at again from its value
    "3+gitleaks-v8.30.0-27": "e6d47fe336904faa19d320cc3b7f124e3977240cbbd817cd00b7c857df30b0fe",
}


def _kinds(text: str) -> list[str]:
    return MARKER.findall(text)


def _escaped(text: str, secret: str) -> str:
    """A JSON line holding ``text`` with the first character of ``secret``
    spelled as a \\uXXXX escape."""
    line = json.dumps({"type": "user", "content": text})
    i = line.index(secret)
    return line[:i] + f"\\u{ord(secret[0]):04x}" + line[i + 1 :]


@pytest.mark.parametrize("case", MUST_CATCH + ASSIGNED, ids=lambda c: c.name)
def test_every_form_is_caught(case: Case) -> None:
    prose = f"Here is what the command printed:\n{case.text}\nand that was all."
    for text in (case.text, prose):
        out = DEFAULT(text)
        assert case.secret not in out, out
        assert set(_kinds(out)) & set(case.kinds), out
    for line in (
        json.dumps({"type": "tool_result", "content": prose, "n": 1}),
        json.dumps({"cmd": case.text}, ensure_ascii=False, separators=(",", ":")),
        json.dumps({"input": json.dumps({"command": "cat .env", "output": prose})}),
        _escaped(prose, case.secret),
    ):
        out, value = redact_json_line(DEFAULT, line)
        assert case.secret not in out and case.secret not in json.dumps(value), out
        assert "[REDACTED:" in out


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_what_holds_no_secret_is_left_alone(text: str) -> None:
    assert DEFAULT(text) == text
    line = json.dumps({"text": text, "lines": [text, f"  {text}\n"]})
    assert DEFAULT(line) == line


def test_a_provider_format_names_the_kind_before_an_assignment() -> None:
    key = "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7CD0EF"
    assert DEFAULT(f"OPENAI_API_KEY={key}") == "OPENAI_API_KEY=[REDACTED:openai-key]"
    assert DEFAULT(f'{{"api_key": "{key}"}}') == '{"api_key": "[REDACTED:openai-key]"}'


def test_two_secrets_one_character_apart_are_both_found() -> None:
    a, b = "AKIA" + "Q3EXAMPLE7W4ZNR2", "AKIA" + "Y7EXAMPLE2K9PLM4"
    assert DEFAULT(f"{a} {b}") == "[REDACTED:aws-access-key-id] [REDACTED:aws-access-key-id]"
    assert DEFAULT(f"k={a},{b}") == "k=[REDACTED:aws-access-key-id],[REDACTED:aws-access-key-id]"


def test_gitleaks_rules_are_data_with_their_licence() -> None:
    data = json.loads(ruleset.GITLEAKS_FILE.read_text())
    folder = ruleset.GITLEAKS_FILE.parent
    assert data["format"] == 1
    assert data["license"] == "MIT"
    assert data["copyright"] == "Copyright (c) 2019 Zachary Rice"
    licence = (folder / data["license_file"]).read_text()
    assert licence.startswith("MIT License") and data["copyright"] in licence
    notice = (folder / "NOTICE").read_text()
    assert data["source_commit"] in notice and data["source_version"] in notice
    assert "LICENSE.gitleaks" in notice
    assert data["source_version"].split("-")[0] in RULESET_VERSION
    ids = [r["id"] for r in data["rules"]]
    assert len(ids) >= 200 and len(set(ids)) == len(ids)
    assert set(ids) < set(KINDS)
    for r in data["rules"]:
        assert r["keywords"], r["id"]
        assert all(k == k.lower() for k in r["keywords"])


def test_every_rule_compiles_and_has_a_kind() -> None:
    rules = ruleset.rules()
    data = json.loads(ruleset.GITLEAKS_FILE.read_text())
    own = len(secret_rules.PROVIDERS) + len(secret_rules.ASSIGNMENTS)
    assert len(rules) == own + len(data["rules"])
    assert {r.kind for r in rules} | {"custom"} == set(KINDS)
    # precedence: histstore's providers, gitleaks' rules, histstore's
    # assignments, then gitleaks' generic rule
    assert not rules[0].gitleaks and rules[len(secret_rules.PROVIDERS)].gitleaks
    assert rules[-1].kind == "generic-api-key"
    assert [r.kind for r in rules[-1 - len(secret_rules.ASSIGNMENTS) : -1]] == [
        s.kind for s in secret_rules.ASSIGNMENTS
    ]


def test_the_ruleset_id_names_version_and_digest() -> None:
    version, digest = ruleset_id().split(":")
    assert version == RULESET_VERSION
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert ruleset_id() == redact.ruleset_id()


def test_the_ruleset_version_changes_with_its_rules() -> None:
    """A rule-set version names one set of rules: if this fails after a rule
    change, raise secret_rules.VERSION and pin the new digest here."""
    assert RULESET_VERSION in PINNED, "pin the digest of the new version in PINNED"
    assert ruleset_id().split(":")[1] == PINNED[RULESET_VERSION]


def test_any_change_to_the_data_changes_the_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = ruleset_id()
    copy = tmp_path / "rules" / "gitleaks.json"
    copy.parent.mkdir()
    shutil.copy(ruleset.GITLEAKS_FILE, copy)
    data = json.loads(copy.read_text())
    data["rules"][0]["entropy"] = 4.5
    copy.write_text(json.dumps(data))
    monkeypatch.setattr(ruleset, "GITLEAKS_FILE", copy)
    ruleset._load.cache_clear()
    try:
        assert ruleset_id() != before
    finally:
        monkeypatch.undo()
        ruleset._load.cache_clear()
    assert ruleset_id() == before


def test_a_gitleaks_rule_applies_its_entropy_limit_and_allowlists() -> None:
    generic = (len(ruleset.rules()) - 1,)

    def found(text: str) -> list[str]:
        return [f.kind for f in ruleset.scan(text.encode(), generic)]

    assert found("api_key = 'k3J9sL2xQ8wE5tYq'") == ["generic-api-key"]
    assert found("api_key = 'abababababababab'") == []  # entropy 1.0 <= 3.5
    # a global stopword, and one of the rule's own
    assert found("api_key = 'abcdefghijklmnopqrstuvwxyz1'") == []
    assert found("api_key = 'k3J9sL2xQ8wE5tYq-academy'") == []


def test_false_positives_on_ordinary_code_stay_rare() -> None:
    """The standard library's top-level modules (4.5 MiB of Python, docstrings
    and comments) hold no secret: at most one finding per MiB (at rule-set
    version 1 on Python 3.11: none; in the whole standard library, 12.6 MiB,
    3: urllib's docstring example ``passwd='…'`` and two generic-api-key on
    names such as ``RegEnumKey = win32api.RegEnumKeyEx``)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    size = found = 0
    for path in sorted(stdlib.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        size += len(text.encode())
        found += len(MARKER.findall(DEFAULT(text))) - len(MARKER.findall(text))
    assert size > 2**20
    assert found <= size / 2**20, found


def test_a_rule_whose_groups_label_parts_redacts_its_whole_match() -> None:
    """Fault: two gitleaks rules capture groups that only label parts of their
    match (jwt-base64: the JWT header's field names; microsoft-teams-webhook:
    the UUID's parts), and the first group taken as the secret redacted ten
    characters of a base64 JWT and left the rest. They redact the whole match
    (``secret_group`` 0 in gitleaks.json)."""
    import base64

    jwt = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N"
    b64 = base64.b64encode(jwt.encode()).decode()
    uuid = "5f0c1e7a-3b2d-4c8e-9a61-0d2f4b6c8e10"
    hook = (
        f"https://acme.webhook.office.com/webhookb2/{uuid}@{uuid}"
        f"/IncomingWebhook/{'0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d'}/{uuid}"
    )
    assert DEFAULT(f"token {b64} end") == "token [REDACTED:jwt-base64] end"
    assert DEFAULT(f"post to {hook}") == "post to [REDACTED:microsoft-teams-webhook]"


def test_redacting_again_changes_nothing() -> None:
    """Every example secret, several times over in one JSON line and in plain
    text: redacted once, it is what redacting it again gives (``hs redact
    --apply`` rewrites nothing on a store the same rules wrote). A marker is
    never taken for a secret (``http://[REDACTED:x]@host`` has no password),
    and curl-auth-user, whose match starts with a context, finds every secret
    of a line (greedy, it found only the last)."""
    from histstore.store.secret_examples import examples

    for kind, ex in sorted(examples().items()):
        line = json.dumps({"a": ex.text, "b": [ex.text, "x " + ex.text], "c": {"d": ex.text}})
        for text in (line, f"{ex.text}\n{ex.text} and {ex.text}"):
            once = DEFAULT(text)
            assert ex.secret not in once, kind
            assert DEFAULT(once) == once, kind
