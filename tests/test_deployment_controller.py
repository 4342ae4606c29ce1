"""The Deployment controller (with the ReplicaSet controller) against a real API server.

FakeKubelet plays the kubelet. Rollout tests watch the namespace's pods and check the
strategy's promise at every watch event. `kubectl rollout` (undo, status, restart,
pause, resume, history) is the real kubectl 1.37, run in a thread so that the
controllers, which share the test's event loop, keep running meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api.podutil import is_pod_ready
from minikube_py.client.errors import Invalid
from minikube_py.client.rest import Client
from minikube_py.controllers.deployment import DeploymentController
from minikube_py.controllers.deployment.util import (
    MAX_REPLICAS_ANNOTATION,
    POD_TEMPLATE_HASH,
    REVISION_ANNOTATION,
    REVISION_HISTORY_ANNOTATION,
    equal_ignore_hash,
    get_proportion,
    new_rs_new_replicas,
)
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.replicaset import ReplicaSetController
from tests.api_helpers import eventually
from tests.fake_kubelet import FakeKubelet

RunControllers = Callable[..., Awaitable[ControllerManager]]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
CONTROLLERS = (ReplicaSetController, DeploymentController)


# -- pure rollout arithmetic ----------------------------------------------------------------------


def rolling(replicas: int, surge: int | str, unavailable: int | str) -> Obj:
    return {"metadata": {"generation": 1}, "status": {},
            "spec": {"replicas": replicas, "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}}}


def sized(replicas: int, max_replicas: int | None = None) -> Obj:
    annotations = {MAX_REPLICAS_ANNOTATION: str(max_replicas)} if max_replicas else {}
    return {"metadata": {"annotations": annotations}, "spec": {"replicas": replicas}}


@pytest.mark.parametrize(("deployment", "old", "new", "expected"), [
    (rolling(10, 3, 2), 10, 0, 3),        # surge 3 above 10
    (rolling(10, "25%", "25%"), 10, 0, 3),  # 25% of 10 rounds up to 3
    (rolling(10, 3, 2), 8, 3, 5),
    (rolling(10, 3, 2), 8, 5, 5),         # already at 13 = 10 + 3
    (rolling(4, 0, 1), 4, 0, 0),          # no surge: wait for old pods to go
    (rolling(4, 0, 1), 3, 0, 1),
])
def test_new_replica_set_grows_within_max_surge(deployment: Obj, old: int, new: int,
                                                expected: int) -> None:
    new_rs = sized(new)
    assert new_rs_new_replicas(deployment, [sized(old), new_rs], new_rs) == expected


def test_scaling_mid_rollout_shares_new_pods_in_proportion() -> None:
    """10 -> 20 with surge 3: the 10 extra pods of 23 split 6:4 between sizes 8 and 5."""
    d = rolling(20, 3, 2)
    old, new = sized(8, 13), sized(5, 13)
    assert get_proportion(old, d, 10, 0) == 6
    assert get_proportion(new, d, 10, 6) == 4


def test_templates_equal_ignoring_hash_label_and_null_fields() -> None:
    ours = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    sent_back = {"metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
                 "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {}}]}}
    hashed = {"metadata": {"labels": {"app": "web", POD_TEMPLATE_HASH: "abc"}},
              "spec": ours["spec"]}
    assert equal_ignore_hash(ours, sent_back)
    assert equal_ignore_hash(ours, hashed)
    other = {"metadata": ours["metadata"],
             "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    assert not equal_ignore_hash(ours, other)


# -- helpers ------------------------------------------------------------------------------------


def deployment(replicas: int = 3, image: str = "busybox:1.36", *, strategy: Obj | None = None,
               **spec: Any) -> Obj:
    labels = {"app": "web"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "strategy": strategy or {"type": "RollingUpdate", "rollingUpdate": {
                         "maxSurge": 1, "maxUnavailable": 1}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": image}]}},
                     **spec}}


async def set_image(api_client: Client, namespace: str, image: str) -> None:
    await api_client.resource("deployments", "apps").patch(
        "web", {"spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": image}]}}}}, namespace, patch_type="strategic")


async def get_deployment(api_client: Client, namespace: str) -> Obj:
    return await api_client.resource("deployments", "apps").get("web", namespace)


async def replica_sets(api_client: Client, namespace: str) -> list[Obj]:
    items = (await api_client.resource("replicasets", "apps").list(namespace))["items"]
    return sorted(items, key=lambda rs: int(rs["metadata"].get("annotations", {}).get(
        REVISION_ANNOTATION, 0)))


def image_of(obj: Obj) -> str:
    return obj["spec"]["template"]["spec"]["containers"][0]["image"]


def condition(d: Obj, kind: str) -> Obj:
    return next(c for c in d["status"].get("conditions", []) if c["type"] == kind)


async def run(kubectl: Kubectl, *args: str, check: bool = True
              ) -> subprocess.CompletedProcess[str]:
    """kubectl in a thread: a blocking call here would stop the in-process controllers."""
    return await asyncio.to_thread(kubectl, *args, check=check)


async def rolled_out(kubectl: Kubectl, namespace: str) -> None:
    result = await run(kubectl, "rollout", "status", "deployment/web", "-n", namespace,
                       "--timeout=30s")
    assert 'deployment "web" successfully rolled out' in result.stdout


async def scaling_events(api_client: Client, namespace: str) -> list[str]:
    events = (await api_client.resource("events").list(namespace))["items"]
    events = [e for e in events if e["reason"] == "ScalingReplicaSet"
              and e["involvedObject"]["name"] == "web"]
    return [e["message"] for e in sorted(events, key=lambda e: e["metadata"]["name"])]


async def stop_watcher(task: asyncio.Task[None]) -> None:
    """Cancel a watcher task, re-raising whatever it died of before (a dead watcher
    would otherwise leave no violations, and the test would pass without checking)."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


@asynccontextmanager
async def watching(api_client: Client, namespace: str,
                   check: Callable[[list[Obj]], str | None], resource: str = "pods",
                   group: str | None = None) -> AsyncIterator[list[str]]:
    """Watch the namespace's objects of `resource`; after every event run `check` on the
    objects present then, collecting what it reports (the test asserts nothing was)."""
    objects_client = api_client.resource(resource, group)
    listing = await objects_client.list(namespace)
    objects = {obj["metadata"]["name"]: obj for obj in listing["items"]}
    violations: list[str] = []

    async def follow() -> None:
        async for kind, obj in objects_client.watch(
                namespace, resource_version=listing["metadata"]["resourceVersion"]):
            if kind == "DELETED":
                objects.pop(obj["metadata"]["name"], None)
            elif kind in ("ADDED", "MODIFIED"):
                objects[obj["metadata"]["name"]] = obj
            problem = check(list(objects.values()))
            if problem:
                violations.append(problem)
        raise AssertionError(f"the {resource} watch ended while the test was still checking")

    task = asyncio.create_task(follow())
    try:
        yield violations
    finally:
        await stop_watcher(task)


def hashes(pods: list[Obj]) -> set[str]:
    return {pod["metadata"]["labels"].get(POD_TEMPLATE_HASH, "") for pod in pods}


# -- rollouts -------------------------------------------------------------------------------------


async def test_rolling_update_stays_within_max_surge_and_max_unavailable(
        api_client: Client, namespace: str, run_controllers: RunControllers,
        kubectl: Kubectl) -> None:
    await run_controllers(*CONTROLLERS)

    def within_surge(replica_sets: list[Obj]) -> str | None:
        # maxSurge bounds what upstream's controller bounds: the replicas its ReplicaSets
        # ask for (NewRSNewReplicas sums spec.replicas). The pods themselves may lag
        # behind an old ReplicaSet scaled down, until its controller deletes one.
        wanted = sum(rs["spec"]["replicas"] for rs in replica_sets)
        if wanted > 4 + 1:
            return f"{wanted} replicas asked for, more than replicas + maxSurge"
        return None

    def within_unavailable(pods: list[Obj]) -> str | None:
        # Old pods are scaled down only once new ones are seen available, so the ready
        # pods never drop below replicas - maxUnavailable, however late a status is.
        ready = [p for p in pods
                 if not p["metadata"].get("deletionTimestamp") and is_pod_ready(p)]
        if len(ready) < 4 - 1:
            return f"{len(ready)} ready pods, fewer than replicas - maxUnavailable"
        return None

    async with FakeKubelet(api_client, namespace, delay=0.05):
        await api_client.resource("deployments", "apps").create(deployment(4), namespace)
        await rolled_out(kubectl, namespace)
        first = (await replica_sets(api_client, namespace))[0]
        async with (watching(api_client, namespace, within_surge, "replicasets", "apps")
                    as surge_violations,
                    watching(api_client, namespace, within_unavailable)
                    as unavailable_violations):
            await set_image(api_client, namespace, "busybox:1.37")
            await rolled_out(kubectl, namespace)
        assert surge_violations == [] and unavailable_violations == []

    old, new = await replica_sets(api_client, namespace)
    assert old["metadata"]["uid"] == first["metadata"]["uid"]
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 4)
    assert image_of(new) == "busybox:1.37"
    template_hash = new["metadata"]["labels"][POD_TEMPLATE_HASH]
    assert new["metadata"]["name"] == f"web-{template_hash}"
    assert new["spec"]["selector"]["matchLabels"][POD_TEMPLATE_HASH] == template_hash
    assert new["metadata"]["annotations"][REVISION_ANNOTATION] == "2"
    pods = (await api_client.resource("pods").list(namespace))["items"]
    assert hashes(pods) == {template_hash} and len(pods) == 4

    d = await get_deployment(api_client, namespace)
    assert d["metadata"]["annotations"][REVISION_ANNOTATION] == "2"
    status = d["status"]
    assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"],
            status["availableReplicas"], status.get("unavailableReplicas", 0),
            status["observedGeneration"]) == (4, 4, 4, 4, 0, d["metadata"]["generation"])
    assert condition(d, "Available")["reason"] == "MinimumReplicasAvailable"
    assert condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"
    assert condition(d, "Progressing")["message"] == (
        f'ReplicaSet "{new["metadata"]["name"]}" has successfully progressed.')
    messages = await scaling_events(api_client, namespace)
    assert f"Scaled up replica set {old['metadata']['name']} from 0 to 4" in messages
    assert f"Scaled up replica set {new['metadata']['name']} from 0 to 1" in messages
    assert any(m.startswith(f"Scaled down replica set {old['metadata']['name']} from 4 to ")
               for m in messages)


