"""The kube-system add-ons of `up`'s processes layout that run as pods: the local-path
provisioner and the gateway controller, the same Deployments as the kubeadm layout's
(kubeadm/addons.py), from the component images `up` builds and pushes to the cluster's
registry.

    build the component images (what changed), push theirs    build_and_push_component_images
    apply their ServiceAccounts, RBAC, kubeconfigs,           apply_addons (field manager kubeadm)
    Deployments

`up` does not wait for the Deployments to roll out, as `kind create cluster` does not wait
for its local-path-provisioner: nothing needs the pods before a claim, an Ingress or a
Gateway is made, and one made before they run waits for them (a claim stays Pending, the
PV controller's ExternalProvisioning event says it waits for the provisioner; an
Ingress's status stays empty).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path

from minikube_py.cluster.kubeadm.addons import (
    GATEWAY_CONTROLLER,
    Addons,
    gateway_controller_objects,
    local_path_provisioner_objects,
)
from minikube_py.cluster.kubeadm.init import apply_addons, nodes_folder
from minikube_py.images.components import build_and_push_component_images, component_image_cache

PROVISIONER = "local-path-provisioner"
DEPLOYMENTS = (PROVISIONER, GATEWAY_CONTROLLER)


async def deploy_kube_system_addons(state: Path, registry: str, addons: Addons,
                                    nodes: Sequence[str]) -> dict[str, str]:
    """Build the component images, push the provisioner's and the gateway controller's
    to `registry` (host:port) (the only ones this layout runs), apply their objects as
    the admin (`addons` but for the images), their pods to run on one of `nodes`; give
    their images."""
    images = await asyncio.to_thread(build_and_push_component_images,
                                     component_image_cache(), registry, DEPLOYMENTS)
    addons = dataclasses.replace(addons, images=images)
    await apply_addons(state / "kubeconfig", [
        *local_path_provisioner_objects(addons, nodes_folder(state), nodes),
        *gateway_controller_objects(addons, nodes)])
    return images
