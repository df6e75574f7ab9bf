"""Redaction runs in time linear in its input, on ordinary and on crafted text.

``make bench BENCH_ARGS='-k redact'``. Each input is redacted at 64 KiB and at
1 MiB; a rule that rescans its input (the fault a lazy 16 KiB repeat after
every private-key header once had: seconds for 1 MiB of headers) shows as a
per-byte cost that grows with the size. Figures: MB/s at each size and their
ratio (1.0 = linear), against plain prose measured in the same run.

The crafted inputs aim at the rules: runs of their keywords and prefixes
(each makes the prefilter run the rules it names), of near-matches, of
matches (each costs Python work: checks, entropy, allowlists), and JSON text
(decoded before the rules run). Every input repeats one block, so it holds
the same keywords at both sizes: random text would hold more keywords, so
run more rules, the longer it is. Each is redacted once first, so the rules
it needs are compiled before the clock runs.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable

import benchutil as bu
import pytest

from histstore.store.redact import Redactor

KIB = 1024

_R = random.Random(16)
_B64 = "".join(
    _R.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    for _ in range(4096)
)
_HEX = "".join(_R.choice("0123456789abcdef") for _ in range(4096))


def _rep(block: str) -> Callable[[int], str]:
    return lambda n: (block * (n // len(block) + 1))[:n]


def _json_line(block: str) -> Callable[[int], str]:
    return lambda n: json.dumps({"type": "tool_result", "content": _rep(block)(n - 40)})


INPUTS: dict[str, Callable[[int], str]] = {
    "prose": _rep("the login_user handler refreshes tokens in the middleware. "),
    "key-headers": _rep("-----BEGIN PRIVATE KEY-----\n"),
    "base64-run": lambda n: "A" * n,
    "url-colons": _rep("https://u:p"),
    "sk-prefixes": _rep("sk-"),
    "random-base64": _rep(_B64),
    "random-hex": _rep(_HEX),
    "keyword-soup": _rep("api_key_secret_token_password_"),
    "curl-words": _rep("curl "),
    "token-colons": _rep("token: "),
    "assignments": _rep("password=Tr0ub4dor3x "),
    "export-quotes": _rep('export SECRET="'),
    "url-users": _rep("https://u:p@"),
    "jwt-heads": _rep("eyJhbGciOiJIUzI1NiJ9."),
    "json-escapes": _json_line('line of output\n\t"quoted" '),
    "json-unicode": _json_line("caf\u00e9 \u2014 token=abc "),
    "json-keys": lambda n: json.dumps([{"api_key": "k3J9sL2xQ8wE5tYq"}] * (n // 32)),
}


def rate(redact: Redactor, text: str) -> float:
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        redact(text)
        best = min(best, time.perf_counter() - t)
    return len(text) / best / 1e6


@pytest.mark.parametrize("kind", list(INPUTS))
def test_redaction_is_linear(benchmark: object, kind: str) -> None:
    redact = Redactor([])
    small, large = INPUTS[kind](64 * KIB), INPUTS[kind](1024 * KIB)
    redact(small)  # compile the rules it needs
    r_small, r_large = rate(redact, small), rate(redact, large)
    benchmark.pedantic(redact, args=(large,), rounds=1, iterations=1)  # type: ignore[attr-defined]
    line = (
        f"redact {kind}: {r_small:.1f} MB/s at 64 KiB, {r_large:.1f} MB/s at 1 MiB "
        f"(1 MiB / 64 KiB per-byte cost: {r_small / r_large:.2f}x; 1.0 = linear)"
    )
    bu.SUMMARY.append(line)
