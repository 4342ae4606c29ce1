"""The ClusterRoles and ClusterRoleBindings of the cluster's users and components (upstream
plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go).

    cluster-admin                   everything               <- group system:masters
    system:monitoring               /metrics, health checks  <- group system:monitoring
    system:discovery                discovery, OpenAPI       <- system:authenticated
    system:basic-user               "what may I do?"         <- system:authenticated
    system:public-info-viewer       /healthz, /version...    <- everyone, anonymous too
    admin <- edit <- view           aggregated, for RoleBindings in a namespace
    system:aggregate-to-admin|edit|view   the rules they aggregate
    system:heapster, system:node, system:node-bootstrapper,
    system:auth-delegator                                    (bound to nobody)
    system:kube-controller-manager  informers, leader lease  <- user of the same name
    system:kube-dns                 services, endpoints      <- SA kube-system/kube-dns
    system:certificates.k8s.io:certificatesigningrequests:nodeclient, :selfnodeclient
                                    what the csrapproving controller checks before it
                                    approves a node's client certificate (kubeadm, and
                                    `up`, bind them: cluster/bootstraptoken.py)
    system:volume-scheduler         volume binding           <- user system:kube-scheduler
    system:certificates.k8s.io:<signer>-approver  approve for one kubernetes.io signer
                                    (kube-apiserver-client, kube-apiserver-client-kubelet,
                                    kubelet-serving, legacy-unknown; bound to nobody)
    system:service-account-issuer-discovery  OIDC discovery  <- group system:serviceaccounts
    system:node-proxier             kube-proxy's watches     <- user system:kube-proxy
    system:kube-scheduler           pods, nodes, bindings    <- user system:kube-scheduler

admin, edit and view carry an aggregationRule and no rules of their own, as upstream: the
rules live in system:aggregate-to-admin, -edit and -view, and the clusterrole-aggregation
controller copies into each aggregated role the rules of every ClusterRole labelled
`rbac.authorization.k8s.io/aggregate-to-<role>: "true"`. view is itself labelled
aggregate-to-edit and edit aggregate-to-admin, so each role holds the one below it.

Upstream's API server writes admin, edit and view with empty rules and leaves the rules
to that controller: until a controller-manager has run, binding view grants nothing.
Here the API server writes them with their rules already aggregated from the bootstrap
roles (`api/rbac.py`, the code the controller runs), so a cluster with no
controller-manager (an API server alone, as many tests start one) still has working
admin, edit and view. The controller computes the same rules and finds nothing to
change; it keeps them current as other ClusterRoles with those labels come and go.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.api.rbac import (
    AGGREGATE_TO_ADMIN,
    AGGREGATE_TO_EDIT,
    AGGREGATE_TO_VIEW,
    aggregated_rules,
)
from minikube_py.apiserver.auth.bootstrappolicy.rules import (
    READ,
    READ_UPDATE,
    READ_WRITE,
    WRITE,
    cluster_role,
    cluster_role_binding,
    events_rule,
    groups,
    rule,
    service_account,
    users,
)

HEALTH = ["/healthz", "/livez", "/readyz", "/version", "/version/"]

# What `view` reads in a namespace (no Secrets: reading them is as good as using them).
_VIEWED: list[tuple[str, list[str]]] = [
    ("", ["configmaps", "endpoints", "persistentvolumeclaims",
          "persistentvolumeclaims/status", "pods", "pods/log", "pods/status",
          "replicationcontrollers", "replicationcontrollers/scale",
          "replicationcontrollers/status", "serviceaccounts", "services",
          "services/status", "bindings", "events", "limitranges", "resourcequotas",
          "resourcequotas/status", "namespaces", "namespaces/status"]),
    ("apps", ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments",
              "deployments/scale", "deployments/status", "replicasets", "replicasets/scale",
              "replicasets/status", "statefulsets", "statefulsets/scale",
              "statefulsets/status"]),
    ("batch", ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
    ("policy", ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    ("networking.k8s.io", ["ingresses", "ingresses/status", "networkpolicies"]),
    ("discovery.k8s.io", ["endpointslices"]),
    ("events.k8s.io", ["events"]),
    ("coordination.k8s.io", ["leases"]),
]
# What `edit` writes: those (but namespaces, their status and bindings), Secrets, and
# the ways into a pod.
_EDITED: list[tuple[str, list[str]]] = [
    ("", ["configmaps", "endpoints", "persistentvolumeclaims", "pods", "pods/attach",
          "pods/exec", "pods/portforward", "pods/proxy", "pods/eviction",
          "pods/ephemeralcontainers", "replicationcontrollers",
          "replicationcontrollers/scale", "secrets", "serviceaccounts",
          "serviceaccounts/token", "services", "services/proxy"]),
    ("apps", ["daemonsets", "deployments", "deployments/rollback", "deployments/scale",
              "replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"]),
    ("batch", ["cronjobs", "jobs"]),
    ("policy", ["poddisruptionbudgets"]),
    ("networking.k8s.io", ["ingresses", "networkpolicies"]),
    ("discovery.k8s.io", ["endpointslices"]),
    ("coordination.k8s.io", ["leases"]),
]


# The approver roles of the kubernetes.io signers, in policy.go's order.
_SIGNER_APPROVERS = [
    ("legacy-unknown", "kubernetes.io/legacy-unknown"),
    ("kubelet-serving", "kubernetes.io/kubelet-serving"),
    ("kube-apiserver-client", "kubernetes.io/kube-apiserver-client"),
    ("kube-apiserver-client-kubelet", "kubernetes.io/kube-apiserver-client-kubelet"),
]


def _aggregate_to_view() -> list[Obj]:
    """Reading what a namespace holds, but Secrets."""
    return [rule(READ, [group], resources) for group, resources in _VIEWED]


def _aggregate_to_edit() -> list[Obj]:
    """Reading Secrets, and writing what a namespace's workloads are made of."""
    return [rule(READ, [""], ["secrets"]),
            *(rule(WRITE, [group], resources) for group, resources in _EDITED)]


