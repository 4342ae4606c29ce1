"""Pod status questions the controllers share: is it active, terminating, ready, available?

Upstream: pkg/api/v1/pod/util.go (GetPodCondition, IsPodReady, IsPodAvailable) and
pkg/controller/controller_utils.go (IsPodActive, IsPodTerminating). Timestamps are the
RFC 3339 strings of the wire format.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from minikube_py.api import Obj
from minikube_py.api.meta import name_of, namespace_of, parse_rfc3339

_TERMINAL_PHASES = ("Succeeded", "Failed")


def _phase(pod: Obj) -> str:
    return (pod.get("status") or {}).get("phase", "")


def _deleting(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_pod_active(pod: Obj) -> bool:
    """IsPodActive: not finished (Succeeded/Failed) and not being deleted.

    The pods a ReplicaSet or Job counts as its replicas.
    """
    return _phase(pod) not in _TERMINAL_PHASES and not _deleting(pod)


def is_pod_terminating(pod: Obj) -> bool:
    """IsPodTerminating: being deleted (deletionTimestamp set) but not yet finished."""
    return _phase(pod) not in _TERMINAL_PHASES and _deleting(pod)


def pod_condition(pod: Obj, condition_type: str) -> Obj | None:
    """GetPodCondition: the status condition of that type, or None."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == condition_type:
            return condition
    return None


def is_pod_ready(pod: Obj) -> bool:
    """IsPodReady: the Ready condition is "True"."""
    ready = pod_condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def is_pod_available(pod: Obj, min_ready_seconds: int, now: datetime) -> bool:
    """IsPodAvailable: ready, and ready for at least `min_ready_seconds`.

    With minReadySeconds 0 a ready pod is available at once. Otherwise the Ready
    condition's lastTransitionTime plus minReadySeconds must be at or before `now`
    (upstream compares with <= since 1.34; a missing lastTransitionTime never is).
    """
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    ready_since = (pod_condition(pod, "Ready") or {}).get("lastTransitionTime")
    if not ready_since:
        return False
    return parse_rfc3339(ready_since) + timedelta(seconds=min_ready_seconds) <= now


def pod_key(obj: Obj) -> str:
    """MetaNamespaceKeyFunc: "namespace/name", or just "name" for a cluster-scoped object."""
    namespace = namespace_of(obj)
    return f"{namespace}/{name_of(obj)}" if namespace else name_of(obj)
