"""Invariant 5: secrets are redacted before anything is hashed; no byte of the store holds one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import tomli_w
from helpers import HS, turn_record

from histstore.store.config import read_config
from histstore.store.store import Store

PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAq7BFUpkGp3+LQmlQpDLsqfXUhXjYkbBx0ZeU3OSSMIKeYqsZ\n"
    "cWVbAsFSwtn9ZHs3TAVL1dcFhDuMZiG9dCKhPQTk5nY2JWx4S6PyRU1Ez2N1tEG2\n"
    "-----END RSA PRIVATE KEY-----"
)
SECRETS = {
    "openai": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7CD0EF",
    "anthropic": "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa-ZZyyXXwwVV",
    "github": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github-pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123",
    "aws": "AKIAIOSFODNN7EXAMPLQ",
    "slack": "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "private-key-body": "MIIEowIBAAKCAQEAq7BFUpkGp3+LQmlQpDLsqfXUhXjYkbBx0ZeU3OSSMIKeYqsZ",
    "url-password": "hunter2-Very-Secret",
    # gitleaks' rules and histstore's assignment rules
    "npm": "npm_" + "x44s0o2a0qpoastvjtboqbjb33sotxq0fw51",
    "sendgrid": "SG." + "hdz2GXnBo1nKo63sZEqqZ3.CYxU_w0A2c-MLpjN_E8A4r-knOh7k_gQvmUZKYiCy6A",
    "env-password": "Winter" + "Is-Coming-2026",
    "account-key": "0nIbOvV1LUBuzfkJacmIynp//TcaiG1pQ19WEzNuCxwX" + "TjsdAs0lHL2RPYzQF6dcSc4==",
    "discord-webhook": "xqzuB7FAs2KemDVLDhnblmuseX3UNDuw" + "RSY1EM0tSn1W-TsWF23xz3iW0nbF7OT6ixKk",
}
URL = f"postgres://admin:{SECRETS['url-password']}@db.internal:5432/prod"
# the secrets planted in lines of their own form (the others as "name = value")
_LINES = {
    "private-key-body": "",
    "url-password": "",
    "env-password": f"DB_PASSWORD={SECRETS['env-password']}",
    "account-key": f"DefaultEndpointsProtocol=https;AccountKey={SECRETS['account-key']};",
    "discord-webhook": "https://discord.com/api/webhooks/1234567890123456789/"
    + SECRETS["discord-webhook"],
}


def planted_text() -> str:
    parts = [f"{k} = {v}" for k, v in SECRETS.items() if k not in _LINES]
    lines = "".join(f"{line}\n" for line in _LINES.values() if line)
    return "use these: " + "; ".join(parts) + f"\n{lines}connect to {URL}\nkey:\n{PRIVATE_KEY}\n"


def all_store_bytes(store: Store, root: Path) -> list[bytes]:
    """Every file of the store as stored, plus every object decompressed."""
    chunks = [p.read_bytes() for p in root.rglob("*") if p.is_file()]
    for oid in store.objects.iter_ids():
        chunks.append(store.objects.get(oid)[1])
    return chunks


def assert_no_secret(store: Store, root: Path) -> None:
    chunks = all_store_bytes(store, root)
    assert len(chunks) > 3
    for name, secret in SECRETS.items():
        needle = secret.encode()
        leaks = [c[:80] for c in chunks if needle in c]
        assert not leaks, f"{name} leaked into the store"


def test_turn_jsonl_secrets_never_reach_the_store(hs: HS, tmp_path: Path, store_path: Path) -> None:
    hs("init")
    text = planted_text()
    rec = turn_record(
        1,
        asked=text,
        answered=text,
        steps=[
            {
                "type": "tool",
                "id": "t",
                "name": "Read",
                "input": {"file_path": ".env", "note": text},
                "output": text * 30,
                "is_error": False,
                "at": None,
            }
        ],
        raw=[json.dumps({"line": text})],
        extra_field=text,
    )
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    r = hs("import", str(path))
    assert r.exit_code == 0, r.stderr
    r = hs("record", input=json.dumps({**rec, "turn_id": "other"}))
    assert r.exit_code == 0, r.stderr
    with Store.open(store_path) as store:
        assert_no_secret(store, store_path)
    shown = hs("show", "--full", "turn-0001").stdout
    assert "[REDACTED:" in shown and SECRETS["github"] not in shown


def test_claude_code_secrets_never_reach_the_store(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    hs("init")
    text = planted_text()
    proj = tmp_path / "projects" / "-home-dev-app"
    proj.mkdir(parents=True)
    env = {"cwd": "/home/dev/app", "sessionId": "abc-1", "isSidechain": False, "version": "2.0.1"}
    lines = [
        {
            **env,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": text},
        },
        {
            **env,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {
                "id": "m1",
                "role": "assistant",
                "model": "claude",
                "type": "message",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "tu1",
                        "name": "Read",
                        "input": {"file_path": "/home/dev/app/.env"},
                    }
                ],
            },
        },
        {
            **env,
            "type": "user",
            "uuid": "r1",
            "parentUuid": "a1",
            "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": text * 20}],
            },
            "toolUseResult": {"type": "text", "file": {"filePath": ".env", "content": text * 20}},
        },
        {
            **env,
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "r1",
            "timestamp": "2026-01-01T00:00:03.000Z",
            "message": {
                "id": "m2",
                "role": "assistant",
                "model": "claude",
                "type": "message",
                "content": [{"type": "text", "text": "found " + text}],
            },
        },
    ]
    (proj / "abc-1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = hs("import", str(tmp_path / "projects"))
    assert r.exit_code == 0 and "turns: 1 added" in r.stdout, r.stdout + r.stderr
    with Store.open(store_path) as store:
        assert_no_secret(store, store_path)
    raw = hs("show", "--raw", "u1").stdout
    assert len(raw.splitlines()) == 4
    for line in raw.splitlines():
        json.loads(line)  # redacted raw records are still valid JSON


def test_extra_patterns_from_config(hs: HS, store_path: Path) -> None:
    hs("init")
    cfg = read_config(store_path)
    cfg["redact"]["patterns"] = [r"ACME-[0-9]{6}"]
    (store_path / "config.toml").write_text(tomli_w.dumps(cfg))
    r = hs("record", input=json.dumps(turn_record(1, asked="the ticket key is ACME-123456")))
    assert r.exit_code == 0, r.stderr
    with Store.open(store_path) as store:
        assert not any(b"ACME-123456" in c for c in all_store_bytes(store, store_path))


def test_secret_in_the_command_line_is_redacted_in_the_refs_log(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    hs("init")
    d = tmp_path / SECRETS["github"]
    d.mkdir()
    (d / "t.jsonl").write_text(json.dumps(turn_record(1)) + "\n")
    assert hs("import", str(d / "t.jsonl")).exit_code == 0
    assert SECRETS["github"].encode() not in (store_path / "refs.log").read_bytes()
    with Store.open(store_path) as store:
        assert not any(SECRETS["github"].encode() in c for c in all_store_bytes(store, store_path))


def test_secret_spelled_with_unicode_escapes_is_caught(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    """JSON may spell any character as \\uXXXX: the patterns cannot see such a
    secret in the text, so the decoded strings are redacted too."""
    hs("init")
    key = SECRETS["github"]
    escaped = "".join(f"\\u{ord(c):04x}" for c in key)
    line = json.dumps(turn_record(1)).replace('"answer 1', f'"{escaped} answer 1')
    assert key not in line and json.loads(line)["answered"].startswith(key)
    path = tmp_path / "t.jsonl"
    path.write_text(line + "\n")
    assert hs("import", str(path)).exit_code == 0
    proj = tmp_path / "projects" / "-p"
    proj.mkdir(parents=True)
    env = {"cwd": "/p", "sessionId": "esc-1", "isSidechain": False}
    rec = {
        **env,
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "X"},
    }
    (proj / "esc-1.jsonl").write_text(json.dumps(rec).replace('"X"', f'"{escaped}"') + "\n")
    assert hs("import", str(tmp_path / "projects")).exit_code == 0
    with Store.open(store_path) as store:
        chunks = all_store_bytes(store, store_path)
        assert not any(key.encode() in c or escaped.encode() in c for c in chunks)


def test_secrets_in_file_and_folder_names_never_reach_the_store(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    hs("init")
    token = SECRETS["github"]
    proj = tmp_path / "projects" / f"-home-me-{token}"
    proj.mkdir(parents=True)
    rec = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "isSidechain": False,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "hi"},
    }
    (proj / f"{token}.jsonl").write_text(json.dumps(rec) + "\n")  # no sessionId, no cwd
    r = hs("import", str(tmp_path / "projects"))
    # the session id the file name gives is refused once redacted (not an id):
    # reported, exit 1 (the terminal may echo the path the person typed)
    assert r.exit_code == 1 and "some input was not imported" in r.stderr
    with Store.open(store_path) as store:
        assert not any(token.encode() in c for c in all_store_bytes(store, store_path))


def _detect_secrets(text: str, tmp: Path) -> list[tuple[str, str]]:
    """(type, value) of every secret detect-secrets finds in ``text``, with all
    its plugins and filters as its command line has them."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    path = tmp / "corpus.txt"
    path.write_text(text)
    lines = text.splitlines()
    found = []
    with default_settings():
        collection = SecretsCollection()
        collection.scan_file(str(path))
        for _file, s in collection:
            value = s.secret_value
            assert value is not None
            if len(value) < 8:
                # a plugin that reports only a token's prefix (GitHub, GitLab):
                # the whole token is the word it starts
                line = lines[s.line_number - 1]
                value = re.search(re.escape(value) + r"\S*", line).group()  # type: ignore[union-attr]
            found.append((s.type, value))
    return found


def test_what_detect_secrets_finds_never_reaches_the_store(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    """detect-secrets, an independent scanner, is the oracle: over every secret
    the tests plant (tests/secretcases.py, tests/test_redact.py and the text
    above), whatever it finds, the store must not hold."""
    from secretcases import ASSIGNED, MUST_CATCH
    from test_redact import CASES

    corpus = [c.text for c in MUST_CATCH + ASSIGNED] + [c[1] for c in CASES]
    corpus += planted_text().splitlines()
    text = "\n".join(corpus) + "\n"
    found = _detect_secrets(text, tmp_path)
    assert len(found) >= 40  # the oracle works (it knows most of these kinds)
    hs("init")
    turns = [
        turn_record(i, asked=chunk, answered="ok")
        for i, chunk in enumerate(
            ["\n".join(corpus[j : j + 8]) for j in range(0, len(corpus), 8)], 1
        )
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    r = hs("import", str(path))
    assert r.exit_code == 0, r.stderr
    with Store.open(store_path) as store:
        chunks = all_store_bytes(store, store_path)
    leaks = [(kind, value) for kind, value in found if any(value.encode() in c for c in chunks)]
    assert not leaks
