"""Resource quantities parse, round and print as upstream's resource.Quantity."""

from __future__ import annotations

from decimal import Decimal

import pytest

from minikube_py.api.quantity import (
    Quantity,
    QuantityError,
    canonical_quantity,
    cpu_millis,
    format_quantity,
    memory_bytes,
    parse_quantity,
)

FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
BAD_SUFFIX = "unable to parse quantity's suffix"


# Cases from upstream's TestQuantityParse.
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", "0"),
        ("0n", "0"),
        ("0Ki", "0"),
        ("1", "1"),
        ("1Ki", "1024"),
        ("8Ki", str(8 * 1024)),
        ("7Mi", str(7 * 1024**2)),
        ("6Gi", str(6 * 1024**3)),
        ("5Ti", str(5 * 1024**4)),
        ("4Pi", str(4 * 1024**5)),
        ("3Ei", str(3 * 1024**6)),
        ("5n", "5e-9"),
        ("4u", "4e-6"),
        ("3m", "0.003"),
        ("8k", "8000"),
        ("50k", "50000"),
        ("7M", "7e6"),
        ("6G", "6e9"),
        ("5T", "5e12"),
        ("2P", "2e15"),
        ("1E", "1e18"),
        ("1E-3", "0.001"),
        ("1e3", "1000"),
        ("1.3E+6", "1300000"),
        ("100.035k", "100035"),
        ("0.0005k", "0.5"),
        ("0.5e-2", "0.005"),
        ("10.035M", "10035000"),
        ("6.987654321G", "6987654321"),
        ("1.01E", "1.01e18"),
        ("100.035Ki", "102435.84"),
        ("0.5Mi", str(512 * 1024)),
        ("0.05Gi", "53687091.2"),
        (".001", "0.001"),
        (".0001k", "0.1"),
        ("1.", "1"),
        ("1.G", "1e9"),
        ("+1.5", "1.5"),
        ("-1", "-1"),
        ("-100m", "-0.1"),
    ],
)
def test_parse_quantity_matches_upstream_values(text: str, expected: str) -> None:
    assert parse_quantity(text) == Decimal(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3.001n", "4e-9"),
        ("1.1E-9", "2e-9"),
        ("0.0000000001", "1e-9"),
        ("0.5e-9", "1e-9"),
        ("0.00000012345", "124e-9"),
        ("0.000000000001Ki", "2e-9"),
        ("-0.1n", "-1e-9"),
    ],
)
def test_parse_quantity_rounds_up_to_whole_nano_units(text: str, expected: str) -> None:
    assert parse_quantity(text) == Decimal(expected)


@pytest.mark.parametrize("text", ["9Ei", "9223372036854775807Ki"])
def test_binary_quantities_saturate_at_int64_max(text: str) -> None:
    assert parse_quantity(text) == 2**63 - 1


def test_decimal_quantities_are_not_capped() -> None:
    assert parse_quantity("12E") == Decimal("12e18")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (100, "100"),
        (0.5, "0.5"),
        (1e-05, "0.00001"),
        (Decimal("2.5"), "2.5"),
        (" 1Gi ", "1073741824"),
    ],
)
def test_parse_quantity_accepts_json_numbers_and_surrounding_space(
    value: object, expected: str
) -> None:
    assert parse_quantity(value) == Decimal(expected)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", FORMAT_WRONG),
        ("1.1.M", FORMAT_WRONG),
        ("1+1.0M", FORMAT_WRONG),
        ("0.1am", FORMAT_WRONG),
        ("aoeu", FORMAT_WRONG),
        ("1 Gi", FORMAT_WRONG),
        ("m", FORMAT_WRONG),
        ("Gi", FORMAT_WRONG),
        ("-", FORMAT_WRONG),
        ("0.1mi", BAD_SUFFIX),
        (".5i", BAD_SUFFIX),
        ("1i", BAD_SUFFIX),
        ("-3.01i", BAD_SUFFIX),
        ("-3.01e-", BAD_SUFFIX),
        ("1K", BAD_SUFFIX),
        ("1e99999999999", BAD_SUFFIX),
    ],
)
def test_parse_quantity_rejects_malformed_strings(text: str, message: str) -> None:
    with pytest.raises(QuantityError) as err:
        parse_quantity(text)
    assert str(err.value) == message


