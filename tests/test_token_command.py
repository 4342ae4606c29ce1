"""`minikube-py token list` as kubeadm prints it: the pure parts (a Secret's row, the TTL,
the tabwriter layout). The commands against a cluster: tests/test_join.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from minikube_py.api.duration import short_human_duration
from minikube_py.cluster.bootstraptoken import token_secret
from minikube_py.cluster.token_command import tabwriter, token_row

NOW = datetime(2026, 11, 29, 0, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(("seconds", "shown"), [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (59, "59s"), (60, "1m"), (3599, "59m"),
    (3600, "1h"), (86399, "23h"), (86400, "1d"), (365 * 86400 - 1, "364d"),
    (365 * 86400, "1y")])
def test_short_human_duration_shows_one_unit(seconds: int, shown: str) -> None:
    assert short_human_duration(timedelta(seconds=seconds)) == shown


def test_a_token_row_has_kubeadms_columns() -> None:
    secret = token_secret("abcdef.0123456789abcdef", ttl=timedelta(hours=2),
                          description="for the lab", now=NOW)
    assert token_row(secret, NOW + timedelta(minutes=30)) == [
        "abcdef.0123456789abcdef", "1h", "2026-11-29T02:00:00Z", "authentication,signing",
        "for the lab", "system:bootstrappers:kubeadm:default-node-token"]


def test_an_expired_token_shows_invalid_and_one_without_expiry_forever() -> None:
    expired = token_secret("abcdef.0123456789abcdef", ttl=timedelta(seconds=1), now=NOW,
                           usages=("signing",), extra_groups=())
    row = token_row(expired, NOW + timedelta(seconds=10))
    assert row is not None and row[1:4] == ["<invalid>", "2026-11-29T00:00:01Z", "signing"]
    assert row[4:] == ["<none>", "<none>"]
    forever = token_secret("abcdef.0123456789abcdef", ttl=None, now=NOW)
    row = token_row(forever, NOW)
    assert row is not None and row[1:3] == ["<forever>", "<never>"]


def test_a_secret_without_a_token_has_no_row() -> None:
    secret = token_secret("abcdef.0123456789abcdef", now=NOW)
    del secret["data"]["token-secret"]
    assert token_row(secret, NOW) is None


def test_tabwriter_pads_each_column_but_the_last_by_three_to_at_least_ten() -> None:
    assert tabwriter([["A", "LONGER-HEADER", "LAST"], ["abcdefghijk", "x", "tail"]]) == (
        "A             LONGER-HEADER   LAST\n"
        "abcdefghijk   x               tail\n")
