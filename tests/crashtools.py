"""The crash-point harness the kill tests share (imported as `crashtools`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


def run_killed(
    kill_at: int, steps: tuple[str, ...], body: Callable[[Callable[[], int]], Any]
) -> int:
    """Run ``body`` in a forked child whose calls of ``os.<step>`` for each
    of ``steps`` are counted; the child dies (os._exit, nothing cleaned up)
    just before its ``kill_at``-th such call (-1: never). ``body`` gets a
    function giving the count so far (to mark where its phases begin).
    Returns the steps the child took — all of them when it lived — and
    fails when the child failed instead of being killed."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        count = 0

        def guarded(name: str) -> Any:
            real = getattr(os, name)

            def call(*a: Any, **k: Any) -> Any:
                nonlocal count
                if count == kill_at:
                    os._exit(9)
                count += 1
                return real(*a, **k)

            return call

        for name in steps:
            setattr(os, name, guarded(name))
        try:
            body(lambda: count)
        except BaseException:
            os._exit(3)
        os.write(w, str(count).encode())
        os._exit(0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    out = os.read(r, 64).decode()
    os.close(r)
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, 9), f"the child failed (exit {code})"
    return int(out) if code == 0 else kill_at
