"""The local-path provisioner of `up`'s processes layout: the same Deployment in
kube-system as the kubeadm layout's add-on (kubeadm/addons.py), from the component image
`up` builds and pushes to the cluster's registry.

    build the component images (what changed), push its one   build_and_push_component_images
    apply the ServiceAccount, RBAC, kubeconfig, Deployment    apply_addons (field manager kubeadm)

`up` does not wait for the Deployment to roll out, as `kind create cluster` does not wait
for its local-path-provisioner: nothing needs the pod before a claim is made, and a claim
made before it runs stays Pending until it does (the PV controller's ExternalProvisioning
event says it waits for the provisioner).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path

from minikube_py.cluster.kubeadm.addons import Addons, local_path_provisioner_objects
from minikube_py.cluster.kubeadm.init import apply_addons, nodes_folder
from minikube_py.images.components import build_and_push_component_images, component_image_cache

DEPLOYMENT = "local-path-provisioner"


async def deploy_local_path_provisioner(state: Path, registry: str, addons: Addons,
                                        nodes: Sequence[str]) -> str:
    """Build the component images, push the provisioner's to `registry` (host:port)
    (the only one this layout runs), apply the provisioner's objects as the admin
    (`addons` but for the images), its pod to run on one of `nodes`; give its image."""
    images = await asyncio.to_thread(build_and_push_component_images,
                                     component_image_cache(), registry, (DEPLOYMENT,))
    await apply_addons(state / "kubeconfig", local_path_provisioner_objects(
        dataclasses.replace(addons, images=images), nodes_folder(state), nodes))
    return images[DEPLOYMENT]