def _aggregate_to_admin() -> list[Obj]:
    """Granting access to the namespace to others, and asking who may do what in it."""
    return [rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
            rule(READ_WRITE, ["rbac.authorization.k8s.io"], ["rolebindings", "roles"])]


def node_rules() -> list[Obj]:
    """What a kubelet needs (NodeRules); the Node authorizer narrows it upstream."""
    return [
        rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
        rule(["create"], ["authorization.k8s.io"],
             ["localsubjectaccessreviews", "subjectaccessreviews"]),
        rule(READ, [""], ["services"]),
        rule(["create", *READ], [""], ["nodes"]),
        rule(["patch", "update"], [""], ["nodes/status"]),
        rule(["patch", "update"], [""], ["nodes"]),
        rule(["create", "patch", "update"], [""], ["events"]),
        rule(READ, [""], ["pods"]),
        rule(["create", "delete"], [""], ["pods"]),
        rule(["patch", "update"], [""], ["pods/status"]),
        rule(["create"], [""], ["pods/eviction"]),
        rule(READ, [""], ["configmaps", "secrets"]),
        rule(["get"], [""], ["persistentvolumeclaims", "persistentvolumes"]),
        rule(["get"], [""], ["endpoints"]),
        rule(["create", *READ], ["certificates.k8s.io"], ["certificatesigningrequests"]),
        rule(["create", "delete", "get", "patch", "update"], ["coordination.k8s.io"],
             ["leases"]),
        rule(["get"], ["storage.k8s.io"], ["volumeattachments"]),
        rule(["get", "patch", "update"], [""], ["persistentvolumeclaims/status"]),
        rule(["create"], [""], ["serviceaccounts/token"]),
        rule(READ, ["storage.k8s.io"], ["csidrivers"]),
        rule(["create", "delete", "get", "patch", "update"], ["storage.k8s.io"], ["csinodes"]),
        rule(READ, ["node.k8s.io"], ["runtimeclasses"]),
    ]


