"""The NetworkPolicy enforcer of one node: keep the table `inet kube-network-policies`
equal to what the cluster's policies say about this node's pods.

    informers: NetworkPolicies, Pods, Namespaces
        | any change asks for a sync
        v
    sync (on a change, at most every min_sync_period; else every sync_period)
        1. the pods (policies.py PodInfo) and namespaces' labels, as of now
        2. the policies that select a pod of this node compiled against them
           (PolicyIndex.compile; each selector matched once per sync, through an
           index of the pods' labels, and each list of peers resolved once)
        3. the table's chains (nftrules.py), and one `nft -f` transaction with the ones
           that differ from the last write (none: nothing is written). After a failed
           write, and every sync_period, the transaction replaces the whole table
           instead, repairing whatever was changed behind the enforcer's back
    a failed write changes nothing (nft applies all or none): logged with the offending
    line and retried after a backoff. A sync that follows a NetworkPolicy's change is a
    span "networkpolicy sync" in the trace the policy carries (`mkctl trace`).

Connections already established stay (conntrack's ESTABLISHED and RELATED are accepted
first), as with upstream's implementations: a policy decides which connections may
start.
"""

from __future__ import annotations

import asyncio
import logging
import time

from minikube_py.api import Obj
from minikube_py.client.informer import EventHandler, SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.lifecycle import Component, wait_for_event
from minikube_py.proxy.commands import RestoreError
from minikube_py.proxy.netpol.nftrules import (
    TABLE,
    Ruleset,
    full_input,
    incremental_input,
    ruleset,
)
from minikube_py.proxy.netpol.policies import PodInfo, PolicyIndex
from minikube_py.proxy.nftables import NFTables
from minikube_py.tracing import context as tracing_context
from minikube_py.tracing.tracer import DISABLED, Tracer

log = logging.getLogger(__name__)

BACKOFF_INITIAL, BACKOFF_MAX = 1.0, 30.0


class PolicyTables(NFTables):
    """The nft commands of the enforcer's own table, `inet kube-network-policies`."""

    table = TABLE


