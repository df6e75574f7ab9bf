"""Secret redaction: each kind in plain text and inside raw JSON lines."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest

from histstore.errors import BadInput
from histstore.store import redact, ruleset, secret_rules
from histstore.store.redact import DEFAULT, KINDS, Redactor, marker

# Fake secrets, assembled from pieces so no secret scanner mistakes this file for a
# leak. Each case: (kind, text to plant, the distinctive part that must disappear,
# text of the plant that must survive).
_B62 = "Zq8Lm3Xv7Tn2Rk5Wp9Yc4Hd6Jf1Gs0Bt"  # 32 random-looking letters and digits
_PEM_BODY = "\n".join(
    [
        "MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
        "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK",
        "LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo",
    ]
)
_PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + _PEM_BODY + "\n-----END RSA PRIVATE KEY-----"
_AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "zEXAMPLEKEY"
_JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

CASES: list[tuple[str, str, str, str]] = [
    ("openai-key", "sk-" + "proj-" + _B62 + "_x-" + _B62, _B62, ""),
    ("openai-key", "sk-" + _B62 + "Qw3Er5Ty7Ui9Op1A", _B62, ""),
    ("anthropic-key", "sk-" + "ant-api03-" + _B62 + "-" + _B62 + "AA", _B62, ""),
    ("github-token", "ghp_" + _B62 + "a1B2", _B62, ""),
    ("github-token", "gho_" + _B62 + "c3D4", _B62, ""),
    ("github-token", "ghu_" + _B62 + "e5F6", _B62, ""),
    ("github-token", "ghs_" + _B62 + "g7H8", _B62, ""),
    ("github-token", "ghr_" + _B62 + "i9J0", _B62, ""),
    ("github-token", "github_" + "pat_11ABCDEFG0" + _B62 + "_" + _B62 + "xYz", _B62, ""),
    ("gitlab-token", "glpat-" + _B62[:20], _B62[:20], ""),
    ("huggingface-token", "hf_" + _B62 + "Ab", _B62, ""),
    ("aws-access-key-id", "AKIA" + "Q3EXAMPLE7W4ZNR2", "Q3EXAMPLE7W4ZNR2", ""),
    ("aws-access-key-id", "ASIA" + "Y7EXAMPLE2K9PLM4", "Y7EXAMPLE2K9PLM4", ""),
    (
        "aws-secret-key",
        "aws_secret_access_key = " + _AWS_SECRET,
        _AWS_SECRET,
        "aws_secret_access_key = ",
    ),
    (
        "aws-secret-key",
        "AWS_SECRET_ACCESS_KEY=" + _AWS_SECRET,
        _AWS_SECRET,
        "AWS_SECRET_ACCESS_KEY=",
    ),
    (
        "aws-secret-key",
        '{"SecretAccessKey": "' + _AWS_SECRET + '"}',
        _AWS_SECRET,
        "SecretAccessKey",
    ),
    ("slack-token", "xoxb-" + "123456789012-1234567890123-" + _B62[:24], _B62[:24], ""),
    ("slack-token", "xoxp-" + "123456789012-" + _B62[:24], _B62[:24], ""),
    ("slack-token", "xoxa-" + "2-" + _B62[:24], _B62[:24], ""),
    ("slack-token", "xoxr-" + _B62[:24], _B62[:24], ""),
    ("slack-token", "xoxs-" + _B62[:24], _B62[:24], ""),
    (
        "slack-webhook",
        "https://hooks.slack.com/" + "services/T0AB1CD2E/B3FG4HI5J/" + _B62[:24],
        _B62[:24],
        "",
    ),
    ("google-api-key", "AIza" + "Sy" + _B62 + "-", _B62, ""),
    ("stripe-key", "sk_" + "live_" + _B62[:24], _B62[:24], ""),
    ("stripe-key", "rk_" + "live_" + _B62[:24], _B62[:24], ""),
    ("private-key", _PEM, "u1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun", ""),
    (
        "private-key",
        _PEM.replace("RSA ", "OPENSSH ").replace("BEGIN", "BEGIN"),
        "LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW",
        "",
    ),
    (
        "private-key",
        _PEM.replace("RSA ", ""),
        "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u",
        "",
    ),
    (
        "url-password",
        "postgres://admin:" + "S3cr3tP4ss@db.example.com:5432/app",
        "S3cr3tP4ss",
        "postgres://admin:[REDACTED:url-password]@db.example.com:5432/app",
    ),
    (
        "url-password",
        "https://deploy-bot:" + "gh-Pa55w0rd!x@git.example.org/org/repo.git",
        "gh-Pa55w0rd!x",
        "https://deploy-bot:[REDACTED:url-password]@git.example.org/org/repo.git",
    ),
    (
        "url-password",
        "redis://:" + "p@ss#w0rd@cache.internal:6379/0",
        "ss#w0rd",
        "redis://:[REDACTED:url-password]@cache.internal:6379/0",
    ),
    ("jwt", _JWT, "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV", ""),
    (
        "bearer-token",
        "Authorization: Bearer " + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4",
        "a1B2c3D4e5F6g7H8i9J0k1L2m3N4",
        "Authorization: Bearer [REDACTED:bearer-token]",
    ),
    (
        "basic-auth",
        "Authorization: Basic " + "ZGVwbG95OmMwcnJlY3QtaG9yc2U=",
        "ZGVwbG95OmMwcnJlY3QtaG9yc2U",
        "Authorization: Basic [REDACTED:basic-auth]",
    ),
    (
        "discord-webhook",
        "https://discord.com/api/" + "webhooks/1234567890123456789/" + _B62 + _B62[:30] + "-x_y",
        _B62,
        "https://discord.com/api/webhooks/1234567890123456789/[REDACTED:discord-webhook]",
    ),
    ("telegram-bot-token", "bot " + "123456789:" + "AA" + _B62 + "q", "AA" + _B62, "bot "),
    ("password", "DB_PASSWORD=" + "hunter2longer", "hunter2longer", "DB_PASSWORD="),
    ("secret", "SECRET_KEY=" + "k3J9sL2x!Q8wE5tY7", "k3J9sL2x!Q8wE5tY7", "SECRET_KEY="),
    ("secret", "api_key: " + '"' + _B62[:20] + '"', _B62[:20], "api_key: "),
    (
        "url-token",
        "https://" + _B62[:26] + "@git.example.org/o/r.git",
        _B62[:26],
        "https://[REDACTED:url-token]@git.example.org/o/r.git",
    ),
]
IDS = [f"{kind}-{i}" for i, (kind, *_rest) in enumerate(CASES)]

BEFORE = "Here is the config I found:"
AFTER = "-- and that is all, the task-based runner is fine."


def _record(text: str) -> dict[str, Any]:
    """A nested record shaped like an agent's JSON line, with ``text`` deep inside."""
    return {
        "type": "user",
        "uuid": "7e8f9a0b-1c2d-4e3f-8a9b-0c1d2e3f4a5b",
        "timestamp": "2026-01-02T03:04:05.678Z",
        "message": {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": text},
                {"type": "text", "text": "caf\u00e9 \u2014 ok"},
            ],
        },
        "toolUseResult": {"stdout": text, "stderr": "", "interrupted": False},
    }


