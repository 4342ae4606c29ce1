"""The node's CSINode object (upstream pkg/volume/csi/nodeinfomanager).

At start, once its Node exists, the kubelet makes sure a CSINode of the same name does
too (InitializeCSINodeWithAnnotation): owned by the Node, so that it goes when the Node
goes, with an empty list of drivers. A CSI driver's registration would add itself to that
list; minikube-py runs no CSI driver, so the list stays empty. An existing CSINode is left
as it is.
"""

from __future__ import annotations

import contextlib
import logging

from minikube_py.api import Obj
from minikube_py.client.errors import AlreadyExists, NotFound
from minikube_py.client.rest import Client

log = logging.getLogger(__name__)

STORAGE_GROUP = "storage.k8s.io"


def initial_csi_node(node: Obj) -> Obj:
    """The CSINode of a Node: its name, owned by it, no drivers yet."""
    metadata = node["metadata"]
    return {
        "apiVersion": f"{STORAGE_GROUP}/v1", "kind": "CSINode",
        "metadata": {
            "name": metadata["name"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node",
                                 "name": metadata["name"], "uid": metadata["uid"]}],
        },
        "spec": {"drivers": []},
    }


async def initialize_csi_node(client: Client, node_name: str) -> None:
    """InitializeCSINodeWithAnnotation: create the node's CSINode unless it exists.

    Raises the client's error when the Node is not there yet or a call fails: the caller
    tries again later."""
    csi_nodes = client.resource("csinodes", STORAGE_GROUP)
    with contextlib.suppress(NotFound):
        await csi_nodes.get(node_name)
        return
    node = await client.resource("nodes").get(node_name)
    with contextlib.suppress(AlreadyExists):
        await csi_nodes.create(initial_csi_node(node))
        log.info("created CSINode %s", node_name)
