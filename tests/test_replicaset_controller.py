"""The ReplicaSet controller against a real API server, with FakeKubelet playing the kubelet.

The end-to-end tests watch the namespace's pods themselves and check their invariant at
every watch event, not only at the end. The first tests are plain functions of
replicaset.py: which pods a scale-down deletes, and the status it computes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import pytest

from minikube_py.api import Obj
from minikube_py.api.meta import rfc3339
from minikube_py.client.rest import Client
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.replicaset import (
    POD_DELETION_COST,
    ReplicaSetController,
    calculate_status,
    pods_to_delete,
)
from tests.api_helpers import eventually, retry_on_conflict_async
from tests.fake_kubelet import FakeKubelet, running_status

RunControllers = Callable[..., Awaitable[ControllerManager]]
NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


# -- deletion order and status (pure functions) ----------------------------------------------


def make_pod(name: str, *, node: str = "node-a", phase: str = "Running", ready: bool = True,
             ready_for: float = 3600, age: float = 7200, restarts: int = 0,
             cost: int | None = None) -> Obj:
    conditions = [{"type": "Ready", "status": "True" if ready else "False",
                   "lastTransitionTime": rfc3339(NOW - timedelta(seconds=ready_for))}]
    annotations = {POD_DELETION_COST: str(cost)} if cost is not None else {}
    return {"metadata": {"name": name, "uid": f"uid-{name}", "labels": {"app": "web"},
                         "annotations": annotations,
                         "creationTimestamp": rfc3339(NOW - timedelta(seconds=age))},
            "spec": {"nodeName": node} if node else {},
            "status": {"phase": phase, "conditions": conditions,
                       "containerStatuses": [{"name": "c", "restartCount": restarts}]}}


@pytest.mark.parametrize(("doomed", "kept", "rule"), [
    (make_pod("a", node=""), make_pod("b"), "unassigned before assigned"),
    (make_pod("a", phase="Pending", ready=False), make_pod("b", ready=False),
     "Pending before Running"),
    (make_pod("a", phase="Unknown"), make_pod("b"), "Unknown before Running"),
    (make_pod("a", ready=False), make_pod("b"), "not ready before ready"),
    (make_pod("a", cost=-5), make_pod("b", cost=10), "lower deletion cost first"),
    (make_pod("a", node="crowded"), make_pod("b", node="quiet"), "doubled-up node first"),
    (make_pod("a", ready_for=60), make_pod("b", ready_for=86400), "ready for less time first"),
    (make_pod("a", restarts=4), make_pod("b", restarts=0), "more restarts first"),
    (make_pod("a", age=60), make_pod("b", age=86400), "newer first"),
])
def test_scale_down_deletes_the_least_valuable_pod(doomed: Obj, kept: Obj, rule: str) -> None:
    related = [doomed, kept, make_pod("x", node="crowded"), make_pod("y", node="crowded")]
    for pods in ([doomed, kept], [kept, doomed]):
        assert pods_to_delete(pods, related, 1, NOW) == [doomed], rule


def test_scale_down_to_zero_deletes_every_pod_unsorted() -> None:
    pods = [make_pod("a"), make_pod("b", node="")]
    assert pods_to_delete(pods, pods, 2, NOW) == pods


def test_status_counts_ready_available_and_fully_labeled_pods() -> None:
    rs = {"metadata": {"generation": 2},
          "spec": {"replicas": 4, "minReadySeconds": 600,
                   "template": {"metadata": {"labels": {"app": "web", "tier": "fe"}}}},
          "status": {}}
    pods = [make_pod("old-ready", ready_for=3600), make_pod("new-ready", ready_for=10),
            make_pod("not-ready", ready=False)]
    pods[0]["metadata"]["labels"]["tier"] = "fe"
    status = calculate_status(rs, pods, [make_pod("going")], None, NOW)
    assert (status["replicas"], status["fullyLabeledReplicas"], status["readyReplicas"],
            status["availableReplicas"], status["terminatingReplicas"]) == (3, 1, 2, 1, 1)
    assert status["conditions"] == []


def test_status_reports_and_clears_replica_failure() -> None:
    rs = {"metadata": {"generation": 1}, "spec": {"replicas": 2, "template": {}}, "status": {}}
    failed = calculate_status(rs, [], [], RuntimeError("quota exceeded"), NOW)
    assert failed["conditions"] == [{"type": "ReplicaFailure", "status": "True",
                                     "lastTransitionTime": rfc3339(NOW),
                                     "reason": "FailedCreate", "message": "quota exceeded"}]
    rs["status"] = failed
    assert calculate_status(rs, [], [], None, NOW)["conditions"] == []


# -- helpers for the end-to-end tests ----------------------------------------------------------


def replica_set(name: str, replicas: int, *, app: str | None = None, image: str = "busybox:1.36",
                min_ready_seconds: int = 0) -> Obj:
    labels = {"app": app or name}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "minReadySeconds": min_ready_seconds,
                     "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": image}]}}}}


def bare_pod(name: str, labels: dict[str, str], node: str = "") -> Obj:
    spec: Obj = {"containers": [{"name": "app", "image": "busybox:1.36"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": spec}


def live(pods: list[Obj]) -> list[Obj]:
    return [pod for pod in pods if not pod["metadata"].get("deletionTimestamp")]


def owned_by(pods: list[Obj], owner: Obj) -> list[Obj]:
    uid = owner["metadata"]["uid"]
    return [pod for pod in pods if any(ref.get("controller") and ref["uid"] == uid
                                       for ref in pod["metadata"].get("ownerReferences") or [])]


async def list_pods(api_client: Client, namespace: str) -> list[Obj]:
    return (await api_client.resource("pods").list(namespace))["items"]


async def events_for(api_client: Client, namespace: str, name: str) -> list[Obj]:
    events = (await api_client.resource("events").list(namespace))["items"]
    return [e for e in events if e["involvedObject"]["name"] == name]


async def stop_watcher(task: asyncio.Task[None]) -> None:
    """Cancel a watcher task, re-raising whatever it died of before (a dead watcher
    would otherwise leave no violations, and the test would pass without checking)."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


