"""The role of each controller of the controller-manager (upstream
plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go).

    ClusterRole system:controller:<name>  <- ServiceAccount kube-system/<name>

Upstream's kube-controller-manager, run with --use-service-account-credentials, talks
to the API server as one ServiceAccount per controller, each allowed what that controller
does and no more. Only the controllers this project runs have a role here, and
certificate-controller: what upstream's CSR approving, signing and cleaning controllers
need, for whoever runs one against this server.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.apiserver.auth.bootstrappolicy.rules import (
    READ,
    cluster_role,
    cluster_role_binding,
    events_rule,
    rule,
    service_account,
)

ROLE_PREFIX = "system:controller:"


def _controller_rules() -> dict[str, list[Obj]]:
    """Each controller's ServiceAccount name and its rules, in controller_policy.go's order."""
    return {
        "clusterrole-aggregation-controller": [
            # it must be able to write any rule into a ClusterRole
            rule(["escalate", "get", "list", "patch", "update", "watch"],
                 ["rbac.authorization.k8s.io"], ["clusterroles"])],
        "cronjob-controller": [
            rule([*READ, "update"], ["batch"], ["cronjobs"]),
            rule([*READ, "create", "delete", "patch", "update"], ["batch"], ["jobs"]),
            rule(["update"], ["batch"], ["cronjobs/status"]),
            rule(["update"], ["batch"], ["cronjobs/finalizers"]),
            rule(["delete", "list"], [""], ["pods"]),
            events_rule()],
        "daemon-set-controller": [
            rule(READ, ["apps", "extensions"], ["daemonsets"]),
            rule(["update"], ["apps", "extensions"], ["daemonsets/status"]),
            rule(["update"], ["apps", "extensions"], ["daemonsets/finalizers"]),
            rule(["list", "watch"], [""], ["nodes"]),
            rule(["create", "delete", "list", "patch", "watch"], [""], ["pods"]),
            rule(["create"], [""], ["pods/binding"]),
            rule([*READ, "create", "delete", "patch", "update"], ["apps"],
                 ["controllerrevisions"]),
            events_rule()],
        "deployment-controller": [
            rule([*READ, "update"], ["apps", "extensions"], ["deployments"]),
            rule(["update"], ["apps", "extensions"], ["deployments/status"]),
            rule(["update"], ["apps", "extensions"], ["deployments/finalizers"]),
            rule([*READ, "create", "delete", "patch", "update"], ["apps", "extensions"],
                 ["replicasets"]),
            rule([*READ, "update"], [""], ["pods"]),
            events_rule()],
        "disruption-controller": [
            rule(READ, ["apps", "extensions"], ["deployments"]),
            rule(READ, ["apps", "extensions"], ["replicasets"]),
            rule(READ, [""], ["replicationcontrollers"]),
            rule(READ, ["policy"], ["poddisruptionbudgets"]),
            rule(READ, ["apps"], ["statefulsets"]),
            rule(["update"], ["policy"], ["poddisruptionbudgets/status"]),
            rule(["patch", "update"], [""], ["pods/status"]),
            rule(["get"], ["*"], ["*/scale"]),
            events_rule()],
        "endpoint-controller": [
            rule(READ, [""], ["pods", "services"]),
            rule(["create", "delete", "get", "list", "update"], [""], ["endpoints"]),
            rule(["create"], [""], ["endpoints/restricted"]),
            events_rule()],
        "endpointslice-controller": [
            rule(READ, [""], ["nodes", "pods", "services"]),
            # to own a slice with blockOwnerDeletion, it must be able to set the
            # service's finalizers
            rule(["update"], [""], ["services/finalizers"]),
            rule(["create", "delete", "get", "list", "update"], ["discovery.k8s.io"],
                 ["endpointslices"]),
            events_rule()],
        "generic-garbage-collector": [
            # list, watch and delete anything, and patch owner references away
            rule([*READ, "delete", "patch", "update"], ["*"], ["*"]),
            events_rule()],
        "horizontal-pod-autoscaler": [
            rule(READ, ["autoscaling"], ["horizontalpodautoscalers"]),
            rule(["update"], ["autoscaling"], ["horizontalpodautoscalers/status"]),
            rule(["get", "update"], ["*"], ["*/scale"]),
            rule(READ, [""], ["pods"]),
            # resource, custom and external metrics
            rule(["list"], ["metrics.k8s.io"], ["pods"]),
            rule(["get", "list"], ["custom.metrics.k8s.io"], ["*"]),
            rule(["get", "list"], ["external.metrics.k8s.io"], ["*"]),
            events_rule()],
        "job-controller": [
            rule([*READ, "patch", "update"], ["batch"], ["jobs"]),
            rule(["update"], ["batch"], ["jobs/status"]),
            rule(["update"], ["batch"], ["jobs/finalizers"]),
            rule(["create", "delete", "list", "patch", "watch"], [""], ["pods"]),
            events_rule()],
        "namespace-controller": [
            rule([*READ, "delete"], [""], ["namespaces"]),
            rule(["update"], [""], ["namespaces/finalize", "namespaces/status"]),
            rule(["delete", "deletecollection", "get", "list"], ["*"], ["*"])],
        "node-controller": [
            rule(["delete", "get", "list", "patch", "update"], [""], ["nodes"]),
            rule(["patch", "update"], [""], ["nodes/status"]),
            # evicting pods from a node gone away
            rule(["patch", "update"], [""], ["pods/status"]),
            rule(["delete", "get", "list"], [""], ["pods"]),
            events_rule()],
        "persistent-volume-binder": [
            rule([*READ, "create", "delete", "update"], [""], ["persistentvolumes"]),
            rule(["update"], [""], ["persistentvolumes/status"]),
            rule([*READ, "update"], [""], ["persistentvolumeclaims"]),
            rule(["update"], [""], ["persistentvolumeclaims/status"]),
            rule([*READ, "create", "delete"], [""], ["pods"]),
            rule(READ, ["storage.k8s.io"], ["storageclasses"]),
            rule(["create", "delete", "get", "update"], [""], ["endpoints"]),
            rule(["create", "delete", "get"], [""], ["services"]),
            rule(["get"], [""], ["secrets"]),
            rule(["get", "list"], [""], ["nodes"]),
            rule(["watch"], [""], ["events"]),
            events_rule()],
        "pod-garbage-collector": [
            rule(["delete", "list", "watch"], [""], ["pods"]),
            rule(["get", "list"], [""], ["nodes"]),
            rule(["patch"], [""], ["pods/status"])],
        "replicaset-controller": [
            rule([*READ, "update"], ["apps", "extensions"], ["replicasets"]),
            rule(["update"], ["apps", "extensions"], ["replicasets/status"]),
            rule(["update"], ["apps", "extensions"], ["replicasets/finalizers"]),
            rule(["create", "delete", "list", "patch", "watch"], [""], ["pods"]),
            events_rule()],
        "replication-controller": [
            rule([*READ, "update"], [""], ["replicationcontrollers"]),
            rule(["update"], [""], ["replicationcontrollers/status"]),
            rule(["update"], [""], ["replicationcontrollers/finalizers"]),
            rule(["create", "delete", "list", "patch", "watch"], [""], ["pods"]),
            events_rule()],
        "resourcequota-controller": [
            # quota counts anything, so it lists and watches everything
            rule(["list", "watch"], ["*"], ["*"]),
            rule(["update"], [""], ["resourcequotas/status"]),
            events_rule()],
        "service-account-controller": [
            rule(["create"], [""], ["serviceaccounts"]),
            events_rule()],
        "service-controller": [
            rule(READ, [""], ["services"]),
            # the service-lb controller adds and removes its cleanup finalizer with an
            # update of the Service (upstream's cloud service controller patches it)
            rule(["patch", "update"], [""], ["services"]),
            rule(["patch", "update"], [""], ["services/status"]),
            rule(["list", "watch"], [""], ["nodes"]),
            events_rule()],
        "statefulset-controller": [
            rule(["list", "watch"], [""], ["pods"]),
            rule(READ, ["apps"], ["statefulsets"]),
            rule(["update"], ["apps"], ["statefulsets/status"]),
            rule(["update"], ["apps"], ["statefulsets/finalizers"]),
            rule(["create", "delete", "get", "patch", "update"], [""], ["pods"]),
            rule([*READ, "create", "delete", "patch", "update"], ["apps"],
                 ["controllerrevisions"]),
            rule(["create", "get"], [""], ["persistentvolumeclaims"]),
            events_rule(),
            # persistentVolumeClaimRetentionPolicy
            rule(["delete", "update"], [""], ["persistentvolumeclaims"])],
        "certificate-controller": [
            rule(["delete", *READ], ["certificates.k8s.io"], ["certificatesigningrequests"]),
            rule(["update"], ["certificates.k8s.io"],
                 ["certificatesigningrequests/approval", "certificatesigningrequests/status"]),
            rule(["approve"], ["certificates.k8s.io"], ["signers"],
                 names=["kubernetes.io/kube-apiserver-client-kubelet"]),
            rule(["sign"], ["certificates.k8s.io"], ["signers"],
                 names=["kubernetes.io/kube-apiserver-client",
                        "kubernetes.io/kube-apiserver-client-kubelet",
                        "kubernetes.io/kubelet-serving", "kubernetes.io/legacy-unknown"]),
            rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
            events_rule()],
        "expand-controller": [
            rule([*READ, "update", "patch"], [""], ["persistentvolumes"]),
            rule(["update", "patch"], [""], ["persistentvolumeclaims/status"]),
            rule(READ, [""], ["persistentvolumeclaims"]),
            rule(READ, ["storage.k8s.io"], ["storageclasses"]),
            rule(["get"], [""], ["services", "endpoints"]),
            rule(["get"], [""], ["secrets"]),
            events_rule()],
        "pvc-protection-controller": [
            rule([*READ, "update"], [""], ["persistentvolumeclaims"]),
            rule(READ, [""], ["pods"]),
            events_rule()],
        "pv-protection-controller": [
            rule([*READ, "update"], [""], ["persistentvolumes"]),
            events_rule()],
        "ttl-after-finished-controller": [
            rule([*READ, "delete"], ["batch"], ["jobs"]),
            events_rule()],
        "root-ca-cert-publisher": [
            rule(["create", "update"], [""], ["configmaps"]),
            events_rule()],
    }


def controller_roles() -> list[Obj]:
    """system:controller:<name> for each controller."""
    return [cluster_role(ROLE_PREFIX + name, rules)
            for name, rules in _controller_rules().items()]


def controller_role_bindings() -> list[Obj]:
    """Each controller role bound to the ServiceAccount kube-system/<name>."""
    return [cluster_role_binding(ROLE_PREFIX + name, service_account("kube-system", name))
            for name in _controller_rules()]
