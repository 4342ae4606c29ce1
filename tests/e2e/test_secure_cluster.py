"""`minikube-py up` (secured, the default): the cluster kubeadm would make, on one
machine. Every component has its own certificate and only its own roles; kubectl is the
admin; a pod gets a ServiceAccount token it can use against the API server; kubelets let
in only the API server and those RBAC allows.

The tests run on the lane's shared cluster (tests/e2e/conftest.py), in the namespaces
`secure` and `robots`, in file order; the shared cluster's `down --purge` checks that
nothing is left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from minikube_py.security import pki
from tests.api_helpers import until
from tests.e2e.conftest import LaneCluster
from tests.test_cluster_cli import kubectl, launcher

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).with_name("kubectl"))


NAMESPACE = "secure"


@pytest.fixture(scope="module")
def cluster(lane_cluster: LaneCluster) -> Iterator[Path]:
    """The lane's cluster seen from NAMESPACE (a directory whose kubeconfig works there);
    the cluster's own files (pki, the components' kubeconfigs) are in `home`."""
    with lane_cluster.namespaces(__name__, NAMESPACE, "robots") as view:
        yield view


@pytest.fixture(scope="module")
def home(lane_cluster: LaneCluster, cluster: Path) -> Path:
    return lane_cluster.home


def as_user(home: Path, who: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, f"--kubeconfig={home / 'kubeconfigs' / f'{who}.conf'}",
                           *args], capture_output=True, text=True, timeout=60)


def test_kubectl_is_the_admin_over_tls(cluster: Path) -> None:
    config = yaml.safe_load((cluster / "kubeconfig").read_text())
    assert config["clusters"][0]["cluster"]["server"].startswith("https://")
    who = json.loads(kubectl(cluster, "auth", "whoami", "-o", "json").stdout)
    assert who["status"]["userInfo"]["username"] == "kubernetes-admin"
    assert "system:masters" in who["status"]["userInfo"]["groups"]


# Each component's kubeconfig (kubeconfigs/<who>.conf): the user it signs in as, what it
# may do (its job) and what it may not (another's, or an admin's).
COMPONENTS = {
    "controller-manager": ("system:kube-controller-manager", [
        "update leases/kube-controller-manager -n kube-system",
        "create serviceaccounts --subresource=token -n kube-system",
        "list replicasets.apps -A",
    ], [
        "create pods", "update leases/kube-scheduler -n kube-system", "delete nodes",
    ]),
    "scheduler": ("system:kube-scheduler", [
        "create pods --subresource=binding", "update leases/kube-scheduler -n kube-system",
    ], [
        "delete secrets", "update leases/kube-controller-manager -n kube-system",
    ]),
    "proxy": ("system:kube-proxy", [
        "list endpointslices.discovery.k8s.io -A", "watch services -A",
    ], [
        "create pods", "get secrets -A",
    ]),
    "dns": ("system:kube-dns", [
        "watch endpointslices.discovery.k8s.io -A", "list services -A",
        "create endpointslices.discovery.k8s.io -n kube-system",
    ], [
        "get secrets -A", "delete pods", "create deployments.apps",
    ]),
    "metrics": ("system:metrics-server", [
        "get nodes --subresource=metrics", "list pods -A",
        "update apiservices.apiregistration.k8s.io",
    ], [
        "get secrets -A", "create pods", "update nodes",
    ]),
}
# The local-path provisioner is a Deployment's pod in kube-system: it signs in with the
# token mounted in it, as its ServiceAccount, bound to rancher's ClusterRole (its reads,
# the volumes' writes, events) and the external-resizer's claim writes.
PROVISIONER = ("system:serviceaccount:kube-system:local-path-provisioner-service-account", [
    "get nodes", "watch persistentvolumeclaims -A", "list pods -A", "watch configmaps -A",
    "create persistentvolumes", "delete persistentvolumes", "update persistentvolumeclaims -A",
    "watch storageclasses.storage.k8s.io", "create events -n default",
    "patch persistentvolumeclaims --subresource=status -A",
    "update persistentvolumeclaims --subresource=status -A",
], [
    "get secrets -A", "delete nodes", "create pods", "delete persistentvolumeclaims -A",
    "update storageclasses.storage.k8s.io", "create configmaps -n kube-system",
])


# The gateway controller is a Deployment's pod in kube-system too, as the ServiceAccount
# gateway-controller; it reads what the service-lb says of its Services from their status
# (the LoadBalancerReady condition), not from Events, and records none.
GATEWAY = ("system:serviceaccount:kube-system:gateway-controller", [
    "watch ingresses.networking.k8s.io -A", "watch endpointslices.discovery.k8s.io -A",
    "update ingresses.networking.k8s.io -A --subresource=status",
    "create secrets -n kube-system", "watch services -A",
], [
    "create pods", "delete nodes", "update ingresses.networking.k8s.io -A",
    "list events -n kube-system", "create events -n kube-system",
    "update services -n kube-system --subresource=status",
])


def may_only_do_its_job(ask: Callable[..., subprocess.CompletedProcess[str]], who: str,
                        user: str, may: list[str], may_not: list[str]) -> None:
    """`ask` (kubectl as `who`) signs in as `user`, may do each of `may` and none of
    `may_not`."""
    signed_in = ask("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
    assert signed_in.stdout == user, signed_in.stderr
    for question in may:
        answer = ask("auth", "can-i", *question.split())
        assert (answer.stdout, answer.returncode) == ("yes\n", 0), (who, question, answer)
    for question in may_not:
        answer = ask("auth", "can-i", *question.split())
        assert (answer.stdout, answer.returncode) == ("no\n", 1), (who, question, answer)


@pytest.mark.parametrize("who", sorted(COMPONENTS))
def test_each_component_is_itself_and_may_only_do_its_job(home: Path, who: str) -> None:
    may_only_do_its_job(lambda *args: as_user(home, who, *args), who, *COMPONENTS[who])


def test_the_provisioner_is_its_pods_service_account_and_may_only_do_its_job(
        cluster: Path, home: Path, tmp_path: Path) -> None:
    """No kubeconfig of its own on the host: the token kubelet mounted in the provisioner's
    pod is its identity."""
    assert not (home / "kubeconfigs" / "provisioner.conf").exists()
    provisioner = ("-n", "kube-system", "-l", "app=local-path-provisioner")
    kubectl(cluster, "wait", "--for=condition=Ready", "pods", *provisioner, "--timeout=180s")
    pod = kubectl(cluster, "get", "pods", *provisioner, "-o",
                  "jsonpath={.items[0].metadata.name}").stdout
    token = kubectl(cluster, "exec", "-n", "kube-system", pod, "--", "cat",
                    "/var/run/secrets/kubernetes.io/serviceaccount/token").stdout
    admin = yaml.safe_load((cluster / "kubeconfig").read_text())
    config = tmp_path / "provisioner-token.conf"
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": admin["clusters"],
        "users": [{"name": "provisioner", "user": {"token": token}}],
        "contexts": [{"name": "provisioner", "context": {
            "cluster": admin["clusters"][0]["name"], "user": "provisioner"}}],
        "current-context": "provisioner"}))

    def ask(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KUBECTL, f"--kubeconfig={config}", *args],
                              capture_output=True, text=True, timeout=60)

    may_only_do_its_job(ask, "provisioner", *PROVISIONER)


def test_the_gateway_controller_is_its_pods_service_account_and_may_only_do_its_job(
        cluster: Path, home: Path) -> None:
    """No certificate of its own: its Deployment's pod runs as the ServiceAccount (asked
    about by impersonation)."""
    assert not (home / "kubeconfigs" / "gateway.conf").exists()
    account = kubectl(cluster, "get", "deployment", "gateway-controller", "-n", "kube-system",
                      "-o", "jsonpath={.spec.template.spec.serviceAccountName}").stdout
    assert account == "gateway-controller"

    def ask(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KUBECTL, f"--kubeconfig={cluster / 'kubeconfig'}",
                               f"--as={GATEWAY[0]}", *args],
                              capture_output=True, text=True, timeout=60)

    may_only_do_its_job(ask, "gateway-controller", *GATEWAY)


def test_a_node_and_the_controllers_may_only_do_their_jobs(cluster: Path, home: Path
                                                          ) -> None:
    node = as_user(home, "node-1", "get", "secrets", "-A")
    assert node.returncode != 0 and "forbidden" in node.stderr
    # the controllers write as their own ServiceAccounts
    can = kubectl(cluster, "auth", "can-i", "create", "pods",
                  "--as=system:serviceaccount:kube-system:replicaset-controller")
    assert can.stdout == "yes\n"
    cannot = subprocess.run(
        [KUBECTL, f"--kubeconfig={cluster / 'kubeconfig'}", "auth", "can-i", "create",
         "deployments", "--as=system:serviceaccount:kube-system:replicaset-controller"],
        capture_output=True, text=True, timeout=30)
    assert cannot.stdout == "no\n"


def test_each_node_joined_with_the_token_and_earned_its_own_certificate(cluster: Path,
                                                                       home: Path) -> None:
    """kubeadm's join: the token's Secret and a signed cluster-info, each node's kubelet
    asking for its certificate as system:bootstrap:<id>, approved and signed."""
    token = (home / "pki" / "bootstrap-token").read_text().strip()
    token_id = token.split(".")[0]
    kubectl(cluster, "get", "secret", "-n", "kube-system", f"bootstrap-token-{token_id}")
    info = json.loads(kubectl(cluster, "get", "configmap", "-n", "kube-public",
                              "cluster-info", "-o", "json").stdout)
    assert f"jws-kubeconfig-{token_id}" in info["data"]
    requests = json.loads(kubectl(cluster, "get", "csr", "-o", "json").stdout)["items"]
    by_token = [r for r in requests
                if r["spec"]["username"] == f"system:bootstrap:{token_id}"]
    # one request per joined node: kubeadm init's own node, control-plane, got its
    # kubelet.conf from init (it starts the API server, so it has nobody to ask)
    joined = kubectl(cluster, "get", "nodes", "-o", "name", "-l",
                     "!node-role.kubernetes.io/control-plane").stdout.split()
    assert joined and len(by_token) == len(joined)
    for request in by_token:
        assert request["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"
        assert [c["type"] for c in request["status"]["conditions"]] == ["Approved"]
        assert request["status"]["certificate"]
    bootstrap = yaml.safe_load(
        (home / "kubeconfigs" / "node-1-bootstrap.conf").read_text())
    assert bootstrap["users"][0]["user"] == {"token": token}
    earned = yaml.safe_load((home / "kubeconfigs" / "node-1.conf").read_text())
    assert earned["users"][0]["user"]["client-certificate"].endswith(
        "kubelet-client-current.pem")
    who = as_user(home, "node-1", "auth", "whoami", "-o",
                  "jsonpath={.status.userInfo.username}")
    assert who.stdout == "system:node:node-1", who.stderr


def test_each_kubelet_made_its_nodes_csi_node_with_its_own_identity(cluster: Path) -> None:
    """The Node authorizer and NodeRestriction let a kubelet create its own CSINode: each
    Node gets one, owned by it."""
    nodes = json.loads(kubectl(cluster, "get", "nodes", "-o", "json").stdout)["items"]
    uids = {node["metadata"]["name"]: node["metadata"]["uid"] for node in nodes}

    def csi_nodes() -> dict[str, list[Any]] | None:
        items = json.loads(kubectl(cluster, "get", "csinodes", "-o", "json").stdout)["items"]
        found = {item["metadata"]["name"]: item["metadata"].get("ownerReferences")
                 for item in items}
        return found if set(found) == set(uids) else None

    owners = until(csi_nodes, what="a CSINode for each node")
    assert owners == {name: [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}]
                      for name, uid in uids.items()}


def test_etcd_speaks_tls_to_its_own_cas_clients_only(cluster: Path, home: Path,
                                                     tmp_path: Path) -> None:
    """etcdctl with the environment `minikube-py etcdctl-env` prints, inside the
    control-plane node (etcd is its static pod, on its loopback), reads the stored JSON;
    etcd refuses a client without a certificate, and one whose certificate another CA
    signed (the cluster's own CA included: etcd has a CA of its own), at the TLS
    handshake, as its log says."""
    exports = launcher(home, "etcdctl-env").stdout.split()
    env = dict(item.split("=", 1) for item in exports if "=" in item)
    assert env["ETCDCTL_ENDPOINTS"].startswith("https://127.0.0.1:")

    def etcdctl(**overrides: str) -> subprocess.CompletedProcess[str]:
        chosen = {key: value for key, value in {**env, **overrides}.items() if value}
        return subprocess.run([sys.executable, "-m", "minikube_py.cluster", "ssh",
                               "control-plane", "--", "etcdctl", "get",
                               "/registry/namespaces/default", "--print-value-only",
                               "--command-timeout=5s"],
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, **chosen,
                                   "MINIKUBE_PY_HOME": str(home)})

    def etcd_log() -> str:
        return kubectl(cluster, "logs", "-n", "kube-system", "etcd-control-plane").stdout

    read = etcdctl()
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout)["metadata"]["name"] == "default"
    anonymous = etcdctl(ETCDCTL_CERT="", ETCDCTL_KEY="")
    assert anonymous.returncode != 0 and not anonymous.stdout
    stranger_ca = pki.new_ca()
    strangers = {
        "another CA": pki.issue(stranger_ca, "root", client=True),
        "the cluster's CA": pki.issue(pki.KeyPair.read(home / "pki", "ca"), "root",
                                      client=True),
    }
    for whose, pair in strangers.items():
        rejected_before = etcd_log().count("certificate signed by unknown authority")
        cert, key = pair.write(tmp_path, whose.replace(" ", "-").replace("'", ""))
        refused = etcdctl(ETCDCTL_CERT=str(cert), ETCDCTL_KEY=str(key))
        assert refused.returncode != 0 and not refused.stdout, (whose, refused)
        until(lambda before=rejected_before: etcd_log().count(
            "certificate signed by unknown authority") > before,
            what=f"etcd's log of the refused handshake ({whose})")


def test_a_deployment_runs_and_logs_and_exec_reach_the_kubelet(cluster: Path) -> None:
    kubectl(cluster, "create", "deployment", "web", "--image=nginx:1.14.2")
    kubectl(cluster, "rollout", "status", "deployment/web", "--timeout=90s")
    pod = kubectl(cluster, "get", "pods", "-l", "app=web", "-o",
                  "jsonpath={.items[0].metadata.name}").stdout
    assert kubectl(cluster, "exec", pod, "--", "echo", "through the kubelet"
                   ).stdout == "through the kubelet\n"
    kubectl(cluster, "logs", pod)
    # the kubelet answers only those RBAC lets in
    node_ip = kubectl(cluster, "get", "node", "node-1", "-o",
                      "jsonpath={.status.addresses[0].address}").stdout
    anonymous = subprocess.run(["curl", "-sk", f"https://{node_ip}:10250/pods"],
                               capture_output=True, text=True, timeout=30)
    assert anonymous.stdout == "Unauthorized"


def mkctl(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minikube_py.mkctl",
                           f"--kubeconfig={home / 'kubeconfig'}", *args],
                          capture_output=True, text=True, timeout=60)


def trace_spans(home: Path, resource: str, namespace: str, name: str) -> list[dict]:
    """Every span of the object's traces, from the trace receiver the cluster names in
    kube-public/minikube-py-tracing (what mkctl trace reads)."""
    receiver = kubectl(home, "get", "configmap", "-n", "kube-public", "minikube-py-tracing",
                       "-o", "jsonpath={.data.url}").stdout
    url = (f"{receiver}/api/v1/traces?resource={resource}&namespace={namespace}"
           f"&name={name}")
    with urllib.request.urlopen(url, timeout=10) as answer:
        return [span for trace in json.load(answer)["traces"] for span in trace["spans"]]


def test_one_trace_follows_a_deployment_through_every_component(cluster: Path) -> None:
    """kubectl create deployment -> the API server -> the deployment and replicaset
    controllers -> the scheduler -> the kubelet's CRI calls -> the pod's EndpointSlice ->
    the proxies' syncs that made it reachable behind its Service: one trace, found by the
    Deployment's name, holding the spans of each."""
    kubectl(cluster, "create", "service", "clusterip", "traced", "--tcp=80:80")
    kubectl(cluster, "create", "deployment", "traced", "--image=nginx:1.14.2")
    kubectl(cluster, "rollout", "status", "deployment/traced", "--timeout=90s")
    wanted = {("kube-apiserver", "create deployments"), ("kube-apiserver", "create pods"),
              ("kube-controller-manager", "deployment sync"),
              ("kube-controller-manager", "replicaset sync"),
              ("kube-scheduler", "schedule"), ("kube-scheduler", "bind"),
              ("kubelet", "SyncPod"), ("kubelet", "runtime.v1.RuntimeService/RunPodSandbox"),
              ("kubelet", "runtime.v1.RuntimeService/StartContainer"),
              ("kube-controller-manager", "endpointslice sync"),
              ("kube-proxy", "iptables sync")}
    deadline = time.monotonic() + 90  # components export about once a second
    while True:
        spans = trace_spans(cluster, "deployments", NAMESPACE, "traced")
        seen = {(span["service"], span["name"]) for span in spans}
        if wanted <= seen or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert wanted <= seen, sorted(wanted - seen)
    assert len({span["traceId"] for span in spans}) == 1
    schedule = next(span for span in spans if span["name"] == "schedule")
    assert schedule["attributes"]["node"].startswith("node-")
    assert any(event["name"] == "Filter" for event in schedule["events"])
    proxy_nodes = {span["attributes"]["node"] for span in spans
                   if span["name"] == "iptables sync"}
    nodes = set(kubectl(cluster, "get", "nodes", "-o", "name").stdout.replace(
        "node/", "").split())  # control-plane runs a kube-proxy too, as kubeadm's
    assert proxy_nodes <= nodes and proxy_nodes, (proxy_nodes, nodes)
    # mkctl trace shows the same trace as a timeline, from the receiver the cluster names
    shown = mkctl(cluster, "trace", "deployment/traced")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"TRACE {spans[0]['traceId']}  (deployments.apps/traced, ")
    assert lines[1].split() == ["TIME", "+MS", "DURATION", "COMPONENT", "SPAN"]
    assert f"create deployments {NAMESPACE}/traced" in lines[2]
    for component, span in wanted:
        assert any(component in line and span in line for line in lines), (component, span)
    assert any(line.strip().startswith("Filter node-") for line in lines)
    as_json = json.loads(mkctl(cluster, "trace", "deploy", "traced", "-o", "json").stdout)
    assert as_json["traces"][0]["traceId"] == spans[0]["traceId"]
    missing = mkctl(cluster, "trace", "deployment/never-made")
    assert missing.returncode == 0
    assert missing.stderr == ("No traces of deployments.apps/never-made found in secure "
                              "namespace.\n")
    unknown = mkctl(cluster, "trace", "widgets/x")
    assert unknown.returncode == 1
    assert unknown.stderr == 'error: the server doesn\'t have a resource type "widgets"\n'


