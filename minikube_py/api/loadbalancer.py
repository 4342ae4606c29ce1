"""A LoadBalancer Service's status as the service-lb controller writes it and others read
it: the addresses it was handed (status.loadBalancer.ingress) and the condition saying
whether it got the one it needs (status.conditions).

Upstream's core/v1 defines one Service condition, `LoadBalancerPortsError` (a cloud that
cannot mix protocols on one load balancer); none says "no address could be had". Ours is
`minikube-py.io/LoadBalancerReady`, domain-qualified as metav1.Condition allows for types
that are not upstream's, with the reasons of the Events the controller emits alongside
(docs/decisions.md).
"""

from __future__ import annotations

from minikube_py.api import Obj

LOAD_BALANCER_READY = "minikube-py.io/LoadBalancerReady"
ENSURED = "EnsuredLoadBalancer"  # True: the address is in status.loadBalancer.ingress
SYNC_FAILED = "SyncLoadBalancerFailed"  # False: the message says why there is none


def ingress_ips(service: Obj) -> list[str]:
    """The addresses the Service was handed: status.loadBalancer.ingress[].ip."""
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return [entry["ip"] for entry in ingress if entry.get("ip")]


def load_balancer_condition(service: Obj) -> Obj | None:
    """The Service's LoadBalancerReady condition, if the controller wrote one."""
    return next((condition for condition in (service.get("status") or {}).get("conditions")
                 or [] if condition.get("type") == LOAD_BALANCER_READY), None)


def with_load_balancer_condition(service: Obj, ready: bool, reason: str, message: str,
                                 now: str) -> list[Obj] | None:
    """status.conditions with LoadBalancerReady set (meta.SetStatusCondition: the
    transition time moves only when the status does); None when nothing would change."""
    conditions = list((service.get("status") or {}).get("conditions") or [])
    old = load_balancer_condition(service)
    new: Obj = {"type": LOAD_BALANCER_READY, "status": "True" if ready else "False",
                "reason": reason, "message": message}
    if generation := service["metadata"].get("generation"):
        new["observedGeneration"] = generation
    if old is not None and all(old.get(key) == value for key, value in new.items()):
        return None
    new["lastTransitionTime"] = (old["lastTransitionTime"] if old is not None and
                                 old.get("status") == new["status"] and
                                 old.get("lastTransitionTime") else now)
    return [new if condition is old else condition for condition in conditions] if (
        old is not None) else [*conditions, new]


def without_load_balancer_condition(service: Obj) -> list[Obj] | None:
    """status.conditions without LoadBalancerReady; None when it has none."""
    conditions = (service.get("status") or {}).get("conditions") or []
    kept = [condition for condition in conditions
            if condition.get("type") != LOAD_BALANCER_READY]
    return kept if len(kept) != len(conditions) else None
