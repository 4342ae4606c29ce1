"""The cluster's add-ons as objects to apply, as kubeadm's phases/addons write them
(proxy/manifests.go and proxy.go, dns/manifests.go and dns.go), with upstream
metrics-server's manifest, rancher's local-path-provisioner's (as kind ships it), our
gateway controller (as ingress-nginx's controller Deployment) and our trace receiver,
each running our component's flags.

Pods reach the API server with their ServiceAccount's token: each gets a kubeconfig (a
ConfigMap, as kubeadm's kube-proxy kubeconfig.conf) naming the server, the mounted CA and
token file, since our components read a kubeconfig rather than the in-cluster variables.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from minikube_py.api import Obj
from minikube_py.api.metricsapi import ADAPTER_API_SERVICES, API_SERVICE, metrics_service
from minikube_py.cluster.kubeadm.staticpod import probe

NAMESPACE = "kube-system"
RBAC = "rbac.authorization.k8s.io"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
CONTROL_PLANE_TAINT = "node-role.kubernetes.io/control-plane"
KUBE_PROXY_DIR = "/var/lib/kube-proxy"
IN_CLUSTER_KUBECONFIG = "/etc/kubernetes/in-cluster/kubeconfig.conf"
PROXY_HEALTHZ_PORT = 10256
PROXY_METRICS_PORT = 10249
DNS_PORT = 53
DNS_METRICS_PORT = 9153
METRICS_PORT = 4443
PROVISIONER_PORT = 10262
GATEWAY_PORT = 10263
TRACING_PORT = 4318


@dataclass(frozen=True)
class Addons:
    """What the add-ons depend on: the API server's URL (as pods reach it), the pods'
    CIDR, the kube-dns Service's ClusterIP, the images per component, where spans go,
    log verbosity and --extra-config per component."""

    server: str
    cluster_cidr: str
    cluster_dns: str
    images: Mapping[str, str]
    tracing_endpoint: str
    verbosity: int = 2
    extra_config: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def flags(self, component: str) -> tuple[str, ...]:
        """The log verbosity, then what --extra-config set (a later flag wins)."""
        extra = self.extra_config.get(component) or {}
        return (f"--v={self.verbosity}",
                *(f"--{flag}={value}" for flag, value in extra.items()))


def _metadata(name: str, labels: Mapping[str, str] | None = None,
              namespace: str | None = NAMESPACE) -> Obj:
    metadata: Obj = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    return metadata


def service_account(name: str, labels: Mapping[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(name, labels)}


def cluster_role_binding(name: str, role: str, account: str) -> Obj:
    """`account` (a kube-system ServiceAccount) bound to the ClusterRole `role`."""
    return {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
            "metadata": _metadata(name, namespace=None),
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": account,
                          "namespace": NAMESPACE}]}


def in_cluster_kubeconfig(server: str) -> str:
    """kubeadm's kube-proxy kubeconfig.conf: the server, the ServiceAccount's CA and
    token as mounted in every pod (none for a plain-HTTP server: `up --no-secure`
    mounts neither)."""
    secured = not server.startswith("http://")
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "default", "cluster": {
            **({"certificate-authority": f"{SERVICE_ACCOUNT_DIR}/ca.crt"} if secured else {}),
            "server": server}}],
        "contexts": [{"name": "default", "context": {
            "cluster": "default", "namespace": "default", "user": "default"}}],
        "current-context": "default",
        "users": [{"name": "default", "user": (
            {"tokenFile": f"{SERVICE_ACCOUNT_DIR}/token"} if secured else {})}],
    }, sort_keys=False)


def _kubeconfig_volume(config_map: str) -> tuple[Obj, Obj]:
    """The pod's kubeconfig (ConfigMap `config_map`) and its mount."""
    return ({"name": "kubeconfig", "configMap": {"name": config_map}},
            {"name": "kubeconfig", "mountPath": "/etc/kubernetes/in-cluster", "readOnly": True})


