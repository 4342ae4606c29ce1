"""The kubeadm-shaped manifests: valid objects, our processes' flags, kubeadm's probes and
labels, static pods written whole."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from minikube_py.api import Obj
from minikube_py.api.resources import by_kind
from minikube_py.apiserver.registry.strategies import strategy_for
from minikube_py.cluster import cli
from minikube_py.cluster.addons import Dashboard, dashboard_objects
from minikube_py.cluster.certs import ClusterCertificates
from minikube_py.cluster.cli import (
    CLUSTER_CIDR,
    CLUSTER_DNS,
    DEFAULT_PORTS,
    LOAD_BALANCER_RANGE,
    components,
)
from minikube_py.cluster.kubeadm import staticpod
from minikube_py.cluster.kubeadm.addons import (
    Addons,
    addon_objects,
    coredns_objects,
    gateway_controller_objects,
    in_cluster_kubeconfig,
    kube_proxy_objects,
    local_path_provisioner_objects,
    metrics_server_objects,
    trace_receiver_objects,
)
from minikube_py.cluster.kubeadm.controlplane import (
    ControlPlane,
    HostPaths,
    static_pods,
    write_static_pods,
)
from minikube_py.cluster.netns import DEFAULT_NODE_NETWORK, DEFAULT_PREFIX
from minikube_py.kubelet.config_file import decode_pod

EXTRA = {"apiserver": {"max-requests-inflight": "7"}, "controller-manager": {"v": "5"},
         "scheduler": {"kube-api-qps": "40"}}
IMAGES = {name: f"localhost/minikube-py/{name}:v1.37.0-0123456789ab"
          for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                       "kube-proxy", "coredns", "metrics-server", "trace-receiver",
                       "local-path-provisioner", "gateway-controller")}


def validation_errors(obj: Obj) -> list[str]:
    """What our API server's create path says of `obj`: prepare, default, validate."""
    resource = by_kind(obj["apiVersion"], obj["kind"])
    assert resource is not None, obj["kind"]
    strategy = strategy_for(resource)
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("uid", "6b2e9f0c-1d2a-4c3b-9e8f-0a1b2c3d4e5f")
    strategy.prepare_for_create(obj)
    strategy.default(obj)
    return [str(error) for error in strategy.validate(obj)]


def plane(address: str = "127.0.0.1") -> ControlPlane:
    return ControlPlane(advertise_address=address, ports=DEFAULT_PORTS, images=IMAGES,
                        tracing_endpoint=f"http://{address}:{DEFAULT_PORTS['tracing']}",
                        load_balancer_range=LOAD_BALANCER_RANGE, verbosity=3,
                        extra_config=EXTRA)


def host_paths(state: Path) -> HostPaths:
    return HostPaths(pki=state / "pki", kubeconfigs=state / "kubeconfigs",
                     etcd_data=state / "etcd", tracing_config=state / "tracing.yaml")


def pods(state: Path) -> dict[str, Obj]:
    return {pod["metadata"]["name"]: pod for pod in static_pods(plane(), host_paths(state))}


def test_static_pods_pass_validation(tmp_path: Path) -> None:
    for pod in static_pods(plane(), host_paths(tmp_path)):
        assert validation_errors(pod) == [], pod["metadata"]["name"]


@pytest.fixture(scope="module")
def secured_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cluster home with the certificates `up` makes (components() reads them)."""
    state = tmp_path_factory.mktemp("state")
    ClusterCertificates(state).ensure("https://127.0.0.1:6443", (), {})
    return state


@pytest.mark.parametrize(("pod", "process"), [
    ("etcd", "etcd"), ("kube-apiserver", "apiserver"),
    ("kube-controller-manager", "controller-manager"), ("kube-scheduler", "scheduler")])
def test_static_pods_run_the_processes_up_runs(secured_state: Path, pod: str,
                                               process: str) -> None:
    """The command of each static pod is what `up` runs today, with the node's folders
    seen at kubeadm's paths (etcd adds kubeadm's metrics listener its probes ask, the API
    server listens on every address of its node and advertises the node's)."""
    state = secured_state
    cluster = {"secure": True, "ports": dict(DEFAULT_PORTS), "verbosity": 3,
               "extraConfig": EXTRA}
    command = components(state, cluster)[process].command()
    today = command[1:] if process == "etcd" else command[3:]
    kubeadm_paths = {f"{state}/kubeconfigs/": "/etc/kubernetes/",
                     f"{state}/pki": "/etc/kubernetes/pki",
                     f"{state}/etcd": "/var/lib/etcd",
                     f"{state}/tracing.yaml": "/etc/kubernetes/tracing.yaml"}
    for ours, theirs in kubeadm_paths.items():
        today = [flag.replace(ours, theirs) for flag in today]
    if process == "etcd":
        today.append("--listen-metrics-urls=http://127.0.0.1:2381")
    if process == "apiserver":  # kubeadm's listens on every address of its node
        at = today.index("--bind-address=127.0.0.1")
        today[at:at + 1] = ["--bind-address=0.0.0.0", "--advertise-address=127.0.0.1"]
    container = pods(state)[pod]["spec"]["containers"][0]
    assert container["command"] == [pod, *today]


