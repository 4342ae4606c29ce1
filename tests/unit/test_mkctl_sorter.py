"""`get --sort-by`'s comparisons (kubectl's sorter.go isLess and sortorder.NaturalLess)."""

from __future__ import annotations

import pytest

from minikube_py.mkctl.errors import MkctlError
from minikube_py.mkctl.sorter import is_less, natural_less, sort_objects, sort_table


@pytest.mark.parametrize(("left", "right", "less"), [
    ("a2", "a10", True), ("a10", "a2", False), ("a02", "a2", False), ("a2", "a02", True),
    ("1x", "ax", True), ("ax", "1x", False), ("abc", "abd", True), ("ab", "abc", True),
    ("", "a", True), ("same", "same", False), ("web-9", "web-10", True),
])
def test_natural_order(left: str, right: str, less: bool) -> None:
    assert natural_less(left, right) is less


@pytest.mark.parametrize(("left", "right", "less"), [
    ("100m", "1", True), ("2Gi", "3G", True), ("10", "9", False), ("b1", "a2", False),
    (1, 2, True), (2.5, 1.5, False), (None, "a", True), ("a", None, False),
])
def test_values_compare_as_kubectl_compares_decoded_json(left: object, right: object,
                                                         less: bool) -> None:
    assert is_less(left, right, "{.x}") is less


@pytest.mark.parametrize(("left", "right"), [(True, False), (1, 1.5), ({}, {}), ("a", 1)])
def test_other_values_are_unsortable(left: object, right: object) -> None:
    with pytest.raises(MkctlError, match="unsortable"):
        is_less(left, right, "{.x}")


def test_objects_without_the_field_sort_first_and_none_having_it_is_an_error() -> None:
    objects = [{"n": "c", "v": 3}, {"n": "a"}, {"n": "b", "v": 1}]
    assert [o["n"] for o in sort_objects(objects, ".v")] == ["a", "b", "c"]
    with pytest.raises(MkctlError, match='couldn\'t find any field with path "{.w}"'):
        sort_objects(objects, "w")
    assert sort_objects(objects[:1], ".w") == objects[:1]


def test_a_tables_rows_sort_by_their_objects_and_none_having_the_field_leaves_none() -> None:
    table = {"kind": "Table", "rows": [{"object": {"spec": {"r": r}}} for r in (2, 1, 3)]}
    sort_table(table, "{.spec.r}")
    assert [row["object"]["spec"]["r"] for row in table["rows"]] == [1, 2, 3]
    sort_table(table, ".spec.nothing")
    assert table["rows"] == []