def _kube_scheduler_rules() -> list[Obj]:
    """What kube-scheduler reads to place pods, and the Binding it writes."""
    return [
        events_rule(),
        # leader election
        rule(["create"], ["coordination.k8s.io"], ["leases"]),
        rule(["get", "update"], ["coordination.k8s.io"], ["leases"], names=["kube-scheduler"]),
        # the pods to place, the nodes to place them on
        rule(READ, [""], ["nodes"]),
        rule(["delete", *READ], [""], ["pods"]),
        rule(["create"], [""], ["bindings", "pods/binding"]),
        rule(["patch", "update"], [""], ["pods/status"]),
        # what selects pods (spreading)
        rule(READ, [""], ["replicationcontrollers", "services"]),
        rule(READ, ["apps", "extensions"], ["replicasets"]),
        rule(READ, ["apps"], ["statefulsets"]),
        # what pods use or applies to them
        rule(READ, ["policy"], ["poddisruptionbudgets"]),
        rule(READ, [""], ["persistentvolumeclaims", "persistentvolumes"]),
        # delegated authentication and authorization
        rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
        rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
        # volume limits, namespaceSelector of pod affinity, storage capacity
        rule(READ, ["storage.k8s.io"], ["csinodes"]),
        rule(READ, [""], ["namespaces"]),
        rule(READ, ["storage.k8s.io"], ["csidrivers"]),
        rule(READ, ["storage.k8s.io"], ["csistoragecapacities"]),
    ]


def _fill_aggregated(roles: list[Obj]) -> list[Obj]:
    """Give view, then edit (which aggregates view), then admin (which aggregates edit)
    the rules the clusterrole-aggregation controller would give them."""
    by_name = {role["metadata"]["name"]: role for role in roles}
    for name in ("view", "edit", "admin"):
        by_name[name]["rules"] = aggregated_rules(by_name[name], roles)
    return roles


