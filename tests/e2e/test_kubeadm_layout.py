"""`minikube-py up --layout kubeadm`: the cluster as kubeadm lays it out.

A control-plane node whose kubelet runs etcd, the API server, the controller-manager and
the scheduler as static pods (their mirror pods in kube-system), kube-proxy as a
DaemonSet on every node and DNS as the coredns Deployment behind kube-dns, all from the
component images in the cluster's registry. What a student reads in any tutorial works:
`kubectl get pods -n kube-system`, `kubectl logs` of the scheduler, a deleted kube-proxy
pod comes back, a pod on a worker resolves a Service's name and reaches it.

The cluster is the lane's shared one (tests/e2e/conftest.py: `up --layout kubeadm --nodes
2`); this module's objects are in namespace kubeadm-layout, and what it makes in
kube-system (the etcd backup's CronJob and Job, the dashboard add-on) it removes.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from minikube_py.cluster.addons import PROXY_PATH
from minikube_py.cluster.etcd_snapshot import snapshot_status
from tests.api_helpers import manifest_yaml
from tests.e2e.conftest import LaneCluster
from tests.e2e.helpers import until
from tests.test_cluster_cli import kubectl

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
ETCD_BACKUP = Path(__file__).resolve().parents[2] / "examples" / "etcd-backup" / "cronjob.yaml"
STATIC_PODS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
NAMESPACE = "kubeadm-layout"
CLIENT = """
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  nodeName: node-1
  containers:
  - name: shell
    image: localhost/busybox:1.36
    command: ["sleep", "3600"]
"""
CLAIMED = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 16Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: claimed}
spec:
  containers:
  - name: shell
    image: localhost/busybox:1.36
    command: ["sh", "-c", "echo kept > /data/row && sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
"""


