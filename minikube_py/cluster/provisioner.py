"""The local-path provisioner of `up`'s processes layout: the same Deployment in
kube-system as the kubeadm layout's add-on (kubeadm/addons.py), from the component image
`up` builds and pushes to the cluster's registry.

    build the component images (what changed), push them      build_and_push_component_images
    apply the ServiceAccount, RBAC, kubeconfig, Deployment    apply_addons (field manager kubeadm)
    wait until the Deployment's new pod is available          wait_for_deployment
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.client.errors import ClientError
from minikube_py.client.rest import Client
from minikube_py.cluster.kubeadm.addons import (
    NAMESPACE,
    Addons,
    local_path_provisioner_objects,
)
from minikube_py.cluster.kubeadm.init import apply_addons, nodes_folder
from minikube_py.images.components import build_and_push_component_images, component_image_cache

DEPLOYMENT = "local-path-provisioner"
TIMEOUT = 600.0
"""How long `up` waits for the provisioner: a first `up` builds the component images
(a minute or more on a loaded machine), a later one only checks them."""


def rolled_out(deployment: Obj) -> bool:
    """`kubectl rollout status`'s test: the controller saw this generation, and every
    replica is updated and available."""
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    wanted = spec.get("replicas", 1)
    return (status.get("observedGeneration", 0) >= deployment["metadata"].get("generation", 1)
            and status.get("updatedReplicas", 0) == wanted
            and status.get("replicas", 0) == wanted
            and status.get("availableReplicas", 0) == wanted)


async def wait_for_deployment(admin: Path, name: str, deadline: float) -> None:
    """Until the kube-system Deployment `name` has rolled out."""
    async with Client.from_kubeconfig(admin, user_agent="minikube-py-up") as client:
        last = "not created yet"
        while time.monotonic() < deadline:
            try:
                deployment = await client.resource("deployments", "apps").get(name, NAMESPACE)
            except ClientError as error:
                last = str(error)
            else:
                if rolled_out(deployment):
                    return
                last = f"status {deployment.get('status') or {}}"
            await asyncio.sleep(0.5)
    raise TimeoutError(f"the {name} Deployment in {NAMESPACE} did not roll out: {last}")


async def deploy_local_path_provisioner(state: Path, registry: str, addons: Addons) -> str:
    """Build and push the component images to `registry` (host:port), apply the
    provisioner's objects as the admin (`addons` but for the images), wait for its pod;
    give its image."""
    deadline = time.monotonic() + TIMEOUT
    images = await asyncio.to_thread(build_and_push_component_images,
                                     component_image_cache(), registry)
    admin = state / "kubeconfig"
    await apply_addons(admin, local_path_provisioner_objects(
        dataclasses.replace(addons, images=images), nodes_folder(state)))
    await wait_for_deployment(admin, DEPLOYMENT, deadline)
    return images[DEPLOYMENT]