# --- kube-proxy: phases/addons/proxy ---------------------------------------------------

def proxy_flags(addons: Addons) -> list[str]:
    """Our proxy as `up` runs it on a node, the node's name from the downward API and
    its listeners on every address of the node (kubeadm's bind addresses)."""
    return [f"--kubeconfig={KUBE_PROXY_DIR}/kubeconfig.conf",
            "--hostname-override=$(NODE_NAME)", f"--cluster-cidr={addons.cluster_cidr}",
            f"--healthz-bind-address=0.0.0.0:{PROXY_HEALTHZ_PORT}",
            f"--metrics-bind-address=127.0.0.1:{PROXY_METRICS_PORT}",
            f"--tracing-endpoint={addons.tracing_endpoint}", *addons.flags("proxy")]


def kube_proxy_configuration(addons: Addons) -> str:
    """config.conf of the kube-proxy ConfigMap: the KubeProxyConfiguration that the
    flags above amount to."""
    return yaml.safe_dump({
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
        "bindAddress": "0.0.0.0", "clientConnection": {
            "kubeconfig": f"{KUBE_PROXY_DIR}/kubeconfig.conf"},
        "clusterCIDR": addons.cluster_cidr,
        "healthzBindAddress": f"0.0.0.0:{PROXY_HEALTHZ_PORT}",
        "metricsBindAddress": f"127.0.0.1:{PROXY_METRICS_PORT}", "mode": "iptables",
    }, sort_keys=False)