def test_static_pods_have_kubeadms_shape(tmp_path: Path) -> None:
    by_name = pods(tmp_path)
    assert list(by_name) == ["etcd", "kube-apiserver", "kube-controller-manager",
                             "kube-scheduler"]
    for name, pod in by_name.items():
        assert pod["metadata"]["namespace"] == "kube-system"
        assert pod["metadata"]["labels"] == {"component": name, "tier": "control-plane"}
        spec = pod["spec"]
        assert spec["hostNetwork"] is True
        assert spec["priorityClassName"] == "system-node-critical"
        assert spec["containers"][0]["image"] == IMAGES[name]
        mounts = {mount["name"]: mount["mountPath"]
                  for mount in spec["containers"][0]["volumeMounts"]}
        volumes = {volume["name"]: volume["hostPath"]["path"] for volume in spec["volumes"]}
        assert mounts.keys() == volumes.keys()
    annotations = {name: pod["metadata"].get("annotations") for name, pod in by_name.items()}
    assert annotations["etcd"] == {
        "kubeadm.kubernetes.io/etcd.advertise-client-urls": "https://127.0.0.1:2379"}
    assert annotations["kube-apiserver"] == {
        "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint": "127.0.0.1:6443"}
    etcd_volumes = {v["name"]: v["hostPath"]["path"] for v in by_name["etcd"]["spec"]["volumes"]}
    assert etcd_volumes == {"etcd-certs": f"{tmp_path}/pki/etcd", "etcd-data": f"{tmp_path}/etcd"}


def probes(pod: Obj) -> dict[str, Obj]:
    container = pod["spec"]["containers"][0]
    return {kind: container[kind] for kind in ("livenessProbe", "readinessProbe", "startupProbe")
            if kind in container}


def test_probes_are_kubeadms(tmp_path: Path) -> None:
    by_name = {pod["metadata"]["name"]: pod
               for pod in static_pods(plane("172.18.0.1"), host_paths(tmp_path))}
    apiserver = probes(by_name["kube-apiserver"])
    assert apiserver["livenessProbe"] == {
        "httpGet": {"host": "172.18.0.1", "path": "/livez", "port": 6443, "scheme": "HTTPS"},
        "initialDelaySeconds": 10, "timeoutSeconds": 15, "periodSeconds": 10,
        "failureThreshold": 8}
    assert apiserver["readinessProbe"] == {
        "httpGet": {"host": "172.18.0.1", "path": "/readyz", "port": 6443, "scheme": "HTTPS"},
        "timeoutSeconds": 15, "periodSeconds": 1, "failureThreshold": 3}
    assert apiserver["startupProbe"] == {
        "httpGet": {"host": "172.18.0.1", "path": "/livez", "port": 6443, "scheme": "HTTPS"},
        "initialDelaySeconds": 10, "timeoutSeconds": 15, "periodSeconds": 10,
        "failureThreshold": 24}
    etcd = probes(by_name["etcd"])
    assert etcd.keys() == {"livenessProbe", "startupProbe"}
    assert etcd["livenessProbe"]["httpGet"] == {
        "host": "127.0.0.1", "path": "/health?exclude=NOSPACE&serializable=true",
        "port": 2381, "scheme": "HTTP"}
    assert etcd["startupProbe"]["httpGet"]["path"] == "/health?serializable=false"
    assert probes(by_name["kube-controller-manager"]).keys() == {"livenessProbe",
                                                                 "startupProbe"}
    scheduler = probes(by_name["kube-scheduler"])
    assert scheduler.keys() == {"livenessProbe", "readinessProbe", "startupProbe"}
    assert scheduler["livenessProbe"]["httpGet"] == {
        "host": "127.0.0.1", "path": "/healthz", "port": 10259, "scheme": "HTTP"}


