"""Fill in the fields upstream's JSON always carries (always_written.py, generated from
upstream's Go types by tools/gen_always_written.py).

The store calls `fill_always_written` on every object it writes, after validation, so the
bytes in etcd (which lists and watches send as they are) already carry them: a Service's
`status.loadBalancer: {}`, a Node's `status.nodeInfo.kubeProxyVersion: ""`, a container
status's `lastState: {}`. Only missing keys are added; nothing present is changed.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj
from minikube_py.api.schema.always_written import ALWAYS_WRITTEN


def always_written(api_version: str, kind: str) -> dict[str, Any]:
    """The tree of always-written fields of a kind ({} when it has none)."""
    return ALWAYS_WRITTEN.get(f"{api_version}/{kind}") or {}


def fill_always_written(obj: Obj, fields: dict[str, Any]) -> None:
    """Add every always-written field `obj` lacks, recursively (see the node format in
    tools/gen_always_written.py)."""
    for name, node in fields.items():
        if "z" in node:
            if name not in obj:
                obj[name] = node["z"]
            continue
        value = obj.get(name)
        if "o" in node:
            if value is None:
                value = obj[name] = {}
            if isinstance(value, dict):
                fill_always_written(value, node["o"])
        elif "l" in node and isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    fill_always_written(item, node["l"])
        elif "m" in node and isinstance(value, dict):
            for item in value.values():
                if isinstance(item, dict):
                    fill_always_written(item, node["m"])