def _builtin_only(text: str) -> str:
    """The built-in rules alone, with no safety net of any kind."""
    return redact._redact_builtin(text)[0]


def test_every_kind_of_histstore_is_covered() -> None:
    """Each of histstore's own kinds has a case here (gitleaks' kinds are in
    tests/test_secret_rules.py: the must-catch list)."""
    own = {s.kind for s in secret_rules.PROVIDERS + secret_rules.ASSIGNMENTS}
    assert {kind for kind, *_ in CASES} == own
    assert own < set(KINDS)


@pytest.mark.parametrize(("kind", "secret", "distinct", "kept"), CASES, ids=IDS)
def test_plain_text(kind: str, secret: str, distinct: str, kept: str) -> None:
    text = f"{BEFORE} {secret} {AFTER}"
    out = DEFAULT(text)
    assert distinct not in out
    assert marker(kind) in out
    assert out.startswith(BEFORE + " ")
    assert out.endswith(" " + AFTER)
    assert kept in out


@pytest.mark.parametrize(("kind", "secret", "distinct", "kept"), CASES, ids=IDS)
def test_plain_text_on_its_own_lines(kind: str, secret: str, distinct: str, kept: str) -> None:
    text = f"line one\n{secret}\nline three"
    out = DEFAULT(text)
    assert distinct not in out
    assert out.startswith("line one\n")
    assert out.endswith("\nline three")
    assert marker(kind) in out


