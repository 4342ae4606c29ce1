"""A node group of real nodes: each one a network namespace with its own containerd and
kubelet, as `minikube-py up` makes node-N (the cloud provider of a `minikube-py up`
cluster, `--cloud-provider=minikube-py`). The launcher plays the cloud: its
`minikube-py autoscaled-node` command is the API this group calls, one short process per
call, so that what building a node forks and starts never runs in the autoscaler itself.

    increase_size(n)     per node, `autoscaled-node add <group>`: a name and a pod CIDR
                         recorded (<home>/autoscaled.json), its namespace, veth and route,
                         its containerd, its kubelet joined with the bootstrap token; it
                         registers its Node and becomes Ready
    delete_node(name)    (the loop has drained it) `autoscaled-node remove <name>`: its
                         kubelet and containerd stopped, its namespace, veth, route, mounts
                         and folders removed; then its Node object deleted
    start()              the group's nodes (`autoscaled-node list <group>`: a restarted
                         autoscaler has some), `autoscaled-node start <name>` for each
                         (what runs is kept); the Node objects of the
                         group's nodes that are gone (a `down` that kept etcd) deleted, as
                         upstream's cloud node lifecycle controller deletes those whose
                         instance is gone
    stop()               nothing: the nodes outlive the autoscaler (`down` removes them)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.autoscaler.nodegroup import NODE_GROUP_LABEL, template_node
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.kubelet.node_status import HostInfo

log = logging.getLogger(__name__)


class CloudError(Exception):
    """The launcher could not add, start or remove a node (its last line says why)."""


class NetnsNodeGroup:
    """The node group <name>-1, <name>-2, ... of the cluster whose home is `state`."""

    def __init__(self, client: Client, name: str, min_size: int, max_size: int,
                 state: Path, host: HostInfo) -> None:
        self.client = client
        self.name, self.min_size, self.max_size = name, min_size, max_size
        self.state = state
        self.host = host  # each node is this machine, as its kubelet reports it
        self.members: set[str] = set()

    async def start(self) -> None:
        self.members = set((await self._launcher("list", self.name)).splitlines())
        for node in sorted(self.members):
            try:
                await self._launcher("start", node)
            except CloudError as error:
                log.error("node %s did not start again: %s", node, error)
        listed = await self.client.resource("nodes").list(
            label_selector=f"{NODE_GROUP_LABEL}={self.name}")
        for node in listed["items"]:
            name = node["metadata"]["name"]
            if name not in self.members:
                log.info("deleting node %s: its instance is gone", name)
                with contextlib.suppress(NotFound):
                    await self.client.resource("nodes").delete(name)

    async def stop(self) -> None:
        pass

    def target_size(self) -> int:
        return len(self.members)

    def node_names(self) -> set[str]:
        return set(self.members)

    def template_node(self) -> Obj:
        return template_node(self.name, self.host)

    async def increase_size(self, delta: int) -> list[str]:
        """IncreaseSize: start `delta` more nodes, one after the other (each start takes
        seconds of this machine's CPU); the names of those that started."""
        started = []
        for _ in range(delta):
            try:
                said = await self._launcher("add", self.name)
            except CloudError as error:
                log.error("node group %s: a node did not start: %s", self.name, error)
                break
            node = said.removeprefix("added ")
            self.members.add(node)
            started.append(node)
            log.info("node %s started", node)
        return started

    async def delete_node(self, name: str) -> None:
        """DeleteNodes: the instance goes (its kubelet and runtime, its network, its
        files), then its Node object."""
        await self._launcher("remove", name)
        self.members.discard(name)
        try:
            await self.client.resource("nodes").delete(name)
        except NotFound:
            pass

    async def _launcher(self, action: str, name: str) -> str:
        """`minikube-py autoscaled-node <action> <name>` on this cluster's home: its
        output goes to this log, and is returned (`list`: all of it; else its last
        line); CloudError when it fails."""
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "minikube_py.cluster", "autoscaled-node", action, name,
            env={**os.environ, "MINIKUBE_PY_HOME": str(self.state)},
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT)
        output, _ = await process.communicate()
        lines = output.decode(errors="replace").splitlines() or [""]
        for line in lines:
            log.info("autoscaled-node %s %s: %s", action, name, line)
        if process.returncode != 0:
            raise CloudError(lines[-1])
        return "\n".join(lines) if action == "list" else lines[-1]
