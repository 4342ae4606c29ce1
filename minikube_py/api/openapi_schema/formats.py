"""The string formats the validator checks (kube-openapi strfmt's default registry)."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from datetime import date, datetime

_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
                   re.IGNORECASE)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_HOSTNAME = re.compile(
    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|"
    r"([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)"
    r"(\.)){1,}([a-zA-Z\p{L}]){2,63})$".replace(r"\p{S}", "").replace(r"\p{L}", ""))
_DURATION = re.compile(
    r"^[+-]?(\d+(\.\d+)?\s*(ns|us|µs|ms|s|m|h|d|w|seconds?|minutes?|hours?|days?|weeks?)\s*)+$")
_MAC = re.compile(r"^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S*$")
_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$")


def _ok(parse: Callable[[str], object]) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            parse(value)
        except (ValueError, binascii.Error):
            return False
        return True
    return check


def _date_time(value: str) -> bool:
    if not _DATE_TIME.match(value):
        return False
    try:
        datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
    except ValueError:
        return False
    return True


def _ipv4(value: str) -> bool:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return True


def _ipv6(value: str) -> bool:
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return True


def _cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value


def _hostname(value: str) -> bool:
    return len(value) <= 255 and bool(_HOSTNAME.match(value))


FORMATS: dict[str, Callable[[str], bool]] = {
    "byte": _ok(lambda v: base64.b64decode(v, validate=True)),
    "date": _ok(date.fromisoformat),
    "date-time": _date_time,
    "datetime": _date_time,
    "duration": lambda v: bool(_DURATION.match(v)),
    "uuid": lambda v: bool(_UUID.match(v)),
    "email": lambda v: bool(_EMAIL.match(v)),
    "hostname": _hostname,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "cidr": _cidr,
    "mac": lambda v: bool(_MAC.match(v)),
    "uri": lambda v: bool(_URI.match(v)),
}


def check_format(fmt: str, value: str) -> bool:
    """Whether a string is valid for a format; formats upstream does not check pass."""
    check = FORMATS.get(fmt)
    return check is None or check(value)