@pytest.mark.parametrize("dumps_kw", [{}, {"ensure_ascii": False, "separators": (",", ":")}])
@pytest.mark.parametrize(("kind", "secret", "distinct", "kept"), CASES, ids=IDS)
def test_json_line(
    kind: str, secret: str, distinct: str, kept: str, dumps_kw: dict[str, Any]
) -> None:
    for text in (f"{BEFORE} {secret} {AFTER}", f"{BEFORE}\n{secret}\n\t{AFTER}", secret):
        line = json.dumps(_record(text), **dumps_kw)
        for out in (DEFAULT(line), _builtin_only(line)):
            assert distinct not in out
            back = json.loads(out)  # still valid JSON
            assert marker(kind) in out
            # the structure and everything around the secret is intact
            assert back["uuid"] == "7e8f9a0b-1c2d-4e3f-8a9b-0c1d2e3f4a5b"
            assert back["message"]["content"][1]["text"] == "caf\u00e9 \u2014 ok"
            assert back["toolUseResult"]["interrupted"] is False
            for field in (
                back["message"]["content"][0]["content"],
                back["toolUseResult"]["stdout"],
            ):
                assert distinct not in field
                assert marker(kind) in field
                assert kept in field
                if text != secret:
                    assert field.startswith(BEFORE)
                    assert field.endswith(AFTER)
                    assert field == DEFAULT(text)  # same as redacting the decoded string


@pytest.mark.parametrize(("kind", "secret", "distinct", "kept"), CASES, ids=IDS)
def test_json_line_nested_twice(kind: str, secret: str, distinct: str, kept: str) -> None:
    """A JSON document held as a string inside a JSON line: escapes are doubled."""
    inner = json.dumps({"command": "cat .env", "output": f"{BEFORE}\n{secret}\n{AFTER}"})
    line = json.dumps({"type": "tool_use", "input": inner, "n": 1})
    out = DEFAULT(line)
    assert distinct not in out
    back = json.loads(out)
    assert back["n"] == 1
    inner_back = json.loads(back["input"])
    assert inner_back["command"] == "cat .env"
    assert inner_back["output"].startswith(BEFORE + "\n")
    assert inner_back["output"].endswith("\n" + AFTER)
    assert marker(kind) in inner_back["output"]


def test_private_key_block_is_replaced_whole() -> None:
    line = json.dumps({"content": f"key:\n{_PEM}\ndone"})
    assert "\\n" in line and "\n" not in line
    out = DEFAULT(line)
    assert json.loads(out) == {"content": "key:\n[REDACTED:private-key]\ndone"}
    assert DEFAULT(f"key:\n{_PEM}\ndone") == "key:\n[REDACTED:private-key]\ndone"


def test_private_key_cut_short_still_redacted() -> None:
    head = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + _PEM_BODY
    text = f"$ head -4 ~/.ssh/id_ed25519\n{head}"
    out = DEFAULT(text)
    assert "u1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun" not in out
    assert out.startswith("$ head -4 ~/.ssh/id_ed25519\n[REDACTED:private-key]")
    line = json.dumps({"out": text, "x": 1})
    red = DEFAULT(line)
    assert "u1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun" not in red
    assert json.loads(red)["x"] == 1


def test_two_secrets_in_one_line() -> None:
    a = "ghp_" + _B62 + "a1B2"
    b = "AKIA" + "Q3EXAMPLE7W4ZNR2"
    line = json.dumps({"a": f"export GH={a}", "b": [f"id={b}", "ok"]})
    out = json.loads(DEFAULT(line))
    assert out == {
        "a": "export GH=[REDACTED:github-token]",
        "b": ["id=[REDACTED:aws-access-key-id]", "ok"],
    }