def kube_proxy_objects(addons: Addons) -> list[Obj]:
    """proxy.go's objects: the ServiceAccount, its binding to system:node-proxier, the
    kube-proxy ConfigMap and the DaemonSet on every node."""
    labels = {"k8s-app": "kube-proxy"}
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": _metadata("kube-proxy", {"app": "kube-proxy"}),
                  "data": {"config.conf": kube_proxy_configuration(addons),
                           "kubeconfig.conf": in_cluster_kubeconfig(addons.server)}}
    container = {
        "name": "kube-proxy", "image": addons.images["kube-proxy"],
        "imagePullPolicy": "IfNotPresent",
        "command": ["kube-proxy", *proxy_flags(addons)],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {
            "apiVersion": "v1", "fieldPath": "spec.nodeName"}}}],
        "securityContext": {"privileged": True},
        "volumeMounts": [{"name": "kube-proxy", "mountPath": KUBE_PROXY_DIR},
                         {"name": "xtables-lock", "mountPath": "/run/xtables.lock"},
                         {"name": "lib-modules", "mountPath": "/lib/modules",
                          "readOnly": True}]}
    daemon_set = {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": _metadata("kube-proxy", labels),
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {"metadata": {"labels": dict(labels)}, "spec": {
                "containers": [container],
                "hostNetwork": True,
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "priorityClassName": "system-node-critical",
                "serviceAccountName": "kube-proxy",
                "tolerations": [{"operator": "Exists"}],
                "volumes": [
                    {"name": "kube-proxy", "configMap": {"name": "kube-proxy"}},
                    {"name": "xtables-lock", "hostPath": {"path": "/run/xtables.lock",
                                                          "type": "FileOrCreate"}},
                    {"name": "lib-modules", "hostPath": {"path": "/lib/modules"}}]}}}}
    # joining nodes read the ConfigMap with their bootstrap token (proxy.go's Role)
    role = {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": _metadata("kube-proxy"),
            "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                       "resourceNames": ["kube-proxy"], "verbs": ["get"]}]}
    role_binding = {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
                    "metadata": _metadata("kube-proxy"),
                    "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "kube-proxy"},
                    "subjects": [{"apiGroup": RBAC, "kind": "Group",
                                  "name": "system:bootstrappers:kubeadm:default-node-token"}]}
    return [service_account("kube-proxy"),
            cluster_role_binding("kubeadm:node-proxier", "system:node-proxier", "kube-proxy"),
            config_map, role, role_binding, daemon_set]


# --- DNS: phases/addons/dns ------------------------------------------------------------

def dns_flags(addons: Addons) -> list[str]:
    """Our DNS in a pod: on every address of the pod, port 53; not publishing itself
    (no --advertise-address): the kube-dns Service selects its pods."""
    return [f"--kubeconfig={IN_CLUSTER_KUBECONFIG}", "--bind-address=0.0.0.0",
            f"--port={DNS_PORT}", f"--service-ip={addons.cluster_dns}",
            f"--metrics-bind-address=0.0.0.0:{DNS_METRICS_PORT}", *addons.flags("dns")]


def coredns_objects(addons: Addons) -> list[Obj]:
    """dns.go's objects: the coredns ServiceAccount, system:coredns ClusterRole and
    binding, the coredns Deployment (2 replicas, spread over nodes) and the kube-dns
    Service at the cluster DNS address; plus the pods' kubeconfig."""
    labels = {"k8s-app": "kube-dns"}
    cluster_role = {
        "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
        "metadata": _metadata("system:coredns", namespace=None),
        "rules": [{"apiGroups": [""], "resources": ["endpoints", "services", "pods",
                                                     "namespaces"],
                   "verbs": ["list", "watch"]},
                  {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                   "verbs": ["list", "watch"]}]}
    health = probe(None, "/healthz", DNS_METRICS_PORT, "HTTP")
    container = {
        "name": "coredns", "image": addons.images["coredns"],
        "imagePullPolicy": "IfNotPresent",
        "command": ["coredns", *dns_flags(addons)],
        "resources": {"limits": {"memory": "170Mi"},
                      "requests": {"cpu": "100m", "memory": "70Mi"}},
        "ports": [{"name": "dns", "containerPort": DNS_PORT, "protocol": "UDP"},
                  {"name": "dns-tcp", "containerPort": DNS_PORT, "protocol": "TCP"},
                  {"name": "metrics", "containerPort": DNS_METRICS_PORT, "protocol": "TCP"}],
        "livenessProbe": {**health, "initialDelaySeconds": 60, "timeoutSeconds": 5,
                          "successThreshold": 1, "failureThreshold": 5},
        "readinessProbe": health,
        "securityContext": {"allowPrivilegeEscalation": False,
                            "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                            "readOnlyRootFilesystem": True},
        "volumeMounts": [_kubeconfig_volume("coredns-kubeconfig")[1]]}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": _metadata("coredns", labels),
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": {
                "priorityClassName": "system-cluster-critical",
                "serviceAccountName": "coredns",
                "affinity": {"podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 100, "podAffinityTerm": {
                            "labelSelector": {"matchExpressions": [{
                                "key": "k8s-app", "operator": "In",
                                "values": ["kube-dns"]}]},
                            "topologyKey": "kubernetes.io/hostname"}}]}},
                "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                                {"key": CONTROL_PLANE_TAINT, "effect": "NoSchedule"}],
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "containers": [container],
                "dnsPolicy": "Default",
                "volumes": [_kubeconfig_volume("coredns-kubeconfig")[0]]}}}}
    service = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {**_metadata("kube-dns", {**labels, "kubernetes.io/cluster-service": "true",
                                               "kubernetes.io/name": "CoreDNS"}),
                     "annotations": {"prometheus.io/port": str(DNS_METRICS_PORT),
                                     "prometheus.io/scrape": "true"}},
        "spec": {"clusterIP": addons.cluster_dns, "selector": dict(labels),
                 "ports": [{"name": "dns", "port": DNS_PORT, "protocol": "UDP",
                            "targetPort": DNS_PORT},
                           {"name": "dns-tcp", "port": DNS_PORT, "protocol": "TCP",
                            "targetPort": DNS_PORT},
                           {"name": "metrics", "port": DNS_METRICS_PORT, "protocol": "TCP",
                            "targetPort": DNS_METRICS_PORT}]}}
    kubeconfig = kubeconfig_config_map("coredns-kubeconfig", labels, addons)
    return [service_account("coredns"), cluster_role,
            cluster_role_binding("system:coredns", "system:coredns", "coredns"),
            kubeconfig, deployment, service]


