"""Preemption end to end: a real API server, an in-process Scheduler, Node objects and
no kubelets (the test finishes graceful deletions itself, as a kubelet would).

Two nodes of 2 cpus are filled with low-priority pods, some of them protected by a
PodDisruptionBudget; a high-priority pod then needs one cpu. The scheduler profile has a
name of its own, so that only this test's pods are scheduled by it.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.client.errors import Forbidden, NotFound
from minikube_py.client.rest import Client
from minikube_py.scheduler.config import parse_configuration
from minikube_py.scheduler.plugins.registry import IN_TREE_PLUGINS
from minikube_py.scheduler.scheduler import Scheduler
from tests.api_helpers import eventually
from tests.conftest import module_own_apiserver

LOW_VALUE, HIGH_VALUE = 100, 1000


class PreemptionCluster:
    """Two labelled nodes, three PriorityClasses and a scheduler profile, all uniquely
    named; `cleanup` deletes them and every pod of the namespace."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        suffix = uuid.uuid4().hex[:6]
        self.scheduler_name = f"preempt-{suffix}"
        self.label = {"preemption-test": suffix}
        self.nodes = [f"preempt-{suffix}-a", f"preempt-{suffix}-b"]
        self.low, self.high, self.never = (f"low-{suffix}", f"high-{suffix}",
                                           f"never-{suffix}")
        self.pods = client.resource("pods")
        self.scheduler: Scheduler | None = None

    async def create_priority_classes(self) -> None:
        classes = self.client.resource("priorityclasses", "scheduling.k8s.io")
        for name, value, policy in ((self.low, LOW_VALUE, "PreemptLowerPriority"),
                                    (self.high, HIGH_VALUE, "PreemptLowerPriority"),
                                    (self.never, HIGH_VALUE, "Never")):
            await classes.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                  "metadata": {"name": name}, "value": value,
                                  "preemptionPolicy": policy})

    async def start(self) -> Scheduler:
        """The classes, the two nodes, and the scheduler (running until cleanup)."""
        await self.create_priority_classes()
        for name in self.nodes:
            allocatable = {"cpu": "2", "memory": "8Gi", "pods": "110"}
            created = await self.client.resource("nodes").create({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {**self.label,
                                                      "kubernetes.io/hostname": name}}})
            created["status"] = {"capacity": allocatable, "allocatable": allocatable,
                                 "conditions": [{"type": "Ready", "status": "True"}]}
            await self.client.resource("nodes").update_status(created)
        config = parse_configuration({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": self.scheduler_name}]}, set(IN_TREE_PLUGINS))
        scheduler = Scheduler(self.client, config, IN_TREE_PLUGINS)
        self.scheduler = scheduler
        async with asyncio.timeout(15):
            await scheduler.start()
        return scheduler

    async def create_pod(self, name: str, priority_class: str, *, node: str = "",
                         labels: dict[str, str] | None = None) -> Obj:
        spec: Obj = {"containers": [{"name": "c", "image": "localhost/echo:1",
                                     "resources": {"requests": {"cpu": "1"}}}],
                     "priorityClassName": priority_class, "schedulerName": self.scheduler_name,
                     "nodeSelector": self.label}
        if node:
            spec["nodeName"] = node
        return await self.pods.create({"apiVersion": "v1", "kind": "Pod",
                                       "metadata": {"name": name, "labels": labels or {}},
                                       "spec": spec}, self.namespace)

    async def pod(self, name: str) -> Obj | None:
        try:
            return await self.pods.get(name, self.namespace)
        except NotFound:
            return None

    async def failed_scheduling(self, name: str, *parts: str) -> Obj:
        """The pod's FailedScheduling event whose message holds each of `parts`: what it
        says of our two nodes. Nodes other tests left in the shared API server (cordoned,
        tainted, or without our label) add reasons of their own to the message."""
        async def found() -> Obj | None:
            events = (await self.client.resource("events").list(self.namespace))["items"]
            return next((e for e in events if e["involvedObject"]["name"] == name
                         and e["reason"] == "FailedScheduling"
                         and all(part in e["message"] for part in parts)), None)
        try:
            return await eventually(found, timeout=30,
                                    what=f"FailedScheduling for {name} saying {parts!r}")
        except AssertionError as error:
            events = (await self.client.resource("events").list(self.namespace))["items"]
            seen = [(e["reason"], e["message"]) for e in events
                    if e["involvedObject"]["name"] == name]
            raise AssertionError(f"{error}; its events: {seen}") from None

    async def cleanup(self) -> None:
        if self.scheduler is not None:
            await self.scheduler.stop()
        for pod in (await self.pods.list(self.namespace))["items"]:
            await _ignore_missing(self.pods.delete(pod["metadata"]["name"], self.namespace,
                                                   grace_period_seconds=0))
        for name in self.nodes:
            await _ignore_missing(self.client.resource("nodes").delete(name))
        classes = self.client.resource("priorityclasses", "scheduling.k8s.io")
        for name in (self.low, self.high, self.never):
            await _ignore_missing(classes.delete(name))


async def _ignore_missing(call: Any) -> None:
    with contextlib.suppress(NotFound):
        await call


# An etcd and API server of this module's own: preemption's messages count every node
# and pod the scheduler sees, and other modules on a shared server leave theirs behind.
etcd, apiserver, kubeconfig = module_own_apiserver("preemption")


@pytest.fixture
async def cluster(api_client: Client, namespace: str) -> AsyncIterator[PreemptionCluster]:
    made = PreemptionCluster(api_client, namespace)
    try:
        yield made
    finally:
        await made.cleanup()


async def test_a_high_priority_pod_preempts_the_victim_its_budget_allows(
        cluster: PreemptionCluster) -> None:
    scheduler = await cluster.start()
    node_a, node_b = cluster.nodes
    guarded = {"app": "guarded"}
    # a-free first: without the budget, the first pod of a node would be the one reprieved.
    await cluster.create_pod("a-free", cluster.low, node=node_a)
    await cluster.create_pod("a-guarded", cluster.low, node=node_a, labels=guarded)
    await cluster.create_pod("b-guarded-1", cluster.low, node=node_b, labels=guarded)
    await cluster.create_pod("b-guarded-2", cluster.low, node=node_b, labels=guarded)
    budgets = cluster.client.resource("poddisruptionbudgets", "policy")
    budget = await budgets.create({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "guarded"},
        "spec": {"minAvailable": 3, "selector": {"matchLabels": guarded}}}, cluster.namespace)
    budget["status"] = {"disruptionsAllowed": 0, "currentHealthy": 3, "desiredHealthy": 3,
                        "expectedPods": 3, "observedGeneration": 1}
    await budgets.update_status(budget)
    pdb_store = scheduler.informers.informer("poddisruptionbudgets", "policy").store
    await eventually(lambda: _no_disruption_allowed(pdb_store.get(f"{cluster.namespace}/guarded")),
                     what="the scheduler to see the budget's status")

    vip = await cluster.create_pod("vip", cluster.high)
    assert (vip["spec"]["priority"], vip["spec"]["preemptionPolicy"]) == (
        HIGH_VALUE, "PreemptLowerPriority")

    async def nominated() -> str:
        return ((await cluster.pod("vip")) or {}).get("status", {}).get("nominatedNodeName", "")
    assert await eventually(nominated, timeout=15, what="vip to be nominated") == node_a

    victim = await cluster.pod("a-free")
    assert victim is not None and victim["metadata"].get("deletionTimestamp")
    target = next(c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (target["status"], target["reason"], target["message"]) == (
        "True", "PreemptionByScheduler",
        f"{cluster.scheduler_name}: preempting to accommodate a higher priority pod")
    for spared in ("a-guarded", "b-guarded-1", "b-guarded-2"):
        assert not ((await cluster.pod(spared)) or {})["metadata"].get("deletionTimestamp")

    async def preempted() -> Obj | None:
        events = (await cluster.client.resource("events").list(cluster.namespace))["items"]
        return next((e for e in events if e["involvedObject"]["name"] == "a-free"
                     and e["reason"] == "Preempted"), None)
    event = await eventually(preempted, what="the Preempted event")
    assert (event["type"], event["message"]) == (
        "Normal", f"Preempted by pod {vip['metadata']['uid']} on node {node_a}")

    await cluster.pods.delete("a-free", cluster.namespace, grace_period_seconds=0)

    async def bound() -> str:
        return ((await cluster.pod("vip")) or {}).get("spec", {}).get("nodeName", "")
    assert await eventually(bound, timeout=20, what="vip to be bound") == node_a

    await cluster.create_pod("latecomer", cluster.low)
    event = await cluster.failed_scheduling(
        "latecomer", "nodes are available: 2 Insufficient cpu", ". preemption: 0/",
        "2 No preemption victims found for incoming pod")
    assert event["message"].startswith(f"0/{len(scheduler.nodes.store.list())} nodes")

    await cluster.create_pod("polite", cluster.never)
    await cluster.failed_scheduling(
        "polite", "nodes are available: 2 Insufficient cpu",
        ". preemption: not eligible due to preemptionPolicy=Never.")


async def _no_disruption_allowed(budget: Obj | None) -> bool:
    return bool(budget and budget.get("status", {}).get("disruptionsAllowed") == 0
                and "currentHealthy" in budget["status"])


async def test_priority_admission_resolves_the_class_and_refuses_what_contradicts_it(
        cluster: PreemptionCluster) -> None:
    await cluster.create_priority_classes()
    pod = await cluster.create_pod("never", cluster.never)
    assert (pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]) == (HIGH_VALUE, "Never")
    plain = await cluster.pods.create({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
        "spec": {"containers": [{"name": "c", "image": "i"}],
                 "schedulerName": "nobody"}}, cluster.namespace)
    assert (plain["spec"]["priority"], plain["spec"]["preemptionPolicy"]) == (
        0, "PreemptLowerPriority")
    with pytest.raises(Forbidden) as refused:
        await cluster.create_pod("ghost", "no-such-class")
    assert str(refused.value).endswith(
        'pods "ghost" is forbidden: no PriorityClass with name no-such-class was found')
    with pytest.raises(Forbidden) as refused:
        await cluster.pods.create({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sneaky"},
            "spec": {"containers": [{"name": "c", "image": "i"}], "priority": 5,
                     "priorityClassName": cluster.high}}, cluster.namespace)
    assert str(refused.value).endswith(
        'pods "sneaky" is forbidden: the integer value of priority (5) must not be provided '
        "in pod spec; priority admission controller computed 1000 from the given "
        "PriorityClass name")
