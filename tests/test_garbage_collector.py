"""The garbage collector against a real API server: cascading deletion in the background,
in the foreground and with orphaning, plus the server's side of it (which finalizers a
delete adds).

Owners and dependents are created by hand with ownerReferences (ConfigMaps owning
ConfigMaps; a Deployment owning a ReplicaSet owning a Pod), so only the garbage
collector acts on them.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.apiserver.registry.store import deletion_finalizers
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client, ResourceClient
from minikube_py.controllers.garbagecollector import GarbageCollector
from minikube_py.controllers.manager import ControllerManager
from tests.api_helpers import eventually

RunControllers = Callable[..., Awaitable[ControllerManager]]
HOLD = "example.com/hold"


# -- the server: which finalizers a delete adds (deletionFinalizersForGarbageCollection) -----


@pytest.mark.parametrize(("finalizers", "policy", "default", "expected"), [
    ([], "Orphan", "DeleteDependents", ["orphan"]),
    ([], "Foreground", "DeleteDependents", ["foregroundDeletion"]),
    ([], "Background", "DeleteDependents", []),
    ([], None, "DeleteDependents", []),
    ([], None, "OrphanDependents", ["orphan"]),  # batch/v1 Jobs
    ([HOLD, "orphan"], "Foreground", "DeleteDependents", [HOLD, "foregroundDeletion"]),
    (["foregroundDeletion"], "Background", "DeleteDependents", []),
    (["foregroundDeletion"], None, "OrphanDependents", ["foregroundDeletion"]),
    ([], "Orphan", "Unsupported", []),  # Events
])
def test_delete_sets_the_garbage_collection_finalizers(
        finalizers: list[str], policy: str | None, default: str, expected: list[str]) -> None:
    assert deletion_finalizers(finalizers, policy, default) == expected


# -- helpers ----------------------------------------------------------------------------------


def reference(owner: Obj, *, block: bool = False, controller: bool = False) -> Obj:
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"],
            "uid": meta["uid"], "blockOwnerDeletion": block, "controller": controller}


def config_map(name: str, owners: Sequence[Obj] = (), finalizers: Sequence[str] = ()) -> Obj:
    metadata: Obj = {"name": name}
    if owners:
        metadata["ownerReferences"] = list(owners)
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {}}


async def create(client: ResourceClient, namespace: str, obj: Obj) -> Obj:
    created = await client.create(obj, namespace)
    created.setdefault("apiVersion", obj["apiVersion"])
    created.setdefault("kind", obj["kind"])
    return created


async def get(client: ResourceClient, namespace: str, name: str) -> Obj | None:
    try:
        return await client.get(name, namespace)
    except NotFound:
        return None


async def wait_gone(client: ResourceClient, namespace: str, *names: str) -> None:
    async def gone() -> bool:
        return all([await get(client, namespace, name) is None for name in names])

    await eventually(gone, what=f"{', '.join(names)} deleted")


async def release(client: ResourceClient, namespace: str, name: str) -> None:
    """Remove the test's finalizer, letting a held object go."""
    await client.patch(name, {"metadata": {"finalizers": None}}, namespace)


# -- background -------------------------------------------------------------------------------


