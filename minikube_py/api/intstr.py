"""IntOrString values that are either a count or a percentage of a total ("25%").

Upstream: k8s.io/apimachinery/pkg/util/intstr (GetScaledValueFromIntOrPercent) and the
Deployment controller's ResolveFenceposts (pkg/controller/deployment/util), which turn
a rolling update's maxSurge and maxUnavailable into pod counts.
"""

from __future__ import annotations

import json
import math
import re

_GO_INT = re.compile(r"[+-]?[0-9]+")  # what strconv.Atoi accepts
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def scaled_value_from_int_or_percent(value: int | str | None, total: int, round_up: bool) -> int:
    """GetScaledValueFromIntOrPercent: an int is returned as is; "N%" is N% of `total`,
    rounded up or down. Any other string is an error, with upstream's message.
    """
    if value is None:
        raise ValueError("nil value for IntOrString")
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise ValueError("invalid value for IntOrString: invalid type: string is not a percentage")
    number = value[:-1]
    if not _GO_INT.fullmatch(number):
        reason = "invalid syntax"
    elif not _INT64_MIN <= int(number) <= _INT64_MAX:
        reason = "value out of range"
    else:
        scaled = int(number) * total / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    quoted, quoted_number = json.dumps(value), json.dumps(number)
    raise ValueError(
        f"invalid value for IntOrString: invalid value {quoted}: "
        f"strconv.Atoi: parsing {quoted_number}: {reason}"
    )


def resolve_fenceposts(
    max_surge: int | str | None, max_unavailable: int | str | None, desired: int
) -> tuple[int, int]:
    """ResolveFenceposts: (surge, unavailable) pod counts for a rolling update.

    Surge rounds up and unavailable rounds down, so "25%" of 10 allows 3 extra pods
    but only 2 missing ones; an unset value counts as 0. If both come out 0 (a small
    percentage of few replicas), unavailable becomes 1 so the rollout can progress.
    """
    surge = scaled_value_from_int_or_percent(
        0 if max_surge is None else max_surge, desired, round_up=True
    )
    unavailable = scaled_value_from_int_or_percent(
        0 if max_unavailable is None else max_unavailable, desired, round_up=False
    )
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable
