"""The DaemonSet controller against a real API server: one pod per eligible node.

Nodes are plain Node objects made by the test (no kubelet runs on them); FakeKubelet
makes the daemon pods Running and Ready even though no scheduler binds them. Every test
labels its nodes with a run id and selects on it, so nodes of other tests never count.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api.podutil import is_pod_ready
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client, ResourceClient
from minikube_py.controllers import history
from minikube_py.controllers.daemonset import DaemonSetController
from minikube_py.controllers.daemonset_util import (
    REVISION_HASH_LABEL,
    TEMPLATE_GENERATION_LABEL,
    node_should_run_daemon_pod,
    replace_node_name_affinity,
    target_node_name,
)
from minikube_py.controllers.manager import ControllerManager
from tests.api_helpers import eventually
from tests.fake_kubelet import FakeKubelet
from tests.test_mkctl import Clis, assert_same

RUN_LABEL = "daemonset-test-run"
RunControllers = Callable[..., Awaitable[ControllerManager]]
MakeNode = Callable[..., Awaitable[str]]


@pytest.fixture
async def daemonset_controller(api_client: Client, namespace: str,
                               run_controllers: RunControllers) -> AsyncIterator[None]:
    """Run the DaemonSet controller; then stop it and leave no pod behind (a later test's
    scheduler would otherwise find them)."""
    manager = await run_controllers(DaemonSetController)
    yield
    await manager.stop()
    await api_client.resource("daemonsets", "apps").delete_collection(namespace)
    await api_client.resource("pods").delete_collection(namespace)


@pytest.fixture
async def daemonset_controller_with_lagging_revisions(
        lagging_revision_watch: None, daemonset_controller: None) -> None:
    """The DaemonSet controller, started once its ControllerRevision watch lags."""


@pytest.fixture
def run_id() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture
async def make_node(api_client: Client, run_id: str) -> AsyncIterator[MakeNode]:
    """Create Node objects labelled with this test's run id; all are deleted afterwards."""
    nodes = api_client.resource("nodes")
    created: list[str] = []

    async def make(labels: dict[str, str] | None = None,
                   taints: list[Obj] | None = None) -> str:
        name = f"ds-node-{uuid.uuid4().hex[:8]}"
        node: Obj = {"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": name, "labels": {RUN_LABEL: run_id, **(labels or {})}},
                     "spec": {"taints": taints or []}}
        await nodes.create(node)
        created.append(name)
        return name

    yield make
    for name in created:
        with contextlib.suppress(NotFound):
            await nodes.delete(name)


def daemon_set(run_id: str, *, node_selector: dict[str, str] | None = None,
               strategy: Obj | None = None) -> Obj:
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "updateStrategy": strategy or {"type": "RollingUpdate",
                                           "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"nodeSelector": {RUN_LABEL: run_id, **(node_selector or {})},
                         "containers": [{"name": "agent", "image": "busybox:1.36"}]},
            },
        },
    }


async def pods_by_node(api_client: Client, namespace: str) -> dict[str, list[Obj]]:
    """Live (not terminating) pods of the namespace, by the node they are meant for."""
    pods = await api_client.resource("pods").list(namespace)
    result: dict[str, list[Obj]] = {}
    for pod in pods["items"]:
        if not pod["metadata"].get("deletionTimestamp"):
            result.setdefault(target_node_name(pod) or "", []).append(pod)
    return result


async def wait_for_ready_pods_on(api_client: Client, namespace: str, nodes: list[str],
                                 generation: str = "1") -> dict[str, list[Obj]]:
    """Exactly one Ready pod of the given template generation on each node, none elsewhere."""
    async def placed() -> dict[str, list[Obj]] | None:
        by_node = await pods_by_node(api_client, namespace)
        ok = sorted(by_node) == sorted(nodes) and all(
            len(pods) == 1 and is_pod_ready(pods[0])
            and pods[0]["metadata"]["labels"].get(TEMPLATE_GENERATION_LABEL) == generation
            for pods in by_node.values())
        return by_node if ok else None
    return await eventually(placed, timeout=15, what=f"one ready pod on each of {nodes}")


