"""The one three-way rule (histstore.store.merge) every merge follows."""

from __future__ import annotations

from histstore.store.merge import deletion_loses, keep, merge3, merge3_keyed


def test_one_side_changed_takes_that_side() -> None:
    assert merge3("a", "b", "a", keep("x")) == ("b", False)
    assert merge3("b", "a", "a", keep("x")) == ("b", False)
    assert merge3("b", "b", "a", keep("x")) == ("b", False)
    assert merge3("a", "a", "a", keep("x")) == ("a", False)


def test_both_changed_differently_is_a_conflict_settled_by_the_policy() -> None:
    assert merge3("b", "c", "a", keep("x")) == ("x", True)
    assert merge3("b", "c", "a", lambda o, t: max(o, t)) == ("c", True)


def test_a_deletion_is_a_change_and_loses_under_deletion_loses() -> None:
    assert merge3(None, "a", "a", deletion_loses) == (None, False)  # deleted, unchanged there
    assert merge3(None, "b", "a", deletion_loses) == ("b", True)  # deleted here, changed there
    assert merge3("b", None, "a", deletion_loses) == ("b", True)


def test_keyed_merge_drops_what_ends_absent_and_names_the_conflicts() -> None:
    ours = {"a": 1, "b": 2, "c": 3}
    theirs = {"a": 1, "b": 20, "d": 4}
    base = {"a": 1, "b": 2, "c": 3, "d": 5}
    merged, conflicts = merge3_keyed(ours, theirs, base, deletion_loses)
    # c: deleted there, unchanged here; d: deleted here but changed there (a conflict)
    assert merged == {"a": 1, "b": 20, "d": 4}
    assert conflicts == ["d"]
    merged, conflicts = merge3_keyed({"a": 2}, {"a": 3}, {"a": 1}, deletion_loses)
    assert merged == {"a": 2} and conflicts == ["a"]
