"""Feature gates of the API server (upstream k8s.io/apiserver/pkg/features and
component-base's `--feature-gates=Name=true,Other=false`).

Only the gates this server implements are known; naming another one is an error, as
upstream refuses a gate it does not know.
"""

from __future__ import annotations

# Serve lists without a resourceVersion from the watch cache once it is shown to be as
# fresh as etcd (storage/consistent_read.py). Beta and on by default since 1.31.
CONSISTENT_LIST_FROM_CACHE = "ConsistentListFromCache"

DEFAULTS: dict[str, bool] = {CONSISTENT_LIST_FROM_CACHE: True}


def parse_feature_gates(text: str) -> dict[str, bool]:
    """The gates of a `--feature-gates` value, every known gate included (its default
    when the value leaves it out). ValueError names what is wrong."""
    gates = dict(DEFAULTS)
    for pair in (p.strip() for p in text.split(",")):
        if not pair:
            continue
        name, equals, value = pair.partition("=")
        name, value = name.strip(), value.strip()
        if not equals:
            raise ValueError(f"missing bool value for {name}")
        if name not in DEFAULTS:
            raise ValueError(f"unrecognized feature gate: {name} "
                             f"(known: {', '.join(sorted(DEFAULTS))})")
        if value.lower() not in ("true", "false"):
            raise ValueError(f"invalid value of {name}={value}, err: expected true or false")
        gates[name] = value.lower() == "true"
    return gates
