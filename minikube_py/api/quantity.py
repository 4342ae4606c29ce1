"""Resource quantities ("250m", "1Gi", "1e3"), as upstream's k8s.io/apimachinery/pkg/api/resource.

A Quantity is an exact decimal number written with an optional suffix:

    <quantity> ::= <sign>? <number> <suffix>
    <number>   ::= <digits> | <digits>. | <digits>.<digits> | .<digits>
    <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei       (BinarySI, powers of 1024)
                 | n | u | m | "" | k | M | G | T | P | E   (DecimalSI, powers of 1000)
                 | e<int> | E<int>                    (DecimalExponent)

Values are never floats: `parse_quantity` returns a `Decimal`, rounded up (away from
zero) to a whole number of nano-units, as upstream does. Upstream remembers which of the
three formats a quantity was written in and writes it back canonically in that format
(`canonical_quantity("1.5Gi") == "1536Mi"`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, ROUND_UP, Context, Decimal, localcontext
from functools import lru_cache, total_ordering

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
FORMAT_WRONG = f"quantities must match the regular expression '{_SPLIT_RE}'"
BAD_SUFFIX = "unable to parse quantity's suffix"

# sign, whole digits, fraction digits, suffix (checked against the tables below).
_SCAN = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)")
_GO_INT = re.compile(r"[+-]?[0-9]+")

_DECIMAL_SUFFIXES = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = Decimal(-(2**63)), Decimal(2**63 - 1)
_NANO = Decimal("1e-9")

# Exact arithmetic: no rounding except the explicit round-up to nano-units.
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


class QuantityError(ValueError):
    """A string that is not a quantity; the message is upstream's parse error."""


def _as_text(value: str | int | float | Decimal) -> str:
    """The quantity as text; JSON numbers are accepted, as Quantity.UnmarshalJSON does."""
    if isinstance(value, bool):
        raise QuantityError(FORMAT_WRONG)
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    raise QuantityError(FORMAT_WRONG)


def _interpret_suffix(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) for a suffix, as upstream's suffixer.interpret."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _GO_INT.fullmatch(suffix[1:]):
        exponent = int(suffix[1:])
        if _INT32_MIN <= exponent <= _INT32_MAX:
            return 10, exponent, DECIMAL_EXPONENT
    raise QuantityError(BAD_SUFFIX)


def _round_up_to_nano(amount: Decimal) -> Decimal:
    """Round a non-zero amount away from zero to whole nano-units (0.1n becomes 1n)."""
    exponent = amount.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -9 and amount != 0:
        return amount.quantize(_NANO, rounding=ROUND_UP, context=_EXACT)
    return amount


def _tidy(amount: Decimal) -> Decimal:
    """The same number without trailing zeros, and integers up to int64 written plainly."""
    amount = amount.normalize(_EXACT)
    if amount.as_tuple().exponent > 0 and amount.adjusted() <= 18:
        return amount.quantize(Decimal(1), context=_EXACT)
    return amount


def _parse(value: str | int | float | Decimal) -> tuple[Decimal, str]:
    """ParseQuantity: the exact amount and the format the quantity was written in."""
    if not isinstance(value, (str, int, float, Decimal)) or isinstance(value, bool):
        raise QuantityError(FORMAT_WRONG)  # a JSON list, object or boolean
    return _parse_scalar(value)


# Parsing is exact decimal arithmetic, slow next to a dict lookup, and the same few
# quantities ("100m", "128Mi") come back again and again: results are remembered (by
# type too, so 1 and 1.0 stay apart). Both results are immutable.
@lru_cache(maxsize=4096, typed=True)
def _parse_scalar(value: str | int | float | Decimal) -> tuple[Decimal, str]:
    text = _as_text(value)
    match = _SCAN.fullmatch(text)
    # Upstream's scanner also takes a bare suffix ("m", "Gi") as zero; the grammar
    # (and this parser) require at least one digit.
    if not text or match is None or not (match[2] or match[3]):
        raise QuantityError(FORMAT_WRONG)
    sign, whole, fraction, suffix = match[1], match[2], match[3] or "", match[4]
    base, exponent, format_ = _interpret_suffix(suffix)

    with localcontext(_EXACT):
        amount = Decimal(f"{whole or '0'}.{fraction}" if fraction else whole)
        if base == 10:
            amount = amount.scaleb(exponent)
        else:
            amount = amount * (2**exponent)
        amount = _round_up_to_nano(amount)
        if format_ == BINARY_SI and amount > _INT64_MAX:
            amount = _INT64_MAX  # binary quantities are capped at 2^63-1
        if format_ == BINARY_SI and 0 < amount < 1:
            format_ = DECIMAL_SI
        return _tidy(-amount if sign == "-" else amount), format_


def parse_quantity(value: str | int | float | Decimal) -> Decimal:
    """resource.ParseQuantity: "100m" -> 0.1, "1Gi" -> 1073741824, "1e3" -> 1000."""
    return _parse(value)[0]


