"""Rewrite the test modules' asserts once, before the suite's workers start.

pytest rewrites the asserts of every test module it imports (so a failure
shows its values) and caches the result beside it, unless bytecode writing is
off (PYTHONDONTWRITEBYTECODE), in which case every worker rewrites every module
again: ~5 s of each worker's start. It reads a cached rewrite either way. This
writes that cache, the modules shared between two processes, as pytest itself
would (the same private functions): `make unit` runs it beside the linters.

Only an optimisation: with another pytest whose internals differ it does
nothing, and pytest rewrites as usual.
"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TESTS = Path(__file__).resolve().parent


class _State:
    """What pytest's writer asks of its assertion state: a trace."""

    def trace(self, message: str) -> None:
        pass


def _rewrite(path: str) -> int:
    try:
        from _pytest.assertion import rewrite

        fn = Path(path)
        cache = rewrite.get_cache_dir(fn)
        pyc = cache / (fn.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(fn, pyc) is not None:
            return 0
        if not rewrite.try_makedirs(cache):
            return 0
        source_hash, co = rewrite._rewrite_test(fn, None)
        return int(bool(rewrite._write_pyc(_State(), co, source_hash, pyc)))
    except Exception:  # another pytest: it rewrites as usual
        return 0


def main() -> int:
    files = sorted(
        str(p)
        for p in TESTS.rglob("*.py")
        if (p.name.startswith("test_") or p.name == "conftest.py")
        and "bench" not in p.relative_to(TESTS).parts
    )
    with ProcessPoolExecutor(2) as pool:
        done = sum(pool.map(_rewrite, files))
    if "-v" in sys.argv:
        print(f"rewrote {done} of {len(files)} test modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
