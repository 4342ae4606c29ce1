"""The StatefulSet controller against a real API server: ordered, stable pods and claims.

FakeKubelet plays the kubelet (pods become Running, and Ready unless told otherwise).
Ordering promises are checked at every watch event, not just at the end: the watch
stream is the order in which the API server saw the writes.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api.podutil import is_pod_ready
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client, ResourceClient
from minikube_py.controllers import history
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.statefulset import StatefulSetController
from minikube_py.controllers.statefulset_util import (
    POD_INDEX_LABEL,
    POD_NAME_LABEL,
    REVISION_LABEL,
    claim_owner_references,
    is_claim_owner_up_to_date,
)
from tests.api_helpers import eventually
from tests.fake_kubelet import FakeKubelet
from tests.test_mkctl import Clis, assert_same

RunControllers = Callable[..., Awaitable[ControllerManager]]
Check = Callable[[str, Obj, dict[str, Obj]], bool]


@pytest.fixture
async def statefulset_controller(api_client: Client, namespace: str,
                                 run_controllers: RunControllers) -> AsyncIterator[None]:
    """Run the StatefulSet controller; then stop it and leave no pod or claim behind (a
    later test's scheduler would otherwise find the pods)."""
    manager = await run_controllers(StatefulSetController)
    yield
    await manager.stop()
    await api_client.resource("statefulsets", "apps").delete_collection(namespace)
    await api_client.resource("pods").delete_collection(namespace)
    await api_client.resource("persistentvolumeclaims").delete_collection(namespace)


def stateful_set(*, replicas: int = 3, policy: str = "OrderedReady", claims: bool = False,
                 partition: int | None = None, retention: Obj | None = None) -> Obj:
    spec: Obj = {
        "replicas": replicas, "serviceName": "web", "podManagementPolicy": policy,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}},
    }
    if claims:
        spec["volumeClaimTemplates"] = [{"metadata": {"name": "www"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    if partition is not None:
        spec["updateStrategy"] = {"type": "RollingUpdate",
                                  "rollingUpdate": {"partition": partition}}
    if retention is not None:
        spec["persistentVolumeClaimRetentionPolicy"] = retention
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
            "spec": spec}


def running_and_ready(pod: Obj | None) -> bool:
    return pod is not None and pod.get("status", {}).get("phase") == "Running" and (
        is_pod_ready(pod))


def gone_or_going(pod: Obj | None) -> bool:
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


async def follow_pods(pods: ResourceClient, namespace: str, check: Check
                      ) -> asyncio.Task[None]:
    """Watch the namespace's pods from now on; `check(type, pod, all pods)` runs at every
    event, after the local view is updated, and ends the watch by returning True."""
    listed = await pods.list(namespace)
    view = {pod["metadata"]["name"]: pod for pod in listed["items"]}

    async def follow() -> None:
        async for kind, pod in pods.watch(namespace,
                                          resource_version=listed["metadata"]["resourceVersion"]):
            if kind == "BOOKMARK":
                continue
            if kind == "DELETED":
                view.pop(pod["metadata"]["name"], None)
            else:
                view[pod["metadata"]["name"]] = pod
            if check(kind, pod, view):
                return
    return asyncio.create_task(follow())


class DeletionOrder:
    """Records the order in which pods start to go away (deletionTimestamp or DELETED)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def saw(self, kind: str, pod: Obj) -> None:
        name = pod["metadata"]["name"]
        if (kind == "DELETED" or pod["metadata"].get("deletionTimestamp")) and (
                name not in self.names):
            self.names.append(name)


async def wait_for_status(sets: ResourceClient, namespace: str, **wanted: Any) -> Obj:
    async def matches() -> Obj | None:
        status = (await sets.get("web", namespace)).get("status", {})
        return status if all(status.get(k) == v for k, v in wanted.items()) else None
    return await eventually(matches, timeout=15, what=f"status {wanted}")


async def event_messages(client: Client, namespace: str, reason: str) -> list[str]:
    events = await client.resource("events").list(namespace)
    return [e["message"] for e in events["items"] if e["reason"] == reason]


_SET = {"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "ns", "uid": "set-uid"},
        "spec": {"replicas": 2, "volumeClaimTemplates": [{"metadata": {"name": "www"}}]}}


@pytest.mark.parametrize(("when_deleted", "when_scaled", "ordinal", "owners"), [
    ("Retain", "Retain", 0, []),
    ("Retain", "Retain", 5, []),
    ("Delete", "Retain", 0, ["StatefulSet"]),
    ("Delete", "Retain", 5, ["StatefulSet"]),
    ("Retain", "Delete", 0, []),
    ("Retain", "Delete", 5, ["Pod"]),
    ("Delete", "Delete", 0, ["StatefulSet"]),
    ("Delete", "Delete", 5, ["Pod"]),
])
def test_claim_owners_follow_the_retention_policy(when_deleted: str, when_scaled: str,
                                                  ordinal: int, owners: list[str]) -> None:
    """The claim of an in-range pod (ordinal 0) or a scaled-down one (ordinal 5 of 2)."""
    sts = {**_SET, "spec": {**_SET["spec"], "persistentVolumeClaimRetentionPolicy": {
        "whenDeleted": when_deleted, "whenScaled": when_scaled}}}
    pod = {"metadata": {"name": f"web-{ordinal}", "uid": "pod-uid"}}
    pvc = {"metadata": {"name": f"www-web-{ordinal}", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "x"}]}}
    references = claim_owner_references(pvc, sts, pod)
    assert [r["kind"] for r in references] == ["ConfigMap", *owners]
    assert all(r["controller"] for r in references[1:])
    assert is_claim_owner_up_to_date({"metadata": {**pvc["metadata"],
                                                   "ownerReferences": references}}, sts, pod)
    assert is_claim_owner_up_to_date(pvc, sts, pod) == (not owners)


def test_revision_name_changes_with_the_template_and_the_collision_count() -> None:
    sts = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}
    changed = copy.deepcopy(sts)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    data, other = history.snapshot(sts), history.snapshot(changed)
    assert history.hash_data(data, 0) == history.hash_data(copy.deepcopy(data), 0)
    assert len({history.hash_data(data, 0), history.hash_data(other, 0),
                history.hash_data(data, 1)}) == 3
    assert set(history.hash_data(data, None)) <= set("bcdfghjklmnpqrstvwxz2456789")


async def test_ordered_ready_creates_in_order_and_scales_down_in_reverse(
        api_client: Client, namespace: str, statefulset_controller: None) -> None:
    pods, sets = api_client.resource("pods"), api_client.resource("statefulsets", "apps")
    async with FakeKubelet(api_client, namespace, delay=0.05):
        created: list[str] = []

        def creation_in_order(kind: str, pod: Obj, view: dict[str, Obj]) -> bool:
            name = pod["metadata"]["name"]
            if kind == "ADDED":
                ordinal = int(name.rsplit("-", 1)[1])
                if ordinal > 0:
                    predecessor = view.get(f"web-{ordinal - 1}")
                    assert running_and_ready(predecessor), f"{name} created before it was ready"
                created.append(name)
            return all(running_and_ready(view.get(f"web-{i}")) for i in range(3))

        watcher = await follow_pods(pods, namespace, creation_in_order)
        await sets.create(stateful_set(replicas=3), namespace)
        async with asyncio.timeout(20):
            await watcher
        assert created == ["web-0", "web-1", "web-2"]

        order = DeletionOrder()

        def deletion_in_reverse(kind: str, pod: Obj, view: dict[str, Obj]) -> bool:
            order.saw(kind, pod)
            if gone_or_going(view.get("web-1")):
                assert "web-2" not in view, "web-1 deleted while web-2 still existed"
            return "web-1" not in view and "web-2" not in view

        watcher = await follow_pods(pods, namespace, deletion_in_reverse)
        await sets.patch("web", {"spec": {"replicas": 1}}, namespace)
        async with asyncio.timeout(20):
            await watcher
        assert order.names == ["web-2", "web-1"]

    status = await wait_for_status(sets, namespace, replicas=1, readyReplicas=1,
                                   availableReplicas=1, observedGeneration=2)
    assert status["currentRevision"] == status["updateRevision"]
    assert status["currentReplicas"] == status["updatedReplicas"] == 1
    assert "create Pod web-0 in StatefulSet web successful" in await event_messages(
        api_client, namespace, "SuccessfulCreate")
    assert await event_messages(api_client, namespace, "SuccessfulDelete") == [
        "delete Pod web-2 in StatefulSet web successful",
        "delete Pod web-1 in StatefulSet web successful"]


async def test_parallel_creates_and_deletes_all_pods_without_waiting_for_readiness(
        api_client: Client, namespace: str, statefulset_controller: None) -> None:
    pods, sets = api_client.resource("pods"), api_client.resource("statefulsets", "apps")
    async with FakeKubelet(api_client, namespace, ready=False):
        await sets.create(stateful_set(replicas=3, policy="Parallel"), namespace)

        async def all_running() -> bool:
            items = (await pods.list(namespace))["items"]
            return sorted(p["metadata"]["name"] for p in items
                          if p["status"].get("phase") == "Running") == ["web-0", "web-1", "web-2"]
        await eventually(all_running, what="three running (never ready) pods")
        await wait_for_status(sets, namespace, replicas=3, readyReplicas=0)

        await sets.patch("web", {"spec": {"replicas": 0}}, namespace)

        async def none_left() -> bool:
            return not (await pods.list(namespace))["items"]
        await eventually(none_left, what="every pod deleted")


async def test_pods_get_stable_identity_and_claims_from_templates(
        api_client: Client, namespace: str, statefulset_controller: None) -> None:
    pods, sets = api_client.resource("pods"), api_client.resource("statefulsets", "apps")
    claims = api_client.resource("persistentvolumeclaims")
    async with FakeKubelet(api_client, namespace):
        await sets.create(stateful_set(replicas=2, claims=True), namespace)
        status = await wait_for_status(sets, namespace, readyReplicas=2)
        for ordinal in (0, 1):
            pod = await pods.get(f"web-{ordinal}", namespace)
            assert pod["spec"]["hostname"] == f"web-{ordinal}"
            assert pod["spec"]["subdomain"] == "web"
            labels = pod["metadata"]["labels"]
            assert labels[POD_NAME_LABEL] == f"web-{ordinal}"
            assert labels[POD_INDEX_LABEL] == str(ordinal)
            assert labels[REVISION_LABEL] == status["updateRevision"]
            assert status["updateRevision"].startswith("web-")
            assert {"name": "www", "persistentVolumeClaim": {"claimName": f"www-web-{ordinal}"}
                    } in pod["spec"]["volumes"]
            pvc = await claims.get(f"www-web-{ordinal}", namespace)
            assert pvc["metadata"]["labels"] == {"app": "web"}
            assert pvc["spec"]["resources"]["requests"]["storage"] == "1Gi"
            assert not pvc["metadata"].get("ownerReferences")  # Retain: the claim outlives all
        assert sorted(await event_messages(api_client, namespace, "SuccessfulCreate")) == [
            "create Claim www-web-0 Pod web-0 in StatefulSet web success",
            "create Claim www-web-1 Pod web-1 in StatefulSet web success",
            "create Pod web-0 in StatefulSet web successful",
            "create Pod web-1 in StatefulSet web successful"]

        first = await pods.get("web-0", namespace)
        claim_uid = (await claims.get("www-web-0", namespace))["metadata"]["uid"]
        await pods.delete("web-0", namespace)

        async def replaced() -> Obj | None:
            pod = (await pods.list(namespace, field_selector="metadata.name=web-0"))["items"]
            fresh = pod[0] if pod else None
            ok = fresh and fresh["metadata"]["uid"] != first["metadata"]["uid"] and (
                running_and_ready(fresh))
            return fresh if ok else None
        again = await eventually(replaced, what="web-0 to come back")
    assert again["spec"]["volumes"] == first["spec"]["volumes"]
    assert (await claims.get("www-web-0", namespace))["metadata"]["uid"] == claim_uid


async def test_rolling_update_with_partition_replaces_only_high_ordinals_one_at_a_time(
        api_client: Client, namespace: str, statefulset_controller: None) -> None:
    pods, sets = api_client.resource("pods"), api_client.resource("statefulsets", "apps")
    async with FakeKubelet(api_client, namespace, delay=0.05):
        await sets.create(stateful_set(replicas=3, partition=1), namespace)
        old = await wait_for_status(sets, namespace, readyReplicas=3)
        web_0 = await pods.get("web-0", namespace)
        order = DeletionOrder()
        new_revision: list[str] = []

        def one_at_a_time(kind: str, pod: Obj, view: dict[str, Obj]) -> bool:
            order.saw(kind, pod)
            down = sum(1 for i in range(3) if not running_and_ready(view.get(f"web-{i}")))
            assert down <= 1, f"{down} pods unavailable at once"
            updated = [name for name in ("web-1", "web-2") if running_and_ready(view.get(name))
                       and view[name]["metadata"]["labels"][REVISION_LABEL] != old[
                           "updateRevision"]]
            new_revision[:] = [view[name]["metadata"]["labels"][REVISION_LABEL]
                               for name in updated]
            return len(updated) == 2

        watcher = await follow_pods(pods, namespace, one_at_a_time)
        await sets.patch("web", {"spec": {"template": {"spec": {"containers": [
            {"name": "nginx", "image": "nginx:1.28"}]}}}}, namespace)
        async with asyncio.timeout(20):
            await watcher
        assert order.names == ["web-2", "web-1"]
        status = await wait_for_status(sets, namespace, updatedReplicas=2, currentReplicas=1,
                                       readyReplicas=3)
        assert status["currentRevision"] == old["updateRevision"]
        assert new_revision == [status["updateRevision"]] * 2
        unchanged = await pods.get("web-0", namespace)
        assert unchanged["metadata"]["uid"] == web_0["metadata"]["uid"]
        assert unchanged["spec"]["containers"][0]["image"] == "nginx:1.27"

        await sets.patch("web", {"spec": {"updateStrategy": {"rollingUpdate": {
            "partition": 0}}}}, namespace)
        done = await wait_for_status(sets, namespace, updatedReplicas=3, currentReplicas=3,
                                     readyReplicas=3)
    assert done["currentRevision"] == done["updateRevision"] == status["updateRevision"]
    assert (await pods.get("web-0", namespace))["spec"]["containers"][0]["image"] == "nginx:1.28"


async def test_retention_policy_gives_claims_to_the_set_or_to_scaled_down_pods(
        api_client: Client, namespace: str, statefulset_controller: None) -> None:
    pods, sets = api_client.resource("pods"), api_client.resource("statefulsets", "apps")
    claims = api_client.resource("persistentvolumeclaims")
    retention = {"whenDeleted": "Delete", "whenScaled": "Delete"}
    async with FakeKubelet(api_client, namespace):
        created = await sets.create(stateful_set(replicas=2, claims=True, retention=retention),
                                    namespace)
        await wait_for_status(sets, namespace, readyReplicas=2)
        web_1 = await pods.get("web-1", namespace)

        async def owners(claim_name: str) -> list[tuple[str, str, str]] | None:
            pvc = await claims.get(claim_name, namespace)
            return [(r["kind"], r["name"], r["uid"])
                    for r in pvc["metadata"].get("ownerReferences") or []] or None

        async def owned_by_set() -> bool:
            return await owners("www-web-1") == [
                ("StatefulSet", "web", created["metadata"]["uid"])]
        await eventually(owned_by_set, what="www-web-1 owned by the StatefulSet")

        await sets.patch("web", {"spec": {"replicas": 1}}, namespace)

        async def owned_by_pod() -> bool:
            return await owners("www-web-1") == [("Pod", "web-1", web_1["metadata"]["uid"])]
        await eventually(owned_by_pod, what="www-web-1 handed to its scaled-down pod")
    assert await owners("www-web-0") == [("StatefulSet", "web", created["metadata"]["uid"])]


async def revisions_of(api_client: Client, namespace: str) -> list[tuple[int, str]]:
    """(revision, image) of each ControllerRevision in the namespace, by number."""
    listed = await api_client.resource("controllerrevisions", "apps").list(namespace)
    return sorted((r["revision"], history.template_of(r)["spec"]["containers"][0]["image"])
                  for r in listed["items"])


async def test_a_pod_deleted_below_the_partition_comes_back_at_the_current_revision(
        api_client: Client, namespace: str, statefulset_controller: None) -> None:
    """The current revision's template is kept, so a pod the rollout has not reached yet
    is recreated as it was, not at the new template."""
    pods, sets = api_client.resource("pods"), api_client.resource("statefulsets", "apps")
    async with FakeKubelet(api_client, namespace, delay=0.05):
        await sets.create(stateful_set(replicas=2, partition=1), namespace)
        old = await wait_for_status(sets, namespace, readyReplicas=2)
        await sets.patch("web", {"spec": {"template": {"spec": {"containers": [
            {"name": "nginx", "image": "nginx:1.28"}]}}}}, namespace)
        status = await wait_for_status(sets, namespace, updatedReplicas=1, currentReplicas=1,
                                       readyReplicas=2)
        web_0 = await pods.get("web-0", namespace)
        await pods.delete("web-0", namespace)

        async def recreated() -> Obj | None:
            try:
                pod = await pods.get("web-0", namespace)
            except NotFound:  # deleted, not yet created again
                return None
            new = pod["metadata"]["uid"] != web_0["metadata"]["uid"]
            return pod if new and running_and_ready(pod) else None
        pod = await eventually(recreated, timeout=15, what="web-0 recreated")
    assert pod["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert pod["metadata"]["labels"][REVISION_LABEL] == status["currentRevision"] == old[
        "updateRevision"]
    assert await revisions_of(api_client, namespace) == [(1, "nginx:1.27"), (2, "nginx:1.28")]


async def rolled_out_to(api_client: Client, namespace: str, image: str) -> None:
    """Until the one-replica set "web" runs `image` everywhere and its status says so."""
    sets = api_client.resource("statefulsets", "apps")

    async def done() -> bool:
        sts = await sets.get("web", namespace)
        status = sts.get("status") or {}
        return (sts["spec"]["template"]["spec"]["containers"][0]["image"] == image
                and status.get("observedGeneration") == sts["metadata"]["generation"]
                and status.get("updatedReplicas") == status.get("readyReplicas") == 1
                and status.get("currentRevision") == status.get("updateRevision"))
    await eventually(done, timeout=15, what=f"the rollout to {image}")


async def set_image(api_client: Client, namespace: str, image: str) -> None:
    """Change the template of "web" to `image` and wait until it is rolled out."""
    await api_client.resource("statefulsets", "apps").patch(
        "web", {"spec": {"template": {"spec": {"containers": [
            {"name": "nginx", "image": image}]}}}}, namespace)
    await rolled_out_to(api_client, namespace, image)


@pytest.fixture
async def statefulset_controller_with_lagging_revisions(
        lagging_revision_watch: None, statefulset_controller: None) -> None:
    """The StatefulSet controller, started once its ControllerRevision watch lags."""


async def test_a_revision_cache_behind_the_controllers_writes_never_repeats_a_number(
        api_client: Client, namespace: str,
        statefulset_controller_with_lagging_revisions: None) -> None:
    """New revisions are numbered one past the highest cached one: a sync must wait for
    the cache to hold the revision it wrote last, or two templates get one number."""
    body = stateful_set(replicas=1)
    body["spec"]["revisionHistoryLimit"] = 1
    async with FakeKubelet(api_client, namespace, delay=0.05):
        await api_client.resource("statefulsets", "apps").create(body, namespace)
        await rolled_out_to(api_client, namespace, "nginx:1.27")
        for image in ("nginx:1.28", "nginx:1.29", "nginx:1.30"):
            await set_image(api_client, namespace, image)

        async def trimmed() -> bool:
            return await revisions_of(api_client, namespace) == [(3, "nginx:1.29"),
                                                                 (4, "nginx:1.30")]
        await eventually(trimmed, what="revisions 3 and 4 only, of the last two templates")


async def test_revisions_are_renumbered_on_rollback_trimmed_and_read_by_kubectl(
        api_client: Client, namespace: str, statefulset_controller: None,
        kubectl: Callable[..., Any], kubeconfig: Path, tmp_path: Path) -> None:
    """... and by mkctl, which prints what kubectl prints."""
    sets = api_client.resource("statefulsets", "apps")
    body = stateful_set(replicas=1)
    body["spec"]["revisionHistoryLimit"] = 1

    async with FakeKubelet(api_client, namespace, delay=0.05):
        await sets.create(body, namespace)
        await rolled_out_to(api_client, namespace, "nginx:1.27")
        await set_image(api_client, namespace, "nginx:1.28")
        await set_image(api_client, namespace, "nginx:1.27")  # back: revision 1 becomes 3
        assert await revisions_of(api_client, namespace) == [(2, "nginx:1.28"),
                                                             (3, "nginx:1.27")]
        # 4; of the old ones only the newest (3) is kept
        await set_image(api_client, namespace, "nginx:1.29")

        async def trimmed() -> bool:
            return await revisions_of(api_client, namespace) == [(3, "nginx:1.27"),
                                                                 (4, "nginx:1.29")]
        await eventually(trimmed, what="the history trimmed to one old revision")
        listed = await asyncio.to_thread(kubectl, "rollout", "history", "statefulset/web",
                                         "-n", namespace)
        assert listed.stdout.split() == ["statefulset.apps/web", "REVISION", "CHANGE-CAUSE",
                                         "3", "<none>", "4", "<none>"]
        clis = Clis(kubeconfig, tmp_path)
        for case in ("rollout history statefulset/web", "rollout history sts/web --revision=3",
                     "rollout history sts/web --revision=9",
                     "rollout undo sts/web --to-revision=9",
                     "rollout undo sts/web --dry-run=client",
                     "rollout undo sts/web --to-revision=4"):
            expected, actual = await asyncio.to_thread(clis.compare, *case.split(), "-n",
                                                       namespace)
            assert_same(expected, actual)
        undone = await asyncio.to_thread(kubectl, "rollout", "undo", "statefulset/web",
                                         "-n", namespace)
        assert undone.stdout == "statefulset.apps/web rolled back\n"
        await rolled_out_to(api_client, namespace, "nginx:1.27")
    assert await revisions_of(api_client, namespace) == [(4, "nginx:1.29"), (5, "nginx:1.27")]
