"""The scheduler's VolumeBinding with the PersistentVolume controller and the local-path
provisioner, against a real API server: a WaitForFirstConsumer claim is provisioned on
the node the scheduler picks for its pod, and a later pod using the claim goes to that
node only; a pod whose Immediate claim is unbound waits with upstream's reason."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from minikube_py.client.rest import Client
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.volume.persistentvolume import PersistentVolumeController
from minikube_py.provisioner.localpath import PROVISIONER_NAME, LocalPathProvisioner
from tests import test_provisioner, test_scheduler
from tests.conftest import module_own_apiserver
from tests.test_persistentvolume_controller import claim, wait_phase
from tests.test_scheduler import Cluster, StartScheduler, make_pod

etcd, apiserver, kubeconfig = module_own_apiserver("volume-scheduling")
# the scheduler tests' nodes and scheduler, the provisioner tests' provisioner
cluster = test_scheduler.cluster
start_scheduler = test_scheduler.start_scheduler
provisioner = test_provisioner.provisioner
RunControllers = Callable[..., Awaitable[ControllerManager]]


def using(name: str, claim_name: str, cpu: str) -> dict:
    return make_pod(name, cpu=cpu, volumes=[
        {"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}])


async def test_a_delayed_claim_is_provisioned_where_its_pod_goes_and_keeps_later_pods_there(
        api_client: Client, cluster: Cluster, start_scheduler: StartScheduler,
        provisioner: LocalPathProvisioner, run_controllers: RunControllers) -> None:
    """The second pod asks for half a node's CPU: scoring alone would put it on the emptier
    node, so only the volume's node affinity keeps it with its data."""
    nodes = {await cluster.add_node("a"), await cluster.add_node("b")}
    class_name = f"wait-{uuid.uuid4().hex[:6]}"
    classes = api_client.resource("storageclasses", "storage.k8s.io")
    pvcs = api_client.resource("persistentvolumeclaims")
    await classes.create({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": class_name}, "provisioner": PROVISIONER_NAME,
                          "volumeBindingMode": "WaitForFirstConsumer"})
    try:
        await run_controllers(PersistentVolumeController)
        await start_scheduler()
        await pvcs.create(claim("data", class_name), cluster.namespace)
        await cluster.create_pod(using("first", "data", cpu="2"))

        node = await cluster.wait_bound("first", timeout=30)
        assert node in nodes
        bound = await wait_phase(pvcs, "data", "Bound", cluster.namespace)
        assert bound["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
        volume = await api_client.resource("persistentvolumes").get(
            bound["spec"]["volumeName"])
        assert volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0][
            "matchExpressions"][0]["values"] == [node]

        await cluster.create_pod(using("second", "data", cpu="2"))
        assert await cluster.wait_bound("second") == node
        await cluster.create_pod(using("third", "data", cpu="2"))  # node is full now
        failed = await cluster.wait_event("third", "FailedScheduling")
        assert failed["message"].startswith(
            "0/2 nodes are available: 1 Insufficient cpu, "
            "1 node(s) had volume node affinity conflict."), failed["message"]
    finally:
        await classes.delete(class_name)


async def test_a_pod_with_an_unbound_immediate_claim_waits(
        api_client: Client, cluster: Cluster, start_scheduler: StartScheduler) -> None:
    await cluster.add_node("a")
    await cluster.add_node("b")
    await start_scheduler()
    await api_client.resource("persistentvolumeclaims").create(
        claim("orphan", ""), cluster.namespace)
    await cluster.create_pod(using("waiting", "orphan", cpu="100m"))
    failed = await cluster.wait_event("waiting", "FailedScheduling")
    assert failed["message"].startswith(
        "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."), (
        failed["message"])
    assert await cluster.node_of("waiting") == ""