# Formatting is exact decimal arithmetic too, and it runs for the same few amounts on
# every pod the API server canonicalizes: remembered like parsing (both arguments and the
# result are immutable, and the result depends only on the amount's value).
@lru_cache(maxsize=4096, typed=True)
def _format(amount: Decimal, format_: str) -> str:
    """Quantity.String: the canonical form of an amount in a format.

    Canonical means no fractional digits and the largest suffix that loses nothing:
    1.5 is "1500m", 1.5Gi is "1536Mi". BinarySI falls back to DecimalSI below 1024 and
    for non-integers; DecimalSI falls back to an exponent beyond the "E" suffix.
    """
    with localcontext(_EXACT):
        amount = _round_up_to_nano(amount)
        if amount == 0:
            return "0"
        sign = "-" if amount < 0 else ""
        magnitude = abs(amount)
        if format_ == BINARY_SI and (
            magnitude < 1024 or magnitude > _INT64_MAX or magnitude != magnitude.to_integral_value()
        ):
            format_ = DECIMAL_SI
        if format_ == BINARY_SI:
            mantissa, power = int(magnitude), 0
            while mantissa % 1024 == 0 and power < len(_BINARY_BY_POWER) - 1:
                mantissa, power = mantissa // 1024, power + 1
            return f"{sign}{mantissa}{_BINARY_BY_POWER[power]}"

        _, digits, normalized_exponent = magnitude.normalize().as_tuple()
        mantissa, exponent = int("".join(map(str, digits))), int(normalized_exponent)
        while exponent % 3:
            mantissa, exponent = mantissa * 10, exponent - 1
        if format_ == DECIMAL_SI and exponent in _DECIMAL_BY_EXPONENT:
            suffix = _DECIMAL_BY_EXPONENT[exponent]
        else:
            suffix = f"e{exponent}" if exponent else ""
        return f"{sign}{mantissa}{suffix}"


def format_quantity(value: Decimal, binary: bool = False) -> str:
    """The canonical DecimalSI ("500m", "2k") or BinarySI ("2Gi") string for an amount."""
    return _format(value, BINARY_SI if binary else DECIMAL_SI)


def canonical_quantity(value: str | int | float | Decimal) -> str:
    """A quantity re-written canonically in its own format, as the API server stores it."""
    return _format(*_parse(value))


def _scaled_value(value: str | int | float | Decimal, scale: int) -> int:
    """Quantity.ScaledValue: value / 10^scale, rounded away from zero, saturating at int64."""
    return _scaled_amount(value if isinstance(value, Decimal) else parse_quantity(value), scale)


@lru_cache(maxsize=4096)
def _scaled_amount(amount: Decimal, scale: int) -> int:
    with localcontext(_EXACT):
        scaled = amount.scaleb(-scale)
        if scaled > _INT64_MAX:
            return int(_INT64_MAX)
        if scaled < _INT64_MIN:
            return int(_INT64_MIN)
        return int(scaled.to_integral_value(rounding=ROUND_UP))


def cpu_millis(value: str | int | float | Decimal) -> int:
    """Quantity.MilliValue: "250m" -> 250, "1" -> 1000, "0.1m" -> 1 (rounds up)."""
    return _scaled_value(value, -3)


def memory_bytes(value: str | int | float | Decimal) -> int:
    """Quantity.Value: "1Gi" -> 1073741824, "1.5k" -> 1500, "0.5" -> 1 (rounds up)."""
    return _scaled_value(value, 0)


@total_ordering
@dataclass(frozen=True, eq=False)
class Quantity:
    """resource.Quantity as a value: an exact amount and the format it prints in.

    Arithmetic keeps the left operand's format unless that operand is zero, when the
    result takes the right one's (Quantity.Add and Sub): 1Gi + 512Mi is "1536Mi",
    0 + 1Gi is "1Gi", 1k + 1Ki is "2024". Comparison and equality look at the amount
    only (Quantity.Cmp), so "1Gi" equals "1073741824".
    """

    amount: Decimal
    format: str = DECIMAL_SI

    @classmethod
    def parse(cls, value: str | int | float | Decimal) -> Quantity:
        """ParseQuantity: "500m", "1Gi", a JSON number. Raises QuantityError."""
        amount, format_ = _parse(value)
        return cls(amount, format_)

    def __str__(self) -> str:
        """Quantity.String: canonical in its own format ("500m", "1536Mi", "2")."""
        return _format(self.amount, self.format)

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.amount + other.amount,
                        other.format if self.amount == 0 else self.format)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.amount - other.amount,
                        other.format if self.amount == 0 else self.format)

    def __neg__(self) -> Quantity:
        return Quantity(-self.amount, self.format)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.amount == other.amount

    def __lt__(self, other: Quantity) -> bool:
        return self.amount < other.amount

    def __hash__(self) -> int:
        return hash(self.amount)

    def is_zero(self) -> bool:
        return self.amount == 0