# --- metrics-server: upstream's components.yaml ----------------------------------------

def metrics_flags(addons: Addons) -> list[str]:
    """Our metrics server in a pod: on every address of the pod, not publishing itself
    (the Service selects its pod)."""
    return [f"--kubeconfig={IN_CLUSTER_KUBECONFIG}", "--bind-address=0.0.0.0",
            f"--port={METRICS_PORT}", *addons.flags("metrics")]


def metrics_server_objects(addons: Addons) -> list[Obj]:
    """metrics-server's ServiceAccount, its RBAC (system:metrics-server, the aggregated
    reader, auth-delegator and the authentication reader), its Deployment, Service and
    the v1beta1.metrics.k8s.io APIService pointing at it."""
    labels = {"k8s-app": "metrics-server"}
    reader = {
        "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
        "metadata": _metadata("system:aggregated-metrics-reader", {
            **labels, "rbac.authorization.k8s.io/aggregate-to-admin": "true",
            "rbac.authorization.k8s.io/aggregate-to-edit": "true",
            "rbac.authorization.k8s.io/aggregate-to-view": "true"}, namespace=None),
        "rules": [{"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"],
                   "verbs": ["get", "list", "watch"]}]}
    role = {
        "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
        "metadata": _metadata("system:metrics-server", labels, namespace=None),
        "rules": [{"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
                  {"apiGroups": [""], "resources": ["pods", "nodes"],
                   "verbs": ["get", "list", "watch"]}]}
    auth_reader = {
        "apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
        "metadata": _metadata("metrics-server-auth-reader", labels),
        "roleRef": {"apiGroup": RBAC, "kind": "Role",
                    "name": "extension-apiserver-authentication-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "metrics-server",
                      "namespace": NAMESPACE}]}
    service = metrics_service()
    service["spec"]["selector"] = dict(labels)
    health = probe(None, "/readyz", "https", "HTTP")
    liveness = probe(None, "/healthz", "https", "HTTP")
    container = {
        "name": "metrics-server", "image": addons.images["metrics-server"],
        "imagePullPolicy": "IfNotPresent",
        "command": ["metrics-server", *metrics_flags(addons)],
        "ports": [{"name": "https", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "readinessProbe": {**health, "initialDelaySeconds": 20, "periodSeconds": 10,
                           "failureThreshold": 3},
        "livenessProbe": {**liveness, "periodSeconds": 10, "failureThreshold": 3},
        "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]},
                            "readOnlyRootFilesystem": True,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "volumeMounts": [_kubeconfig_volume("metrics-server-kubeconfig")[1]]}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": _metadata("metrics-server", labels),
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            "strategy": {"rollingUpdate": {"maxUnavailable": 0}},
            "template": {"metadata": {"labels": dict(labels)}, "spec": {
                "containers": [container],
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "priorityClassName": "system-cluster-critical",
                "serviceAccountName": "metrics-server",
                "volumes": [_kubeconfig_volume("metrics-server-kubeconfig")[0]]}}}}
    kubeconfig = kubeconfig_config_map("metrics-server-kubeconfig", labels, addons)
    return [service_account("metrics-server", labels), reader, role, auth_reader,
            cluster_role_binding("metrics-server:system:auth-delegator",
                                 "system:auth-delegator", "metrics-server"),
            cluster_role_binding("system:metrics-server", "system:metrics-server",
                                 "metrics-server"),
            kubeconfig, service, deployment, copy.deepcopy(API_SERVICE),
            *copy.deepcopy(ADAPTER_API_SERVICES)]