def test_secret_after_json_escapes() -> None:
    """A key right after an escaped newline or tab, or a \\uXXXX escape, is found."""
    key = "sk-" + _B62 + "Qw3Er5Ty7Ui9Op1A"
    for text in (f"a\n{key}", f"a\t{key}", f"\u2028{key}", f"\\{key}"):
        for ascii_only in (True, False):
            line = json.dumps({"t": text}, ensure_ascii=ascii_only)
            out = DEFAULT(line)
            assert _B62 not in out, line
            assert json.loads(out)["t"].endswith("[REDACTED:openai-key]")


def test_no_match_starts_inside_an_escape() -> None:
    """A "\\rk_live_..." is a carriage return, then "k_live_...": not a Stripe key."""
    line = json.dumps({"t": "x\rk_live_" + _B62})
    assert DEFAULT(line) == line


def test_url_password_keeps_scheme_user_host() -> None:
    assert (
        DEFAULT("git clone https://user:hunter2hunter2@github.com/o/r.git")
        == "git clone https://user:[REDACTED:url-password]@github.com/o/r.git"
    )
    # no user info, or an email address in the text: nothing to redact
    for text in ("see https://example.com:8443/path and mail dev@example.com", "a:b@c"):
        assert DEFAULT(text) == text


def test_no_false_positives_on_prose_and_code() -> None:
    text = """
    The task-based scheduler uses sk-learn style estimators (see sklearn, "sk-learn" is a
    common misspelling) and a disk-backed cache. A ghost process, ghp and gho prefixes alone,
    the string AKIA alone, AKIA1234 (too short), AIza alone, xox and xoxo, eyJ on its own,
    "Bearer token" and "bearer tokens are short", Authorization: Bearer $TOKEN, and
    Authorization: Basic $CREDS are all fine.
    def risk_management(secret_key: str) -> None:
        aws_secret_access_key = os.environ["AWS_SECRET_ACCESS_KEY"]
        url = "https://example.com:8080/api?q=1"
        email = "someone@example.com"
        return f"{user}:{password}@{host}"
    -----BEGIN PUBLIC KEY----- is not private. sk-xxxx and sk-... are placeholders.
    The risk-management-framework-configuration-notes and whisk-together-the-eggs-slowly
    are hyphenated prose, and so is the task-and-risk-assessment-workflow-documentation.
    Hash: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    UUID: 3f1c2a9e-5b7d-4c1e-9f2a-8d6b4e0c1a7f at 2026-01-02T03:04:05.678Z
    """
    assert DEFAULT(text) == text
    line = json.dumps(_record(text))
    assert DEFAULT(line) == line


def test_short_placeholders_do_not_crash() -> None:
    for text in ("sk-", "sk-xxxx", "sk-...", "ghp_", "AKIA", "-----BEGIN", "x://", ":@", "", "\\"):
        assert DEFAULT(text) == text
    # a long all-lowercase placeholder is left alone; one with digits is redacted
    assert DEFAULT("sk-" + "x" * 30) == "sk-" + "x" * 30
    assert DEFAULT("sk-" + "x" * 30 + "1") == "[REDACTED:openai-key]"


def test_extra_patterns() -> None:
    r = Redactor([r"ACME-[0-9]{6}", r"internal_token=(?P<secret>[0-9a-f]{8,})"])
    text = "ticket ACME-123456, internal_token=deadbeefcafe and ghp_" + _B62 + "a1B2 end"
    assert r(text) == (
        "ticket [REDACTED:custom], internal_token=[REDACTED:custom] and [REDACTED:github-token] end"
    )
    assert DEFAULT(text) != r(text)  # the default has no extras
    line = json.dumps({"a": "ACME-654321", "b": {"c": "internal_token=0123456789"}})
    out = r(line)
    assert json.loads(out) == {
        "a": "[REDACTED:custom]",
        "b": {"c": "internal_token=[REDACTED:custom]"},
    }


def test_extra_pattern_across_json_structure_keeps_json_valid() -> None:
    """A user pattern that spans quotes or ends inside an escape cannot break a JSON line."""
    r = Redactor([r'password": "[^"]+"', r"token=.{12}"])
    line = json.dumps({"password": "hunter2", "x": "token=abc\ndefghijkl", "y": 1})
    out = r(line)
    back = json.loads(out)
    assert "hunter2" not in out
    assert "abc" not in out and "defghijk" not in out
    assert back["y"] == 1
    assert back == {
        "[REDACTED:custom]": "[REDACTED:custom]",
        "x": "[REDACTED:custom]kl",
        "y": 1,
    }
    # on plain text the same patterns replace the whole match
    assert r('password": "hunter2" x') == "[REDACTED:custom] x"


