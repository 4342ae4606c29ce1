"""Storage as a StatefulSet tutorial uses it, with the real kubectl on a real 2-node
cluster: the default StorageClass `standard`, the local-path provisioner, the scheduler's
VolumeBinding, the PersistentVolume controller and the kubelet mounting the bound volume.

The tests run in order on the lane's shared cluster (tests/e2e/conftest.py), in namespace
storage: the StatefulSet of the first is the one the next ones delete a pod of, scale down
and free a claim of."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import LaneCluster
from tests.e2e.helpers import KUBECTL, apply, get, until
from tests.test_cluster_cli import kubectl

pytestmark = pytest.mark.slow

NAMESPACE = "storage"

STATEFUL_SET = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: busybox:1.36
        command: [sleep, "3600"]
        volumeMounts: [{name: www, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: www}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 64Mi}}
"""
LOST_CLAIM = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: lost}
spec:
  storageClassName: nope
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Mi}}
"""


@pytest.fixture(scope="module")
def cluster(lane_cluster: LaneCluster) -> Iterator[Path]:
    """The lane's cluster seen from NAMESPACE (a directory whose kubeconfig works there),
    the StatefulSet rolled out; the cluster's own files are in lane_cluster.home."""
    with lane_cluster.namespaces(__name__, NAMESPACE) as home:
        apply(home, STATEFUL_SET)
        kubectl(home, "rollout", "status", "statefulset/web", "--timeout=180s")
        yield home


def absent(home: Path, *what: str) -> bool:
    done = subprocess.run([KUBECTL, f"--kubeconfig={home / 'kubeconfig'}", "get", *what],
                          capture_output=True, text=True, timeout=60)
    return done.returncode != 0 and "NotFound" in done.stderr


def test_a_stateful_set_gets_bound_claims_on_its_pods_nodes(
        cluster: Path, lane_cluster: LaneCluster) -> None:
    for ordinal in (0, 1):
        claim = get(cluster, "pvc", f"www-web-{ordinal}")
        assert claim["status"]["phase"] == "Bound"
        assert claim["spec"]["storageClassName"] == "standard"
        node = get(cluster, "pod", f"web-{ordinal}")["spec"]["nodeName"]
        assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
        volume = get(cluster, "pv", claim["spec"]["volumeName"])
        assert volume["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == (
            "minikube-py.io/local-path")
        folder = Path(volume["spec"]["hostPath"]["path"])
        assert folder == (lane_cluster.home / "nodes" / node / "local-path-provisioner" /
                          f"{volume['metadata']['name']}_{NAMESPACE}_www-web-{ordinal}")
        assert folder.is_dir()


def test_the_provisioner_is_a_deployments_pod_in_kube_system(
        cluster: Path, lane_cluster: LaneCluster) -> None:
    """kind's local-path-provisioner: a Deployment's pod, running as its ServiceAccount,
    and the one that provisioned the StatefulSet's volumes (its log says so); no host
    process of that name."""
    deployment = get(cluster, "deployment", "local-path-provisioner", "-n", "kube-system")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == (
        "local-path-provisioner-service-account")
    [pod] = get(cluster, "pods", "-n", "kube-system", "-l", "app=local-path-provisioner"
                )["items"]
    assert pod["status"]["phase"] == "Running"
    [owner] = pod["metadata"]["ownerReferences"]
    replica_set = get(cluster, "replicaset", owner["name"], "-n", "kube-system")
    assert [ref["name"] for ref in replica_set["metadata"]["ownerReferences"]] == [
        "local-path-provisioner"]
    log = kubectl(cluster, "logs", "-n", "kube-system", pod["metadata"]["name"]).stdout
    for ordinal in (0, 1):
        assert f"for claim {NAMESPACE}/www-web-{ordinal} on node" in log, log[-2000:]
    assert not (lane_cluster.home / "run" / "provisioner.pid").exists()


def test_data_written_by_pod_0_survives_its_deletion_on_the_same_node(cluster: Path) -> None:
    kubectl(cluster, "exec", "web-0", "--", "sh", "-c", "echo kept > /data/row")
    before = get(cluster, "pod", "web-0")
    kubectl(cluster, "delete", "pod", "web-0", "--wait=true")

    def recreated() -> bool:
        pod = get(cluster, "pod", "web-0") if not absent(cluster, "pod", "web-0") else None
        return pod is not None and pod["metadata"]["uid"] != before["metadata"]["uid"]
    until(recreated, "web-0 to be made again")
    kubectl(cluster, "wait", "--for=condition=Ready", "pod/web-0", "--timeout=120s")
    after = get(cluster, "pod", "web-0")
    assert after["spec"]["nodeName"] == before["spec"]["nodeName"]
    assert kubectl(cluster, "exec", "web-0", "--", "cat", "/data/row").stdout == "kept\n"


def test_scaling_down_keeps_the_claims_and_deleting_one_frees_its_volume(
        cluster: Path) -> None:
    volume_name = get(cluster, "pvc", "www-web-1")["spec"]["volumeName"]
    folder = Path(get(cluster, "pv", volume_name)["spec"]["hostPath"]["path"])
    kubectl(cluster, "scale", "statefulset/web", "--replicas=1")
    until(lambda: absent(cluster, "pod", "web-1"), "web-1 to go")
    assert get(cluster, "pvc", "www-web-1")["status"]["phase"] == "Bound"
    assert folder.is_dir()

    kubectl(cluster, "delete", "pvc", "www-web-1")
    until(lambda: absent(cluster, "pv", volume_name), f"{volume_name} to be deleted")
    assert not folder.exists()