@asynccontextmanager
async def watching_pods(api_client: Client, namespace: str,
                        check: Callable[[dict[str, Obj]], str | None]) -> AsyncIterator[list[str]]:
    """Watch the namespace's pods; after every event run `check` on all pods known then.
    Yields the list of violations it reported (the test asserts it stays empty)."""
    pods_client = api_client.resource("pods")
    listing = await pods_client.list(namespace)
    pods = {pod["metadata"]["name"]: pod for pod in listing["items"]}
    violations: list[str] = []

    async def follow() -> None:
        async for kind, pod in pods_client.watch(
                namespace, resource_version=listing["metadata"]["resourceVersion"]):
            if kind == "DELETED":
                pods.pop(pod["metadata"]["name"], None)
            elif kind in ("ADDED", "MODIFIED"):
                pods[pod["metadata"]["name"]] = pod
            problem = check(pods)
            if problem:
                violations.append(problem)
        raise AssertionError("the pod watch ended while the test was still checking")

    task = asyncio.create_task(follow())
    try:
        yield violations
    finally:
        await stop_watcher(task)


async def set_replicas(api_client: Client, namespace: str, name: str, count: int) -> None:
    await api_client.resource("replicasets", "apps").patch(
        name, {"spec": {"replicas": count}}, namespace)


async def rs_status(api_client: Client, namespace: str, name: str) -> Obj:
    return (await api_client.resource("replicasets", "apps").get(name, namespace))


# -- end to end --------------------------------------------------------------------------------