def compile_node(policies: list[Obj], pods: list[Obj], namespaces: list[Obj], node: str
                 ) -> Ruleset:
    """Steps 1-2 and the first half of 3: the table `node` should have, as the objects
    say."""
    infos = [info for pod in pods if (info := PodInfo.from_pod(pod)) is not None]
    labels = {ns["metadata"]["name"]: ns["metadata"].get("labels") or {} for ns in namespaces}
    index = PolicyIndex(infos, labels)
    compiled = [index.compile(policy) for policy in sorted(
        policies, key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"]))
        if index.selects_on(policy, node)]
    return ruleset(index, compiled, node)


class NetworkPolicyController(Component):
    """One node's enforcer: run() writes the table once the informers have synced, then
    keeps it in sync until cancelled (its table stays, so the pods stay protected while
    the process restarts)."""

    def __init__(self, client: Client, node_name: str, *, netns: str | None = None,
                 sync_period: float = 30.0, min_sync_period: float = 0.05,
                 tracer: Tracer = DISABLED) -> None:
        self.node_name = node_name
        self.tracer = tracer
        self._causes: dict[tuple[str, str], tuple[tracing_context.SpanContext, str]] = {}
        """The trace (and uid) of each changed NetworkPolicy, until a sync writes it."""
        self.nft = PolicyTables(netns)
        self.sync_period, self.min_sync_period = sync_period, min_sync_period
        self.informers = SharedInformerFactory(client)
        self.policies = self.informers.informer("networkpolicies", "networking.k8s.io")
        self.pods = self.informers.informer("pods")
        self.namespaces = self.informers.informer("namespaces")
        handler = EventHandler(on_add=self._changed, on_update=lambda _, new: self._changed(new),
                               on_delete=self._changed)
        for informer in (self.pods, self.namespaces):
            informer.add_event_handler(handler)
        self.policies.add_event_handler(EventHandler(
            on_add=self._policy_changed, on_update=lambda _, new: self._policy_changed(new),
            on_delete=self._policy_changed))
        self._wake = asyncio.Event()
        self._first_sync = asyncio.Event()
        self.written: Ruleset | None = None
        """The table as last written; None when unknown (nothing yet, or a failed write)."""
        self.last_sync_time = 0.0
        self.syncs = 0
        self.failed_syncs = 0

    def _changed(self, _: Obj) -> None:
        self._wake.set()

    def _policy_changed(self, policy: Obj) -> None:
        metadata = policy["metadata"]
        if self.tracer.enabled and (context := tracing_context.of_object(policy)):
            self._causes[(metadata.get("namespace", ""), metadata["name"])] = (
                context, metadata.get("uid") or "")
        self._wake.set()

    async def run(self) -> None:
        """Start the informers, wait for their caches, write the table, then keep it in
        sync until cancelled."""
        self.informers.start()
        try:
            await self.informers.wait_for_cache_sync()
            backoff = 0.0
            try:
                await self.sync(force=True)
            except RestoreError as error:
                self.failed_syncs += 1
                backoff = BACKOFF_INITIAL
                log.error("writing network policy rules failed (retrying in %.0f s): %s",
                          backoff, error)
            self._first_sync.set()
            await self.sync_loop(backoff)
        finally:
            await self.informers.stop()

    async def wait_started(self) -> None:
        """The first write of the table is done (or failed, and is being retried)."""
        await self._first_sync.wait()

    async def sync_loop(self, backoff: float = 0.0) -> None:
        """A change syncs at most every min_sync_period; a quiet enforcer rewrites its
        table every sync_period (repairing what was changed behind its back); a failure
        backs off."""
        while True:
            if backoff:
                await asyncio.sleep(backoff)
            else:
                await wait_for_event(self._wake, self.last_sync_time + self.sync_period
                                     - time.monotonic())
            since = time.monotonic() - self.last_sync_time
            if since < self.min_sync_period:
                await asyncio.sleep(self.min_sync_period - since)
            force = not self._wake.is_set()
            self._wake.clear()
            try:
                await self.sync(force=force or backoff > 0)
                backoff = 0.0
            except RestoreError as error:
                self.failed_syncs += 1
                backoff = min(max(backoff * 2, BACKOFF_INITIAL), BACKOFF_MAX)
                log.error("syncing network policy rules failed (retrying in %.0f s; the "
                          "previous rules stay): %s", backoff, error)

    async def sync(self, *, force: bool) -> None:
        """Steps 1-3 of the module's list."""
        started, started_ns = time.monotonic(), time.time_ns()
        causes, self._causes = self._causes, {}
        wanted = compile_node(self.policies.store.list(), self.pods.store.list(),
                              self.namespaces.store.list(), self.node_name)
        written, self.written = self.written, None
        text = (full_input(wanted) if force or written is None
                else incremental_input(wanted, written))
        if text:
            try:
                await self.nft.apply(text)
            except OSError as error:  # nft missing, or not runnable in the namespace
                raise RestoreError(f"cannot run nft: {error}") from error
        self.written = wanted
        self.last_sync_time = time.monotonic()
        self.syncs += 1
        log.debug("synced network policy rules (%d lines) in %.1f ms", text.count("\n"),
                  (self.last_sync_time - started) * 1000)
        for (namespace, name), (parent, uid) in causes.items():
            self.trace_sync(namespace, name, uid, parent, wanted, started_ns,
                            text.count("\n"))

    def trace_sync(self, namespace: str, name: str, uid: str,
                   parent: tracing_context.SpanContext, wanted: Ruleset, started_ns: int,
                   lines: int) -> None:
        """A span of this sync in the trace of a policy that changed: the moment its rules
        hold on this node (its chains here; none when it selects no pod of the node)."""
        prefix = f"policy-{namespace}/{name}-"
        span = self.tracer.start("networkpolicy sync", parent=parent, attributes={
            "k8s.resource": "networkpolicies", "k8s.namespace": namespace, "k8s.name": name,
            "k8s.uid": uid, "node": self.node_name, "changed_lines": lines,
            "chains": sorted(chain for chain in wanted.chains if chain.startswith(prefix))})
        span.start_ns = started_ns
        span.end()

    async def cleanup(self) -> str:
        """Remove the enforcer's table; what went, in words."""
        gone = await self.nft.cleanup()
        return f"removed table {TABLE}" if gone else f"no table {TABLE}"
