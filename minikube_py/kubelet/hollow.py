"""Hollow nodes: many kubelets with simulated runtimes in one process (like kubemark).

Each hollow node is a full `Kubelet` (registration, Lease heartbeats, pod workers, status
writes) whose runtime is a `SimulatedRuntime`: pods become Running with made-up IPs and
no containers. They share one process and its informers: a single watch on all pods,
routed by spec.nodeName, instead of one watch per node. Used to test the scheduler and
the controllers at cluster sizes one machine cannot run for real.
"""

from __future__ import annotations

import argparse
import asyncio
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


class HollowNodes(Component):
    """N hollow kubelets sharing one API connection pool and one set of informers."""

    def __init__(self, client: Client, count: int, *, prefix: str = "hollow-node",
                 start_delay: float = 0.0, host: HostInfo | None = None,
                 labels: dict[str, str] | None = None) -> None:
        self.client = client
        self.factory = SharedInformerFactory(client)
        self.host = host or read_host_info(None)
        self.prefix, self.start_delay, self.labels = prefix, start_delay, dict(labels or {})
        self.kubelets: dict[str, Kubelet] = {}
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
        kubelet = Kubelet(config, self.client, runtime, node_host, factory=self.factory)
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
            await asyncio.gather(*(kubelet.start() for kubelet in self.kubelets.values()))
            await asyncio.Event().wait()
        finally:
            await asyncio.gather(*(kubelet.stop() for kubelet in self.kubelets.values()))
            await self.factory.stop()

    async def wait_started(self) -> None:
        """Every hollow kubelet has started."""
        await asyncio.gather(*(kubelet.wait_started() for kubelet in self.kubelets.values()))


async def run_hollow_nodes(client: Client, args: argparse.Namespace) -> None:
    """`python -m minikube_py.kubelet --simulate N`: run until stopped."""
    nodes = HollowNodes(client, args.simulate, prefix=args.node_name,
                        start_delay=args.simulated_start_delay, labels=args.node_labels)
    health = (await serve_health(CollectorRegistry(), args.address, args.port)
              if args.port else None)
    async with client, nodes:
        log.warning("%d hollow nodes running", len(nodes.kubelets))
        try:
            await asyncio.Event().wait()
        finally:
            if health is not None:
                await health.cleanup()
