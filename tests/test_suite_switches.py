"""The suite's own switches (issue 10, point 7): fsync is off in every test
that does not test durability and on in those that do (and in the processes
each starts); property tests run derandomised unless ``make test-deep`` asks
for fresh examples."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from histstore.store import fsutil


def test_fsync_is_off_where_durability_is_not_tested() -> None:
    assert fsutil.FSYNC is False
    assert os.environ.get("HS_TEST_NO_FSYNC") == "1"  # and in the processes it starts


@pytest.mark.durability
def test_fsync_stays_on_in_a_durability_test() -> None:
    assert fsutil.FSYNC is True
    assert "HS_TEST_NO_FSYNC" not in os.environ


def test_property_tests_run_derandomised_but_in_the_deep_profile() -> None:
    deep = os.environ.get("HS_HYPOTHESIS_PROFILE") == "deep"
    assert settings.default.derandomize is not deep


def test_the_rewrite_cache_is_what_pytest_reads_and_would_write(tmp_path: Path) -> None:
    """`make unit` rewrites the test modules' asserts once (tests/rewrite_cache.py):
    pytest must take that cache as its own, and it must hold the very code pytest
    makes of the module."""
    import rewrite_cache
    from _pytest.assertion import rewrite

    fn = tmp_path / "test_sample.py"
    fn.write_text("def test_one() -> None:\n    x = 1\n    assert x + 1 == 3, 'off by one'\n")
    assert rewrite_cache._rewrite(str(fn)) == 1
    pyc = rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)
    cached = rewrite._read_pyc(fn, pyc)
    assert cached is not None
    _, fresh = rewrite._rewrite_test(fn, None)  # type: ignore[arg-type]
    assert cached == fresh
    assert rewrite_cache._rewrite(str(fn)) == 0  # there already: left alone
    namespace: dict[str, object] = {}
    exec(cached, namespace)
    with pytest.raises(AssertionError, match=r"off by one\nassert \(1 \+ 1\) == 3"):
        namespace["test_one"]()  # type: ignore[operator]
