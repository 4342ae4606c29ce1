"""IntOrString counts and percentages scale and fail as upstream's intstr and deployment util."""

from __future__ import annotations

import pytest

from minikube_py.api.intstr import resolve_fenceposts, scaled_value_from_int_or_percent


# Cases from upstream TestGetIntFromIntOrPercent, plus rounding and signs.
@pytest.mark.parametrize(
    ("value", "total", "round_up", "expected"),
    [
        (123, 0, False, 123),  # an int is not scaled
        (0, 10, True, 0),
        ("90%", 100, True, 90),
        ("90%", 95, True, 86),
        ("90%", 95, False, 85),
        ("25%", 10, True, 3),
        ("25%", 10, False, 2),
        ("0%", 10, True, 0),
        ("100%", 7, False, 7),
        ("150%", 10, False, 15),
        ("+40%", 10, False, 4),
        ("-10%", 15, False, -2),  # validation refuses negatives; the helper just floors
    ],
)
def test_scaled_value_from_int_or_percent(
    value: int | str, total: int, round_up: bool, expected: int
) -> None:
    assert scaled_value_from_int_or_percent(value, total, round_up) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "nil value for IntOrString"),
        ("90", "invalid value for IntOrString: invalid type: string is not a percentage"),
        ("90#", "invalid value for IntOrString: invalid type: string is not a percentage"),
        ("40%%", 'invalid value for IntOrString: invalid value "40%%": '
                 'strconv.Atoi: parsing "40%": invalid syntax'),
        ("%", 'invalid value for IntOrString: invalid value "%": '
              'strconv.Atoi: parsing "": invalid syntax'),
        ("#%", 'invalid value for IntOrString: invalid value "#%": '
               'strconv.Atoi: parsing "#": invalid syntax'),
        (" 5%", 'invalid value for IntOrString: invalid value " 5%": '
                'strconv.Atoi: parsing " 5": invalid syntax'),
        ("99999999999999999999%", 'invalid value for IntOrString: invalid value '
                                  '"99999999999999999999%": strconv.Atoi: parsing '
                                  '"99999999999999999999": value out of range'),
    ],
)
def test_scaled_value_rejects_what_is_not_an_int_or_a_percentage(
    value: str | None, message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        scaled_value_from_int_or_percent(value, 10, True)
    assert str(raised.value) == message


# Cases from upstream TestResolveFenceposts, plus ints.
@pytest.mark.parametrize(
    ("max_surge", "max_unavailable", "desired", "expected"),
    [
        ("0%", "0%", 0, (0, 1)),  # both zero: one may be unavailable
        ("39%", "39%", 10, (4, 3)),  # surge rounds up, unavailable down
        (None, "39%", 10, (0, 3)),
        ("39%", None, 10, (4, 0)),
        (None, None, 10, (0, 1)),
        ("25%", "25%", 8, (2, 2)),
        ("0%", "1%", 1, (0, 1)),
        (1, 1, 2, (1, 1)),
        (0, 0, 3, (0, 1)),
        (5, "10%", 3, (5, 0)),
    ],
)
def test_resolve_fenceposts(
    max_surge: int | str | None,
    max_unavailable: int | str | None,
    desired: int,
    expected: tuple[int, int],
) -> None:
    assert resolve_fenceposts(max_surge, max_unavailable, desired) == expected


@pytest.mark.parametrize(("max_surge", "max_unavailable"), [("oops", "39%"), ("55%", "urg")])
def test_resolve_fenceposts_fails_on_a_bad_value(max_surge: str, max_unavailable: str) -> None:
    with pytest.raises(ValueError, match="invalid value for IntOrString"):
        resolve_fenceposts(max_surge, max_unavailable, 10)