def test_a_claim_of_an_unknown_class_stays_pending_with_upstreams_event(
        cluster: Path) -> None:
    apply(cluster, LOST_CLAIM)

    def event() -> str:
        events = get(cluster, "events", "--field-selector",
                     "involvedObject.name=lost,reason=ProvisioningFailed")["items"]
        return str(events[0]["message"]) if events else ""
    assert until(event, "a ProvisioningFailed event") == (
        'storageclass.storage.k8s.io "nope" not found')
    assert get(cluster, "pvc", "lost")["status"]["phase"] == "Pending"


def test_kubectl_get_pv_pvc_sc_prints_upstreams_columns(cluster: Path) -> None:
    classes = kubectl(cluster, "get", "sc").stdout.splitlines()
    assert classes[0].split() == ["NAME", "PROVISIONER", "RECLAIMPOLICY",
                                  "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"]
    assert classes[1].split()[:6] == ["standard", "(default)", "minikube-py.io/local-path",
                                      "Delete", "WaitForFirstConsumer", "true"]
    claim = get(cluster, "pvc", "www-web-0")
    volume_name = claim["spec"]["volumeName"]
    claims = kubectl(cluster, "get", "pvc", "www-web-0").stdout.splitlines()
    assert claims[0].split() == ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES",
                                 "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"]
    assert claims[1].split()[:7] == ["www-web-0", "Bound", volume_name, "64Mi", "RWO",
                                     "standard", "<unset>"]
    volumes = kubectl(cluster, "get", "pv", volume_name).stdout.splitlines()
    assert volumes[0].split() == ["NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY",
                                  "STATUS", "CLAIM", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS",
                                  "REASON", "AGE"]
    assert volumes[1].split()[:8] == [volume_name, "64Mi", "RWO", "Delete", "Bound",
                                      f"{NAMESPACE}/www-web-0", "standard", "<unset>"]


def test_a_claim_grows_and_the_kubelet_finishes_it_when_its_pod_starts(cluster: Path) -> None:
    volume_name = get(cluster, "pvc", "www-web-0")["spec"]["volumeName"]
    kubectl(cluster, "patch", "pvc", "www-web-0", "-p",
            '{"spec":{"resources":{"requests":{"storage":"128Mi"}}}}')
    until(lambda: get(cluster, "pv", volume_name)["spec"]["capacity"]["storage"] == "128Mi",
          "the resizer to grow the volume")
    kubectl(cluster, "delete", "pod", "web-0", "--wait=true")

    def grown() -> Any:
        status = get(cluster, "pvc", "www-web-0")["status"]
        return status if status["capacity"]["storage"] == "128Mi" else None
    status = until(grown, "the kubelet to finish the resize")
    assert status.get("conditions") is None
    assert status.get("allocatedResourceStatuses") is None
    assert status["allocatedResources"] == {"storage": "128Mi"}
    reasons = {event["reason"] for event in get(
        cluster, "events", "--field-selector", "involvedObject.name=www-web-0")["items"]}
    assert {"ExternalExpanding", "Resizing", "FileSystemResizeRequired",
            "FileSystemResizeSuccessful"} <= reasons
    assert kubectl(cluster, "get", "pvc", "www-web-0").stdout.splitlines()[1].split()[3] == (
        "128Mi")


EMPTY_DIRS = """
apiVersion: v1
kind: Pod
metadata: {name: scratch}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, "sleep 2; dd if=/dev/zero of=/cache/blob bs=1M count=3; sleep 3600"]
    volumeMounts: [{name: cache, mountPath: /cache}, {name: ram, mountPath: /ram}]
  volumes:
  - {name: cache, emptyDir: {sizeLimit: 1Mi}}
  - {name: ram, emptyDir: {medium: Memory, sizeLimit: 4Mi}}
"""


def test_an_empty_dir_in_memory_is_a_tmpfs_and_one_over_its_limit_evicts_its_pod(
        cluster: Path) -> None:
    apply(cluster, EMPTY_DIRS)
    kubectl(cluster, "wait", "--for=condition=Ready", "pod/scratch", "--timeout=120s")
    mounts = kubectl(cluster, "exec", "scratch", "--", "grep", " /ram ", "/proc/mounts").stdout
    assert mounts.split()[2] == "tmpfs" and "size=4096k" in mounts.split()[3]

    def failed() -> Any:
        status = get(cluster, "pod", "scratch")["status"]
        return status if status.get("phase") == "Failed" else None
    status = until(failed, "the eviction manager to evict the pod", timeout=180)
    assert status["reason"] == "Evicted"
    assert status["message"] == 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". '
    kubectl(cluster, "delete", "pod", "scratch", "--wait=false")


HOARDER = """
apiVersion: v1
kind: Pod
metadata: {name: hoarder}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, "sleep 2; dd if=/dev/zero of=/tmp/blob bs=1M count=20; sleep 3600"]
    resources: {limits: {ephemeral-storage: 10Mi}}
  - name: idle
    image: busybox:1.36
    command: [sleep, "3600"]
    resources: {limits: {ephemeral-storage: 100Mi}}
"""


def test_a_container_over_its_ephemeral_storage_limit_evicts_its_pod(cluster: Path) -> None:
    apply(cluster, HOARDER)

    def failed() -> Any:
        status = get(cluster, "pod", "hoarder")["status"]
        return status if status.get("phase") == "Failed" else None
    status = until(failed, "the eviction manager to evict the pod", timeout=180)
    message = 'Container app exceeded its local ephemeral storage limit "10Mi". '
    assert (status["reason"], status["message"]) == ("Evicted", message)
    events = until(lambda: kubectl(
        cluster, "get", "events", "--field-selector",
        "involvedObject.name=hoarder,reason=Evicted", "-o", "jsonpath={.items[*].message}"
    ).stdout, "the Evicted event")
    assert events == message
    kubectl(cluster, "delete", "pod", "hoarder", "--wait=false")
