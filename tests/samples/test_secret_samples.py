"""False positives of the secret rules on real agent sessions (../shared/samples).

The samples are not part of the project: this module skips when they are absent.
Every line of every session file is redacted as an import redacts it; what the
rules find there is counted by kind and printed (``pytest -s``). The samples
hold few real secrets, so nearly every finding is a false positive: the rate
must stay rare. At rule-set version 1 there were 9 findings in 10.3 MiB: 4 the
same dev token in ``-H 'X-Api-Token: …'`` (curl-auth-header), a
``RAILWAY_TOKEN='…'`` and a database URL's password (real-looking
credentials), and 3 generic-api-key, two of them public Solana addresses after
``Token Mint:`` (false positives).
"""

from __future__ import annotations

import collections
import json
import pathlib
import re

import pytest

from histstore.store.redact import DEFAULT, KINDS

SAMPLES = (pathlib.Path(__file__).resolve().parents[2] / ".." / "shared" / "samples").resolve()

if not SAMPLES.is_dir():
    pytest.skip(
        f"real session samples not found at {SAMPLES} (only present in the dev workspace)",
        allow_module_level=True,
    )

pytestmark = pytest.mark.samples

MARKER = re.compile(r"\[REDACTED:([a-z0-9-]+)\]")
#: findings per MiB of session text the rules may make on the samples
MAX_PER_MIB = 2.0


def test_false_positives_on_the_real_samples_stay_rare() -> None:
    files = sorted(SAMPLES.rglob("*.jsonl"))
    assert files
    size = 0
    found: collections.Counter[str] = collections.Counter()
    for path in files:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            size += len(line.encode())
            out = DEFAULT(line)
            if out != line:
                json.loads(out)  # still valid JSON
                found.update(
                    collections.Counter(MARKER.findall(out))
                    - collections.Counter(MARKER.findall(line))
                )
    mib = size / 2**20
    total = sum(found.values())
    print(
        f"\nsecret rules on the samples: {total} findings in {mib:.1f} MiB of "
        f"{len(files)} session files: {dict(sorted(found.items()))}"
    )
    assert set(found) <= set(KINDS)
    assert total <= MAX_PER_MIB * mib, dict(found)
