"""core/v1 configuration and accounts: config maps, secrets, service accounts, quotas."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.quantity import QuantityError, canonical_quantity
from minikube_py.apiserver.endpoints.tables.cells import age, name_of
from minikube_py.apiserver.endpoints.tables.table import AGE, NAME, Cells, column

CONFIG_MAP_COLUMNS = (
    NAME,
    column("Data", "string", "Data contains the configuration data."),
    AGE,
)


def print_config_map(config_map: Obj, now: datetime) -> Cells:
    """printConfigMap: the number of keys in data and binaryData."""
    keys = len(config_map.get("data") or {}) + len(config_map.get("binaryData") or {})
    return [name_of(config_map), keys, age(config_map, now)]


SECRET_COLUMNS = (
    NAME,
    column("Type", "string", "Used to facilitate programmatic handling of secret data."),
    column("Data", "string", "Data contains the secret data."),
    AGE,
)


def print_secret(secret: Obj, now: datetime) -> Cells:
    """printSecret: the secret type and the number of keys in data."""
    return [
        name_of(secret),
        secret.get("type", ""),
        len(secret.get("data") or {}),
        age(secret, now),
    ]


SERVICE_ACCOUNT_COLUMNS = (
    NAME,
    column("Secrets", "string", "Secrets is a list of the secrets in the same namespace that "
                                "pods running using this ServiceAccount are allowed to use."),
    AGE,
)


def print_service_account(account: Obj, now: datetime) -> Cells:
    """printServiceAccount: the number of listed secrets."""
    return [name_of(account), len(account.get("secrets") or []), age(account, now)]


RESOURCE_QUOTA_COLUMNS = (
    NAME,
    column("Request", "string", "Request represents a minimum amount of cpu/memory that a "
                                "container may consume."),
    column("Limit", "string", "Limits control the maximum amount of cpu/memory that a "
                              "container may use independent of contention on the node."),
    AGE,
)


def _quantity(value: Any) -> str:
    """Quantity.String: canonical ("0.5" prints "500m"); a missing one is "0"."""
    try:
        return canonical_quantity(value) if value is not None else "0"
    except QuantityError:
        return str(value)


def print_resource_quota(quota: Obj, now: datetime) -> Cells:
    """printResourceQuota: "name: used/hard" per name of status.hard, sorted; limits.*
    go to the Limit column, everything else to Request."""
    status = quota.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        target = limits if resource.startswith("limits.") else requests
        target.append(f"{resource}: {_quantity(used.get(resource))}/{_quantity(hard[resource])}")
    return [name_of(quota), ", ".join(requests), ", ".join(limits), age(quota, now)]