@pytest.mark.parametrize("bad", ["([a-z", "*oops", "(?P<x>a)(?P<x>b)", "a{2,1}"])
def test_bad_extra_pattern(bad: str) -> None:
    with pytest.raises(BadInput) as info:
        Redactor(["ok-[0-9]+", bad])
    assert repr(bad) in str(info.value)
    assert info.value.exit_code == 2


@pytest.mark.parametrize("empty", ["", "a*", "(?:x|)"])
def test_extra_pattern_matching_nothing_is_rejected(empty: str) -> None:
    with pytest.raises(BadInput, match="empty string"):
        Redactor([empty])


def test_redact_obj() -> None:
    key = "sk-" + "ant-api03-" + _B62
    obj: dict[Any, Any] = {
        "a": [f"key {key}", 1, None, True, 2.5, {"b": ("AKIA" + "Q3EXAMPLE7W4ZNR2",)}],
        f"header {key}": {"nested": {"deeper": [[f"x {key} y"]]}},
        3: "plain",
    }
    out = DEFAULT.redact_obj(obj)
    assert out == {
        "a": [
            "key [REDACTED:anthropic-key]",
            1,
            None,
            True,
            2.5,
            {"b": ("[REDACTED:aws-access-key-id]",)},
        ],
        "header [REDACTED:anthropic-key]": {
            "nested": {"deeper": [["x [REDACTED:anthropic-key] y"]]}
        },
        3: "plain",
    }
    assert key in obj["a"][0]  # the input is not modified
    assert DEFAULT.redact_obj("s") == "s"


# Plants for the branches CASES does not reach.
_MORE_PROBES = [
    "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yBxo",  # cut short
    "https:\\/\\/hooks.slack.com\\/services\\/T0AB1CD2E\\/B3FG4HI5J\\/" + _B62[:24],
    "authorization: bearer " + _B62,
    "secretAccessKey: " + _AWS_SECRET,
    "mysql -h db --password " + "Qw3rtyUiop99 app",
    "mysql -uroot -p" + "Qw3rtyUiop99 mydb",
    "curl -u admin:" + "Adm1nPassw0rd https://api.example.com",
]


def _own_ranks() -> list[tuple[int, secret_rules.Spec]]:
    specs = [*secret_rules.PROVIDERS, *secret_rules.ASSIGNMENTS]
    rules = ruleset.rules()
    ranks = [i for i, r in enumerate(rules) if not r.gitleaks]
    assert len(ranks) == len(specs)
    return list(zip(ranks, specs, strict=True))


def test_the_prefilter_never_hides_a_rule() -> None:
    """A rule runs only when one of its keywords is in the text: every rule of
    histstore's is planted somewhere above, every match of it holds one of its
    keywords, and wherever it matches the prefilter selects it."""
    probes = [secret for _kind, secret, _d, _k in CASES] + _MORE_PROBES
    probes += [f"{BEFORE} {p} {AFTER}" for p in probes]
    rules = ruleset.rules()
    for rank, spec in _own_ranks():
        rx = rules[rank].rx
        hits = [p for p in probes if rx.search(p.encode())]
        assert hits, spec
        for p in hits:
            data = p.encode()
            m = rx.search(data)
            assert any(k.encode() in m.group().lower() for k in spec.keywords), (spec, p)
            assert rank in ruleset.candidates(data), (spec, p)
            assert "[REDACTED:" in DEFAULT(p)


def test_patterns_are_json_safe_by_construction() -> None:
    """Token classes exclude quotes and backslashes: no built-in match crosses a string."""
    quoted = json.dumps(["sk-" + _B62[:10], _B62[10:] + "Qw3Er5Ty7Ui9"])
    assert DEFAULT(quoted) == quoted
    assert re.search(r'\[REDACTED:[a-z-]+\]"', DEFAULT(json.dumps("sk-" + _B62)))


