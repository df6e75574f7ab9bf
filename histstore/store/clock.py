"""The store's clock: times it records are RFC 3339, UTC, milliseconds, ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime


def now_rfc3339() -> str:
    t = datetime.now(UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
