"""Redaction runs in time linear in its input, on ordinary and on crafted text.

``make bench BENCH_ARGS='-k redact'``. Each input is redacted at 64 KiB and at
1 MiB; a rule that rescans its input (the fault a lazy 16 KiB repeat after
every private-key header once had: seconds for 1 MiB of headers) shows as a
per-byte cost that grows with the size. Figures: MB/s at each size and their
ratio (1.0 = linear), against plain prose measured in the same run.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import benchutil as bu
import pytest

from histstore.store.redact import Redactor

KIB = 1024

INPUTS: dict[str, Callable[[int], str]] = {
    "prose": lambda n: ("the login_user handler refreshes tokens in the middleware. " * n)[:n],
    "key-headers": lambda n: ("-----BEGIN PRIVATE KEY-----\n" * n)[:n],
    "base64-run": lambda n: "A" * n,
    "url-colons": lambda n: ("https://u:p" * n)[:n],
    "sk-prefixes": lambda n: ("sk-" * n)[:n],
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
    r_small, r_large = rate(redact, small), rate(redact, large)
    benchmark(redact, large)  # type: ignore[operator]
    line = (
        f"redact {kind}: {r_small:.1f} MB/s at 64 KiB, {r_large:.1f} MB/s at 1 MiB "
        f"(1 MiB / 64 KiB per-byte cost: {r_small / r_large:.2f}x; 1.0 = linear)"
    )
    bu.SUMMARY.append(line)
