"""The operator lab (labs/operator/): its kopf operator, run as `kopf run` runs it, against
a real API server with the Deployment, ReplicaSet and garbage collector controllers and a
fake kubelet: a Website gets its owned Deployment and Service and a status that follows
them, a new replica count reaches the Deployment, and a deleted Website waits on kopf's
finalizer until the operator has deleted its children."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.controllers.deployment.controller import DeploymentController
from minikube_py.controllers.garbagecollector import GarbageCollector
from minikube_py.controllers.replicaset import ReplicaSetController
from tests.api_helpers import eventually
from tests.fake_kubelet import FakeKubelet
from tests.test_labs import Lab, RunControllers

LAB = Path(__file__).resolve().parents[1] / "labs" / "operator"
FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@asynccontextmanager
async def run_operator(kubeconfig: Path, namespace: str) -> AsyncIterator[Lab]:
    """`kopf run` on the lab's operator.py, killed at the end if a test did not stop it."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kopf", "run", "--standalone", f"--namespace={namespace}",
        str(LAB / "operator.py"), env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    lab = Lab(process)
    try:
        yield lab
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def website_status(api_client: Client, namespace: str, **wanted: object) -> Obj:
    """Wait until the Website's status has the wanted fields; return the Website."""
    path = f"/apis/labs.minikube-py.io/v1/namespaces/{namespace}/websites/blog"

    async def has() -> Obj | None:
        website = await api_client.request("GET", path)
        status = website.get("status") or {}
        return website if all(status.get(k) == v for k, v in wanted.items()) else None
    return await eventually(has, 60, what=f"the Website's status to have {wanted}")


async def gone(get: Callable[[], Awaitable[object]], what: str) -> None:
    """Wait until reading the object answers NotFound."""
    async def is_gone() -> bool:
        try:
            await get()
        except NotFound:
            return True
        return False
    await eventually(is_gone, 60, what=what)


async def test_operator_makes_owned_children_follows_them_and_cleans_up_through_its_finalizer(
        api_client: Client, kubeconfig: Path, namespace: str, kubectl: Kubectl,
        run_controllers: RunControllers) -> None:
    kubectl("apply", "-f", str(LAB / "crd.yaml"))
    kubectl("wait", "--for=condition=Established", "crd/websites.labs.minikube-py.io",
            "--timeout=60s")
    await run_controllers(ReplicaSetController, DeploymentController, GarbageCollector)
    deployments, services = api_client.resource("deployments"), api_client.resource("services")
    path = f"/apis/labs.minikube-py.io/v1/namespaces/{namespace}/websites"
    async with FakeKubelet(api_client, namespace), run_operator(kubeconfig, namespace) as lab:
        created = await api_client.request("POST", path, body={
            "apiVersion": "labs.minikube-py.io/v1", "kind": "Website",
            "metadata": {"name": "blog"},
            "spec": {"image": "localhost/echo:1.0", "replicas": 2}})
        website = await website_status(api_client, namespace, phase="Ready", readyReplicas=2,
                                       replicas=2, deployment="blog", service="blog")
        owner = {"apiVersion": "labs.minikube-py.io/v1", "kind": "Website", "name": "blog",
                 "uid": created["metadata"]["uid"], "controller": True,
                 "blockOwnerDeletion": True}
        for child in (await deployments.get("blog", namespace),
                      await services.get("blog", namespace)):
            assert child["metadata"]["ownerReferences"] == [owner]
        assert website["metadata"]["finalizers"] == [FINALIZER]

        await api_client.request("PATCH", f"{path}/blog", body={"spec": {"replicas": 3}},
                                 content_type="application/merge-patch+json")
        await website_status(api_client, namespace, phase="Ready", readyReplicas=3, replicas=3)
        assert (await deployments.get("blog", namespace))["spec"]["replicas"] == 3

        await api_client.request("DELETE", f"{path}/blog")
        await gone(lambda: api_client.request("GET", f"{path}/blog"),
                   "the Website to be deleted once kopf removed its finalizer")
        await gone(lambda: services.get("blog", namespace), "the operator to delete the Service")
        await gone(lambda: deployments.get("blog", namespace),
                   "the Deployment to be deleted")
        assert await lab.stop() == 0

    printed = "\n".join(lab.lines)
    for line in (f"Created Deployment {namespace}/blog and Service {namespace}/blog",
                 f"Scaled Deployment {namespace}/blog to 3",
                 f"Deleted the children of Website {namespace}/blog",
                 "Creation is processed: 1 succeeded; 0 failed.",
                 "Deletion is processed: 1 succeeded; 0 failed."):
        assert line in printed