def cluster_roles() -> list[Obj]:
    """The ClusterRoles of policy.go, in its order."""
    return _fill_aggregated([
        cluster_role("cluster-admin", [rule(["*"], ["*"], ["*"]), rule(["*"], urls=["*"])]),
        cluster_role("system:monitoring", [rule(["get"], urls=[
            "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis",
            "/readyz", "/readyz/*"])]),
        cluster_role("system:discovery", [rule(["get"], urls=[
            "/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", *HEALTH])]),
        cluster_role("system:basic-user", [
            rule(["create"], ["authorization.k8s.io"],
                 ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
            rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"])]),
        cluster_role("system:public-info-viewer", [rule(["get"], urls=HEALTH)]),
        cluster_role("admin", [], aggregate_from=[AGGREGATE_TO_ADMIN]),
        cluster_role("edit", [], labels={AGGREGATE_TO_ADMIN: "true"},
                     aggregate_from=[AGGREGATE_TO_EDIT]),
        cluster_role("view", [], labels={AGGREGATE_TO_EDIT: "true"},
                     aggregate_from=[AGGREGATE_TO_VIEW]),
        cluster_role("system:aggregate-to-admin", _aggregate_to_admin(),
                     labels={AGGREGATE_TO_ADMIN: "true"}),
        cluster_role("system:aggregate-to-edit", _aggregate_to_edit(),
                     labels={AGGREGATE_TO_EDIT: "true"}),
        cluster_role("system:aggregate-to-view", _aggregate_to_view(),
                     labels={AGGREGATE_TO_VIEW: "true"}),
        cluster_role("system:heapster", [
            rule(READ, [""], ["events", "namespaces", "nodes", "pods"]),
            rule(READ, ["extensions"], ["deployments"])]),
        cluster_role("system:node", node_rules()),
        # a node's client certificate, before the node has one: ask, then wait for it
        cluster_role("system:node-bootstrapper", [
            rule(["create", *READ], ["certificates.k8s.io"], ["certificatesigningrequests"])]),
        cluster_role("system:auth-delegator", [
            rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
            rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"])]),
        cluster_role("system:kube-controller-manager", [
            events_rule(),
            # leader election
            rule(["create"], ["coordination.k8s.io"], ["leases"]),
            rule(["get", "update"], ["coordination.k8s.io"], ["leases"],
                 names=["kube-controller-manager"]),
            # the credentials of each controller's ServiceAccount
            rule(["create"], [""], ["secrets", "serviceaccounts"]),
            rule(["delete"], [""], ["secrets"]),
            rule(["get"], [""], ["configmaps", "namespaces", "secrets", "serviceaccounts"]),
            rule(["update"], [""], ["secrets", "serviceaccounts"]),
            rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
            rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
            # every shared informer
            rule(["list", "watch"], ["*"], ["*"]),
            rule(["create"], [""], ["serviceaccounts/token"])]),
        cluster_role("system:kube-dns", [rule(["list", "watch"], [""],
                                              ["endpoints", "services"])]),
        cluster_role("system:certificates.k8s.io:certificatesigningrequests:nodeclient", [
            rule(["create"], ["certificates.k8s.io"],
                 ["certificatesigningrequests/nodeclient"])]),
        cluster_role("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", [
            rule(["create"], ["certificates.k8s.io"],
                 ["certificatesigningrequests/selfnodeclient"])]),
        cluster_role("system:volume-scheduler", [
            rule(READ_UPDATE, [""], ["persistentvolumes"]),
            rule(READ, ["storage.k8s.io"], ["storageclasses"]),
            rule(READ_UPDATE, [""], ["persistentvolumeclaims"])]),
        *(cluster_role(f"system:certificates.k8s.io:{name}-approver", [
            rule(["approve"], ["certificates.k8s.io"], ["signers"], names=[signer])])
          for name, signer in _SIGNER_APPROVERS),
        cluster_role("system:service-account-issuer-discovery", [rule(["get"], urls=[
            "/.well-known/openid-configuration", "/openid/v1/jwks"])]),
        cluster_role("system:node-proxier", [
            rule(["list", "watch"], [""], ["endpoints", "services"]),
            rule(READ, [""], ["nodes"]),
            events_rule(),
            rule(["list", "watch"], ["discovery.k8s.io"], ["endpointslices"])]),
        cluster_role("system:kube-scheduler", _kube_scheduler_rules()),
    ])


def cluster_role_bindings() -> list[Obj]:
    """The ClusterRoleBindings of policy.go, in its order."""
    return [
        cluster_role_binding("cluster-admin", groups("system:masters")),
        cluster_role_binding("system:monitoring", groups("system:monitoring")),
        cluster_role_binding("system:discovery", groups("system:authenticated")),
        cluster_role_binding("system:basic-user", groups("system:authenticated")),
        cluster_role_binding("system:public-info-viewer",
                             groups("system:authenticated", "system:unauthenticated")),
        cluster_role_binding("system:node-proxier", users("system:kube-proxy")),
        cluster_role_binding("system:kube-controller-manager",
                             users("system:kube-controller-manager")),
        cluster_role_binding("system:kube-dns", service_account("kube-system", "kube-dns")),
        cluster_role_binding("system:kube-scheduler", users("system:kube-scheduler")),
        cluster_role_binding("system:volume-scheduler", users("system:kube-scheduler")),
        # Bound to the group system:nodes before the Node authorizer (1.7); the binding
        # stays, with no subjects.
        cluster_role_binding("system:node", []),
        cluster_role_binding("system:service-account-issuer-discovery",
                             groups("system:serviceaccounts")),
    ]