def _node(taints: list[Obj] | None = None, labels: dict[str, str] | None = None) -> Obj:
    return {"metadata": {"name": "n1", "labels": labels or {}}, "spec": {"taints": taints or []}}


def _ds(**pod_spec: Any) -> Obj:
    return {"metadata": {"namespace": "ns"}, "spec": {"template": {"spec": pod_spec}}}


def _taint(key: str, effect: str) -> list[Obj]:
    return [{"key": key, "effect": effect}]


@pytest.mark.parametrize(("node", "ds", "expected"), [
    (_node(), _ds(), (True, True)),
    (_node(_taint("dedicated", "NoSchedule")), _ds(), (False, True)),
    (_node(_taint("dedicated", "NoExecute")), _ds(), (False, False)),
    (_node(_taint("dedicated", "NoSchedule")),
     _ds(tolerations=[{"key": "dedicated", "operator": "Exists"}]), (True, True)),
    (_node(_taint("dedicated", "PreferNoSchedule")), _ds(), (True, True)),
    (_node(_taint("node.kubernetes.io/unschedulable", "NoSchedule")), _ds(), (True, True)),
    (_node(_taint("node.kubernetes.io/not-ready", "NoExecute")), _ds(), (True, True)),
    (_node(_taint("node.kubernetes.io/network-unavailable", "NoSchedule")), _ds(),
     (False, True)),
    (_node(_taint("node.kubernetes.io/network-unavailable", "NoSchedule")),
     _ds(hostNetwork=True), (True, True)),
    (_node(labels={"disk": "hdd"}), _ds(nodeSelector={"disk": "ssd"}), (False, False)),
    (_node(), _ds(nodeName="n2"), (False, False)),
    (_node(labels={"zone": "a"}), _ds(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}]}}}),
     (False, False)),
], ids=["plain", "no-schedule", "no-execute", "tolerated", "prefer-no-schedule",
        "unschedulable", "not-ready", "network-unavailable", "network-unavailable-host-network",
        "node-selector", "node-name", "required-affinity"])
def test_node_should_run_daemon_pod(node: Obj, ds: Obj, expected: tuple[bool, bool]) -> None:
    """(should run, should continue running): taints the pod does not tolerate keep new
    pods away, and only NoExecute ones evict a pod already there."""
    assert node_should_run_daemon_pod(node, ds) == expected


def test_target_node_name_reads_node_name_or_the_node_affinity_term() -> None:
    affinity = replace_node_name_affinity(None, "n7")
    assert target_node_name({"spec": {"affinity": affinity}}) == "n7"
    assert target_node_name({"spec": {"nodeName": "n8", "affinity": affinity}}) == "n8"
    assert target_node_name({"spec": {}}) is None


async def wait_for_status(daemonsets: ResourceClient, namespace: str, **wanted: int) -> Obj:
    async def matches() -> Obj | None:
        status = (await daemonsets.get("agent", namespace)).get("status", {})
        return status if all(status.get(k, 0) == v for k, v in wanted.items()) else None
    return await eventually(matches, timeout=15, what=f"status {wanted}")