def on_nodes(nodes: Sequence[str]) -> Obj:
    """A node affinity's required term: one of `nodes`, those this machine runs a kubelet
    for, so a pod that must really run stays off hollow nodes (`--simulated-nodes`, which
    run nothing) and off a joined machine's."""
    # one term a node: a field's In takes one value (the terms are ORed)
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        for node in sorted(nodes)]}}


def one_replica_deployment(name: str, labels: Mapping[str, str], container: Obj, *,
                           account: str | None = None, affinity: Obj | None = None,
                           volumes: Sequence[Obj] = ()) -> Obj:
    """A controller's Deployment in kube-system: one replica, replaced by Recreate (two
    would act on the same objects), a system-cluster-critical Linux pod that tolerates the
    control plane's taint; `affinity` is its node affinity."""
    spec: Obj = {"containers": [container], "nodeSelector": {"kubernetes.io/os": "linux"},
                 "priorityClassName": "system-cluster-critical",
                 "tolerations": [{"key": CONTROL_PLANE_TAINT, "effect": "NoSchedule",
                                  "operator": "Exists"}],
                 "volumes": list(volumes)}
    if account:
        spec["serviceAccountName"] = account
    if affinity:
        spec["affinity"] = {"nodeAffinity": affinity}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _metadata(name, labels),
            "spec": {"replicas": 1, "strategy": {"type": "Recreate"},
                     "selector": {"matchLabels": dict(labels)},
                     "template": {"metadata": {"labels": dict(labels)}, "spec": spec}}}


def kubeconfig_config_map(name: str, labels: Mapping[str, str], addons: Addons) -> Obj:
    """The ConfigMap of a pod's in-cluster kubeconfig (mounted by _kubeconfig_volume)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _metadata(name, labels),
            "data": {"kubeconfig.conf": in_cluster_kubeconfig(addons.server)}}


# --- the local-path provisioner: rancher's local-path-storage.yaml, as kind ships it ----

PROVISIONER_ACCOUNT = "local-path-provisioner-service-account"


def provisioner_flags(addons: Addons, nodes_dir: Path) -> list[str]:
    """Our provisioner in a pod: /healthz on every address of the pod, the nodes' folders
    at the path they have on this machine (its PersistentVolumes name host paths), its
    spans to the cluster's trace receiver."""
    return [f"--kubeconfig={IN_CLUSTER_KUBECONFIG}", "--bind-address=0.0.0.0",
            f"--port={PROVISIONER_PORT}", f"--nodes-dir={nodes_dir}",
            f"--tracing-endpoint={addons.tracing_endpoint}", *addons.flags("provisioner")]