@pytest.mark.parametrize(
    "value",
    [
        'ab\\\\cd"ef\u00e9\u2028gh\n\tij\\',
        '\\\\\\\\""\u0001\u001f' * 3,
        "plain text only",
    ],
)
def test_extra_pattern_cut_at_any_offset_keeps_json_valid(value: str) -> None:
    """Whatever offsets a user pattern's match starts and ends at, the line stays valid."""
    for ascii_only in (True, False):
        line = json.dumps({"k": value, "n": [1, "x"]}, ensure_ascii=ascii_only)
        start = line.index('"k": "') + 6
        end = line.rindex('", "n"')
        for i in range(start, end):
            for j in range(i + 1, end + 3):
                r = Redactor([rf"(?s)(?<=\A.{{{i}}}).{{{j - i}}}"])  # exactly line[i:j]
                back = json.loads(r(line))
                assert back["n"] == [1, "x"]
                assert "[REDACTED:custom]" in back["k"]


def test_a_token_after_a_backslash_in_a_windows_path_is_found() -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    plain = f"C:\\Users\\dev\\{token}.txt"
    assert token not in DEFAULT(plain)
    line = json.dumps({"path": plain})
    out = DEFAULT(line)
    assert token not in out and json.loads(out)["path"].startswith("C:\\Users\\dev\\[REDACTED:")
    # where the backslash makes an escape with the token's first letter, it is text
    cr = json.dumps({"x": "\rk_live_" + "a" * 24})
    assert DEFAULT(cr) == cr


class _Recorder:
    """Stands in for a rule's compiled regex and records every search."""

    def __init__(self, real: Any, log: list[tuple[int, tuple[int, int]]]) -> None:
        self._real = real
        self._regexp = self
        self._log = log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def Match(self, anchor: Any, text: bytes, pos: int, endpos: int) -> Any:
        spans = self._real._regexp.Match(anchor, text, pos, endpos)
        self._log.append((pos, spans[0]))
        return spans


CRAFTED = {
    "key-headers": "-----BEGIN PRIVATE KEY-----\n" * 400,
    "assignments": "password=Tr0ub4dor3x " * 400,
    "tokens": "token: " * 1000,
    "urls": "https://u:p4ssword@h " * 400,
    "keys": ("sk-" + _B62 + " ") * 200,
    "curl": ("curl -u admin:Adm1nPassw0rd -H 'Authorization: Bearer " + _B62 + "' ") * 200,
    "generic": "api_key = 'A1b2C3d4E5f6G7h8' " * 300,
}