def test_static_pod_written_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest appears by a rename from a dot-file in the same folder (which the
    kubelet skips); a failed write leaves the old manifest and no partial file."""
    manifests = tmp_path / "manifests"
    pod = pods(tmp_path)["kube-scheduler"]
    renames: list[tuple[str, str]] = []
    replace = os.replace

    def recording_replace(source: Any, target: Any) -> None:
        renames.append((str(source), str(target)))
        replace(source, target)

    monkeypatch.setattr(staticpod.os, "replace", recording_replace)
    path = staticpod.write_static_pod(manifests, pod)
    assert path == manifests / "kube-scheduler.yaml"
    assert yaml.safe_load(path.read_text()) == pod
    [(source, target)] = renames
    assert Path(source).parent == manifests and Path(source).name.startswith(".")
    assert target == str(path)

    def failing_replace(source: Any, target: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(staticpod.os, "replace", failing_replace)
    changed = copy.deepcopy(pod)
    changed["spec"]["containers"][0]["image"] = "other"
    with pytest.raises(OSError):
        staticpod.write_static_pod(manifests, changed)
    assert yaml.safe_load(path.read_text()) == pod
    assert [entry.name for entry in manifests.iterdir()] == ["kube-scheduler.yaml"]


# --- the add-ons -------------------------------------------------------------------------

POD_KUBECONFIG = "/etc/kubernetes/in-cluster/kubeconfig.conf"


def addons() -> Addons:
    return Addons(server="https://172.18.0.1:6443", cluster_cidr=str(CLUSTER_CIDR),
                  cluster_dns=CLUSTER_DNS, images=IMAGES,
                  tracing_endpoint="http://172.18.0.1:4318", verbosity=3,
                  extra_config={"proxy": {"iptables-sync-period": "10s"},
                                "dns": {"cluster-domain": "example.local"},
                                "metrics": {"metric-resolution": "15s"}})


def test_addon_objects_pass_validation() -> None:
    objects = [*addon_objects(addons()), *trace_receiver_objects(addons())]
    assert {obj["kind"] for obj in objects} >= {
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
        "ConfigMap", "DaemonSet", "Deployment", "Service", "APIService"}
    for obj in objects:
        assert validation_errors(obj) == [], (obj["kind"], obj["metadata"]["name"])


@pytest.fixture(scope="module")
def node_processes(secured_state: Path) -> dict[str, Any]:
    """What `up` runs today on a cluster with one node (its network not built)."""
    cluster = {"secure": True, "ports": dict(DEFAULT_PORTS), "verbosity": 3,
               "extraConfig": {name: dict(extra)
                               for name, extra in addons().extra_config.items()},
               "network": {"prefix": DEFAULT_PREFIX, "nodeNetwork": DEFAULT_NODE_NETWORK},
               "podCIDRs": {"node-1": "10.244.1.0/24"}, "nodes": 1}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli, "runtime_missing", lambda: None)
        return cli.components(secured_state, cluster)


def split(flags: list[str]) -> list[tuple[str, str]]:
    return [tuple(flag.split("=", 1)) if "=" in flag else (flag, "")  # type: ignore[misc]
            for flag in flags]


def container(objects: list[Obj], kind: str, name: str) -> Obj:
    [obj] = [obj for obj in objects if obj["kind"] == kind and obj["metadata"]["name"] == name]
    return obj["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize(("kind", "name", "process", "in_pod"), [
    ("DaemonSet", "kube-proxy", "node-1/proxy", {
        "--kubeconfig": "/var/lib/kube-proxy/kubeconfig.conf",
        "--hostname-override": "$(NODE_NAME)", "--healthz-bind-address": "0.0.0.0:10256",
        "--metrics-bind-address": "127.0.0.1:10249"}),
    ("Deployment", "coredns", "dns", {
        "--kubeconfig": POD_KUBECONFIG, "--bind-address": "0.0.0.0", "--port": "53",
        "--metrics-bind-address": "0.0.0.0:9153", "--advertise-address": None}),
    ("Deployment", "metrics-server", "metrics", {
        "--kubeconfig": POD_KUBECONFIG, "--bind-address": "0.0.0.0",
        "--advertise-address": None})])
def test_addons_run_the_processes_up_runs(node_processes: dict[str, Any], kind: str,
                                          name: str, process: str,
                                          in_pod: dict[str, str | None]) -> None:
    """The same flags in the same order as `up` gives the process today, but for where
    it listens, its kubeconfig and its node's name (None: a flag the pod drops, as the
    Service selects the pods instead of the process publishing itself)."""
    today = split(node_processes[process].command()[3:])
    expected = [(flag, in_pod.get(flag, value)) for flag, value in today
                if flag not in in_pod or in_pod[flag] is not None]
    every = [*addon_objects(addons()), *trace_receiver_objects(addons())]
    command = container(every, kind, name)["command"]
    assert command[0] == name
    assert split(command[1:]) == expected


def test_kube_proxy_is_kubeadms() -> None:
    objects = kube_proxy_objects(addons())
    [daemon_set] = [obj for obj in objects if obj["kind"] == "DaemonSet"]
    spec = daemon_set["spec"]["template"]["spec"]
    assert daemon_set["metadata"]["labels"] == {"k8s-app": "kube-proxy"}
    assert spec["hostNetwork"] is True
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert spec["serviceAccountName"] == "kube-proxy"
    proxy = spec["containers"][0]
    assert proxy["securityContext"] == {"privileged": True}
    assert proxy["env"] == [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {
        "apiVersion": "v1", "fieldPath": "spec.nodeName"}}}]
    host_paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    assert host_paths == {"xtables-lock": "/run/xtables.lock", "lib-modules": "/lib/modules"}
    [binding] = [obj for obj in objects if obj["kind"] == "ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == "system:node-proxier"
    [config_map] = [obj for obj in objects if obj["kind"] == "ConfigMap"]
    config = yaml.safe_load(config_map["data"]["config.conf"])
    assert config["kind"] == "KubeProxyConfiguration"
    assert config["clusterCIDR"] == str(CLUSTER_CIDR)
    kubeconfig = yaml.safe_load(config_map["data"]["kubeconfig.conf"])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "https://172.18.0.1:6443"


def test_coredns_is_kubeadms() -> None:
    objects = coredns_objects(addons())
    [deployment] = [obj for obj in objects if obj["kind"] == "Deployment"]
    [service] = [obj for obj in objects if obj["kind"] == "Service"]
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert deployment["metadata"]["labels"] == {"k8s-app": "kube-dns"}
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "coredns"
    assert {"key": "node-role.kubernetes.io/control-plane",
            "effect": "NoSchedule"} in pod["tolerations"]
    [term] = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert service["metadata"]["name"] == "kube-dns"
    assert service["spec"]["clusterIP"] == CLUSTER_DNS
    assert service["spec"]["selector"] == {"k8s-app": "kube-dns"}
    assert [(p["name"], p["port"], p["protocol"]) for p in service["spec"]["ports"]] == [
        ("dns", 53, "UDP"), ("dns-tcp", 53, "TCP"), ("metrics", 9153, "TCP")]
    roles = {obj["metadata"]["name"] for obj in objects
             if obj["kind"] in ("ClusterRole", "ClusterRoleBinding")}
    assert roles == {"system:coredns"}


def test_metrics_server_behind_its_apiservice() -> None:
    objects = metrics_server_objects(addons())
    api_services = [obj for obj in objects if obj["kind"] == "APIService"]
    [service] = [obj for obj in objects if obj["kind"] == "Service"]
    assert [a["metadata"]["name"] for a in api_services] == [
        "v1beta1.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io",
        "v1beta1.external.metrics.k8s.io"]
    for api_service in api_services:
        assert api_service["spec"]["service"] == {"namespace": "kube-system",
                                                  "name": service["metadata"]["name"],
                                                  "port": 443}
    assert service["spec"]["selector"] == {"k8s-app": "metrics-server"}
    bound = {obj["roleRef"]["name"] for obj in objects if "roleRef" in obj}
    assert bound == {"system:metrics-server", "system:auth-delegator",
                     "extension-apiserver-authentication-reader"}


def test_the_local_path_provisioner_is_ranchers_deployment_in_kube_system() -> None:
    """kind's local-path-provisioner in kube-system: its account bound to rancher's role,
    our provisioner's flags, the nodes' folder mounted at its own path, and only the
    nodes of this machine's kubelets to run on."""
    nodes = Path("/home/me/.minikube-py/nodes")
    objects = local_path_provisioner_objects(addons(), nodes, ["node-2", "node-1"])
    for obj in objects:
        assert validation_errors(obj) == [], (obj["kind"], obj["metadata"]["name"])
    [deployment] = [obj for obj in objects if obj["kind"] == "Deployment"]
    assert deployment["metadata"]["namespace"] == "kube-system"
    spec = deployment["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "local-path-provisioner-service-account"
    [role] = [obj for obj in objects if obj["kind"] == "ClusterRole"]
    granted = {(resource, verb) for rule in role["rules"] for resource in rule["resources"]
               for verb in rule["verbs"]}
    assert {("persistentvolumes", "create"), ("persistentvolumes", "delete"),
            ("persistentvolumeclaims", "watch"), ("nodes", "get"), ("events", "create"),
            ("storageclasses", "list"), ("pods", "list"),
            ("persistentvolumeclaims/status", "patch")} <= granted
    [binding] = [obj for obj in objects if obj["kind"] == "ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "namespace": "kube-system",
                                    "name": "local-path-provisioner-service-account"}]
    container = spec["containers"][0]
    assert container["image"] == IMAGES["local-path-provisioner"]
    assert container["command"][0] == "local-path-provisioner"
    assert f"--nodes-dir={nodes}" in container["command"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == "nodes"]
    [volume] = [v for v in spec["volumes"] if v["name"] == "nodes"]
    assert mount["mountPath"] == volume["hostPath"]["path"] == str(nodes)
    required = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"] == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        for node in ("node-1", "node-2")]
    [preferred] = spec["affinity"]["nodeAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred == {"weight": 100, "preference": {"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}}