async def test_recreate_never_runs_old_and_new_pods_together(
        api_client: Client, namespace: str, run_controllers: RunControllers,
        kubectl: Kubectl) -> None:
    await run_controllers(*CONTROLLERS)

    def one_version(pods: list[Obj]) -> str | None:
        versions = hashes(pods)
        return f"pods of templates {sorted(versions)} together" if len(versions) > 1 else None

    async with FakeKubelet(api_client, namespace):
        await api_client.resource("deployments", "apps").create(
            deployment(3, strategy={"type": "Recreate"}), namespace)
        await rolled_out(kubectl, namespace)
        async with watching(api_client, namespace, one_version) as violations:
            await set_image(api_client, namespace, "busybox:1.37")
            await rolled_out(kubectl, namespace)
        assert violations == []
    old, new = await replica_sets(api_client, namespace)
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 3)
    messages = await scaling_events(api_client, namespace)
    assert messages.index(f"Scaled down replica set {old['metadata']['name']} from 3 to 0") < (
        messages.index(f"Scaled up replica set {new['metadata']['name']} from 0 to 3"))


async def test_rollout_undo_restores_the_previous_template(
        api_client: Client, namespace: str, run_controllers: RunControllers,
        kubectl: Kubectl) -> None:
    await run_controllers(*CONTROLLERS)
    async with FakeKubelet(api_client, namespace):
        await api_client.resource("deployments", "apps").create(deployment(2), namespace)
        await rolled_out(kubectl, namespace)
        await set_image(api_client, namespace, "busybox:1.37")
        await rolled_out(kubectl, namespace)
        history = await run(kubectl, "rollout", "history", "deployment/web", "-n", namespace)
        assert [line.split()[0] for line in history.stdout.splitlines()[2:] if line] == [
            "1", "2"]

        undo = await run(kubectl, "rollout", "undo", "deployment/web", "-n", namespace)
        assert undo.stdout.strip() == "deployment.apps/web rolled back"
        await rolled_out(kubectl, namespace)

    assert image_of(await get_deployment(api_client, namespace)) == "busybox:1.36"
    rss = await replica_sets(api_client, namespace)
    assert len(rss) == 2  # the old ReplicaSet came back; no third one was made
    second, restored = rss
    assert image_of(restored) == "busybox:1.36"
    assert restored["metadata"]["annotations"][REVISION_ANNOTATION] == "3"
    assert restored["metadata"]["annotations"][REVISION_HISTORY_ANNOTATION] == "1"
    assert (restored["spec"]["replicas"], second["spec"]["replicas"]) == (2, 0)
    pods = (await api_client.resource("pods").list(namespace))["items"]
    assert hashes(pods) == {restored["metadata"]["labels"][POD_TEMPLATE_HASH]}
    history = await run(kubectl, "rollout", "history", "deployment/web", "-n", namespace)
    assert [line.split()[0] for line in history.stdout.splitlines()[2:] if line] == ["2", "3"]