async def test_background_deletion_removes_the_whole_chain(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    cms = api_client.resource("configmaps")
    await run_controllers(GarbageCollector)
    root = await create(cms, namespace, config_map("root"))
    child = await create(cms, namespace, config_map("child", [reference(root)]))
    await create(cms, namespace, config_map("grandchild", [reference(child)]))
    unrelated = await create(cms, namespace, config_map("unrelated"))

    await cms.delete("root", namespace, propagation_policy="Background")

    await wait_gone(cms, namespace, "root", "child", "grandchild")
    assert await get(cms, namespace, "unrelated") == unrelated


async def test_dependent_with_a_live_owner_only_loses_the_dangling_reference(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    cms = api_client.resource("configmaps")
    await run_controllers(GarbageCollector)
    first = await create(cms, namespace, config_map("first"))
    second = await create(cms, namespace, config_map("second"))
    await create(cms, namespace, config_map("shared", [reference(first), reference(second)]))

    await cms.delete("first", namespace)

    async def only_second_left() -> bool:
        shared = await get(cms, namespace, "shared")
        return shared is not None and shared["metadata"].get("ownerReferences") == [
            reference(second)]

    await eventually(only_second_left, what="the reference to the deleted owner removed")


async def test_dependent_of_an_owner_that_never_existed_is_deleted(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    """A virtual owner: the collector confirms its absence with a GET, then deletes."""
    cms = api_client.resource("configmaps")
    await run_controllers(GarbageCollector)
    ghost = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "ghost", "uid": str(uuid.uuid4())}}
    await create(cms, namespace, config_map("haunted", [reference(ghost)]))

    await wait_gone(cms, namespace, "haunted")


# -- orphan -----------------------------------------------------------------------------------


async def test_orphan_deletion_keeps_dependents_and_drops_their_reference(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    cms = api_client.resource("configmaps")
    await run_controllers(GarbageCollector)
    root = await create(cms, namespace, config_map("root"))
    other = await create(cms, namespace, config_map("other"))
    await create(cms, namespace, config_map("child", [reference(root), reference(other)]))

    marked = await cms.delete("root", namespace, propagation_policy="Orphan")
    assert marked["metadata"]["finalizers"] == ["orphan"]

    await wait_gone(cms, namespace, "root")
    child = await get(cms, namespace, "child")
    assert child is not None
    assert child["metadata"]["ownerReferences"] == [reference(other)]


async def test_job_deleted_without_a_policy_orphans_its_pods(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    """batch/v1 Jobs default to OrphanDependents (the server adds `orphan`)."""
    jobs, pods = api_client.resource("jobs", "batch"), api_client.resource("pods")
    await run_controllers(GarbageCollector)
    job = await create(jobs, namespace, {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "batch"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "main", "image": "busybox"}]}}}})
    await create(pods, namespace, pod("batch-1", [reference(job, block=True, controller=True)]))

    marked = await jobs.delete("batch", namespace)
    assert marked["metadata"]["finalizers"] == ["orphan"]

    await wait_gone(jobs, namespace, "batch")
    survivor = await get(pods, namespace, "batch-1")
    assert survivor is not None
    assert not survivor["metadata"].get("ownerReferences")


# -- foreground -------------------------------------------------------------------------------


async def test_foreground_deletion_waits_for_blocking_dependents_only(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    cms = api_client.resource("configmaps")
    await run_controllers(GarbageCollector)
    root = await create(cms, namespace, config_map("root"))
    await create(cms, namespace, config_map("blocking", [reference(root, block=True)], [HOLD]))
    await create(cms, namespace, config_map("free", [reference(root)], [HOLD]))

    marked = await cms.delete("root", namespace, propagation_policy="Foreground")
    assert marked["metadata"]["finalizers"] == ["foregroundDeletion"]

    async def dependents_being_deleted() -> bool:
        found = [await get(cms, namespace, name) for name in ("blocking", "free")]
        return all(obj and obj["metadata"].get("deletionTimestamp") for obj in found)

    await eventually(dependents_being_deleted, what="both dependents deleted by the GC")
    await release(cms, namespace, "free")
    await wait_gone(cms, namespace, "free")
    waiting = await get(cms, namespace, "root")
    assert waiting is not None, "the owner went before its blocking dependent"
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]

    await release(cms, namespace, "blocking")
    await wait_gone(cms, namespace, "blocking", "root")


