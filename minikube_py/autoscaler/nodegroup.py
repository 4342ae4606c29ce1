"""The node group the cluster autoscaler grows and shrinks (upstream's
cloudprovider.NodeGroup), and its first kind: hollow nodes (upstream's kubemark cloud
provider, cloudprovider/kubemark), run in this process. The other kind, network-namespace
nodes of a `minikube-py up` cluster, is netns_nodegroup.py.

    template_node()      what a new node would look like: the Node a kubelet of this
                         group registers (capacity, allocatable, labels), for simulation
    increase_size(n)     start n more kubelets; they register their Nodes
    delete_node(name)    stop the node's kubelet, then delete its Node object
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Protocol

from minikube_py.api import Obj
from minikube_py.api.autoscaling import NODE_GROUP_LABEL
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.kubelet.eviction import parse_thresholds
from minikube_py.kubelet.hollow import HOLLOW_ROOT, HollowNodes
from minikube_py.kubelet.kubelet import KubeletConfig
from minikube_py.kubelet.node_status import HostInfo, node_allocatable, node_capacity


class NodeGroup(Protocol):
    """What the loop asks of a node group (upstream's cloudprovider.NodeGroup)."""

    name: str
    min_size: int
    max_size: int

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def target_size(self) -> int: ...
    def node_names(self) -> set[str]: ...
    def template_node(self) -> Obj: ...
    async def increase_size(self, delta: int) -> list[str]: ...
    async def delete_node(self, name: str) -> None: ...


def template_node(group: str, host: HostInfo) -> Obj:
    """TemplateNodeInfo: the Node a new member registers, as the kubelet fills it in on
    a machine like `host`."""
    capacity = node_capacity(host)
    allocatable = node_allocatable(capacity, {}, {},
                                   parse_thresholds(KubeletConfig.eviction_hard))
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"template-node-for-{group}",
                         "labels": {NODE_GROUP_LABEL: group,
                                    "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": host.architecture,
                                    "kubernetes.io/hostname": f"template-{group}"}},
            "spec": {}, "status": {"capacity": capacity, "allocatable": allocatable}}


class HollowNodeGroup:
    """One node group of hollow nodes, <name>-<index>, between min_size and max_size."""

    def __init__(self, client: Client, name: str, min_size: int, max_size: int,
                 host: HostInfo) -> None:
        self.client = client
        self.name, self.min_size, self.max_size = name, min_size, max_size
        self.host = dataclasses.replace(host, root_dir=HOLLOW_ROOT)
        self.nodes = HollowNodes(client, 0, prefix=name, host=self.host,
                                 labels={NODE_GROUP_LABEL: name})
        self._next_index = 0

    async def start(self) -> None:
        await self.nodes.start()

    async def stop(self) -> None:
        await self.nodes.stop()

    def target_size(self) -> int:
        return len(self.nodes.kubelets)

    def node_names(self) -> set[str]:
        return set(self.nodes.kubelets)

    def template_node(self) -> Obj:
        return template_node(self.name, self.host)

    async def increase_size(self, delta: int) -> list[str]:
        """IncreaseSize: start `delta` more hollow nodes at once; their names."""
        indices = range(self._next_index, self._next_index + delta)
        self._next_index += delta
        return list(await asyncio.gather(*(self.nodes.add_node(i) for i in indices)))

    async def delete_node(self, name: str) -> None:
        """DeleteNodes: the instance goes (its kubelet stops), then its Node object."""
        await self.nodes.remove_node(name)
        try:
            await self.client.resource("nodes").delete(name)
        except NotFound:
            pass
