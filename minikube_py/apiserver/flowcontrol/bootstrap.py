"""The objects that configure API Priority and Fairness on a new cluster (upstream's
apiserver/pkg/apis/flowcontrol/bootstrap/default.go).

Mandatory ones (the `exempt` and `catch-all` levels and schemas) must always exist with
this spec; suggested ones are created when missing and kept up to date unless their
`apf.kubernetes.io/autoupdate-spec` annotation is "false" (ensurer.py).
"""

from __future__ import annotations

import copy
from typing import Any

from minikube_py.api import Obj

API_VERSION = "flowcontrol.apiserver.k8s.io/v1"
AUTO_UPDATE_ANNOTATION = "apf.kubernetes.io/autoupdate-spec"
EXEMPT = "exempt"
CATCH_ALL = "catch-all"

SYSTEM_PRIVILEGED_GROUP = "system:masters"
NODES_GROUP = "system:nodes"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ALL_AUTHENTICATED = "system:authenticated"
ALL_SERVICE_ACCOUNTS = "system:serviceaccounts"
KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"
KUBE_SCHEDULER = "system:kube-scheduler"


def _priority_level(name: str, spec: Obj) -> Obj:
    return {"apiVersion": API_VERSION, "kind": "PriorityLevelConfiguration",
            "metadata": {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}},
            "spec": spec}


def _limited(shares: int, lendable: int, queues: int = 0, hand_size: int = 0,
             queue_length_limit: int = 0) -> Obj:
    """A Limited level; queues=0 means it rejects instead of queuing."""
    response: Obj = {"type": "Reject"}
    if queues:
        response = {"type": "Queue", "queuing": {
            "queues": queues, "handSize": hand_size, "queueLengthLimit": queue_length_limit}}
    return {"type": "Limited", "limited": {
        "nominalConcurrencyShares": shares, "lendablePercent": lendable,
        "limitResponse": response}}


def _flow_schema(name: str, level: str, precedence: int, method: str,
                 *rules: Obj) -> Obj:
    spec: Obj = {"priorityLevelConfiguration": {"name": level},
                 "matchingPrecedence": precedence, "rules": list(rules)}
    if method:
        spec["distinguisherMethod"] = {"type": method}
    return {"apiVersion": API_VERSION, "kind": "FlowSchema",
            "metadata": {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}},
            "spec": spec}


def _groups(*names: str) -> list[Obj]:
    return [{"kind": "Group", "group": {"name": name}} for name in names]


def _users(*names: str) -> list[Obj]:
    return [{"kind": "User", "user": {"name": name}} for name in names]


def _kube_system_service_accounts() -> list[Obj]:
    return [{"kind": "ServiceAccount",
             "serviceAccount": {"name": "*", "namespace": "kube-system"}}]


def _resource_rule(verbs: list[str], groups: list[str], resources: list[str],
                   namespaces: list[str], cluster_scope: bool) -> Obj:
    rule: Obj = {"verbs": verbs, "apiGroups": groups, "resources": resources,
                 "namespaces": namespaces}
    if cluster_scope:
        rule["clusterScope"] = True
    return rule


def _everything(subjects: list[Obj]) -> Obj:
    """Rules matching every request of the subjects (NewFSAll's)."""
    return {"subjects": subjects,
            "resourceRules": [_resource_rule(["*"], ["*"], ["*"], ["*"], True)],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}


MANDATORY_PRIORITY_LEVELS: list[Obj] = [
    _priority_level(CATCH_ALL, _limited(5, 0)),
    _priority_level(EXEMPT, {"type": "Exempt", "exempt": {
        "nominalConcurrencyShares": 0, "lendablePercent": 0}}),
]
MANDATORY_FLOW_SCHEMAS: list[Obj] = [
    _flow_schema(EXEMPT, EXEMPT, 1, "", _everything(_groups(SYSTEM_PRIVILEGED_GROUP))),
    _flow_schema(CATCH_ALL, CATCH_ALL, 10000, "ByUser",
                 _everything(_groups(ALL_UNAUTHENTICATED, ALL_AUTHENTICATED))),
]
SUGGESTED_PRIORITY_LEVELS: list[Obj] = [
    _priority_level("system", _limited(30, 33, 64, 6, 50)),
    _priority_level("node-high", _limited(40, 25, 64, 6, 50)),
    _priority_level("leader-election", _limited(10, 0, 16, 4, 50)),
    _priority_level("workload-high", _limited(40, 50, 128, 6, 50)),
    _priority_level("workload-low", _limited(100, 90, 128, 6, 50)),
    _priority_level("global-default", _limited(20, 50, 128, 6, 50)),
]
SUGGESTED_FLOW_SCHEMAS: list[Obj] = [
    _flow_schema("system-nodes", "system", 500, "ByUser", _everything(_groups(NODES_GROUP))),
    _flow_schema("system-node-high", "node-high", 400, "ByUser", {
        "subjects": _groups(NODES_GROUP),
        "resourceRules": [
            _resource_rule(["*"], [""], ["nodes", "nodes/status"], ["*"], True),
            _resource_rule(["*"], ["coordination.k8s.io"], ["leases"], ["*"], False)]}),
    _flow_schema("probes", EXEMPT, 2, "", {
        "subjects": _groups(ALL_UNAUTHENTICATED, ALL_AUTHENTICATED),
        "nonResourceRules": [{"verbs": ["get"],
                              "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]}),
    _flow_schema("system-leader-election", "leader-election", 100, "ByUser", {
        "subjects": (_users(KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER)
                     + _kube_system_service_accounts()),
        "resourceRules": [_resource_rule(["get", "create", "update"],
                                         ["coordination.k8s.io"], ["leases"], ["*"],
                                         False)]}),
    _flow_schema("kube-controller-manager", "workload-high", 800, "ByNamespace",
                 _everything(_users(KUBE_CONTROLLER_MANAGER))),
    _flow_schema("kube-scheduler", "workload-high", 800, "ByNamespace",
                 _everything(_users(KUBE_SCHEDULER))),
    _flow_schema("kube-system-service-accounts", "workload-high", 900, "ByNamespace",
                 _everything(_kube_system_service_accounts())),
    _flow_schema("service-accounts", "workload-low", 9000, "ByUser",
                 _everything(_groups(ALL_SERVICE_ACCOUNTS))),
    _flow_schema("global-default", "global-default", 9900, "ByUser",
                 _everything(_groups(ALL_UNAUTHENTICATED, ALL_AUTHENTICATED))),
]


def mandatory_spec(plural: str, name: str) -> Any:
    """The fixed spec of a mandatory object, or None when `name` is not one."""
    objects = (MANDATORY_FLOW_SCHEMAS if plural == "flowschemas"
               else MANDATORY_PRIORITY_LEVELS)
    for obj in objects:
        if obj["metadata"]["name"] == name:
            return copy.deepcopy(obj["spec"])
    return None