@pytest.mark.parametrize("name", list(CRAFTED))
def test_no_rule_can_rescan_its_input(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault: 1 MB of crafted text took seconds to redact: a lazy repeat of up
    to 16 KiB after each `-----BEGIN … PRIVATE KEY-----` rescanned up to 16 KiB
    from every header (Python's backtracking `re`). Every rule must look at its
    input a bounded number of times (linear time):

    * every rule is an RE2 regex (RE2 matches in time linear in the text it
      searches, with no backtracking, whatever the pattern);
    * the scanner searches each rule once through the text, left to right:
      each search starts where the last one's secret ended, so all it reads
      again is the few characters its match took after the secret (or, when
      the last one was rejected, its value, which may start a real secret);
    * the Python checks and allowlists look at bounded parts of a match (the
      next tests).

    `make bench` measures the redaction rate on such text."""
    rules = ruleset.rules()
    assert all(type(r.rx).__module__ == "re2" for r in rules)
    logs: dict[int, list[tuple[int, tuple[int, int]]]] = {}
    real_rule = ruleset._Set.rule

    def recording_rule(self: Any, rank: int) -> Any:
        rule = real_rule(self, rank)
        return rule._replace(rx=_Recorder(rule.rx, logs.setdefault(rank, [])))

    monkeypatch.setattr(ruleset._Set, "rule", recording_rule)
    text = CRAFTED[name]
    out = DEFAULT(text)
    assert logs and (out != text or name == "tokens")  # the rules ran (and found)
    searched = 0
    for rank, log in logs.items():
        for (pos, (ms, me)), (nxt, _m) in itertools.pairwise(log):
            assert ms >= 0  # no search follows one that found nothing
            assert nxt > pos  # always forward
            # a search re-reads at most 8 bytes of the last match, or, when that
            # was rejected (no secret), from its secret's start (a value of at
            # most a few hundred bytes, which may start a real one)
            assert nxt >= me - 8 or (nxt > ms and me - nxt <= 300), (
                rules[rank].kind,
                pos,
                ms,
                me,
                nxt,
            )
        searched += len(log)
    assert searched <= 40 * len(text.encode()) // 20 + len(logs)


def test_checks_look_at_bounded_parts_of_a_match(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks of histstore's rules read at most the last NAME_MAX characters
    of a name and the first VALUE_MAX of a value, however long the match, so
    each costs a constant per match; a long secret is still replaced whole."""
    seen: list[tuple[str, int]] = []
    real_name, real_value = secret_rules._name, secret_rules._value_kind

    def name(n: str) -> Any:
        seen.append(("name", len(n)))
        return real_name(n)

    def value(n: str | None, v: str, quoted: bool, password: bool) -> Any:
        seen.append(("value", len(v)))
        return real_value(n, v, quoted, password)

    monkeypatch.setattr(secret_rules, "_name", name)
    monkeypatch.setattr(secret_rules, "_value_kind", value)
    long_value = "Ab1!Cd2%Ef3#Gh4^" * 6_250
    texts = [
        "x" * 100_000 + "_PASSWORD=" + long_value,
        "password = '" + long_value + "'",
        "api_" + "k" * 100_000 + "_token: " + long_value,
        "tool --token " + long_value,
        "curl -u admin:" + long_value,
        "https://" + "A1b2C3d4E5f6G7h8" * 6_250 + "@example.org/",
    ]
    for text in texts:
        out = DEFAULT(text)
        assert long_value[:32] not in out and "A1b2C3d4E5f6G7h8" not in out, out[:200]
    assert seen
    assert max(n for what, n in seen if what == "name") <= secret_rules.NAME_MAX
    assert max(n for what, n in seen if what == "value") <= secret_rules.VALUE_MAX
    assert ruleset._LINE_WINDOW <= 4096


def test_a_run_of_key_headers_with_no_end_is_redacted_whole() -> None:
    text = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n" * 50
    out = Redactor([])(text)
    assert "MIIEvQ" not in out and "PRIVATE KEY" not in out


@pytest.mark.parametrize(
    "line",
    [
        # duplicate keys: the parsed value keeps one; the text is written anew
        '{"a": "x", "a": "token = ' + "ghp_" + _B62 + 'a1B2"}',
        # "\/" escapes: the strings are laid out one by one
        json.dumps(
            {"u": "https://hooks.slack.com/services/T0AB1CD2E/B3FG4HI5J/" + _B62[:24]}
        ).replace("/", "\\/"),
        # a secret in a key, and next to numbers and literals that stay as they are
        json.dumps({"ghp_" + _B62 + "a1B2": [1, 2.5, True, None], "client_secret": 1234567890123}),
        # three documents deep, each with escapes of its own
        json.dumps(
            {"l1": json.dumps({"l2": json.dumps({"l3": "a\n\t" + "AKIA" + "Q3EXAMPLE7W4ZNR2\n"})})}
        ),
        # a lone surrogate beside a secret
        '{"t": "cut \\ud83d then sk-' + _B62 + 'Qw3Er5Ty7Ui9Op1A"}',
    ],
)
def test_json_text_stays_json_of_the_same_shape(line: str) -> None:
    out, value = redact.redact_json_line(DEFAULT, line)
    assert "[REDACTED:" in out
    for secret in (_B62, "Q3EXAMPLE7W4ZNR2"):
        assert secret not in out and secret not in json.dumps(value)
    before = json.loads(line)

    def shape(v: Any) -> Any:
        while isinstance(v, str) and v[:1] in "{[":
            try:
                v = json.loads(v)
            except ValueError:
                break
        if isinstance(v, dict):
            return {"dict": len(v), "items": [shape(x) for x in v.values()]}
        if isinstance(v, list):
            return [shape(x) for x in v]
        return type(v).__name__ if isinstance(v, str) else v

    assert shape(json.loads(out)) == shape(before)
    assert json.loads(out) == value