async def test_daemon_set_runs_one_pod_per_eligible_node(
        api_client: Client, namespace: str, run_id: str,
        make_node: MakeNode, daemonset_controller: None) -> None:
    first = await make_node()
    second = await make_node()
    tainted = await make_node(taints=[{"key": "dedicated", "value": "gpu",
                                       "effect": "NoSchedule"}])
    daemonsets = api_client.resource("daemonsets", "apps")
    async with FakeKubelet(api_client, namespace):
        await daemonsets.create(daemon_set(run_id), namespace)
        by_node = await wait_for_ready_pods_on(api_client, namespace, [first, second])
    assert tainted not in by_node

    pod = by_node[first][0]
    affinity = pod["spec"]["affinity"]["nodeAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [first]}]}]
    assert not pod["spec"].get("nodeName")
    tolerated = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
    assert ("node.kubernetes.io/not-ready", "NoExecute") in tolerated
    assert ("node.kubernetes.io/unschedulable", "NoSchedule") in tolerated
    assert pod["metadata"]["labels"][TEMPLATE_GENERATION_LABEL] == "1"
    assert pod["metadata"]["labels"][REVISION_HASH_LABEL]
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"

    await wait_for_status(daemonsets, namespace, desiredNumberScheduled=2,
                          currentNumberScheduled=2, numberMisscheduled=0, numberReady=2,
                          updatedNumberScheduled=2, numberAvailable=2, numberUnavailable=0,
                          observedGeneration=1)
    # the controller's Events are written after the pods, as upstream's recorder writes
    # them: in the background, so a status can be seen before them
    expected = sorted(f"Created pod: {pods[0]['metadata']['name']}" for pods in by_node.values())

    async def created() -> list[str] | None:
        events = await api_client.resource("events").list(namespace)
        messages = sorted(e["message"] for e in events["items"]
                          if e["reason"] == "SuccessfulCreate")
        return messages if len(messages) >= len(expected) else None
    assert await eventually(created, timeout=15, what="an Event for each pod") == expected


async def test_node_selector_restricts_daemon_pods_to_matching_nodes(
        api_client: Client, namespace: str, run_id: str,
        make_node: MakeNode, daemonset_controller: None) -> None:
    ssd = await make_node(labels={"disk": "ssd"})
    await make_node(labels={"disk": "hdd"})
    await make_node()
    async with FakeKubelet(api_client, namespace):
        await api_client.resource("daemonsets", "apps").create(
            daemon_set(run_id, node_selector={"disk": "ssd"}), namespace)
        await wait_for_ready_pods_on(api_client, namespace, [ssd])


async def test_new_node_gets_a_pod_and_pods_for_vanished_nodes_are_removed(
        api_client: Client, namespace: str, run_id: str,
        make_node: MakeNode, daemonset_controller: None) -> None:
    first = await make_node()
    async with FakeKubelet(api_client, namespace):
        await api_client.resource("daemonsets", "apps").create(daemon_set(run_id), namespace)
        await wait_for_ready_pods_on(api_client, namespace, [first])
        second = await make_node()
        await wait_for_ready_pods_on(api_client, namespace, [first, second])
        # The pod for a deleted node never bound, so pod GC would not collect it: the
        # DaemonSet removes it at its next sync (here, caused by a third node appearing).
        await api_client.resource("nodes").delete(second)
        third = await make_node()
        await wait_for_ready_pods_on(api_client, namespace, [first, third])


async def test_no_schedule_taint_keeps_a_running_pod_but_no_execute_evicts_it(
        api_client: Client, namespace: str, run_id: str, make_node: MakeNode,
        daemonset_controller: None) -> None:
    node = await make_node()
    daemonsets, nodes = api_client.resource("daemonsets", "apps"), api_client.resource("nodes")
    async with FakeKubelet(api_client, namespace):
        await daemonsets.create(daemon_set(run_id), namespace)
        placed = await wait_for_ready_pods_on(api_client, namespace, [node])

        await nodes.patch(node, {"spec": {"taints": [
            {"key": "maintenance", "effect": "NoSchedule"}]}})
        await wait_for_status(daemonsets, namespace, desiredNumberScheduled=0,
                              numberMisscheduled=1)
        assert await pods_by_node(api_client, namespace) == placed  # it may stay

        await nodes.patch(node, {"spec": {"taints": [
            {"key": "maintenance", "effect": "NoExecute"}]}})

        async def evicted() -> bool:
            return not await pods_by_node(api_client, namespace)
        await eventually(evicted, what="the daemon pod deleted from the NoExecute node")


async def test_failed_daemon_pod_is_deleted_and_replaced(
        api_client: Client, namespace: str, run_id: str,
        make_node: MakeNode, daemonset_controller: None) -> None:
    node = await make_node()
    async with FakeKubelet(api_client, namespace) as kubelet:
        await api_client.resource("daemonsets", "apps").create(daemon_set(run_id), namespace)
        failed = (await wait_for_ready_pods_on(api_client, namespace, [node]))[node][0]
        await kubelet.set_phase(failed["metadata"]["name"], "Failed", exit_code=1)
        replaced = await wait_for_ready_pods_on(api_client, namespace, [node])
    assert replaced[node][0]["metadata"]["name"] != failed["metadata"]["name"]

    async def warnings() -> list[str] | None:  # (Events are written in the background)
        events = await api_client.resource("events").list(namespace)
        return [e["message"] for e in events["items"]
                if e["reason"] == "FailedDaemonPod"] or None
    assert await eventually(warnings, timeout=15, what="the FailedDaemonPod Event") == [
        f"Found failed daemon pod {namespace}/{failed['metadata']['name']} "
        f"on node {node}, will try to kill it"]


async def test_on_delete_strategy_updates_a_pod_only_when_it_is_deleted(
        api_client: Client, namespace: str, run_id: str,
        make_node: MakeNode, daemonset_controller: None) -> None:
    first, second = await make_node(), await make_node()
    daemonsets = api_client.resource("daemonsets", "apps")
    async with FakeKubelet(api_client, namespace):
        await daemonsets.create(daemon_set(run_id, strategy={"type": "OnDelete"}), namespace)
        old = await wait_for_ready_pods_on(api_client, namespace, [first, second])
        await daemonsets.patch("agent", {"spec": {"template": {"metadata": {
            "annotations": {"version": "2"}}}}}, namespace)

        async def observed() -> bool:
            ds = await daemonsets.get("agent", namespace)
            return ds.get("status", {}).get("observedGeneration") == 2
        await eventually(observed, what="the template change to be observed")
        assert await pods_by_node(api_client, namespace) == old  # nothing was replaced

        await api_client.resource("pods").delete(old[first][0]["metadata"]["name"], namespace)

        async def first_replaced() -> bool:
            by_node = await pods_by_node(api_client, namespace)
            pods = by_node.get(first, [])
            return len(pods) == 1 and pods[0]["metadata"]["labels"].get(
                TEMPLATE_GENERATION_LABEL) == "2"
        await eventually(first_replaced, what="a new-template pod on the first node")
    assert (await pods_by_node(api_client, namespace))[second] == old[second]


@pytest.mark.parametrize(("rolling_update", "unavailable_nodes", "extra_pods"), [
    ({"maxUnavailable": 1}, 1, 0),
    ({"maxUnavailable": 0, "maxSurge": 1}, 0, 1),
], ids=["max-unavailable", "max-surge"])
async def test_rolling_update_stays_within_max_unavailable_and_max_surge(
        api_client: Client, namespace: str, run_id: str, make_node: MakeNode,
        daemonset_controller: None, rolling_update: Obj, unavailable_nodes: int,
        extra_pods: int) -> None:
    """Checked at every watch event: nodes without a Ready pod, and pods beyond one per node."""
    nodes = [await make_node() for _ in range(3)]
    daemonsets = api_client.resource("daemonsets", "apps")
    pods_client = api_client.resource("pods")
    strategy = {"type": "RollingUpdate", "rollingUpdate": rolling_update}
    async with FakeKubelet(api_client, namespace):
        await daemonsets.create(daemon_set(run_id, strategy=strategy), namespace)
        await wait_for_ready_pods_on(api_client, namespace, nodes)
        listed = await pods_client.list(namespace)
        pods: dict[str, Obj] = {p["metadata"]["name"]: p for p in listed["items"]}
        worst_unavailable = worst_extra = 0

        def live() -> list[Obj]:
            return [p for p in pods.values() if not p["metadata"].get("deletionTimestamp")]

        def unavailable() -> int:
            ready_on = {target_node_name(p) for p in live() if is_pod_ready(p)}
            return sum(1 for node in nodes if node not in ready_on)

        def all_updated() -> bool:
            return len(live()) == 3 and all(
                is_pod_ready(p) and p["metadata"]["labels"][TEMPLATE_GENERATION_LABEL] == "2"
                for p in live())

        async def follow() -> None:
            nonlocal worst_unavailable, worst_extra
            async for kind, pod in pods_client.watch(
                    namespace, resource_version=listed["metadata"]["resourceVersion"]):
                if kind == "BOOKMARK":
                    continue
                if kind == "DELETED":
                    pods.pop(pod["metadata"]["name"], None)
                else:
                    pods[pod["metadata"]["name"]] = pod
                worst_unavailable = max(worst_unavailable, unavailable())
                worst_extra = max(worst_extra, len(live()) - len(nodes))
                if all_updated():
                    return

        watcher = asyncio.create_task(follow())
        await daemonsets.patch("agent", {"spec": {"template": {"spec": {"containers": [
            {"name": "agent", "image": "busybox:1.37"}]}}}}, namespace)
        async with asyncio.timeout(20):
            await watcher
    # Reaching the limit shows the update did work; never passing it is the promise.
    assert (worst_unavailable, worst_extra) == (unavailable_nodes, extra_pods)
    await wait_for_status(daemonsets, namespace, updatedNumberScheduled=3, numberAvailable=3)


async def test_each_template_is_a_revision_and_kubectl_rolls_back_to_one(
        api_client: Client, namespace: str, run_id: str, make_node: MakeNode,
        daemonset_controller: None, kubectl: Callable[..., Any], kubeconfig: Path,
        tmp_path: Path) -> None:
    """The first template is revision 1 and the pods carry its hash; a new template is
    revision 2; `kubectl rollout undo` puts the first back, which renumbers revision 1 to
    3 and brings its hash back to the pods. mkctl reads the history as kubectl does."""
    node = await make_node()
    daemonsets = api_client.resource("daemonsets", "apps")
    revisions = api_client.resource("controllerrevisions", "apps")

    async def pods_at(hash_: str) -> None:
        async def there() -> bool:
            pods = (await pods_by_node(api_client, namespace)).get(node, [])
            return len(pods) == 1 and is_pod_ready(pods[0]) and pods[0]["metadata"][
                "labels"][REVISION_HASH_LABEL] == hash_
        await eventually(there, timeout=15, what=f"the node's pod at {hash_}")

    async def numbered() -> list[tuple[int, str]]:
        listed = (await revisions.list(namespace))["items"]
        return sorted((r["revision"], r["metadata"]["name"]) for r in listed)

    async with FakeKubelet(api_client, namespace):
        ds = await daemonsets.create(daemon_set(run_id), namespace)
        await wait_for_ready_pods_on(api_client, namespace, [node])
        (first,) = (await revisions.list(namespace))["items"]
        hash_ = first["metadata"]["labels"][REVISION_HASH_LABEL]
        assert first["metadata"]["name"] == f"agent-{hash_}" and first["revision"] == 1
        assert first["metadata"]["labels"]["app"] == "agent"
        assert [(r["kind"], r["name"], r["uid"], r["controller"])
                for r in first["metadata"]["ownerReferences"]] == [
            ("DaemonSet", "agent", ds["metadata"]["uid"], True)]
        assert first["data"] == {"spec": {"template": {**ds["spec"]["template"],
                                                       "$patch": "replace"}}}
        await pods_at(hash_)

        await daemonsets.patch("agent", {"spec": {"template": {"spec": {"containers": [
            {"name": "agent", "image": "busybox:1.37"}]}}}}, namespace)
        await wait_for_ready_pods_on(api_client, namespace, [node], generation="2")
        (_, second_name), = [entry for entry in await numbered() if entry[0] == 2]
        listed = await asyncio.to_thread(kubectl, "rollout", "history", "daemonset/agent",
                                         "-n", namespace)
        assert listed.stdout.split() == ["daemonset.apps/agent", "REVISION", "CHANGE-CAUSE",
                                         "1", "<none>", "2", "<none>"]

        undone = await asyncio.to_thread(kubectl, "rollout", "undo", "daemonset/agent",
                                         "-n", namespace)
        assert undone.stdout == "daemonset.apps/agent rolled back\n"
        await pods_at(hash_)

        async def renumbered() -> bool:
            return await numbered() == [(2, second_name), (3, first["metadata"]["name"])]
        await eventually(renumbered, what="revision 1 renumbered to 3")
        again = await asyncio.to_thread(kubectl, "rollout", "undo", "daemonset/agent",
                                        "--to-revision=3", "-n", namespace)
        assert again.stdout == ("daemonset.apps/agent skipped rollback (current template "
                                "already matches revision 3)\n")
        clis = Clis(kubeconfig, tmp_path)
        for case in ("rollout history ds/agent", "rollout history ds/agent --revision=2",
                     "rollout undo ds/agent --to-revision=3",
                     "rollout undo ds/agent --dry-run=client"):
            expected, actual = await asyncio.to_thread(clis.compare, *case.split(), "-n",
                                                       namespace)
            assert_same(expected, actual)


async def roll_out_three_templates_keeping_one_old_revision(
        api_client: Client, namespace: str, run_id: str, node: str) -> None:
    """Four templates in turn, each rolled out, with revisionHistoryLimit 1: what stays is
    revision 4 (the current template) and revision 3 (the one before it), nothing else."""
    daemonsets = api_client.resource("daemonsets", "apps")
    body = daemon_set(run_id)
    body["spec"]["revisionHistoryLimit"] = 1
    async with FakeKubelet(api_client, namespace):
        await daemonsets.create(body, namespace)
        for generation, image in (("2", "busybox:1.35"), ("3", "busybox:1.37"),
                                  ("4", "busybox:1.38")):
            await daemonsets.patch("agent", {"spec": {"template": {"spec": {"containers": [
                {"name": "agent", "image": image}]}}}}, namespace)
            await wait_for_ready_pods_on(api_client, namespace, [node], generation=generation)

        async def trimmed() -> bool:
            listed = await api_client.resource("controllerrevisions", "apps").list(namespace)
            return sorted((r["revision"], history.template_of(r)["spec"]["containers"][0][
                "image"]) for r in listed["items"]) == [(3, "busybox:1.37"), (4, "busybox:1.38")]
        await eventually(trimmed, what="revisions 3 and 4 only, of the last two templates")


async def test_revision_history_limit_keeps_the_newest_old_revisions(
        api_client: Client, namespace: str, run_id: str, make_node: MakeNode,
        daemonset_controller: None) -> None:
    await roll_out_three_templates_keeping_one_old_revision(api_client, namespace, run_id,
                                                            await make_node())


async def test_a_revision_cache_behind_the_controllers_writes_never_repeats_a_number(
        api_client: Client, namespace: str, run_id: str, make_node: MakeNode,
        daemonset_controller_with_lagging_revisions: None) -> None:
    """New revisions are numbered one past the highest cached one: a sync must wait for
    the cache to hold the revision it wrote last. Without that wait, with this lag, two
    templates took one number (the first two both took 1), which never heals once the
    template moves on, and the limit then kept the wrong revision."""
    await roll_out_three_templates_keeping_one_old_revision(api_client, namespace, run_id,
                                                            await make_node())