def test_a_pods_service_account_token_works_from_inside_the_pod(cluster: Path) -> None:
    """What an in-cluster client does: the mounted token, checked against the mounted CA,
    to https://kubernetes.default.svc (cluster DNS, the proxy's rules, the API server's
    certificate); the account's RoleBinding decides what it may see."""
    kubectl(cluster, "create", "rolebinding", "default-view", "-n", "robots",
            "--clusterrole=view", "--serviceaccount=robots:default")
    script = (
        "import json, ssl, urllib.request\n"
        "d = '/var/run/secrets/kubernetes.io/serviceaccount'\n"
        "token, namespace = open(d + '/token').read(), open(d + '/namespace').read()\n"
        "context = ssl.create_default_context(cafile=d + '/ca.crt')\n"
        "request = urllib.request.Request(\n"
        "    f'https://kubernetes.default.svc/api/v1/namespaces/{namespace}/pods',\n"
        "    headers={'Authorization': 'Bearer ' + token})\n"
        "listed = json.load(urllib.request.urlopen(request, context=context))\n"
        "print(json.dumps([p['metadata']['name'] for p in listed['items']]))\n")
    kubectl(cluster, "run", "asker", "-n", "robots", "--image=python:3", "--restart=Never",
            "--", "python3", "-c", script)
    kubectl(cluster, "wait", "-n", "robots", "--for=jsonpath={.status.phase}=Succeeded",
            "pod/asker", "--timeout=120s")
    assert json.loads(kubectl(cluster, "logs", "-n", "robots", "asker").stdout) == ["asker"]