def test_the_gateway_controller_is_a_deployment_in_kube_system_with_its_own_account(
        ) -> None:
    """Beside its nginx data plane in kube-system: its account bound to the role of what
    it reads and writes, /healthz probed on its metrics port, on this machine's nodes."""
    objects = gateway_controller_objects(addons(), ["node-1"])
    for obj in objects:
        assert validation_errors(obj) == [], (obj["kind"], obj["metadata"]["name"])
    [deployment] = [obj for obj in objects if obj["kind"] == "Deployment"]
    assert deployment["metadata"]["namespace"] == "kube-system"
    assert deployment["spec"]["replicas"] == 1
    spec = deployment["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "gateway-controller"
    [role] = [obj for obj in objects if obj["kind"] == "ClusterRole"]
    granted = {(resource, verb) for rule in role["rules"] for resource in rule["resources"]
               for verb in rule["verbs"]}
    assert {("ingresses", "watch"), ("ingresses/status", "update"), ("secrets", "create"),
            ("deployments", "create"), ("customresourcedefinitions", "watch"),
            ("httproutes/status", "patch"), ("gatewayclasses", "create")} <= granted
    [binding] = [obj for obj in objects if obj["kind"] == "ClusterRoleBinding"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "namespace": "kube-system",
                                    "name": "gateway-controller"}]
    container = spec["containers"][0]
    assert container["image"] == IMAGES["gateway-controller"]
    assert split(container["command"][1:4]) == [
        ("--kubeconfig", POD_KUBECONFIG), ("--bind-address", "0.0.0.0"), ("--port", "10263")]
    assert container["readinessProbe"]["httpGet"] == {
        "path": "/healthz", "port": "metrics", "scheme": "HTTP"}
    required = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"] == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]


