"""The suite's own switches (issue 10, point 7): fsync is off in every test
that does not test durability and on in those that do (and in the processes
each starts); property tests run derandomised unless ``make test-deep`` asks
for fresh examples."""

from __future__ import annotations

import os

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