async def test_replica_set_scales_up_and_down_to_exact_counts(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await run_controllers(ReplicaSetController)
    rs_client = api_client.resource("replicasets", "apps")
    async with FakeKubelet(api_client, namespace), watching_pods(
            api_client, namespace,
            lambda pods: f"{len(pods)} pods > 5" if len(pods) > 5 else None) as violations:
        rs = await rs_client.create(replica_set("web", 3), namespace)
        for count in (3, 5, 1):
            await set_replicas(api_client, namespace, "web", count)

            async def settled(count: int = count) -> bool:
                status = (await rs_status(api_client, namespace, "web")).get("status") or {}
                pods = live(await list_pods(api_client, namespace))
                return (len(owned_by(pods, rs)) == count and status.get("replicas") == count
                        and status.get("readyReplicas", 0) == count)
            await eventually(settled, timeout=15, what=f"{count} ready pods")
    assert violations == []
    reasons = {e["reason"] for e in await events_for(api_client, namespace, "web")}
    assert {"SuccessfulCreate", "SuccessfulDelete"} <= reasons


async def test_slow_cache_never_causes_double_creation(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    """The controller's pod informer lags 1 s behind; syncs forced meanwhile must wait."""
    manager = await run_controllers(ReplicaSetController)
    informer = manager.controllers[0].informer("pods")
    loop = asyncio.get_running_loop()
    for method in ("add", "update", "delete"):
        original = getattr(informer, method)
        setattr(informer, method,
                lambda obj, original=original: loop.call_later(1.0, original, obj))
    rs_client = api_client.resource("replicasets", "apps")
    async with watching_pods(api_client, namespace,
                             lambda pods: f"{len(pods)} pods" if len(pods) > 3 else None
                             ) as violations:
        await rs_client.create(replica_set("web", 3), namespace)
        for poke in range(6):  # every update of the ReplicaSet queues another sync
            await rs_client.patch("web", {"metadata": {"annotations": {"poke": str(poke)}}},
                                  namespace)
            await asyncio.sleep(0.1)

        async def three() -> bool:
            return len(await list_pods(api_client, namespace)) == 3
        await eventually(three, what="3 pods")

        async def counted_three() -> bool:
            """A sync that saw the 3 pods in its (lagging) cache wrote the status; the
            syncs of one ReplicaSet never overlap, so every sync before it is done and
            every one after it sees the 3 too: nothing more will be created."""
            rs = await rs_client.get("web", namespace)
            status = rs.get("status") or {}
            return (status.get("replicas") == 3
                    and status.get("observedGeneration") == rs["metadata"]["generation"])

        await eventually(counted_three, what="the status counting 3 pods")
    assert violations == []
    assert len(await list_pods(api_client, namespace)) == 3


async def test_replica_set_adopts_orphans_and_releases_pods_whose_labels_change(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    pods_client = api_client.resource("pods")
    await pods_client.create(bare_pod("orphan", {"app": "web"}), namespace)
    await run_controllers(ReplicaSetController)
    rs = await api_client.resource("replicasets", "apps").create(replica_set("web", 2), namespace)

    async def adopted() -> list[Obj] | None:
        pods = owned_by(await list_pods(api_client, namespace), rs)
        return pods if len(pods) == 2 else None
    pods = await eventually(adopted, what="2 owned pods")
    assert "orphan" in {pod["metadata"]["name"] for pod in pods}
    assert len(await list_pods(api_client, namespace)) == 2  # only one was created

    await pods_client.patch("orphan", {"metadata": {"labels": {"app": "other"}}}, namespace)

    async def released() -> bool:
        pods = await list_pods(api_client, namespace)
        orphan = next(pod for pod in pods if pod["metadata"]["name"] == "orphan")
        return not orphan["metadata"].get("ownerReferences") and len(owned_by(pods, rs)) == 2
    await eventually(released, what="the relabelled pod released and replaced")


async def test_scale_down_deletes_unassigned_and_not_ready_pods_first(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    pods_client = api_client.resource("pods")
    labels = {"app": "web"}
    for name, node, ready in (("assigned-ready", "node-a", True),
                              ("unassigned", "", False),
                              ("assigned-not-ready", "node-a", False)):
        pod = await pods_client.create(bare_pod(name, labels, node), namespace)
        if node:
            pod["status"] = running_status(pod, ready=ready)
            await pods_client.update_status(pod)
    await run_controllers(ReplicaSetController)
    await api_client.resource("replicasets", "apps").create(replica_set("web", 1), namespace)

    async def scaled_down() -> Obj | None:
        pods = live(await list_pods(api_client, namespace))
        status = (await rs_status(api_client, namespace, "web")).get("status") or {}
        done = ([pod["metadata"]["name"] for pod in pods] == ["assigned-ready"]
                and status.get("terminatingReplicas") == 1)
        return status if done else None
    status = await eventually(scaled_down, what="only the assigned ready pod left")
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"],
            status["fullyLabeledReplicas"]) == (1, 1, 1, 1)
    names = {pod["metadata"]["name"] for pod in await list_pods(api_client, namespace)}
    assert names == {"assigned-ready", "assigned-not-ready"}  # the latter terminating

    async def both_deletions_recorded() -> bool:
        # the event recorder posts in the background, as upstream's broadcaster does: the
        # pods can be gone before their events are written
        messages = {e["message"] for e in await events_for(api_client, namespace, "web")}
        return {"Deleted pod: unassigned", "Deleted pod: assigned-not-ready"} <= messages
    await eventually(both_deletions_recorded, what="a SuccessfulDelete event per deleted pod")


async def test_available_replicas_wait_for_min_ready_seconds(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await run_controllers(ReplicaSetController)
    async with FakeKubelet(api_client, namespace):
        rs = await api_client.resource("replicasets", "apps").create(
            replica_set("web", 2, min_ready_seconds=2), namespace)

        async def ready() -> Obj | None:
            status = (await rs_status(api_client, namespace, "web")).get("status") or {}
            return status if status.get("readyReplicas") == 2 else None
        status = await eventually(ready, what="2 ready replicas")
        assert status.get("availableReplicas", 0) == 0
        assert status["observedGeneration"] == rs["metadata"]["generation"]

        async def available() -> bool:
            status = (await rs_status(api_client, namespace, "web")).get("status") or {}
            return status.get("availableReplicas") == 2
        # Nothing changes in the cluster meanwhile: the controller requeued itself.
        await eventually(available, timeout=6, what="2 available replicas")


async def test_failed_creates_are_reported_while_other_replica_sets_are_served(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await run_controllers(ReplicaSetController)
    rs_client = api_client.resource("replicasets", "apps")
    async with FakeKubelet(api_client, namespace):
        # The API accepts the template, but no pod can be made from it (pods must not have
        # whitespace around an image name; templates are only warned about it).
        await rs_client.create(replica_set("broken", 2, image="busybox:1.36 "), namespace)
        good = await rs_client.create(replica_set("good", 2), namespace)

        async def failure_reported() -> Obj | None:
            status = (await rs_status(api_client, namespace, "broken")).get("status") or {}
            conditions = status.get("conditions") or []
            return conditions[0] if conditions else None
        condition = await eventually(failure_reported, what="a ReplicaFailure condition")
        assert (condition["type"], condition["status"], condition["reason"]) == (
            "ReplicaFailure", "True", "FailedCreate")

        async def warned() -> list[Obj]:
            return [e for e in await events_for(api_client, namespace, "broken")
                    if e["reason"] == "FailedCreate"]
        event = (await eventually(warned, what="a FailedCreate event"))[0]
        assert event["type"] == "Warning"
        assert event["message"].startswith("Error creating: ")
        assert "must not have leading or trailing whitespace" in event["message"]

        async def good_served() -> bool:
            status = (await rs_status(api_client, namespace, "good")).get("status") or {}
            return status.get("readyReplicas") == 2
        await eventually(good_served, what="the good ReplicaSet's pods ready")
    pods = await list_pods(api_client, namespace)
    assert len(owned_by(pods, good)) == len(pods) == 2

    async def fix_image() -> Obj:  # the controller writes the status meanwhile
        broken = await rs_client.get("broken", namespace)
        broken["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:1.36"
        return await rs_client.update(broken)
    await retry_on_conflict_async(fix_image)

    async def recovered() -> bool:
        status = (await rs_status(api_client, namespace, "broken")).get("status") or {}
        return status.get("replicas") == 2 and not status.get("conditions")
    await eventually(recovered, timeout=15, what="the fixed ReplicaSet's pods, failure cleared")