@pytest.mark.parametrize("value", [True, None, [1], {"a": 1}, float("inf"), float("nan")])
def test_parse_quantity_rejects_values_that_are_not_numbers_or_strings(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)  # type: ignore[arg-type]


# Canonical strings from upstream's TestQuantityString and its type comments.
@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1.5", "1500m"),
        ("1.5Gi", "1536Mi"),
        ("1024Mi", "1Gi"),
        ("307200Ki", "300Mi"),
        ("1025024Mi", "1001Gi"),
        ("1024Gi", "1Ti"),
        ("1025Ki", "1025Ki"),
        ("0.5Ki", "512"),
        ("1000M", "1G"),
        ("0.001T", "1G"),
        ("1000u", "1m"),
        ("1.08", "1080m"),
        ("1080000000n", "1080m"),
        ("3000", "3k"),
        ("0", "0"),
        ("0Gi", "0"),
        (".001e12", "1e9"),
        ("0.001e0", "1e-3"),
        ("1000e-12", "1e-9"),
        ("1.3E+6", "1300e3"),
        ("-9.01", "-9010m"),
        ("1.1Ki", "1126400m"),
        ("1000E", "1e21"),
    ],
)
def test_canonical_quantity_uses_the_largest_exact_suffix_of_its_format(
    text: str, canonical: str
) -> None:
    assert canonical_quantity(text) == canonical


@pytest.mark.parametrize(
    ("value", "binary", "expected"),
    [
        (Decimal("0.5"), False, "500m"),
        (Decimal("2000"), False, "2k"),
        (Decimal("2") * 1024**3, True, "2Gi"),
        (Decimal("1536"), True, "1536"),
        (Decimal("1023"), True, "1023"),
        (Decimal("1.5"), True, "1500m"),
        (Decimal("1e-12"), False, "1n"),
        (Decimal("-250e-3"), False, "-250m"),
        (Decimal("0"), True, "0"),
    ],
)
def test_format_quantity(value: Decimal, binary: bool, expected: str) -> None:
    assert format_quantity(value, binary=binary) == expected


@pytest.mark.parametrize(
    ("value", "millis"),
    [("250m", 250), ("1", 1000), ("1.5", 1500), ("0.1m", 1), (2, 2000), ("-0.1m", -1)],
)
def test_cpu_millis_rounds_up_as_milli_value(value: str | int, millis: int) -> None:
    assert cpu_millis(value) == millis


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ("1Gi", 1073741824),
        ("1.5k", 1500),
        ("0.5", 1),
        ("128974848", 128974848),
        ("129e6", 129000000),
    ],
)
def test_memory_bytes_rounds_up_as_value(value: str, size: int) -> None:
    assert memory_bytes(value) == size


def test_scaled_values_saturate_at_int64() -> None:
    assert memory_bytes("1e100") == 2**63 - 1
    assert cpu_millis("-1e100") == -(2**63)


@pytest.mark.parametrize(
    ("left", "right", "total"),
    [
        ("1Gi", "512Mi", "1536Mi"),
        ("0", "1Gi", "1Gi"),  # a zero left operand takes the right one's format
        ("1k", "1Ki", "2024"),  # otherwise the left one's
        ("250m", "250m", "500m"),
        ("1", "500m", "1500m"),
    ],
)
def test_quantity_sum_prints_in_the_format_of_the_first_non_zero_operand(
    left: str, right: str, total: str
) -> None:
    assert str(Quantity.parse(left) + Quantity.parse(right)) == total


def test_quantities_compare_by_amount_whatever_their_format() -> None:
    assert Quantity.parse("1Gi") == Quantity.parse("1073741824")
    assert Quantity.parse("500m") < Quantity.parse("1")
    assert str(Quantity.parse("2") - Quantity.parse("500m")) == "1500m"
    assert str(-Quantity.parse("1Gi")) == "-1Gi"