def local_path_provisioner_objects(addons: Addons, nodes_dir: Path,
                                   nodes: Sequence[str]) -> list[Obj]:
    """rancher's objects in kube-system: the ServiceAccount, local-path-provisioner-role
    (upstream's rules, and the external-resizer's on claims) and its binding, the pod's
    kubeconfig and the one-replica Deployment. The nodes of this cluster keep their
    files under `nodes_dir` on this machine, so its pod mounts that folder and makes and
    removes the volumes' folders itself (docs/decisions.md), where rancher's starts a
    helper pod on the volume's node. So the pod must run on one of `nodes`, those this
    machine runs a kubelet for: a node affinity on their names keeps it off hollow nodes
    (`--simulated-nodes`, which run nothing) and off a joined machine's."""
    labels = {"app": "local-path-provisioner"}
    role = {
        "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
        "metadata": _metadata("local-path-provisioner-role", namespace=None),
        "rules": [{"apiGroups": [""], "resources": ["nodes", "persistentvolumeclaims",
                                                     "configmaps", "pods", "pods/log"],
                   "verbs": ["get", "list", "watch"]},
                  {"apiGroups": [""], "resources": ["persistentvolumes"],
                   "verbs": ["get", "list", "watch", "create", "patch", "update", "delete"]},
                  {"apiGroups": [""], "resources": ["events"],
                   "verbs": ["create", "patch", "update"]},
                  {"apiGroups": ["events.k8s.io"], "resources": ["events"],
                   "verbs": ["create", "patch", "update"]},
                  {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"],
                   "verbs": ["get", "list", "watch"]},
                  # the external-resizer's: a claim's resize status and conditions
                  {"apiGroups": [""], "resources": ["persistentvolumeclaims"],
                   "verbs": ["update", "patch"]},
                  {"apiGroups": [""], "resources": ["persistentvolumeclaims/status"],
                   "verbs": ["update", "patch"]}]}
    health = probe(None, "/healthz", "healthz", "HTTP")
    container = {
        "name": "local-path-provisioner", "image": addons.images["local-path-provisioner"],
        "imagePullPolicy": "IfNotPresent",
        "command": ["local-path-provisioner", *provisioner_flags(addons, nodes_dir)],
        "ports": [{"name": "healthz", "containerPort": PROVISIONER_PORT, "protocol": "TCP"}],
        "livenessProbe": {**health, "periodSeconds": 10, "failureThreshold": 3},
        "readinessProbe": {**health, "periodSeconds": 2, "failureThreshold": 3},
        "volumeMounts": [_kubeconfig_volume("local-path-provisioner-kubeconfig")[1],
                         {"name": "nodes", "mountPath": str(nodes_dir)}]}
    # on the first of `nodes` when it has room (control-plane, or node-1), as kind's runs
    # on its control plane: the labs can say where it is
    first = {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": {"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": sorted(nodes)[:1]}]}}]}
    deployment = one_replica_deployment(
        "local-path-provisioner", labels, container, account=PROVISIONER_ACCOUNT,
        affinity={**on_nodes(nodes), **first},
        volumes=[_kubeconfig_volume("local-path-provisioner-kubeconfig")[0],
                 {"name": "nodes", "hostPath": {"path": str(nodes_dir), "type": "Directory"}}])
    kubeconfig = kubeconfig_config_map("local-path-provisioner-kubeconfig", labels, addons)
    return [service_account(PROVISIONER_ACCOUNT), role,
            cluster_role_binding("local-path-provisioner-bind", "local-path-provisioner-role",
                                 PROVISIONER_ACCOUNT),
            kubeconfig, deployment]


# --- our gateway controller: as ingress-nginx's controller Deployment ------------------

GATEWAY_CONTROLLER = "gateway-controller"
GATEWAY_ROLE = "minikube-py:gateway-controller"
GATEWAY_RULES: list[Obj] = [
    # Ingress and Gateway API in (what the service-lb says of its Services it reads in
    # their status: no Events), its nginx Deployment, Secret and LoadBalancer Services
    # (kube-system) and the objects' status out; it records no Events
    {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses", "ingressclasses"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["networking.k8s.io"], "resources": ["ingressclasses"],
     "verbs": ["create"]},
    {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses/status"],
     "verbs": ["update", "patch"]},
    {"apiGroups": [""], "resources": ["services", "secrets", "namespaces"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["services", "secrets"],
     "verbs": ["create", "update", "delete"]},
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "create"]},
    {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["gateway.networking.k8s.io"],
     "resources": ["gatewayclasses", "gateways", "httproutes", "referencegrants"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["gateway.networking.k8s.io"], "resources": ["gatewayclasses"],
     "verbs": ["create"]},
    {"apiGroups": ["gateway.networking.k8s.io"],
     "resources": ["gatewayclasses/status", "gateways/status", "httproutes/status"],
     "verbs": ["update", "patch"]},
]


def gateway_controller_flags(addons: Addons) -> list[str]:
    """Our gateway controller in a pod: /healthz and /metrics on every address of the
    pod, its spans to the cluster's trace receiver."""
    return [f"--kubeconfig={IN_CLUSTER_KUBECONFIG}", "--bind-address=0.0.0.0",
            f"--port={GATEWAY_PORT}", f"--tracing-endpoint={addons.tracing_endpoint}",
            *addons.flags("gateway")]


def gateway_controller_objects(addons: Addons, nodes: Sequence[str]) -> list[Obj]:
    """The gateway controller in kube-system, beside the nginx data plane it makes there
    (docs/decisions.md): its ServiceAccount, ClusterRole and binding, the pod's
    kubeconfig and the one-replica Deployment (Recreate: two controllers would write the
    same statuses), on one of `nodes`."""
    labels = {"app.kubernetes.io/name": GATEWAY_CONTROLLER,
              "app.kubernetes.io/component": "controller"}
    role = {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
            "metadata": _metadata(GATEWAY_ROLE, namespace=None), "rules": GATEWAY_RULES}
    health = probe(None, "/healthz", "metrics", "HTTP")
    container = {
        "name": "controller", "image": addons.images[GATEWAY_CONTROLLER],
        "imagePullPolicy": "IfNotPresent",
        "command": [GATEWAY_CONTROLLER, *gateway_controller_flags(addons)],
        "ports": [{"name": "metrics", "containerPort": GATEWAY_PORT, "protocol": "TCP"}],
        "livenessProbe": {**health, "periodSeconds": 10, "failureThreshold": 3},
        "readinessProbe": {**health, "periodSeconds": 2, "failureThreshold": 3},
        "volumeMounts": [_kubeconfig_volume("gateway-controller-kubeconfig")[1]]}
    deployment = one_replica_deployment(
        GATEWAY_CONTROLLER, labels, container, account=GATEWAY_CONTROLLER,
        affinity=on_nodes(nodes), volumes=[_kubeconfig_volume("gateway-controller-kubeconfig")[0]])
    kubeconfig = kubeconfig_config_map("gateway-controller-kubeconfig", labels, addons)
    return [service_account(GATEWAY_CONTROLLER, labels), role,
            cluster_role_binding(GATEWAY_ROLE, GATEWAY_ROLE, GATEWAY_CONTROLLER),
            kubeconfig, deployment]


# --- our trace receiver ----------------------------------------------------------------

TRACE_DATA = "/var/lib/tracestore"


def trace_receiver_flags() -> list[str]:
    """The trace receiver in a pod: every address of the pod, OTLP/HTTP's port."""
    return [f"--data-dir={TRACE_DATA}", "--bind-address=0.0.0.0", f"--port={TRACING_PORT}"]


def trace_receiver_objects(addons: Addons) -> list[Obj]:
    """The trace receiver's Deployment (one replica: the spans are in its pod) and the
    Service `trace-receiver` the components send their spans to."""
    labels = {"k8s-app": "trace-receiver"}
    health = probe(None, "/healthz", "otlp-http", "HTTP")
    container = {
        "name": "trace-receiver", "image": addons.images["trace-receiver"],
        "imagePullPolicy": "IfNotPresent",
        "command": ["trace-receiver", *trace_receiver_flags()],
        "ports": [{"name": "otlp-http", "containerPort": TRACING_PORT, "protocol": "TCP"}],
        "livenessProbe": {**health, "periodSeconds": 10, "failureThreshold": 3},
        "readinessProbe": {**health, "periodSeconds": 10, "failureThreshold": 3},
        "volumeMounts": [{"name": "traces", "mountPath": TRACE_DATA}]}
    deployment = one_replica_deployment("trace-receiver", labels, container,
                                        volumes=[{"name": "traces", "emptyDir": {}}])
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": _metadata("trace-receiver", labels),
               "spec": {"selector": dict(labels),
                        "ports": [{"name": "otlp-http", "port": TRACING_PORT,
                                   "protocol": "TCP", "targetPort": "otlp-http"}]}}
    return [deployment, service]


def addon_objects(addons: Addons) -> list[Obj]:
    """The add-ons `up` applies, in an order that applies (accounts and RBAC first):
    kube-proxy, DNS and the metrics server (the trace receiver stays a host process;
    trace_receiver_objects is its in-cluster form)."""
    return [*kube_proxy_objects(addons), *coredns_objects(addons),
            *metrics_server_objects(addons)]