def launcher(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`minikube-py ...` for this home; a first `up` builds the component images, so the
    bound is wide (it only ends a run that hangs)."""
    return subprocess.run(
        [sys.executable, "-m", "minikube_py.cluster", *args], capture_output=True, text=True,
        timeout=900, check=check, env={**os.environ, "MINIKUBE_PY_HOME": str(home)})


def kube_system(home: Path) -> list[dict]:
    return json.loads(kubectl(home, "get", "pods", "-n", "kube-system", "-o", "json").stdout
                      )["items"]


@pytest.fixture(scope="module")
def kubeadm_home(lane_cluster: LaneCluster) -> Iterator[Path]:
    """The lane's kubeadm-layout cluster seen from NAMESPACE: a directory whose kubeconfig
    works there (the cluster's own files, for `addons` and its pki: lane_cluster.home)."""
    with lane_cluster.namespaces(__name__, NAMESPACE) as home:
        yield home


def node_names(home: Path) -> list[str]:
    return sorted(kubectl(home, "get", "nodes", "-o", "name").stdout.replace("node/", ""
                                                                              ).split())


def test_kube_system_lists_the_static_pods_kube_proxy_and_dns_all_running(
        kubeadm_home: Path) -> None:
    pods = kube_system(kubeadm_home)
    by_name = {pod["metadata"]["name"]: pod for pod in pods}
    for component in STATIC_PODS:
        mirror = by_name[f"{component}-control-plane"]
        assert mirror["spec"]["nodeName"] == "control-plane"
        assert "kubernetes.io/config.mirror" in mirror["metadata"]["annotations"]
        image = mirror["spec"]["containers"][0]["image"]
        assert image.startswith(f"localhost/minikube-py/{component}:"), image
    proxies = [pod for pod in pods if pod["metadata"]["labels"].get("k8s-app") == "kube-proxy"]
    # one on every node: control-plane, node-1 and node-2 on the lane's cluster
    assert sorted(pod["spec"]["nodeName"] for pod in proxies) == node_names(kubeadm_home)
    dns = [pod for pod in pods if pod["metadata"]["labels"].get("k8s-app") == "kube-dns"]
    assert len(dns) == 2
    assert all(pod["status"]["phase"] == "Running" for pod in pods), [
        (pod["metadata"]["name"], pod["status"].get("phase")) for pod in pods]


def test_the_control_plane_node_has_its_role_and_taint(kubeadm_home: Path) -> None:
    node = json.loads(kubectl(kubeadm_home, "get", "node", "control-plane", "-o",
                              "json").stdout)
    assert "node-role.kubernetes.io/control-plane" in node["metadata"]["labels"]
    assert {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"} in [
        {k: taint[k] for k in ("key", "effect")} for taint in node["spec"]["taints"]]
    roles = kubectl(kubeadm_home, "get", "nodes").stdout
    assert any(line.split()[:3] == ["control-plane", "Ready", "control-plane"]
               for line in roles.splitlines()), roles


def test_a_claim_of_the_default_class_is_provisioned_on_its_pods_node(
        kubeadm_home: Path) -> None:
    """The class `standard` and its provisioner (the local-path-provisioner Deployment's
    pod in kube-system), with the static pods' scheduler binding the claim on the worker;
    deleting the claim deletes the volume and its folder on the node."""
    classes = kubectl(kubeadm_home, "get", "sc", "--no-headers").stdout.split()
    assert classes[:3] == ["standard", "(default)", "minikube-py.io/local-path"]
    subprocess.run([KUBECTL, f"--kubeconfig={kubeadm_home / 'kubeconfig'}", "apply", "-f",
                    "-"], input=CLAIMED, capture_output=True, text=True, timeout=60,
                   check=True)
    kubectl(kubeadm_home, "wait", "--for=condition=Ready", "pod/claimed", "--timeout=180s")
    claim = json.loads(kubectl(kubeadm_home, "get", "pvc", "data", "-o", "json").stdout)
    assert claim["status"]["phase"] == "Bound"
    # the worker the scheduler chose for the pod (of two; the control plane is tainted)
    node = kubectl(kubeadm_home, "get", "pod", "claimed", "-o", "jsonpath={.spec.nodeName}"
                   ).stdout
    assert node in ("node-1", "node-2"), node
    assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
    [provisioner] = [pod for pod in kube_system(kubeadm_home)
                     if pod["metadata"]["labels"].get("app") == "local-path-provisioner"]
    assert provisioner["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    log = kubectl(kubeadm_home, "logs", "-n", "kube-system",
                  provisioner["metadata"]["name"]).stdout
    assert f"for claim {NAMESPACE}/data on node {node}" in log, log[-2000:]
    volume = claim["spec"]["volumeName"]
    folder = Path(json.loads(kubectl(kubeadm_home, "get", "pv", volume, "-o", "json").stdout
                             )["spec"]["hostPath"]["path"])
    assert folder.is_dir() and folder.parent.parent.name == node
    kubectl(kubeadm_home, "delete", "pod", "claimed", "--wait=true")
    kubectl(kubeadm_home, "delete", "pvc", "data", "--wait=true")
    until(lambda: not folder.exists() and kubectl(
        kubeadm_home, "get", "pv", "--no-headers").stdout.find(volume) < 0,
        f"{volume} and its folder to be deleted")


def test_kubectl_logs_of_the_scheduler_shows_its_decisions(kubeadm_home: Path) -> None:
    logs = kubectl(kubeadm_home, "logs", "-n", "kube-system",
                   "kube-scheduler-control-plane").stdout
    assert "Successfully bound pod to node" in logs and "coredns-" in logs, logs[-2000:]


def test_a_deleted_kube_proxy_pod_comes_back(kubeadm_home: Path) -> None:
    def proxy_on_node_1() -> list[dict]:
        return [pod for pod in kube_system(kubeadm_home)
                if pod["metadata"]["labels"].get("k8s-app") == "kube-proxy"
                and pod["spec"].get("nodeName") == "node-1"]  # none yet: a new one
    old = proxy_on_node_1()[0]["metadata"]["name"]
    kubectl(kubeadm_home, "delete", "pod", "-n", "kube-system", old, "--wait=false")
    until(lambda: any(pod["metadata"]["name"] != old
                           and pod["status"].get("phase") == "Running"
                           for pod in proxy_on_node_1()), "a new kube-proxy pod on node-1")


def test_a_pod_on_a_worker_resolves_and_reaches_a_service(kubeadm_home: Path) -> None:
    kubectl(kubeadm_home, "create", "deployment", "web", "--image=nginx", "--port=80")
    kubectl(kubeadm_home, "expose", "deployment", "web", "--port=80")
    subprocess.run([KUBECTL, f"--kubeconfig={kubeadm_home / 'kubeconfig'}", "apply", "-f",
                    "-"], input=CLIENT, capture_output=True, text=True, check=True, timeout=60)
    kubectl(kubeadm_home, "rollout", "status", "deployment/web", "--timeout=180s")
    kubectl(kubeadm_home, "wait", "--for=condition=Ready", "pod/client", "--timeout=180s")
    answer: list[str] = []

    def fetched() -> bool:
        # each try bounded: until the worker's proxy has the Services' rules, a lookup or
        # a connection can wait unanswered (busybox's wget waits 900 s by default)
        try:
            run = subprocess.run(
                [KUBECTL, f"--kubeconfig={kubeadm_home / 'kubeconfig'}", "exec", "client", "--",
                 "wget", "-q", "-T", "5", "-O", "-",
                 f"http://web.{NAMESPACE}.svc.cluster.local/"],
                capture_output=True, text=True, timeout=45)
        except subprocess.TimeoutExpired:
            answer[:] = ["no answer within 45 s"]
            return False
        answer[:] = [run.stdout + run.stderr]
        return run.returncode == 0
    until(fetched, lambda: f"the Service by its name from a pod: {answer}", 180)
    assert "nginx" in answer[0], answer[0]


def test_seed_001s_etcd_backup_cronjob_snapshots_the_static_pods_etcd(
        kubeadm_home: Path, lane_cluster: LaneCluster, fast_tmp: Path) -> None:
    """examples/etcd-backup/cronjob.yaml on this cluster, as a student runs it (`kubectl
    create job --from=cronjob/etcd-backup`): its pod lands on the control-plane node, on
    its network, and snapshots the static pod's etcd at 127.0.0.1:2379 with kubeadm's
    certificate paths. Only what names this cluster is set: the image's tag (the etcd
    pod's own), the home the pki folder is in, and etcd's client port (2379, kubeadm's,
    on the default node network; a free one on another, see tests/conftest.py). The
    CronJob and its Job are in kube-system, as the example has them: deleted at the end,
    the cluster being shared."""
    backups = fast_tmp / "etcd-backups"
    backups.mkdir(exist_ok=True)
    cronjob = yaml.safe_load(ETCD_BACKUP.read_text())
    etcd_pod = next(pod for pod in kube_system(kubeadm_home)
                    if pod["metadata"]["name"] == "etcd-control-plane")
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    pod["containers"][0]["image"] = etcd_pod["spec"]["containers"][0]["image"]
    port = json.loads((lane_cluster.home / "cluster.json").read_text()
                      )["ports"]["etcd-client"]
    script = pod["containers"][0]["command"][-1]
    assert "https://127.0.0.1:2379" in script
    pod["containers"][0]["command"][-1] = script.replace("127.0.0.1:2379", f"127.0.0.1:{port}")
    volumes = {volume["name"]: volume["hostPath"] for volume in pod["volumes"]}
    volumes["etcd-certs"]["path"] = str(lane_cluster.home / "pki" / "etcd")
    volumes["backup-storage"]["path"] = str(backups)
    try:
        subprocess.run([KUBECTL, f"--kubeconfig={kubeadm_home / 'kubeconfig'}", "apply", "-f",
                        "-"], input=manifest_yaml(cronjob), capture_output=True, text=True,
                       check=True, timeout=60)
        kubectl(kubeadm_home, "create", "job", "etcd-backup-now",
                "--from=cronjob/etcd-backup", "-n", "kube-system")
        kubectl(kubeadm_home, "wait", "--for=condition=Complete", "job/etcd-backup-now", "-n",
                "kube-system", "--timeout=180s")
        log = kubectl(kubeadm_home, "logs", "-n", "kube-system", "job/etcd-backup-now").stdout
    finally:
        kubectl(kubeadm_home, "delete", "-n", "kube-system", "cronjob/etcd-backup",
                "job/etcd-backup-now", "--cascade=foreground", "--ignore-not-found")
    (archive,) = backups.glob("etcd-snapshot-*.db.gz")
    assert f"Backup completed: {archive.name}" in log, log
    snapshot = fast_tmp / "etcd-backup.db"
    snapshot.write_bytes(gzip.decompress(archive.read_bytes()))
    assert snapshot_status(snapshot).total_keys > 100  # a cluster's worth of objects


def test_the_dashboard_add_on_answers_through_the_static_pod_api_server(
        kubeadm_home: Path, lane_cluster: LaneCluster) -> None:
    """The dashboard's Deployment in kubernetes-dashboard; the API server, a static pod on
    the control-plane node, reaches its pod with the front-proxy certificate its manifest
    names (the dashboard lets in no one else). `addons enable` does not wait for the pod:
    the page comes once it serves."""
    enabled = launcher(lane_cluster.home, "addons", "enable", "dashboard")
    assert enabled.stdout.splitlines()[-1] == "dashboard: enabled", enabled.stdout
    try:
        kubectl(kubeadm_home, "rollout", "status", "deployment/kubernetes-dashboard", "-n",
                "kubernetes-dashboard", "--timeout=180s")
        deadline = time.monotonic() + 30  # and the Service's slice names the ready pod
        while (page := kubectl(kubeadm_home, "get", "--raw", PROXY_PATH, check=False)
               ).returncode != 0 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert "<title>minikube-py dashboard</title>" in page.stdout, page.stdout[:500]
    finally:
        launcher(lane_cluster.home, "addons", "disable", "dashboard")