async def test_foreground_deletion_propagates_down_a_chain(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    """A dependent that has dependents of its own is deleted in the foreground too."""
    cms = api_client.resource("configmaps")
    await run_controllers(GarbageCollector)
    root = await create(cms, namespace, config_map("root"))
    middle = await create(cms, namespace, config_map("middle", [reference(root, block=True)]))
    await create(cms, namespace, config_map("leaf", [reference(middle, block=True)], [HOLD]))

    await cms.delete("root", namespace, propagation_policy="Foreground")

    async def middle_waits_for_leaf() -> bool:
        obj = await get(cms, namespace, "middle")
        return bool(obj and obj["metadata"].get("finalizers") == ["foregroundDeletion"])

    await eventually(middle_waits_for_leaf, what="middle deleted in the foreground")
    assert await get(cms, namespace, "root") is not None
    await release(cms, namespace, "leaf")
    await wait_gone(cms, namespace, "leaf", "middle", "root")


# -- kubectl delete --cascade ----------------------------------------------------------------


def pod(name: str, owners: list[Obj]) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "web"}, "ownerReferences": owners},
            "spec": {"containers": [{"name": "web", "image": "busybox"}]}}


def workload(kind: str, name: str, owners: Sequence[Obj] = ()) -> Obj:
    template = {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "busybox"}]}}
    metadata: Obj = {"name": name}
    if owners:
        metadata["ownerReferences"] = list(owners)
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata,
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": template}}


@pytest.mark.parametrize("cascade", ["background", "foreground", "orphan"])
async def test_kubectl_delete_cascade(
        cascade: str, api_client: Client, namespace: str, kubectl: Any,
        run_controllers: RunControllers) -> None:
    deployments = api_client.resource("deployments", "apps")
    replica_sets = api_client.resource("replicasets", "apps")
    pods = api_client.resource("pods")
    await run_controllers(GarbageCollector)
    deployment = await create(deployments, namespace, workload("Deployment", "web"))
    rs = await create(replica_sets, namespace, workload(
        "ReplicaSet", "web-5d8f", [reference(deployment, block=True, controller=True)]))
    await create(pods, namespace, pod("web-5d8f-x1", [reference(rs, block=True,
                                                                controller=True)]))

    # kubectl waits until the Deployment is gone; in a thread, so the collector can run.
    await asyncio.to_thread(kubectl, "delete", "deployment", "web", "-n", namespace,
                            f"--cascade={cascade}")

    assert await get(deployments, namespace, "web") is None
    if cascade == "orphan":
        kept_rs = await get(replica_sets, namespace, "web-5d8f")
        kept_pod = await get(pods, namespace, "web-5d8f-x1")
        assert kept_rs is not None and not kept_rs["metadata"].get("ownerReferences")
        assert kept_pod is not None
        assert kept_pod["metadata"]["ownerReferences"] == [reference(rs, block=True,
                                                                     controller=True)]
    else:
        await wait_gone(replica_sets, namespace, "web-5d8f")
        await wait_gone(pods, namespace, "web-5d8f-x1")


# -- invalid references ------------------------------------------------------------------------


async def test_owner_in_another_namespace_is_reported_and_the_dependent_deleted(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    """ownerReferences cannot cross namespaces: the owner is absent where the dependent is."""
    cms = api_client.resource("configmaps")
    elsewhere = f"test-{uuid.uuid4().hex[:8]}"
    await api_client.resource("namespaces").create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": elsewhere}})
    owner = await create(cms, elsewhere, config_map("owner"))
    dependent = await create(cms, namespace, config_map("dependent", [reference(owner)]))
    await run_controllers(GarbageCollector)

    await wait_gone(cms, namespace, "dependent")
    assert await get(cms, elsewhere, "owner") is not None

    async def warned() -> Obj | None:
        events = await api_client.resource("events").list(
            namespace, field_selector="reason=OwnerRefInvalidNamespace")
        return next((event for event in events["items"]
                     if event["involvedObject"]["uid"] == dependent["metadata"]["uid"]), None)

    event = await eventually(warned, what="an OwnerRefInvalidNamespace event")
    assert event["type"] == "Warning"
    assert event["message"] == (
        f"ownerRef [v1/ConfigMap, namespace: {namespace}, name: owner, "
        f"uid: {owner['metadata']['uid']}] does not exist in namespace {json.dumps(namespace)}")