def test_the_dashboard_addon_objects_pass_validation() -> None:
    dashboard = Dashboard(image="localhost/minikube-py/dashboard:v1.37.0-0123456789ab",
                          server="https://172.18.0.1:6443", nodes=["node-1"],
                          front_proxy_ca=b"PEM")
    for obj in dashboard_objects(dashboard):
        assert validation_errors(obj) == [], (obj["kind"], obj["metadata"]["name"])


def test_a_pods_kubeconfig_names_the_token_and_ca_only_of_a_secured_server() -> None:
    secured = yaml.safe_load(in_cluster_kubeconfig("https://172.18.0.1:6443"))
    assert secured["users"][0]["user"] == {
        "tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}
    assert secured["clusters"][0]["cluster"]["certificate-authority"] == (
        "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt")
    plain = yaml.safe_load(in_cluster_kubeconfig("http://172.18.0.1:6443"))
    assert plain["users"][0]["user"] == {}
    assert plain["clusters"][0]["cluster"] == {"server": "http://172.18.0.1:6443"}


def test_write_static_pods_writes_the_four_manifests(tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    written = write_static_pods(manifests, plane(), host_paths(tmp_path))
    assert sorted(path.name for path in manifests.iterdir()) == [
        "etcd.yaml", "kube-apiserver.yaml", "kube-controller-manager.yaml",
        "kube-scheduler.yaml"]
    assert [yaml.safe_load(path.read_text()) for path in written] == static_pods(
        plane(), host_paths(tmp_path))


def test_the_kubelet_reads_each_manifest_as_a_static_pod(tmp_path: Path) -> None:
    """Our kubelet's --pod-manifest-path decoder takes each file: the mirror pod is
    named <name>-control-plane and keeps kubeadm's labels and probes."""
    for path in write_static_pods(tmp_path / "manifests", plane(), host_paths(tmp_path)):
        pod = decode_pod(path.read_bytes(), str(path), "control-plane")
        name = path.stem
        assert pod["metadata"]["name"] == f"{name}-control-plane"
        assert pod["metadata"]["labels"] == {"component": name, "tier": "control-plane"}
        assert pod["spec"]["nodeName"] == "control-plane"
        assert "livenessProbe" in pod["spec"]["containers"][0]