async def test_rollout_restart_rolls_out_a_new_replica_set(
        api_client: Client, namespace: str, run_controllers: RunControllers,
        kubectl: Kubectl) -> None:
    await run_controllers(*CONTROLLERS)
    async with FakeKubelet(api_client, namespace):
        await api_client.resource("deployments", "apps").create(deployment(2), namespace)
        await rolled_out(kubectl, namespace)
        restart = await run(kubectl, "rollout", "restart", "deployment/web", "-n", namespace)
        assert restart.stdout.strip() == "deployment.apps/web restarted"
        await rolled_out(kubectl, namespace)
    old, new = await replica_sets(api_client, namespace)
    stamp = new["spec"]["template"]["metadata"]["annotations"][
        "kubectl.kubernetes.io/restartedAt"]
    assert abs((datetime.fromisoformat(stamp) - datetime.now(UTC)).total_seconds()) < 60
    assert image_of(new) == image_of(old)
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 2)


async def test_paused_deployment_scales_but_does_not_roll_out_until_resumed(
        api_client: Client, namespace: str, run_controllers: RunControllers,
        kubectl: Kubectl) -> None:
    await run_controllers(*CONTROLLERS)
    async with FakeKubelet(api_client, namespace):
        await api_client.resource("deployments", "apps").create(deployment(2), namespace)
        await rolled_out(kubectl, namespace)
        await run(kubectl, "rollout", "pause", "deployment/web", "-n", namespace)
        await set_image(api_client, namespace, "busybox:1.37")
        await run(kubectl, "scale", "deployment/web", "--replicas=3", "-n", namespace)

        async def observed() -> Obj | None:
            d = await get_deployment(api_client, namespace)
            done = (d["status"].get("observedGeneration") == d["metadata"]["generation"]
                    and d["status"].get("readyReplicas") == 3)
            return d if done else None
        d = await eventually(observed, timeout=15, what="the paused deployment scaled to 3")
        progressing = condition(d, "Progressing")
        assert (progressing["status"], progressing["reason"], progressing["message"]) == (
            "Unknown", "DeploymentPaused", "Deployment is paused")
        assert d["status"].get("updatedReplicas", 0) == 0
        (only,) = await replica_sets(api_client, namespace)
        assert (image_of(only), only["spec"]["replicas"]) == ("busybox:1.36", 3)

        await run(kubectl, "rollout", "resume", "deployment/web", "-n", namespace)
        await rolled_out(kubectl, namespace)
    old, new = await replica_sets(api_client, namespace)
    assert (image_of(new), new["spec"]["replicas"], old["spec"]["replicas"]) == (
        "busybox:1.37", 3, 0)


async def test_scaling_mid_rollout_is_proportional(
        api_client: Client, namespace: str, run_controllers: RunControllers,
        kubectl: Kubectl) -> None:
    await run_controllers(*CONTROLLERS)
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    async with FakeKubelet(api_client, namespace) as fake:
        await api_client.resource("deployments", "apps").create(
            deployment(10, strategy=strategy), namespace)
        await rolled_out(kubectl, namespace)
        fake.ready = False  # the new template's pods never become ready: the rollout stalls
        await set_image(api_client, namespace, "busybox:1.37")

        async def sizes(expected: tuple[int, int]) -> bool:
            rss = await replica_sets(api_client, namespace)
            return tuple(rs["spec"]["replicas"] for rs in rss) == expected
        await eventually(lambda: sizes((8, 5)), timeout=15, what="old 8, new 5 (stalled)")
        await run(kubectl, "scale", "deployment/web", "--replicas=20", "-n", namespace)
        await eventually(lambda: sizes((14, 9)), timeout=15, what="old 14, new 9")
    old, new = await replica_sets(api_client, namespace)
    messages = await scaling_events(api_client, namespace)
    assert f"Scaled up replica set {old['metadata']['name']} from 8 to 14" in messages
    assert f"Scaled up replica set {new['metadata']['name']} from 5 to 9" in messages
    assert old["metadata"]["annotations"][MAX_REPLICAS_ANNOTATION] == "23"


