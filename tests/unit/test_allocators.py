"""The pure parts of the service allocators: ranges, reserved addresses, the static band."""

from __future__ import annotations

import pytest

from minikube_py.apiserver.registry.allocators import (
    IPAllocator,
    PortAllocator,
    parse_port_range,
    parse_service_cidr,
    static_band,
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10.0.0.0/8", "is too large; for 32-bit addresses, the mask must be >= 12"),
        ("fd00::/108", "only IPv4 ranges are supported"),
        ("10.96.0.0/31", "holds no usable address"),
        ("ten", "invalid --service-cluster-ip-range"),
    ],
)
def test_service_cidr_must_be_a_usable_ipv4_range_of_at_most_a_slash_12(
        text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_service_cidr(text)


@pytest.mark.parametrize(
    ("text", "ports"),
    [("30000-32767", range(30000, 32768)), ("8080", range(8080, 8081))],
)
def test_node_port_range_is_inclusive_at_both_ends(text: str, ports: range) -> None:
    assert parse_port_range(text) == ports


@pytest.mark.parametrize("text", ["32767-30000", "0-10", "30000-70000", "a-b"])
def test_node_port_range_refuses_backwards_or_impossible_ports(text: str) -> None:
    with pytest.raises(ValueError, match="--service-node-port-range"):
        parse_port_range(text)


@pytest.mark.parametrize(
    ("size", "minimum", "maximum", "step", "band"),
    [
        (2**20, 16, 256, 16, 256),  # a /12 of IPs: capped
        (256, 16, 256, 16, 16),  # a /24: never below the minimum
        (16, 16, 256, 16, 0),  # too small to split
        (2768, 16, 128, 32, 86),  # the default node port range
    ],
)
def test_static_band_follows_upstreams_range_offset(
        size: int, minimum: int, maximum: int, step: int, band: int) -> None:
    assert static_band(size, minimum, maximum, step) == band


def test_ip_range_excludes_the_network_and_broadcast_addresses() -> None:
    ips = IPAllocator(None, "10.96.0.0/12")
    assert ips.kubernetes_service_ip == "10.96.0.1"
    assert ips.offset_of("10.96.0.0") is None
    assert ips.offset_of("10.111.255.255") is None
    assert ips.offset_of("10.111.255.254") == ips.size - 1
    assert ips.offset_of("fd00::1") is None
    assert ips.valid_range == "10.96.0.0/12"


def test_random_ips_never_include_the_kubernetes_service_ip() -> None:
    ips = IPAllocator(None, "10.0.0.0/24")
    candidates = list(ips.candidates())
    assert sorted(candidates) == list(range(1, 254))
    assert ips.value_at(0) not in {ips.value_at(offset) for offset in candidates}


def test_random_values_come_from_the_upper_part_first() -> None:
    ports = PortAllocator(None, "30000-32767")
    candidates = list(ports.candidates())
    assert sorted(candidates) == list(range(2768))
    assert all(offset >= 86 for offset in candidates[: 2768 - 86])
    assert all(offset < 86 for offset in candidates[2768 - 86:])


def test_ports_outside_the_range_have_no_offset() -> None:
    ports = PortAllocator(None, "30000-32767")
    assert [ports.offset_of(p) for p in (29999, 30000, 32767, 32768)] == [None, 0, 2767, None]
    assert ports.valid_range == "30000-32767"
