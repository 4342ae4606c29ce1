"""Hollow nodes: many kubelets with simulated runtimes in one process (like kubemark).

Each hollow node is a full `Kubelet` (registration, Lease heartbeats, pod workers, status
writes) whose runtime is a `SimulatedRuntime`: pods become Running with made-up IPs and
no containers. They share one process and its informers: a single watch on all pods,
routed by spec.nodeName, instead of one watch per node. Used to test the scheduler and
the controllers at cluster sizes one machine cannot run for real.

Each hollow kubelet can be its own user, as a real kubelet is (`system:node:<name>` in
`system:nodes`): given a token per node (`--simulated-token-file`, the API server's
--token-auth-file format), its writes carry its own bearer token over the process's shared
connections. The API server then authorizes each node's writes to its own objects alone
(the Node authorizer, NodeRestriction), and API Priority and Fairness sees one flow per
node (FlowSchemas system-nodes and system-node-high distinguish ByUser), where one shared
credential would be one flow whose queues the whole process fills. The shared informers
stay the process's own user (the kubeconfig's).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import dataclasses
import ipaddress
import logging
from pathlib import Path

from prometheus_client import CollectorRegistry

from minikube_py.api import Obj
from minikube_py.client.component import serve_health
from minikube_py.client.informer import EventHandler, SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.kubelet.kubelet import Kubelet, KubeletConfig
from minikube_py.kubelet.node_status import HostInfo, read_host_info
from minikube_py.kubelet.simulated import SimulatedRuntime
from minikube_py.lifecycle import Component

log = logging.getLogger(__name__)
HOLLOW_CIDR = ipaddress.ip_network("10.128.0.0/9")  # room for 32,768 /24 pod CIDRs
HOLLOW_NODE_IPS = ipaddress.ip_network("172.30.0.0/16")
# Hollow nodes write no files: no volumes, no logs.
HOLLOW_ROOT = Path("/nonexistent/minikube-py-hollow")
NODE_USER_PREFIX = "system:node:"
# Hollow kubelets that register at the same time; the next starts when one's Node is
# registered. Real nodes join as their machines boot, not all in one millisecond: 5,000
# registrations sent at once overflow API Priority and Fairness's queues for nodes
# (node-high: 64 queues of 50), and every refused kubelet then waits APF's Retry-After,
# which grows to 32 s while the refusals go on, its Lease renewals refused alike.
REGISTERING_AT_ONCE = 500


def read_node_tokens(path: Path) -> dict[str, str]:
    """Node name -> bearer token, from a file of `token,user,uid[,groups]` lines (the API
    server's --token-auth-file) whose user is `system:node:<name>`; other lines are
    skipped."""
    tokens: dict[str, str] = {}
    with path.open(newline="") as file:
        for row in csv.reader(file):
            if len(row) >= 2 and row[1].startswith(NODE_USER_PREFIX) and row[0]:
                tokens[row[1].removeprefix(NODE_USER_PREFIX)] = row[0]
    return tokens


class HollowNodes(Component):
    """N hollow kubelets sharing one API connection pool and one set of informers.

    `tokens`: node name -> the bearer token its kubelet sends (read_node_tokens); a node
    without one is the shared client's user."""

    def __init__(self, client: Client, count: int, *, prefix: str = "hollow-node",
                 start_delay: float = 0.0, host: HostInfo | None = None,
                 labels: dict[str, str] | None = None,
                 tokens: dict[str, str] | None = None) -> None:
        self.client = client
        self.tokens = dict(tokens or {})
        self.node_clients: dict[str, Client] = {}  # the nodes that are users of their own
        self.factory = SharedInformerFactory(client)
        self.host = host or read_host_info(None)
        self.prefix, self.start_delay, self.labels = prefix, start_delay, dict(labels or {})
        self.kubelets: dict[str, Kubelet] = {}
        self._registering = asyncio.Semaphore(REGISTERING_AT_ONCE)
        for index in range(count):
            self._new_kubelet(index)
        for plural in ("configmaps", "secrets", "services"):  # what env and volumes read
            self.factory.informer(plural)
        pods = self.factory.informer("pods")
        pods.add_event_handler(EventHandler(on_add=self._route_add,
                                            on_update=self._route_update,
                                            on_delete=self._route_delete))

    def _new_kubelet(self, index: int) -> Kubelet:
        """The hollow kubelet of node <prefix>-<index>: its own pod CIDR and node IP."""
        name = f"{self.prefix}-{index}"
        pod_cidr = str(ipaddress.ip_network((int(HOLLOW_CIDR.network_address) + index * 256, 24)))
        config = KubeletConfig(node_name=name, root_dir=HOLLOW_ROOT, logs_root=HOLLOW_ROOT,
                               pod_cidr=pod_cidr, hollow=True, port=0,
                               node_labels=dict(self.labels))
        node_host = dataclasses.replace(self.host, hostname=name,
                                        node_ip=str(HOLLOW_NODE_IPS[index + 1]))
        runtime = SimulatedRuntime(pod_cidr=pod_cidr, start_delay=self.start_delay)
        client = self.client
        if name in self.tokens:
            client = self.node_clients[name] = self.client.with_token(self.tokens[name])
        kubelet = Kubelet(config, client, runtime, node_host, factory=self.factory)
        self.kubelets[name] = kubelet
        return kubelet

    async def add_node(self, index: int) -> str:
        """Start one more hollow node, <prefix>-<index> (once the informers have synced)."""
        await self.factory.wait_for_cache_sync()
        kubelet = self._new_kubelet(index)
        await kubelet.start()
        return kubelet.config.node_name

    async def remove_node(self, name: str) -> None:
        """Stop one hollow node's kubelet (its Node object stays: the caller deletes it)."""
        kubelet = self.kubelets.pop(name, None)
        if kubelet is not None:
            await kubelet.stop()
        if (client := self.node_clients.pop(name, None)) is not None:
            await client.close()

    def _kubelet_for(self, pod: Obj) -> Kubelet | None:
        return self.kubelets.get((pod.get("spec") or {}).get("nodeName", ""))

    def _route_add(self, pod: Obj) -> None:
        kubelet = self._kubelet_for(pod)
        if kubelet is not None:
            kubelet.pod_added(pod)

    def _route_update(self, old: Obj, new: Obj) -> None:
        kubelet = self._kubelet_for(new)
        if kubelet is None:
            return
        if self._kubelet_for(old) is not kubelet:  # bound since the last event
            kubelet.pod_added(new)
        else:
            kubelet.pod_updated(old, new)

    def _route_delete(self, pod: Obj) -> None:
        kubelet = self._kubelet_for(pod)
        if kubelet is not None:
            kubelet.pod_deleted(pod)

    async def run(self) -> None:
        """Register every node, then run their kubelets until cancelled."""
        try:
            self.factory.start()
            await self.factory.wait_for_cache_sync()
            await asyncio.gather(*(self._start(kubelet) for kubelet in self.kubelets.values()))
            await asyncio.Event().wait()
        finally:
            await asyncio.gather(*(kubelet.stop() for kubelet in self.kubelets.values()))
            await asyncio.gather(*(client.close() for client in self.node_clients.values()))
            await self.factory.stop()

    async def _start(self, kubelet: Kubelet) -> None:
        """Start one kubelet, holding a place among REGISTERING_AT_ONCE until its Node is
        registered."""
        async with self._registering:
            await kubelet.start()
            await kubelet.node_status.registered.wait()

    async def wait_started(self) -> None:
        """Every hollow kubelet has started."""
        await asyncio.gather(*(kubelet.wait_started() for kubelet in self.kubelets.values()))


async def run_hollow_nodes(client: Client, args: argparse.Namespace) -> None:
    """`python -m minikube_py.kubelet --simulate N`: run until stopped."""
    tokens = read_node_tokens(args.simulated_token_file) if args.simulated_token_file else {}
    nodes = HollowNodes(client, args.simulate, prefix=args.node_name,
                        start_delay=args.simulated_start_delay, labels=args.node_labels,
                        tokens=tokens)
    health = (await serve_health(CollectorRegistry(), args.address, args.port)
              if args.port else None)
    async with client, nodes:
        log.warning("%d hollow nodes running", len(nodes.kubelets))
        try:
            await asyncio.Event().wait()
        finally:
            if health is not None:
                await health.cleanup()