async def test_revision_history_limit_deletes_the_oldest_replica_sets(
        api_client: Client, namespace: str, run_controllers: RunControllers,
        kubectl: Kubectl) -> None:
    await run_controllers(*CONTROLLERS)
    async with FakeKubelet(api_client, namespace):
        await api_client.resource("deployments", "apps").create(
            deployment(1, revisionHistoryLimit=1), namespace)
        await rolled_out(kubectl, namespace)
        for image in ("busybox:1.37", "busybox:1.38"):
            await set_image(api_client, namespace, image)
            await rolled_out(kubectl, namespace)

        async def revisions() -> list[str] | None:
            rss = await replica_sets(api_client, namespace)
            numbers = [rs["metadata"]["annotations"][REVISION_ANNOTATION] for rs in rss]
            return numbers if numbers == ["2", "3"] else None
        await eventually(revisions, what="revision 1 cleaned up, 2 and 3 kept")


@pytest.mark.slow
async def test_progress_deadline_exceeded_marks_the_rollout_failed(
        api_client: Client, namespace: str, run_controllers: RunControllers,
        kubectl: Kubectl) -> None:
    await run_controllers(*CONTROLLERS)
    async with FakeKubelet(api_client, namespace, ready=False):
        no_unavailable = {"type": "RollingUpdate",
                          "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
        await api_client.resource("deployments", "apps").create(
            deployment(1, strategy=no_unavailable, progressDeadlineSeconds=2), namespace)

        async def timed_out() -> Obj | None:
            d = await get_deployment(api_client, namespace)
            progressing = next((c for c in d.get("status", {}).get("conditions", [])
                                if c["type"] == "Progressing"), None)
            return progressing if progressing and progressing["status"] == "False" else None
        progressing = await eventually(timed_out, timeout=10, what="Progressing=False")
        (rs,) = await replica_sets(api_client, namespace)
        assert progressing["reason"] == "ProgressDeadlineExceeded"
        assert progressing["message"] == (
            f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.')
        result = await run(kubectl, "rollout", "status", "deployment/web", "-n", namespace,
                           "--timeout=10s", check=False)
        assert result.returncode != 0
        assert 'deployment "web" exceeded its progress deadline' in result.stderr
        d = await get_deployment(api_client, namespace)
        assert condition(d, "Available")["reason"] == "MinimumReplicasUnavailable"


# -- ownership and bad input ----------------------------------------------------------------------


async def test_deployment_adopts_a_matching_orphan_replica_set(
        api_client: Client, namespace: str, run_controllers: RunControllers,
        kubectl: Kubectl) -> None:
    await run_controllers(*CONTROLLERS)
    orphan_manifest = deployment(2, "busybox:1.35")
    orphan_manifest.update(kind="ReplicaSet",
                           metadata={"name": "orphan", "labels": {"app": "web"}})
    del orphan_manifest["spec"]["strategy"]
    async with FakeKubelet(api_client, namespace):
        orphan = await api_client.resource("replicasets", "apps").create(
            orphan_manifest, namespace)
        d = await api_client.resource("deployments", "apps").create(deployment(2), namespace)
        await rolled_out(kubectl, namespace)
    adopted = await api_client.resource("replicasets", "apps").get("orphan", namespace)
    (reference,) = adopted["metadata"]["ownerReferences"]
    assert (reference["kind"], reference["uid"], reference["controller"]) == (
        "Deployment", d["metadata"]["uid"], True)
    assert adopted["metadata"]["uid"] == orphan["metadata"]["uid"]
    assert adopted["spec"]["replicas"] == 0


async def test_replica_failure_of_the_new_replica_set_shows_on_the_deployment(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await run_controllers(*CONTROLLERS)
    await api_client.resource("deployments", "apps").create(
        deployment(1, "busybox:1.36 "), namespace)

    async def failing() -> Obj | None:
        d = await get_deployment(api_client, namespace)
        return next((c for c in d.get("status", {}).get("conditions", [])
                     if c["type"] == "ReplicaFailure"), None)
    failure = await eventually(failing, what="a ReplicaFailure condition on the deployment")
    assert (failure["status"], failure["reason"]) == ("True", "FailedCreate")
    assert "must not have leading or trailing whitespace" in failure["message"]


async def test_deployment_whose_selector_misses_its_template_is_rejected(
        api_client: Client, namespace: str) -> None:
    manifest = deployment(1)
    manifest["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    with pytest.raises(Invalid) as rejected:
        await api_client.resource("deployments", "apps").create(manifest, namespace)
    assert rejected.value.code == 422
    causes = rejected.value.status["details"]["causes"]
    assert any(cause["field"] == "spec.template.metadata.labels"
               and "`selector` does not match template `labels`" in cause["message"]
               for cause in causes)
